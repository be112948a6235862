//! The typed event stream of a task, as every front-end receives it (CLI
//! rendering, `--json` NDJSON, HTTP SSE): each event in an [`Envelope`]
//! with its task id and, for a recorded event, its position in the task's
//! log, so a front-end that reconnects asks for what came after it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::asks::Ask;
use crate::records::HookVerdict;
use crate::task::{TaskStatus, Usage};
use crate::tool::ToolError;

/// One thing that happened in a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TaskEvent {
    /// The task exists (persisted).
    TaskCreated {
        /// Mode slug.
        mode: String,
        /// Workspace path.
        workspace: String,
    },
    /// The loop started or resumed.
    TaskStarted {
        /// Whether this is a resume of earlier history.
        resumed: bool,
    },
    /// A model request is being made (live only, like the streamed text).
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
    /// The workspace was snapshotted before this turn's first change.
    CheckpointSaved {
        /// The checkpoint.
        checkpoint: crate::checkpoints::Checkpoint,
    },
    /// Output of a command while it runs, as it comes (live only, like
    /// the streamed text: the call's result holds what the model got, and
    /// `read_command_output` the whole).
    CommandOutput {
        /// Call id.
        id: String,
        /// Text, whole characters.
        chunk: String,
    },
    /// A complete assistant message, now durable.
    MessageFinal {
        /// Assistant text of the message.
        text: String,
    },
    /// What the model request that wrote the message used (durable with
    /// it): how full the context is, what it cost.
    RequestUsage {
        /// The request's tokens (prompt tokens exclude cached ones).
        usage: Usage,
        /// Its cost in USD.
        cost: f64,
        /// The model's context window, in tokens.
        context_window: u64,
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
    /// A call was approved (by policy or the user). A person's approval
    /// is recorded; a policy's is live only, like the request's start: the
    /// log's requested call and its result already say all of it, and a
    /// call the policy lets through starts without waiting on a commit.
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
        /// Output text (`{"ok": …}`), or the error (`{"error": …}`).
        #[serde(with = "call_result")]
        #[schemars(with = "call_result::CallResult")]
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
        /// What it decided.
        decision: HookVerdict,
        /// The reason, question, new arguments or failure.
        detail: String,
    },
    /// The task waits for the user.
    AskRequired {
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
    /// The task delegated work to a subtask and waits for it.
    SubtaskStarted {
        /// The subtask's id.
        child_id: String,
        /// Its mode.
        mode: String,
        /// Its instructions.
        message: String,
    },
    /// A subtask the task waited for ended; its result (or why it ended)
    /// went back to the task.
    SubtaskFinished {
        /// The subtask's id.
        child_id: String,
        /// How it ended.
        status: TaskStatus,
        /// Its accepted result, or why it ended without one.
        result: String,
        /// Tokens it used (with its own subtasks').
        usage: Usage,
        /// What it cost (with its own subtasks').
        cost: f64,
    },
    /// The task started a parallel group of subtasks and waits for it.
    GroupStarted {
        /// The group's id.
        group_id: String,
        /// All or race.
        strategy: crate::groups::GroupStrategy,
        /// How many children it has.
        children: u32,
    },
    /// A child of a parallel group ended (or was never started).
    GroupChildFinished {
        /// The group's id.
        group_id: String,
        /// The child's place in the group.
        index: u32,
        /// Its task id, when it started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        child_id: Option<String>,
        /// How it ended.
        status: TaskStatus,
    },
    /// A parallel group ended; its result went back to the task.
    GroupFinished {
        /// The group's id.
        group_id: String,
        /// How it ended.
        status: crate::groups::GroupStatus,
        /// Tokens its children used.
        usage: Usage,
        /// What they cost.
        cost: f64,
    },
    /// The model loaded a skill's instructions or one of its files.
    SkillLoaded {
        /// The skill.
        skill: String,
        /// The file inside its folder, when not its `SKILL.md`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// Whose it is: `project` or `global`.
        origin: String,
    },
}

impl TaskEvent {
    /// Whether the event is recorded in the task's log. The live signals
    /// of a request in flight are not (the request started, the streamed
    /// text and arguments): the reply that follows them is, with the
    /// request's UI row. Nor are a running command's output (its result
    /// is) and a policy's approval of a call (the requested call before it
    /// and its result after it are; a person's approval is recorded).
    pub fn is_recorded(&self) -> bool {
        !matches!(
            self,
            Self::RequestStarted { .. }
                | Self::MessagePartial { .. }
                | Self::ToolCallPartial { .. }
                | Self::CommandOutput { .. }
                | Self::ToolCallApproved { auto: true, .. }
        )
    }
}

/// An event as published: the task it belongs to and, for a recorded
/// event, its position in that task's log (1-based, no gaps). Serialised
/// flat: `{"task_id": …, "seq": …, "event": "…", …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Envelope {
    /// Task the event belongs to.
    pub task_id: String,
    /// Position in the task's event log; `None` for the live signals
    /// (and on a bus with no log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    /// What happened.
    #[serde(flatten)]
    pub event: TaskEvent,
}

/// A call's result on the wire as `{"ok": text}` or `{"error": {…}}`,
/// the shape `roost tool call --json` prints too. Events recorded before
/// (`{"Ok": …}`, `{"Err": …}`) still read.
mod call_result {
    use schemars::JsonSchema;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::tool::ToolError;

    /// The wire form.
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum CallResult {
        /// The output text.
        #[serde(alias = "Ok")]
        Ok(String),
        /// The error.
        #[serde(alias = "Err")]
        Error(ToolError),
    }

    #[derive(Serialize)]
    #[serde(rename_all = "lowercase")]
    enum Borrowed<'a> {
        Ok(&'a str),
        Error(&'a ToolError),
    }

    pub fn serialize<S: Serializer>(
        r: &Result<String, ToolError>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match r {
            Ok(t) => Borrowed::Ok(t),
            Err(e) => Borrowed::Error(e),
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Result<String, ToolError>, D::Error> {
        Ok(match CallResult::deserialize(d)? {
            CallResult::Ok(t) => Ok(t),
            CallResult::Error(e) => Err(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ErrorCode;

    /// Results are `{"ok": …}` / `{"error": …}` on the wire; events
    /// recorded in the older `{"Ok": …}` form still read.
    #[test]
    fn call_results_read_and_write_lowercase() {
        let ok = TaskEvent::ToolCallResult {
            id: "c1".into(),
            tool: "read_file".into(),
            result: Ok("text".into()),
            diff: None,
        };
        let line = serde_json::to_string(&ok).expect("json");
        assert!(line.contains(r#""result":{"ok":"text"}"#), "{line}");
        let err = TaskEvent::ToolCallResult {
            id: "c1".into(),
            tool: "read_file".into(),
            result: Err(ToolError::new(ErrorCode::NotFound, "gone")),
            diff: None,
        };
        let line = serde_json::to_string(&err).expect("json");
        assert!(line.contains(r#""result":{"error":{"#), "{line}");
        assert_eq!(
            serde_json::from_str::<TaskEvent>(&line).expect("reads"),
            err
        );
        let old = r#"{"event":"tool_call_result","id":"c1","tool":"read_file","result":{"Ok":"text"},"diff":null}"#;
        assert_eq!(
            serde_json::from_str::<TaskEvent>(old).expect("old form"),
            ok
        );
    }
}
