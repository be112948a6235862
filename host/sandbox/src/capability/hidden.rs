//! What `.rooignore` hides is unreachable from inside the sandbox, for
//! every grant. A write root is a read grant too (WASI cannot write a
//! directory it cannot see), and with intents off a write root is the whole
//! workspace, so checking only the paths a call declares is not enough: the
//! guest's own `open-at`, `read-directory` and every other path-taking
//! filesystem call ask [`Hidden`] first (`plugins::hidden_paths`).
//!
//! A guest names a path relative to a directory it holds. [`Hidden`]
//! checks it twice, as the host's path gate does for declared paths: the
//! path as named (the directory's place in the workspace, then the path
//! lexically) and the place it lands on disk through symlinks (an `O_PATH`
//! open with the sandbox's own resolution, whose real path the kernel
//! reports through `/proc/self/fd`). When the place of a directory cannot
//! be told, the answer is "hidden": it fails closed.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cap_primitives::fs::{FollowSymlinks, OpenOptions, OpenOptionsExt};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::dirfd::{DirFd, Kind};
use super::{ROOIGNORE, RooIgnore, Workspace};

/// Most entries looked at below a directory a guest renames, to tell
/// whether the rename would move a hidden path out from under its name;
/// a larger tree is refused (fail closed).
const RENAME_SCAN_LIMIT: usize = 20_000;

/// Most levels the place of a directory too deep for `/proc` to spell is
/// looked for above it; deeper, it counts as hidden.
const MAX_CLIMB: usize = 256;

/// The `.rooignore` of one call's workspace, with the workspace's real
/// place on disk.
#[derive(Debug)]
pub struct Hidden {
    ignore: RooIgnore,
    /// The workspace's real path, as `/proc/self/fd` spells it.
    root: PathBuf,
}

impl Hidden {
    /// The hidden paths of `workspace`: `None` when it has no `.rooignore`
    /// (or one without patterns), which costs one `lstat`.
    pub fn load(workspace: &Path) -> Result<Option<Self>, std::io::Error> {
        // One `lstat` of the user's own workspace path (theirs to follow;
        // `.rooignore` itself is not followed): nearly every workspace has
        // none, and this runs before every call.
        if let Err(Errno::NOENT) = rustix::fs::statat(
            rustix::fs::CWD,
            workspace.join(ROOIGNORE),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        ) {
            return Ok(None);
        }
        let ws = Workspace::open(workspace).map_err(|e| std::io::Error::other(e.to_string()))?;
        Self::of(&ws)
    }

    /// [`Hidden::load`] on an open workspace.
    pub fn of(ws: &Workspace) -> Result<Option<Self>, std::io::Error> {
        let ignore = RooIgnore::load_in(ws);
        if ignore.is_empty() {
            return Ok(None);
        }
        let root = real_path(ws.root())?;
        Ok(Some(Self { ignore, root }))
    }

    /// Whether the workspace-relative `rel` is hidden.
    pub fn blocks(&self, rel: &str) -> bool {
        self.ignore.blocks(rel)
    }

    /// The workspace-relative place of an open descriptor (`""` for the
    /// root); `None` when it is not in the workspace or cannot be told.
    pub fn place_of(&self, fd: impl AsFd) -> Option<String> {
        match real_path(&fd) {
            Ok(real) => self.relative(&real),
            Err(e) if e.raw_os_error() == Some(Errno::NAMETOOLONG.raw_os_error()) => {
                self.climb(fd.as_fd())
            }
            Err(_) => None,
        }
    }

    fn relative(&self, real: &Path) -> Option<String> {
        let rel = real.strip_prefix(&self.root).ok()?;
        Some(rel.to_string_lossy().into_owned())
    }

