//! The guest path convention: the workspace is mounted at [`ROOT`]; tools
//! take and return workspace-relative paths and map them with [`resolve`].

use std::path::{Component, Path, PathBuf};

use crate::ToolError;
use crate::bindings::roost::plugin::host as wit_host;

/// Guest path where the host mounts the workspace.
pub const ROOT: &str = "/workspace";

/// What this call was granted, as the host reports it.
pub struct Info {
    /// Guest path of the workspace root.
    pub root: String,
    /// Whether the workspace is readable.
    pub readable: bool,
    /// Writable workspace-relative directories.
    pub write_roots: Vec<String>,
}

/// Ask the host what this call may touch.
pub fn info() -> Info {
    let w = wit_host::workspace();
    Info {
        root: w.root,
        readable: w.readable,
        write_roots: w.write_roots,
    }
}

/// Map a workspace-relative path to its guest path, rejecting absolute paths
/// and `..` that would leave the workspace (the sandbox refuses them anyway;
/// this gives the model a clear message).
pub fn resolve(rel: &str) -> Result<PathBuf, ToolError> {
    let trimmed = rel.trim();
    let p = Path::new(trimmed);
    if p.is_absolute() {
        if let Ok(inner) = p.strip_prefix(ROOT) {
            return resolve(&inner.to_string_lossy());
        }
        return Err(ToolError::invalid_args(format!(
            "{rel}: paths must be relative to the workspace"
        )));
    }
    let mut out = PathBuf::from(ROOT);
    let mut depth = 0usize;
    for c in p.components() {
        match c {
            Component::Normal(s) => {
                out.push(s);
                depth += 1;
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return Err(ToolError::permission_denied(format!(
                        "{rel}: path leaves the workspace"
                    )));
                }
                out.pop();
                depth -= 1;
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::invalid_args(format!("{rel}: invalid path")));
            }
        }
    }
    Ok(out)
}

/// Turn a guest path back into a workspace-relative one (`.` for the root).
pub fn relative(guest: &Path) -> String {
    match guest.strip_prefix(ROOT) {
        Ok(r) if r.as_os_str().is_empty() => ".".to_owned(),
        Ok(r) => r.to_string_lossy().into_owned(),
        Err(_) => guest.to_string_lossy().into_owned(),
    }
}
