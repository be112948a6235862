//! Directory handles: the one place where the host touches a workspace's
//! entries. Every operation names a single entry relative to an open
//! directory (never a joined path), never follows a symlink, never blocks
//! on a FIFO or a device, and accepts only regular files and directories
//! where it reads or writes content. [`Workspace`](super::Workspace) and
//! the [`WriteGuard`](super::WriteGuard) are built on it.
//!
//! A handle is a `cap_std::fs::Dir` (the Bytecode Alliance's capability
//! file system, which wasmtime-wasi itself stands on), used through
//! `cap-fs-ext`'s no-follow options. Direct `rustix` calls remain only
//! where cap-std offers nothing: one `openat2` with `RESOLVE_NO_SYMLINKS`
//! for a whole relative path (cap-std resolves within its directory but
//! follows symlinks that stay inside), and `O_NONBLOCK` cleared again on
//! an opened regular file (`fcntl`).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, DirBuilder, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Flags every open carries besides cap-std's own no-follow and
/// close-on-exec: never become the controlling terminal, never block on a
/// FIFO.
const EXTRA: i32 = OFlags::NOCTTY.union(OFlags::NONBLOCK).bits().cast_signed();

/// Flags of the one `openat2` path walk.
const BASE: OFlags = OFlags::NOFOLLOW
    .union(OFlags::NOCTTY)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

/// What an entry is, as far as the host cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device: never opened.
    Special,
}

impl Kind {
    fn of(ft: cap_std::fs::FileType) -> Self {
        Self::from_flags(ft.is_file(), ft.is_dir(), ft.is_symlink())
    }

    fn of_std(ft: std::fs::FileType) -> Self {
        Self::from_flags(ft.is_file(), ft.is_dir(), ft.is_symlink())
    }

    fn from_flags(file: bool, dir: bool, symlink: bool) -> Self {
        match (file, dir, symlink) {
            (true, _, _) => Self::File,
            (_, true, _) => Self::Dir,
            (_, _, true) => Self::Symlink,
            _ => Self::Special,
        }
    }

    /// A word for messages.
    pub fn word(self) -> &'static str {
        match self {
            Self::File => "a regular file",
            Self::Dir => "a directory",
            Self::Symlink => "a symbolic link",
            Self::Special => "a special file (FIFO, socket or device)",
        }
    }
}

/// The facts of one entry, read without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    /// What it is.
    pub kind: Kind,
    /// Permission bits.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// Inode number.
    pub ino: u64,
    /// Device.
    pub dev: u64,
    /// Change time (seconds, nanoseconds): the guest can forge mtime but
    /// not ctime, so equal stamps mean an untouched inode.
    pub ctime: (i64, i64),
    /// Modification time (seconds, nanoseconds), as git's index records
    /// it beside the change time.
    pub mtime: (i64, i64),
}

impl EntryStat {
    fn from(m: &Metadata) -> Self {
        Self {
            kind: Kind::of(m.file_type()),
            mode: m.mode() & 0o7777,
            size: m.len(),
            ino: m.ino(),
            dev: m.dev(),
            ctime: (m.ctime(), m.ctime_nsec()),
            mtime: (m.mtime(), m.mtime_nsec()),
        }
    }
}

/// An open directory. Cheap to pass around by reference; closed on drop.
#[derive(Debug)]
pub struct DirFd {
    dir: Dir,
}

impl AsFd for DirFd {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.dir.as_fd()
    }
}

/// Whether `name` is one plain entry name (no separator, not `.`/`..`).
fn plain(name: &OsStr) -> std::io::Result<&OsStr> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{:?} is not a single entry name", name),
        ));
    }
    Ok(name)
}

fn io(e: Errno) -> std::io::Error {
    std::io::Error::from(e)
}

