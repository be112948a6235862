//! The engine among other hosts on a shared store (PostgreSQL): it follows
//! the events of tasks other hosts run (so a front-end here streams them
//! as if they ran here), routes answers, cancels and messages for those
//! tasks to the host that runs them, takes the requests other hosts leave
//! for its own tasks, and wakes the server's work queue when a task needs a
//! host. Everything travels through the store: durable rows, woken by the
//! store's notices ([`Notice`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, Notify, broadcast};

use super::{Engine, EngineError};
use crate::asks::Answer;
use crate::events::{EventBus, Subscription, TaskEvent, recorded_after};
use crate::store::{HostRequest, Notice};

/// A task another host runs, followed here: its events are relayed to
/// this bus as they are committed there.
pub(super) struct Follower {
    bus: EventBus,
    /// The last event relayed.
    last: AsyncMutex<i64>,
}

/// What the engine keeps to share a store with other hosts.
#[derive(Default)]
pub(super) struct Hosts {
    followers: Mutex<HashMap<String, Arc<Follower>>>,
    /// Woken when a task may need a host (the server's work queue waits
    /// on it).
    queue: Arc<Notify>,
}

impl Hosts {
    fn followers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Follower>>> {
        self.followers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `event` ends a run of the task's loop (the host lets it go).
fn ends_run(event: &TaskEvent) -> bool {
    matches!(
        event,
        TaskEvent::Completed { .. }
            | TaskEvent::Aborted { .. }
            | TaskEvent::Failed { .. }
            | TaskEvent::Paused { .. }
    )
}

impl Engine {
    /// Join the other hosts of a shared store: advertise `roots` (the
    /// workspace roots this host has), take requests left for this host,
    /// follow notices. A store of one machine (SQLite) has no other hosts:
    /// nothing happens. Needs the runtime.
    pub fn join_hosts(self: &Arc<Self>, roots: &[String]) -> Result<(), EngineError> {
        let store = &self.agent.store;
        let Some(mut notices) = store.notices() else {
            return Ok(());
        };
        store.advertise_roots(roots)?;
        let me = store.host_id()?.unwrap_or_default();
        let engine = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let notice = match notices.recv().await {
                    Ok(n) => n,
                    Err(broadcast::error::RecvError::Lagged(_)) => Notice::Reconnected,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                engine.on_notice(&me, notice).await;
            }
        });
        Ok(())
    }

    /// Woken when a task may need a host: one was created, a host handed
    /// one over, or notices may have been missed.
    pub fn queue_wakeups(&self) -> Arc<Notify> {
        Arc::clone(&self.hosts.queue)
    }

    async fn on_notice(self: &Arc<Self>, me: &str, notice: Notice) {
        match notice {
            Notice::Events { task, .. } => {
                let follower = self.hosts.followers().get(&task).cloned();
                if let Some(f) = follower {
                    self.relay(&task, &f).await;
                }
            }
            Notice::Queue => self.hosts.queue.notify_waiters(),
            Notice::Inbox { host } if host == me => self.take_inbox().await,
            Notice::Inbox { .. } => {}
            Notice::Reconnected => {
                self.take_inbox().await;
                let all: Vec<(String, Arc<Follower>)> = self
                    .hosts
                    .followers()
                    .iter()
                    .map(|(k, v)| (k.clone(), Arc::clone(v)))
                    .collect();
                for (task, f) in all {
                    self.relay(&task, &f).await;
                }
                self.hosts.queue.notify_waiters();
            }
        }
    }

