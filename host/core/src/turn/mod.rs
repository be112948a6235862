//! What the layers under the task loop — the dispatch of a call and the
//! tools it runs — know of the task a call belongs to, so that nothing
//! below the loop calls back up into it: the services every task runs
//! with ([`Services`]), the running task's identity and channels ([`Ctx`]),
//! its mode, intent and gate memory ([`RunState`]), its limits and
//! policies ([`TaskConfig`]), and the errors that stop a task ([`TaskError`]).

pub mod config;
mod lent;
mod repetition;
mod spawner;

use std::path::PathBuf;
use std::sync::Arc;

pub use config::{Delegation, Price, TaskConfig};
pub use lent::{EditorBuffers, Lent};
pub use repetition::RepetitionDetector;
pub use spawner::{ChildSpec, SpawnError, SpawnHandle, Spawner};

use crate::asks::{Answer, Ask, AskBroker};
use crate::control::Control;
use crate::events::{EventBus, TaskEvent};
use crate::intents::bound::Bound;
use crate::intents::{Intent, Scope, Trace, TraceEntry};
use crate::llm::Provider;
use crate::modes::{HookRegistry, Mode, ModeSet};
use crate::skills::{SkillFocus, SkillLibrary};
use crate::store::{Committed, Step, Store, StoreError, TaskRecord, TaskStatus};
use crate::tools::Access;
use roost_protocol::{ApprovalPolicy, UiRow, UiSubtype};
use roost_sandbox::capability::{NetworkGrant, Workspace, WorkspaceError};
use roost_sandbox::plugins::PluginEngine;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// The user accepted the result.
    Completed {
        /// The accepted result.
        result: String,
    },
    /// Stopped by the user or a signal; resumable.
    Aborted {
        /// Why.
        reason: String,
    },
    /// The turn limit was hit; resumable.
    Paused {
        /// Why.
        reason: String,
    },
    /// An error ended the run.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// Errors that stop the host from running a task at all (not the task's
/// own failures, which are [`TaskOutcome::Failed`]).
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The requested mode does not exist.
    #[error("unknown mode `{mode}` (available: {available})")]
    UnknownMode {
        /// Requested slug.
        mode: String,
        /// Known slugs.
        available: String,
    },
    /// The task's workspace cannot be opened.
    #[error("workspace: {0}")]
    Workspace(#[from] WorkspaceError),
    /// The task was cancelled while it waited for a person's answer; the
    /// loop ends it `aborted` (resumable).
    #[error("the task was cancelled while it waited for an answer")]
    Cancelled,
    /// A call outside a task needed a person's answer: there is no one to
    /// ask, so the dispatch refuses the call with this question.
    #[error("{0}")]
    NoPerson(String),
    /// A model was needed where there is none (outside a task).
    #[error("no model: a call outside a task runs no loop")]
    NoModel,
    /// Resume was asked for a task that cannot continue.
    #[error("task {id} is {status}: give it a new message to continue it")]
    NotResumable {
        /// Task id.
        id: String,
        /// Its status.
        status: TaskStatus,
    },
}

/// The services tasks run with, as the dispatch's layers and the tools see
/// them: the plugin runtime, the store, the hooks, the ask broker, and the
/// limits and policies a task gets unless its own settings say otherwise.
/// One per process (or per tenant); tasks share it. The tools themselves
/// are the dispatch layer's `Agent`, above. Which model a task
/// talks to is the task's own ([`TaskSetup`]).
pub struct Services {
    /// The plugin runtime.
    pub engine: Arc<PluginEngine>,
    /// Durable state.
    pub store: Store,
    /// Limits and policies of a task whose settings leave them open.
    pub config: TaskConfig,
    /// Directory of the global `custom_modes.yaml` (the config dir).
    pub modes_dir: Option<PathBuf>,
    /// Mode hooks by name (modes list the ones they use).
    pub hooks: Arc<HookRegistry>,
    /// Where questions to a person wait for their answers.
    pub asks: Arc<AskBroker>,
    /// Every workspace's skills, kept fresh, and their components.
    pub skills: Arc<SkillLibrary>,
    /// Native commands, when the deployment turned them on.
    pub commands: Option<Arc<crate::commands::CommandHost>>,
    /// Checkpoints of the workspace before each turn's first change
    /// (`None`: off).
    pub checkpoints: Option<Arc<crate::checkpoints::Checkpoints>>,
    /// Every workspace's MCP servers, whose tools tasks are offered.
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
}

