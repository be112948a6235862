//! The HTTP API's bodies (`roost serve`, `/v1`): what a client sends and
//! gets back, beside the events and asks every front-end shares.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::asks::Ask;
use crate::task::{DelegationLimits, TaskRecord};
use crate::tool::ToolGroup;

/// `POST /v1/tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTask {
    /// What to do.
    pub prompt: String,
    /// The workspace: absolute, or relative to the tenant's root; it must
    /// lie inside the tenant's root.
    pub workspace: String,
    /// Mode slug (default `code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// A profile of the server's config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Tool groups approved without asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Vec<ToolGroup>>,
    /// Bounds on the subtasks it may start (they only tighten the
    /// server's `[delegation]` config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<DelegationLimits>,
}

/// A task as the API shows it: its record, and where it stands on this
/// server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskView {
    /// Its record.
    #[serde(flatten)]
    pub task: TaskRecord,
    /// It says it runs, but no process holds it: a crash or a kill
    /// stopped it (resume it). A task the server has just created, or
    /// holds waiting for a slot, is not interrupted.
    pub interrupted: bool,
    /// It waits to start: for a free slot on this server (its concurrency
    /// limit; it starts when a running task ends) or, on a shared store,
    /// for a host to take it from the work queue.
    #[serde(default)]
    pub queued: bool,
}

/// `GET /v1/tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskList {
    /// Newest first.
    pub tasks: Vec<TaskView>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A row of a task's UI history (Roo's say/ask messages).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UiMessage {
    /// Order within the task.
    pub seq: i64,
    /// Time (ms since the epoch).
    pub ts: i64,
    /// `say` or `ask`.
    pub kind: String,
    /// Roo's type (`text`, `tool`, `completion_result`, …).
    pub subtype: String,
    /// Content.
    pub text: String,
}

/// A message of a task's API history (what the model saw).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApiMessageView {
    /// Order within the task.
    pub seq: i64,
    /// `user` or `assistant`.
    pub role: String,
    /// Content blocks (text, tool_use, tool_result), as the store keeps them.
    pub content: Value,
    /// Left out of requests (condensed or truncated), kept.
    pub hidden: bool,
}

/// `POST /v1/tasks/{id}/messages`: a message for the task's next turn
/// (it continues a stopped or completed task).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The words.
    pub text: String,
}

/// `POST /v1/tasks/{id}/checkpoints/{cp}/restore`: what to bring back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreCheckpoint {
    /// Files, conversation, or both (the default).
    #[serde(default)]
    pub mode: crate::checkpoints::RestoreMode,
    /// Also overwrite files someone else changed since the task did.
    #[serde(default)]
    pub force: bool,
}

/// What changed in a task's workspace since one of its checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointDiff {
    /// The checkpoint.
    pub checkpoint: u32,
    /// A summary and the unified diff (git's format).
    pub diff: String,
}

/// An open question of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskView {
    /// Its id, to answer it by.
    pub ask_id: String,
    /// The task asking (the one asked about, or one of its subtasks).
    #[serde(default)]
    pub task_id: String,
    /// `tool`, `followup`, `completion`, `scope`, `hook`, `guidance`.
    pub kind: String,
    /// The question in one line.
    pub question: String,
    /// The whole question (for an edit, with its diff preview).
    pub ask: Ask,
    /// Asked at (ms since the epoch).
    pub created_at: i64,
}

/// `POST /v1/tasks/{id}/asks/{ask_id}`: a person's typed decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Run it, and every call of its tool group for the rest of the task.
    ApproveForTask,
    /// Do not run it; the feedback goes to the model.
    Deny {
        /// What to do instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// Words: a follow-up's answer, guidance, or feedback on a result.
    Answer {
        /// The words.
        text: String,
    },
    /// Accept the result.
    Accept,
}

/// What `POST /v1/tasks/{id}/asks/{ask_id}` answers: the question that
/// was answered, the decision recorded for it, and the task as it stands
/// just after (its loop takes the answer next: a client need not ask
/// again what happened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskAnswered {
    /// The question's id.
    pub ask_id: String,
    /// The task that asked it.
    pub task_id: String,
    /// `tool`, `followup`, `completion`, `scope`, `hook`, `guidance`.
    pub kind: String,
    /// The question in one line.
    pub question: String,
    /// The decision recorded for it.
    pub decision: Decision,
    /// The task that asked it, as it stands now.
    pub task: TaskView,
}

/// `GET /v1/me`: who the request's token acts for, so a client can say
/// who is signed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Me {
    /// The tenant (`local` on a server without tokens).
    pub tenant: String,
    /// The tenant's workspace root: workspaces are named inside it.
    pub root: String,
    /// Whether the server asks for tokens (false: `--no-auth`, loopback
    /// only).
    pub auth: bool,
}

/// A model profile of the server's config, as `GET /v1/profiles` lists
/// it: what a task may name as its `profile`. Only names and models; a
/// profile's keys, URLs and files stay on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileView {
    /// Its name (a task's `profile`).
    pub name: String,
    /// Its provider (`openai`, `anthropic`, `scripted`), when it names
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Its model, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tasks that name no profile use it.
    pub default: bool,
}

/// `GET /v1/health`, `GET /v1/ready`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// The server's version.
    pub version: String,
}

/// A tool as `GET /v1/tools` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolView {
    /// Its name.
    pub name: String,
    /// Its group.
    pub group: ToolGroup,
    /// Who provides it (`host`, a plugin's name, `skill`).
    pub provider: String,
    /// What it does.
    pub description: String,
}

/// A mode as `GET /v1/modes` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModeView {
    /// Slug.
    pub slug: String,
    /// Name.
    pub name: String,
    /// Where it comes from (`builtin`, `global`, `project`).
    pub source: String,
}

/// An installed plugin as `GET /v1/plugins` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PluginView {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Whether tasks get its tools.
    pub enabled: bool,
    /// The trusted key that signed it (empty: unsigned).
    pub signer: String,
    /// Its tools' names.
    pub tools: Vec<String>,
}
