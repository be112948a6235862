//! The typed event stream of a task: everything a front-end shows (CLI
//! spinner and diffs, `--json` NDJSON, HTTP SSE) comes from here. Events are
//! published after the state they describe is durable.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::asks::Ask;
use crate::llm::Usage;
use crate::tools::ToolError;

/// Capacity of each task's broadcast channel; a subscriber that lags further
/// behind skips events (it can reload state from the store).
const CHANNEL_CAPACITY: usize = 1024;

/// One thing that happened in a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TaskEvent {
    /// The task exists (persisted).
    TaskCreated {
        /// Task id.
        task_id: String,
        /// Mode slug.
        mode: String,
        /// Workspace path.
        workspace: String,
    },
    /// The loop started or resumed.
    TaskStarted {
        /// Task id.
        task_id: String,
        /// Whether this is a resume of earlier history.
        resumed: bool,
    },
    /// A model request is being made (turn number, attempt).
    RequestStarted {
        /// Turn number (1-based).
        turn: u32,
    },
    /// A provider error that will be retried.
    Retrying {
        /// Attempt that failed.
        attempt: u32,
        /// Delay before the next attempt, in ms.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
    /// Streaming text from the model (not yet durable).
    MessagePartial {
        /// Text delta.
        delta: String,
    },
    /// Streaming arguments of a tool call (best-effort partial parse).
    ToolCallPartial {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Arguments parsed so far.
        args: serde_json::Value,
    },
    /// A complete assistant message, now durable.
    MessageFinal {
        /// Assistant text of the message.
        text: String,
    },
    /// The model asked for a tool call.
    ToolCallRequested {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Arguments.
        args: serde_json::Value,
    },
    /// A call was approved (by policy or the user).
    ToolCallApproved {
        /// Call id.
        id: String,
        /// Whether a policy (not a person) approved it.
        auto: bool,
    },
    /// A call was denied.
    ToolCallDenied {
        /// Call id.
        id: String,
        /// User feedback, if any.
        feedback: Option<String>,
    },
    /// A call finished (result durable in history).
    ToolCallResult {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Output text, or the error.
        result: Result<String, ToolError>,
        /// Unified diff of the files the call changed, if any.
        diff: Option<String>,
    },
    /// A mode hook decided on a call (anything but a plain allow).
    HookDecided {
        /// Call id.
        id: String,
        /// Hook name.
        hook: String,
        /// `deny`, `ask`, `rewrite` or `failed`.
        decision: String,
        /// The reason, question, new arguments or failure.
        detail: String,
    },
    /// The task waits for the user.
    AskRequired {
        /// Task that asks.
        task_id: String,
        /// Id to answer it by.
        ask_id: String,
        /// The question in one line.
        text: String,
        /// What is asked (its `kind` says which question it is).
        ask: Ask,
    },
    /// The task completed.
    Completed {
        /// The completion result.
        result: String,
        /// Token totals.
        usage: Usage,
        /// Cost in USD.
        cost: f64,
    },
    /// The task was aborted.
    Aborted {
        /// Why.
        reason: String,
    },
    /// The task paused at a limit (`--max-turns`); it can be resumed.
    Paused {
        /// Why.
        reason: String,
    },
    /// The task failed.
    Failed {
        /// Why.
        error: String,
    },
    /// The task changed mode.
    ModeSwitched {
        /// New mode slug.
        mode: String,
    },
    /// Something the user should know that did not stop the task (an
    /// invalid mode file, …).
    Warning {
        /// What happened.
        message: String,
    },
    /// The todo list changed.
    TodosUpdated {
        /// The list as markdown.
        markdown: String,
    },
}

/// Per-task broadcast of [`TaskEvent`]s. Cheap to clone; publishing with no
/// subscriber is fine.
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<TaskEvent>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    /// A new bus.
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        Self { tx }
    }

    /// Publish an event to every current subscriber.
    pub fn publish(&self, event: TaskEvent) {
        let _ = self.tx.send(event);
    }

    /// Receive events published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<TaskEvent> {
        self.tx.subscribe()
    }
}
