//! The engine's side of delegation (`new_task`). A subtask is created like
//! any task — addressable by id: events, asks, cancel — with its parent
//! and root, on its parent's endpoint, with settings never wider than its
//! parent's; it starts when its tree has a free slot (the root's bound on
//! subtasks running at once), so extra children wait instead of being
//! refused.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::{Semaphore, watch};

use super::{Begin, Engine, EngineError, ResumeSpec, finish};
use crate::config::RecordedEndpoint;
use crate::events::Subscription;
use crate::store::TaskRecord;
use crate::task::{Creation, TaskOutcome};
use crate::tools::native::parse_todos;
use crate::turn::{ChildSpec, SpawnError, Spawner};
use roost_protocol::task::Endpoint;
use roost_protocol::{EngineErrorCode, ErrorBody, TaskSettings, TaskStatus};

/// Each tree's slots for running subtasks, by root id.
#[derive(Default)]
pub(super) struct TreeSlots(Mutex<HashMap<String, Arc<Semaphore>>>);

impl TreeSlots {
    /// The slots of the tree rooted at `root` (`size` of them when new).
    fn of(&self, root: &str, size: usize) -> Arc<Semaphore> {
        let mut trees = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            trees
                .entry(root.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(size.max(1)))),
        )
    }
}

fn refused(e: EngineError) -> SpawnError {
    SpawnError::Refused(e.body())
}

impl Engine {
    /// The receiver of a task's outcome, while this engine holds it.
    fn outcome_rx(&self, id: &str) -> Option<watch::Receiver<Option<TaskOutcome>>> {
        self.lock().running.get(id).map(|r| r.outcome.subscribe())
    }

    /// Start registered task `id` of the tree rooted at `root` once the
    /// tree has a free slot (at once when it is cancelled meanwhile: it
    /// then only records that it stopped); the slot is its until it ends.
    fn start_in_tree(&self, root: &str, id: &str, settings: Option<&TaskSettings>) {
        let bounds = match settings {
            Some(s) => self.agent.config.delegation.narrowed(&s.delegation),
            None => self.agent.config.delegation,
        };
        let slots = self.trees.of(
            root,
            usize::try_from(bounds.max_concurrent_children).unwrap_or(usize::MAX),
        );
        let Ok(control) = self.control(id) else {
            return;
        };
        let this = self.this.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            let permit = tokio::select! {
                p = slots.acquire_owned() => p.ok(),
                () = control.cancelled() => None,
            };
            let Some(engine) = this.upgrade() else {
                return;
            };
            if let Err(e) = engine.start(&id) {
                let error = format!("the subtask could not start: {e}");
                tracing::error!(task = %id, "{error}");
                if let Ok(events) = engine.events(&id)
                    && let Err(e) = engine.agent.end_failed(&id, &error, &events).await
                {
                    tracing::error!(task = %id, "cannot record that the subtask failed: {e}");
                }
                finish(&this, &id, TaskOutcome::Failed { error });
                return;
            }
            let rx = engine.outcome_rx(&id);
            // The tree's slot, not the engine, is held while it runs.
            drop(engine);
            if let Some(mut rx) = rx {
                let _ = rx.wait_for(Option::is_some).await;
            }
            drop(permit);
        });
    }
}

