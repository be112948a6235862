//! A task's todo list (Roo's `update_todo_list`), as stored.

use serde::{Deserialize, Serialize};

/// State of one todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoState {
    /// `[ ]`
    Pending,
    /// `[-]`
    InProgress,
    /// `[x]`
    Completed,
}

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Item text.
    pub text: String,
    /// State.
    pub state: TodoState,
}