    /// Relay `task`'s events committed since the last one relayed; let the
    /// follower go once the run ends there, or nobody listens.
    async fn relay(&self, task: &str, f: &Follower) {
        let mut last = f.last.lock().await;
        let events = match recorded_after(&self.agent.store, task, *last).await {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!(task, "following another host's task: {e}");
                return;
            }
        };
        let mut ended = false;
        for env in events {
            if let Some(seq) = env.seq {
                *last = seq;
            }
            ended |= ends_run(&env.event);
            f.bus.relay(env);
        }
        // Under the map's lock, where clients subscribe: one subscribing
        // now keeps the follower.
        let mut followers = self.hosts.followers();
        if (ended || f.bus.receivers() == 0)
            && followers
                .get(task)
                .is_some_and(|g| std::ptr::eq(Arc::as_ptr(g), f))
        {
            followers.remove(task);
        }
    }

    /// When another host runs task `id`: a receiver of its events, relayed
    /// here as they are committed there. Awaited: who runs it is one
    /// statement, and a new follower's starting position another, read
    /// outside the followers' lock (which every relay takes).
    pub(super) async fn follow_elsewhere(
        &self,
        id: &str,
    ) -> Result<Option<Subscription>, EngineError> {
        let store = &self.agent.store;
        if !store.is_shared() || store.read_runner_elsewhere(id).await?.is_none() {
            return Ok(None);
        }
        if let Some(f) = self.hosts.followers().get(id) {
            return Ok(Some(f.bus.subscribe()));
        }
        // A follower another front-end made meanwhile is kept; events
        // committed since `last` was read are relayed again, and the
        // stream that follows leaves out those it has.
        let last = store.read_last_event_seq(id).await?;
        let mut followers = self.hosts.followers();
        let f = followers.entry(id.to_owned()).or_insert_with(|| {
            Arc::new(Follower {
                bus: EventBus::new(),
                last: AsyncMutex::new(last),
            })
        });
        Ok(Some(f.bus.subscribe()))
    }

    /// Send `request` for task `id` to the host that runs it, when another
    /// host does; whether one does. Awaited: who runs it is one statement,
    /// the request and its notification one round trip.
    pub(super) async fn route(&self, id: &str, request: &HostRequest) -> Result<bool, EngineError> {
        let store = &self.agent.store;
        if !store.is_shared() {
            return Ok(false);
        }
        match store.read_runner_elsewhere(id).await? {
            Some(host) => {
                store.send_to_host(&host, id, request).await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Act on what other hosts asked of this host's tasks.
    async fn take_inbox(self: &Arc<Self>) {
        let requests = match self.agent.store.take_inbox().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("reading requests from other hosts: {e}");
                return;
            }
        };
        for (task, request) in requests {
            tracing::info!(%task, ?request, "request from another host");
            let done = match &request {
                HostRequest::Answered { ask_id } => self.deliver_recorded(&task, ask_id),
                HostRequest::Cancel { reason } => self.cancel(&task, reason).await,
                HostRequest::Message { text } => self.send_message(&task, text).await,
            };
            if let Err(e) = done {
                tracing::warn!(%task, "a request from another host: {e}");
            }
        }
    }

    /// How long this host's claims outlive its last lease renewal (a shared
    /// store): a dead host's tasks resume elsewhere after it.
    pub fn set_lease(&self, lease: std::time::Duration) {
        self.agent.store.set_lease(lease);
    }

    /// Whether this engine shares its store with other hosts.
    pub fn is_shared(&self) -> bool {
        self.agent.store.is_shared()
    }

    /// Take up to `limit` tasks from the work queue (tasks that need a host,
    /// under `roots`), each ready to [`Engine::start`]. A task that cannot
    /// be prepared here is given back for another host.
    pub fn claim_queued(&self, roots: &[String], limit: usize) -> Result<Vec<String>, EngineError> {
        let store = &self.agent.store;
        let mut ready = Vec::new();
        for id in store.claim_next(roots, limit)? {
            // Its claim had lapsed (the database was away longer than the
            // lease) while it ran here: claimed again, it goes on here.
            if self.lock().running.contains_key(&id) {
                continue;
            }
            match self.prepare_resume(&id, &super::ResumeSpec::default()) {
                Ok(p) => ready.push(p.id),
                Err(e) => {
                    tracing::warn!(task = %id, "cannot take it from the queue: {e}");
                    store.release_claim(&id)?;
                }
            }
        }
        Ok(ready)
    }

    /// Advertise the workspace roots this host has now.
    pub fn advertise_roots(&self, roots: &[String]) -> Result<(), EngineError> {
        Ok(self.agent.store.advertise_roots(roots)?)
    }

    /// Leave the other hosts (this one stops): its claims die at once, so
    /// they take its tasks without waiting for its lease to run out.
    pub fn leave_hosts(&self) -> Result<(), EngineError> {
        Ok(self.agent.store.leave()?)
    }

    /// Put a task this host stopped (it is shutting down) back in the work
    /// queue, for another host to resume.
    pub fn requeue(&self, id: &str) -> Result<(), EngineError> {
        let store = &self.agent.store;
        store.set_status(id, crate::store::TaskStatus::Running)?;
        Ok(store.notify_queue()?)
    }

    /// Hand an answer another host recorded to the loop waiting for it here.
    fn deliver_recorded(&self, task: &str, ask_id: &str) -> Result<(), EngineError> {
        let Some(ask) = self.agent.store.get_ask(task, ask_id)? else {
            return Ok(());
        };
        let Some(text) = ask.answer else {
            return Ok(());
        };
        let answer: Answer = serde_json::from_str(&text).map_err(|e| {
            EngineError::from(crate::store::StoreError::Decode {
                detail: format!("answer to {ask_id}: {e}"),
            })
        })?;
        self.agent.asks.deliver(ask_id, answer);
        Ok(())
    }
}
