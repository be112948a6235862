//! The loop: stream a reply, persist it, run its tool calls through the
//! gates one at a time, persist each result, repeat.
//!
//! Ordering rule: every message is written to the store before the event
//! that announces it is published, so a front-end never shows something a
//! crash could lose. The tool_use/tool_result pairing is an invariant: each
//! assistant message's calls are answered, in order, by the next user
//! message (a crash mid-call is repaired on resume).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::telemetry::metrics;
use crate::telemetry::spans::{self, OpenSpan};
use opentelemetry::KeyValue;

use futures::StreamExt;
use serde_json::Value;

use super::context::{
    BYTES_PER_TOKEN, RequestCache, cut_point, model_history, summarise, summary_max_tokens,
};
use super::history::{History, ResultStep};
use super::prompt::{PromptContext, build};
use super::tools::TaskTools;
use super::workspace::WorkspaceCheck;
use crate::asks::{Answer, Ask, AskError, Resume};
use crate::call::Agent;
use crate::call::{CallResult, Dispatch};
use crate::control::Control;
use crate::events::{EventBus, TaskEvent};
use crate::intents::bound::Bound;
use crate::intents::{self, Trace, TraceEntry};
use crate::llm::{
    AssembledCall, ContentBlock, LlmError, Message, Provider, RequestBody, Role, StreamEvent,
    Usage, WireFormat,
};
use crate::modes::ModeSet;
use crate::skills;
use crate::store::{ClaimedTask, Committed, NewTask, Step, TaskClaim, TaskRecord, TaskStatus};
use crate::tools::{Registry, ToolSpec};
use crate::turn::{Ctx, RepetitionDetector, RunState, Site, TaskError, TaskOutcome, TaskSetup};
use roost_protocol::{TaskSettings, UiRow, UiSubtype};
use roost_sandbox::capability::{Workspace, WorkspacePin};

/// Least a kept tool result is shortened to after a condensation.
const KEPT_RESULT_FLOOR: usize = 1024;

/// Roo's corrective message when a reply uses no tool.
const NO_TOOLS_USED: &str = "[ERROR] You did not use a tool in your previous response. Every response must call a \
tool. If the task is done, call attempt_completion with the result. If you need information from the user, call \
ask_followup_question. Otherwise call the next tool the task needs.";

/// A task to create: its prompt and workspace, its mode, the endpoint of
/// `provider`, its `settings`, the task that started it (`parent`) and who
/// it belongs to (`owner`; a child belongs to its parent's owner).
#[derive(Clone, Copy)]
pub struct Creation<'a> {
    /// The user's prompt.
    pub prompt: &'a str,
    /// The workspace.
    pub workspace: &'a Path,
    /// The workspace as the caller opened it already (`None`: opened by
    /// its path here).
    pub opened: Option<&'a Workspace>,
    /// Mode slug.
    pub mode: &'a str,
    /// The model it talks to (its endpoint is recorded).
    pub provider: &'a dyn Provider,
    /// The settings it runs with.
    pub settings: &'a TaskSettings,
    /// The task that started it.
    pub parent: Option<&'a TaskRecord>,
    /// Who it belongs to.
    pub owner: Option<&'a str>,
    /// Its first todo list (a subtask's, from its parent).
    pub todos: Option<&'a [crate::store::TodoItem]>,
    /// The intent it starts under (a subtask's, passed on by its parent),
    /// recorded and shown as any selection is.
    pub intent: Option<&'a str>,
}

/// Calls a resumed task runs again before its next turn: they were
/// waiting for a person when its process died.
struct PendingCalls {
    calls: Vec<AssembledCall>,
    /// The message answering the assistant message, so far.
    results: Message,
    /// Its seq, once stored.
    results_seq: Option<i64>,
}

/// What a streamed reply amounted to.
struct Reply {
    text: String,
    calls: Vec<AssembledCall>,
    usage: Usage,
    /// What the provider said of its answer (for the `chat` span).
    said: Said,
}

/// What a provider said of an answer besides its content.
#[derive(Debug, Default)]
struct Said {
    stop_reason: Option<String>,
    response_id: Option<String>,
    response_model: Option<String>,
    /// From the request to its first chunk of text or call.
    first_chunk: Option<std::time::Duration>,
}

/// A task created for this process to run ([`Agent::create_claimed`]):
/// its record, its claim, and the events its creation recorded (its
/// creation and its start) with their positions, which its run announces
/// as it begins.
#[derive(Debug)]
pub struct NewRun {
    /// Its record as created.
    pub task: TaskRecord,
    claim: TaskClaim,
    opening: Vec<TaskEvent>,
    recorded: Vec<usize>,
    first: Committed,
    /// The workspace its creation opened by its path: the one its run
    /// uses when workspaces are opened as named
    /// ([`WorkspaceCheck::AsNamed`]), held since, not looked up again.
    opened: Workspace,
}

impl NewRun {
    /// The run of the task `claimed`, whose creation recorded `opening`
    /// (at `recorded` of them) in the workspace it `opened`.
    fn new(
        claimed: ClaimedTask,
        opening: Vec<TaskEvent>,
        recorded: Vec<usize>,
        opened: Workspace,
    ) -> Self {
        let ClaimedTask { task, claim, first } = claimed;
        Self {
            task,
            claim,
            opening,
            recorded,
            first,
            opened,
        }
    }
}

/// What a new task is created with, once checked ([`Agent::opening`]).
struct Opening<'a> {
    new: NewTask,
    /// Its first message.
    first: Message,
    todos: Option<&'a [crate::store::TodoItem]>,
    /// Its workspace, as opened for the check.
    ws: Workspace,
}

impl Opening<'_> {
    /// Its first step: the prompt shown, the first message, its todos.
    fn step(&self) -> Step<'_> {
        let mut step = Step::new().ui(UiRow::say(UiSubtype::Text), &self.new.prompt);
        if let Some(intent) = &self.new.active_intent {
            step = step.ui(UiRow::say(UiSubtype::IntentSelected), intent);
        }
        let step = step.append(&self.first);
        match self.todos {
            Some(items) => step.todos(items),
            None => step,
        }
    }

    /// Its first step for a task this process runs, with its creation and
    /// its start recorded in it: the step, the events, and which of them
    /// it recorded.
    fn claimed(&self) -> (Step<'_>, Vec<TaskEvent>, Vec<usize>) {
        let mut opening = vec![
            TaskEvent::TaskCreated {
                mode: self.new.mode.clone(),
                workspace: self.new.workspace.clone(),
            },
            TaskEvent::TaskStarted { resumed: false },
        ];
        let (step, recorded) = crate::events::record_in("(new)", self.step(), &mut opening, true);
        (step, opening, recorded)
    }
}

impl Agent {
    /// Every tool offered to the model: plugin tools and host-native ones.
    pub fn tool_specs(&self) -> Vec<&ToolSpec> {
        self.registry.iter().map(|t| &t.spec).collect()
    }

    /// Create (persist) the task `c` describes, ready to run by whichever
    /// host takes it; an unknown mode is refused before anything is
    /// stored. Its creation rides a shared commit
    /// ([`Store::create_task_shared`]).
    pub async fn create(&self, c: &Creation<'_>) -> Result<TaskRecord, TaskError> {
        let o = self.opening(c)?;
        Ok(self.store.create_task_shared(&o.new, o.step()).await?)
    }

    /// [`Agent::create`] for a task this process is to run
    /// ([`Agent::run_created`]): claimed in the creating transaction,
    /// which records its creation and its start too (its run announces
    /// them as it begins: no step of their own).
    pub fn create_claimed(&self, c: &Creation<'_>) -> Result<NewRun, TaskError> {
        let o = self.opening(c)?;
        let (first, opening, recorded) = o.claimed();
        let claimed = self.store.create_claimed_task(&o.new, first)?;
        Ok(NewRun::new(claimed, opening, recorded, o.ws))
    }

    /// [`Agent::create_claimed`] in a shared commit with the steps of the
    /// tasks running meanwhile ([`Store::create_claimed_task_shared`]): a
    /// front-end's tasks created many at once cost the store a commit
    /// between them, not one each.
    pub async fn create_claimed_shared(&self, c: &Creation<'_>) -> Result<NewRun, TaskError> {
        let o = self.opening(c)?;
        let (first, opening, recorded) = o.claimed();
        let claimed = self.store.create_claimed_task_shared(&o.new, first).await?;
        Ok(NewRun::new(claimed, opening, recorded, o.ws))
    }

