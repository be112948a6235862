//! `new_task`: delegate work to a subtask in another mode (Roo Code's
//! orchestrator). The child runs as a task of its own — its own history,
//! todos, events and asks — while the parent waits (`waiting_for_subtask`);
//! the child's accepted result is the call's result, any other end an
//! error result saying how it ended. The child is bounded by the parent:
//! its approval policy is at most the parent's, it writes only inside the
//! parent's active scope, the parent's mode hooks run on its calls, and the
//! tree's depth, size and concurrency are bounded by the host.
//!
//! The wait is durable: the call's result is recorded only when the child
//! ends, and a call that started a child is never answered "interrupted";
//! after a crash the resumed parent runs the call again, finds its child
//! (by the call's id), resumes it if needed, and waits for it again —
//! nothing finished is redone.

use serde_json::{Value, json};

use super::parse_todos;
use crate::events::TaskEvent;
use crate::intents;
use crate::store::{Step, TaskRecord};
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::turn::{ChildSpec, Ctx, RunState, SpawnError, TaskError, TaskOutcome};
use roost_protocol::{ErrorCode, Inherited, TaskStatus, ToolGroup, ToolSpec, UiRow, UiSubtype};

/// Name of the tool that delegates to a subtask.
pub const NAME: &str = "new_task";

/// The `new_task` tool.
pub(super) struct NewTask {
    spec: ToolSpec,
}

impl NewTask {
    pub(super) fn new() -> Self {
        Self {
            spec: ToolSpec {
                name: NAME.into(),
                description: "Delegate a self-contained piece of work to a new subtask in a mode suited to it. \
                    You wait while it runs; its result (what it reported with attempt_completion) comes back as \
                    this call's result. Give the subtask everything it needs in `message`: it does not see your \
                    conversation. It may only write where you may. Call new_task alone: other calls in the same \
                    message are not executed."
                    .into(),
                args_schema: json!({
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string", "description": "Slug of the subtask's mode (e.g. `code`, `architect`, `debug`, `ask`)."},
                        "message": {"type": "string", "description": "The subtask's instructions, complete."},
                        "todos": {"type": "string", "description": "Optional first todo list of the subtask, as a markdown checklist."}
                    },
                    "required": ["mode", "message"],
                    "additionalProperties": false
                }),
                group: ToolGroup::Modes,
                destructive: false,
                path_args: vec![],
                annotations: Default::default(),
            },
        }
    }
}

/// An error result about the delegation itself (not the model's mistake).
fn refused(message: impl Into<String>) -> Outcome {
    Outcome::error(ErrorCode::PermissionDenied, message)
}

/// The tree may not grow (deeper, or wider).
fn over_limit(message: impl Into<String>) -> Outcome {
    Outcome::error(ErrorCode::LimitExceeded, message)
}

/// What the subtask may write: the parent's active scope (where intents
/// are on; none selected: nothing), within what the parent itself was
/// bounded by.
fn write_bound(ctx: &Ctx<'_>, state: &RunState) -> Option<Vec<String>> {
    let own = &ctx.config.inherited.write_bound;
    if intents::enabled_in(&ctx.ws) {
        // Selecting an intent is checked against the parent's own bound,
        // so the intent's scope already lies within it.
        Some(
            state
                .intent
                .as_ref()
                .map(|(intent, _)| intent.owned_scope.clone())
                .unwrap_or_default(),
        )
    } else {
        own.clone()
    }
}

/// The parent's mode hooks, after those it inherited: they all run on the
/// subtask's calls.
fn hooks(ctx: &Ctx<'_>, state: &RunState) -> Vec<String> {
    let mut all = ctx.config.inherited.hooks.clone();
    for h in &state.mode.hooks {
        if !all.contains(h) {
            all.push(h.clone());
        }
    }
    all
}

/// The forwarding of a subtask's events never ends on its own.
fn unreachable_outcome() -> TaskOutcome {
    TaskOutcome::Failed {
        error: "the subtask's events stopped being followed".into(),
    }
}