/// Per-run state that is not persisted (it restarts with a resume): the
/// task's mode and intent as the gates and tools see them, and the loop's
/// memory of mistakes and repetitions.
pub struct RunState {
    /// Model mistakes in a row (towards the mistake limit).
    pub mistakes: u32,
    /// The same call again and again (the repetition gate).
    pub repetition: RepetitionDetector,
    /// The modes of the task's workspace.
    pub modes: ModeSet,
    /// The mode the task is in.
    pub mode: Mode,
    /// The intent it works under, with its scope.
    pub intent: Option<(Intent, Scope)>,
    /// The skill it follows, when that skill limits the tools it may call.
    pub skill: Option<SkillFocus>,
    /// The task's approval policy: its settings' policy, widened by the
    /// "always allow" answers given since (recorded with the task).
    pub policy: ApprovalPolicy,
    /// Where a subtask may write at most (its parent's scope); `None`: the
    /// task is bounded by nothing above it.
    pub bound: Option<Bound>,
    /// Mode hooks of the task's ancestors, run on its calls before its own
    /// mode's.
    pub inherited_hooks: Vec<String>,
    /// The command profile the task's parent ran commands under.
    pub inherited_command_profile: Option<String>,
    /// The deployment's command profile, where nothing names another.
    pub default_command_profile: Option<String>,
    /// Whether this turn's checkpoint was taken (before its first change).
    pub checkpointed: bool,
    /// Deferred tools `search_tools` found: offered from then on.
    pub discovered: std::collections::BTreeSet<String>,
}

impl RunState {
    /// The active intent's id.
    pub fn intent_id(&self) -> Option<&str> {
        self.intent.as_ref().map(|(i, _)| i.id.as_str())
    }

    /// The command profile the task's commands run under: its parent's
    /// (a subtask may only narrow it, to `read-only`), else its intent's,
    /// its mode's, the deployment's.
    pub fn command_profile(&self) -> Option<&str> {
        let own = self
            .intent
            .as_ref()
            .and_then(|(i, _)| i.command_profile.as_deref())
            .or(self.mode.command_profile.as_deref());
        match (&self.inherited_command_profile, own) {
            (Some(_), Some(p)) if p == crate::commands::profile::READ_ONLY => Some(p),
            (Some(parent), _) => Some(parent.as_str()),
            (None, own) => own.or(self.default_command_profile.as_deref()),
        }
    }

    /// The mode hooks that judge the task's calls: its ancestors', then
    /// its own mode's (each once).
    pub fn hooks(&self) -> impl Iterator<Item = &String> {
        let inherited = &self.inherited_hooks;
        inherited.iter().chain(
            self.mode
                .hooks
                .iter()
                .filter(move |h| !inherited.contains(h)),
        )
    }
}

/// What one task runs with that another task of the same engine may not:
/// its model, and its limits and policies (the engine's defaults, the
/// profile's context settings, then the task's own settings).
#[derive(Clone)]
pub struct TaskSetup {
    /// The model it talks to.
    pub provider: Arc<dyn Provider>,
    /// Its limits and policies.
    pub config: TaskConfig,
    /// The engine running it.
    pub spawner: SpawnHandle,
    /// What its front-end's session lends it (an editor's MCP servers
    /// and buffers).
    pub lent: Lent,
    /// The span its run's trace continues (a subtask's: its parent's
    /// `new_task` call); none: a trace of its own.
    pub trace_parent: Option<opentelemetry::Context>,
}

/// Where a call is made: in a task, or for a caller outside any task.
#[derive(Debug, Clone)]
pub enum Site {
    /// A task's call: a person may be asked, every step is recorded in the
    /// task's history, and its trace goes through the store's outbox.
    Task,
    /// A call outside a task (`roost tool call`, `roost mcp serve`): no one
    /// to ask (a call that needs a person is refused), nothing recorded in
    /// the store, the trace appended as the call returns. `Ctx::task`
    /// names the caller.
    Direct(DirectSite),
}

/// What a caller outside a task grants its calls, beyond the write roots
/// (its [`RunState::bound`]).
#[derive(Debug, Clone)]
pub struct DirectSite {
    /// Whether calls may read the whole workspace.
    pub read: bool,
    /// The network of a component under development (`--allow-net`).
    pub network: Option<Arc<NetworkGrant>>,
}

impl Site {
    /// Whether a person can be asked and steps are recorded.
    pub fn is_task(&self) -> bool {
        matches!(self, Self::Task)
    }

    /// What a tool's calls may be granted here: its own access, narrowed
    /// by a direct caller's grant (a capability only narrows).
    pub fn narrow(&self, access: &Access) -> Access {
        match self {
            Self::Task => access.clone(),
            Self::Direct(d) => Access {
                read: access.read && d.read,
                write: access.write,
                limits: access.limits,
                network: access.network.clone().or_else(|| d.network.clone()),
            },
        }
    }
}