    /// Check what `c` asks for: what its task is created with.
    fn opening<'c>(&self, c: &Creation<'c>) -> Result<Opening<'c>, TaskError> {
        let Creation {
            prompt,
            workspace,
            opened,
            mode,
            provider,
            settings,
            parent,
            owner,
            todos,
            intent,
        } = *c;
        // The workspace must open before a task is recorded for it; its
        // modes are read through that handle, as it is now.
        let ws = match opened {
            Some(ws) => ws.clone(),
            None => Workspace::open(workspace)?,
        };
        let modes = ModeSet::load_in(&ws.as_of_now(), self.modes_dir.as_deref());
        if modes.get(mode).is_none() {
            let available: Vec<&str> = modes.iter().map(|m| m.slug.as_str()).collect();
            return Err(TaskError::UnknownMode {
                mode: mode.to_owned(),
                available: available.join(", "),
            });
        }
        let new = NewTask {
            parent_id: parent.map(|p| p.id.clone()),
            root_id: parent.map(|p| p.root_id.clone()),
            mode: mode.to_owned(),
            workspace: workspace.display().to_string(),
            prompt: prompt.to_owned(),
            provider: provider.name().to_owned(),
            model: provider.model().to_owned(),
            base_url: provider.base_url().to_owned(),
            profile: provider.profile().to_owned(),
            settings: Some(settings.clone()),
            owner: parent
                .map_or(owner, |p| p.owner.as_deref())
                .map(str::to_owned),
            active_intent: intent.map(str::to_owned),
        };
        Ok(Opening {
            first: super::history::opening_message(prompt),
            new,
            todos,
            ws,
        })
    }

    /// Run `task`, created with [`Agent::create`] and not run yet, with
    /// `setup`, steered by `control`, in its workspace opened as `check`
    /// says.
    pub(crate) async fn run_created(
        &self,
        new: NewRun,
        setup: TaskSetup,
        check: &WorkspaceCheck,
        events: &EventBus,
        control: &Control,
    ) -> Result<TaskOutcome, TaskError> {
        let NewRun {
            task,
            claim,
            opening,
            recorded,
            first,
            opened,
        } = new;
        events.bind(&task.id, &self.store);
        // Its creation and its start, recorded as it was created.
        events.announce_opening(&task.id, opening, &recorded, &first);
        // The handle its creation opened by its path, or (beneath a
        // tenant's roots) one checked now, as it is now; the task uses
        // this handle, and every other open of its path during the run
        // must reach it.
        let ws = match check {
            WorkspaceCheck::AsNamed => opened,
            WorkspaceCheck::TenantRoots { .. } => check.open(&self.store, &task)?,
        };
        let pin = ws.pin();
        let held = Held {
            task,
            claim,
            ws,
            pin,
        };
        self.run_held(held, setup, events, control, Begin::New)
            .await
    }

    /// Continue task `id` from its history (after a crash, Ctrl-C or
    /// pause) with `setup`, steered by `control`, in its workspace opened
    /// as `check` says (before anything touches it).
    pub(crate) async fn resume(
        &self,
        id: &str,
        setup: TaskSetup,
        check: &WorkspaceCheck,
        events: &EventBus,
        control: &Control,
    ) -> Result<TaskOutcome, TaskError> {
        let task = self.store.find_task(id)?;
        if task.status.is_final() {
            return Err(TaskError::NotResumable {
                id: task.id,
                status: task.status,
            });
        }
        let claim = self.store.claim(&task.id)?;
        events.bind(&task.id, &self.store);
        let ws = check.open(&self.store, &task)?;
        let pin = ws.pin();
        // Calls that were waiting for a person when the process died run
        // again (their open question is asked again, by the same id); any
        // other interrupted call is answered as interrupted.
        let waiting = matches!(
            task.status,
            TaskStatus::WaitingForApproval | TaskStatus::WaitingForInput
        );
        let pending = self.pending_asked_calls(&task.id, waiting)?;
        if pending.is_none() {
            self.remove_edit_leftovers(&task, &ws)?;
            let repaired = self.store.repair_dangling_tool_uses(&task.id)?;
            if repaired > 0 {
                tracing::info!(task = %task.id, repaired, "answered interrupted tool calls");
            }
            self.store
                .close_asks(&task.id, "the task was interrupted before an answer")?;
        }
        let history = self.store.load_api(&task.id, false)?;
        if pending.is_none()
            && history
                .last()
                .is_some_and(|m| m.message.role == Role::Assistant)
        {
            // A text-only reply was the last word: tell the model it was
            // interrupted so the conversation alternates again.
            self.store.append_api(
                &task.id,
                &Message::user_text(
                    "[TASK RESUMPTION] The task was interrupted. Continue where you left off.",
                ),
            )?;
        }
        self.store.set_status(&task.id, TaskStatus::Running)?;
        self.store
            .append_ui(&task.id, UiRow::say(UiSubtype::Resume), "task resumed")?;
        events
            .publish(TaskEvent::TaskStarted { resumed: true })
            .await;
        let held = Held {
            task,
            claim,
            ws,
            pin,
        };
        self.run_held(held, setup, events, control, Begin::Resumed(pending))
            .await
    }

    /// Run the task `held` to its end with `setup`, steered by `control`:
    /// its span opened and closed around the run, then its workspace let
    /// go and its claim released.
    async fn run_held(
        &self,
        held: Held,
        setup: TaskSetup,
        events: &EventBus,
        control: &Control,
        begin: Begin,
    ) -> Result<TaskOutcome, TaskError> {
        let Held {
            mut task,
            claim,
            ws,
            pin,
        } = held;
        let (resumed, pending) = match begin {
            Begin::New => (false, None),
            Begin::Resumed(pending) => (true, pending),
        };
        let span = self.agent_span(&mut task, &setup);
        let started = std::time::Instant::now();
        let ctx = Ctx {
            ws,
            workspace: PathBuf::from(&task.workspace),
            task,
            site: Site::Task,
            provider: Some(setup.provider),
            config: setup.config,
            spawner: setup.spawner,
            events,
            control,
            lent: setup.lent,
            trace: span.context(),
            resumed,
        };
        let outcome = self.run(&ctx, pending).await;
        let outcome = ended(span, &ctx.task.mode, started, outcome);
        drop(ctx);
        drop(pin);
        claim.release().await;
        outcome
    }

    /// The calls of the last assistant message still waiting for a person
    /// or a subtask (the first unanswered one has an open ask, or started
    /// a subtask), with the results already recorded for the others.
    ///
    /// A task still `waiting` for a person whose question was answered
    /// after its loop stopped (another host had not yet resumed it, say)
    /// never took that answer: its call is pending too, and runs again
    /// with the answer on record, rather than being answered
    /// "interrupted".
    fn pending_asked_calls(
        &self,
        task: &str,
        waiting: bool,
    ) -> Result<Option<PendingCalls>, TaskError> {
        let mut open: Vec<String> = self
            .store
            .open_asks(task)?
            .into_iter()
            .filter_map(|a| a.call_id)
            .collect();
        if waiting
            && let Some(last) = self.store.last_ask(task)?
            && let (Some(call), Some(answer)) = (last.call_id, last.answer.as_deref())
            // A question closed unanswered is no answer.
            && serde_json::from_str::<crate::asks::Answer>(answer).is_ok()
        {
            open.push(call);
        }
        // Calls that started a subtask wait for it again.
        let delegated = self.store.subtask_calls(task)?;
        if open.is_empty() && delegated.is_empty() {
            return Ok(None);
        }
        let history = self.store.load_api(task, false)?;
        let Some(k) = history
            .iter()
            .rposition(|m| m.message.role == Role::Assistant)
        else {
            return Ok(None);
        };
        let (results, results_seq) = match history.get(k + 1) {
            Some(m) if m.message.role == Role::User => (m.message.clone(), Some(m.seq)),
            _ => (
                Message {
                    role: Role::User,
                    content: Vec::new(),
                },
                None,
            ),
        };
        let answered: Vec<&str> = results
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let calls: Vec<AssembledCall> = history[k]
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, name, input } if !answered.contains(&id.as_str()) => {
                    Some(AssembledCall {
                        id: id.clone(),
                        name: name.clone(),
                        args: Ok(input.clone()),
                        raw_args: input.to_string(),
                    })
                }
                _ => None,
            })
            .collect();
        Ok(match calls.first() {
            Some(c) if open.contains(&c.id) || delegated.contains(&c.id) => Some(PendingCalls {
                calls,
                results,
                results_seq,
            }),
            _ => None,
        })
    }

    /// Answer the open question `ask_id` of task `task` (any front-end).
    pub async fn answer(&self, task: &str, ask_id: &str, answer: Answer) -> Result<(), AskError> {
        self.asks.answer(&self.store, task, ask_id, answer).await
    }

    /// Append the trace entries recorded with durable results and not yet
    /// in the trace, then forget them. After a crash (`resumed`) some may
    /// be in the trace already (appended, not yet forgotten): those are
    /// skipped, so each is appended once.
    fn flush_trace(&self, ctx: &Ctx<'_>, resumed: bool) -> Result<(), TaskError> {
        let pending = self.store.pending_trace(&ctx.task.id)?;
        let Some(last) = pending.last().map(|(seq, _)| *seq) else {
            return Ok(());
        };
        let recent: Vec<TraceEntry> = if resumed {
            Trace::of(&ctx.workspace)
                .read(None)
                .map(|(all, _)| all.into_iter().rev().take(256).collect())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let already = |e: &TraceEntry| {
            recent.iter().any(|t| {
                t.time == e.time && t.task_id == e.task_id && t.kind == e.kind && t.tool == e.tool
            })
        };
        for (_, line) in pending {
            match serde_json::from_str::<TraceEntry>(&line) {
                Ok(entry) if !already(&entry) => self.trace(ctx, &entry),
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(task = %ctx.task.id, "a pending trace entry does not decode: {e}")
                }
            }
        }
        self.store.clear_pending_trace(&ctx.task.id, last)?;
        Ok(())
    }

    /// A call killed mid-edit (the process died) may have left the
    /// temporary file of an atomic write beside a path it declared; its
    /// call is in the durable history (it was recorded before it ran), so
    /// the leftovers are found and removed before the call is answered as
    /// interrupted: a crash leaves no debris in the workspace.
    fn remove_edit_leftovers(&self, task: &TaskRecord, ws: &Workspace) -> Result<(), TaskError> {
        let dangling = self.store.dangling_tool_uses(&task.id)?;
        if dangling.is_empty() {
            return Ok(());
        }
        for (name, args) in dangling {
            let Some(tool) = self.registry.get(&name) else {
                continue;
            };
            for arg in &tool.spec.path_args {
                let Some(raw) = args.get(arg).and_then(Value::as_str) else {
                    continue;
                };
                let Ok(rel) = ws.normalize(raw) else { continue };
                match ws.remove_edit_leftovers(&rel) {
                    Ok(removed) if !removed.is_empty() => {
                        tracing::info!(task = %task.id, ?removed, "removed what an interrupted edit left");
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(task = %task.id, "cannot clean up after an interrupted edit: {e}")
                    }
                }
            }
        }
        Ok(())
    }

    /// End a task whose loop could not (it panicked, or an error stopped the
    /// host from running it) as failed with `error`, its history repaired
    /// so nothing answers nothing.
    pub(crate) async fn end_failed(
        &self,
        id: &str,
        error: &str,
        events: &EventBus,
    ) -> Result<(), TaskError> {
        self.store.repair_dangling_tool_uses(id)?;
        self.store.close_asks(id, error)?;
        let step = Step::new()
            .status(TaskStatus::Failed)
            .ui(UiRow::say(UiSubtype::Error), error);
        let announce = TaskEvent::Failed {
            error: error.to_owned(),
        };
        events.commit(&self.store, id, step, vec![announce]).await?;
        Ok(())
    }

    /// Mark a task aborted (Ctrl-C); its history stays resumable.
    pub async fn abort(&self, id: &str, reason: &str, events: &EventBus) -> Result<(), TaskError> {
        self.store.repair_dangling_tool_uses(id)?;
        self.store.close_asks(id, reason)?;
        let step = Step::new()
            .status(TaskStatus::Aborted)
            .ui(UiRow::say(UiSubtype::Error), format!("aborted: {reason}"));
        let announce = TaskEvent::Aborted {
            reason: reason.to_owned(),
        };
        events.commit(&self.store, id, step, vec![announce]).await?;
        Ok(())
    }

    /// Bring the task's tools up to date with its workspace's skills and
    /// MCP servers (their files read through `ws`, the workspace as the
    /// turn reads it); a skill that was skipped (invalid, a broken edit)
    /// is reported once, as an invalid mode file is.
    async fn refresh_tools(
        &self,
        ctx: &Ctx<'_>,
        ws: &Workspace,
        tools: &mut TaskTools,
    ) -> Result<(), TaskError> {
        let catalog = self.skills.catalog_of(&ctx.ws);
        // The workspace's MCP servers, started when first needed (and
        // again after a crash, once its pause is over).
        let servers = self.mcp.as_ref().map(|hub| {
            let own = hub.servers_in(&ctx.workspace, ws);
            // A front-end session's servers join its tasks' (only theirs).
            match &ctx.lent.mcp {
                Some(session) => Arc::new(own.joined(session)),
                None => own,
            }
        });
        if let Some(s) = &servers {
            s.start().await;
        }
        for message in tools.refresh(
            &self.registry,
            catalog,
            servers.as_ref(),
            ctx.config.context_window,
        ) {
            ctx.warn(&self.store, message).await?;
        }
        Ok(())
    }

    /// Run the turns; a cancel that came while the task waited for an
    /// answer ends it aborted, as one between steps does.
    async fn run(
        &self,
        ctx: &Ctx<'_>,
        pending: Option<PendingCalls>,
    ) -> Result<TaskOutcome, TaskError> {
        // Trace entries of results a crash left unappended (a new task has
        // recorded no results yet).
        if ctx.resumed {
            self.flush_trace(ctx, true)?;
        }
        match self.run_turns(ctx, pending).await {
            Err(TaskError::Cancelled) => self.cancelled(ctx).await,
            other => other,
        }
    }

    /// The task's loop: set its state up, run again what a resumed task
    /// was waiting on, then turn by turn prepare a request, stream the
    /// reply, record it and answer it, until the task ends or reaches
    /// its turn limit.
    async fn run_turns(
        &self,
        ctx: &Ctx<'_>,
        pending: Option<PendingCalls>,
    ) -> Result<TaskOutcome, TaskError> {
        let id = ctx.task.id.as_str();
        let mut state = match self.initial_state(ctx).await? {
            ControlFlow::Continue(state) => state,
            ControlFlow::Break(outcome) => return Ok(outcome),
        };
        // The request body's parts, kept from turn to turn.
        let mut request = RequestCache::default();
        self.restore_intent(ctx, &mut state).await?;
        // A new task's history is what its creation wrote (its claim,
        // taken in that transaction, kept anyone else from adding to it).
        let mut history = if ctx.resumed {
            History::load(&self.store, id)?
        } else {
            History::opened(&self.store, &ctx.task)
        };
        let mut tools = TaskTools::new(&self.registry);
        self.refresh_tools(ctx, &ctx.ws.as_of_now(), &mut tools)
            .await?;
        if let Some(outcome) = self
            .rerun_pending_calls(ctx, &mut state, &mut history, &tools, pending)
            .await?
        {
            return Ok(outcome);
        }
        // Turns are numbered over the task's life, as its checkpoints are
        // (the replies before this run, plus one): a continuation goes on.
        // A new task has no replies before this run.
        let before = if ctx.resumed {
            self.store.turn_start(id)?.2
        } else {
            0
        };
        for run_turn in 1..=ctx.config.max_turns {
            let turn = before.saturating_add(run_turn);
            if ctx.control.is_cancelled() {
                return self.cancelled(ctx).await;
            }
            // A new turn: its first change takes a checkpoint.
            state.checkpointed = false;
            self.take_queued_messages(ctx, &mut history)?;
            let prepared = self
                .prepare_request(ctx, &state, &mut tools, &mut history, &mut request)
                .await?;
            let (registry, body) = match prepared {
                ControlFlow::Continue(prepared) => prepared,
                ControlFlow::Break(outcome) => return Ok(outcome),
            };
            let reply = match self.request_reply(ctx, turn, &body, &mut history).await? {
                ControlFlow::Continue(reply) => reply,
                ControlFlow::Break(outcome) => return Ok(outcome),
            };
            self.record_reply(ctx, turn, &reply, &mut history).await?;
            if let Some(outcome) = self
                .answer_reply(ctx, &mut state, &mut history, &registry, &reply.calls)
                .await?
            {
                return Ok(outcome);
            }
        }
        self.pause_at_turn_limit(ctx).await
    }

    /// The state the task starts its turns with: its mode (the task
    /// fails when it is not defined) and the write bound it inherited
    /// (the task fails when it is invalid).
    async fn initial_state(
        &self,
        ctx: &Ctx<'_>,
    ) -> Result<ControlFlow<TaskOutcome, RunState>, TaskError> {
        let modes = self.load_modes(ctx).await?;
        let Some(mode) = modes
            .get(&ctx.task.mode)
            .or_else(|| modes.get("code"))
            .cloned()
        else {
            return self
                .fail(ctx, &format!("mode `{}` is not defined", ctx.task.mode))
                .await
                .map(ControlFlow::Break);
        };
        // A subtask never writes beyond its parent's scope.
        let bound = match ctx.config.inherited.write_bound.as_deref().map(Bound::new) {
            None => None,
            Some(Ok(b)) => Some(b),
            Some(Err(e)) => {
                return self
                    .fail(
                        ctx,
                        &format!("the scope this subtask was given is invalid: {e}"),
                    )
                    .await
                    .map(ControlFlow::Break);
            }
        };
        Ok(ControlFlow::Continue(RunState {
            mistakes: 0,
            repetition: RepetitionDetector::new(ctx.config.repetition_limit),
            modes,
            mode,
            intent: None,
            skill: None,
            policy: ctx.config.policy.clone(),
            bound,
            inherited_hooks: ctx.config.inherited.hooks.clone(),
            inherited_command_profile: ctx.config.inherited.command_profile.clone(),
            default_command_profile: self.commands.as_ref().map(|c| c.default_profile.clone()),
            checkpointed: false,
            discovered: Default::default(),
        }))
    }

    /// The workspace's modes, each invalid mode file reported to the
    /// user (a UI row and a warning) rather than stopping the task.
    async fn load_modes(&self, ctx: &Ctx<'_>) -> Result<ModeSet, TaskError> {
        let modes = ModeSet::load_in(&ctx.ws.as_of_now(), self.modes_dir.as_deref());
        for e in &modes.errors {
            ctx.warn(&self.store, format!("invalid mode file: {e}"))
                .await?;
        }
        Ok(modes)
    }

    /// A resumed task keeps its intent, if it is still in progress; when
    /// it cannot, the user and the model are told why.
    async fn restore_intent(&self, ctx: &Ctx<'_>, state: &mut RunState) -> Result<(), TaskError> {
        let Some(active) = ctx.task.active_intent.as_deref() else {
            return Ok(());
        };
        let restored = intents::load(&ctx.workspace)
            .map_err(|e| e.to_string())
            .and_then(|all| {
                all.into_iter()
                    .find(|x| x.id == active)
                    .ok_or_else(|| format!("{active} is no longer in active_intents.yaml"))
            })
            .and_then(|intent| {
                if intent.status == "IN_PROGRESS" {
                    Ok(intent)
                } else {
                    Err(format!("{active} is {}, not IN_PROGRESS", intent.status))
                }
            })
            .and_then(|intent| {
                // A subtask holds it narrowed to its bound (or not at all).
                let inherited = ctx.config.inherited.intent.as_deref();
                intents::bound::hold(&ctx.workspace, intent, state.bound.as_ref(), inherited)
                    .map_err(|e| e.to_string())
            });
        match restored {
            Ok(pair) => state.intent = Some(pair),
            Err(why) => {
                let msg = format!(
                    "the task's intent {active} could not be restored: {why}; destructive tools need \
                     select_active_intent again"
                );
                ctx.warn(&self.store, msg).await?;
            }
        }
        Ok(())
    }

    /// Run again the calls a resumed task was waiting on (for a person or
    /// a subtask) before its next turn. The outcome when that ended the
    /// task; `None` to go on.
    async fn rerun_pending_calls(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        history: &mut History,
        tools: &TaskTools,
        pending: Option<PendingCalls>,
    ) -> Result<Option<TaskOutcome>, TaskError> {
        let Some(p) = pending else {
            return Ok(None);
        };
        self.run_calls(
            ctx,
            state,
            history,
            tools.registry(),
            &p.calls,
            (p.results, p.results_seq),
        )
        .await
    }

    /// Messages the user queued while the task ran join the conversation
    /// now (Roo's message queue).
    fn take_queued_messages(&self, ctx: &Ctx<'_>, history: &mut History) -> Result<(), TaskError> {
        for text in ctx.control.take_messages() {
            self.store
                .append_ui(&ctx.task.id, UiRow::say(UiSubtype::UserMessage), &text)?;
            history.add_user_text(format!("<user_message>\n{text}\n</user_message>"))?;
        }
        Ok(())
    }

    /// The turn's request body, with the registry its calls run against:
    /// the tools the mode offers now (skills refreshed), the system prompt
    /// and the history within the window. The task fails when the tools
    /// or the request cannot be encoded, or the window has no room.
    async fn prepare_request(
        &self,
        ctx: &Ctx<'_>,
        state: &RunState,
        tools: &mut TaskTools,
        history: &mut History,
        request: &mut RequestCache,
    ) -> Result<ControlFlow<TaskOutcome, (Arc<Registry>, RequestBody)>, TaskError> {
        // What the turn reads of the workspace before it asks the model
        // (intents, MCP servers, instructions), as of now: the files
        // missing from its top are not looked up one by one.
        let view = ctx.ws.as_of_now();
        let intents_on = intents::enabled_in(&view);
        // Skills added, changed or removed since the last turn.
        self.refresh_tools(ctx, &view, tools).await?;
        let registry = Arc::clone(tools.registry());
        let offered = offered_tools(state, &registry, intents_on);
        // The tool list changes with the mode (and intents); it is
        // encoded once per process for each list, not every turn.
        match registry.encoded_tools(ctx.model()?.wire(), &offered) {
            Ok(encoded) => request.set_tools(encoded),
            Err(e) => {
                return self
                    .fail(ctx, &format!("cannot encode the tool list: {e}"))
                    .await
                    .map(ControlFlow::Break);
            }
        }
        let system = self
            .system_prompt(ctx, &view, state, tools, &registry, &offered)
            .await;
        let offer = Offer {
            mode: &state.mode.slug,
            tools: &offered,
            registry: &registry,
        };
        let problem = match self
            .request_within_window(ctx, &system, &offer, history, request)
            .await?
        {
            Ok(body) => return Ok(ControlFlow::Continue((registry, body))),
            Err(RequestProblem::Encode(e)) => format!("cannot encode the request: {e}"),
            Err(RequestProblem::NoRoom(message)) => message,
        };
        self.fail(ctx, &problem).await.map(ControlFlow::Break)
    }

    /// The system prompt for the turn: the mode's role and instructions,
    /// the hooks' prompts, the skills it may use and the tools offered.
    async fn system_prompt(
        &self,
        ctx: &Ctx<'_>,
        files: &Workspace,
        state: &RunState,
        tools: &TaskTools,
        registry: &Registry,
        offered: &[&ToolSpec],
    ) -> String {
        let mut extra: Vec<String> = state
            .mode
            .custom_instructions
            .iter()
            .map(|c| format!("MODE-SPECIFIC INSTRUCTIONS\n\n{c}"))
            .collect();
        extra.extend(
            Dispatch::over(self, registry)
                .hook_prompts(ctx, state)
                .await,
        );
        let skills = skills::prompt::section(
            &tools.catalog().for_mode(&state.mode.slug).available,
            skills::prompt::budget(ctx.config.context_window, BYTES_PER_TOKEN),
        );
        build(&PromptContext {
            role: &state.mode.role_definition,
            mode: &state.mode.slug,
            workspace: &ctx.workspace,
            files,
            tools: offered,
            skills: skills.as_deref(),
            extra: &extra,
        })
    }

    /// Stream the turn's reply. A cancel during streaming drops the
    /// stream and ends the task; the task fails when the request does.
    async fn request_reply(
        &self,
        ctx: &Ctx<'_>,
        turn: u32,
        body: &RequestBody,
        history: &mut History,
    ) -> Result<ControlFlow<TaskOutcome, Reply>, TaskError> {
        // Live only, like the streamed text: its UI row is recorded
        // with the reply.
        ctx.events.publish(TaskEvent::RequestStarted { turn }).await;
        // A cancel during streaming drops the stream; the text that
        // streamed so far is kept, marked as interrupted (as Roo does),
        // so what the person saw stays in both histories.
        let partial = std::sync::Mutex::new(String::new());
        let (provider, model) = match ctx.model() {
            Ok(p) => (p.name(), p.model()),
            Err(_) => ("none", "none"),
        };
        let mut span = spans::chat(&ctx.trace, provider, model);
        if spans::content() {
            span.set([KeyValue::new("gen_ai.input.messages", input_messages(body))]);
        }
        let started = std::time::Instant::now();
        let streamed = tokio::select! {
            r = opentelemetry::context::FutureExt::with_context(
                self.stream_reply(ctx, body, &partial),
                span.context(),
            ) => r,
            () = ctx.control.cancelled() => {
                let text = partial.into_inner().unwrap_or_else(|p| p.into_inner());
                self.keep_interrupted_text(ctx, history, &text).await?;
                return self.cancelled(ctx).await.map(ControlFlow::Break);
            }
        };
        let took = started.elapsed();
        match &streamed {
            Ok(reply) => {
                chat_ended(&mut span, reply);
                metrics::model_request(
                    provider,
                    model,
                    took,
                    Some((
                        reply.usage.input_tokens + reply.usage.cache_read_tokens,
                        reply.usage.output_tokens,
                    )),
                    None,
                );
            }
            Err(e) => {
                span.fail(e.kind(), &e.to_string());
                metrics::model_request(provider, model, took, None, Some(e.kind()));
            }
        }
        drop(span);
        match streamed {
            Ok(reply) => Ok(ControlFlow::Continue(reply)),
            Err(e) => self
                .fail(ctx, &format!("the model request failed: {e}"))
                .await
                .map(ControlFlow::Break),
        }
    }

    /// Record the reply: the request's row, the reply, its UI rows, its
    /// usage and its events are one transaction.
    async fn record_reply(
        &self,
        ctx: &Ctx<'_>,
        turn: u32,
        reply: &Reply,
        history: &mut History,
    ) -> Result<(), TaskError> {
        let cost = ctx.config.price.cost(&reply.usage);
        // What the model wrote is recorded with credentials redacted
        // (the model sees its own calls that way from now on); calls
        // still run, and hooks still judge, with the arguments as sent.
        let text = roost_secrets::redact(&reply.text).into_owned();
        let mut content = Vec::new();
        if !text.trim().is_empty() {
            content.push(ContentBlock::Text { text: text.clone() });
        }
        let mut announce = vec![
            TaskEvent::MessageFinal { text: text.clone() },
            TaskEvent::RequestUsage {
                usage: reply.usage,
                cost,
                context_window: ctx.config.context_window,
            },
        ];
        let calls = requested_calls(&reply.calls);
        content.extend(calls.uses);
        announce.extend(calls.requested);
        if content.is_empty() {
            content.push(ContentBlock::Text {
                text: "(empty response)".into(),
            });
        }
        let mut step = Step::new()
            .ui(UiRow::say(UiSubtype::ApiReqStarted), format!("turn {turn}"))
            .usage(&reply.usage, cost);
        if !text.trim().is_empty() {
            step = step.ui(UiRow::say(UiSubtype::Text), text.as_str());
        }
        for row in &calls.rows {
            step = step.ui(UiRow::say(UiSubtype::Tool), row.as_str());
        }
        history
            .append_reply(
                Message {
                    role: Role::Assistant,
                    content,
                },
                step,
                (ctx.events, announce),
            )
            .await?;
        Ok(())
    }

    /// Answer the recorded reply: run its calls through the gates (or
    /// tell the model it used none), then see whether its mistakes need
    /// the person. The outcome when the task ended; `None` to go on.
    async fn answer_reply(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        history: &mut History,
        registry: &Registry,
        calls: &[AssembledCall],
    ) -> Result<Option<TaskOutcome>, TaskError> {
        if calls.is_empty() {
            self.correct_toolless_reply(ctx, state, history)?;
        } else {
            let empty = Message {
                role: Role::User,
                content: Vec::new(),
            };
            if let Some(outcome) = self
                .run_calls(ctx, state, history, registry, calls, (empty, None))
                .await?
            {
                return Ok(Some(outcome));
            }
        }
        self.check_mistakes(ctx, state, history).await
    }

    /// A reply without a tool call is a mistake: the model is told to use
    /// one (Roo's corrective message), and the user sees it happened.
    fn correct_toolless_reply(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        history: &mut History,
    ) -> Result<(), TaskError> {
        state.mistakes += 1;
        history.append(Message::user_text(NO_TOOLS_USED))?;
        self.store.append_ui(
            &ctx.task.id,
            UiRow::say(UiSubtype::Error),
            "the model used no tool",
        )?;
        Ok(())
    }

    /// Pause the task after its last allowed model request; a resume
    /// continues it.
    async fn pause_at_turn_limit(&self, ctx: &Ctx<'_>) -> Result<TaskOutcome, TaskError> {
        let id = ctx.task.id.as_str();
        let reason = format!(
            "paused: reached the limit of {} model requests; `roost resume {}` continues",
            ctx.config.max_turns, id
        );
        let step = Step::new()
            .status(TaskStatus::Paused)
            .ui(UiRow::say(UiSubtype::Paused), reason.as_str());
        let announce = TaskEvent::Paused {
            reason: reason.clone(),
        };
        ctx.events
            .commit(&self.store, id, step, vec![announce])
            .await?;
        Ok(TaskOutcome::Paused { reason })
    }

    /// Run the calls of one assistant message through the gates, in
    /// order (consecutive reads that may run together at once: see
    /// [`together`]), appending each result to `results` (the user message that
    /// answers them, at `seq` once stored). The outcome when the task
    /// ended (completed, aborted); `None` to go on.
    async fn run_calls(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        history: &mut History,
        registry: &Registry,
        calls: &[AssembledCall],
        results: (Message, Option<i64>),
    ) -> Result<Option<TaskOutcome>, TaskError> {
        let id = ctx.task.id.as_str();
        let (mut results, mut results_seq) = results;
        let mut completed: Option<String> = None;
        let mut abort: Option<String> = None;
        // A call that must be alone in its message (the task waited on
        // it): the ones after it are not run.
        let mut alone: Option<&str> = None;
        // Results of reads that ran together, for the calls after the first.
        let mut ahead = std::collections::VecDeque::new();
        for (index, call) in calls.iter().enumerate() {
            let group =
                if ahead.is_empty() && completed.is_none() && abort.is_none() && alone.is_none() {
                    together(ctx, state, registry, &calls[index..])
                } else {
                    Vec::new()
                };
            // A call's dispatch is boxed: its future (gates, hooks, the
            // executor; ~8 KB) would otherwise be part of every task's loop
            // future for all its life, waits for the model included.
            let mut r = if let Some(r) = ahead.pop_front() {
                r
            } else if group.len() > 1 {
                let mut results =
                    Box::pin(Dispatch::over(self, registry).handle_together(ctx, state, &group))
                        .await?
                        .into_iter();
                let first = results.next();
                ahead.extend(results);
                first.unwrap_or_else(|| CallResult::error("[ERROR] the call did not run"))
            } else if completed.is_some() || abort.is_some() {
                CallResult::error(
                    "Not executed: an earlier call in the same message ended the task.",
                )
            } else if let Some(name) = alone {
                CallResult::error(format!(
                    "[ERROR] Not executed: `{name}` must be the only tool call of its message. Make this call \
                     again in a message of its own."
                ))
            } else {
                if registry
                    .get(&call.name)
                    .is_some_and(|t| t.executor.exclusive())
                {
                    alone = Some(call.name.as_str());
                }
                Box::pin(Dispatch::over(self, registry).handle(ctx, state, call)).await?
            };
            if r.mistake {
                state.mistakes += 1;
            } else if !r.is_error {
                state.mistakes = 0;
            }
            completed = completed.or(r.completed.clone());
            if r.abort.is_some() {
                abort = r.abort.clone();
            }
            // A cancel lets the running call finish (its guard ran);
            // the calls after it are not executed.
            if ctx.control.is_cancelled() && completed.is_none() && abort.is_none() {
                abort = Some(ctx.control.reason());
            }
            // One step: the result, its UI row, and `completed` when this
            // is the last write of a task that just ended.
            let ui = r.ui_row.take().or_else(|| {
                r.is_error.then(|| {
                    let text = r.content.trim_start_matches("[ERROR] ");
                    (UiSubtype::Error, format!("{}: {text}", call.name))
                })
            });
            let event_result = r.event_result();
            // The history takes the output itself; the event has its copy.
            results.content.push(ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: std::mem::take(&mut r.content),
                is_error: r.is_error,
            });
            let last = index + 1 == calls.len();
            let status = (last && completed.is_some()).then_some(TaskStatus::Completed);
            // Announced in the same transaction, published once durable:
            // the result, and the ending when this step completes the task
            // (a kill between the two would leave a task the store says is
            // completed and whose log never says how it ended).
            let mut announce = vec![TaskEvent::ToolCallResult {
                id: call.id.clone(),
                tool: call.name.clone(),
                result: event_result,
                diff: r.diff.take(),
            }];
            if let (Some(_), Some(result)) = (status, &completed) {
                // The task's totals with this step's: the record's at the
                // run's start plus what the run has recorded since.
                let (mut usage, mut cost) = history.totals(&ctx.task);
                if let Some((spent, spent_cost)) = &r.spent {
                    usage.add(spent);
                    cost += *spent_cost;
                }
                announce.push(TaskEvent::Completed {
                    result: result.clone(),
                    usage,
                    cost,
                });
            }
            results_seq = Some(
                history
                    .record_result(
                        results_seq,
                        // The history keeps the message; the loop keeps
                        // adding to it while calls follow.
                        if last {
                            std::mem::replace(
                                &mut results,
                                Message {
                                    role: Role::User,
                                    content: Vec::new(),
                                },
                            )
                        } else {
                            results.clone()
                        },
                        ResultStep {
                            ui: ui.as_ref().map(|(subtype, text)| (*subtype, text.as_str())),
                            status,
                            trace: trace_lines(&r.trace),
                            spent: r.spent.as_ref(),
                        },
                        (ctx.events, announce),
                    )
                    .await?,
            );
            // The result is durable: now its trace entries go to the trace
            // (a result that recorded none has nothing to flush: entries
            // left by a crash are flushed when the task resumes).
            if !r.trace.is_empty() {
                self.flush_trace(ctx, false)?;
            }
        }
        if let Some(result) = completed {
            // Its ending was announced with the last result.
            return Ok(Some(TaskOutcome::Completed { result }));
        }
        if let Some(reason) = abort {
            self.abort(id, &reason, ctx.events).await?;
            return Ok(Some(TaskOutcome::Aborted { reason }));
        }
        Ok(None)
    }

    /// After too many consecutive mistakes, ask the user for guidance; their
    /// answer goes to the model, or the task stops.
    async fn check_mistakes(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        history: &mut History,
    ) -> Result<Option<TaskOutcome>, TaskError> {
        if state.mistakes < ctx.config.max_mistakes {
            return Ok(None);
        }
        let id = ctx.task.id.as_str();
        let reason = format!(
            "The model made {} mistakes in a row. Give guidance to continue, or stop the task.",
            state.mistakes
        );
        let answer = self
            .ask(
                ctx,
                None,
                Ask::Guidance {
                    reason,
                    repetition: false,
                },
                Resume::Now,
            )
            .await?
            .words();
        state.mistakes = 0;
        match answer {
            Some(guidance) => {
                history.add_user_text(format!("<user_guidance>\n{guidance}\n</user_guidance>"))?;
                Ok(None)
            }
            None => {
                let reason = "stopped after repeated mistakes".to_owned();
                self.abort(id, &reason, ctx.events).await?;
                Ok(Some(TaskOutcome::Aborted { reason }))
            }
        }
    }

    /// End the task as cancelled from outside (between steps).
    async fn cancelled(&self, ctx: &Ctx<'_>) -> Result<TaskOutcome, TaskError> {
        let reason = ctx.control.reason();
        self.abort(&ctx.task.id, &reason, ctx.events).await?;
        Ok(TaskOutcome::Aborted { reason })
    }

    async fn fail(&self, ctx: &Ctx<'_>, error: &str) -> Result<TaskOutcome, TaskError> {
        let id = ctx.task.id.as_str();
        let step = Step::new()
            .status(TaskStatus::Failed)
            .ui(UiRow::say(UiSubtype::Error), error);
        let announce = TaskEvent::Failed {
            error: error.to_owned(),
        };
        ctx.events
            .commit(&self.store, id, step, vec![announce])
            .await?;
        Ok(TaskOutcome::Failed {
            error: error.to_owned(),
        })
    }

    /// The next request's body: the system prompt, the tools and the
    /// history, which is condensed first when the whole body (everything
    /// that is sent, as the provider encodes it) outgrows
    /// `condense_threshold` of the window. A condensation summarises the
    /// older messages and keeps the first one and the most recent ones,
    /// always the newest turn (the last reply and the results answering
    /// it) verbatim: a model that lost the result it just asked for would
    /// ask again, forever. It happens at most once per request, and only
    /// when it makes the request smaller. When the system prompt, the tools
    /// and the task alone leave the conversation no room, no request is
    /// made: the problem says so plainly.
    async fn request_within_window(
        &self,
        ctx: &Ctx<'_>,
        system: &str,
        offer: &Offer<'_>,
        history: &mut History,
        cache: &mut RequestCache,
    ) -> Result<Result<RequestBody, RequestProblem>, TaskError> {
        let id = ctx.task.id.as_str();
        let provider = ctx.model()?;
        let window = ctx.config.context_window;
        let budget = (window as f64 * ctx.config.condense_threshold) as u64;
        let bytes_of = |tokens: u64| {
            usize::try_from(tokens).map_or(usize::MAX, |t| t.saturating_mul(BYTES_PER_TOKEN))
        };
        let (budget_bytes, window_bytes) = (bytes_of(budget), bytes_of(window));
        let mut keep = ctx.config.keep_recent_messages.max(1);
        let mut condensed = false;
        let mut shortened_older = false;
        let mut shortened_newest = false;
        loop {
            let body = match cache.body(provider, system, history, None) {
                Ok(b) => b,
                Err(e) => return Ok(Err(RequestProblem::Encode(e))),
            };
            let tokens = u64::try_from(body.len() / BYTES_PER_TOKEN).unwrap_or(u64::MAX);
            if tokens <= budget && !condensed {
                return Ok(Ok(body));
            }
            // What every request takes before any work (system prompt,
            // tools, task): no condensation shrinks it.
            let Some(first) = history.visible().first() else {
                return Ok(Ok(body));
            };
            let floor = match cache.floor_bytes(provider, &first.message) {
                Ok(f) => f,
                Err(e) => return Ok(Err(RequestProblem::Encode(e))),
            };
            let room =
                budget.saturating_sub(u64::try_from(floor / BYTES_PER_TOKEN).unwrap_or(u64::MAX));
            if room < MIN_ROOM_TOKENS {
                let message = no_room(ctx, provider.wire(), offer, cache, floor, budget);
                return Ok(Err(RequestProblem::NoRoom(message)));
            }
            // Where a condensation should leave the request: with half the
            // room under the threshold free, or the next turn condenses
            // again at once.
            let target = floor.saturating_add(budget_bytes.saturating_sub(floor) / 2);
            if tokens <= budget && body.len() <= target {
                return Ok(Ok(body));
            }
            let visible = history.visible();
            // The newest turn: the last reply and what answers it.
            let newest = visible
                .iter()
                .rposition(|m| m.message.role == Role::Assistant)
                .unwrap_or(visible.len());
            let mut cut = None;
            if condensed {
                // Condensed and still above the target: the kept turns
                // before the newest are too heavy; shorten their results.
                if !shortened_older
                    && self.shorten_results(
                        id,
                        visible.get(1..newest).unwrap_or_default(),
                        body.len().saturating_sub(target),
                        KEPT_RESULT_FLOOR,
                    )?
                {
                    shortened_older = true;
                    history.reload()?;
                    continue;
                }
            } else {
                // Keep as many recent messages as still land under the
                // target, by estimate (what the older ones weigh now, the
                // summary as the last one did, or 1 KiB); never fewer than
                // the newest turn (the cut falls at a reply, at the latest
                // the last one).
                let summary_bytes = history.summary().map_or(1024, str::len);
                while keep > 1 {
                    let Some(at) = cut_point(visible, keep) else {
                        break;
                    };
                    if body.len().saturating_sub(encoded_len(&visible[1..at])) + summary_bytes
                        <= target
                    {
                        break;
                    }
                    keep -= 1;
                }
                match cut_point(visible, keep) {
                    Some(at) => cut = Some(at),
                    None if keep > 1 => {
                        keep /= 2;
                        continue;
                    }
                    // Nothing older than the newest turn to condense.
                    None => {}
                }
            }
            if let Some(cut) = cut {
                self.condense(ctx, history, cut, room, body.len()).await?;
                condensed = true;
                continue;
            }
            // Nothing left to condense: the request must still fit the
            // window, the newest results cut to fit as a last resort.
            if tokens > window {
                if !shortened_newest
                    && self.shorten_results(
                        id,
                        visible.get(newest.saturating_add(1)..).unwrap_or_default(),
                        body.len().saturating_sub(window_bytes),
                        0,
                    )?
                {
                    shortened_newest = true;
                    history.reload()?;
                    continue;
                }
                let msg = format!(
                    "the request (~{tokens} tokens) is larger than the context window ({window}) even \
                     after condensing; the model may refuse it"
                );
                ctx.warn(&self.store, msg).await?;
            }
            return Ok(Ok(body));
        }
    }

    /// Condense `history`: summarise `visible[1..cut]` (with the summary
    /// before it) in a summary of at most half the conversation's `room`,
    /// and hide those messages, in one step with the summary's usage. A
    /// summary that would not leave the request (`body` bytes now)
    /// smaller, or that failed, is replaced by a short note: a
    /// condensation always shrinks the request, so it is never repeated
    /// for nothing.
    async fn condense(
        &self,
        ctx: &Ctx<'_>,
        history: &mut History,
        cut: usize,
        room: u64,
        body: usize,
    ) -> Result<(), TaskError> {
        let id = ctx.task.id.as_str();
        let visible = history.visible();
        let older = model_history(&visible[..cut], history.summary());
        let (first, upto) = (visible[0].seq, visible[cut - 1].seq);
        let dropped = encoded_len(&visible[1..cut]) + history.summary().map_or(0, str::len);
        // Condensing is a model request like any other: a cancel stops
        // it, and its tokens count.
        let (summary, usage) = tokio::select! {
            s = summarise(
                ctx.model()?,
                &older,
                ctx.config.context_window,
                summary_max_tokens(room),
            ) => s,
            () = ctx.control.cancelled() => return Err(TaskError::Cancelled),
        };
        let cost = ctx.config.price.cost(&usage);
        let summary = match summary {
            Some(s) if body.saturating_sub(dropped).saturating_add(s.len()) < body => s,
            Some(s) => {
                tracing::warn!(
                    task = id,
                    summary = s.len(),
                    replaced = dropped,
                    "the summary is larger than what it summarises; hiding older messages instead"
                );
                HIDDEN_NOTE.to_owned()
            }
            None => {
                tracing::warn!(
                    task = id,
                    "could not summarise; hiding older messages instead"
                );
                HIDDEN_NOTE.to_owned()
            }
        };
        // One step: the hidden messages, the summary, its UI row and
        // the request's usage.
        history.condense(first, upto, &summary, (&usage, cost))?;
        Ok(())
    }

    /// Shorten the tool results in `messages`, oldest first, each to no
    /// less than `least` bytes, until about `excess` bytes are gone, with
    /// a note saying so (the whole output stays in the task's event log).
    /// Returns whether anything was shortened.
    fn shorten_results(
        &self,
        id: &str,
        messages: &[crate::store::StoredMessage],
        mut excess: usize,
        least: usize,
    ) -> Result<bool, TaskError> {
        let mut changed = false;
        for stored in messages {
            if excess == 0 {
                break;
            }
            if stored.message.role != Role::User {
                continue;
            }
            let mut message = stored.message.clone();
            let mut touched = false;
            for block in &mut message.content {
                let ContentBlock::ToolResult { content, .. } = block else {
                    continue;
                };
                if excess == 0 || content.len() <= least.saturating_add(SHORTEN_NOTE_BYTES) {
                    continue;
                }
                let wanted = content
                    .len()
                    .saturating_sub(excess.saturating_add(SHORTEN_NOTE_BYTES))
                    .max(least);
                let keep = content.floor_char_boundary(wanted);
                let cut = content.len() - keep;
                content.truncate(keep);
                content.push_str(&format!(
                    "\n[… {cut} more bytes cut to fit the context window; read them in smaller parts if you need them]"
                ));
                excess = excess.saturating_sub(cut.saturating_sub(SHORTEN_NOTE_BYTES));
                touched = true;
            }
            if touched {
                self.store
                    .commit_step(id, Step::new().put(Some(stored.seq), &message))?;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Stream one reply, publishing partial text and arguments. Failed
    /// requests are retried by the provider under its policy (one retry
    /// layer: when spent, the error is final); a stream that broke after
    /// its request succeeded is retried here, at most `stream_retries`
    /// times. `retrying` events number every request of this model call
    /// 1, 2, 3… across both.
    async fn stream_reply(
        &self,
        ctx: &Ctx<'_>,
        body: &RequestBody,
        partial: &std::sync::Mutex<String>,
    ) -> Result<Reply, LlmError> {
        let events = ctx.events;
        let mut made = 0u32;
        let mut broken = 0u32;
        loop {
            // A retried request streams its text again from the start.
            partial.lock().unwrap_or_else(|p| p.into_inner()).clear();
            match self.stream_once(ctx, body, &mut made, partial).await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_retryable() && broken < ctx.config.stream_retries => {
                    broken += 1;
                    let delay = crate::llm::RetryPolicy::default().delay(broken, e.retry_after());
                    events
                        .publish(TaskEvent::Retrying {
                            attempt: made,
                            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                            reason: e.to_string(),
                        })
                        .await;
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Record the text a reply had streamed when the person stopped it:
    /// in the UI history as said, in the API history as an assistant
    /// message marked interrupted (the model sees where it was cut).
    async fn keep_interrupted_text(
        &self,
        ctx: &Ctx<'_>,
        history: &mut History,
        text: &str,
    ) -> Result<(), TaskError> {
        let text = roost_secrets::redact(text).into_owned();
        if text.trim().is_empty() {
            return Ok(());
        }
        let step = Step::new().ui(UiRow::say(UiSubtype::Text), text.as_str());
        history
            .append_reply(
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::Text {
                        text: format!("{text}\n\n[Response interrupted by user]"),
                    }],
                },
                step,
                (
                    ctx.events,
                    vec![TaskEvent::MessageFinal { text: text.clone() }],
                ),
            )
            .await?;
        Ok(())
    }

    /// One request (with the provider's own retries); `made` counts the
    /// requests of this model call so far.
    async fn stream_once(
        &self,
        ctx: &Ctx<'_>,
        body: &RequestBody,
        made: &mut u32,
        partial: &std::sync::Mutex<String>,
    ) -> Result<Reply, LlmError> {
        let events = ctx.events;
        let offset = *made;
        *made += 1;
        let requested = std::time::Instant::now();
        let mut stream = ctx
            .model()
            .map_err(|e| LlmError::Config(e.to_string()))?
            .stream_body(body.clone())
            .await?;
        let mut text = String::new();
        let mut usage = Usage::default();
        let mut names: Vec<(u32, String, String)> = Vec::new();
        let mut first_chunk = None;
        while let Some(ev) = stream.next().await {
            let ev = ev?;
            if first_chunk.is_none()
                && matches!(
                    ev,
                    StreamEvent::TextDelta(_) | StreamEvent::ToolCallStarted { .. }
                )
            {
                first_chunk = Some(requested.elapsed());
            }
            match ev {
                StreamEvent::TextDelta(d) => {
                    text.push_str(&d);
                    partial
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push_str(&d);
                    events.publish(TaskEvent::MessagePartial { delta: d }).await;
                }
                StreamEvent::ToolCallStarted { index, id, name } => {
                    events
                        .publish(TaskEvent::ToolCallPartial {
                            id: id.clone(),
                            tool: name.clone(),
                            args: Value::Null,
                        })
                        .await;
                    names.push((index, id, name));
                }
                StreamEvent::ToolCallArgs { index, partial } => {
                    if let Some((_, id, name)) = names.iter().find(|(i, _, _)| *i == index) {
                        events
                            .publish(TaskEvent::ToolCallPartial {
                                id: id.clone(),
                                tool: name.clone(),
                                args: roost_secrets::redact_json(&partial),
                            })
                            .await;
                    }
                }
                StreamEvent::Usage(u) => usage.add(&u),
                StreamEvent::Retrying {
                    attempt,
                    delay,
                    reason,
                } => {
                    *made = offset + attempt + 1;
                    events
                        .publish(TaskEvent::Retrying {
                            attempt: offset + attempt,
                            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                            reason,
                        })
                        .await;
                }
                StreamEvent::Done {
                    calls,
                    stop_reason,
                    response_id,
                    response_model,
                } => {
                    return Ok(Reply {
                        text,
                        calls,
                        usage,
                        said: Said {
                            stop_reason,
                            response_id,
                            response_model,
                            first_chunk,
                        },
                    });
                }
            }
        }
        Err(LlmError::TruncatedStream)
    }
}

impl Agent {
    /// The `invoke_agent` span of a run of `task` with `setup`, linked to
    /// the task's previous traced run; its own `traceparent` is recorded
    /// with the task's settings (and in `task`), for the next run's link.
    fn agent_span(&self, task: &mut TaskRecord, setup: &TaskSetup) -> OpenSpan {
        let earlier = task.settings.as_ref().and_then(|s| s.trace.clone());
        let span = spans::invoke_agent(
            setup.trace_parent.as_ref(),
            earlier.as_deref(),
            &task.id,
            &task.mode,
            setup.provider.name(),
            setup.provider.model(),
        );
        if let (Some(tp), Some(settings)) = (span.traceparent(), task.settings.as_mut()) {
            settings.trace = Some(tp);
            if let Err(e) = self.store.set_settings(&task.id, settings) {
                tracing::debug!(task = %task.id, "the run's trace context is not recorded: {e}");
            }
        }
        span
    }
}

/// Write what a model's answer said on its `chat` span: usage, finish
/// reason, the response's id and model, and the time to its first chunk.
fn chat_ended(span: &mut OpenSpan, reply: &Reply) {
    if !spans::enabled() {
        return;
    }
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let finish = reply.said.stop_reason.clone().unwrap_or_else(|| {
        if reply.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
        .to_owned()
    });
    span.set([
        KeyValue::new("gen_ai.usage.input_tokens", n(reply.usage.input_tokens)),
        KeyValue::new("gen_ai.usage.output_tokens", n(reply.usage.output_tokens)),
        KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            n(reply.usage.cache_read_tokens),
        ),
        KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            n(reply.usage.cache_write_tokens),
        ),
        KeyValue::new(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(vec![opentelemetry::StringValue::from(finish)].into()),
        ),
    ]);
    if let Some(id) = &reply.said.response_id {
        span.set([KeyValue::new("gen_ai.response.id", id.clone())]);
    }
    if spans::content() {
        let calls: Vec<_> = reply
            .calls
            .iter()
            .map(|c| serde_json::json!({"type": "tool_call", "id": c.id, "name": c.name}))
            .collect();
        let mut parts = vec![serde_json::json!({
            "type": "text",
            "content": roost_secrets::redact(&reply.text),
        })];
        parts.extend(calls);
        span.set([KeyValue::new(
            "gen_ai.output.messages",
            serde_json::json!([{"role": "assistant", "parts": parts}]).to_string(),
        )]);
    }
    if let Some(m) = &reply.said.response_model {
        span.set([KeyValue::new("gen_ai.response.model", m.clone())]);
    }
    if let Some(t) = reply.said.first_chunk {
        span.set([KeyValue::new(
            "gen_ai.response.time_to_first_chunk",
            t.as_secs_f64(),
        )]);
    }
}

/// Most characters of a request's messages kept on its span (opted in).
const MAX_CONTENT: usize = 64 * 1024;

/// The messages of request `body`, secrets redacted, at most
/// [`MAX_CONTENT`] characters (the head: the system prompt and the task's
/// start), for `gen_ai.input.messages` when content is opted in.
fn input_messages(body: &RequestBody) -> String {
    let messages = serde_json::from_slice::<Value>(&body.to_bytes())
        .ok()
        .and_then(|v| v.get("messages").cloned())
        .unwrap_or(Value::Null);
    let text = roost_secrets::redact_json(&messages).to_string();
    if text.len() <= MAX_CONTENT {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_CONTENT).collect();
    cut.push_str("…[truncated]");
    cut
}

/// A task ready to run: claimed, its workspace open and pinned (taken
/// as it was checked, before anything touched it).
struct Held {
    task: TaskRecord,
    claim: TaskClaim,
    ws: Workspace,
    pin: WorkspacePin,
}

/// How a run begins: a new task, or one resumed with the calls that were
/// waiting for a person when it stopped.
enum Begin {
    New,
    Resumed(Option<PendingCalls>),
}

/// Write how a run (in `mode`, since `started`) ended on its
/// `invoke_agent` span and in the metrics.
fn ended(
    mut span: OpenSpan,
    mode: &str,
    started: std::time::Instant,
    outcome: Result<TaskOutcome, TaskError>,
) -> Result<TaskOutcome, TaskError> {
    let status = match &outcome {
        Ok(o) => outcome_name(o),
        Err(_) => "error",
    };
    match &outcome {
        Ok(TaskOutcome::Failed { error }) => span.fail("task_failed", error),
        Err(e) => span.fail("task_error", &e.to_string()),
        Ok(_) => span.set([KeyValue::new("roost.task.outcome", status)]),
    }
    metrics::run_ended(mode, status, started.elapsed());
    outcome
}

fn outcome_name(o: &TaskOutcome) -> &'static str {
    match o {
        TaskOutcome::Completed { .. } => "completed",
        TaskOutcome::Paused { .. } => "paused",
        TaskOutcome::Aborted { .. } => "aborted",
        TaskOutcome::Failed { .. } => "failed",
    }
}

