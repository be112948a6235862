//! What every request handler shares: the engine, the server's settings,
//! the per-token rate limiter and the task slots.

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use roost_core::engine::{Engine, ResumeSpec};
use roost_core::events::{Envelope, TaskEvent};
use roost_core::session::{Owner, Session};
use roost_core::task::TaskOutcome;
use roost_protocol::TaskStatus;
use tokio::sync::{Semaphore, broadcast};

use crate::error::ApiError;

/// The tenant of the local, unauthenticated server.
pub const LOCAL_TENANT: &str = "local";

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Requests need a token (off only on loopback, `--no-auth`).
    pub auth: bool,
    /// Without auth: the one tenant's workspace root.
    pub local_root: PathBuf,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Requests per second a token may make (sustained).
    pub requests_per_second: NonZeroU32,
    /// Requests a token may make at once above that rate.
    pub burst: NonZeroU32,
    /// Tasks running at once; more wait in the queue.
    pub max_running: usize,
    /// Tasks waiting for a slot; more are refused with `503`.
    pub max_queued: usize,
    /// Origins (`https://host:port`) allowed to send state-changing
    /// requests besides the server's own.
    pub allowed_origins: Vec<String>,
    /// More `Host` values requests may name besides the server's own
    /// (`localhost`, `127.0.0.1`, `[::1]` and the bound address, with its
    /// port): `host` for any port, or `host:port` — the name a proxy or
    /// the clients reach it by. Any other `Host` is refused on every
    /// route (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// The config dir's modes (global modes).
    pub modes_dir: Option<PathBuf>,
    /// The model profiles tasks may name (`GET /v1/profiles`;
    /// [`crate::profiles_of`] a config's).
    pub profiles: Vec<roost_protocol::api::ProfileView>,
    /// `/metrics` in the Prometheus text format (`--metrics`), and the
    /// token a scrape must bring (none: loopback only).
    pub metrics: Option<crate::metrics::MetricsPage>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            auth: true,
            local_root: PathBuf::from("/"),
            max_body_bytes: 1 << 20,
            requests_per_second: NonZeroU32::MIN.saturating_add(199),
            burst: NonZeroU32::MIN.saturating_add(399),
            max_running: 16,
            max_queued: 256,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            modes_dir: None,
            profiles: Vec::new(),
            metrics: None,
        }
    }
}

/// Why tasks stop when the server does; on restart the server resumes
/// the tasks that stopped for it.
pub const SHUTDOWN_REASON: &str = "the server is shutting down";

/// A task-level event for `GET /v1/events`: whose task it is, and what.
#[derive(Debug, Clone)]
pub struct FeedItem {
    /// The task's owner (tenant).
    pub owner: String,
    /// The event.
    pub envelope: Arc<Envelope>,
}

/// The server's shared state.
pub struct ServerState {
    /// The engine the tasks run in.
    pub engine: Arc<Engine>,
    /// Its settings.
    pub config: ServerConfig,
    pub(crate) limiter: DefaultKeyedRateLimiter<String>,
    pub(crate) feed: broadcast::Sender<FeedItem>,
    slots: Arc<Semaphore>,
    /// Tasks waiting for a slot.
    queued: Mutex<HashSet<String>>,
    /// Tasks this server started or queued, until they end.
    live: Mutex<HashSet<String>>,
    /// Set when the server stops: event streams end.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl ServerState {
    /// A server over `engine` with `config`.
    pub fn new(engine: Arc<Engine>, config: ServerConfig) -> Arc<Self> {
        // A tenant's task runs only beneath its tenant's root, checked at
        // every start on the directory as it is then (not only at `POST
        // /v1/tasks`, which a swapped directory would outlive).
        let local = (!config.auth).then_some((LOCAL_TENANT, config.local_root.as_path()));
        engine.confine_to_tenant_roots(local);
        let quota = Quota::per_second(config.requests_per_second).allow_burst(config.burst);
        Arc::new(Self {
            limiter: RateLimiter::keyed(quota),
            feed: broadcast::channel(1024).0,
            slots: Arc::new(Semaphore::new(config.max_running.max(1))),
            queued: Mutex::new(HashSet::new()),
            live: Mutex::new(HashSet::new()),
            stopping: tokio::sync::watch::channel(false).0,
            engine,
            config,
        })
    }

    /// How busy the server is: tasks waiting for a slot, and running.
    pub(crate) fn load(&self) -> roost_core::telemetry::metrics::ServeLoad {
        let queued = self.queue().len();
        let running = self
            .config
            .max_running
            .max(1)
            .saturating_sub(self.slots.available_permits());
        roost_core::telemetry::metrics::ServeLoad {
            queued: u64::try_from(queued).unwrap_or(u64::MAX),
            running: u64::try_from(running).unwrap_or(u64::MAX),
        }
    }

    /// Refuse a new task when the queue is full (`503`, retryable).
    pub(crate) fn check_capacity(&self) -> Result<(), ApiError> {
        if self.queue().len() >= self.config.max_queued {
            return Err(ApiError::overloaded());
        }
        Ok(())
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Slots free for more tasks (none while tasks wait for one).
    pub(crate) fn free_slots(&self) -> usize {
        self.slots
            .available_permits()
            .saturating_sub(self.queue().len())
    }

    /// Whether task `id` waits for a slot on this server.
    pub fn is_queued(&self, id: &str) -> bool {
        self.queue().contains(id)
    }

    /// The session of `tenant`: every request about a task goes through
    /// it (tenancy, answers, following), as every front-end's does.
    pub(crate) fn session(&self, tenant: &str) -> Session<'_> {
        Session::new(&self.engine, Owner::Tenant(tenant.to_owned()))
    }

