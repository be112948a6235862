//! The parent's side of delegation, shared by `new_task` (one subtask)
//! and `new_parallel_tasks` (a group): what a child inherits (never more
//! than the parent has), how big the tree may grow, how the parent follows
//! a child (its events forwarded, its time limit, a stop from the group,
//! the parent's own cancel), how a child's end reads as a tool result, and
//! the parent's todo item a child carries out (Roo's todo → subtask
//! lifecycle: marked in progress when the child starts, done when it
//! completes).

use tokio::sync::{broadcast::error::RecvError, watch};

use crate::events::{Subscription, TaskEvent};
use crate::intents;
use crate::store::{Step, Store, TaskRecord, TodoState};
use crate::tools::executor::Outcome;
use crate::turn::{Ctx, RunState, Spawner, TaskError, TaskOutcome};
use roost_protocol::{ErrorCode, Inherited, UiSubtype};

/// An error result about the delegation itself (not the model's mistake).
pub(super) fn refused(message: impl Into<String>) -> Outcome {
    Outcome::error(ErrorCode::PermissionDenied, message)
}

/// The tree may not grow (deeper, or wider).
pub(super) fn over_limit(message: impl Into<String>) -> Outcome {
    Outcome::error(ErrorCode::LimitExceeded, message)
}

/// What a subtask may write at most: the parent's active scope (where
/// intents are on; none selected: nothing), within what the parent itself
/// was bounded by. `None`: the whole workspace. Where intents are on, the
/// parent's intent goes with it ([`inherited`]); how a subtask holds it is
/// [`intents::bound`]'s rule.
pub(super) fn write_bound(ctx: &Ctx<'_>, state: &RunState) -> Option<Vec<String>> {
    if intents::enabled_in(&ctx.ws) {
        // The parent holds its intent through `intents::bound::hold`, so
        // the scope it holds (narrowed, for a subtask) already lies within
        // its own bound.
        Some(
            state
                .intent
                .as_ref()
                .map(|(_, scope)| scope.globs().to_vec())
                .unwrap_or_default(),
        )
    } else {
        ctx.config.inherited.write_bound.clone()
    }
}

/// What a subtask started by call `call_id` inherits: one level deeper,
/// `write_bound`, the parent's active intent (where intents are on: the
/// subtask works under it, narrowed to `write_bound`), and the parent's
/// mode hooks after those it inherited (they all run on the subtask's
/// calls).
pub(super) fn inherited(
    ctx: &Ctx<'_>,
    state: &RunState,
    call_id: &str,
    write_bound: Option<Vec<String>>,
    group: Option<String>,
) -> Inherited {
    let mut hooks = ctx.config.inherited.hooks.clone();
    for h in &state.mode.hooks {
        if !hooks.contains(h) {
            hooks.push(h.clone());
        }
    }
    Inherited {
        depth: ctx.config.inherited.depth.saturating_add(1),
        write_bound,
        hooks,
        call_id: Some(call_id.to_owned()),
        group,
        command_profile: state.command_profile().map(str::to_owned),
        intent: if intents::enabled_in(&ctx.ws) {
            state.intent_id().map(str::to_owned)
        } else {
            None
        },
    }
}

/// Why the tree may not take `adding` more subtasks, if it may not: too
/// deep, or too many started already.
pub(super) fn no_room(
    ctx: &Ctx<'_>,
    store: &Store,
    adding: usize,
) -> Result<Option<Outcome>, TaskError> {
    let limits = ctx.config.delegation;
    let depth = ctx.config.inherited.depth;
    if depth >= limits.max_depth {
        return Ok(Some(over_limit(format!(
            "cannot delegate deeper: this task is at depth {depth} and subtasks may be at most {} deep",
            limits.max_depth
        ))));
    }
    let started = store.subtasks_in_tree(&ctx.task.root_id)?;
    let adding = u64::try_from(adding).unwrap_or(u64::MAX);
    let max = u64::from(limits.max_total_children);
    if started.saturating_add(adding) > max {
        return Ok(Some(over_limit(format!(
            "cannot delegate: this task's tree has started {started} subtasks and may start at most {max} \
             ({adding} more asked for); finish the work with the subtasks' results"
        ))));
    }
    Ok(None)
}