/// Trace entries as the store keeps them until they are in the trace.
fn trace_lines(entries: &[TraceEntry]) -> Vec<String> {
    entries
        .iter()
        .filter_map(|e| serde_json::to_string(e).ok())
        .collect()
}

/// The tools the mode offers the model this turn (the gate checks again
/// per call): one that works with intents only where intents are on, a
/// deferred one only once discovered.
fn offered_tools<'r>(
    state: &RunState,
    registry: &'r Registry,
    intents_on: bool,
) -> Vec<&'r ToolSpec> {
    registry
        .iter()
        .filter(|t| state.mode.offers(&t.spec, t.executor.always_available()))
        .filter(|t| intents_on || !t.executor.needs_intents())
        .filter(|t| !t.executor.deferred() || state.discovered.contains(&t.spec.name))
        .map(|t| &t.spec)
        .collect()
}

/// A reply's calls as the history and the front-ends see them.
struct RequestedCalls {
    /// The tool_use blocks, arguments redacted.
    uses: Vec<ContentBlock>,
    /// The events announcing them.
    requested: Vec<TaskEvent>,
    /// The UI row of each call whose arguments decoded.
    rows: Vec<String>,
}

/// The reply announces the calls it asks for, each with a UI row showing
/// the call as the history holds it.
fn requested_calls(calls: &[AssembledCall]) -> RequestedCalls {
    let mut out = RequestedCalls {
        uses: Vec::with_capacity(calls.len()),
        requested: Vec::with_capacity(calls.len()),
        rows: Vec::with_capacity(calls.len()),
    };
    /// A call's UI row, `{"tool": …, "args": …}`, written from the
    /// arguments as they are (a `json!` object would copy them first).
    #[derive(serde::Serialize)]
    struct Row<'a> {
        tool: &'a str,
        args: &'a Value,
    }
    for c in calls {
        let shown = c.args.as_ref().ok().map(roost_secrets::redact_json);
        if let Some(args) = &shown
            && let Ok(row) = serde_json::to_string(&Row {
                tool: &c.name,
                args,
            })
        {
            out.rows.push(row);
        }
        out.uses.push(ContentBlock::ToolUse {
            id: c.id.clone(),
            name: c.name.clone(),
            input: shown
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
        });
        out.requested.push(TaskEvent::ToolCallRequested {
            id: c.id.clone(),
            tool: c.name.clone(),
            args: shown.unwrap_or(Value::Null),
        });
    }
    out
}