/// A running task (or a caller outside any task, see [`Site`]): its
/// record, its workspace, its model and settings, and its channels.
pub struct Ctx<'a> {
    /// The task's record as it was when the run started (outside a task:
    /// the caller's name as its id, nothing stored).
    pub task: TaskRecord,
    /// Where the call is made.
    pub site: Site,
    /// The model it talks to (`None` outside a task: no loop runs there).
    pub provider: Option<Arc<dyn Provider>>,
    /// Its limits and policies.
    pub config: TaskConfig,
    /// The engine running it, to start tasks of its own.
    pub spawner: SpawnHandle,
    /// The workspace's path.
    pub workspace: PathBuf,
    /// The workspace as the host touches it (see [`Workspace`]).
    pub ws: Workspace,
    /// Where its events go.
    pub events: &'a EventBus,
    /// Cancellation and queued messages from outside.
    pub control: &'a Control,
    /// What its front-end's session lends it (see [`TaskSetup::lent`]).
    pub lent: Lent,
    /// Its run's span, the parent of its model requests and calls (an
    /// empty context when telemetry is off).
    pub trace: opentelemetry::Context,
    /// Whether the run resumes a stored task, which a process that died
    /// may have left with questions open; a new task's run has none to
    /// look for.
    pub resumed: bool,
}

impl Services {
    /// Append to the agent trace; a failure is not only logged but shown:
    /// a UI error row and a warning event, so no one believes a mutation
    /// was traced when it was not.
    pub fn trace(&self, ctx: &Ctx<'_>, entry: &TraceEntry) {
        if let Err(e) = Trace::of(&ctx.workspace).append(entry) {
            tracing::error!(task = %ctx.task.id, "cannot append to the agent trace: {e}");
            let msg = format!(
                "cannot append to .orchestration/agent_trace.jsonl: {e}; this {} of `{}` is not in the trace",
                entry.kind, entry.tool
            );
            let step = Step::new().ui(UiRow::say(UiSubtype::Error), msg.as_str());
            let warn = TaskEvent::Warning {
                message: msg.clone(),
            };
            if let Err(store) = ctx
                .events
                .commit_now(&self.store, &ctx.task.id, step, vec![warn])
            {
                tracing::error!(task = %ctx.task.id, "cannot record the trace failure: {store}");
            }
        }
    }

    /// Put `ask` to a person (see [`crate::asks::ask`]) and wait for the
    /// answer; a cancel while waiting is [`TaskError::Cancelled`].
    /// `resume`: whether the task is set running again at once or with
    /// the step the caller takes next.
    pub async fn ask(
        &self,
        ctx: &Ctx<'_>,
        call_id: Option<&str>,
        ask: Ask,
        resume: crate::asks::Resume,
    ) -> Result<Answer, TaskError> {
        if !ctx.site.is_task() {
            return Err(TaskError::NoPerson(no_person(&ask)));
        }
        let site = crate::asks::AskSite {
            task: &ctx.task.id,
            events: ctx.events,
            control: ctx.control,
            resumed: ctx.resumed,
            resume,
        };
        crate::asks::ask(&self.store, &self.asks, site, call_id, ask)
            .await?
            .ok_or(TaskError::Cancelled)
    }
}

impl Ctx<'_> {
    /// Tell the person something went wrong without stopping the task: an
    /// error row in its UI history and a `warning` event, as one step
    /// (outside a task, the event only).
    pub async fn warn(&self, store: &Store, message: String) -> Result<(), StoreError> {
        let step = Step::new().ui(UiRow::say(UiSubtype::Error), message.as_str());
        self.commit(
            store,
            step,
            vec![TaskEvent::Warning {
                message: message.clone(),
            }],
        )
        .await
        .map(drop)
    }

    /// The model the task talks to.
    pub fn model(&self) -> Result<&dyn Provider, TaskError> {
        self.provider.as_deref().ok_or(TaskError::NoModel)
    }

    /// Commit `step` with `events` (see [`EventBus::commit`]); outside a
    /// task nothing is stored and the events only go out.
    pub async fn commit(
        &self,
        store: &Store,
        step: Step<'_>,
        events: Vec<TaskEvent>,
    ) -> Result<Committed, StoreError> {
        if self.site.is_task() {
            return self.events.commit(store, &self.task.id, step, events).await;
        }
        for e in events {
            self.events.publish(e).await;
        }
        Ok(Committed::default())
    }
}

/// Why a call outside a task was refused where a task would have asked
/// `ask`.
fn no_person(ask: &Ask) -> String {
    let asked = match ask {
        Ask::Tool {
            tool,
            why: Some(why),
            ..
        } => format!("`{tool}` needs a person's approval ({why})"),
        Ask::Tool { tool, .. } => format!("`{tool}` needs a person's approval"),
        Ask::Scope {
            intent, tool, path, ..
        } => format!("`{tool}` would write `{path}`, outside the owned_scope of intent {intent}"),
        Ask::Hook { hook, question, .. } => format!("hook `{hook}` asks: {question}"),
        other => format!("the call asks a person: {}", other.question()),
    };
    format!("{asked}; a call outside a task has no one to ask, so it was refused")
}
