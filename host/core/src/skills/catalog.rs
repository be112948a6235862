//! The skills a workspace can use: every folder of its [`Sources`] scanned
//! in precedence order, each `SKILL.md` read without following a link and
//! checked ([`super::manifest`]). A folder reached twice (a symlink, the
//! same canonical path) counts once; an invalid skill is reported with its
//! file, field and reason and never stops the others. A task sees the
//! skills of its mode ([`Catalog::for_mode`]): the first of each name
//! wins, and what it overrides is kept to be shown.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::manifest::{self, Manifest, Problem};
use super::sources::{Origin, Root, Sources, candidate};
use roost_sandbox::capability::dirfd::{DirFd, Kind};

/// Largest `SKILL.md` read.
pub const MAX_SKILL_FILE: u64 = 256 << 10;
/// The file of a skill's component.
pub const COMPONENT_FILE: &str = "skill.wasm";
/// Most skill folders one root is scanned for.
const MAX_PER_ROOT: usize = 10_000;

/// A valid skill.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    /// Its front-matter.
    #[serde(flatten)]
    pub manifest: Manifest,
    /// Its instructions (the body of `SKILL.md`).
    #[serde(skip)]
    pub body: String,
    /// Its folder as found (under its root).
    pub path: PathBuf,
    /// The folder itself (links resolved).
    pub dir: PathBuf,
    /// Whose it is.
    pub origin: Origin,
    /// The mode it is for, or `None` for every mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Whether it ships a component (`skill.wasm`) with callable entries.
    pub component: bool,
    /// Its place in the precedence order (lower wins).
    #[serde(skip)]
    pub rank: usize,
}

impl Skill {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// Whether a task in `mode` may use it.
    pub fn applies_to(&self, mode: &str) -> bool {
        self.mode.as_deref().is_none_or(|m| m == mode)
    }
}

/// Why a skill folder was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// The file (or folder) concerned.
    pub file: PathBuf,
    /// What is wrong.
    #[serde(flatten)]
    pub problem: Problem,
    /// The folder itself (links resolved), when it was reached.
    #[serde(skip)]
    pub dir: Option<PathBuf>,
    /// Its place in the precedence order.
    #[serde(skip)]
    pub rank: usize,
}

impl std::fmt::Display for Issue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.problem)
    }
}

/// Every skill found for a workspace, in precedence order, and every
/// folder that was skipped and why.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    skills: Vec<Arc<Skill>>,
    issues: Vec<Issue>,
}

/// The skills a task in one mode sees.
#[derive(Debug, Clone, Default)]
pub struct ModeSkills {
    /// The skills it may use, in precedence order (one per name).
    pub available: Vec<Arc<Skill>>,
    /// Skills of the same name as an available one, lower in precedence:
    /// (the overridden skill, the one that wins).
    pub overridden: Vec<(Arc<Skill>, Arc<Skill>)>,
}

impl ModeSkills {
    /// The available skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.available.iter().find(|s| s.name() == name)
    }
}

impl Catalog {
    /// Scan every folder `sources` give for `workspace` (a canonical path).
    pub fn scan(sources: &Sources, workspace: &Path) -> Self {
        let mut seen_roots = HashSet::new();
        let mut seen_dirs = HashSet::new();
        let mut out = Self::default();
        let mut rank = 0;
        for root in sources.roots(workspace) {
            let Ok(canonical) = std::fs::canonicalize(&root.dir) else {
                continue;
            };
            if !canonical.is_dir() || !seen_roots.insert(canonical.clone()) {
                continue;
            }
            if let Some(top) = &root.contain
                && !canonical.starts_with(top)
            {
                out.issues.push(Issue {
                    file: root.dir.clone(),
                    problem: Problem {
                        field: None,
                        reason: format!(
                            "is a link out of the project (to {}); it is not read",
                            canonical.display()
                        ),
                    },
                    dir: None,
                    rank,
                });
                continue;
            }
            out.scan_root(&root, &canonical, &mut seen_dirs, &mut rank);
        }
        out
    }

