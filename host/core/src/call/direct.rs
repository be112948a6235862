//! A component tool called outside a task (`roost tool call`, `roost mcp
//! serve`): the same [`Dispatch`] as a task's call, under a taskless
//! context ([`Site::Direct`]). Every gate runs — paths, the mode of the
//! grant (its tool groups and file patterns), the schema, the intent's
//! scope, the mode's hooks (first-party ones included), the approval —
//! then the same write session and after stage (guard, diff, trace). What
//! differs is only what a task has and a caller outside one does not:
//!
//! - no person to ask: a call that would ask (a command no rule allows, a
//!   hook's question, a write outside the intent's scope) is refused with
//!   the question it would have asked;
//! - the caller's grant is the approval: it started the server, or typed
//!   the command, with what calls may touch ([`RunState::bound`] holds the
//!   write roots; [`DirectSite`] the read and the network), so what the
//!   approval policy would ask of a task runs;
//! - nothing is recorded in the store: the trace entries the gates and the
//!   after stage made are appended as the call returns (there is no result
//!   a crash could lose, so no outbox to pass them through).

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::grant::DirectGrant;
use super::{Agent, Dispatch};
use crate::control::Control;
use crate::events::EventBus;
use crate::intents::bound::Bound;
use crate::intents::{self, Intent, Scope, Trace};
use crate::llm::AssembledCall;
use crate::modes::ModeSet;
use crate::store::{TaskRecord, TaskStatus};
use crate::tools::{ToolError, ToolOutput};
use crate::turn::{Ctx, DirectSite, RepetitionDetector, RunState, Site, SpawnHandle, TaskError};
use roost_protocol::ApprovalPolicy;
use roost_sandbox::capability::{GuardBudget, Limits, NetworkGrant, Workspace, WorkspaceError};
use roost_sandbox::plugins::NetworkRecord;

/// The mode a direct call runs under when its caller names none.
pub const DEFAULT_MODE: &str = "code";

/// What a direct call asks for.
#[derive(Debug, Clone)]
pub struct DirectCall<'a> {
    /// Who makes it, as the trace names it (`cli`, `mcp:<client>`).
    pub caller: &'a str,
    /// Tool name.
    pub name: &'a str,
    /// Arguments (a JSON object).
    pub args: Value,
    /// What it may touch, and the mode and intent that judge it.
    pub grant: &'a DirectGrant,
    /// Its limits (an installed plugin's grant lowers them).
    pub limits: Limits,
    /// The network of a component under development (a front-end's
    /// `--allow-net`); an installed plugin gets the network it was granted
    /// instead, a first-party one none.
    pub network: Option<NetworkGrant>,
    /// How long the write guard may spend undoing what it must.
    pub guard_budget: GuardBudget,
    /// The caller's W3C `traceparent`, whose trace the call's span joins.
    pub traceparent: Option<&'a str>,
}

