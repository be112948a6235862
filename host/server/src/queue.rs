//! The work queue of a shared store (several hosts on one PostgreSQL): a
//! created task is handed to the queue, not started where it was created;
//! each host takes tasks from it while it has free slots, only tasks whose
//! workspace is under a root it has, and a task whose host died (its lease
//! ran out) is taken again and resumed from its durable history. The host
//! looks whenever a task may need one (a notice) and every
//! [`POLL`] besides (a dead host sends no notice).

use std::sync::Arc;
use std::time::Duration;

use roost_core::engine::EngineError;

use crate::state::ServerState;

/// How often a host looks at the queue without being woken.
const POLL: Duration = Duration::from_secs(1);

impl ServerState {
    /// Join the other hosts of a shared store and take tasks from its work
    /// queue from now on; false (nothing done) on a store of one machine.
    pub fn join_hosts(self: &Arc<Self>) -> Result<bool, EngineError> {
        if !self.engine.is_shared() {
            return Ok(false);
        }
        self.engine.join_hosts(&self.roots())?;
        let state = Arc::clone(self);
        tokio::spawn(async move { state.take_from_queue().await });
        Ok(true)
    }

    /// The workspace roots this host has: its own, and those of the
    /// tenants' tokens that exist here.
    pub(crate) fn roots(&self) -> Vec<String> {
        let mut roots = vec![self.config.local_root.display().to_string()];
        if let Ok(tokens) = self.engine.tokens().list() {
            let now = roost_core::engine::now_ms();
            for t in tokens {
                if t.valid_at(now)
                    && std::path::Path::new(&t.root).is_dir()
                    && !roots.contains(&t.root)
                {
                    roots.push(t.root);
                }
            }
        }
        roots
    }

    async fn take_from_queue(self: Arc<Self>) {
        let wake = self.engine.queue_wakeups();
        let stopped = self.stopped();
        tokio::pin!(stopped);
        let mut advertised: Vec<String> = Vec::new();
        loop {
            let notified = wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let free = self.free_slots();
            if free > 0 {
                let engine = Arc::clone(&self.engine);
                let roots = self.roots();
                let changed = roots != advertised;
                let taken = tokio::task::spawn_blocking({
                    let roots = roots.clone();
                    move || {
                        if changed {
                            engine.advertise_roots(&roots)?;
                        }
                        engine.claim_queued(&roots, free)
                    }
                })
                .await;
                match taken {
                    Ok(Ok(ids)) => {
                        advertised = roots;
                        for id in ids {
                            tracing::info!(task = %id, "taken from the work queue");
                            self.schedule(id);
                        }
                    }
                    Ok(Err(e)) => tracing::warn!("taking tasks from the work queue: {e}"),
                    Err(e) => tracing::warn!("taking tasks from the work queue: {e}"),
                }
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep(POLL) => {}
                () = &mut stopped => return,
            }
        }
    }
}