    fn scan_root(
        &mut self,
        root: &Root,
        canonical: &Path,
        seen: &mut HashSet<PathBuf>,
        rank: &mut usize,
    ) {
        let Ok(dir) = DirFd::open_ambient(canonical) else {
            return;
        };
        let Ok(mut names) = dir.names() else {
            return;
        };
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in names.into_iter().take(MAX_PER_ROOT) {
            if !candidate(&name) || !matches!(kind, Kind::Dir | Kind::Symlink) {
                continue;
            }
            *rank += 1;
            let path = root.dir.join(&name);
            let Ok(real) = std::fs::canonicalize(canonical.join(&name)) else {
                continue;
            };
            if !real.is_dir() {
                continue;
            }
            if !seen.insert(real.clone()) {
                // The same folder reached again (a link): it counts once.
                continue;
            }
            let issue = |problem: Problem| Issue {
                file: path.join("SKILL.md"),
                problem,
                dir: Some(real.clone()),
                rank: *rank,
            };
            if let Some(top) = &root.contain
                && !real.starts_with(top)
            {
                self.issues.push(Issue {
                    file: path.clone(),
                    ..issue(Problem {
                        field: None,
                        reason: format!(
                            "is a link out of the project (to {}); it is not read",
                            real.display()
                        ),
                    })
                });
                continue;
            }
            match read_skill(&real, &name) {
                Ok((manifest, body, component)) => self.skills.push(Arc::new(Skill {
                    manifest,
                    body,
                    path,
                    dir: real,
                    origin: root.origin,
                    mode: root.mode.clone(),
                    component,
                    rank: *rank,
                })),
                Err(problems) => {
                    for p in problems {
                        self.issues.push(issue(p));
                    }
                }
            }
        }
    }

    /// Every valid skill, in precedence order (all modes).
    pub fn skills(&self) -> &[Arc<Skill>] {
        &self.skills
    }

    /// Every skipped folder and why.
    pub fn issues(&self) -> &[Issue] {
        &self.issues
    }

    /// Whether it holds no skill at all.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skills a task in `mode` sees: generic ones and `mode`'s own,
    /// the first of each name winning.
    pub fn for_mode(&self, mode: &str) -> ModeSkills {
        let mut out = ModeSkills::default();
        let mut winners: BTreeMap<&str, Arc<Skill>> = BTreeMap::new();
        // Mode folders come before generic ones of the same origin; the
        // order of `skills` is the precedence order already.
        for s in self.skills.iter().filter(|s| s.applies_to(mode)) {
            match winners.get(s.name()) {
                Some(w) => out.overridden.push((Arc::clone(s), Arc::clone(w))),
                None => {
                    winners.insert(s.name(), Arc::clone(s));
                    out.available.push(Arc::clone(s));
                }
            }
        }
        out
    }

    /// This catalog, where a skill it reports broken was valid in `last`,
    /// with that last good version kept (a broken edit does not take a
    /// skill away); its issue stays reported.
    pub fn keeping_last_good(mut self, last: &Catalog) -> Self {
        let mut kept = Vec::new();
        for issue in &mut self.issues {
            let Some(dir) = &issue.dir else { continue };
            if let Some(good) = last.skills.iter().find(|s| &s.dir == dir) {
                if !issue
                    .problem
                    .reason
                    .ends_with("(the last good version is kept)")
                {
                    issue
                        .problem
                        .reason
                        .push_str(" (the last good version is kept)");
                }
                if !kept.iter().any(|k: &Arc<Skill>| &k.dir == dir) {
                    let mut s = Skill::clone(good);
                    s.rank = issue.rank;
                    kept.push(Arc::new(s));
                }
            }
        }
        if !kept.is_empty() {
            self.skills.extend(kept);
            self.skills.sort_by_key(|s| s.rank);
        }
        self
    }
}

/// Check the one skill folder `dir` as discovery would (`roost skills
/// validate`): the skill, or every problem with the file it concerns.
pub fn validate(dir: &Path) -> Result<Skill, Vec<Issue>> {
    let file = dir.join("SKILL.md");
    let issue = |problem: Problem| Issue {
        file: file.clone(),
        problem,
        dir: None,
        rank: 0,
    };
    let real = std::fs::canonicalize(dir).map_err(|e| {
        vec![Issue {
            file: dir.to_path_buf(),
            ..issue(Problem {
                field: None,
                reason: format!("cannot be opened: {e}"),
            })
        }]
    })?;
    let name = real.file_name().unwrap_or_default().to_owned();
    let (manifest, body, component) =
        read_skill(&real, &name).map_err(|ps| ps.into_iter().map(issue).collect::<Vec<_>>())?;
    Ok(Skill {
        manifest,
        body,
        path: dir.to_path_buf(),
        dir: real,
        origin: Origin::Project,
        mode: None,
        component,
        rank: 0,
    })
}

