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

/// The regular file `name` directly in the workspace's top directory, read
/// whole through WASI itself: one `stat-at`, one `open-at`, and `read`s
/// of what its size says is left plus one byte, so a file of at most 64
/// KiB (the most the host reads at once) takes one. A read that reaches
/// its size and no further is its end; one that goes past it (the file
/// grew) reads on until a read finds nothing. `None` when `name` is not a
/// regular file there (missing, a link, a directory, a special file,
/// hidden) or cannot be read: the caller's general path then says why.
/// std's `metadata` asks the host for a stat and a metadata hash (for an
/// inode number nothing here uses), and its `File` reads through a
/// stream, one host call a read and one more to find the end.
#[cfg(target_family = "wasm")]
pub fn read_top_file(name: &str) -> Option<Vec<u8>> {
    use crate::bindings::wasi::filesystem::{preopens, types as fs};
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return None;
    }
    let root = preopens::get_directories()
        .into_iter()
        .find_map(|(dir, at)| (at == ROOT).then_some(dir))?;
    let stat = root.stat_at(fs::PathFlags::empty(), name).ok()?;
    if stat.type_ != fs::DescriptorType::RegularFile {
        return None;
    }
    let file = root
        .open_at(
            fs::PathFlags::empty(),
            name,
            fs::OpenFlags::empty(),
            fs::DescriptorFlags::READ,
        )
        .ok()?;
    let size = stat.size;
    let mut bytes: Vec<u8> = Vec::with_capacity(usize::try_from(size).ok()?.saturating_add(1));
    loop {
        let read = u64::try_from(bytes.len()).ok()?;
        // What is left by its size, and one byte to see it end there; past
        // its size, as much as the host reads at once.
        let want = match size.checked_sub(read) {
            Some(left) => left.saturating_add(1),
            None => 64 << 10,
        };
        let (chunk, _) = file.read(want, read).ok()?;
        if chunk.is_empty() {
            return Some(bytes);
        }
        let short = u64::try_from(chunk.len()).map_or(true, |n| n < want);
        bytes.extend_from_slice(&chunk);
        if short && u64::try_from(bytes.len()).ok()? == size {
            return Some(bytes);
        }
    }
}