    /// Whether this server holds task `id`: scheduled here (waiting for a
    /// slot, starting or running), or in its engine's memory (a subtask
    /// its parent started: the engine has its event bus). Its loop is here
    /// or about to be, though it takes the store's claim only once it runs.
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.live().contains(id) || self.engine.events(id).is_ok()
    }

    /// Start created or prepared task `id` when a slot is free: at once
    /// below the concurrency limit, else after the tasks ahead of it.
    pub(crate) fn schedule(self: &Arc<Self>, id: String) {
        self.queue().insert(id.clone());
        self.live().insert(id.clone());
        let owner = self
            .engine
            .records()
            .get(&id)
            .ok()
            .and_then(|l| l.task.owner)
            .unwrap_or_default();
        // Its task-level events go to `GET /v1/events` (subscribed before
        // it starts: none is missed).
        if let Ok(mut rx) = self.engine.subscribe(&id) {
            let feed = self.feed.clone();
            let owner = owner.clone();
            tokio::spawn(async move {
                loop {
                    match rx.recv().await {
                        Ok(env) if task_level(&env.event) => {
                            let _ = feed.send(FeedItem {
                                owner: owner.clone(),
                                envelope: env,
                            });
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            });
        }
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let permit = Arc::clone(&this.slots).acquire_owned().await;
            this.queue().remove(&id);
            if let Ok(_permit) = permit {
                let session = this.session(&owner);
                match session.start(&id).await {
                    // The slot is the task's until it ends.
                    Ok(()) => {
                        let _ = session.wait(&id).await;
                    }
                    Err(e) => tracing::error!(task = %id, "cannot start: {e}"),
                }
            }
            this.live().remove(&id);
            // A slot is free: the work queue of a shared store may have a
            // task for it.
            this.engine.queue_wakeups().notify_waiters();
        });
    }

    /// Resolves once the server is stopping (event streams end then, so a
    /// graceful shutdown does not wait on them).
    pub(crate) fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut rx = self.stopping.subscribe();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }

    /// Stop. A task waiting for a person is left as it is: its question
    /// stays open (on record), and the next start resumes the task and
    /// asks it again by the same `ask_id`. A task at work stops after its
    /// current step (a tool call finishes, within `bound`) and stays
    /// resumable. Event streams end.
    pub async fn shutdown(&self, bound: Duration) {
        self.stopping.send_replace(true);
        let records = self.engine.records();
        let working: Vec<String> = self
            .live()
            .iter()
            .filter(|id| {
                records.get(id).is_ok_and(|l| {
                    matches!(
                        l.task.status,
                        TaskStatus::Running | TaskStatus::WaitingForSubtask
                    )
                })
            })
            .cloned()
            .collect();
        // The server itself stops them: it acts as the host, not a tenant.
        let host = Session::new(&self.engine, Owner::Host);
        for id in &working {
            let _ = host.cancel(id, SHUTDOWN_REASON).await;
        }
        let all = futures::future::join_all(working.iter().map(|id| host.wait(id)));
        if tokio::time::timeout(bound, all).await.is_err() {
            tracing::warn!("some tasks did not stop within {bound:?}; they resume as interrupted");
        }
        // On a shared store the other hosts go on with them at once.
        if self.engine.is_shared() {
            for id in &working {
                if let Err(e) = self.engine.requeue(id) {
                    tracing::warn!(task = %id, "cannot hand it to another host: {e}");
                }
            }
            if let Err(e) = self.engine.leave_hosts() {
                tracing::warn!("leaving the other hosts: {e}");
            }
        }
    }

    /// At start: resume the tenants' tasks a shutdown stopped, and those a
    /// crash left interrupted. Their open questions are asked again by the
    /// same ask id. How many were resumed.
    pub async fn resume_stopped(self: &Arc<Self>) -> usize {
        let records = self.engine.records();
        let Ok(listed) = records.list(10_000) else {
            return 0;
        };
        let mut resumed = 0;
        for l in listed {
            // A subtask is followed again by its parent when the parent
            // resumes (it resumes the subtask then).
            if l.task.owner.is_none() || l.task.parent_id.is_some() {
                continue;
            }
            let stopped_by_us = l.task.status == TaskStatus::Aborted
                && matches!(
                    records.outcome(&l.task.id),
                    Ok(Some(TaskOutcome::Aborted { reason })) if reason == SHUTDOWN_REASON
                );
            if !(stopped_by_us || l.interrupted) {
                continue;
            }
            match self
                .session(l.task.owner.as_deref().unwrap_or_default())
                .resume(&l.task.id, &ResumeSpec::default())
                .await
            {
                Ok(p) => {
                    self.schedule(p.id);
                    resumed += 1;
                }
                Err(e) => tracing::warn!(task = %l.task.id, "cannot resume: {e}"),
            }
        }
        resumed
    }
}

/// Whether `event` is about a task as a whole (for the all-tasks feed).
fn task_level(event: &TaskEvent) -> bool {
    matches!(
        event,
        TaskEvent::TaskCreated { .. }
            | TaskEvent::TaskStarted { .. }
            | TaskEvent::AskRequired { .. }
            | TaskEvent::Completed { .. }
            | TaskEvent::Aborted { .. }
            | TaskEvent::Paused { .. }
            | TaskEvent::Failed { .. }
    )
}
