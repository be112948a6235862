//! What a person is shown of a task, decided once for every front-end
//! that shows one (the CLI's text, an editor over ACP): the engine's
//! events become display items — the reply as it streams, each tool call
//! with its kind, locations and status (pending → in progress → completed
//! or failed) and what it showed (a command's output as it came, the rest
//! of its result, its diff, a denial, a hook's decision), the todo list as
//! a plan, questions, notes and how the task ended.
//!
//! A [`Display`] remembers what it already showed, so nothing is shown
//! twice: a command's streamed output is not repeated with its result, a
//! denied call's error result (which is for the model) is not shown, an
//! edit whose diff the person approved from its preview does not show that
//! diff again, and a call that updated the todo list is shown as the plan.
//! The wire formats (`--json`, SSE) stay the events themselves.

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::asks::Ask;
use crate::checkpoints::Checkpoint;
use crate::events::{Envelope, TaskEvent};
use crate::groups::{GroupStatus, GroupStrategy};
use crate::records::HookVerdict;
use crate::task::{TaskStatus, Usage};
use crate::todos::{TodoItem, parse_todos};
use crate::tool::{ToolError, ToolGroup, ToolSpec};

/// What kind of work a call does, as an editor groups and iconifies it
/// (the Agent Client Protocol's tool kinds Roost's groups map to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// Reads the workspace.
    Read,
    /// Changes files.
    Edit,
    /// Runs a command.
    Execute,
    /// Reaches the network.
    Fetch,
    /// Plans, delegates or switches modes: the task's own bookkeeping.
    Think,
    /// Anything else (a tool the display has no spec of).
    Other,
}

impl CallKind {
    /// The kind of `spec`'s calls, from its group and annotations.
    pub fn of(spec: &ToolSpec) -> Self {
        match spec.group {
            ToolGroup::Read | ToolGroup::Mcp if spec.annotations.open_world => Self::Fetch,
            ToolGroup::Read => Self::Read,
            ToolGroup::Edit => Self::Edit,
            ToolGroup::Command => Self::Execute,
            ToolGroup::Browser => Self::Fetch,
            ToolGroup::Mcp => Self::Other,
            ToolGroup::Modes => Self::Think,
        }
    }
}

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// Asked for; not yet approved.
    Pending,
    /// Approved and running.
    InProgress,
    /// Done.
    Completed,
    /// Refused, denied or failed.
    Failed,
}

/// A call as it is first shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallView {
    /// The model's call id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// A title for people (the tool's own, else its name).
    pub title: String,
    /// What kind of work it does.
    pub kind: CallKind,
    /// The workspace paths it names (its declared path arguments).
    pub locations: Vec<String>,
    /// Its arguments.
    pub args: Value,
}

