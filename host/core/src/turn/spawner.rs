//! How a task's loop reaches the engine that runs it, to start tasks of
//! its own (delegation): through a weak handle, so a running task never
//! keeps its engine alive, and through a trait, so nothing under the loop
//! imports the engine above it.

use std::sync::Weak;

use roost_protocol::{ErrorBody, TaskSpec};

/// What starts a task on a task's behalf (the engine).
pub trait Spawner: Send + Sync {
    /// Create and start a task for `spec`, as a child of `parent`; its id.
    fn spawn_task(&self, parent: &str, spec: &TaskSpec) -> Result<String, SpawnError>;
}

/// Why a task could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The engine is gone (shut down) or the task has none.
    #[error("no engine runs this task any more")]
    Gone,
    /// The engine refused the spec.
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

    /// Start a task through the engine, if it is still there.
    pub fn spawn_task(&self, parent: &str, spec: &TaskSpec) -> Result<String, SpawnError> {
        let spawner = self
            .0
            .as_ref()
            .and_then(Weak::upgrade)
            .ok_or(SpawnError::Gone)?;
        spawner.spawn_task(parent, spec)
    }
}
