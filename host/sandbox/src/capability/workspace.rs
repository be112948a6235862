//! The workspace as the host sees it: every host read or write of a
//! workspace path goes through a [`Workspace`]. Paths from a model or a
//! plugin become a [`RelPath`] first (absolute and `..` forms normalised,
//! refused when they leave the workspace); files are then reached through
//! directory handles ([`DirFd`]) that never follow a symlink out of the
//! workspace, never open a FIFO or device, and read at most a stated number
//! of bytes.
//!
//! Two ways to reach a file:
//! - [`Workspace::read`] follows symlinks that stay inside the workspace
//!   (`AGENTS.md -> CLAUDE.md` keeps working) and refuses the rest;
//! - [`Workspace::read_strict`] follows none at all, for the files that
//!   define a task's authority (`.orchestration/*`).

use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use super::GUEST_WORKSPACE;
use super::dirfd::{DirFd, EntryStat, Kind};
use super::top_entries;

/// Symlink hops one resolution may take (Linux's own limit).
const MAX_HOPS: usize = 40;

/// A normalised workspace-relative path: plain components only, no `.`,
/// `..`, empty or absolute parts. Empty means the workspace root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RelPath {
    parts: Vec<OsString>,
}

impl RelPath {
    /// The workspace root.
    pub fn root() -> Self {
        Self::default()
    }

    /// Normalise a path relative to the workspace lexically: `.` and empty
    /// parts dropped, `..` climbs; climbing above the root, or an absolute
    /// path, is refused.
    pub fn parse(raw: &str) -> Result<Self, WorkspaceError> {
        if raw.contains('\0') {
            return Err(WorkspaceError::Outside {
                path: raw.to_owned(),
            });
        }
        let mut parts: Vec<OsString> = Vec::new();
        for c in Path::new(raw).components() {
            match c {
                Component::Normal(s) => parts.push(s.to_os_string()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(WorkspaceError::Outside {
                            path: raw.to_owned(),
                        });
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(WorkspaceError::Outside {
                        path: raw.to_owned(),
                    });
                }
            }
        }
        Ok(Self { parts })
    }

    /// Its components.
    pub fn parts(&self) -> Vec<&OsStr> {
        self.parts.iter().map(OsString::as_os_str).collect()
    }

    /// Whether this is the workspace root.
    pub fn is_root(&self) -> bool {
        self.parts.is_empty()
    }

    /// The path with `/` separators (`.` for the root).
    pub fn as_string(&self) -> String {
        if self.parts.is_empty() {
            return ".".to_owned();
        }
        self.parts
            .iter()
            .map(|p| p.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// As a relative `PathBuf` (empty for the root).
    pub fn to_path(&self) -> PathBuf {
        self.parts.iter().collect()
    }

    /// This path with `name` appended.
    pub fn join(&self, name: &OsStr) -> Self {
        let mut parts = self.parts.clone();
        parts.push(name.to_os_string());
        Self { parts }
    }

    /// Whether `self` is `other` or lies below it.
    pub fn starts_with(&self, other: &RelPath) -> bool {
        self.parts.starts_with(&other.parts)
    }

    /// The parent and the last component (`None` for the root).
    fn split_last(&self) -> Option<(&[OsString], &OsStr)> {
        self.parts
            .split_last()
            .map(|(last, parent)| (parent, last.as_os_str()))
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_string())
    }
}

/// Why a workspace path was refused or could not be used.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The path leaves the workspace (absolute elsewhere, `..` above the
    /// root, or a symlink pointing out).
    #[error("`{path}` is outside the workspace")]
    Outside {
        /// The path as given.
        path: String,
    },
    /// Not a regular file (or directory where one is wanted).
    #[error("`{path}` is {kind}, not {wanted}")]
    WrongKind {
        /// Workspace-relative path.
        path: String,
        /// What it is.
        kind: &'static str,
        /// What was wanted.
        wanted: &'static str,
    },
    /// Larger than the host reads.
    #[error("`{path}` is larger than {max} bytes")]
    TooLarge {
        /// Workspace-relative path.
        path: String,
        /// The cap.
        max: u64,
    },
    /// A symlink where the host follows none.
    #[error("`{path}` is or passes through a symbolic link, which Roost does not follow here")]
    Symlink {
        /// Workspace-relative path.
        path: String,
    },
    /// Too many symlink hops.
    #[error("`{path}`: too many levels of symbolic links")]
    Loop {
        /// Workspace-relative path.
        path: String,
    },
    /// The workspace path leads to another directory than the one its
    /// task was checked and pinned to when it started (the directory was
    /// moved, or swapped for a symbolic link to elsewhere).
    #[error(
        "workspace `{path}` is refused: it is no longer the directory the task was started in \
         (it was moved or replaced, by a symbolic link say, since)"
    )]
    Moved {
        /// The workspace path as given.
        path: String,
    },
    /// The workspace does not lie beneath the root it must lie in, opened
    /// without following a symbolic link at any step.
    #[error("workspace `{path}` is refused: {reason}")]
    NotBeneath {
        /// The workspace path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// Any other I/O failure. The cause is part of the message (and not
    /// also a `source`, which would print it twice in an error chain).
    #[error("`{path}`: {cause}")]
    Io {
        /// Workspace-relative path.
        path: String,
        /// Cause.
        cause: std::io::Error,
    },
}

impl WorkspaceError {
    fn io(path: &RelPath, e: std::io::Error) -> Self {
        let p = path.as_string();
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            return Self::Symlink { path: p };
        }
        match e.kind() {
            std::io::ErrorKind::FileTooLarge => Self::TooLarge { path: p, max: 0 },
            std::io::ErrorKind::InvalidInput if e.to_string().starts_with("not a regular file") => {
                Self::WrongKind {
                    path: p,
                    kind: "not a regular file",
                    wanted: "a regular file",
                }
            }
            _ => Self::Io { path: p, cause: e },
        }
    }

    /// Whether the error says the path is not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound)
    }
}