/// Least room (tokens) the conversation needs under the condensing
/// threshold besides the system prompt, the tools and the task: a turn or
/// two. With less, every request would condense and results would be cut.
const MIN_ROOM_TOKENS: u64 = 1024;

/// Bytes a shortened result's note takes, about.
const SHORTEN_NOTE_BYTES: usize = 128;

/// What replaces older messages when no useful summary was had.
const HIDDEN_NOTE: &str =
    "(Earlier messages were hidden to fit the context window; re-read files you need.)";

/// Why no request was made.
enum RequestProblem {
    /// The body could not be encoded.
    Encode(serde_json::Error),
    /// The system prompt, the tools and the task leave the conversation no
    /// room in the window: what to tell the person.
    NoRoom(String),
}

/// What a request offers besides the history (for saying what fills a
/// window that is too small).
struct Offer<'a> {
    /// The mode's slug.
    mode: &'a str,
    /// The tools offered up front.
    tools: &'a [&'a ToolSpec],
    /// Where they are encoded.
    registry: &'a Registry,
}

/// Bytes of `messages` as stored (an estimate of what they weigh in a
/// request).
fn encoded_len(messages: &[crate::store::StoredMessage]) -> usize {
    messages
        .iter()
        .map(|m| serde_json::to_vec(&m.message).map_or(0, |v| v.len()))
        .sum()
}

