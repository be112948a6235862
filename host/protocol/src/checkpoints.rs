//! Checkpoints as every front-end shows them: a task's snapshots of its
//! workspace (and the point its conversation had reached), and what a
//! restore did.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One checkpoint of a task: the workspace as it was before the first
/// change of one of its turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Checkpoint {
    /// Its id within the task (1, 2, …).
    pub id: u32,
    /// The turn it was taken at (the model's replies before it, plus one).
    pub turn: u32,
    /// When (ms since the epoch).
    pub created_at: i64,
}

/// What a restore brings back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RestoreMode {
    /// The files and the conversation.
    #[default]
    Both,
    /// Only the files.
    FilesOnly,
    /// Only the conversation.
    ConversationOnly,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RestoreReport {
    /// The checkpoint restored.
    pub checkpoint: u32,
    /// Files brought back as they were.
    pub restored: Vec<String>,
    /// Files removed (the task made them after the checkpoint).
    pub removed: Vec<String>,
    /// Files someone else changed since the task last did: left alone
    /// (unless forced, then listed under restored or removed too).
    pub conflicts: Vec<String>,
    /// Whether the conversation went back to the checkpoint's turn.
    pub conversation: bool,
}