/// Read and check the skill in `dir` (folder name `name`): its manifest,
/// its body, and whether it ships a component.
fn read_skill(dir: &Path, name: &OsStr) -> Result<(Manifest, String, bool), Vec<Problem>> {
    let file_problem = |reason: String| {
        vec![Problem {
            field: None,
            reason,
        }]
    };
    let fd =
        DirFd::open_resolved(dir).map_err(|e| file_problem(format!("cannot be opened: {e}")))?;
    let bytes = fd
        .read(OsStr::new("SKILL.md"), MAX_SKILL_FILE)
        .map_err(|e| {
            file_problem(match e.kind() {
                std::io::ErrorKind::NotFound => {
                    "is missing: a skill folder needs a SKILL.md".to_owned()
                }
                std::io::ErrorKind::FileTooLarge => {
                    format!("is larger than {MAX_SKILL_FILE} bytes")
                }
                _ => format!("cannot be read (it must be a regular file, not a link): {e}"),
            })
        })?;
    let text =
        String::from_utf8(bytes).map_err(|_| file_problem("is not UTF-8 text".to_owned()))?;
    let folder = name.to_string_lossy();
    let (manifest, body) = manifest::parse(&text, &folder)?;
    let component = fd
        .stat_opt(OsStr::new(COMPONENT_FILE))
        .ok()
        .flatten()
        .is_some_and(|s| s.kind == Kind::File);
    Ok((manifest, body, component))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, name: &str, description: &str) {
        std::fs::create_dir_all(dir.join(name)).expect("mkdir");
        std::fs::write(
            dir.join(name).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n"),
        )
        .expect("write");
    }

    #[test]
    fn precedence_overrides_links_and_bad_skills() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical");
        let ws = base.join("ws");
        let home = base.join("home");
        skill(&ws.join(".roo/skills"), "shared", "project roo");
        skill(&ws.join(".agents/skills"), "shared", "project agents");
        skill(&ws.join(".roo/skills-code"), "shared", "project code mode");
        skill(&home.join(".roo/skills"), "shared", "global");
        skill(&home.join(".roo/skills"), "mine", "global only");
        skill(&ws.join(".claude/skills"), "bad", "x");
        std::fs::write(ws.join(".claude/skills/bad/SKILL.md"), "no front matter").expect("write");
        std::os::unix::fs::symlink(
            ws.join(".roo/skills/shared"),
            ws.join(".claude/skills/alias"),
        )
        .expect("symlink");
        let sources = Sources {
            home: Some(home),
            config_dir: None,
        };
        let catalog = Catalog::scan(&sources, &ws);
        let code = catalog.for_mode("code");
        let names: Vec<(&str, &str)> = code
            .available
            .iter()
            .map(|s| (s.name(), s.manifest.description.as_str()))
            .collect();
        assert_eq!(
            names,
            [("shared", "project code mode"), ("mine", "global only")]
        );
        let over: Vec<&str> = code
            .overridden
            .iter()
            .map(|(l, _)| l.manifest.description.as_str())
            .collect();
        assert_eq!(over, ["project roo", "project agents", "global"]);
        let ask = catalog.for_mode("ask");
        assert_eq!(
            ask.get("shared").map(|s| s.manifest.description.as_str()),
            Some("project roo")
        );
        // The link to a folder already found counts once, and is no issue.
        assert_eq!(catalog.issues().len(), 1, "{:?}", catalog.issues());
        assert!(catalog.issues()[0].to_string().ends_with(".claude/skills/bad/SKILL.md: has no front-matter: SKILL.md must start with a `---` line, the YAML fields, and another `---` line"));
    }

    #[test]
    fn a_project_link_out_of_the_project_is_not_followed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical");
        let ws = base.join("ws");
        skill(&base.join("outside"), "leak", "outside the project");
        std::fs::create_dir_all(ws.join(".roo/skills")).expect("mkdir");
        std::os::unix::fs::symlink(base.join("outside/leak"), ws.join(".roo/skills/leak"))
            .expect("symlink");
        let catalog = Catalog::scan(&Sources::default(), &ws);
        assert!(catalog.is_empty());
        assert!(
            catalog.issues()[0]
                .to_string()
                .contains("is a link out of the project")
        );
    }
}