/// The plain account of a window too small for the mode: what the system
/// prompt, the tools (the largest named) and the task take, against the
/// threshold, and what to do.
fn no_room(
    ctx: &Ctx<'_>,
    wire: &dyn WireFormat,
    offer: &Offer<'_>,
    cache: &RequestCache,
    floor: usize,
    budget: u64,
) -> String {
    let tokens = |bytes: usize| u64::try_from(bytes / BYTES_PER_TOKEN).unwrap_or(u64::MAX);
    let (system, tools) = cache.fixed_parts();
    let task = floor.saturating_sub(system).saturating_sub(tools);
    let mut sizes: Vec<(&str, u64)> = offer
        .tools
        .iter()
        .map(|spec| {
            let size = offer
                .registry
                .encoded_tools(wire, &[*spec])
                .map_or(0, |e| e.len());
            (spec.name.as_str(), tokens(size))
        })
        .collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let largest: Vec<String> = sizes
        .iter()
        .take(3)
        .map(|(name, t)| format!("{name} ~{t}"))
        .collect();
    let window = ctx.config.context_window;
    let threshold = ctx.config.condense_threshold;
    let percent = (threshold * 100.0).round();
    // The window at which the floor leaves the least room needed, in
    // thousands (the threshold is validated: above 0, at most 1).
    let least = tokens(floor).saturating_add(MIN_ROOM_TOKENS) as f64 / threshold;
    let needed = (least / 1000.0).ceil() as u64 * 1000;
    format!(
        "the context window is too small for mode `{mode}`: before any work, each request takes ~{floor} tokens — \
         the system prompt ~{system}, the mode's {count} tools ~{tools} (largest: {largest}) and the task ~{task} — \
         which leaves ~{room} of the {budget} tokens ({percent}% of the {window}-token window) at which the history \
         is condensed; the conversation needs at least {MIN_ROOM_TOKENS}. Use a model with a larger window and set \
         `context_window` to it (this mode needs at least ~{needed}), or defer tools: offer fewer up front (a mode \
         with fewer tool groups; MCP tools are deferred behind search_tools when they are large).",
        room = budget.saturating_sub(tokens(floor)),
        mode = offer.mode,
        floor = tokens(floor),
        system = tokens(system),
        count = offer.tools.len(),
        tools = tokens(tools),
        largest = largest.join(", "),
        task = tokens(task),
    )
}

/// The calls at the start of `rest` that may run together (the reads of a
/// reply whose tools say so), where the task's profile lets reads run at
/// once; fewer than two run as ever, one by one.
fn together<'c>(
    ctx: &Ctx<'_>,
    state: &RunState,
    registry: &Registry,
    rest: &'c [AssembledCall],
) -> Vec<&'c AssembledCall> {
    if !ctx.config.parallel_reads {
        return Vec::new();
    }
    rest.iter()
        .take_while(|c| match (&c.args, registry.get(&c.name)) {
            (Ok(args), Some(tool)) => tool.executor.concurrent(state, args),
            _ => false,
        })
        .collect()
}
