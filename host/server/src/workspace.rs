//! A task's workspace must lie inside its tenant's root, after symlinks
//! are resolved (by the workspace layer, as the task will open it). It is
//! then opened beneath the root, following no symlink, and pinned while
//! the request uses it; a task checks it again at each of its starts.

use std::path::{Path, PathBuf};

use roost_core::engine::workspace_key;
use roost_core::task::PinnedWorkspace;

use crate::auth::Caller;
use crate::error::ApiError;

/// A workspace checked for a request: its canonical path, which leads to
/// the directory opened beneath the tenant's root for as long as this
/// lives (any open of the path meanwhile that would reach another
/// directory is refused).
pub struct Checked {
    /// The canonical path.
    pub path: PathBuf,
    _pin: PinnedWorkspace,
}

impl std::ops::Deref for Checked {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

/// The workspace `requested` names for `caller` (absolute, or relative to
/// the tenant's root), checked and pinned, or why not.
pub fn resolve(caller: &Caller, requested: &str) -> Result<Checked, ApiError> {
    let path = canonical(caller, requested)?;
    // Decided on the handle opened beneath the root (the path was
    // resolved a moment ago, and might lead elsewhere by now).
    let pin = PinnedWorkspace::beneath(&caller.root, &path)
        .map_err(|e| ApiError::forbidden(e.to_string()))?;
    Ok(Checked { _pin: pin, path })
}

/// The canonical workspace `requested` names for `caller`, or why not.
fn canonical(caller: &Caller, requested: &str) -> Result<PathBuf, ApiError> {
    if requested.trim().is_empty() {
        return Err(ApiError::invalid("name a workspace"));
    }
    let asked = Path::new(requested);
    let path = if asked.is_absolute() {
        asked.to_path_buf()
    } else {
        caller.root.join(asked)
    };
    let outside = || {
        ApiError::forbidden(format!(
            "workspace `{requested}` is outside your workspace root"
        ))
    };
    let Ok(canonical) = workspace_key(&path).map(PathBuf::from) else {
        // Whether a path outside the root exists is not the caller's to
        // learn: outside is outside.
        if !lexical(&path).starts_with(&caller.root) {
            return Err(outside());
        }
        return Err(ApiError::invalid(format!(
            "workspace `{requested}` is not a directory the server can open"
        )));
    };
    if !canonical.starts_with(&caller.root) {
        return Err(outside());
    }
    Ok(canonical)
}

/// `path` with `.` and `..` resolved as text (no file system).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
