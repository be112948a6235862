//! Why the engine refused a request, typed, with the stable code a
//! front-end branches on (the protocol's [`EngineErrorCode`]).

use crate::asks::AskError;
use crate::checkpoints::CheckpointError;
use crate::config::ConfigError;
use crate::events::ReplayError;
use crate::store::StoreError;
use crate::task::TaskError;
use roost_protocol::{EngineErrorCode, ErrorBody};

/// Why the engine refused.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No task with this id is in this engine's memory (create or resume
    /// it first; a finished task is only in the store).
    #[error("no task {0} in this engine (create or resume it first)")]
    NotHere(String),
    /// The task was started already.
    #[error("task {0} was started already")]
    AlreadyStarted(String),
    /// The task cannot be created, resumed or run.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The event log could not be read back.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// An answer was not taken.
    #[error(transparent)]
    Ask(#[from] AskError),
    /// The task's endpoint cannot be opened.
    #[error(transparent)]
    Endpoint(#[from] ConfigError),
    /// A checkpoint cannot be listed, shown or restored.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// Checkpoints are off in this engine.
    #[error("checkpoints are off (`[checkpoints] enabled = false`)")]
    NoCheckpoints,
}

impl EngineError {
    /// The stable code of this refusal.
    pub fn code(&self) -> EngineErrorCode {
        match self {
            Self::NotHere(_) => EngineErrorCode::NotFound,
            Self::AlreadyStarted(_) => EngineErrorCode::Conflict,
            Self::Task(e) => match e {
                TaskError::Store(s) => store_code(s),
                TaskError::UnknownMode { .. } | TaskError::Workspace(_) => {
                    EngineErrorCode::InvalidRequest
                }
                TaskError::NotResumable { .. } | TaskError::Cancelled => EngineErrorCode::Conflict,
                TaskError::NoPerson(_) => EngineErrorCode::Conflict,
                TaskError::NoModel => EngineErrorCode::Internal,
            },
            Self::Store(s) => store_code(s),
            Self::Replay(ReplayError::Store(s)) => store_code(s),
            Self::Replay(ReplayError::Corrupt { .. }) => EngineErrorCode::Storage,
            Self::Ask(AskError::NotOpen { .. }) => EngineErrorCode::Conflict,
            Self::Ask(AskError::Store(s)) => store_code(s),
            Self::Ask(AskError::Encode(_)) => EngineErrorCode::Internal,
            Self::Endpoint(_) => EngineErrorCode::InvalidRequest,
            Self::Checkpoint(CheckpointError::Unknown { .. }) => EngineErrorCode::NotFound,
            Self::Checkpoint(CheckpointError::Store(s)) => store_code(s),
            Self::Checkpoint(_) => EngineErrorCode::Internal,
            Self::NoCheckpoints => EngineErrorCode::InvalidRequest,
        }
    }

    /// The refusal as a front-end sends it.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code(),
            message: self.to_string(),
        }
    }
}

fn store_code(e: &StoreError) -> EngineErrorCode {
    match e {
        StoreError::NotFound(_) | StoreError::NoTask { .. } => EngineErrorCode::NotFound,
        StoreError::Ambiguous { .. } => EngineErrorCode::Ambiguous,
        StoreError::AskNotOpen { .. } | StoreError::Live(_) | StoreError::ClaimLost(_) => {
            EngineErrorCode::Conflict
        }
        _ => EngineErrorCode::Storage,
    }
}
