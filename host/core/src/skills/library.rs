//! The skills of every workspace a long-running process serves, kept up to
//! date: a workspace's [`Catalog`] is scanned on first use, its folders of
//! skills are watched (`notify`; where such a folder could appear, only
//! entries made or removed are watched, read at each use, so the files
//! tools open in the workspace never wake a watcher: see `presence`), and a
//! change marks it stale so the next turn sees a fresh scan — a skill
//! added, edited or removed. One watcher serves every workspace of the
//! library. A broken edit keeps the last good version of that skill and
//! reports the error
//! ([`Catalog::keeping_last_good`]). Skill components are loaded (compiled
//! or taken from the cache) on first use and shared.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use notify::{EventKind, RecursiveMode, Watcher};

use super::catalog::{COMPONENT_FILE, Catalog, Skill};
use super::presence::{self, PresenceWatch};
use super::sources::Sources;
use roost_sandbox::capability::Workspace;
use roost_sandbox::capability::dirfd::DirFd;
use roost_sandbox::plugins::{LoadedSkill, PluginEngine};

/// Largest `skill.wasm` loaded.
pub const MAX_COMPONENT: u64 = 64 << 20;
/// Most workspaces whose catalogs one process keeps.
const MAX_WORKSPACES: usize = 256;
/// Most skill components kept loaded.
const MAX_COMPONENTS: usize = 64;

/// Why a skill's component cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// It does not ship one.
    #[error("skill `{0}` has no component (skill.wasm), so it has no entries to run")]
    NoComponent(String),
    /// Its file cannot be read.
    #[error(
        "skill `{skill}`: cannot read skill.wasm (it must be a regular file, not a link, of at most 64 MiB): {detail}"
    )]
    Read {
        /// The skill.
        skill: String,
        /// What failed.
        detail: String,
    },
    /// It is not a usable component of world `skill`.
    #[error("skill `{skill}`: skill.wasm cannot be loaded: {detail}")]
    Load {
        /// The skill.
        skill: String,
        /// What failed.
        detail: String,
    },
    /// Its metadata names another skill.
    #[error("skill `{skill}`: skill.wasm says it is skill `{declared}`")]
    Mismatch {
        /// The skill.
        skill: String,
        /// The name its metadata gives.
        declared: String,
    },
}

/// One workspace's catalog and whether it changed on disk since.
#[derive(Default)]
struct Watched {
    /// Set by the watcher when one of its folders changed.
    stale: Arc<AtomicBool>,
    /// The catalog, and which of its watch points existed when it was
    /// scanned.
    catalog: Mutex<Option<(Arc<Catalog>, Vec<bool>)>>,
    /// The watch on where those points would appear, made before their
    /// presence was last looked at (`None`: look every use).
    presence: Mutex<Option<Arc<presence::Handle>>>,
}

/// Folders whose changes mark a workspace's catalog stale.
type Targets = Arc<Mutex<Vec<(PathBuf, Arc<AtomicBool>)>>>;

/// The one watcher of a library (one inotify instance and thread for
/// every workspace it serves), and what it watches.
struct Watching {
    /// `None` where it could not start: then every use scans again.
    watcher: Option<notify::RecommendedWatcher>,
    /// Paths it watches already.
    paths: HashSet<PathBuf>,
    targets: Targets,
}

impl Watching {
    fn start() -> Self {
        let targets: Targets = Arc::default();
        let seen = Arc::clone(&targets);
        let made = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let targets = lock(&seen);
            match res {
                Ok(e) if matches!(e.kind, EventKind::Access(_)) => {}
                Ok(e) => {
                    for (dir, flag) in targets.iter() {
                        if e.paths.iter().any(|p| p.starts_with(dir)) {
                            flag.store(true, Ordering::SeqCst);
                        }
                    }
                }
                // Events were lost: anything may have changed.
                Err(_) => {
                    for (_, flag) in targets.iter() {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
            }
        });
        let watcher = match made {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("cannot watch skill folders (they are scanned every turn): {e}");
                None
            }
        };
        Self {
            watcher,
            paths: HashSet::new(),
            targets,
        }
    }

    /// Watch `dir` for `stale` (recursively or not); false when it cannot.
    fn watch(&mut self, dir: &Path, mode: RecursiveMode, stale: &Arc<AtomicBool>) -> bool {
        let Some(w) = &mut self.watcher else {
            return false;
        };
        if !self.paths.contains(dir) {
            if let Err(e) = w.watch(dir, mode) {
                tracing::debug!(dir = %dir.display(), "not watched: {e}");
                return false;
            }
            self.paths.insert(dir.to_path_buf());
        }
        lock(&self.targets).push((dir.to_path_buf(), Arc::clone(stale)));
        true
    }

    /// Forget what `stale`'s workspace watched (before it is watched anew).
    fn forget(&mut self, stale: &Arc<AtomicBool>) {
        lock(&self.targets).retain(|(_, f)| !Arc::ptr_eq(f, stale));
    }
}

