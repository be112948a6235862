//! How a task's loop reaches the engine that runs it, to delegate work to
//! subtasks: through a weak handle, so a running task never keeps its
//! engine alive, and through a trait, so nothing under the loop imports
//! the engine above it.

use std::sync::Weak;

use futures::future::BoxFuture;

use super::TaskOutcome;
use crate::events::Subscription;
use crate::store::TaskRecord;
use roost_protocol::{ApprovalPolicy, ErrorBody, Inherited};

/// A subtask to start: its mode and instructions, and the bounds it gets
/// from the task starting it (never more than that task has).
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// Mode slug.
    pub mode: String,
    /// Its instructions (its first message).
    pub message: String,
    /// Its first todo list (markdown checklist), if the parent gave one.
    pub todos: Option<String>,
    /// Which calls run without asking (at most the parent's).
    pub approval: ApprovalPolicy,
    /// Its depth, write bound, inherited hooks and starting call.
    pub inherited: Inherited,
}

/// What starts and follows tasks on a task's behalf (the engine).
pub trait Spawner: Send + Sync {
    /// Create a subtask of `parent` and start it when the tree has a free
    /// slot (its root's concurrency bound); its id, and its events from
    /// the start. Asynchronous, so that many created at once (a parallel
    /// group's) share the store's commits.
    /// `parent` is the parent's record as the caller just read it (one
    /// read for a whole group of children).
    fn spawn_child<'a>(
        &'a self,
        parent: &'a TaskRecord,
        child: &'a ChildSpec,
    ) -> BoxFuture<'a, Result<(String, Subscription), SpawnError>>;

    /// Make sure a subtask recorded earlier runs: one no loop holds (a
    /// crash, a stop) is resumed; one that ended is left as it is. Its
    /// events from now on, while it runs.
    fn ensure_running(&self, id: &str) -> Result<Option<Subscription>, SpawnError>;

    /// How task `id` ends (at once for one that has ended).
    fn wait(&self, id: &str) -> BoxFuture<'static, Result<TaskOutcome, SpawnError>>;

    /// Ask task `id` to stop for `reason` (its own subtasks stop with it).
    fn cancel(&self, id: &str, reason: &str);
}

/// Why a task could not be started or followed.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The engine is gone (shut down) or the task has none.
    #[error("no engine runs this task any more")]
    Gone,
    /// The engine refused.
    #[error("{}", .0.message)]
    Refused(ErrorBody),
}

/// A weak handle on the engine running a task.
#[derive(Clone, Default)]
pub struct SpawnHandle(Option<Weak<dyn Spawner>>);

impl SpawnHandle {
    /// A handle on `spawner`.
    pub fn new(spawner: Weak<dyn Spawner>) -> Self {
        Self(Some(spawner))
    }

    /// The engine, if it is still there.
    pub fn get(&self) -> Result<std::sync::Arc<dyn Spawner>, SpawnError> {
        self.0
            .as_ref()
            .and_then(Weak::upgrade)
            .ok_or(SpawnError::Gone)
    }
}