impl DirFd {
    /// Open a directory named by the user (the workspace itself, a data
    /// dir): symlinks in this path are the user's own and are followed.
    pub fn open_ambient(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            dir: Dir::open_ambient_dir(path, ambient_authority())?,
        })
    }

    /// Open the directory at `path`, an absolute path already resolved
    /// (no link in it), following no symlink at any step: a folder checked
    /// once (a skill's, where links were resolved and judged) cannot be
    /// swapped for a link to elsewhere afterwards.
    pub fn open_resolved(path: &Path) -> std::io::Result<Self> {
        use std::path::Component;
        let mut parts = Vec::new();
        for c in path.components() {
            match c {
                Component::RootDir => {}
                Component::Normal(n) => parts.push(n),
                _ => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("{} is not an absolute, resolved path", path.display()),
                    ));
                }
            }
        }
        if !path.has_root() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not an absolute path", path.display()),
            ));
        }
        Self::open_ambient(Path::new("/"))?.open_dir_path(&parts)
    }

    /// A handle on a directory opened elsewhere (by the sandbox's own
    /// resolution, which never leaves its preopen).
    pub(crate) fn from_file(dir: File) -> Self {
        Self {
            dir: Dir::from_std_file(dir),
        }
    }

    fn from_fd(fd: OwnedFd) -> Self {
        Self::from_file(File::from(fd))
    }

    /// Open the child directory `name`; a symlink there is an error.
    pub fn open_dir(&self, name: &OsStr) -> std::io::Result<Self> {
        Ok(Self {
            dir: self.dir.open_dir_nofollow(plain(name)?)?,
        })
    }

    /// Open the directory at the relative path `components` (each a plain
    /// name), following no symlink at any step. Uses one `openat2` with
    /// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it, and
    /// one no-follow `openat` per component elsewhere.
    pub fn open_dir_path(&self, components: &[&OsStr]) -> std::io::Result<Self> {
        if components.is_empty() {
            return self.try_clone();
        }
        for c in components {
            plain(c)?;
        }
        // One path longer than the kernel takes in one call (a chain a
        // plugin made past `PATH_MAX`) is walked a component at a time.
        let len: usize = components.iter().map(|c| c.len() + 1).sum();
        if len < PATH_MAX
            && let Some(fd) = self.openat2(components, OFlags::RDONLY | OFlags::DIRECTORY)?
        {
            return Ok(Self::from_fd(fd));
        }
        let mut cur = self.open_dir(components[0])?;
        for c in &components[1..] {
            cur = cur.open_dir(c)?;
        }
        Ok(cur)
    }

    /// `openat2` beneath this directory with no symlinks; `None` when the
    /// kernel (or a seccomp filter) does not offer it.
    fn openat2(&self, components: &[&OsStr], flags: OFlags) -> std::io::Result<Option<OwnedFd>> {
        if !openat2_available() {
            return Ok(None);
        }
        let mut joined = OsString::new();
        for (i, c) in components.iter().enumerate() {
            if i > 0 {
                joined.push("/");
            }
            joined.push(c);
        }
        match rustix::fs::openat2(
            &self.dir,
            joined.as_os_str(),
            flags | BASE,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::NOSYS) | Err(Errno::PERM) => {
                OPENAT2_MISSING.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(None)
            }
            // A symlink on the way: report it as the no-follow walk would.
            Err(Errno::XDEV) | Err(Errno::AGAIN) => Err(io(Errno::LOOP)),
            Err(e) => Err(io(e)),
        }
    }

    /// A descriptor of its own on this same directory, opened from the
    /// handle (`.`, nothing resolved by name) with `O_PATH`, as WASI opens
    /// a preopen: what a call's sandbox mounts.
    pub fn reopen_for_mount(&self) -> std::io::Result<File> {
        let fd = rustix::fs::openat(
            self,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(File::from(fd))
    }

    /// Another handle on the same directory.
    pub fn try_clone(&self) -> std::io::Result<Self> {
        Ok(Self {
            dir: self.dir.try_clone()?,
        })
    }

    /// Facts of the entry `name`, not following a symlink.
    pub fn stat(&self, name: &OsStr) -> std::io::Result<EntryStat> {
        Ok(EntryStat::from(&self.dir.symlink_metadata(plain(name)?)?))
    }

    /// Facts of the entry `name`, or `None` when there is none.
    pub fn stat_opt(&self, name: &OsStr) -> std::io::Result<Option<EntryStat>> {
        match self.stat(name) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Facts of this directory itself.
    pub fn stat_self(&self) -> std::io::Result<EntryStat> {
        Ok(EntryStat::from(&self.dir.dir_metadata()?))
    }

    /// The names in this directory with their kinds (from a no-follow
    /// `stat` of each), `.` and `..` left out.
    pub fn entries(&self) -> std::io::Result<Vec<(OsString, EntryStat)>> {
        let mut out = Vec::new();
        for entry in self.dir.entries()? {
            let name = entry?.file_name();
            match self.stat(&name) {
                Ok(st) => out.push((name, st)),
                // Removed since the listing: not there.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The names in this directory with their kinds as the directory
    /// listing gives them (a `stat` only where the file system does not
    /// say), `.` and `..` left out. Cheaper than [`DirFd::entries`] when
    /// only the kind matters.
    pub fn names(&self) -> std::io::Result<Vec<(OsString, Kind)>> {
        let mut out = Vec::new();
        for entry in self.dir.entries()? {
            let entry = entry?;
            let name = entry.file_name();
            // cap-std gives the listing's d_type, and stats (not
            // following) only where the file system does not say.
            let kind = match entry.file_type() {
                Ok(ft) => Kind::of(ft),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    /// Open `name` with `options`, never following a symlink there, never
    /// blocking on a FIFO, never becoming the controlling terminal.
    fn open_with(&self, name: &OsStr, options: &mut OpenOptions) -> std::io::Result<File> {
        options.follow(FollowSymlinks::No).custom_flags(EXTRA);
        Ok(self.dir.open_with(plain(name)?, options)?.into_std())
    }

    /// Open the regular file `name` for reading. A symlink, FIFO, socket,
    /// device or directory there is refused without blocking.
    pub fn open_read(&self, name: &OsStr) -> std::io::Result<File> {
        regular(self.open_with(name, OpenOptions::new().read(true))?)
    }

    /// Read the regular file `name`, at most `max` bytes; more is an error
    /// of kind `FileTooLarge`.
    pub fn read(&self, name: &OsStr, max: u64) -> std::io::Result<Vec<u8>> {
        let f = self.open_read(name)?;
        read_capped(f, max)
    }

    /// Open the regular file `name` to append, creating it (mode 0644)
    /// when missing. A file with other hard links is refused: its other
    /// name may lie anywhere on the filesystem (appending writes in place,
    /// so it would write there too).
    pub fn open_append(&self, name: &OsStr) -> std::io::Result<File> {
        use std::os::unix::fs::MetadataExt;
        let f = regular(self.open_with(
            name,
            OpenOptions::new().append(true).create(true).mode(0o644),
        )?)?;
        if f.metadata()?.nlink() > 1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "it has other hard links (another place's file): not written in place",
            ));
        }
        Ok(f)
    }

    /// Create the new regular file `name` (it must not exist) with `bytes`
    /// and the permission bits `mode`.
    pub fn create_file(&self, name: &OsStr, bytes: &[u8], mode: u32) -> std::io::Result<()> {
        use std::io::Write;
        let mut f = self.open_with(
            name,
            OpenOptions::new().write(true).create_new(true).mode(0o600),
        )?;
        f.write_all(bytes)?;
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
        Ok(())
    }

    /// Create the directory `name`.
    pub fn mkdir(&self, name: &OsStr, mode: u32) -> std::io::Result<()> {
        use cap_std::fs::DirBuilderExt;
        let mut b = DirBuilder::new();
        b.mode(mode & 0o7777);
        self.dir.create_dir_with(plain(name)?, &b)
    }

    /// Create the symlink `name` pointing at `target` (stored as given,
    /// never resolved by the host: `symlink_contents`, not cap-std's
    /// `symlink`, which refuses an absolute target a workspace may hold).
    pub fn symlink(&self, target: &Path, name: &OsStr) -> std::io::Result<()> {
        self.dir.symlink_contents(target, plain(name)?)
    }

    /// The target of the symlink `name`, as stored.
    pub fn readlink(&self, name: &OsStr) -> std::io::Result<PathBuf> {
        self.dir.read_link_contents(plain(name)?)
    }

    /// Remove the non-directory entry `name` (a file, symlink or special
    /// file; a symlink is removed, never its target).
    pub fn remove_file(&self, name: &OsStr) -> std::io::Result<()> {
        self.dir.remove_file_or_symlink(plain(name)?)
    }

    /// Remove the empty directory `name`.
    pub fn remove_dir(&self, name: &OsStr) -> std::io::Result<()> {
        self.dir.remove_dir(plain(name)?)
    }

    /// Remove `name` whatever it is, a directory with everything below it,
    /// never following a symlink. Works at any depth with a constant number
    /// of open handles (it climbs back with `..`, which is never a link, and
    /// checks it came back to the directory it left), and reads each
    /// directory once, so it costs what `rm -rf` costs. Returns how many
    /// entries were removed.
    pub fn remove_tree(&self, name: &OsStr) -> std::io::Result<usize> {
        let st = self.stat(name)?;
        if st.kind != Kind::Dir {
            self.remove_file(name)?;
            return Ok(1);
        }
        /// A directory on the way down: its name in its parent, who it is,
        /// and the subdirectories still to remove (`None` until listed).
        struct Frame {
            name: OsString,
            id: (u64, u64),
            subdirs: Option<Vec<OsString>>,
        }
        let mut removed = 0usize;
        let mut cur = self.open_dir(name)?;
        let me = cur.stat_self()?;
        let mut stack = vec![Frame {
            name: name.to_os_string(),
            id: (me.dev, me.ino),
            subdirs: None,
        }];
        while let Some(top) = stack.last_mut() {
            let subdirs = match &mut top.subdirs {
                Some(s) => s,
                None => {
                    let mut subs = Vec::new();
                    for (child, kind) in cur.names()? {
                        if kind == Kind::Dir {
                            subs.push(child);
                        } else {
                            cur.remove_file(&child)?;
                            removed += 1;
                        }
                    }
                    top.subdirs.insert(subs)
                }
            };
            if let Some(child) = subdirs.pop() {
                let sub = match cur.open_dir(&child) {
                    Ok(d) => d,
                    // Not a directory any more: remove whatever it is.
                    Err(e) if e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error()) => {
                        cur.remove_file(&child)?;
                        removed += 1;
                        continue;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                };
                let st = sub.stat_self()?;
                cur = sub;
                stack.push(Frame {
                    name: child,
                    id: (st.dev, st.ino),
                    subdirs: None,
                });
                continue;
            }
            // Empty: climb and remove it.
            let Some(done) = stack.pop() else { break };
            let parent = match stack.last() {
                Some(up) => {
                    let parent = cur.open_parent()?;
                    let st = parent.stat_self()?;
                    if (st.dev, st.ino) != up.id {
                        return Err(std::io::Error::other("directory moved while being removed"));
                    }
                    parent
                }
                None => self.try_clone()?,
            };
            let st = parent.stat(&done.name)?;
            if st.kind != Kind::Dir || (st.dev, st.ino) != done.id {
                return Err(std::io::Error::other("directory moved while being removed"));
            }
            parent.remove_dir(&done.name)?;
            removed += 1;
            cur = parent;
        }
        Ok(removed)
    }

    /// The parent directory (`..` is never a symlink). Only
    /// [`DirFd::remove_tree`] climbs, back to a directory it came from and
    /// checks it is; cap-std calls leaving a directory ambient authority.
    fn open_parent(&self) -> std::io::Result<Self> {
        Ok(Self {
            dir: self.dir.open_parent_dir(ambient_authority())?,
        })
    }
}

/// Keep `f` only if it is a regular file.
fn regular(f: File) -> std::io::Result<File> {
    let kind = Kind::of_std(f.metadata()?.file_type());
    if kind != Kind::File {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file but {}", kind.word()),
        ));
    }
    // Reads of a regular file never block; clear O_NONBLOCK anyway so the
    // file behaves like any other (keeping O_APPEND and the rest).
    if let Ok(flags) = rustix::fs::fcntl_getfl(&f) {
        let _ = rustix::fs::fcntl_setfl(&f, flags - OFlags::NONBLOCK);
    }
    Ok(f)
}

/// Read at most `max` bytes of `f`; more is a `FileTooLarge` error.
pub fn read_capped(f: File, max: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    f.take(max.saturating_add(1)).read_to_end(&mut buf)?;
    if u64::try_from(buf.len()).unwrap_or(u64::MAX) > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(buf)
}

/// Longest path the kernel resolves in one call (Linux's `PATH_MAX`,
/// counting the terminating NUL).
const PATH_MAX: usize = 4096;

static OPENAT2_MISSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether to try `openat2` (off after the kernel refused it once, or when
/// `ROOST_NO_OPENAT2` is set, which tests use to exercise the fallback).
fn openat2_available() -> bool {
    !OPENAT2_MISSING.load(std::sync::atomic::Ordering::Relaxed)
        && std::env::var_os("ROOST_NO_OPENAT2").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::FileType;

    fn os(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    /// A resolved path opens; the same place reached through a link, or a
    /// link swapped in for one of its directories, does not.
    #[test]
    fn open_resolved_follows_no_link() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(base.join("real/skill")).expect("mkdir");
        std::fs::create_dir_all(base.join("elsewhere/skill")).expect("mkdir");
        std::fs::write(base.join("elsewhere/skill/secret"), "s").expect("write");
        assert!(DirFd::open_resolved(&base.join("real/skill")).is_ok());
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).expect("symlink");
        assert!(DirFd::open_resolved(&base.join("link/skill")).is_err());
        assert!(DirFd::open_resolved(Path::new("relative/skill")).is_err());
        assert!(DirFd::open_resolved(&base.join("real/../real/skill")).is_err());
        // The checked folder is swapped for a link to elsewhere.
        std::fs::rename(base.join("real"), base.join("old")).expect("rename");
        std::os::unix::fs::symlink(base.join("elsewhere"), base.join("real")).expect("symlink");
        assert!(DirFd::open_resolved(&base.join("real/skill")).is_err());
    }

    #[test]
    fn refuses_links_specials_and_composite_names() {
        let d = tempfile::tempdir().expect("tempdir");
        let w = d.path();
        std::fs::write(w.join("f"), "hello").expect("write");
        std::fs::create_dir(w.join("sub")).expect("mkdir");
        std::os::unix::fs::symlink("f", w.join("link")).expect("symlink");
        std::os::unix::fs::symlink("sub", w.join("dlink")).expect("symlink");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            w.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .expect("mkfifo");
        let dir = DirFd::open_ambient(w).expect("open");
        assert_eq!(dir.read(os("f"), 100).expect("read"), b"hello");
        assert!(dir.read(os("f"), 2).is_err(), "cap");
        assert!(dir.read(os("link"), 100).is_err(), "symlink followed");
        assert!(dir.read(os("fifo"), 100).is_err(), "fifo opened");
        assert!(dir.open_append(os("fifo")).is_err(), "fifo appended");
        assert!(dir.open_dir(os("dlink")).is_err(), "dir symlink followed");
        assert!(dir.open_dir_path(&[os("dlink")]).is_err());
        assert!(dir.read(os("sub/../f"), 100).is_err(), "composite name");
        assert!(dir.read(os(".."), 100).is_err());
        assert_eq!(dir.stat(os("link")).expect("stat").kind, Kind::Symlink);
        assert_eq!(dir.stat(os("fifo")).expect("stat").kind, Kind::Special);
    }

    #[test]
    fn remove_tree_handles_deep_chains() {
        let d = tempfile::tempdir().expect("tempdir");
        let dir = DirFd::open_ambient(d.path()).expect("open");
        dir.mkdir(os("top"), 0o755).expect("mkdir");
        let mut cur = dir.open_dir(os("top")).expect("open");
        // Deeper than PATH_MAX allows as one path.
        for _ in 0..2100 {
            cur.mkdir(os("dd"), 0o755).expect("mkdir");
            cur = cur.open_dir(os("dd")).expect("open");
        }
        cur.create_file(os("x"), b"x", 0o644).expect("file");
        cur.symlink(Path::new("/etc"), os("l")).expect("symlink");
        let removed = dir.remove_tree(os("top")).expect("removed");
        assert_eq!(removed, 2100 + 1 + 2);
        assert!(dir.stat_opt(os("top")).expect("stat").is_none());
    }
}