/// The tool result for how `child` ended.
fn result_of(child: &TaskRecord, outcome: &TaskOutcome) -> Outcome {
    let who = format!("Subtask {} ({} mode)", child.id, child.mode);
    match outcome {
        TaskOutcome::Completed { result } => {
            Outcome::ok(format!("{who} completed. Its result:\n\n{result}"))
                .with_ui_row(UiSubtype::SubtaskResult, result.clone())
        }
        TaskOutcome::Aborted { reason } => {
            let msg = format!(
                "{who} was aborted before it completed: {reason}. Its history is kept; delegate again or do \
                 the work another way."
            );
            Outcome::error(ErrorCode::Internal, msg.clone())
                .with_ui_row(UiSubtype::SubtaskResult, msg)
        }
        TaskOutcome::Paused { reason } => {
            let msg = format!("{who} stopped before it completed: {reason}.");
            Outcome::error(ErrorCode::Internal, msg.clone())
                .with_ui_row(UiSubtype::SubtaskResult, msg)
        }
        TaskOutcome::Failed { error } => {
            let msg = format!("{who} failed: {error}");
            Outcome::error(ErrorCode::Internal, msg.clone())
                .with_ui_row(UiSubtype::SubtaskResult, msg)
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for NewTask {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn provider(&self) -> &str {
        HOST
    }

    /// Every mode may delegate (as in Roo Code); the host bounds how deep
    /// and wide.
    fn always_available(&self) -> bool {
        true
    }

    /// The parent waits for it: nothing else may run in the same message.
    fn exclusive(&self) -> bool {
        true
    }

    /// A subtask in an unknown mode is the model's mistake, refused
    /// before anyone is asked; otherwise approved like any call of the
    /// `modes` group.
    fn needs(&self, state: &RunState, args: &Value) -> Needs {
        let slug = args["mode"].as_str().unwrap_or_default();
        if state.modes.get(slug).is_none() {
            let known: Vec<&str> = state.modes.iter().map(|m| m.slug.as_str()).collect();
            return Needs::Refused(Box::new(Outcome::mistake(format!(
                "Unknown mode `{slug}`. Available modes: {}.",
                known.join(", ")
            ))));
        }
        if let Some(t) = args["todos"].as_str()
            && let Err(e) = parse_todos(t)
        {
            return Needs::Refused(Box::new(Outcome::mistake(format!("`todos`: {e}"))));
        }
        Needs::Approval(ToolGroup::Modes)
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let (ctx, state) = (c.ctx, c.state);
        let store = &c.agent.store;
        let parent = ctx.task.id.as_str();
        let spawner = match ctx.spawner.get() {
            Ok(s) => s,
            Err(e) => return Ok(refused(format!("cannot start a subtask: {e}"))),
        };
        let (child_id, mut events) = match store.child_of_call(parent, c.call_id)? {
            // Started before an interruption: follow it again.
            Some(child) => match spawner.ensure_running(&child.id) {
                Ok(rx) => (child.id, rx),
                Err(e) => {
                    return Ok(refused(format!(
                        "subtask {} cannot be resumed: {e}",
                        child.id
                    )));
                }
            },
            None => {
                let limits = ctx.config.delegation;
                let depth = ctx.config.inherited.depth.saturating_add(1);
                if depth > limits.max_depth {
                    return Ok(over_limit(format!(
                        "cannot delegate deeper: this task is at depth {} and subtasks may be at most {} deep",
                        depth - 1,
                        limits.max_depth
                    )));
                }
                let started = store.subtasks_in_tree(&ctx.task.root_id)?;
                if started >= u64::from(limits.max_total_children) {
                    return Ok(over_limit(format!(
                        "cannot delegate: this task's tree has started {started} subtasks, the most it may \
                         ({}); finish the work with the subtasks' results",
                        limits.max_total_children
                    )));
                }
                let mode = c.args["mode"].as_str().unwrap_or_default().to_owned();
                let message = c.args["message"].as_str().unwrap_or_default().to_owned();
                let child = ChildSpec {
                    mode: mode.clone(),
                    message: message.clone(),
                    todos: c.args["todos"].as_str().map(str::to_owned),
                    approval: state.policy.clone(),
                    inherited: Inherited {
                        depth,
                        write_bound: write_bound(ctx, state),
                        hooks: hooks(ctx, state),
                        call_id: Some(c.call_id.to_owned()),
                        group: None,
                    },
                };
                let (id, rx) = match spawner.spawn_child(parent, &child) {
                    Ok(spawned) => spawned,
                    Err(SpawnError::Refused(body)) => return Ok(refused(body.message)),
                    Err(e) => return Ok(refused(e.to_string())),
                };
                let row = format!("{id} · {mode}: {message}");
                let step = Step::new()
                    .status(TaskStatus::WaitingForSubtask)
                    .ui(UiRow::say(UiSubtype::Subtask), row.as_str());
                let announce = TaskEvent::SubtaskStarted {
                    child_id: id.clone(),
                    mode,
                    message,
                };
                ctx.events
                    .commit(store, parent, step, vec![announce])
                    .await?;
                (id, Some(rx))
            }
        };
        let timeout = ctx.config.delegation.child_timeout;
        // Whoever follows the parent sees the subtask's events too (its
        // questions above all), live, under the subtask's id.
        let forward = async {
            match events.as_mut() {
                Some(rx) => loop {
                    match rx.recv().await {
                        Ok(env) => ctx.events.forward(&env),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            tracing::debug!(task = parent, "a subtask's {n} events not forwarded");
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await;
                        }
                    }
                },
                None => std::future::pending::<()>().await,
            }
        };
        let outcome = tokio::select! {
            () = forward => unreachable_outcome(),
            r = tokio::time::timeout(timeout, spawner.wait(&child_id)) => match r {
                Ok(Ok(o)) => o,
                Ok(Err(e)) => TaskOutcome::Failed { error: e.to_string() },
                Err(_) => {
                    let why = format!("it ran longer than the {}s a subtask may", timeout.as_secs());
                    spawner.cancel(&child_id, &why);
                    let _ = spawner.wait(&child_id).await;
                    TaskOutcome::Aborted { reason: why }
                }
            },
            () = ctx.control.cancelled() => {
                // The subtask stops with its parent; the call stays open
                // (a resume follows the subtask again).
                spawner.cancel(&child_id, &ctx.control.reason());
                let _ = spawner.wait(&child_id).await;
                return Err(TaskError::Cancelled);
            }
        };
        // What the subtask said last (its end) goes out too.
        if let Some(rx) = events.as_mut() {
            while let Ok(env) = rx.try_recv() {
                ctx.events.forward(&env);
            }
        }
        let child = store.get_task(&child_id)?;
        // The parent works again.
        let result_text = match &outcome {
            TaskOutcome::Completed { result } => result.clone(),
            TaskOutcome::Aborted { reason } | TaskOutcome::Paused { reason } => reason.clone(),
            TaskOutcome::Failed { error } => error.clone(),
        };
        let step = Step::new().status(TaskStatus::Running);
        let announce = TaskEvent::SubtaskFinished {
            child_id: child.id.clone(),
            status: child.status,
            result: result_text,
            usage: child.usage,
            cost: child.cost,
        };
        ctx.events
            .commit(store, parent, step, vec![announce])
            .await?;
        // The child's totals (its own subtasks' included) count in the
        // parent's, recorded with the result (once, whatever happens).
        Ok(result_of(&child, &outcome).with_spent(child.usage, child.cost))
    }
}
