//! What every call of a caller outside a task (`roost mcp serve`, `roost
//! tool call`) may touch, fixed when it starts: the workspace, read access
//! to it or not, and the directories it may write — named with `--write`,
//! or the directories an intent's `owned_scope` names (`--intent`) — and
//! the mode whose groups, file patterns and hooks judge its calls.
//!
//! An intent's scope becomes a write grant only when every one of its
//! globs names a whole directory (`src/auth/**`, an existing directory
//! `docs`, `**`): a finer glob (`src/*.rs`, `CHANGELOG.md`) is refused at
//! start, naming the glob, rather than widened to its directory.
//!
//! Scopes are resolved by handle within the workspace, never through a
//! symlink: a write root (from `--write` or an intent) whose path passes a
//! symlink — out of the workspace or not — or a non-directory is refused
//! when the caller starts, not left to fail call by call.

use std::path::{Path, PathBuf};

use crate::intents::{self, Intent, Scope};
use roost_sandbox::capability::Workspace;

/// Why the grant cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// The workspace cannot be opened.
    #[error("workspace {path}: {message}")]
    Workspace {
        /// The path given.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A write root leaves the workspace.
    #[error("--write {0}: not a directory inside the workspace (workspace-relative, no `..`)")]
    WriteRoot(String),
    /// `--intent` in a workspace without `.orchestration/`.
    #[error("--intent {0}: this workspace has no .orchestration/ directory, so it has no intents")]
    IntentsOff(String),
    /// The intents file cannot be read.
    #[error("--intent: {0}")]
    Intents(#[from] intents::IntentError),
    /// No intent has this id.
    #[error(
        "--intent {id}: no such intent in .orchestration/active_intents.yaml (there are: {known})"
    )]
    UnknownIntent {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: String,
    },
    /// The intent is not being worked on.
    #[error(
        "--intent {id}: its status is {status}; only an IN_PROGRESS intent can be worked under"
    )]
    NotInProgress {
        /// The id.
        id: String,
        /// Its status.
        status: String,
    },
    /// A write root's path passes a symlink or something not a directory.
    #[error(
        "{given}: `{at}` is {what}; scopes are resolved by handle within the workspace and never \
         through a symlink, so this write root cannot be granted. Name the real directory instead"
    )]
    NotReachable {
        /// The flag and value, or the intent and glob, that named it.
        given: String,
        /// The workspace-relative path of the offending entry.
        at: String,
        /// What it is (a symbolic link to …, a regular file, …).
        what: String,
    },
    /// A glob of the intent's scope names less than a whole directory.
    #[error(
        "--intent {id}: owned_scope entry `{glob}` is finer than a directory; `roost mcp serve` grants whole \
         directories, so it would let calls write more than the intent allows. Use globs like `dir/**` \
         (or an existing directory) in the intent, or start with --write DIR instead"
    )]
    FinerThanADirectory {
        /// The intent.
        id: String,
        /// The glob.
        glob: String,
    },
}

/// The grant every call of one server runs with.
#[derive(Debug, Clone)]
pub struct DirectGrant {
    workspace: PathBuf,
    read: bool,
    write: Vec<PathBuf>,
    intent: Option<(String, Scope)>,
    mode: Option<String>,
}

impl DirectGrant {
    /// Read access to `workspace` when `read`, write access under each of
    /// `write` (workspace-relative directories; a path inside the
    /// workspace written absolute is made relative).
    pub fn new(workspace: &Path, read: bool, write: &[PathBuf]) -> Result<Self, GrantError> {
        let ws = open(workspace)?;
        let write = write
            .iter()
            .map(|w| {
                let rel = relative_root(&ws, w)?;
                reachable(&ws, &rel, || format!("--write {}", w.display()))?;
                Ok(rel)
            })
            .collect::<Result<Vec<_>, GrantError>>()?;
        Ok(Self {
            workspace: ws.host_path().to_path_buf(),
            read,
            write,
            intent: None,
            mode: None,
        })
    }

    /// Write access to the directories of intent `id`'s `owned_scope`
    /// (see the module doc), read access when `read`.
    pub fn for_intent(workspace: &Path, read: bool, id: &str) -> Result<Self, GrantError> {
        let ws = open(workspace)?;
        let path = ws.host_path().to_path_buf();
        if !intents::enabled_in(&ws) {
            return Err(GrantError::IntentsOff(id.to_owned()));
        }
        let all = intents::load(&path)?;
        let Some(intent) = all.iter().find(|i| i.id == id) else {
            let known: Vec<&str> = all.iter().map(|i| i.id.as_str()).collect();
            return Err(GrantError::UnknownIntent {
                id: id.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            });
        };
        if intent.status != "IN_PROGRESS" {
            return Err(GrantError::NotInProgress {
                id: id.to_owned(),
                status: intent.status.clone(),
            });
        }
        let scope = Scope::new(&path, intent)?;
        let write = scope_dirs(&ws, intent, &scope)?;
        Ok(Self {
            workspace: path,
            read,
            write,
            intent: Some((id.to_owned(), scope)),
            mode: None,
        })
    }