/// An open workspace. Cheap to clone (one shared directory handle).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: Arc<DirFd>,
    host: PathBuf,
    /// The identity of the directory `root` holds.
    id: WorkspaceId,
    /// A view as of a moment ([`Workspace::as_of_now`]): names known
    /// missing from the top directory are not looked up again.
    as_of: bool,
}

/// A directory of the workspace as the host walks it: the root itself,
/// borrowed (no descriptor duplicated for a lookup at the top), or one
/// opened below it.
enum Dir<'a> {
    Root(&'a DirFd),
    Opened(DirFd),
}

impl std::ops::Deref for Dir<'_> {
    type Target = DirFd;

    fn deref(&self) -> &DirFd {
        match self {
            Dir::Root(d) => d,
            Dir::Opened(d) => d,
        }
    }
}

impl Workspace {
    /// Open the workspace at `path` (the user's choice; symlinks in it are
    /// theirs and are resolved once, here).
    pub fn open(path: &Path) -> Result<Self, WorkspaceError> {
        let host = path.canonicalize().map_err(|cause| WorkspaceError::Io {
            path: path.display().to_string(),
            cause,
        })?;
        let root = DirFd::open_ambient(&host).map_err(|cause| WorkspaceError::Io {
            path: host.display().to_string(),
            cause,
        })?;
        let id = WorkspaceId::of(&root, &host)?;
        // Decided on the handle just opened: a path pinned by a running
        // task must still lead to the very directory pinned.
        if !pins::allow(&[lexical(path), host.clone()], id) {
            return Err(WorkspaceError::Moved {
                path: path.display().to_string(),
            });
        }
        Ok(Self {
            root: Arc::new(root),
            host,
            id,
            as_of: false,
        })
    }

