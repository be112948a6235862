//! Which names a workspace's top directory lacks, known without looking
//! them up again. A turn asks for files that are mostly missing
//! (`AGENTS.md`, `.roo/rules`, `.roo/mcp.json`, `.mcp.json`,
//! `.orchestration`, …), each a lookup of its own, from four modules. A
//! [`Workspace::as_of_now`](super::Workspace::as_of_now) view reads what
//! one inotify instance queued for that directory (entries made, removed or
//! renamed there, the directory itself removed or moved; not a file opened
//! or written), forgets every name an event named, and then answers for
//! the names found missing since, with no lookup. What it answers is
//! exact as of the moment the view was made: an entry made before that is
//! in what it read.
//!
//! The watch is made on the directory the workspace holds open (through
//! `/proc/self/fd`), and checked to be that very directory before and
//! after. Where inotify cannot watch, a view looks everything up, as a
//! plain handle does.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::ffi::{OsStr, OsString};
use std::sync::{LazyLock, Mutex, MutexGuard};

use super::dirfd::DirFd;
use super::workspace::WorkspaceId;

/// Most workspaces remembered (all are forgotten past it).
const MAX_WORKSPACES: usize = 1024;
/// Most missing names remembered for one workspace.
const MAX_NAMES: usize = 64;

/// One workspace's top directory: its watch and the names found missing
/// since it was made.
struct Entry {
    #[cfg(target_os = "linux")]
    wd: inotify::WatchDescriptor,
    absent: HashSet<OsString>,
}

struct Top {
    #[cfg(target_os = "linux")]
    inotify: Option<crate::watch::Queue>,
    by_ws: HashMap<WorkspaceId, Entry>,
}

static TOP: LazyLock<Mutex<Top>> = LazyLock::new(|| {
    Mutex::new(Top {
        #[cfg(target_os = "linux")]
        inotify: crate::watch::Queue::init()
            .map_err(|e| {
                tracing::debug!("a workspace's missing files are looked up each time: {e}")
            })
            .ok(),
        by_ws: HashMap::new(),
    })
});

fn top() -> MutexGuard<'static, Top> {
    // At worst a name is looked up again.
    TOP.lock().unwrap_or_else(|p| p.into_inner())
}

/// Bring what is known of `id`'s top directory (held as `root`) up to
/// now, watching it from now on; whether it is watched (else nothing is
/// known of it).
pub(super) fn refresh(root: &DirFd, id: WorkspaceId) -> bool {
    let mut t = top();
    t.drain();
    if t.by_ws.contains_key(&id) {
        return true;
    }
    t.watch(root, id)
}

/// Whether `name` is known to be missing from `id`'s top directory (as of
/// the last [`refresh`] of any view of it).
pub(super) fn known_absent(id: WorkspaceId, name: &OsStr) -> bool {
    top()
        .by_ws
        .get(&id)
        .is_some_and(|e| e.absent.contains(name))
}

/// `name` was just found missing from `id`'s top directory, which a view
/// watched before it looked.
pub(super) fn found_absent(id: WorkspaceId, name: &OsStr) {
    if let Some(e) = top().by_ws.get_mut(&id)
        && e.absent.len() < MAX_NAMES
    {
        e.absent.insert(name.to_os_string());
    }
}

impl Top {
    #[cfg(target_os = "linux")]
    fn watch(&mut self, root: &DirFd, id: WorkspaceId) -> bool {
        use inotify::WatchMask;
        use std::os::fd::{AsFd, AsRawFd};
        if self.by_ws.len() >= MAX_WORKSPACES {
            self.forget_all();
        }
        let Some(inotify) = self.inotify.as_mut() else {
            return false;
        };
        let path = format!("/proc/self/fd/{}", root.as_fd().as_raw_fd());
        // The path must lead to the directory held, before and after the
        // watch is made on it.
        let same = || {
            std::fs::metadata(&path).is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.dev() == id.dev && m.ino() == id.ino
            })
        };
        if !same() {
            return false;
        }
        let mask = WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR;
        let wd = match inotify.watches().add(&path, mask) {
            Ok(wd) => wd,
            Err(e) => {
                tracing::debug!("a workspace's missing files are looked up each time: {e}");
                return false;
            }
        };
        if !same() {
            let _ = inotify.watches().remove(wd);
            return false;
        }
        self.by_ws.insert(
            id,
            Entry {
                wd,
                absent: HashSet::new(),
            },
        );
        true
    }

    #[cfg(not(target_os = "linux"))]
    fn watch(&mut self, _root: &DirFd, _id: WorkspaceId) -> bool {
        false
    }

    /// Read every queued event: a name an event names is no longer known
    /// missing; a directory removed or moved, or events lost, forget all
    /// that was known of it.
    #[cfg(target_os = "linux")]
    fn drain(&mut self) {
        use inotify::EventMask;
        let Self { inotify, by_ws } = self;
        let Some(fd) = inotify.as_mut() else {
            return;
        };
        let mut gone = Vec::new();
        let drained = fd.drain(|event| {
            let Some(id) = by_ws
                .iter()
                .find(|(_, e)| e.wd == event.wd)
                .map(|(id, _)| *id)
            else {
                return;
            };
            match event.name {
                Some(name) if !event.mask.contains(EventMask::IGNORED) => {
                    if let Some(e) = by_ws.get_mut(&id) {
                        e.absent.remove(name);
                    }
                }
                // The directory itself: watched anew at the next view.
                _ => gone.push(id),
            }
        });
        let lost = match drained {
            Ok(lost) => lost,
            Err(e) => {
                tracing::warn!("a workspace's missing files are looked up each time: {e}");
                *inotify = None;
                true
            }
        };
        for id in gone {
            if let Some(e) = self.by_ws.remove(&id)
                && let Some(fd) = self.inotify.as_mut()
            {
                let _ = fd.watches().remove(e.wd);
            }
        }
        if lost {
            self.forget_all();
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn drain(&mut self) {}

    fn forget_all(&mut self) {
        #[cfg(target_os = "linux")]
        for (_, e) in self.by_ws.drain() {
            if let Some(fd) = self.inotify.as_mut() {
                let _ = fd.watches().remove(e.wd);
            }
        }
        self.by_ws.clear();
    }
}