    /// Calls judged by `mode` (its tool groups, file patterns and hooks)
    /// instead of the default.
    pub fn with_mode(mut self, mode: Option<String>) -> Self {
        self.mode = mode;
        self
    }

    /// The mode whose groups, file patterns and hooks judge the calls
    /// (`None`: the default, `code`).
    pub fn mode(&self) -> Option<&str> {
        self.mode.as_deref()
    }

    /// The workspace (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Whether calls may read the workspace.
    pub fn read(&self) -> bool {
        self.read
    }

    /// The directories calls may write under (workspace-relative).
    pub fn write(&self) -> &[PathBuf] {
        &self.write
    }

    /// The intent calls work under, if any.
    pub fn intent_id(&self) -> Option<&str> {
        self.intent.as_ref().map(|(id, _)| id.as_str())
    }

    /// The intent's scope, if any.
    pub fn scope(&self) -> Option<&Scope> {
        self.intent.as_ref().map(|(_, s)| s)
    }

    /// One line for people and clients: what calls may touch.
    pub fn describe(&self) -> String {
        let read = if self.read {
            "read access to the workspace"
        } else {
            "no read access to the workspace"
        };
        let write = if self.write.is_empty() {
            "no write access".to_owned()
        } else {
            let roots: Vec<String> = self.write.iter().map(|w| w.display().to_string()).collect();
            format!("write access under {}", roots.join(", "))
        };
        match self.intent_id() {
            Some(id) => format!(
                "{} ({read}, {write}, intent {id})",
                self.workspace.display()
            ),
            None => format!("{} ({read}, {write})", self.workspace.display()),
        }
    }
}

fn open(workspace: &Path) -> Result<Workspace, GrantError> {
    Workspace::open(workspace).map_err(|e| GrantError::Workspace {
        path: workspace.to_path_buf(),
        message: e.to_string(),
    })
}

/// `root` as a normalised workspace-relative directory.
fn relative_root(ws: &Workspace, root: &Path) -> Result<PathBuf, GrantError> {
    let raw = root.to_string_lossy();
    let rel = ws
        .normalize(&raw)
        .map_err(|_| GrantError::WriteRoot(raw.clone().into_owned()))?;
    Ok(if rel.is_root() {
        PathBuf::from(".")
    } else {
        rel.to_path()
    })
}

/// The directories an intent's globs name, each exactly (see the module
/// doc), or the first glob that names less.
fn scope_dirs(ws: &Workspace, intent: &Intent, scope: &Scope) -> Result<Vec<PathBuf>, GrantError> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for glob in &intent.owned_scope {
        let finer = || GrantError::FinerThanADirectory {
            id: intent.id.clone(),
            glob: glob.clone(),
        };
        let dir = dir_of(ws, glob).ok_or_else(finer)?;
        reachable(ws, &dir, || {
            format!("--intent {}: owned_scope entry `{glob}`", intent.id)
        })?;
        // The same judgement the write guard makes: the scope covers the
        // whole directory.
        if !scope.covers_dir(&dir) {
            return Err(finer());
        }
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    Ok(dirs)
}

/// Whether `rel` is reached from the workspace's root by handle: each
/// component there now a real directory (no symlink, no file); a missing
/// tail is fine (it is made inside, by handle, when written).
fn reachable(ws: &Workspace, rel: &Path, given: impl Fn() -> String) -> Result<(), GrantError> {
    use roost_sandbox::capability::dirfd::Kind;
    let mut dir = ws.root().try_clone().map_err(|e| GrantError::Workspace {
        path: ws.host_path().to_path_buf(),
        message: e.to_string(),
    })?;
    let mut at = PathBuf::new();
    for c in rel.components() {
        let std::path::Component::Normal(name) = c else {
            continue;
        };
        at.push(name);
        let refuse = |what: String| GrantError::NotReachable {
            given: given(),
            at: at.display().to_string(),
            what,
        };
        let stat = dir.stat_opt(name).map_err(|e| refuse(e.to_string()))?;
        match stat.map(|s| s.kind) {
            None => return Ok(()),
            Some(Kind::Dir) => {
                dir = dir.open_dir(name).map_err(|e| refuse(e.to_string()))?;
            }
            Some(Kind::Symlink) => {
                let target = dir
                    .readlink(name)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                return Err(refuse(format!("a symbolic link (to {target})")));
            }
            Some(other) => return Err(refuse(other.word().to_owned())),
        }
    }
    Ok(())
}