/// Something a call showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "content", rename_all = "snake_case")]
pub enum CallContent {
    /// A running command's output, as it comes.
    Output {
        /// Whole characters of it.
        chunk: String,
    },
    /// The call's result text. For a call whose output was shown as it
    /// came, only what follows that output (exit status, files changed).
    Result {
        /// The text.
        text: String,
        /// Whether the output before it was shown as it came.
        after_output: bool,
    },
    /// The change it made, as a unified diff.
    Diff {
        /// The diff.
        diff: String,
    },
    /// Why it failed.
    Error {
        /// The error.
        error: ToolError,
    },
    /// A person refused it.
    Denied {
        /// The tool.
        tool: String,
        /// What the person said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// A mode hook decided on it (anything but a plain allow).
    Hook {
        /// The hook.
        hook: String,
        /// What it decided.
        decision: HookVerdict,
        /// The reason, question, new arguments or failure.
        detail: String,
    },
}

/// Something beside the conversation the person should see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum Note {
    /// The workspace was snapshotted before a turn's first change.
    Checkpoint {
        /// The checkpoint.
        checkpoint: Checkpoint,
    },
    /// A provider error, retried.
    Retrying {
        /// The attempt that failed.
        attempt: u32,
        /// Delay before the next, in ms.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
    /// The model loaded a skill or one of its files.
    Skill {
        /// The skill.
        skill: String,
        /// The file, when not its `SKILL.md`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// `project` or `global`.
        origin: String,
    },
    /// A problem that did not stop the task.
    Warning {
        /// What happened.
        message: String,
    },
    /// Work was delegated to a subtask.
    SubtaskStarted {
        /// The subtask.
        child_id: String,
        /// Its mode.
        mode: String,
        /// Its instructions.
        message: String,
    },
    /// A subtask ended.
    SubtaskFinished {
        /// The subtask.
        child_id: String,
        /// How it ended.
        status: TaskStatus,
        /// Its result, or why it ended without one.
        result: String,
    },
    /// A parallel group of subtasks started.
    GroupStarted {
        /// The group.
        group_id: String,
        /// All or race.
        strategy: GroupStrategy,
        /// How many children.
        children: u32,
    },
    /// A parallel group ended.
    GroupFinished {
        /// The group.
        group_id: String,
        /// How it ended.
        status: GroupStatus,
        /// What its children cost.
        cost: f64,
    },
}

/// How a task's run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "ending", rename_all = "snake_case")]
pub enum Ending {
    /// It completed.
    Completed {
        /// Its result.
        result: String,
        /// Tokens.
        usage: Usage,
        /// Cost in USD.
        cost: f64,
    },
    /// It paused at its turn limit; it can go on.
    Paused {
        /// Why.
        reason: String,
    },
    /// It was stopped (resumable).
    Aborted {
        /// Why.
        reason: String,
    },
    /// It failed.
    Failed {
        /// Why.
        error: String,
    },
}

/// One thing to show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum DisplayItem {
    /// Streamed text of the model's reply.
    MessageChunk {
        /// The text.
        text: String,
    },
    /// The model's reply is whole.
    MessageDone {
        /// All of it.
        text: String,
        /// Whether its chunks were shown (a replay shows the text).
        streamed: bool,
    },
    /// A call the model asked for.
    Call {
        /// The call.
        call: CallView,
    },
    /// What became of a call.
    CallUpdate {
        /// Its id.
        id: String,
        /// Where it stands now, when that changed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<CallStatus>,
        /// What it showed.
        content: Vec<CallContent>,
    },
    /// The todo list, whole.
    Plan {
        /// Its items.
        entries: Vec<TodoItem>,
        /// As markdown.
        markdown: String,
    },
    /// A question for the person.
    Question {
        /// Id to answer it by.
        ask_id: String,
        /// The question in one line.
        text: String,
        /// What is asked.
        ask: Ask,
    },
    /// What a model request used: how full the context is, what it cost.
    Usage {
        /// The request's tokens.
        usage: Usage,
        /// Its cost in USD.
        cost: f64,
        /// The model's context window, in tokens.
        context_window: u64,
    },
    /// The task changed mode.
    ModeChanged {
        /// The new mode.
        mode: String,
    },
    /// A note beside the conversation.
    Note {
        /// The note.
        note: Note,
    },
    /// The run ended.
    Ended {
        /// How.
        ending: Ending,
    },
}

/// Most of a command's streamed output kept to find where its result goes
/// on: a long output keeps its end, so the display's memory stays bounded.
const STREAMED_KEPT: usize = 64 * 1024;

/// What the display knows of a tool from its spec.
#[derive(Debug, Clone)]
struct ToolFacts {
    kind: CallKind,
    title: Option<String>,
    path_args: Vec<String>,
}

/// A call between its request and its result.
#[derive(Debug, Default)]
struct OpenCall {
    tool: String,
    /// The tail of its streamed output.
    output: String,
    /// Whether any output streamed.
    streamed: bool,
    /// A person denied it (its error result is for the model).
    denied: bool,
    /// The todo list shown while it was open: a result that only
    /// repeats it was shown as the plan.
    plan: Option<String>,
}

/// The mapping from one stream of events (a task and the subtasks it
/// follows) to display items. See the module docs.
#[derive(Debug, Default)]
pub struct Display {
    tools: HashMap<String, ToolFacts>,
    calls: HashMap<(String, String), OpenCall>,
    /// Diffs a person saw in a question.
    previewed: HashSet<String>,
    /// Tasks whose reply is streaming.
    streaming: HashSet<String>,
}