    /// Open the workspace at the absolute `path` only beneath `root` (a
    /// tenant's workspace root, recorded canonical): `root` is opened
    /// following no symbolic link at any step, then `path` below it with
    /// one `openat2` `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (or one
    /// no-follow open per component). A workspace that was swapped for a
    /// link to elsewhere since it was checked, or that is not below
    /// `root`, is refused; what the task then uses is the handle opened
    /// here, never the path again.
    pub fn open_beneath(root: &Path, path: &Path) -> Result<Self, WorkspaceError> {
        let refuse = |reason: String| WorkspaceError::NotBeneath {
            path: path.display().to_string(),
            reason,
        };
        let rel = path.strip_prefix(root).map_err(|_| {
            refuse(format!(
                "it does not lie inside the workspace root {}",
                root.display()
            ))
        })?;
        let mut parts: Vec<&OsStr> = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => parts.push(n),
                Component::CurDir => {}
                _ => return Err(refuse("its path climbs with `..`".to_owned())),
            }
        }
        let top = DirFd::open_resolved(root).map_err(|e| {
            refuse(format!(
                "its workspace root {} cannot be opened, following no symbolic link: {e}",
                root.display()
            ))
        })?;
        let dir = top.open_dir_path(&parts).map_err(|e| {
            let why = if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                "it is, or passes through, a symbolic link".to_owned()
            } else if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) {
                "it is not a directory".to_owned()
            } else if e.kind() == std::io::ErrorKind::NotFound {
                "it does not exist".to_owned()
            } else {
                e.to_string()
            };
            refuse(format!(
                "{why} (it must be a directory inside the workspace root {}, reached without a symbolic link)",
                root.display()
            ))
        })?;
        let host: PathBuf = root.join(parts.iter().collect::<PathBuf>());
        let id = WorkspaceId::of(&dir, &host)?;
        if !pins::allow(&[lexical(path), host.clone()], id) {
            return Err(WorkspaceError::Moved {
                path: path.display().to_string(),
            });
        }
        Ok(Self {
            root: Arc::new(dir),
            host,
            id,
            as_of: false,
        })
    }

    /// This workspace as of now, for the files a turn reads before it asks
    /// the model (instructions, MCP servers, intents): a file missing from
    /// its top directory is looked up once, then known missing until an
    /// entry is made, removed or renamed there (see `top_entries`), so a
    /// turn asks for none of them again. What it answers is exact as of
    /// this call, not of each later read: a view is for one turn's
    /// preparation, never for a tool call (`.rooignore` and a call's
    /// paths are looked up each time). Where the top directory cannot be
    /// watched, the view looks everything up.
    pub fn as_of_now(&self) -> Workspace {
        Workspace {
            root: Arc::clone(&self.root),
            host: self.host.clone(),
            id: self.id,
            as_of: top_entries::refresh(&self.root, self.id),
        }
    }

    /// Whether `rel` is known to be missing: its first name is missing
    /// from the top directory, as of this view.
    fn known_missing(&self, rel: &RelPath) -> bool {
        self.as_of
            && rel
                .parts
                .first()
                .is_some_and(|n| top_entries::known_absent(self.id, n))
    }

    /// A lookup of `parts` found nothing: when this is a view, remember
    /// their first name as missing if it is (`single`: it was the name
    /// looked up in the top directory).
    fn note_missing(&self, parts: &[OsString], single: bool) {
        if !self.as_of {
            return;
        }
        let Some(first) = parts.first() else { return };
        if single || matches!(self.root.stat_opt(first), Ok(None)) {
            top_entries::found_absent(self.id, first);
        }
    }

    /// Facts of the entry `name` of the top directory, not following it;
    /// `None` when there is none. A view answers for a name it knows is
    /// missing without a lookup, and learns one found missing.
    pub fn top_entry(&self, name: &str) -> Result<Option<EntryStat>, WorkspaceError> {
        let rel = RelPath::parse(name)?;
        let [first] = rel.parts.as_slice() else {
            return Err(WorkspaceError::WrongKind {
                path: rel.as_string(),
                kind: "a path below the top directory",
                wanted: "a name in the top directory",
            });
        };
        if self.known_missing(&rel) {
            return Ok(None);
        }
        match self.root.stat_opt(first) {
            Ok(None) => {
                self.note_missing(&rel.parts, true);
                Ok(None)
            }
            Ok(found) => Ok(found),
            Err(e) => Err(WorkspaceError::io(&rel, e)),
        }
    }

    /// The identity (device, inode) of the directory this handle holds.
    pub fn id(&self) -> WorkspaceId {
        self.id
    }

    /// Pin this workspace: until the pin is dropped, every
    /// [`Workspace::open`] (and [`Workspace::open_beneath`]) in this
    /// process of its path must reach this very directory, or is refused
    /// ([`WorkspaceError::Moved`]). A task holds one for each run, taken
    /// on the handle checked at its start.
    pub fn pin(&self) -> WorkspacePin {
        pins::hold(self.host.clone(), self.id)
    }

    /// The workspace's host path (canonical).
    pub fn host_path(&self) -> &Path {
        &self.host
    }

    /// The root directory handle.
    pub fn root(&self) -> &DirFd {
        &self.root
    }

    /// Normalise a path from a model or plugin: relative to the workspace,
    /// or absolute under the guest mount (`/workspace/…`) or the host path
    /// of the workspace. Anything that leaves the workspace is refused.
    pub fn normalize(&self, raw: &str) -> Result<RelPath, WorkspaceError> {
        let p = Path::new(raw);
        if p.is_absolute() {
            let inner = p
                .strip_prefix(GUEST_WORKSPACE)
                .or_else(|_| p.strip_prefix(&self.host))
                .map_err(|_| WorkspaceError::Outside {
                    path: raw.to_owned(),
                })?;
            return RelPath::parse(&inner.to_string_lossy()).map_err(|_| WorkspaceError::Outside {
                path: raw.to_owned(),
            });
        }
        RelPath::parse(raw)
    }

    /// Where `rel` really is: symlinks inside the workspace followed (at
    /// most 40 hops), a missing tail kept as written. A symlink that leads
    /// out is refused.
    pub fn resolve(&self, rel: &RelPath) -> Result<RelPath, WorkspaceError> {
        let mut done: Vec<OsString> = Vec::new();
        let mut todo: VecDeque<OsString> = rel.parts.iter().cloned().collect();
        let mut dir = Dir::Root(&self.root);
        let mut hops = 0usize;
        let outside = || WorkspaceError::Outside {
            path: rel.as_string(),
        };
        while let Some(c) = todo.pop_front() {
            if c == "." || c.is_empty() {
                continue;
            }
            if c == ".." {
                done.pop().ok_or_else(outside)?;
                dir = self.dir_of(&done, rel)?;
                continue;
            }
            let st = dir.stat_opt(&c).map_err(|e| WorkspaceError::io(rel, e))?;
            match st.map(|s| s.kind) {
                None | Some(Kind::File) | Some(Kind::Special) => {
                    // The rest is lexical: nothing there to follow.
                    done.push(c);
                    for rest in todo.drain(..) {
                        if rest == ".." {
                            done.pop().ok_or_else(outside)?;
                        } else if rest != "." && !rest.is_empty() {
                            done.push(rest);
                        }
                    }
                    break;
                }
                Some(Kind::Dir) => {
                    dir = Dir::Opened(dir.open_dir(&c).map_err(|e| WorkspaceError::io(rel, e))?);
                    done.push(c);
                }
                Some(Kind::Symlink) => {
                    hops += 1;
                    if hops > MAX_HOPS {
                        return Err(WorkspaceError::Loop {
                            path: rel.as_string(),
                        });
                    }
                    let target = dir.readlink(&c).map_err(|e| WorkspaceError::io(rel, e))?;
                    let mut parts: Vec<OsString> = Vec::new();
                    if target.is_absolute() {
                        // Absolute targets count only when they name a
                        // place in this workspace.
                        let inner = target.strip_prefix(&self.host).map_err(|_| outside())?;
                        done.clear();
                        parts.extend(inner.components().map(|c| c.as_os_str().to_os_string()));
                    } else {
                        parts.extend(target.components().map(|c| c.as_os_str().to_os_string()));
                    }
                    for p in parts.into_iter().rev() {
                        todo.push_front(p);
                    }
                    dir = self.dir_of(&done, rel)?;
                }
            }
        }
        Ok(RelPath { parts: done })
    }

    fn dir_of(&self, parts: &[OsString], rel: &RelPath) -> Result<Dir<'_>, WorkspaceError> {
        if parts.is_empty() {
            return Ok(Dir::Root(&self.root));
        }
        let comps: Vec<&OsStr> = parts.iter().map(OsString::as_os_str).collect();
        self.root
            .open_dir_path(&comps)
            .map(Dir::Opened)
            .map_err(|e| WorkspaceError::io(rel, e))
    }

    /// The directory `rel` itself, reached without following any symlink.
    pub fn dir(&self, rel: &RelPath) -> Result<DirFd, WorkspaceError> {
        if self.known_missing(rel) {
            return Err(WorkspaceError::io(
                rel,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        match self.dir_of(&rel.parts, rel) {
            Ok(Dir::Root(root)) => root.try_clone().map_err(|e| WorkspaceError::io(rel, e)),
            Ok(Dir::Opened(d)) => Ok(d),
            Err(e) => {
                if e.is_not_found() {
                    self.note_missing(&rel.parts, rel.parts.len() == 1);
                }
                Err(e)
            }
        }
    }

    /// Read the regular file at `rel`, following symlinks that stay in the
    /// workspace; at most `max` bytes. `Ok(None)` when there is no file.
    pub fn read(&self, rel: &RelPath, max: u64) -> Result<Option<Vec<u8>>, WorkspaceError> {
        // Most paths hold no symlink, and most files asked for each turn
        // (instructions, ignore files) are missing: first the path as it
        // is, following nothing (one open). Only a symlink on the way
        // (refused there) sends it through the walk that follows them; a
        // gap with no symlink before it is a missing file either way.
        match self.read_strict(rel, max) {
            Ok(found) => return Ok(found),
            Err(e @ WorkspaceError::TooLarge { .. }) => return Err(e),
            Err(_) => {}
        }
        let real = self.resolve(rel)?;
        self.read_strict(&real, max).map_err(|e| match e {
            WorkspaceError::TooLarge { .. } => WorkspaceError::TooLarge {
                path: rel.as_string(),
                max,
            },
            other => other,
        })
    }

    /// Read the regular file at `rel` without following any symlink on the
    /// way; at most `max` bytes. `Ok(None)` when there is no file.
    pub fn read_strict(&self, rel: &RelPath, max: u64) -> Result<Option<Vec<u8>>, WorkspaceError> {
        let Some((parent, name)) = rel.split_last() else {
            return Err(WorkspaceError::WrongKind {
                path: ".".into(),
                kind: Kind::Dir.word(),
                wanted: "a regular file",
            });
        };
        if self.known_missing(rel) {
            return Ok(None);
        }
        let dir = match self.dir_of(parent, rel) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => {
                self.note_missing(parent, parent.len() == 1);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        match dir.read(name, max) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if parent.is_empty() {
                    self.note_missing(&rel.parts, true);
                }
                Ok(None)
            }
            Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                Err(WorkspaceError::TooLarge {
                    path: rel.as_string(),
                    max,
                })
            }
            Err(e) => Err(entry_error(&dir, name, rel, e)),
        }
    }

    /// Open the regular file at `rel` for streaming (symlinks inside the
    /// workspace followed, none out); `Ok(None)` when there is no file.
    pub fn open_file(&self, rel: &RelPath) -> Result<Option<std::fs::File>, WorkspaceError> {
        // As [`Workspace::read`]: as named first, following nothing.
        if self.known_missing(rel) {
            return Ok(None);
        }
        if let Some((parent, name)) = rel.split_last() {
            match self.dir_of(parent, rel) {
                Err(e) if e.is_not_found() => {
                    self.note_missing(parent, parent.len() == 1);
                    return Ok(None);
                }
                Ok(dir) => match dir.open_read(name) {
                    Ok(f) => return Ok(Some(f)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        if parent.is_empty() {
                            self.note_missing(&rel.parts, true);
                        }
                        return Ok(None);
                    }
                    Err(_) => {}
                },
                Err(_) => {}
            }
        }
        let real = self.resolve(rel)?;
        let Some((parent, name)) = real.split_last() else {
            return Err(WorkspaceError::WrongKind {
                path: ".".into(),
                kind: Kind::Dir.word(),
                wanted: "a regular file",
            });
        };
        let dir = match self.dir_of(parent, &real) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        match dir.open_read(name) {
            Ok(f) => Ok(Some(f)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(entry_error(&dir, name, rel, e)),
        }
    }

    /// Set the permission bits of the regular file at `rel` (symlinks
    /// inside the workspace followed, none out). A file with other hard
    /// links is refused: the mode is the inode's, and its other name may
    /// lie outside the workspace.
    pub fn set_mode(&self, rel: &RelPath, mode: u32) -> Result<(), WorkspaceError> {
        use std::os::unix::fs::MetadataExt;
        let Some(f) = self.open_file(rel)? else {
            return Err(WorkspaceError::Io {
                path: rel.as_string(),
                cause: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        };
        let links = f
            .metadata()
            .map_err(|e| WorkspaceError::io(rel, e))?
            .nlink();
        if links > 1 {
            return Err(WorkspaceError::io(
                rel,
                std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "it has other hard links (another place's file): its mode is not changed",
                ),
            ));
        }
        rustix::fs::fchmod(&f, rustix::fs::Mode::from_raw_mode(mode & 0o7777))
            .map_err(|e| WorkspaceError::io(rel, std::io::Error::from(e)))
    }

    /// Text of a file read with [`Workspace::read`] (invalid UTF-8 replaced).
    pub fn read_text(&self, rel: &str, max: u64) -> Result<Option<String>, WorkspaceError> {
        let rel = RelPath::parse(rel)?;
        Ok(self
            .read(&rel, max)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Text of a file read with [`Workspace::read_strict`].
    pub fn read_text_strict(&self, rel: &str, max: u64) -> Result<Option<String>, WorkspaceError> {
        let rel = RelPath::parse(rel)?;
        Ok(self
            .read_strict(&rel, max)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Whether `rel` is a directory reached without any symlink.
    pub fn is_dir_strict(&self, rel: &str) -> bool {
        RelPath::parse(rel).is_ok_and(|r| self.dir(&r).is_ok())
    }

    /// The regular files directly in the directory `rel` (symlinks inside
    /// the workspace followed), sorted by name; missing directory: none.
    pub fn list_files(&self, rel: &str) -> Result<Vec<RelPath>, WorkspaceError> {
        let rel = RelPath::parse(rel)?;
        // As [`Workspace::read`]: the folder as named, following nothing,
        // then, past a symlink, the walk that follows them.
        let (real, dir) = match self.dir(&rel) {
            Ok(d) => (rel.clone(), d),
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(_) => {
                let real = self.resolve(&rel)?;
                match self.dir(&real) {
                    Ok(d) => (real, d),
                    Err(e) if e.is_not_found() => return Ok(Vec::new()),
                    Err(e) => return Err(e),
                }
            }
        };
        let mut out = Vec::new();
        for (name, st) in dir.entries().map_err(|e| WorkspaceError::io(&real, e))? {
            let p = rel.join(&name);
            let kind = match st.kind {
                Kind::Symlink => match self.resolve(&p) {
                    Ok(target) => self
                        .dir_of(target.split_last().map_or(&[][..], |(d, _)| d), &target)
                        .ok()
                        .and_then(|d| {
                            target
                                .split_last()
                                .and_then(|(_, n)| d.stat(n).ok())
                                .map(|s| s.kind)
                        }),
                    Err(_) => None,
                },
                k => Some(k),
            };
            if kind == Some(Kind::File) {
                out.push(p);
            }
        }
        out.sort();
        Ok(out)
    }

    /// Remove the temporary files an atomic edit of `rel` leaves beside it
    /// when its process is killed mid-write: Roost's own tools write
    /// `.{name}.roost-{hex}-{n}.tmp` in the same directory, then rename it
    /// over `rel`. Only regular files of exactly that shape go, and no
    /// symlink is followed; returns the paths removed.
    pub fn remove_edit_leftovers(&self, rel: &RelPath) -> Result<Vec<String>, WorkspaceError> {
        let Some((parent, name)) = rel.split_last() else {
            return Ok(Vec::new());
        };
        let dir = match self.dir_of(parent, rel) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let prefix = format!(".{}.roost-", name.to_string_lossy());
        let leftover = |entry: &str| {
            entry
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".tmp"))
                .and_then(|rest| rest.split_once('-'))
                .is_some_and(|(hex, n)| {
                    !hex.is_empty()
                        && hex.bytes().all(|b| b.is_ascii_hexdigit())
                        && !n.is_empty()
                        && n.bytes().all(|b| b.is_ascii_digit())
                })
        };
        let mut removed = Vec::new();
        for (entry, kind) in dir.names().map_err(|e| WorkspaceError::io(rel, e))? {
            let Some(s) = entry.to_str() else { continue };
            if kind == Kind::File && leftover(s) {
                dir.remove_file(&entry)
                    .map_err(|e| WorkspaceError::io(rel, e))?;
                let mut parts: Vec<OsString> = parent.to_vec();
                parts.push(entry);
                removed.push(RelPath { parts }.as_string());
            }
        }
        Ok(removed)
    }

    /// Append `bytes` to the regular file `rel` (created when missing) in
    /// one locked, synced write, following no symlink on the way.
    pub fn append_strict(&self, rel: &str, bytes: &[u8]) -> Result<(), WorkspaceError> {
        let rel = RelPath::parse(rel)?;
        let Some((parent, name)) = rel.split_last() else {
            return Err(WorkspaceError::Outside { path: ".".into() });
        };
        let dir = self.dir_of(parent, &rel)?;
        let mut f = dir
            .open_append(name)
            .map_err(|e| entry_error(&dir, name, &rel, e))?;
        f.lock().map_err(|e| WorkspaceError::io(&rel, e))?;
        let res = f.write_all(bytes).and_then(|_| f.sync_data());
        let _ = f.unlock();
        res.map_err(|e| WorkspaceError::io(&rel, e))
    }

    /// Create the new regular file `rel` (it must not exist) with `bytes`
    /// and permission bits `mode`, creating missing parent directories;
    /// no symlink is followed on the way.
    pub fn create_file(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        mode: u32,
    ) -> Result<(), WorkspaceError> {
        let Some((parent, name)) = rel.split_last() else {
            return Err(WorkspaceError::Outside { path: ".".into() });
        };
        let parent_rel = RelPath {
            parts: parent.to_vec(),
        };
        self.ensure_dir(&parent_rel)?;
        let dir = self.dir_of(parent, rel)?;
        dir.create_file(name, bytes, mode)
            .map_err(|e| entry_error(&dir, name, rel, e))
    }

    /// Remove the file (or symlink, never followed) at `rel`; nothing
    /// there is no error. A directory is not removed.
    pub fn remove_file(&self, rel: &RelPath) -> Result<(), WorkspaceError> {
        let Some((parent, name)) = rel.split_last() else {
            return Err(WorkspaceError::Outside { path: ".".into() });
        };
        let dir = match self.dir_of(parent, rel) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        match dir.remove_file(name) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(entry_error(&dir, name, rel, e)),
        }
    }

    /// Put `bytes` with permission bits `mode` at `rel` in place of what
    /// is there (a file or symlink, never followed), creating missing
    /// parent directories.
    pub fn replace_file(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        mode: u32,
    ) -> Result<(), WorkspaceError> {
        self.remove_file(rel)?;
        self.create_file(rel, bytes, mode)
    }

    /// Make sure the directory `rel` exists, creating missing components,
    /// and return its host path. No component may be a symlink or anything
    /// but a directory (a write root is never reached through a link).
    pub fn ensure_dir(&self, rel: &RelPath) -> Result<PathBuf, WorkspaceError> {
        self.ensure_dir_fd(rel)?;
        Ok(self.host.join(rel.to_path()))
    }

    /// [`Workspace::ensure_dir`], returning the handle on the directory
    /// (to use it by handle, not by a path checked before).
    pub fn ensure_dir_fd(&self, rel: &RelPath) -> Result<DirFd, WorkspaceError> {
        let mut dir = self
            .root
            .try_clone()
            .map_err(|e| WorkspaceError::io(rel, e))?;
        let mut sofar = RelPath::root();
        for c in &rel.parts {
            sofar = sofar.join(c);
            let mut st = dir.stat_opt(c).map_err(|e| WorkspaceError::io(&sofar, e))?;
            if st.is_none() {
                match dir.mkdir(c, 0o755) {
                    Ok(()) => {}
                    // Made meanwhile by another task writing beside this
                    // one: checked like any component that was there.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        st = dir.stat_opt(c).map_err(|e| WorkspaceError::io(&sofar, e))?;
                    }
                    Err(e) => return Err(WorkspaceError::io(&sofar, e)),
                }
            }
            match st {
                None => {}
                Some(s) if s.kind == Kind::Dir => {}
                Some(s) if s.kind == Kind::Symlink => {
                    return Err(WorkspaceError::Symlink {
                        path: sofar.as_string(),
                    });
                }
                Some(s) => {
                    return Err(WorkspaceError::WrongKind {
                        path: sofar.as_string(),
                        kind: s.kind.word(),
                        wanted: "a directory",
                    });
                }
            }
            dir = dir.open_dir(c).map_err(|e| WorkspaceError::io(&sofar, e))?;
        }
        Ok(dir)
    }
}

/// The identity of a directory: device and inode (`st_dev`, `st_ino`),
/// read from an open handle on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkspaceId {
    /// Device (`st_dev`).
    pub dev: u64,
    /// Inode (`st_ino`).
    pub ino: u64,
}

impl WorkspaceId {
    fn of(dir: &DirFd, host: &Path) -> Result<Self, WorkspaceError> {
        let st = dir.stat_self().map_err(|cause| WorkspaceError::Io {
            path: host.display().to_string(),
            cause,
        })?;
        Ok(Self {
            dev: st.dev,
            ino: st.ino,
        })
    }
}

/// A workspace pinned to one directory for as long as it lives (see
/// [`Workspace::pin`]).
#[derive(Debug)]
#[must_use = "the workspace is pinned only while this lives"]
pub struct WorkspacePin {
    path: PathBuf,
    id: WorkspaceId,
}

impl Drop for WorkspacePin {
    fn drop(&mut self) {
        pins::release(&self.path, self.id);
    }
}

/// The process's pinned workspaces: path → the identities tasks pinned
/// it to, each with its number of holders. Per process, like the write
/// leases: every task of every engine in it.
mod pins {
    use super::*;

    type Table = HashMap<PathBuf, HashMap<WorkspaceId, usize>>;

    static PINNED: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);

    fn table() -> MutexGuard<'static, Table> {
        PINNED.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn hold(path: PathBuf, id: WorkspaceId) -> WorkspacePin {
        *table()
            .entry(path.clone())
            .or_default()
            .entry(id)
            .or_insert(0) += 1;
        WorkspacePin { path, id }
    }

    pub(super) fn release(path: &Path, id: WorkspaceId) {
        let mut t = table();
        if let Some(ids) = t.get_mut(path) {
            if let Some(n) = ids.get_mut(&id) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    ids.remove(&id);
                }
            }
            if ids.is_empty() {
                t.remove(path);
            }
        }
    }

    /// Whether a directory of identity `id`, reached by the paths
    /// `names`, may be used: none of them is pinned, or each pinned one
    /// is pinned to `id`.
    pub(super) fn allow(names: &[PathBuf], id: WorkspaceId) -> bool {
        let t = table();
        names
            .iter()
            .all(|n| t.get(n).is_none_or(|ids| ids.contains_key(&id)))
    }
}