/// The directory a glob names whole: `**` (the workspace), `dir/**`, or a
/// literal path that is a directory now.
fn dir_of(ws: &Workspace, glob: &str) -> Option<PathBuf> {
    let g = glob.trim_start_matches("./").trim_end_matches('/');
    let wild = |s: &str| s.contains(['*', '?', '[', '{', '\\']);
    if g == "**" {
        return Some(PathBuf::from("."));
    }
    let (base, literal) = match g.strip_suffix("/**") {
        Some(base) => (base, false),
        None => (g, true),
    };
    if base.is_empty() || wild(base) {
        return None;
    }
    let rel = ws.normalize(base).ok()?;
    if rel.is_root() || (literal && !ws.is_dir_strict(&rel.as_string())) {
        return None;
    }
    Some(rel.to_path())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn workspace(scope: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".orchestration")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("docs")).expect("mkdir");
        std::fs::write(
            dir.path().join(".orchestration/active_intents.yaml"),
            format!(
                "active_intents:\n  - id: INT-1\n    name: t\n    status: IN_PROGRESS\n    owned_scope: {scope}\n  - id: INT-2\n    name: d\n    status: DONE\n"
            ),
        )
        .expect("write");
        dir
    }

    #[test]
    fn directory_globs_become_write_roots() {
        let d = workspace(r#"["src/auth/**", "docs", "./src/auth/**"]"#);
        let g = DirectGrant::for_intent(d.path(), true, "INT-1").expect("grant");
        assert_eq!(
            g.write(),
            &[PathBuf::from("src/auth"), PathBuf::from("docs")]
        );
        assert_eq!(g.intent_id(), Some("INT-1"));
        let d = workspace(r#"["**"]"#);
        let g = DirectGrant::for_intent(d.path(), false, "INT-1").expect("grant");
        assert_eq!(g.write(), &[PathBuf::from(".")]);
    }

    #[test]
    fn finer_globs_and_bad_intents_are_refused() {
        for glob in ["src/*.rs", "CHANGELOG.md", "src/**/*.rs", "missing"] {
            let d = workspace(&format!("[\"{glob}\"]"));
            let e = DirectGrant::for_intent(d.path(), true, "INT-1").expect_err(glob);
            assert!(matches!(e, GrantError::FinerThanADirectory { .. }), "{e}");
            assert!(e.to_string().contains(glob), "{e}");
        }
        let d = workspace(r#"["docs/**"]"#);
        let e = DirectGrant::for_intent(d.path(), true, "INT-2").expect_err("done");
        assert!(e.to_string().contains("DONE"), "{e}");
        let e = DirectGrant::for_intent(d.path(), true, "INT-9").expect_err("unknown");
        assert!(e.to_string().contains("INT-1, INT-2"), "{e}");
        let plain = tempfile::tempdir().expect("tempdir");
        let e = DirectGrant::for_intent(plain.path(), true, "INT-1").expect_err("off");
        assert!(matches!(e, GrantError::IntentsOff(_)), "{e}");
    }

    #[test]
    fn roots_through_symlinks_are_refused() {
        let d = workspace(r#"["out/**"]"#);
        let outside = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).expect("symlink");
        let e = DirectGrant::for_intent(d.path(), true, "INT-1").expect_err("through a symlink");
        assert!(matches!(e, GrantError::NotReachable { .. }), "{e}");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = DirectGrant::new(d.path(), true, &[PathBuf::from("out/sub")]).expect_err("--write");
        assert!(e.to_string().contains("--write out/sub"), "{e}");
        // A symlink inside the workspace is refused too; a real directory
        // and a missing one are fine.
        std::os::unix::fs::symlink("docs", d.path().join("alias")).expect("symlink");
        assert!(DirectGrant::new(d.path(), true, &[PathBuf::from("alias")]).is_err());
        assert!(DirectGrant::new(d.path(), true, &[PathBuf::from("docs/new")]).is_ok());
        std::fs::write(d.path().join("file"), "x").expect("write");
        assert!(DirectGrant::new(d.path(), true, &[PathBuf::from("file/sub")]).is_err());
    }

    #[test]
    fn write_roots_stay_inside() {
        let d = tempfile::tempdir().expect("tempdir");
        let g = DirectGrant::new(d.path(), true, &[PathBuf::from("./out/")]).expect("grant");
        assert_eq!(g.write(), &[PathBuf::from("out")]);
        let inside = d.path().canonicalize().expect("canon").join("gen");
        let g = DirectGrant::new(d.path(), true, &[inside]).expect("grant");
        assert_eq!(g.write(), &[PathBuf::from("gen")]);
        for bad in ["../x", "/etc"] {
            assert!(DirectGrant::new(d.path(), true, &[PathBuf::from(bad)]).is_err());
        }
    }
}