impl Engine {
    /// [`Spawner::spawn_child`]: the child's creation rides a shared
    /// commit with whatever else is committed meanwhile (its siblings' in
    /// a parallel group), its intent included.
    async fn spawn(
        &self,
        parent: &TaskRecord,
        child: &ChildSpec,
        trace_parent: Option<opentelemetry::Context>,
    ) -> Result<(String, Subscription), SpawnError> {
        let theirs = parent
            .settings
            .clone()
            .unwrap_or_else(|| self.agent.config.settings());
        let settings = TaskSettings {
            approval: child.approval.narrowed_to(&theirs.approval),
            max_turns: theirs.max_turns,
            inherited: child.inherited.clone(),
            // The tree's bounds are its root's, all the way down.
            delegation: theirs.delegation,
            trace: None,
        };
        let recorded = RecordedEndpoint {
            provider: &parent.provider,
            base_url: &parent.base_url,
            model: &parent.model,
            profile: &parent.profile,
        };
        let mut setup = self
            .setup(&Endpoint::default(), Some(recorded), 0, &settings)
            .map_err(refused)?;
        // What the parent's session lent it is its children's too.
        setup.lent = self.lent_to(&parent.id);
        setup.trace_parent = trace_parent;
        let todos = match child.todos.as_deref().map(parse_todos).transpose() {
            Ok(t) => t,
            Err(message) => {
                return Err(SpawnError::Refused(ErrorBody {
                    code: EngineErrorCode::InvalidRequest,
                    message,
                }));
            }
        };
        let new = self
            .agent
            .create_claimed_shared(&Creation {
                prompt: &child.message,
                workspace: Path::new(&parent.workspace),
                opened: None,
                mode: &child.mode,
                provider: setup.provider.as_ref(),
                settings: &settings,
                parent: Some(parent),
                // A tenant's subtasks are that tenant's.
                owner: parent.owner.as_deref(),
                todos: todos.as_deref(),
                // It starts under the intent its parent passed on (held
                // narrowed to its bound: `intents::bound`).
                intent: settings.inherited.intent.as_deref(),
            })
            .await
            .map_err(|e| refused(e.into()))?;
        let id = new.task.id.clone();
        let (events, _) = self.register(&id, setup, Begin::New(Box::new(new)));
        let rx = events.subscribe();
        self.start_in_tree(&parent.root_id, &id, Some(&settings));
        Ok((id, rx))
    }
}

impl Spawner for Engine {
    /// A child never gets more than its parent: its approval policy is at
    /// most the parent's, its turn limit the parent's; it runs on its
    /// parent's endpoint, in its parent's workspace, for its parent's
    /// owner.
    fn spawn_child<'a>(
        &'a self,
        parent: &'a TaskRecord,
        child: &'a ChildSpec,
    ) -> BoxFuture<'a, Result<(String, Subscription), SpawnError>> {
        // Its run's span is a child of the parent's `new_task` call (the
        // context the call is made in).
        let trace_parent = crate::telemetry::spans::enabled().then(opentelemetry::Context::current);
        Box::pin(self.spawn(parent, child, trace_parent))
    }

    fn ensure_running(&self, id: &str) -> Result<Option<Subscription>, SpawnError> {
        if let Some(r) = self.lock().running.get(id) {
            return Ok(Some(r.events.subscribe()));
        }
        let task = self
            .agent
            .store
            .get_task(id)
            .map_err(|e| refused(e.into()))?;
        if matches!(task.status, TaskStatus::Completed | TaskStatus::Failed) {
            return Ok(None);
        }
        match self.prepare_resume(id, &ResumeSpec::default()) {
            Ok(_) => {
                // A resumed child is lent what its parent was, again.
                if let Some(parent) = task.parent_id.as_deref() {
                    self.lend(id, self.lent_to(parent)).map_err(refused)?;
                }
            }
            // Another front-end resumed it meanwhile.
            Err(EngineError::AlreadyStarted(_)) => {
                return Ok(self.subscribe(id).ok());
            }
            Err(e) => return Err(refused(e)),
        }
        let rx = self.subscribe(id).ok();
        self.start_in_tree(&task.root_id, id, task.settings.as_ref());
        Ok(rx)
    }

    fn wait(&self, id: &str) -> BoxFuture<'static, Result<TaskOutcome, SpawnError>> {
        let rx = self.outcome_rx(id);
        let this = self.this.clone();
        let id = id.to_owned();
        Box::pin(async move {
            if let Some(mut rx) = rx
                && let Ok(v) = rx.wait_for(Option::is_some).await
                && let Some(outcome) = v.clone()
            {
                return Ok(outcome);
            }
            let engine = this.upgrade().ok_or(SpawnError::Gone)?;
            engine.wait(&id).await.map_err(refused)
        })
    }

    fn cancel(&self, id: &str, reason: &str) {
        // Here at once; on another host through the store, awaited on the
        // runtime rather than parking this thread.
        if let Ok(c) = self.control(id) {
            c.cancel(reason);
            return;
        }
        let (this, id, reason) = (self.this.clone(), id.to_owned(), reason.to_owned());
        let routed = async move {
            let Some(engine) = this.upgrade() else { return };
            if let Err(e) = engine.cancel(&id, &reason).await {
                tracing::debug!(task = id, "not cancelled: {e}");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn(routed)),
            Err(_) => futures::executor::block_on(routed),
        }
    }
}
