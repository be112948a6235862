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
    read_whole(stat.size, |want, at| {
        file.read(want, at).ok().map(|(chunk, _)| chunk)
    })
}

/// The most the host reads at once (wasmtime-wasi's cap on a `read`).
#[cfg(any(target_family = "wasm", test))]
const HOST_READ_MAX: u64 = 64 << 10;

/// A file whose `stat` said `size` bytes, read to its end with `read`
/// (`read(want, at)`: at most `want` bytes from offset `at`, none at the
/// end, `None` when the read fails). Each read asks for what the size
/// says is left plus one byte: a read that reaches the size and no further
/// is the end, so a file of at most [`HOST_READ_MAX`] bytes takes one
/// read; a file that grew since is read on until a read finds nothing, and
/// one that shrank ends where a read finds nothing.
#[cfg(any(target_family = "wasm", test))]
fn read_whole(size: u64, mut read: impl FnMut(u64, u64) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    // Sized by the stat, up to a limit: a sparse file may claim anything.
    let room = usize::try_from(size.min(16 * HOST_READ_MAX)).ok()?;
    let mut bytes: Vec<u8> = Vec::with_capacity(room.saturating_add(1));
    loop {
        let at = u64::try_from(bytes.len()).ok()?;
        let want = match size.checked_sub(at) {
            Some(left) => left.saturating_add(1),
            None => HOST_READ_MAX,
        };
        let chunk = read(want, at)?;
        if chunk.is_empty() {
            return Some(bytes);
        }
        let short = u64::try_from(chunk.len()).map_or(true, |n| n < want);
        if bytes.is_empty() && chunk.len() >= room {
            bytes = chunk;
        } else {
            bytes.extend_from_slice(&chunk);
        }
        if short && u64::try_from(bytes.len()).ok()? == size {
            return Some(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `content` read as the host reads it (at most
    /// [`HOST_READ_MAX`] bytes a read), its stat saying `size`: what
    /// [`read_whole`] returns and how many reads it made.
    fn read_as_host(content: &[u8], size: u64) -> (Option<Vec<u8>>, usize) {
        let mut reads = 0;
        let got = read_whole(size, |want, at| {
            reads += 1;
            let at = usize::try_from(at).ok()?;
            let want = usize::try_from(want.min(HOST_READ_MAX)).ok()?;
            let from = at.min(content.len());
            Some(content[from..(from + want).min(content.len())].to_vec())
        });
        (got, reads)
    }

    #[test]
    fn a_file_up_to_what_the_host_reads_at_once_is_one_read() {
        for len in [0usize, 1, 4092, 64 << 10] {
            let content: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let (got, reads) = read_as_host(&content, len as u64);
            assert_eq!(got.as_deref(), Some(&content[..]), "{len} bytes");
            assert_eq!(reads, 1, "{len} bytes");
        }
    }

    #[test]
    fn a_larger_file_is_read_whole_in_the_hosts_pieces() {
        let content: Vec<u8> = (0..200_000usize).map(|i| (i % 251) as u8).collect();
        let (got, reads) = read_as_host(&content, content.len() as u64);
        assert_eq!(got.as_deref(), Some(&content[..]));
        assert_eq!(reads, 4);
    }

    #[test]
    fn a_file_that_grew_or_shrank_since_its_stat_is_read_to_its_end() {
        let content: Vec<u8> = (0..150_000usize).map(|i| (i % 251) as u8).collect();
        for size in [0u64, 10, 70_000, 149_999, 150_001, 1 << 40] {
            let (got, _) = read_as_host(&content, size);
            assert_eq!(got.as_deref(), Some(&content[..]), "stat said {size}");
        }
    }

    #[test]
    fn a_failed_read_is_no_file() {
        assert_eq!(read_whole(10, |_, _| None), None);
        let mut first = true;
        let got = read_whole(200_000, |want, _| {
            std::mem::take(&mut first)
                .then(|| vec![7; usize::try_from(want.min(HOST_READ_MAX)).unwrap_or(0)])
        });
        assert_eq!(got, None);
    }
}