    /// The place of a directory deeper than the kernel can spell (a path
    /// past `PATH_MAX`): climb with `..` (never a link), naming each step
    /// by its inode in its parent, until a directory the kernel can spell,
    /// at most [`MAX_CLIMB`] levels. Not a directory, or too deep: `None`.
    fn climb(&self, fd: BorrowedFd<'_>) -> Option<String> {
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut cur = rustix::fs::openat(fd, ".", dir_flags, Mode::empty()).ok()?;
        let mut names: Vec<OsString> = Vec::new();
        for _ in 0..MAX_CLIMB {
            let me = rustix::fs::fstat(&cur).ok()?;
            let parent = rustix::fs::openat(&cur, "..", dir_flags, Mode::empty()).ok()?;
            let up = rustix::fs::fstat(&parent).ok()?;
            if up.st_dev != me.st_dev || (up.st_ino == me.st_ino) {
                // A mount boundary, or the file system's root.
                return None;
            }
            let name = rustix::fs::Dir::read_from(&parent)
                .ok()?
                .filter_map(Result::ok)
                .find(|e| e.ino() == me.st_ino && !matches!(e.file_name().to_bytes(), b"." | b".."))
                .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())?;
            names.push(name);
            match real_path(&parent) {
                Ok(real) => {
                    let mut place = self.relative(&real)?;
                    for n in names.iter().rev() {
                        place = join(&place, n);
                    }
                    return Some(place);
                }
                Err(e) if e.raw_os_error() == Some(Errno::NAMETOOLONG.raw_os_error()) => {
                    cur = parent;
                }
                Err(_) => return None,
            }
        }
        None
    }

    /// The place of `path` under `dir` when it does not resolve through a
    /// final symlink: its parent's place and its name. For entries whose
    /// own place the kernel cannot spell.
    fn place_by_parent(&self, dir: &std::fs::File, path: &str) -> Option<String> {
        let p = Path::new(path);
        let name = p.file_name()?;
        let parent = match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => open_path(dir, q, true).ok()?,
            _ => dir.try_clone().ok()?,
        };
        let st = rustix::fs::statat(&parent, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
            return None;
        }
        Some(join(&self.place_of(&parent)?, name))
    }

    /// Whether `path`, named by a guest relative to the directory `dir`,
    /// reaches a hidden path: as named, or where it lands (following a
    /// final symlink when `follow`). A path that does not resolve is
    /// checked as far as it does (its parent directory).
    pub fn blocks_at(&self, dir: &std::fs::File, path: &str, follow: bool) -> bool {
        let Some(base) = self.place_of(dir) else {
            return true;
        };
        // As named: the directory's place, then the path lexically.
        if let Some(named) = join_lexically(&base, path)
            && self.ignore.blocks(&named)
        {
            return true;
        }
        // Where it lands.
        match open_path(dir, Path::new(path), follow) {
            Ok(fd) => match self
                .place_of(&fd)
                .or_else(|| self.place_by_parent(dir, path))
            {
                Some(place) => self.ignore.blocks(&place),
                None => true,
            },
            Err(_) => {
                let p = Path::new(path);
                let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
                    return false;
                };
                if parent.as_os_str().is_empty() {
                    return false;
                }
                match open_path(dir, parent, true) {
                    Ok(fd) => match self.place_of(&fd) {
                        Some(place) => self.ignore.blocks(&join(&place, name)),
                        None => true,
                    },
                    // The operation will fail the same way.
                    Err(_) => false,
                }
            }
        }
    }

    /// Whether the entry `name` of a directory at the workspace-relative
    /// `dir_place` is hidden (for listings).
    pub fn blocks_entry(&self, dir_place: &str, name: &str) -> bool {
        self.ignore.blocks(&join(dir_place, OsStr::new(name)))
    }

    /// Whether renaming `path` (relative to `dir`, not followed) would move
    /// a hidden path: the entry is a directory with a hidden path below it
    /// (a pattern anchored to its old name would no longer match). Bounded:
    /// a tree too large to look through counts as hiding something.
    pub fn hides_below(&self, dir: &std::fs::File, path: &str) -> bool {
        let Ok(fd) = open_path(dir, Path::new(path), false) else {
            return false;
        };
        let Some(place) = self.place_of(&fd) else {
            return true;
        };
        // The entry itself, opened for listing through its `O_PATH` handle.
        let Ok(start) = rustix::fs::openat(
            &fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            // Not a directory: nothing below it.
            return false;
        };
        let start = DirFd::from_file(start.into());
        let mut seen = 0usize;
        let mut stack = vec![(start, place)];
        while let Some((d, at)) = stack.pop() {
            let Ok(names) = d.names() else { return true };
            for (name, kind) in names {
                seen += 1;
                if seen > RENAME_SCAN_LIMIT {
                    return true;
                }
                let rel = join(&at, &name);
                if self.ignore.blocks(&rel) {
                    return true;
                }
                if kind == Kind::Dir {
                    match d.open_dir(&name) {
                        Ok(sub) => stack.push((sub, rel)),
                        Err(_) => return true,
                    }
                }
            }
        }
        false
    }
}