/// The skills of every workspace the process serves, and their loaded
/// components. One per engine.
pub struct SkillLibrary {
    sources: Sources,
    watched: Mutex<HashMap<PathBuf, Arc<Watched>>>,
    watching: Mutex<Option<Watching>>,
    presence: PresenceWatch,
    /// How many times a workspace's watch points were looked for (each
    /// use without a watch on them, or after one saw a change).
    looked: AtomicU64,
    components: Mutex<HashMap<FileKey, Arc<LoadedSkill>>>,
}

/// A skill component's file as it was loaded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileKey {
    dir: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    ctime: (i64, i64),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Maps of finished values stay consistent whatever panicked.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SkillLibrary {
    /// A library finding global skills where `sources` say.
    pub fn new(sources: Sources) -> Self {
        Self::with_presence_watch(sources, true)
    }

    /// [`Self::new`], with the watch on where skill folders could appear
    /// on or off (off: they are looked for at every use).
    pub fn with_presence_watch(sources: Sources, watch: bool) -> Self {
        Self {
            sources,
            watched: Mutex::default(),
            watching: Mutex::default(),
            presence: PresenceWatch::new(watch),
            looked: AtomicU64::new(0),
            components: Mutex::default(),
        }
    }

    /// How many times the folders skills could be in were looked for: once
    /// per workspace, then only after something appeared, went away or was
    /// renamed where they would be (where that can be watched).
    pub fn presence_lookups(&self) -> u64 {
        self.looked.load(Ordering::SeqCst)
    }

    /// Where global skills are looked for.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The catalog of `workspace` as it stands now: scanned on first use,
    /// and again whenever one of its folders changed since.
    pub fn catalog(&self, workspace: &Path) -> Arc<Catalog> {
        let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        self.catalog_at(ws)
    }

    /// [`Self::catalog`] of a workspace the caller holds open (a task's):
    /// its path is canonical already, no lookup of it per turn.
    pub fn catalog_of(&self, workspace: &Workspace) -> Arc<Catalog> {
        self.catalog_at(workspace.host_path().to_path_buf())
    }

    fn catalog_at(&self, ws: PathBuf) -> Arc<Catalog> {
        let watched = {
            let mut map = lock(&self.watched);
            if map.len() >= MAX_WORKSPACES && !map.contains_key(&ws) {
                map.clear();
                // A fresh watcher, watching only what is asked again.
                *lock(&self.watching) = None;
            }
            Arc::clone(map.entry(ws.clone()).or_default())
        };
        let mut current = lock(&watched.catalog);
        let stale = watched.stale.swap(false, Ordering::SeqCst);
        let mut watch = lock(&watched.presence);
        let unmoved = watch.as_ref().is_some_and(|h| !self.presence.changed(h));
        let presence = match &*current {
            Some((c, seen)) if unmoved => {
                if !stale {
                    return Arc::clone(c);
                }
                seen.clone()
            }
            _ => {
                // Watched before looking: whatever appears after the look
                // is in what the watch reads next.
                *watch = self.presence.watch(self.sources.presence_dirs(&ws));
                self.looked.fetch_add(1, Ordering::SeqCst);
                self.sources.presence(&ws)
            }
        };
        drop(watch);
        if let Some((c, seen)) = &*current
            && !stale
            && *seen == presence
        {
            return Arc::clone(c);
        }
        let scanned = Catalog::scan(&self.sources, &ws);
        let catalog = Arc::new(match &*current {
            Some((last, _)) => scanned.keeping_last_good(last),
            None => scanned,
        });
        // The watch follows the folders as they are now.
        if !self.watch(&ws, &catalog, &watched.stale) {
            watched.stale.store(true, Ordering::SeqCst);
        }
        *current = Some((Arc::clone(&catalog), presence));
        catalog
    }

    /// Whether `workspace`'s catalog changed on disk since it was last
    /// taken (or cannot be watched): a front-end may show it; tests wait
    /// on it.
    pub fn is_stale(&self, workspace: &Path) -> bool {
        let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        let Some(w) = lock(&self.watched).get(&ws).cloned() else {
            return true;
        };
        if w.stale.load(Ordering::SeqCst) {
            return true;
        }
        lock(&w.catalog)
            .as_ref()
            .is_none_or(|(_, seen)| *seen != self.sources.presence(&ws))
    }

    /// Watch `ws`'s folders for changes; false when they cannot be
    /// watched (the catalog is then scanned on every use).
    fn watch(&self, ws: &Path, catalog: &Catalog, stale: &Arc<AtomicBool>) -> bool {
        let mut guard = lock(&self.watching);
        let watching = guard.get_or_insert_with(Watching::start);
        if watching.watcher.is_none() {
            return false;
        }
        watching.forget(stale);
        for point in self.sources.watch_points(ws) {
            if point.is_dir() {
                watching.watch(&point, RecursiveMode::NonRecursive, stale);
            }
        }
        let mut ok = true;
        let mut roots = Vec::new();
        for root in self.sources.roots(ws) {
            if root.dir.is_dir() {
                ok &= watching.watch(&root.dir, RecursiveMode::Recursive, stale);
                roots.extend(std::fs::canonicalize(&root.dir));
            }
        }
        // Linked skill folders live elsewhere: watch them where they are.
        for s in catalog.skills() {
            if !roots.iter().any(|r| s.dir.starts_with(r)) {
                ok &= watching.watch(&s.dir, RecursiveMode::Recursive, stale);
            }
        }
        ok
    }

    /// The component of `skill`, loaded on first use (compiling it takes a
    /// while once; the cache keeps it) and checked to be that skill's.
    pub async fn component(
        &self,
        engine: &Arc<PluginEngine>,
        skill: &Skill,
    ) -> Result<Arc<LoadedSkill>, SkillError> {
        let name = skill.name().to_owned();
        if !skill.component {
            return Err(SkillError::NoComponent(name));
        }
        let read_err = |detail: String| SkillError::Read {
            skill: name.clone(),
            detail,
        };
        let dir = DirFd::open_resolved(&skill.dir).map_err(|e| read_err(e.to_string()))?;
        let file = OsStr::new(COMPONENT_FILE);
        // The file as it is now: any change to it (its ctime) loads it anew.
        let stat = dir.stat(file).map_err(|e| read_err(e.to_string()))?;
        let key = FileKey {
            dir: skill.dir.clone(),
            dev: stat.dev,
            ino: stat.ino,
            size: stat.size,
            ctime: stat.ctime,
        };
        if let Some(c) = lock(&self.components).get(&key) {
            return Ok(Arc::clone(c));
        }
        let bytes = dir
            .read(file, MAX_COMPONENT)
            .map_err(|e| read_err(e.to_string()))?;
        let engine = Arc::clone(engine);
        let load_name = name.clone();
        let loaded =
            tokio::task::spawn_blocking(move || engine.load_skill_bytes(&load_name, &bytes))
                .await
                .map_err(|e| SkillError::Load {
                    skill: name.clone(),
                    detail: format!("loading stopped: {e}"),
                })?
                .map_err(|e| SkillError::Load {
                    skill: name.clone(),
                    detail: e.to_string(),
                })?;
        if loaded.declared_name() != name {
            return Err(SkillError::Mismatch {
                skill: name,
                declared: loaded.declared_name().to_owned(),
            });
        }
        let mut map = lock(&self.components);
        if map.len() >= MAX_COMPONENTS {
            map.clear();
        }
        map.insert(key, Arc::clone(&loaded));
        Ok(loaded)
    }
}

impl std::fmt::Debug for SkillLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillLibrary")
            .field("sources", &self.sources)
            .finish()
    }
}
