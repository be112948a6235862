//! `new_task`: delegate work to a subtask in another mode (Roo Code's
//! orchestrator). The child runs as a task of its own — its own history,
//! todos, events and asks — while the parent waits (`waiting_for_subtask`);
//! the child's accepted result is the call's result, any other end an
//! error result saying how it ended. The child is bounded by the parent:
//! its approval policy is at most the parent's, it writes only inside the
//! parent's active scope (under the parent's intent, where intents are on:
//! `intents::bound`), the parent's mode hooks run on its calls, and the
//! tree's depth, size and concurrency are bounded by the host.
//!
//! The wait is durable: the call's result is recorded only when the child
//! ends, and a call that started a child is never answered "interrupted";
//! after a crash the resumed parent runs the call again, finds its child
//! (by the call's id), resumes it if needed, and waits for it again —
//! nothing finished is redone.

use serde_json::{Value, json};

use super::delegate::{
    finished_event, follow, inherited, never_stopped, no_room, refused, result_of, step_todo,
    write_bound,
};
use super::parse_todos;
use crate::events::TaskEvent;
use crate::store::Step;
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{ChildSpec, RunState, SpawnError, TaskError, TaskOutcome};
use roost_protocol::{TaskStatus, ToolGroup, ToolSpec, UiRow, UiSubtype};

/// Name of the tool that delegates to a subtask.
pub const NAME: &str = "new_task";

/// The `new_task` tool.
pub(super) struct NewTask {
    spec: ToolSpec,
}

impl NewTask {
    pub(super) fn new() -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Modes,
                "Delegate a self-contained piece of work to a new subtask in a mode suited to it. \
                    You wait while it runs; its result (what it reported with attempt_completion) comes back as \
                    this call's result. Give the subtask everything it needs in `message`: it does not see your \
                    conversation. It may only write where you may. When your todo list has an item for this work, name it in \
                    `message`: it is marked in progress, then done when the subtask completes. Call new_task alone: other calls in the same \
                    message are not executed.",
                json!({
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string", "description": "Slug of the subtask's mode (e.g. `code`, `architect`, `debug`, `ask`)."},
                        "message": {"type": "string", "description": "The subtask's instructions, complete."},
                        "todos": {"type": "string", "description": "Optional first todo list of the subtask, as a markdown checklist."}
                    },
                    "required": ["mode", "message"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for NewTask {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Subtask
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
        let message = c.args["message"].as_str().unwrap_or_default().to_owned();
        let spawner = match ctx.spawner.get() {
            Ok(s) => s,
            Err(e) => return Ok(refused(format!("cannot start a subtask: {e}"))),
        };
        let (child_id, events) = match store.child_of_call(parent, c.call_id)? {
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
                if let Some(no) = no_room(ctx, store, 1)? {
                    return Ok(no);
                }
                let mode = c.args["mode"].as_str().unwrap_or_default().to_owned();
                let bound = write_bound(ctx, state);
                let child = ChildSpec {
                    mode: mode.clone(),
                    message: message.clone(),
                    todos: c.args["todos"].as_str().map(str::to_owned),
                    approval: state.policy.clone(),
                    inherited: inherited(ctx, state, c.call_id, bound, None),
                };
                let record = store.get_task(parent)?;
                let (id, rx) = match spawner.spawn_child(&record, &child).await {
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
                    message: message.clone(),
                };
                ctx.events
                    .commit(store, parent, step, vec![announce])
                    .await?;
                (id, Some(rx))
            }
        };
        step_todo(ctx, store, &message, false).await?;
        let outcome = follow(ctx, spawner.as_ref(), &child_id, events, never_stopped()).await?;
        let child = store.get_task(&child_id)?;
        if matches!(outcome, TaskOutcome::Completed { .. }) {
            step_todo(ctx, store, &message, true).await?;
        }
        // The parent works again.
        let step = Step::new().status(TaskStatus::Running);
        ctx.events
            .commit(store, parent, step, vec![finished_event(&child, &outcome)])
            .await?;
        // The child's totals (its own subtasks' included) count in the
        // parent's, recorded with the result (once, whatever happens).
        Ok(result_of(&child, &outcome).with_spent(child.usage, child.cost))
    }
}