/// `path` with `.` and `..` resolved as text, absolute against nothing
/// (a relative path stays relative): the name a pin is looked up by.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Why opening the regular file `name` in `dir` failed, in words: a
/// symlink or special file there says what it is, anything else is I/O.
fn entry_error(dir: &DirFd, name: &OsStr, rel: &RelPath, e: std::io::Error) -> WorkspaceError {
    match dir.stat(name).map(|s| s.kind) {
        Ok(Kind::Symlink) => WorkspaceError::Symlink {
            path: rel.as_string(),
        },
        Ok(k) if k != Kind::File => WorkspaceError::WrongKind {
            path: rel.as_string(),
            kind: k.word(),
            wanted: "a regular file",
        },
        _ => WorkspaceError::io(rel, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view knows a file missing from the top directory once it looked,
    /// and forgets it as soon as one is made, renamed in or removed there:
    /// the next view reads it, at once. A plain handle always looks.
    #[test]
    fn a_view_knows_what_the_top_lacks_until_an_entry_is_made() {
        let (d, w) = ws();
        let root = d.path().join("ws");
        let v = w.as_of_now();
        assert!(v.as_of, "the top directory is watched");
        assert_eq!(v.read_text_strict("AGENTS.md", 1024).expect("read"), None);
        assert!(!v.is_dir_strict(".roo/rules"));
        assert!(
            v.open_file(&RelPath::parse(".mcp.json").expect("rel"))
                .expect("open")
                .is_none()
        );
        for name in ["AGENTS.md", ".roo", ".mcp.json"] {
            assert!(
                top_entries::known_absent(w.id(), OsStr::new(name)),
                "{name}"
            );
        }
        // Made after the look: the next view sees it.
        std::fs::write(root.join("AGENTS.md"), "rules").expect("write");
        let v = w.as_of_now();
        assert!(!top_entries::known_absent(w.id(), OsStr::new("AGENTS.md")));
        assert_eq!(
            v.read_text_strict("AGENTS.md", 1024)
                .expect("read")
                .as_deref(),
            Some("rules")
        );
        assert!(top_entries::known_absent(w.id(), OsStr::new(".roo")));
        std::fs::create_dir_all(root.join(".roo/rules")).expect("mkdir");
        assert!(w.as_of_now().is_dir_strict(".roo/rules"));
        // Renamed in from below.
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/.mcp.json"), "{}").expect("write");
        std::fs::rename(root.join("sub/.mcp.json"), root.join(".mcp.json")).expect("rename");
        let v = w.as_of_now();
        assert!(
            v.open_file(&RelPath::parse(".mcp.json").expect("rel"))
                .expect("open")
                .is_some()
        );
        // Removed, then known missing again.
        std::fs::remove_file(root.join("AGENTS.md")).expect("remove");
        let v = w.as_of_now();
        assert_eq!(v.read_text_strict("AGENTS.md", 1024).expect("read"), None);
        assert!(top_entries::known_absent(w.id(), OsStr::new("AGENTS.md")));
        // A plain handle looks: what is made is read at once.
        std::fs::write(root.join("AGENTS.md"), "again").expect("write");
        assert_eq!(
            w.read_text_strict("AGENTS.md", 1024)
                .expect("read")
                .as_deref(),
            Some("again")
        );
        assert_eq!(
            w.as_of_now()
                .read_text_strict("AGENTS.md", 1024)
                .expect("read")
                .as_deref(),
            Some("again")
        );
    }

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().expect("tempdir");
        let w = d.path().join("ws");
        std::fs::create_dir_all(w.join("src/sub")).expect("mkdir");
        std::fs::write(w.join("src/a.txt"), "a").expect("write");
        std::fs::write(d.path().join("outside.txt"), "secret").expect("write");
        std::os::unix::fs::symlink("src/a.txt", w.join("inlink")).expect("symlink");
        std::os::unix::fs::symlink("../outside.txt", w.join("outlink")).expect("symlink");
        std::os::unix::fs::symlink("/proc/self/environ", w.join("proclink")).expect("symlink");
        std::os::unix::fs::symlink("src", w.join("srclink")).expect("symlink");
        std::os::unix::fs::symlink("loop2", w.join("loop1")).expect("symlink");
        std::os::unix::fs::symlink("loop1", w.join("loop2")).expect("symlink");
        let ws = Workspace::open(&w).expect("open");
        (d, ws)
    }

    #[test]
    fn normalises_model_paths_and_refuses_escapes() {
        let (_d, ws) = ws();
        let host = ws.host_path().display().to_string();
        for (raw, want) in [
            ("src/a.txt", "src/a.txt"),
            ("./src//a.txt", "src/a.txt"),
            ("src/sub/../a.txt", "src/a.txt"),
            ("/workspace/src/a.txt", "src/a.txt"),
            ("/workspace", "."),
            (&format!("{host}/src/a.txt"), "src/a.txt"),
            (".", "."),
        ] {
            assert_eq!(ws.normalize(raw).expect(raw).as_string(), want, "{raw}");
        }
        for raw in [
            "..",
            "../x",
            "src/../../x",
            "/etc/passwd",
            "/dev/stdin",
            "/workspacex/a",
        ] {
            assert!(
                matches!(ws.normalize(raw), Err(WorkspaceError::Outside { .. })),
                "{raw}"
            );
        }
    }

    #[test]
    fn resolves_inside_and_refuses_links_out() {
        let (_d, ws) = ws();
        let r = |s: &str| ws.resolve(&RelPath::parse(s).expect("parse"));
        assert_eq!(r("inlink").expect("in").as_string(), "src/a.txt");
        assert_eq!(
            r("srclink/sub/new.txt").expect("in").as_string(),
            "src/sub/new.txt"
        );
        assert!(matches!(r("outlink"), Err(WorkspaceError::Outside { .. })));
        assert!(matches!(r("proclink"), Err(WorkspaceError::Outside { .. })));
        assert!(matches!(r("loop1"), Err(WorkspaceError::Loop { .. })));
        assert_eq!(
            ws.read_text("inlink", 10).expect("read").as_deref(),
            Some("a")
        );
        assert!(ws.read_text("outlink", 10).is_err());
        assert!(ws.read_text("proclink", 1 << 20).is_err());
        assert!(
            ws.read_text_strict("inlink", 10).is_err(),
            "strict follows nothing"
        );
        assert!(ws.read_text("src/missing", 10).expect("ok").is_none());
        assert!(matches!(
            ws.read_text("src/a.txt", 0),
            Err(WorkspaceError::TooLarge { .. })
        ));
    }

    /// A read, an open or a listing tries the path as named first,
    /// following nothing, and only then the walk that follows symlinks: whatever the
    /// path holds, the answer is the walk's — through a link to a file or
    /// a folder, a link to nowhere, a link out or round in a loop, past a
    /// missing folder or a file where a folder should be.
    #[test]
    fn reads_and_listings_answer_as_the_walk_does() {
        let (d, ws) = ws();
        let w = d.path().join("ws");
        std::os::unix::fs::symlink("src/nothing", w.join("dangling")).expect("symlink");
        std::os::unix::fs::symlink("..", w.join("src/up")).expect("symlink");
        let read = |p: &str| ws.read_text(p, 10);
        assert_eq!(
            read("srclink/a.txt").expect("via folder link").as_deref(),
            Some("a")
        );
        assert_eq!(
            read("src/up/src/a.txt").expect("up and back").as_deref(),
            Some("a")
        );
        assert_eq!(read("src/a.txt").expect("plain").as_deref(), Some("a"));
        assert!(read("dangling").expect("to nowhere").is_none());
        assert!(read("missing/deeper/x").expect("missing folder").is_none());
        assert!(read("src/a.txt/x").is_err(), "a file is no folder");
        assert!(matches!(read("loop1/x"), Err(WorkspaceError::Loop { .. })));
        assert!(matches!(
            read("outlink"),
            Err(WorkspaceError::Outside { .. })
        ));
        assert!(matches!(
            ws.read_text("srclink/a.txt", 0),
            Err(WorkspaceError::TooLarge { .. })
        ));
        let names = |p: &str| -> Vec<String> {
            ws.list_files(p)
                .expect(p)
                .iter()
                .map(RelPath::as_string)
                .collect()
        };
        assert_eq!(names("src"), ["src/a.txt"]);
        assert_eq!(names("srclink"), ["srclink/a.txt"]);
        assert!(names("missing").is_empty() && names("dangling").is_empty());
        let open = |p: &str| {
            ws.open_file(&RelPath::parse(p).expect("parse"))
                .map(|f| f.map(|f| f.metadata().expect("metadata").len()))
        };
        assert_eq!(open("srclink/a.txt").expect("via folder link"), Some(1));
        assert_eq!(open("inlink").expect("via file link"), Some(1));
        assert_eq!(open("src/up/src/a.txt").expect("up and back"), Some(1));
        assert_eq!(open("dangling").expect("to nowhere"), None);
        assert_eq!(open("missing/x").expect("missing folder"), None);
        assert!(open("src/a.txt/x").is_err(), "a file is no folder");
        assert!(open("src").is_err(), "a folder is no file");
        assert!(matches!(
            open("outlink"),
            Err(WorkspaceError::Outside { .. })
        ));
        assert!(matches!(open("loop1"), Err(WorkspaceError::Loop { .. })));
        assert!(ws.list_files("loop1").is_err());
        std::os::unix::fs::symlink("..", w.join("parent")).expect("symlink");
        assert!(matches!(
            ws.list_files("parent"),
            Err(WorkspaceError::Outside { .. })
        ));
    }

    #[test]
    fn opens_beneath_a_root_only_without_links_and_pins_what_it_opened() {
        let d = tempfile::tempdir().expect("tempdir");
        let top = d.path().canonicalize().expect("canonical");
        let (bob, ada) = (top.join("bob"), top.join("ada"));
        std::fs::create_dir_all(bob.join("ws/sub")).expect("mkdir");
        std::fs::create_dir_all(&ada).expect("mkdir");
        let ws = Workspace::open_beneath(&bob, &bob.join("ws/sub")).expect("beneath");
        assert_eq!(ws.host_path(), bob.join("ws/sub"));
        assert_eq!(
            ws.id(),
            Workspace::open(&bob.join("ws/sub")).expect("open").id()
        );
        for outside in [ada.clone(), bob.join("ws/../../ada"), bob.join("missing")] {
            assert!(
                matches!(
                    Workspace::open_beneath(&bob, &outside),
                    Err(WorkspaceError::NotBeneath { .. })
                ),
                "{}",
                outside.display()
            );
        }

        // Pinned: the path must keep leading to the directory pinned.
        let pin = ws.pin();
        assert!(Workspace::open(&bob.join("ws/sub")).is_ok());
        std::fs::rename(bob.join("ws"), bob.join("ws.old")).expect("rename");
        std::fs::create_dir_all(bob.join("ws")).expect("mkdir");
        std::os::unix::fs::symlink(&ada, bob.join("ws/sub")).expect("symlink");
        assert!(matches!(
            Workspace::open(&bob.join("ws/sub")),
            Err(WorkspaceError::Moved { .. })
        ));
        assert!(matches!(
            Workspace::open_beneath(&bob, &bob.join("ws/sub")),
            Err(WorkspaceError::NotBeneath { .. })
        ));
        // The handle still holds the directory it opened.
        ws.append_strict("log", b"x").expect("by handle");
        assert!(bob.join("ws.old/sub/log").is_file());
        assert!(!ada.join("log").exists());
        drop(pin);
        assert_eq!(
            Workspace::open(&bob.join("ws/sub"))
                .expect("unpinned")
                .host_path(),
            ada
        );
    }

    #[test]
    fn appends_and_creates_without_following() {
        let (d, ws) = ws();
        ws.append_strict("src/log", b"one\n").expect("append");
        ws.append_strict("src/log", b"two\n").expect("append");
        assert_eq!(
            ws.read_text("src/log", 100).expect("read").as_deref(),
            Some("one\ntwo\n")
        );
        assert!(ws.append_strict("outlink", b"x").is_err());
        assert!(ws.append_strict("srclink/log", b"x").is_err());
        // A hard link to a file outside (found by the capability
        // properties: the append wrote through it).
        std::fs::hard_link(
            d.path().join("outside.txt"),
            ws.host_path().join("hardlink"),
        )
        .expect("hard link");
        assert!(ws.append_strict("hardlink", b"x").is_err());
        let hardlink = RelPath::parse("hardlink").expect("p");
        assert!(ws.set_mode(&hardlink, 0o777).is_err());
        assert_eq!(
            std::fs::read_to_string(d.path().join("outside.txt")).expect("read"),
            "secret"
        );
        let p = ws
            .ensure_dir(&RelPath::parse("src/new/deep").expect("p"))
            .expect("dir");
        assert!(p.is_dir());
        assert!(
            ws.ensure_dir(&RelPath::parse("srclink/x").expect("p"))
                .is_err()
        );
        assert!(
            ws.ensure_dir(&RelPath::parse("src/a.txt/x").expect("p"))
                .is_err()
        );
    }
}