/// Why a direct call was not made.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    /// No tool has this name.
    #[error("unknown tool `{name}`; known tools: {known}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The tools there are, comma-separated.
        known: String,
    },
    /// A host-native tool talks to the person or the task.
    #[error(
        "`{0}` is a host-native tool: it talks to the person or the task, so it runs only inside a task"
    )]
    HostNative(String),
    /// The arguments are not a JSON object.
    #[error("the arguments must be a JSON object")]
    NotAnObject,
    /// The workspace cannot be opened.
    #[error("cannot open the workspace: {0}")]
    Workspace(#[from] WorkspaceError),
    /// The plugin was not granted what the call asks for.
    #[error("plugin `{plugin}` was not granted {what} access at install")]
    NotGranted {
        /// Plugin name.
        plugin: String,
        /// `read` or `write`.
        what: &'static str,
    },
    /// The call asks for network beside an installed grant.
    #[error("`{0}` gets the network it was granted at install")]
    NetworkGranted(String),
    /// The mode asked for does not exist in the workspace.
    #[error("unknown mode `{mode}` (available: {available})")]
    UnknownMode {
        /// The slug asked for.
        mode: String,
        /// The slugs there are.
        available: String,
    },
    /// The intent asked for cannot be worked under.
    #[error("intent {id}: {why}")]
    Intent {
        /// The id asked for.
        id: String,
        /// Why not.
        why: String,
    },
    /// A write root is not a workspace-relative directory.
    #[error("write root {0}: not a directory inside the workspace (workspace-relative, no `..`)")]
    WriteRoot(String),
    /// The dispatch itself failed (the store, the workspace).
    #[error("{0}")]
    Dispatch(#[from] TaskError),
}

/// What a direct call did.
#[derive(Debug)]
pub struct DirectOutcome {
    /// The tool's result, or why it was refused (by a gate, a hook, the
    /// guard).
    pub result: Result<ToolOutput, ToolError>,
    /// Its outgoing requests, credentials redacted.
    pub network: Vec<NetworkRecord>,
    /// The trace entries appended for it (none where the workspace keeps
    /// no trace).
    pub traced: usize,
}

impl Agent {
    /// Call one component tool outside a task (see the module doc).
    pub async fn call_direct(&self, c: DirectCall<'_>) -> Result<DirectOutcome, DirectError> {
        let Some(tool) = self.registry.get(c.name) else {
            let known: Vec<&str> = self
                .registry
                .iter()
                .filter(|t| t.component().is_some())
                .map(|t| t.spec.name.as_str())
                .collect();
            return Err(DirectError::UnknownTool {
                name: c.name.to_owned(),
                known: known.join(", "),
            });
        };
        let Some(plugin) = tool.component() else {
            return Err(DirectError::HostNative(c.name.to_owned()));
        };
        if !c.args.is_object() {
            return Err(DirectError::NotAnObject);
        }
        let not_granted = |what| DirectError::NotGranted {
            plugin: plugin.name().to_owned(),
            what,
        };
        let grant = c.grant;
        if grant.read() && !tool.access.read {
            return Err(not_granted("read"));
        }
        if !grant.write().is_empty() && tool.spec.destructive && !tool.access.write {
            return Err(not_granted("write"));
        }
        if tool.access.network.is_some() && c.network.is_some() {
            return Err(DirectError::NetworkGranted(plugin.name().to_owned()));
        }
        let ws = Workspace::open(grant.workspace())?;
        let workspace = ws.host_path().to_path_buf();
        let state = self.direct_state(&c, &ws)?;
        let mut config = self.config.clone();
        config.limits = c.limits;
        config.guard_budget = c.guard_budget;
        let (events, control) = (EventBus::new(), Control::default());
        let ctx = Ctx {
            task: caller_record(c.caller, &workspace, &state.mode.slug),
            site: Site::Direct(DirectSite {
                read: grant.read(),
                network: c.network.map(Arc::new),
            }),
            provider: None,
            config,
            spawner: SpawnHandle::default(),
            workspace,
            ws,
            events: &events,
            control: &control,
            lent: Default::default(),
            // A caller's trace, continued (an MCP client's `traceparent`).
            trace: c
                .traceparent
                .and_then(crate::telemetry::spans::remote_parent)
                .unwrap_or_default(),
            resumed: false,
        };
        let call = AssembledCall {
            id: format!("direct-{}", uuid::Uuid::now_v7()),
            name: c.name.to_owned(),
            raw_args: c.args.to_string(),
            args: Ok(c.args),
        };
        let mut state = state;
        let r = Dispatch::new(self).handle(&ctx, &mut state, &call).await?;
        let traced = r.trace.len();
        let trace = Trace::of(&ctx.workspace);
        for entry in &r.trace {
            if let Err(e) = trace.append(entry) {
                tracing::error!(
                    tool = c.name,
                    "cannot append to .orchestration/agent_trace.jsonl: {e}; this call is not in the trace"
                );
            }
        }
        tracing::info!(
            caller = c.caller,
            tool = c.name,
            ok = !r.is_error,
            "direct tool call"
        );
        let result = match r.output {
            Some(out) if !r.is_error => Ok(out),
            _ => r.event_result().map(ToolOutput::text),
        };
        Ok(DirectOutcome {
            result,
            network: r.network,
            traced,
        })
    }

    /// The state a direct call is judged in: the mode's groups and hooks,
    /// the intent, the caller's write roots as the bound no call exceeds,
    /// and the grant as the approval.
    fn direct_state(&self, c: &DirectCall<'_>, ws: &Workspace) -> Result<RunState, DirectError> {
        let modes = ModeSet::load_in(ws, self.modes_dir.as_deref());
        let grant = c.grant;
        let slug = grant.mode().unwrap_or(DEFAULT_MODE);
        let Some(mode) = modes.get(slug).cloned() else {
            let available: Vec<&str> = modes.iter().map(|m| m.slug.as_str()).collect();
            return Err(DirectError::UnknownMode {
                mode: slug.to_owned(),
                available: available.join(", "),
            });
        };
        let intent = match grant.intent_id() {
            Some(id) => Some(in_progress(ws, id)?),
            None => None,
        };
        // Under an intent its owned scope bounds the writes (a write
        // outside it would ask a person, so it is refused); else the
        // caller's write roots do.
        let bound = if intent.is_some() {
            None
        } else {
            let globs: Vec<String> = grant.write().iter().map(|w| write_glob(w)).collect();
            Some(Bound::new(&globs).map_err(|e| DirectError::WriteRoot(e.to_string()))?)
        };
        Ok(RunState {
            mistakes: 0,
            repetition: RepetitionDetector::new(self.config.repetition_limit),
            modes,
            mode,
            intent,
            skill: None,
            policy: ApprovalPolicy::yes(),
            bound,
            inherited_hooks: Vec::new(),
            inherited_command_profile: None,
            default_command_profile: self.commands.as_ref().map(|c| c.default_profile.clone()),
            // No turn: nothing to checkpoint.
            checkpointed: true,
            discovered: Default::default(),
        })
    }
}

/// Intent `id` of the workspace with its scope, if it is in progress.
fn in_progress(ws: &Workspace, id: &str) -> Result<(Intent, Scope), DirectError> {
    let fail = |why: String| DirectError::Intent {
        id: id.to_owned(),
        why,
    };
    if !intents::enabled_in(ws) {
        return Err(fail(
            "this workspace has no .orchestration/ directory".to_owned(),
        ));
    }
    let all = intents::load(ws.host_path()).map_err(|e| fail(e.to_string()))?;
    let intent = all
        .into_iter()
        .find(|i| i.id == id)
        .ok_or_else(|| fail("not in .orchestration/active_intents.yaml".to_owned()))?;
    if intent.status != "IN_PROGRESS" {
        return Err(fail(format!(
            "its status is {}; only an IN_PROGRESS intent can be worked under",
            intent.status
        )));
    }
    let scope = Scope::new(ws.host_path(), &intent).map_err(|e| fail(e.to_string()))?;
    Ok((intent, scope))
}

/// The glob of everything under write root `root` (workspace-relative
/// and normalised by the grant: `.` for the whole workspace).
fn write_glob(root: &Path) -> String {
    if root == Path::new(".") {
        "**".to_owned()
    } else {
        format!("{}/**", root.display())
    }
}

/// The record a direct call's context carries: the caller's name where a
/// task's id would be (the trace names it), nothing stored.
fn caller_record(caller: &str, workspace: &Path, mode: &str) -> TaskRecord {
    TaskRecord {
        id: caller.to_owned(),
        parent_id: None,
        root_id: caller.to_owned(),
        mode: mode.to_owned(),
        workspace: workspace.to_string_lossy().into_owned(),
        status: TaskStatus::Running,
        prompt: String::new(),
        provider: String::new(),
        model: String::new(),
        base_url: String::new(),
        profile: String::new(),
        created_at: 0,
        updated_at: 0,
        usage: Default::default(),
        cost: 0.0,
        active_intent: None,
        settings: None,
        owner: None,
    }
}