/// No stop from a group: a lone subtask runs until it ends.
pub(super) fn never_stopped() -> watch::Receiver<Option<String>> {
    // The sender is dropped: the value stays `None` for good.
    watch::channel(None).1
}

/// Follow subtask `child_id` until it ends: its events go out on the
/// parent's bus (under its own id) as they come; past the per-subtask
/// time limit, or when `stop` says why, it is cancelled and its end
/// awaited. The parent's own cancel cancels it and is the error (the
/// call stays open: a resume follows the subtask again).
pub(super) async fn follow(
    ctx: &Ctx<'_>,
    spawner: &dyn Spawner,
    child_id: &str,
    mut events: Option<Subscription>,
    mut stop: watch::Receiver<Option<String>>,
) -> Result<TaskOutcome, TaskError> {
    let parent = ctx.task.id.as_str();
    let timeout = ctx.config.delegation.child_timeout;
    let forward = async {
        match events.as_mut() {
            Some(rx) => loop {
                match rx.recv().await {
                    Ok(env) => ctx.events.forward(&env),
                    Err(RecvError::Lagged(n)) => {
                        tracing::debug!(task = parent, "a subtask's {n} events not forwarded");
                    }
                    Err(RecvError::Closed) => std::future::pending::<()>().await,
                }
            },
            None => std::future::pending::<()>().await,
        }
    };
    let stopped = async {
        let why = stop
            .wait_for(Option::is_some)
            .await
            .map(|why| why.clone().unwrap_or_default());
        match why {
            Ok(why) => why,
            Err(_) => std::future::pending::<String>().await,
        }
    };
    let stop_and_wait = async |why: String| {
        spawner.cancel(child_id, &why);
        match spawner.wait(child_id).await {
            Ok(o) => o,
            Err(_) => TaskOutcome::Aborted { reason: why },
        }
    };
    let outcome = tokio::select! {
        () = forward => TaskOutcome::Failed {
            error: "the subtask's events stopped being followed".into(),
        },
        r = tokio::time::timeout(timeout, spawner.wait(child_id)) => match r {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => TaskOutcome::Failed { error: e.to_string() },
            Err(_) => {
                let why = format!("it ran longer than the {}s a subtask may", timeout.as_secs());
                stop_and_wait(why).await
            }
        },
        why = stopped => stop_and_wait(why).await,
        () = ctx.control.cancelled() => {
            let _ = stop_and_wait(ctx.control.reason()).await;
            return Err(TaskError::Cancelled);
        }
    };
    // What the subtask said last (its end) goes out too.
    if let Some(rx) = events.as_mut() {
        while let Ok(env) = rx.try_recv() {
            ctx.events.forward(&env);
        }
    }
    Ok(outcome)
}

/// What an ended subtask left: its result, or why it has none.
pub(super) fn outcome_text(outcome: &TaskOutcome) -> &str {
    match outcome {
        TaskOutcome::Completed { result } => result,
        TaskOutcome::Aborted { reason } | TaskOutcome::Paused { reason } => reason,
        TaskOutcome::Failed { error } => error,
    }
}

/// The tool result for how `child` ended.
pub(super) fn result_of(child: &TaskRecord, outcome: &TaskOutcome) -> Outcome {
    let who = format!("Subtask {} ({} mode)", child.id, child.mode);
    let failed = |msg: String| {
        Outcome::error(ErrorCode::Internal, msg.clone()).with_ui_row(UiSubtype::SubtaskResult, msg)
    };
    match outcome {
        TaskOutcome::Completed { result } => {
            Outcome::ok(format!("{who} completed. Its result:\n\n{result}"))
                .with_ui_row(UiSubtype::SubtaskResult, result.clone())
        }
        TaskOutcome::Aborted { reason } => failed(format!(
            "{who} was aborted before it completed: {reason}. Its history is kept; delegate again or do \
             the work another way."
        )),
        TaskOutcome::Paused { reason } => {
            failed(format!("{who} stopped before it completed: {reason}."))
        }
        TaskOutcome::Failed { error } => failed(format!("{who} failed: {error}")),
    }
}