/// `a/b` of a workspace-relative directory and an entry name.
fn join(dir: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if dir.is_empty() {
        name.into_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// `base` joined with `path` lexically (`.` dropped, `..` climbing);
/// `None` when it climbs above the workspace or is absolute (the sandbox
/// refuses those itself).
fn join_lexically(base: &str, path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Open `path` under `dir` with `O_PATH` (nothing is read, no device is
/// opened), resolving it as the sandbox does: never out of `dir`.
fn open_path(dir: &std::fs::File, path: &Path, follow: bool) -> std::io::Result<std::fs::File> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    opts.custom_flags(OFlags::PATH.bits().cast_signed());
    opts._cap_fs_ext_follow(if follow {
        FollowSymlinks::Yes
    } else {
        FollowSymlinks::No
    });
    cap_primitives::fs::open(dir, path, &opts)
}

/// The real path of an open descriptor, from `/proc/self/fd` (checked to
/// be the real procfs).
fn real_path(fd: &impl AsFd) -> std::io::Result<PathBuf> {
    let proc_fd = rustix_linux_procfs::proc_self_fd().map_err(std::io::Error::from)?;
    let name = fd.as_fd().as_raw_fd().to_string();
    let target =
        rustix::fs::readlinkat(proc_fd, name.as_str(), Vec::new()).map_err(std::io::Error::from)?;
    let bytes = target.as_bytes();
    if bytes.ends_with(b" (deleted)") || !bytes.starts_with(b"/") {
        return Err(std::io::Error::other("not a path in the file system"));
    }
    Ok(PathBuf::from(OsStr::from_bytes(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(p: &Path) -> std::fs::File {
        std::fs::File::open(p).expect("open dir")
    }

    #[test]
    fn hidden_by_name_and_by_where_it_lands() {
        let d = tempfile::tempdir().expect("tempdir");
        let w = d.path().join("ws");
        std::fs::create_dir_all(w.join("config/deep")).expect("mkdir");
        std::fs::create_dir_all(w.join("src")).expect("mkdir");
        std::fs::write(w.join(".rooignore"), ".env\nconfig/secret.txt\n").expect("write");
        std::fs::write(w.join(".env"), "KEY=1").expect("write");
        std::fs::write(w.join("config/secret.txt"), "s").expect("write");
        std::fs::write(w.join("src/a.rs"), "a").expect("write");
        std::os::unix::fs::symlink("../.env", w.join("src/alias")).expect("symlink");
        std::os::unix::fs::symlink("../config", w.join("src/cfg")).expect("symlink");
        assert!(
            Hidden::load(d.path()).expect("load").is_none(),
            "no .rooignore"
        );
        let h = Hidden::load(&w).expect("load").expect("patterns");
        let root = dir(&w);
        let src = dir(&w.join("src"));
        assert!(h.blocks_at(&root, ".env", false));
        assert!(h.blocks_at(&root, "src/../.env", false));
        assert!(h.blocks_at(&src, "../.env", true));
        assert!(h.blocks_at(&root, "src/alias", true), "lands on .env");
        assert!(!h.blocks_at(&root, "src/alias", false), "the link itself");
        assert!(
            h.blocks_at(&root, "src/cfg/secret.txt", true),
            "through a dir link"
        );
        // From `src` the links lead out of the handle: the sandbox refuses
        // them itself, so there is nothing to hide.
        assert!(!h.blocks_at(&src, "alias", true));
        assert!(h.blocks_at(&root, "sub/.env", false), "a new path by name");
        assert!(!h.blocks_at(&src, "a.rs", true));
        assert!(!h.blocks_at(&root, "config", true));
        assert!(
            h.hides_below(&root, "config"),
            "renaming config would move the secret"
        );
        assert!(!h.hides_below(&root, "src"));
        assert_eq!(h.place_of(&src).as_deref(), Some("src"));
        assert!(h.blocks_entry("", ".env") && h.blocks_entry("config", "secret.txt"));
        assert!(!h.blocks_entry("src", "a.rs"));
    }

    /// A directory deeper than `PATH_MAX` is placed by climbing; a file
    /// there by its parent.
    #[test]
    fn places_past_path_max() {
        let d = tempfile::tempdir().expect("tempdir");
        let w = d.path().join("ws");
        std::fs::create_dir_all(&w).expect("mkdir");
        std::fs::write(w.join(".rooignore"), "deep.env\n").expect("write");
        let h = Hidden::load(&w).expect("load").expect("patterns");
        let top = DirFd::open_ambient(&w).expect("open");
        let name = "n".repeat(200);
        let mut cur = top.try_clone().expect("clone");
        for _ in 0..30 {
            cur.mkdir(OsStr::new(&name), 0o755).expect("mkdir");
            cur = cur.open_dir(OsStr::new(&name)).expect("open");
        }
        cur.create_file(OsStr::new("deep.env"), b"x", 0o644)
            .expect("file");
        cur.create_file(OsStr::new("ok.txt"), b"x", 0o644)
            .expect("file");
        let place = h.place_of(&cur).expect("placed by climbing");
        assert_eq!(place, vec![name.as_str(); 30].join("/"));
        let as_file = std::fs::File::from(cur.as_fd().try_clone_to_owned().expect("dup"));
        assert!(h.blocks_at(&as_file, "deep.env", false));
        assert!(!h.blocks_at(&as_file, "ok.txt", false));
    }

    #[test]
    fn lexical_joins() {
        assert_eq!(join_lexically("a/b", "../c").as_deref(), Some("a/c"));
        assert_eq!(join_lexically("", "./x/./y").as_deref(), Some("x/y"));
        assert_eq!(join_lexically("", "../x"), None);
        assert_eq!(join_lexically("a", "/etc"), None);
    }
}
