//! The task status machine, as in Roo Code.

use serde::{Deserialize, Serialize};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The loop is running (streaming, executing tools).
    Running,
    /// Waiting for the user to approve a tool call.
    WaitingForApproval,
    /// Waiting for the user to answer a question or review a result.
    WaitingForInput,
    /// Stopped without finishing; `roost resume` continues it.
    Paused,
    /// The user accepted the result.
    Completed,
    /// The user (or Ctrl-C) stopped it.
    Aborted,
    /// An error ended it.
    Failed,
}

impl TaskStatus {
    /// Stable text form (stored in the database).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::WaitingForApproval => "waiting_for_approval",
            Self::WaitingForInput => "waiting_for_input",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Aborted => "aborted",
            Self::Failed => "failed",
        }
    }

    /// Parse the stored text form.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "waiting_for_approval" => Self::WaitingForApproval,
            "waiting_for_input" => Self::WaitingForInput,
            "paused" => Self::Paused,
            "completed" => Self::Completed,
            "aborted" => Self::Aborted,
            "failed" => Self::Failed,
            _ => return None,
        })
    }

    /// Whether the task is over (resume refuses completed tasks).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