/// The event saying subtask `child` ended.
pub(super) fn finished_event(child: &TaskRecord, outcome: &TaskOutcome) -> TaskEvent {
    TaskEvent::SubtaskFinished {
        child_id: child.id.clone(),
        status: child.status,
        result: outcome_text(outcome).to_owned(),
        usage: child.usage,
        cost: child.cost,
    }
}

/// Normalised for matching a todo item to a subtask's instructions.
fn norm(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The parent's todo item a subtask with `message` carries out: the first
/// one not done whose text the instructions contain (an orchestrator
/// delegates its plan's items by name).
fn todo_index(items: &[crate::store::TodoItem], message: &str) -> Option<usize> {
    let message = norm(message);
    items.iter().position(|t| {
        let text = norm(&t.text);
        t.state != TodoState::Completed && !text.is_empty() && message.contains(&text)
    })
}

/// Keep the parent's todo list in step with a subtask: its item is in
/// progress while the subtask runs (`done` false) and done once it
/// completed (`done` true). Nothing happens when no item matches or the
/// item is in that state already.
pub(super) async fn step_todo(
    ctx: &Ctx<'_>,
    store: &Store,
    message: &str,
    done: bool,
) -> Result<(), TaskError> {
    let mut items = store.get_todos(&ctx.task.id)?;
    if mark(&mut items, message, done) {
        write_todos(ctx, store, &items).await?;
    }
    Ok(())
}

/// Mark the item of `items` a subtask with `message` carries out in
/// progress (`done` false) or done; whether anything changed (no item
/// matches, or it is in that state already: nothing does).
pub(super) fn mark(items: &mut [crate::store::TodoItem], message: &str, done: bool) -> bool {
    let state = if done {
        TodoState::Completed
    } else {
        TodoState::InProgress
    };
    match todo_index(items, message).and_then(|i| items.get_mut(i)) {
        Some(item) if item.state != state => {
            item.state = state;
            true
        }
        _ => false,
    }
}

/// Record `items` as the parent's todo list, and announce it.
pub(super) async fn write_todos(
    ctx: &Ctx<'_>,
    store: &Store,
    items: &[crate::store::TodoItem],
) -> Result<(), TaskError> {
    let markdown = super::render_todos(items);
    ctx.events
        .commit(
            store,
            &ctx.task.id,
            Step::new().todos(items),
            vec![TaskEvent::TodosUpdated { markdown }],
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TodoItem;

    #[test]
    fn a_subtask_carries_out_the_first_open_item_its_instructions_name() {
        let item = |text: &str, state| TodoItem {
            text: text.into(),
            state,
        };
        let items = vec![
            item("Write the parser", TodoState::Completed),
            item("Write the parser tests", TodoState::Pending),
            item("Document  the CLI", TodoState::Pending),
        ];
        assert_eq!(
            todo_index(&items, "Please document the cli: flags and examples"),
            Some(2)
        );
        assert_eq!(
            todo_index(&items, "write the parser tests for edge cases"),
            Some(1)
        );
        assert_eq!(todo_index(&items, "Something else"), None);
    }

    #[test]
    fn marking_an_item_says_whether_the_list_changed() {
        let mut items = vec![TodoItem {
            text: "Write the parser".into(),
            state: TodoState::Pending,
        }];
        let msg = "write the parser, please";
        assert!(mark(&mut items, msg, false));
        assert_eq!(items[0].state, TodoState::InProgress);
        assert!(!mark(&mut items, msg, false), "in progress already");
        assert!(mark(&mut items, msg, true));
        assert_eq!(items[0].state, TodoState::Completed);
        assert!(!mark(&mut items, msg, true), "done: no open item matches");
        assert!(!mark(&mut items, "something else", true));
    }
}
