//! Where skills live, in precedence order. Project folders (`.roo/skills`,
//! `.agents/skills`, `.claude/skills`, in the workspace and each directory
//! above it up to the repository's root) come before global ones (Roost's
//! config directory, `~/.roo/skills`, `~/.agents/skills`); within each,
//! a mode's own folder (`skills-<mode>`) comes before the generic one.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde::Serialize;

use roost_sandbox::capability::dirfd::DirFd;

pub use super::presence::PresenceDirs;

/// Families of skill folders a project or a home holds, in precedence
/// order (Roo's own first).
const PROJECT_FAMILIES: [&str; 3] = [".roo", ".agents", ".claude"];
/// The same for a home directory.
const HOME_FAMILIES: [&str; 2] = [".roo", ".agents"];
/// Most directories searched above a workspace for its repository root.
const MAX_ANCESTORS: usize = 64;

/// Whose a skill is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The workspace's project (it may come from a cloned repository).
    Project,
    /// The user's own (home or config directory).
    Global,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Project => "project",
            Self::Global => "global",
        })
    }
}

/// One folder of skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The folder (`…/.roo/skills`, `…/.agents/skills-code`).
    pub dir: PathBuf,
    /// Whose its skills are.
    pub origin: Origin,
    /// The mode it is for (`skills-<mode>`), or `None` for every mode.
    pub mode: Option<String>,
    /// Where links in it may lead (a project's links stay in the project;
    /// a user's own folders may link anywhere).
    pub contain: Option<PathBuf>,
}

/// The places a workspace's skills come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// The user's home (`~/.roo/skills`, `~/.agents/skills`).
    pub home: Option<PathBuf>,
    /// Roost's config directory (`<config>/skills`).
    pub config_dir: Option<PathBuf>,
}

impl Sources {
    /// The home of `$HOME` and the config directory given.
    pub fn from_env(config_dir: Option<PathBuf>) -> Self {
        Self {
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            config_dir,
        }
    }

    /// Every folder `workspace`'s skills may come from, in precedence
    /// order (mode folders of every mode; a task keeps its mode's).
    pub fn roots(&self, workspace: &Path) -> Vec<Root> {
        let project_top = project_top(workspace);
        let mut project_bases = Vec::new();
        for dir in project_dirs(workspace, &project_top) {
            for family in PROJECT_FAMILIES {
                project_bases.push(dir.join(family));
            }
        }
        let mut global_bases = Vec::new();
        if let Some(c) = &self.config_dir {
            global_bases.push(c.clone());
        }
        if let Some(h) = &self.home {
            for family in HOME_FAMILIES {
                global_bases.push(h.join(family));
            }
        }
        let mut out = Vec::new();
        for (origin, bases, contain) in [
            (Origin::Project, &project_bases, Some(project_top.clone())),
            (Origin::Global, &global_bases, None),
        ] {
            for base in bases {
                for mode in mode_folders(base) {
                    out.push(Root {
                        dir: base.join(format!("skills-{mode}")),
                        origin,
                        mode: Some(mode),
                        contain: contain.clone(),
                    });
                }
            }
            for base in bases {
                out.push(Root {
                    dir: base.join("skills"),
                    origin,
                    mode: None,
                    contain: contain.clone(),
                });
            }
        }
        out
    }

    /// The directories whose changes may add or remove a folder of skills
    /// of `workspace` (`.roo/`, `.agents/`, `.claude/`, the config
    /// directory, …), watched without recursion. Not the workspace itself:
    /// every file a tool opens there would wake the watcher; whether these
    /// directories exist is checked instead ([`Self::presence`]).
    pub fn watch_points(&self, workspace: &Path) -> Vec<PathBuf> {
        let project_top = project_top(workspace);
        let mut out = Vec::new();
        for dir in project_dirs(workspace, &project_top) {
            for family in PROJECT_FAMILIES {
                out.push(dir.join(family));
            }
        }
        if let Some(c) = &self.config_dir {
            out.push(c.clone());
        }
        if let Some(h) = &self.home {
            for family in HOME_FAMILIES {
                out.push(h.join(family));
            }
        }
        out
    }

    /// Which of the [`watch points`](Self::watch_points) exist now: one
    /// appearing or going away changes where skills may be.
    pub fn presence(&self, workspace: &Path) -> Vec<bool> {
        self.watch_points(workspace)
            .iter()
            .map(|p| p.is_dir())
            .collect()
    }

