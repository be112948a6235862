//! Which process runs which task. A task is claimed while a process runs
//! it; a claim whose process died must not keep the task from resuming,
//! and a claim held by a live process must. Each [`Store`] holds one
//! exclusive lock file for itself (`<store dir>/live/<owner>.lock`, released
//! by the OS when the process dies) and records `task → owner` in the
//! `claims` table, so a process running ten thousand tasks holds one file
//! descriptor for all of them, not one per task.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::db::{Conn, DB_NOW, Dialect, Row, params};
use super::{Step, Store, StoreError, StoreLocation};

/// This store's owner identity: its token and the lock that proves it is
/// alive.
#[derive(Debug)]
pub(super) struct Owner {
    pub(super) token: String,
    /// On SQLite, the lock file; on PostgreSQL the host's lease, renewed
    /// in `hosts` ([`super::hosts`]).
    _lock: Option<File>,
}

/// The claims of one store handle (shared by its clones).
#[derive(Debug, Default)]
pub(super) struct Claims {
    pub(super) owner: OnceLock<Owner>,
    /// Tasks this process runs now (a second claim here is refused too).
    held: Mutex<HashSet<String>>,
    /// This host's lease (a shared store).
    pub(super) host: HostState,
}

/// This process runs a task; dropping it (or dying) releases the claim.
pub struct TaskClaim {
    store: Store,
    task: String,
    /// Released already ([`TaskClaim::release`]): dropping it only
    /// forgets it here.
    released: bool,
}

/// Release `owner`'s claim on task `?1` (`?2`: the owner's token).
pub(super) const RELEASE: &str = "DELETE FROM claims WHERE task_id = ?1 AND owner = ?2";

impl TaskClaim {
    /// Release the claim as the task's run ends, in the store's next
    /// shared commit (with other tasks' steps) rather than a transaction
    /// of its own: on PostgreSQL, no round trip of its own. Returns once
    /// it is released; if that commit fails it is released on its own, as
    /// a dropped claim is. Run to the end even if the caller stops waiting,
    /// so no release lands after the task is claimed here again.
    pub async fn release(self) {
        let released = tokio::spawn(async move {
            let mut claim = self;
            let Some(owner) = claim.store.claims.owner.get() else {
                return;
            };
            let step = match Step::new().prepare(&claim.task) {
                Ok(step) => step.releasing(&owner.token),
                Err(e) => {
                    tracing::warn!(task = %claim.task, "releasing the claim: {e}");
                    return;
                }
            };
            match claim.store.commit(&claim.task, step).await {
                Ok(_) => claim.released = true,
                Err(e) => {
                    tracing::warn!(task = %claim.task, "releasing the claim with other steps: {e}")
                }
            }
        });
        if let Err(e) = released.await {
            tracing::warn!("releasing a claim: {e}");
        }
    }
}

impl std::fmt::Debug for TaskClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskClaim")
            .field("task", &self.task)
            .finish()
    }
}

impl Drop for TaskClaim {
    fn drop(&mut self) {
        let claims = &self.store.claims;
        if !self.released
            && let Some(owner) = claims.owner.get()
            && let Err(e) = self
                .store
                .db
                .run(|c| c.exec(RELEASE, params![&self.task, &owner.token]))
        {
            tracing::warn!(task = %self.task, "releasing the claim: {e}");
        }
        claims
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.task);
    }
}

fn live_dir(store: &Path) -> PathBuf {
    store.parent().unwrap_or(Path::new(".")).join("live")
}

/// Whether the owner `token` is a live process (its lock is held).
fn alive(store: &Path, token: &str) -> bool {
    // Tokens are UUIDs; anything else is kept to safe characters.
    let safe: String = token
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let Ok(file) = File::open(live_dir(store).join(format!("{safe}.lock"))) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    }
}

/// Take this store's owner lock: made under a temporary name, locked, then
/// renamed into place, so a sweeper never removes a lock before it is held.
/// Lock files of dead owners are swept on the way.
fn take_owner(store: &Path) -> Result<Owner, std::io::Error> {
    let dir = live_dir(store);
    std::fs::create_dir_all(&dir)?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_some_and(|x| x == "lock")
                && let Ok(f) = File::open(&path)
                && f.try_lock().is_ok()
            {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let token = uuid::Uuid::now_v7().to_string();
    let tmp = dir.join(format!("{token}.lock.tmp"));
    let lock = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&tmp)?;
    lock.try_lock().map_err(std::io::Error::other)?;
    std::fs::rename(&tmp, dir.join(format!("{token}.lock")))?;
    Ok(Owner {
        token,
        _lock: Some(lock),
    })
}

