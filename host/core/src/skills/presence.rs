//! Whether a workspace's skill folders could have appeared or gone away
//! since it was last looked at, without looking for each of them. Where a
//! folder of skills could be made (`.roo/`, `.agents/`, `.claude/` in the
//! workspace and each directory above it up to its repository's root, a
//! `.git` that moves that root, the home's, the config directory) does not
//! exist yet, so the library's watcher cannot watch it, and the directories
//! that would hold it cannot be watched through `notify` either: its
//! inotify mask includes a file opened, so every file a tool opens in the
//! workspace would wake it. So one inotify instance of the library's own
//! watches those directories, without recursion, for entries created,
//! removed or renamed only, and a use reads what it queued: one
//! non-blocking read instead of eight lookups a turn. The read is exact,
//! not eventual: an entry made before it is in what it reads.
//!
//! Where inotify cannot watch (another system, its limits reached, a
//! directory missing), [`PresenceWatch::watch`] gives no handle and the
//! caller looks for each folder, as it would without this.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What one workspace's watch saw: set when an entry it cares about
/// appeared, went away or was renamed in one of its directories (or when
/// events were lost).
#[derive(Debug, Default)]
pub(super) struct Handle {
    changed: AtomicBool,
    /// The entry names that matter in its directories.
    names: HashSet<OsString>,
    #[cfg(target_os = "linux")]
    wds: Vec<inotify::WatchDescriptor>,
}

impl Handle {
    fn mark(&self) {
        self.changed.store(true, Ordering::SeqCst);
    }

    fn cares(&self, name: Option<&std::ffi::OsStr>) -> bool {
        // An event without a name is about the directory itself (removed,
        // moved, unwatched).
        name.is_none_or(|n| self.names.contains(n))
    }
}

/// The directories one workspace's skill folders could appear in, and the
/// names that matter there (see [`super::Sources::presence_dirs`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PresenceDirs {
    /// Directories watched, without recursion.
    pub dirs: Vec<PathBuf>,
    /// Entry names whose coming or going in them matters.
    pub names: HashSet<OsString>,
}

/// The library's one inotify instance for presence, shared by every
/// workspace it serves.
pub(super) struct PresenceWatch {
    #[cfg(target_os = "linux")]
    inner: std::sync::Mutex<linux::Inner>,
}

impl PresenceWatch {
    /// A watch; `enabled: false` gives one that never watches (every use
    /// then looks for each folder).
    pub(super) fn new(enabled: bool) -> Self {
        #[cfg(not(target_os = "linux"))]
        let _ = enabled;
        Self {
            #[cfg(target_os = "linux")]
            inner: std::sync::Mutex::new(linux::Inner::new(enabled)),
        }
    }

    /// Start watching `dirs` for one workspace. `None` when they cannot
    /// all be watched: then nothing may be concluded from silence.
    #[cfg_attr(not(target_os = "linux"), allow(clippy::unused_self))]
    pub(super) fn watch(&self, dirs: PresenceDirs) -> Option<Arc<Handle>> {
        #[cfg(target_os = "linux")]
        {
            self.lock().watch(dirs)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = dirs;
            None
        }
    }

    /// Whether `handle`'s directories changed since it was made or last
    /// asked (and forget that they did). Reads every event queued so far.
    #[cfg_attr(not(target_os = "linux"), allow(clippy::unused_self))]
    pub(super) fn changed(&self, handle: &Handle) -> bool {
        #[cfg(target_os = "linux")]
        self.lock().drain();
        handle.changed.swap(false, Ordering::SeqCst)
    }

    #[cfg(target_os = "linux")]
    fn lock(&self) -> std::sync::MutexGuard<'_, linux::Inner> {
        // Its state stays consistent whatever panicked: at worst a
        // workspace is looked at again.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::io::ErrorKind;
    use std::sync::{Arc, Weak};

    use inotify::{WatchDescriptor, WatchMask};
    use roost_sandbox::watch::Queue;

    use super::{Handle, PresenceDirs};

