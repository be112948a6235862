//! What runs a tool. Every kind — a host-native handler, a WebAssembly
//! component, and later an MCP server's tool, a skill's entry, a command —
//! is a [`ToolExecutor`], and the one dispatch (`crate::call`) runs each the
//! same way: the gates, the mode's hooks, the approval, a write session
//! when the call [`mutates`](ToolExecutor::mutates), the executor, then the
//! after stage (post-tool hooks, diff, trace, result). An executor only
//! runs its call; what it changes in the task beyond its result it returns
//! as an [`Effect`], which the loop applies (nothing below the loop calls
//! back up into it).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::access::Access;
use crate::call::change_set::ChangeSet;
use crate::intents::{Intent, Scope, TraceEntry};
use crate::modes::Mode;
use crate::skills::SkillFocus;
use crate::turn::{Ctx, RunState, Services, TaskError};
use roost_protocol::{ErrorCode, ToolError, ToolGroup, ToolOutput, ToolSpec, UiSubtype, Usage};
use roost_sandbox::plugins::{LoadedPlugin, NetworkRecord};

/// Name shown as the provider of host-native tools.
pub const HOST: &str = "host";

/// What kind of thing runs a tool: telemetry's `roost.tool.kind` (and,
/// from it, `gen_ai.tool.type`), so a dashboard can tell a sandboxed
/// component from an MCP server or a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// The host runs it itself.
    Native,
    /// A WebAssembly component.
    Component,
    /// An MCP server's tool (or the host's way to one).
    Mcp,
    /// A skill's instructions or script.
    Skill,
    /// A native command under the OS sandbox.
    Command,
    /// A delegation to subtasks.
    Subtask,
}

impl ToolKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Component => "component",
            Self::Mcp => "mcp",
            Self::Skill => "skill",
            Self::Command => "command",
            Self::Subtask => "subtask",
        }
    }

    /// `gen_ai.tool.type`: `extension` for what a third party provides
    /// (a component, an MCP server), `function` for the rest.
    pub fn gen_ai_type(self) -> &'static str {
        match self {
            Self::Component | Self::Mcp => "extension",
            _ => "function",
        }
    }
}

/// What a call needs from the approval gate before it may run.
#[derive(Debug)]
pub enum Needs {
    /// Nothing: it runs (it talks to the person itself, or changes only
    /// the task's notes).
    Nothing,
    /// Approval under this group: the policy's, or a person's.
    Approval(ToolGroup),
    /// A person's approval under this group, whatever the policy says
    /// (a command no rule allows): with no one to ask, it does not run.
    Person(ToolGroup, String),
    /// It cannot run: this is its result.
    Refused(Box<Outcome>),
}

/// One call, past every gate, as its executor gets it.
pub struct Invocation<'a> {
    /// The services the task runs with.
    pub agent: &'a Services,
    /// The task.
    pub ctx: &'a Ctx<'a>,
    /// Its mode, intent and gate memory (read-only: changes are effects).
    pub state: &'a RunState,
    /// The model's call id.
    pub call_id: &'a str,
    /// The arguments, normalised and checked.
    pub args: &'a Value,
    /// The workspace-relative directories the call may write (its write
    /// session's roots); empty for a call that does not mutate.
    pub write_roots: &'a [PathBuf],
    /// What the call changes, as it was before it ran: an executor that
    /// reports the files it changed asks it once its work is done.
    pub changes: &'a ChangeSet,
    /// The most the call may be granted.
    pub access: &'a Access,
    /// Whether other calls of its message run at the same time (a
    /// component call then takes a runtime worker of its own).
    pub alongside: bool,
}

/// A call's dry run, for the person deciding on it.
pub struct PreviewCall<'a> {
    /// The services the task runs with.
    pub agent: &'a Services,
    /// The task.
    pub ctx: &'a Ctx<'a>,
    /// The arguments.
    pub args: &'a Value,
}

/// What a call changes in its task besides its result; the loop applies it.
#[derive(Debug, Clone)]
pub enum Effect {
    /// The person accepted this result: the task is complete.
    Complete(String),
    /// Stop the task after this call, with this reason.
    Abort(String),
    /// The task continues in this mode.
    SwitchMode(Box<Mode>),
    /// The task works under this intent from now on.
    SelectIntent(Box<(Intent, Scope)>),
    /// The task follows this skill from now on (`None`: one that limits
    /// no tools).
    FollowSkill(Option<SkillFocus>),
    /// These deferred tools are offered to the task from now on
    /// (`search_tools` found them).
    Discover(Vec<String>),
}