impl Store {
    pub(super) fn owner(&self) -> Result<&Owner, StoreError> {
        if let Some(o) = self.claims.owner.get() {
            return Ok(o);
        }
        let owner = match &*self.location {
            StoreLocation::File(path) => take_owner(path).map_err(|e| StoreError::Open {
                path: live_dir(path),
                detail: format!("cannot take the store's owner lock: {e}"),
            })?,
            StoreLocation::Postgres(_) => Owner {
                token: self.register_host()?,
                _lock: None,
            },
        };
        // Another thread may have won the race; its owner is as good.
        let _ = self.claims.owner.set(owner);
        self.claims
            .owner
            .get()
            .ok_or_else(|| StoreError::Unavailable("no owner identity".into()))
    }

    /// The claim of task `id`, about to be created by this process: held
    /// here, with the owner token its `claims` row is to carry (written by
    /// the creating transaction; [`Store::create_claimed_task`]).
    pub(super) fn claim_new(&self, id: &str) -> Result<(TaskClaim, String), StoreError> {
        let mine = self.owner()?.token.clone();
        self.claims
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_owned());
        let claim = TaskClaim {
            released: false,
            store: self.clone(),
            task: id.to_owned(),
        };
        Ok((claim, mine))
    }

    /// Mark task `id` as run by this process while the returned claim
    /// lives. Refused while another live process (or host), or this one,
    /// runs it.
    pub fn claim(&self, id: &str) -> Result<TaskClaim, StoreError> {
        let refused = |detail: String| StoreError::Open {
            path: PathBuf::from(self.location.to_string()),
            detail,
        };
        let mine = self.owner()?.token.clone();
        if !self
            .claims
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_owned())
        {
            return Err(refused(format!(
                "task {id} is already running in this process"
            )));
        }
        let claim = TaskClaim {
            released: false,
            store: self.clone(),
            task: id.to_owned(),
        };
        let taken = self.db.write(|c| {
            // Claims of one task take turns with the work queue's.
            if c.dialect() == Dialect::Postgres {
                c.exec("SELECT 1 FROM tasks WHERE id = ?1 FOR UPDATE", params![id])?;
            }
            let current: Option<String> = c
                .opt(
                    match c.dialect() {
                        Dialect::Sqlite => "SELECT owner FROM claims WHERE task_id = ?1",
                        Dialect::Postgres => {
                            "SELECT owner FROM claims WHERE task_id = ?1 FOR UPDATE"
                        }
                    },
                    params![id],
                )?
                .map(|r| r.get(0))
                .transpose()?;
            if let Some(other) = current
                && other != mine
                && self.owner_alive(c, &other)?
            {
                return Ok(false);
            }
            c.exec(
                "INSERT INTO claims (task_id, owner) VALUES (?1, ?2) \
                 ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner",
                params![id, &mine],
            )?;
            Ok(true)
        })?;
        if !taken {
            return Err(StoreError::ClaimLost(id.to_owned()));
        }
        Ok(claim)
    }

    /// The owner whose claim a write to `task` must still hold, when this
    /// host runs the task on a shared store. A host whose lease lapsed
    /// (paused, or cut off from the database) may find another host took
    /// the task over meanwhile; its writes must then not land in the new
    /// owner's history. None on SQLite (a live process's lock never
    /// lapses) and for tasks this host does not run.
    pub(super) fn fence_for(&self, task: &str) -> Option<String> {
        if !self.is_shared() {
            return None;
        }
        let held = self
            .claims
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(task);
        if !held {
            return None;
        }
        self.claims.owner.get().map(|o| o.token.clone())
    }

    /// Run a write to `task` in one transaction, refused with
    /// [`StoreError::ClaimLost`] when this host runs the task but no longer
    /// holds its claim ([`Store::fence_for`]).
    pub(super) fn fenced_write<T>(
        &self,
        task: &str,
        f: impl Fn(&Conn<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Some(owner) = self.fence_for(task) else {
            return self.db.write(f);
        };
        self.db.write(|c| {
            c.exec(
                "SELECT 1 FROM tasks WHERE id = ?1 FOR UPDATE",
                params![task],
            )?;
            check_fence(c, task, &owner)?;
            f(c)
        })
    }

    /// Whether a live process (or host) runs task `id`.
    pub fn is_live(&self, id: &str) -> bool {
        let (column, joins) = self.liveness();
        self.db
            .run(|c| {
                c.opt(
                    &format!("SELECT {column} FROM tasks t {joins} WHERE t.id = ?1"),
                    params![id],
                )
            })
            .and_then(|row| row.map_or(Ok(None), |r| r.get(0)))
            .is_ok_and(|seen| self.live_in(seen))
    }

    /// How a query of tasks `t` learns whether a live process (or host)
    /// runs each, in the same statement: the column to select and the
    /// joins it needs. On PostgreSQL the column is the claim's host when
    /// it renewed its lease in time; on SQLite the claim's owner, whose
    /// lock file says the rest ([`Store::live_in`]).
    pub(super) fn liveness(&self) -> (&'static str, &'static str) {
        match &*self.location {
            StoreLocation::File(_) => ("c.owner", "LEFT JOIN claims c ON c.task_id = t.id"),
            StoreLocation::Postgres(_) => ("h.id", LIVE_ON_A_HOST.as_str()),
        }
    }

    /// Whether [`Store::liveness`]'s column, `seen`, says a live process
    /// (or host) runs the task.
    pub(super) fn live_in(&self, seen: Option<String>) -> bool {
        match (&*self.location, seen) {
            (_, None) => false,
            (StoreLocation::File(path), Some(owner)) => alive(path, &owner),
            (StoreLocation::Postgres(_), Some(_)) => true,
        }
    }

    /// Whether the claim owner `token` is alive: on SQLite its lock file is
    /// held; on PostgreSQL its host renewed its lease in time.
    pub(super) fn owner_alive(&self, c: &Conn<'_>, token: &str) -> Result<bool, StoreError> {
        match &*self.location {
            StoreLocation::File(path) => Ok(alive(path, token)),
            StoreLocation::Postgres(_) => host_alive(c, token),
        }
    }
}