    /// What is watched: entries made, removed or renamed in a directory,
    /// and the directory itself removed or moved. Not a file opened or
    /// written: a workspace's own files never wake it.
    fn mask() -> WatchMask {
        WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
    }

    pub(super) struct Inner {
        /// `None` where it could not start (or is disabled).
        inotify: Option<Queue>,
        /// Each watched directory's handles.
        by_wd: HashMap<WatchDescriptor, Vec<Weak<Handle>>>,
    }

    impl Inner {
        pub(super) fn new(enabled: bool) -> Self {
            let inotify = if enabled {
                Queue::init()
                    .map_err(|e| {
                        tracing::debug!("skill folders' presence is looked up every turn: {e}");
                    })
                    .ok()
            } else {
                None
            };
            Self {
                inotify,
                by_wd: HashMap::new(),
            }
        }

        pub(super) fn watch(&mut self, dirs: PresenceDirs) -> Option<Arc<Handle>> {
            self.prune();
            let inotify = self.inotify.as_mut()?;
            let mut names = dirs.names;
            let mut wds = Vec::with_capacity(dirs.dirs.len());
            for dir in &dirs.dirs {
                let mut at = dir.as_path();
                loop {
                    match inotify.watches().add(at, mask()) {
                        Ok(wd) => {
                            wds.push(wd);
                            break;
                        }
                        // Not there (yet): watched where it would be made.
                        Err(e)
                            if matches!(
                                e.kind(),
                                ErrorKind::NotFound | ErrorKind::NotADirectory
                            ) =>
                        {
                            let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                                return None;
                            };
                            names.insert(name.to_os_string());
                            at = parent;
                        }
                        // Its limits, a directory it may not read: nothing
                        // is watched from now on (every use looks, as
                        // without it), rather than trying again each use.
                        Err(e) => {
                            tracing::warn!(
                                dir = %at.display(),
                                "skill folders' presence is looked up every turn: {e}"
                            );
                            self.inotify = None;
                            self.by_wd.clear();
                            return None;
                        }
                    }
                }
            }
            let handle = Arc::new(Handle {
                names,
                wds,
                ..Handle::default()
            });
            for wd in &handle.wds {
                self.by_wd
                    .entry(wd.clone())
                    .or_default()
                    .push(Arc::downgrade(&handle));
            }
            Some(handle)
        }

        /// Read every queued event, marking the handles it concerns.
        pub(super) fn drain(&mut self) {
            let Self { inotify, by_wd } = self;
            let Some(fd) = inotify.as_mut() else {
                return;
            };
            let drained = fd.drain(|event| {
                if let Some(handles) = by_wd.get(&event.wd) {
                    for h in handles.iter().filter_map(Weak::upgrade) {
                        if h.cares(event.name) {
                            h.mark();
                        }
                    }
                }
            });
            match drained {
                Ok(false) => {}
                Ok(true) => mark_all(by_wd),
                Err(e) => {
                    // Nothing can be concluded any more: every workspace
                    // looks again, every time.
                    tracing::warn!("skill folders' presence: {e}");
                    mark_all(by_wd);
                    *inotify = None;
                }
            }
        }

        /// Forget handles no workspace holds, and stop watching the
        /// directories only they watched.
        fn prune(&mut self) {
            let mut unused = Vec::new();
            for (wd, handles) in &mut self.by_wd {
                handles.retain(|h| h.strong_count() > 0);
                if handles.is_empty() {
                    unused.push(wd.clone());
                }
            }
            for wd in unused {
                self.by_wd.remove(&wd);
                if let Some(inotify) = self.inotify.as_mut() {
                    // Gone already when its directory was removed.
                    let _ = inotify.watches().remove(wd);
                }
            }
        }
    }

    /// Events were lost: anything may have changed.
    fn mark_all(by_wd: &HashMap<WatchDescriptor, Vec<Weak<Handle>>>) {
        for handles in by_wd.values() {
            for h in handles.iter().filter_map(Weak::upgrade) {
                h.mark();
            }
        }
    }
}
