//! Parallel task groups (`new_parallel_tasks`, Roo's "Touch and Go"): a
//! task runs several subtasks side by side and waits for all of them, or
//! for the first to finish. A group is a record of its own — who started
//! it, its children, its strategy and how it ended — so a front-end can
//! show it and a resumed parent finds it again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::task::{TaskStatus, Usage};

/// How a group ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupStrategy {
    /// Wait for every child; the result aggregates them all.
    All,
    /// The first child to complete wins; the others are aborted.
    Race,
}

impl GroupStrategy {
    /// Stable text form (stored in the database).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Race => "race",
        }
    }
}

/// Where a group stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupStatus {
    /// Children still run (or wait for a slot).
    Running,
    /// `all`: every child completed; `race`: one did.
    Completed,
    /// `all`: some child did not complete; `race`: none did.
    Failed,
    /// It ran past its time limit; the children still running were aborted.
    TimedOut,
}

/// One child of a group as it was asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupTask {
    /// The child's mode.
    pub mode: String,
    /// Its instructions.
    pub message: String,
    /// The globs it may write (none: it may not write).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
}

/// How one child of a group ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupResult {
    /// Its place in the group's task list.
    pub index: u32,
    /// Its task id (none: it never started — the race was won or the
    /// group timed out first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_id: Option<String>,
    /// Its status (`aborted` for one that never started).
    pub status: TaskStatus,
    /// Its accepted result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why it ended without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tokens it used (its own subtasks' included).
    pub usage: Usage,
    /// What it cost (its own subtasks' included).
    pub cost: f64,
}

/// A parallel group, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupRecord {
    /// Its id.
    pub id: String,
    /// The task that started it (and waits for it).
    pub coordinator: String,
    /// The coordinator's tool call that started it.
    pub call_id: String,
    /// All or race.
    pub strategy: GroupStrategy,
    /// Where it stands.
    pub status: GroupStatus,
    /// At most this many of its children run at once.
    pub max_concurrency: u32,
    /// Its time limit in seconds, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// The children asked for.
    pub tasks: Vec<GroupTask>,
    /// Each child's task id, in the order of `tasks` (none: not started).
    pub children: Vec<Option<String>>,
    /// How each child ended, once the group has (in the order of `tasks`).
    #[serde(default)]
    pub results: Vec<GroupResult>,
    /// When it started (ms since the epoch).
    pub created_at: i64,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
}