/// The joins that give each task `t` its claim's host (`h`) when that
/// host's lease is current.
static LIVE_ON_A_HOST: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "LEFT JOIN claims c ON c.task_id = t.id \
         LEFT JOIN hosts h ON h.id = c.owner AND h.seen_at + h.lease_ms > {DB_NOW}"
    )
});

/// Refuse a write to `task` unless `owner` still holds its claim. Called
/// inside a write transaction that has locked the task's row: another host
/// takes a claim under that lock too, so what this sees stays true until
/// the transaction commits.
pub(super) fn check_fence(c: &Conn<'_>, task: &str, owner: &str) -> Result<(), StoreError> {
    match c.opt(
        "SELECT 1 FROM claims WHERE task_id = ?1 AND owner = ?2",
        params![task, owner],
    )? {
        Some(_) => Ok(()),
        None => Err(StoreError::ClaimLost(task.to_owned())),
    }
}

/// The claims of tasks `?2` (comma-separated) that owner `?1` holds
/// ([`check_fences`]).
pub(super) const FENCES: &str =
    "SELECT task_id FROM claims WHERE owner = ?1 AND task_id = ANY(string_to_array(?2, ','))";

/// [`check_fence`] for several tasks at once (a shared commit's, in one
/// round trip), on PostgreSQL: refused for the first of `tasks` whose claim
/// `owner` no longer holds. Task ids are UUIDs, never holding a comma.
pub(super) fn check_fences(c: &Conn<'_>, tasks: &[&str], owner: &str) -> Result<(), StoreError> {
    if tasks.is_empty() {
        return Ok(());
    }
    fences_held(c.query(FENCES, params![owner, &tasks.join(",")])?, tasks)
}

/// Refused for the first of `tasks` not among `held` ([`FENCES`]'s rows).
pub(super) fn fences_held(held: Vec<Row>, tasks: &[&str]) -> Result<(), StoreError> {
    let held: HashSet<String> = held
        .into_iter()
        .map(|mut r| r.take_text(0))
        .collect::<Result<_, _>>()?;
    match tasks.iter().find(|t| !held.contains(**t)) {
        Some(lost) => Err(StoreError::ClaimLost((*lost).to_owned())),
        None => Ok(()),
    }
}

/// Clones of a store share its claims.
pub(super) fn shared() -> Arc<Claims> {
    Arc::new(Claims::default())
}

/// How long a host's claims outlive its last renewal, unless set.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// What a store knows of its own host.
#[derive(Debug)]
pub(super) struct HostState {
    /// The lease, in ms.
    pub(super) lease_ms: AtomicI64,
    /// When the lease was last renewed (this host's clock, ms).
    pub(super) renewed_at: AtomicI64,
}

impl Default for HostState {
    fn default() -> Self {
        Self {
            lease_ms: AtomicI64::new(ms(DEFAULT_LEASE)),
            renewed_at: AtomicI64::new(0),
        }
    }
}

/// `d` in ms, saturating.
pub(super) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Whether the host `id` renewed its lease in time (a shared store).
fn host_alive(c: &Conn<'_>, id: &str) -> Result<bool, StoreError> {
    Ok(c.opt(
        &format!("SELECT 1 FROM hosts WHERE id = ?1 AND seen_at + lease_ms > {DB_NOW}"),
        params![id],
    )?
    .is_some())
}