/// What running a call gave.
#[derive(Debug)]
pub struct Outcome {
    /// The tool's output, or its error.
    pub result: Result<ToolOutput, ToolError>,
    /// Whether the error is a mistake of the model's (counts towards the
    /// mistake limit) rather than a refusal or a failure.
    pub mistake: bool,
    /// What else the call changes in the task.
    pub effect: Option<Effect>,
    /// The call's UI row (subtype, text), when it is not the default (its
    /// output's preview, or its error).
    pub ui_row: Option<(UiSubtype, String)>,
    /// Lines for the model after the output (why the host refused a
    /// request the tool made, …).
    pub notes: Vec<String>,
    /// Trace entries of the call (its outgoing requests, …), recorded with
    /// its result and appended to the trace once the result is durable.
    pub trace: Vec<TraceEntry>,
    /// Tokens and cost spent on the call's behalf (a subtask's), added to
    /// the task's totals in the step that records the result.
    pub spent: Option<(Usage, f64)>,
    /// The mutation trace's line about the call (what a command ran and
    /// how it ended); the files it changed are the dispatch's to find.
    pub detail: Option<String>,
    /// The requests it sent out (a component's), credentials redacted:
    /// a caller outside a task shows them.
    pub network: Vec<NetworkRecord>,
}

impl Outcome {
    /// A plain successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        Self::of(Ok(ToolOutput::text(text)))
    }

    /// A failure of the call (not the model's mistake).
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::of(Err(ToolError::new(code, message)))
    }

    /// The model's mistake: wrong arguments, an unknown name; the model
    /// fixes it.
    pub fn mistake(message: impl Into<String>) -> Self {
        Self {
            mistake: true,
            ..Self::error(ErrorCode::InvalidArgs, message)
        }
    }

    /// The result as the tool gave it.
    pub fn of(result: Result<ToolOutput, ToolError>) -> Self {
        Self {
            result,
            mistake: false,
            effect: None,
            ui_row: None,
            notes: Vec::new(),
            trace: Vec::new(),
            spent: None,
            detail: None,
            network: Vec::new(),
        }
    }

    /// With this effect on the task.
    pub fn with_effect(mut self, effect: Effect) -> Self {
        self.effect = Some(effect);
        self
    }

    /// With tokens and cost spent on the call's behalf.
    pub fn with_spent(mut self, usage: Usage, cost: f64) -> Self {
        self.spent = Some((usage, cost));
        self
    }

    /// With this UI row.
    pub fn with_ui_row(mut self, subtype: UiSubtype, text: impl Into<String>) -> Self {
        self.ui_row = Some((subtype, text.into()));
        self
    }
}

/// A tool the host can run: its spec, what a call of it needs, and how it
/// runs. See the module docs.
#[async_trait::async_trait]
pub trait ToolExecutor: Send + Sync {
    /// What the model is told about it.
    fn spec(&self) -> &ToolSpec;

    /// Who provides it: [`HOST`](super::HOST), a plugin's name, an MCP
    /// server's.
    fn provider(&self) -> &str;

    /// What kind of thing runs it (for telemetry).
    fn kind(&self) -> ToolKind {
        ToolKind::Native
    }

    /// Whether every mode offers it whatever its groups (the host-native
    /// tools that talk to the person or steer the task).
    fn always_available(&self) -> bool {
        false
    }

    /// Whether it must be the only call of its message (`new_task`: the
    /// task waits on it); calls after it in the same message are not run.
    fn exclusive(&self) -> bool {
        false
    }

    /// Whether it is offered only where intents are on (the tools that
    /// work with intents).
    fn needs_intents(&self) -> bool {
        false
    }

    /// Whether it is left out of the tools offered until `search_tools`
    /// finds it (an MCP tool, when the servers' definitions would crowd
    /// the context window).
    fn deferred(&self) -> bool {
        false
    }

    /// Whether this call (`args`, in `state`) may change the workspace: it
    /// then needs an active intent (where intents are on) and runs in a
    /// write session (a lease on its roots, a guard that undoes what its
    /// scope does not allow) after the turn's checkpoint. Per call, not
    /// per tool: a command the policy proves read-only runs with the
    /// workspace read-only instead, and locks nothing.
    fn mutates(&self, _state: &RunState, _args: &Value) -> bool {
        self.spec().destructive
    }

    /// Whether this call may run at the same time as the other calls of
    /// its message that may: a read that changes nothing and whose result
    /// steers nothing (a component tool's read). Its gates still run in
    /// call order, and its result is recorded in call order.
    fn concurrent(&self, _state: &RunState, _args: &Value) -> bool {
        false
    }

    /// What the approval gate must get for this call: by default approval
    /// under the tool's group.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Approval(self.spec().group)
    }

    /// The change the call would make, for a person deciding on it (an
    /// edit's diff); `None` when there is nothing to show.
    async fn preview(&self, _call: PreviewCall<'_>) -> Option<String> {
        None
    }

    /// Run the call (every gate has passed; a mutating call's write
    /// session is open). `Err` only for what stops the task itself (the
    /// store failed, the task was cancelled while it waited).
    async fn run(&self, call: Invocation<'_>) -> Result<Outcome, TaskError>;

    /// The component that runs it, when one does (a direct `roost tool
    /// call` runs that component itself).
    fn component(&self) -> Option<&Arc<LoadedPlugin>> {
        None
    }
}

/// The spec of a host-native tool: it declares no paths, changes nothing
/// through its arguments (a tool that writes says so on its own spec) and
/// has no annotations beyond its group.
pub fn host_spec(
    name: impl Into<String>,
    group: ToolGroup,
    description: impl Into<String>,
    args_schema: Value,
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        args_schema,
        group,
        destructive: false,
        path_args: Vec::new(),
        annotations: Default::default(),
    }
}