impl Display {
    /// A display that knows these tools (a tool it does not know is shown
    /// as kind `other`, without locations).
    pub fn new<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        let mut d = Self::default();
        d.learn(specs);
        d
    }

    /// Learn more tools (a task's MCP or skill tools).
    pub fn learn<'a>(&mut self, specs: impl IntoIterator<Item = &'a ToolSpec>) {
        for spec in specs {
            self.tools.insert(
                spec.name.clone(),
                ToolFacts {
                    kind: CallKind::of(spec),
                    title: spec.annotations.title.clone(),
                    path_args: spec.path_args.clone(),
                },
            );
        }
    }

    /// What `envelope` shows (often nothing, sometimes more than one item).
    pub fn items(&mut self, envelope: &Envelope) -> Vec<DisplayItem> {
        let task = envelope.task_id.as_str();
        match &envelope.event {
            TaskEvent::TaskCreated { .. }
            | TaskEvent::TaskStarted { .. }
            | TaskEvent::RequestStarted { .. }
            | TaskEvent::ToolCallPartial { .. }
            | TaskEvent::GroupChildFinished { .. } => Vec::new(),
            TaskEvent::MessagePartial { delta } => {
                self.streaming.insert(task.to_owned());
                vec![DisplayItem::MessageChunk {
                    text: delta.clone(),
                }]
            }
            TaskEvent::MessageFinal { text } => vec![DisplayItem::MessageDone {
                text: text.clone(),
                streamed: self.streaming.remove(task),
            }],
            TaskEvent::RequestUsage {
                usage,
                cost,
                context_window,
            } => vec![DisplayItem::Usage {
                usage: *usage,
                cost: *cost,
                context_window: *context_window,
            }],
            TaskEvent::ToolCallRequested { id, tool, args } => {
                vec![DisplayItem::Call {
                    call: self.open(task, id, tool, args),
                }]
            }
            TaskEvent::ToolCallApproved { id, .. } => {
                vec![update(id, Some(CallStatus::InProgress), Vec::new())]
            }
            TaskEvent::CommandOutput { id, chunk } => {
                let call = self.call(task, id);
                keep_tail(&mut call.output, chunk);
                call.streamed = true;
                vec![update(
                    id,
                    None,
                    vec![CallContent::Output {
                        chunk: chunk.clone(),
                    }],
                )]
            }
            TaskEvent::ToolCallDenied { id, feedback } => {
                let call = self.call(task, id);
                call.denied = true;
                let tool = call.tool.clone();
                vec![update(
                    id,
                    Some(CallStatus::Failed),
                    vec![CallContent::Denied {
                        tool,
                        feedback: feedback.clone(),
                    }],
                )]
            }
            TaskEvent::HookDecided {
                id,
                hook,
                decision,
                detail,
            } => vec![update(
                id,
                None,
                vec![CallContent::Hook {
                    hook: hook.clone(),
                    decision: *decision,
                    detail: detail.clone(),
                }],
            )],
            TaskEvent::ToolCallResult {
                id, result, diff, ..
            } => self.result(task, id, result, diff.as_deref()),
            TaskEvent::TodosUpdated { markdown } => {
                // A call that changed the list is shown as the plan.
                for ((t, _), call) in &mut self.calls {
                    if t == task {
                        call.plan = Some(markdown.clone());
                    }
                }
                vec![DisplayItem::Plan {
                    entries: parse_todos(markdown).unwrap_or_default(),
                    markdown: markdown.clone(),
                }]
            }
            TaskEvent::AskRequired { ask_id, text, ask } => {
                if let Ask::Tool {
                    preview: Some(p), ..
                }
                | Ask::Scope {
                    preview: Some(p), ..
                } = ask
                {
                    self.previewed.insert(p.clone());
                }
                vec![DisplayItem::Question {
                    ask_id: ask_id.clone(),
                    text: text.clone(),
                    ask: ask.clone(),
                }]
            }
            TaskEvent::ModeSwitched { mode } => {
                vec![DisplayItem::ModeChanged { mode: mode.clone() }]
            }
            TaskEvent::CheckpointSaved { checkpoint } => note(Note::Checkpoint {
                checkpoint: checkpoint.clone(),
            }),
            TaskEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => note(Note::Retrying {
                attempt: *attempt,
                delay_ms: *delay_ms,
                reason: reason.clone(),
            }),
            TaskEvent::SkillLoaded {
                skill,
                path,
                origin,
            } => note(Note::Skill {
                skill: skill.clone(),
                path: path.clone(),
                origin: origin.clone(),
            }),
            TaskEvent::Warning { message } => note(Note::Warning {
                message: message.clone(),
            }),
            TaskEvent::SubtaskStarted {
                child_id,
                mode,
                message,
            } => note(Note::SubtaskStarted {
                child_id: child_id.clone(),
                mode: mode.clone(),
                message: message.clone(),
            }),
            TaskEvent::SubtaskFinished {
                child_id,
                status,
                result,
                ..
            } => note(Note::SubtaskFinished {
                child_id: child_id.clone(),
                status: *status,
                result: result.clone(),
            }),
            TaskEvent::GroupStarted {
                group_id,
                strategy,
                children,
            } => note(Note::GroupStarted {
                group_id: group_id.clone(),
                strategy: *strategy,
                children: *children,
            }),
            TaskEvent::GroupFinished {
                group_id,
                status,
                cost,
                ..
            } => note(Note::GroupFinished {
                group_id: group_id.clone(),
                status: *status,
                cost: *cost,
            }),
            TaskEvent::Completed {
                result,
                usage,
                cost,
            } => self.end(
                task,
                Ending::Completed {
                    result: result.clone(),
                    usage: *usage,
                    cost: *cost,
                },
            ),
            TaskEvent::Paused { reason } => self.end(
                task,
                Ending::Paused {
                    reason: reason.clone(),
                },
            ),
            TaskEvent::Aborted { reason } => self.end(
                task,
                Ending::Aborted {
                    reason: reason.clone(),
                },
            ),
            TaskEvent::Failed { error } => self.end(
                task,
                Ending::Failed {
                    error: error.clone(),
                },
            ),
        }
    }

    /// A call the model asked for, remembered until its result.
    fn open(&mut self, task: &str, id: &str, tool: &str, args: &Value) -> CallView {
        let facts = self.tools.get(tool);
        let kind = facts.map_or(CallKind::Other, |f| f.kind);
        let locations = facts
            .map(|f| {
                f.path_args
                    .iter()
                    .filter_map(|a| args.get(a).and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        self.calls.insert(
            (task.to_owned(), id.to_owned()),
            OpenCall {
                tool: tool.to_owned(),
                ..OpenCall::default()
            },
        );
        CallView {
            id: id.to_owned(),
            tool: tool.to_owned(),
            title: facts
                .and_then(|f| f.title.clone())
                .unwrap_or_else(|| tool.to_owned()),
            kind,
            locations,
            args: args.clone(),
        }
    }

    /// The open call `id` of `task` (one the display did not see asked
    /// for, after a reconnect, is opened as unknown).
    fn call(&mut self, task: &str, id: &str) -> &mut OpenCall {
        self.calls
            .entry((task.to_owned(), id.to_owned()))
            .or_default()
    }

    /// A call's result, less what was already shown.
    fn result(
        &mut self,
        task: &str,
        id: &str,
        result: &Result<String, ToolError>,
        diff: Option<&str>,
    ) -> Vec<DisplayItem> {
        let call = self
            .calls
            .remove(&(task.to_owned(), id.to_owned()))
            .unwrap_or_default();
        // The denial was shown; its error result is for the model.
        if call.denied && result.is_err() {
            return Vec::new();
        }
        let mut content = Vec::new();
        let status = match result {
            Ok(text)
                if call
                    .plan
                    .as_deref()
                    .is_some_and(|md| text.trim_end().ends_with(md.trim_end())) =>
            {
                CallStatus::Completed
            }
            Ok(text) => {
                let (text, after_output) = if call.streamed {
                    (after_output(text, &call.output).to_owned(), true)
                } else {
                    (text.clone(), false)
                };
                content.push(CallContent::Result { text, after_output });
                CallStatus::Completed
            }
            Err(error) => {
                content.push(CallContent::Error {
                    error: error.clone(),
                });
                CallStatus::Failed
            }
        };
        // A change approved from its preview is not shown a second time.
        if let Some(d) = diff
            && !self.previewed.remove(d)
        {
            content.push(CallContent::Diff { diff: d.to_owned() });
        }
        vec![update(id, Some(status), content)]
    }

    /// The run of `task` ended: what it left open is forgotten.
    fn end(&mut self, task: &str, ending: Ending) -> Vec<DisplayItem> {
        self.calls.retain(|(t, _), _| t != task);
        self.streaming.remove(task);
        vec![DisplayItem::Ended { ending }]
    }
}

/// A call's update.
fn update(id: &str, status: Option<CallStatus>, content: Vec<CallContent>) -> DisplayItem {
    DisplayItem::CallUpdate {
        id: id.to_owned(),
        status,
        content,
    }
}

/// A note, as the only item.
fn note(note: Note) -> Vec<DisplayItem> {
    vec![DisplayItem::Note { note }]
}

/// Append `chunk` to `kept`, dropping the oldest text beyond
/// [`STREAMED_KEPT`] bytes.
fn keep_tail(kept: &mut String, chunk: &str) {
    kept.push_str(chunk);
    if kept.len() > STREAMED_KEPT {
        let mut from = kept.len() - STREAMED_KEPT / 4;
        while !kept.is_char_boundary(from) {
            from += 1;
        }
        kept.drain(..from);
    }
}

/// What a command's result says beyond the `output` already shown as it
/// streamed: the result holds the output whole, or (a long one) its head
/// and tail; what follows it is the exit status and the files changed.
pub fn after_output<'a>(result: &'a str, output: &str) -> &'a str {
    let out = output.trim_end();
    if out.is_empty() {
        return result;
    }
    if let Some(at) = result.find(out) {
        return result.get(at + out.len()..).unwrap_or_default();
    }
    // Cut in the middle: the result ends the output with its last line.
    let Some(last) = out.lines().last() else {
        return result;
    };
    let mut after = None;
    let mut at = 0;
    for line in result.split_inclusive('\n') {
        at += line.len();
        if line.trim_end_matches(['\n', '\r']) == last {
            after = Some(at);
        }
    }
    after.and_then(|a| result.get(a..)).unwrap_or(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ErrorCode;

    fn spec(name: &str, group: ToolGroup, path_args: &[&str]) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            args_schema: serde_json::json!({}),
            group,
            destructive: group == ToolGroup::Edit,
            path_args: path_args.iter().map(|s| (*s).to_owned()).collect(),
            annotations: Default::default(),
        }
    }

    fn display() -> Display {
        let specs = [
            spec("execute_command", ToolGroup::Command, &[]),
            spec("write_to_file", ToolGroup::Edit, &["path"]),
            spec("update_todo_list", ToolGroup::Modes, &[]),
        ];
        Display::new(&specs)
    }

    fn on(task: &str, event: TaskEvent) -> Envelope {
        Envelope {
            task_id: task.into(),
            seq: None,
            event,
        }
    }

    fn shown(d: &mut Display, events: Vec<TaskEvent>) -> Vec<DisplayItem> {
        events
            .into_iter()
            .flat_map(|e| d.items(&on("t1", e)))
            .collect()
    }

    /// One task's run, as every front-end is shown it.
    #[test]
    fn a_runs_calls_are_shown_once_each_with_kind_status_and_content() {
        let mut d = display();
        let items = shown(
            &mut d,
            vec![
                TaskEvent::TaskStarted { resumed: false },
                TaskEvent::MessagePartial {
                    delta: "Let me look".into(),
                },
                TaskEvent::MessageFinal {
                    text: "Let me look".into(),
                },
                TaskEvent::ToolCallRequested {
                    id: "c1".into(),
                    tool: "execute_command".into(),
                    args: serde_json::json!({"command": "ls"}),
                },
                TaskEvent::ToolCallApproved {
                    id: "c1".into(),
                    auto: true,
                },
                TaskEvent::CommandOutput {
                    id: "c1".into(),
                    chunk: "a.txt\n".into(),
                },
                TaskEvent::ToolCallResult {
                    id: "c1".into(),
                    tool: "execute_command".into(),
                    result: Ok("$ ls\na.txt\n[exit 0]\n".into()),
                    diff: None,
                },
                TaskEvent::ToolCallRequested {
                    id: "c2".into(),
                    tool: "write_to_file".into(),
                    // Keys sorted: the snapshot reads the same whether or not the
                    // build keeps JSON objects in insertion order.
                    args: serde_json::json!({"content": "x", "path": "a.txt"}),
                },
                TaskEvent::AskRequired {
                    ask_id: "a1".into(),
                    text: "write a.txt?".into(),
                    ask: Ask::Tool {
                        tool: "write_to_file".into(),
                        group: ToolGroup::Edit,
                        args: serde_json::json!({"path": "a.txt"}),
                        preview: Some("-\n+x\n".into()),
                        why: None,
                    },
                },
                TaskEvent::ToolCallApproved {
                    id: "c2".into(),
                    auto: false,
                },
                TaskEvent::ToolCallResult {
                    id: "c2".into(),
                    tool: "write_to_file".into(),
                    result: Ok("wrote a.txt".into()),
                    diff: Some("-\n+x\n".into()),
                },
                TaskEvent::ToolCallRequested {
                    id: "c3".into(),
                    tool: "update_todo_list".into(),
                    args: serde_json::json!({"todos": "[x] look"}),
                },
                TaskEvent::TodosUpdated {
                    markdown: "[x] look".into(),
                },
                TaskEvent::ToolCallResult {
                    id: "c3".into(),
                    tool: "update_todo_list".into(),
                    result: Ok("Todo list updated:\n[x] look".into()),
                    diff: None,
                },
                TaskEvent::ToolCallRequested {
                    id: "c4".into(),
                    tool: "some_mcp_tool".into(),
                    args: serde_json::json!({"path": "b"}),
                },
                TaskEvent::ToolCallDenied {
                    id: "c4".into(),
                    feedback: Some("not now".into()),
                },
                TaskEvent::ToolCallResult {
                    id: "c4".into(),
                    tool: "some_mcp_tool".into(),
                    result: Err(ToolError::new(ErrorCode::PermissionDenied, "denied")),
                    diff: None,
                },
                TaskEvent::Completed {
                    result: "done".into(),
                    usage: Usage::default(),
                    cost: 0.0,
                },
            ],
        );
        let json = serde_json::to_string_pretty(&items).expect("json");
        insta::assert_snapshot!(json);
    }

    #[test]
    fn calls_of_two_tasks_with_one_id_do_not_mix() {
        let mut d = display();
        let call = |tool: &str| TaskEvent::ToolCallRequested {
            id: "c1".into(),
            tool: tool.into(),
            args: serde_json::json!({}),
        };
        d.items(&on("parent", call("execute_command")));
        d.items(&on("child", call("write_to_file")));
        d.items(&on(
            "parent",
            TaskEvent::CommandOutput {
                id: "c1".into(),
                chunk: "out\n".into(),
            },
        ));
        // The child's call streamed nothing: its whole result is shown.
        let items = d.items(&on(
            "child",
            TaskEvent::ToolCallResult {
                id: "c1".into(),
                tool: "write_to_file".into(),
                result: Ok("out\nwrote".into()),
                diff: None,
            },
        ));
        assert_eq!(
            items,
            vec![update(
                "c1",
                Some(CallStatus::Completed),
                vec![CallContent::Result {
                    text: "out\nwrote".into(),
                    after_output: false
                }]
            )]
        );
    }

    #[test]
    fn a_reply_not_streamed_says_so() {
        let mut d = display();
        let items = d.items(&on(
            "t1",
            TaskEvent::MessageFinal {
                text: "whole".into(),
            },
        ));
        assert_eq!(
            items,
            vec![DisplayItem::MessageDone {
                text: "whole".into(),
                streamed: false
            }]
        );
    }

    /// What follows a command's output in its result, whether the result
    /// holds the output whole or only its head and tail.
    #[test]
    fn the_rest_of_a_result_follows_its_output() {
        let result = "$ seq 3\n1\n2\n3\n[exit code 0]\nFiles changed (1):\n  created a\n";
        assert_eq!(
            after_output(result, "1\n2\n3\n"),
            "\n[exit code 0]\nFiles changed (1):\n  created a\n"
        );
        let cut = "$ seq 9\n1\n[… 5 lines …]\n9\n[exit code 0]\n";
        assert_eq!(
            after_output(cut, "1\n2\n3\n4\n5\n6\n7\n8\n9\n"),
            "[exit code 0]\n"
        );
        assert_eq!(after_output("x\n", ""), "x\n");
        let mut kept = String::new();
        for _ in 0..100 {
            keep_tail(&mut kept, &"é".repeat(1000));
        }
        assert!(kept.len() <= STREAMED_KEPT && kept.ends_with('é'));
    }
}