    /// Where a change to [`Self::presence`] would be made: the directories
    /// searched for the repository's root (each may gain or lose a `.git`,
    /// and those up to the root hold the project's folders), the home, and
    /// the config directory's parent; with the entry names that matter in
    /// them (the folders' families, `.git`, the config directory's own
    /// name, and each watched directory's, so renaming one is seen in its
    /// parent).
    pub fn presence_dirs(&self, workspace: &Path) -> PresenceDirs {
        let (mut dirs, _) = searched_for_top(workspace);
        let mut names: HashSet<OsString> = PROJECT_FAMILIES
            .iter()
            .chain(HOME_FAMILIES.iter())
            .chain(std::iter::once(&".git"))
            .map(OsString::from)
            .collect();
        if let Some(c) = &self.config_dir {
            names.extend(c.file_name().map(OsStr::to_os_string));
            dirs.extend(c.parent().map(Path::to_path_buf));
        }
        dirs.extend(self.home.clone());
        names.extend(
            dirs.iter()
                .filter_map(|d| d.file_name())
                .map(OsStr::to_os_string),
        );
        let mut seen = HashSet::new();
        dirs.retain(|d| seen.insert(d.clone()));
        PresenceDirs { dirs, names }
    }
}

/// The directories [`project_top`] looks in, nearest first: up to the
/// repository's root, or as far as it searches when there is none; and
/// whether the last of them is that root.
fn searched_for_top(workspace: &Path) -> (Vec<PathBuf>, bool) {
    let mut out = Vec::new();
    let mut dir = Some(workspace);
    for _ in 0..MAX_ANCESTORS {
        let Some(d) = dir else { break };
        out.push(d.to_path_buf());
        if d.join(".git").symlink_metadata().is_ok() {
            return (out, true);
        }
        dir = d.parent();
    }
    (out, false)
}

/// The repository root above `workspace` (the nearest directory holding
/// `.git`), or the workspace itself when it is in none.
fn project_top(workspace: &Path) -> PathBuf {
    match searched_for_top(workspace) {
        (mut searched, true) => searched.pop().unwrap_or_else(|| workspace.to_path_buf()),
        (_, false) => workspace.to_path_buf(),
    }
}

/// The workspace and each directory above it up to `top`, nearest first.
fn project_dirs(workspace: &Path, top: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = Some(workspace);
    while let Some(d) = dir {
        out.push(d.to_path_buf());
        if d == top || out.len() >= MAX_ANCESTORS {
            break;
        }
        dir = d.parent();
    }
    out
}

/// The modes `base` has a `skills-<mode>` folder for, sorted.
fn mode_folders(base: &Path) -> Vec<String> {
    let Ok(names) = DirFd::open_ambient(base).and_then(|d| d.names()) else {
        return Vec::new();
    };
    let mut modes: Vec<String> = names
        .into_iter()
        .filter_map(|(name, _)| {
            let mode = name.to_str()?.strip_prefix("skills-")?.to_owned();
            let slug_ok = !mode.is_empty()
                && mode
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            slug_ok.then_some(mode)
        })
        .collect();
    modes.sort();
    modes
}

/// Whether `name` could be a skill folder (not hidden).
pub(crate) fn candidate(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| !n.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_come_in_precedence_order() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = tmp.path().join("repo");
        let ws = repo.join("pkg");
        std::fs::create_dir_all(repo.join(".git")).expect("git");
        std::fs::create_dir_all(ws.join(".roo/skills-code")).expect("mode dir");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".agents/skills-ask")).expect("mode dir");
        let sources = Sources {
            home: Some(home.clone()),
            config_dir: Some(tmp.path().join("config")),
        };
        let roots = sources.roots(&ws);
        let dirs: Vec<String> = roots
            .iter()
            .map(|r| {
                r.dir
                    .strip_prefix(tmp.path())
                    .expect("under tmp")
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(
            dirs,
            [
                "repo/pkg/.roo/skills-code",
                "repo/pkg/.roo/skills",
                "repo/pkg/.agents/skills",
                "repo/pkg/.claude/skills",
                "repo/.roo/skills",
                "repo/.agents/skills",
                "repo/.claude/skills",
                "home/.agents/skills-ask",
                "config/skills",
                "home/.roo/skills",
                "home/.agents/skills",
            ]
        );
        assert_eq!(roots[0].mode.as_deref(), Some("code"));
        assert_eq!(roots[0].contain.as_deref(), Some(repo.as_path()));
        assert_eq!(roots[7].origin, Origin::Global);
        assert_eq!(roots[7].contain, None);
    }
}
