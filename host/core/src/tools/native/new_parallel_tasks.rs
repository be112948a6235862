//! `new_parallel_tasks`: run several subtasks side by side (Roo's "Touch
//! and Go" task groups). `all` waits for every child and returns one
//! aggregated result; `race` returns the first completed result and aborts
//! the others (their histories are kept). Each child is a subtask like
//! `new_task`'s — bounded by the parent's approvals, hooks and write scope
//! — and siblings get pairwise disjoint write scopes, checked before any
//! starts (a child without a scope is read-only). Where intents are on,
//! each child works under the parent's intent narrowed to its own scope
//! (`intents::bound`). The group is a record
//! of its own (`task_groups`), with events as it starts, as each child
//! ends and as it ends; a resumed parent finds it by the call's id,
//! follows the children that run, starts the ones that never did, and
//! redoes nothing that finished.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, watch};

use super::delegate::{
    finished_event, follow, inherited, mark, no_room, outcome_text, refused, write_bound,
    write_todos,
};
use crate::events::TaskEvent;
use crate::intents::bound::{Bound, overlap, within};
use crate::store::{Step, Store, TaskRecord, TodoItem, now_ms};
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{ChildSpec, Ctx, RunState, SpawnError, Spawner, TaskError, TaskOutcome};
use roost_protocol::{
    ErrorCode, GroupRecord, GroupResult, GroupStatus, GroupStrategy, GroupTask, TaskStatus,
    ToolGroup, ToolSpec, UiRow, UiSubtype, Usage,
};

/// Name of the tool that starts a parallel group.
pub const NAME: &str = "new_parallel_tasks";

/// The most children one group may have (the tree's own bound applies too).
const MAX_CHILDREN: usize = 100;

/// The `new_parallel_tasks` tool.
pub(super) struct NewParallelTasks {
    spec: ToolSpec,
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    tasks: Vec<GroupTask>,
    #[serde(default = "all")]
    strategy: GroupStrategy,
    #[serde(default)]
    max_concurrency: Option<u32>,
    #[serde(default)]
    timeout_s: Option<u64>,
}

fn all() -> GroupStrategy {
    GroupStrategy::All
}

impl Args {
    fn parse(args: &Value) -> Result<Self, String> {
        let a: Self = serde_json::from_value(args.clone()).map_err(|e| e.to_string())?;
        if a.tasks.is_empty() {
            return Err("`tasks` is empty: give at least one subtask".into());
        }
        if a.tasks.len() > MAX_CHILDREN {
            return Err(format!(
                "`tasks` has {} subtasks; a group may have at most {MAX_CHILDREN}",
                a.tasks.len()
            ));
        }
        if a.max_concurrency == Some(0) || a.timeout_s == Some(0) {
            return Err("`max_concurrency` and `timeout_s` must be at least 1".into());
        }
        Ok(a)
    }
}

impl NewParallelTasks {
    pub(super) fn new() -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Modes,
                "Run several self-contained subtasks at the same time, each in its own mode. \
                    With strategy `all` (the default) you wait for all of them and get every result (or \
                    error) with its token usage and cost; with `race` you get the first completed result \
                    and the others are aborted. Each subtask may write only inside its `scope` (globs \
                    within what you may write; siblings' scopes must not overlap); one without a scope \
                    only reads. Give each everything it needs in `message`: they do not see your \
                    conversation. Call new_parallel_tasks alone: other calls in the same message are not \
                    executed.",
                json!({
                    "type": "object",
                    "properties": {
                        "tasks": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": MAX_CHILDREN,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "mode": {"type": "string", "description": "Slug of the subtask's mode."},
                                    "message": {"type": "string", "description": "The subtask's instructions, complete."},
                                    "scope": {"type": "array", "items": {"type": "string"}, "description": "Workspace-relative globs the subtask may write (e.g. `src/parser/**`)."}
                                },
                                "required": ["mode", "message"],
                                "additionalProperties": false
                            }
                        },
                        "strategy": {"type": "string", "enum": ["all", "race"], "description": "`all`: wait for every subtask; `race`: the first completed wins, the rest are aborted."},
                        "max_concurrency": {"type": "integer", "minimum": 1, "description": "At most this many run at once (the others wait)."},
                        "timeout_s": {"type": "integer", "minimum": 1, "description": "The group's time limit; subtasks still running then are aborted."}
                    },
                    "required": ["tasks"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

/// Why the children's scopes cannot be granted, if they cannot: each must
/// be valid globs inside the workspace and inside what the parent may
/// write (`bound`; `None`: the whole workspace), and no two may overlap.
fn scopes_refused(tasks: &[GroupTask], bound: Option<&[String]>) -> Option<String> {
    for (i, t) in tasks.iter().enumerate() {
        let n = i + 1;
        if let Err(e) = Bound::new(&t.scope) {
            return Some(format!("subtask {n}'s scope: {e}"));
        }
        if let Some(g) = t
            .scope
            .iter()
            .find(|g| g.starts_with('/') || g.split('/').any(|c| c == ".."))
        {
            return Some(format!(
                "subtask {n}'s scope `{g}` leaves the workspace; give workspace-relative globs"
            ));
        }
        if let Some(parent) = bound
            && !within(&t.scope, parent)
        {
            let outside = t
                .scope
                .iter()
                .find(|g| !within(std::slice::from_ref(*g), parent))
                .map_or("", String::as_str);
            return Some(format!(
                "subtask {n}'s scope `{outside}` is not provably inside what this task may write ({}); a \
                 subtask never gets more than its parent",
                if parent.is_empty() {
                    "nothing".to_owned()
                } else {
                    parent.join(", ")
                }
            ));
        }
    }
    for (i, a) in tasks.iter().enumerate() {
        for (j, b) in tasks.iter().enumerate().skip(i + 1) {
            if let Some((x, y)) = overlap(&a.scope, &b.scope) {
                return Some(format!(
                    "the scopes of subtasks {} and {} overlap (`{x}` and `{y}`); parallel subtasks must \
                     write disjoint parts of the workspace",
                    i + 1,
                    j + 1
                ));
            }
        }
    }
    None
}

/// How one child ended (`child` none: it never started).
struct Ended {
    index: usize,
    child: Option<TaskRecord>,
    outcome: TaskOutcome,
}

impl Ended {
    fn completed(&self) -> bool {
        matches!(self.outcome, TaskOutcome::Completed { .. })
    }

    fn result(&self) -> GroupResult {
        let (child_id, status, usage, cost) = match &self.child {
            Some(c) => (Some(c.id.clone()), c.status, c.usage, c.cost),
            None => (None, TaskStatus::Aborted, Usage::default(), 0.0),
        };
        let text = outcome_text(&self.outcome).to_owned();
        let (result, error) = if self.completed() {
            (Some(text), None)
        } else {
            (None, Some(text))
        };
        GroupResult {
            index: u32::try_from(self.index).unwrap_or(u32::MAX),
            child_id,
            status,
            result,
            error,
            usage,
            cost,
        }
    }
}

/// What every child of one run of the group shares.
struct Run<'a> {
    ctx: &'a Ctx<'a>,
    state: &'a RunState,
    store: &'a Store,
    spawner: &'a dyn Spawner,
    call_id: &'a str,
    /// The coordinator's record, read as the group starts (it changes
    /// nothing a child is started with while its group runs).
    parent: TaskRecord,
    record: Mutex<GroupRecord>,
    slots: Arc<Semaphore>,
    stop: watch::Receiver<Option<String>>,
    todos: Todos,
}

/// The parent's todo list as its group keeps it in step with the
/// children: read once (while the group runs only its children change
/// it), changed by each child at once, and written by one at a time, the
/// whole list as it then is — so children that change it together cost
/// a write or two between them, not one each in turn.
struct Todos {
    /// The list, and how many changes it has had.
    list: Mutex<(Vec<TodoItem>, u64)>,
    /// Held while the list is written: how many changes the store has.
    written: tokio::sync::Mutex<u64>,
}

impl Todos {
    fn new(items: Vec<TodoItem>) -> Self {
        Self {
            list: Mutex::new((items, 0)),
            written: tokio::sync::Mutex::new(0),
        }
    }

    fn list(&self) -> std::sync::MutexGuard<'_, (Vec<TodoItem>, u64)> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Run<'_> {
    /// Mark the parent's todo item for `message` in progress or done;
    /// once this returns, the store has the list with that change.
    async fn step_todo(&self, message: &str, done: bool) -> Result<(), TaskError> {
        let change = {
            let mut list = self.todos.list();
            if !mark(&mut list.0, message, done) {
                return Ok(());
            }
            list.1 += 1;
            list.1
        };
        let mut written = self.todos.written.lock().await;
        if *written >= change {
            // Written meanwhile, with this change, by another child.
            return Ok(());
        }
        let (items, upto) = self.todos.list().clone();
        write_todos(self.ctx, self.store, &items).await?;
        *written = upto;
        Ok(())
    }

    fn record(&self) -> std::sync::MutexGuard<'_, GroupRecord> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start (or follow again) child `index` once the group has a free
    /// slot, and follow it to its end. A child the group stopped for
    /// before it started never starts.
    async fn child(&self, index: usize) -> Result<Ended, TaskError> {
        let (task, existing, group_id) = {
            let r = self.record();
            let Some(task) = r.tasks.get(index).cloned() else {
                return Err(TaskError::Store(crate::store::StoreError::Corrupt {
                    task: r.coordinator.clone(),
                    seq: 0,
                    detail: format!("parallel group {} has no subtask {index}", r.id),
                }));
            };
            (task, r.children.get(index).cloned().flatten(), r.id.clone())
        };
        let mut stop = self.stop.clone();
        let permit = tokio::select! {
            p = Arc::clone(&self.slots).acquire_owned() => p.ok(),
            _ = stop.wait_for(Option::is_some) => None,
            () = self.ctx.control.cancelled() => return Err(TaskError::Cancelled),
        };
        let stopped = self.stop.borrow().clone();
        if existing.is_none() && (permit.is_none() || stopped.is_some()) {
            let reason = stopped.unwrap_or_else(|| "its group ended first".into());
            return Ok(Ended {
                index,
                child: None,
                outcome: TaskOutcome::Aborted {
                    reason: format!("never started: {reason}"),
                },
            });
        }
        let parent = self.ctx.task.id.as_str();
        let (id, events) = match existing {
            Some(id) => match self.spawner.ensure_running(&id) {
                Ok(rx) => (id, rx),
                Err(e) => {
                    return Ok(Ended {
                        index,
                        child: self.store.get_task(&id).ok(),
                        outcome: TaskOutcome::Failed {
                            error: format!("cannot be resumed: {e}"),
                        },
                    });
                }
            },
            None => {
                let spec = ChildSpec {
                    mode: task.mode.clone(),
                    message: task.message.clone(),
                    todos: None,
                    approval: self.state.policy.clone(),
                    // No scope: read-only.
                    inherited: inherited(
                        self.ctx,
                        self.state,
                        self.call_id,
                        Some(task.scope.clone()),
                        Some(group_id),
                    ),
                };
                let (id, rx) = match self.spawner.spawn_child(&self.parent, &spec).await {
                    Ok(spawned) => spawned,
                    Err(e) => {
                        let error = match e {
                            SpawnError::Refused(body) => body.message,
                            e => e.to_string(),
                        };
                        return Ok(Ended {
                            index,
                            child: None,
                            outcome: TaskOutcome::Failed {
                                error: format!("could not start: {error}"),
                            },
                        });
                    }
                };
                let snapshot = {
                    let mut r = self.record();
                    if let Some(slot) = r.children.get_mut(index) {
                        *slot = Some(id.clone());
                    }
                    r.clone()
                };
                let announce = TaskEvent::SubtaskStarted {
                    child_id: id.clone(),
                    mode: task.mode.clone(),
                    message: task.message.clone(),
                };
                self.ctx
                    .events
                    .commit(
                        self.store,
                        parent,
                        Step::new().group(&snapshot),
                        vec![announce],
                    )
                    .await?;
                (id, Some(rx))
            }
        };
        self.step_todo(&task.message, false).await?;
        let outcome = follow(self.ctx, self.spawner, &id, events, self.stop.clone()).await?;
        drop(permit);
        let child = self.store.get_task(&id)?;
        if matches!(outcome, TaskOutcome::Completed { .. }) {
            self.step_todo(&task.message, true).await?;
        }
        let group_id = self.record().id.clone();
        let ended = TaskEvent::GroupChildFinished {
            group_id,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            child_id: Some(child.id.clone()),
            status: child.status,
        };
        self.ctx
            .events
            .commit(
                self.store,
                parent,
                Step::new(),
                vec![finished_event(&child, &outcome), ended],
            )
            .await?;
        Ok(Ended {
            index,
            child: Some(child),
            outcome,
        })
    }
}

/// Children recorded as tasks but not in the group's record (the process
/// stopped between creating one and recording it) take their place
/// again: the first unfilled slot asking for the same mode and message.
fn reconcile(group: &mut GroupRecord, children: &[TaskRecord]) {
    for c in children {
        let of_group = c
            .settings
            .as_ref()
            .and_then(|s| s.inherited.group.as_deref())
            == Some(group.id.as_str());
        if !of_group || group.children.iter().flatten().any(|id| *id == c.id) {
            continue;
        }
        let slot = group.tasks.iter().enumerate().position(|(i, t)| {
            t.mode == c.mode
                && t.message == c.prompt
                && group.children.get(i).is_some_and(Option::is_none)
        });
        if let Some(slot) = slot.and_then(|i| group.children.get_mut(i)) {
            *slot = Some(c.id.clone());
        }
    }
}

/// The aggregated tool result of a group that ended.
fn result_of(group: &GroupRecord, winner: Option<usize>) -> Outcome {
    let completed = group
        .results
        .iter()
        .filter(|r| r.status == TaskStatus::Completed && r.result.is_some())
        .count();
    let children: Vec<Value> = group
        .results
        .iter()
        .map(|r| {
            let task = usize::try_from(r.index)
                .ok()
                .and_then(|i| group.tasks.get(i));
            json!({
                "index": r.index,
                "id": r.child_id,
                "mode": task.map(|t| t.mode.as_str()),
                "status": r.status,
                "result": r.result,
                "error": r.error,
                "usage": r.usage,
                "cost": r.cost,
            })
        })
        .collect();
    let total = group.results.len();
    let summary = match (group.strategy, winner) {
        (GroupStrategy::Race, Some(w)) => format!(
            "Subtask {} won the race; the others were aborted (their histories are kept).",
            w + 1
        ),
        (GroupStrategy::Race, None) => "No subtask completed; the race has no winner.".to_owned(),
        (GroupStrategy::All, _) => format!("{completed} of {total} subtasks completed."),
    };
    let summary = if group.status == GroupStatus::TimedOut {
        format!(
            "The group ran past its {}s limit; subtasks still running were aborted. {summary}",
            group.timeout_s.unwrap_or_default()
        )
    } else {
        summary
    };
    let body = json!({
        "group": group.id,
        "strategy": group.strategy,
        "status": group.status,
        "winner": winner.map(|w| w + 1),
        "subtasks": children,
    });
    let text = format!(
        "Parallel group {}: {summary}\n\n{}",
        group.id,
        serde_json::to_string_pretty(&body).unwrap_or_default()
    );
    let outcome = if group.status == GroupStatus::Completed {
        Outcome::ok(text)
    } else {
        Outcome::error(ErrorCode::Internal, text)
    };
    outcome.with_ui_row(UiSubtype::SubtaskResult, summary)
}

#[async_trait::async_trait]
impl ToolExecutor for NewParallelTasks {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Subtask
    }

    fn provider(&self) -> &str {
        HOST
    }

    /// Every mode may delegate; the host bounds how deep and wide.
    fn always_available(&self) -> bool {
        true
    }

    /// The parent waits for the group: nothing else may run in the same
    /// message.
    fn exclusive(&self) -> bool {
        true
    }

    /// Malformed tasks and unknown modes are the model's mistake, refused
    /// before anyone is asked; otherwise approved like any call of the
    /// `modes` group.
    fn needs(&self, state: &RunState, args: &Value) -> Needs {
        let args = match Args::parse(args) {
            Ok(a) => a,
            Err(e) => return Needs::Refused(Box::new(Outcome::mistake(e))),
        };
        if let Some(t) = args
            .tasks
            .iter()
            .find(|t| state.modes.get(&t.mode).is_none())
        {
            let known: Vec<&str> = state.modes.iter().map(|m| m.slug.as_str()).collect();
            return Needs::Refused(Box::new(Outcome::mistake(format!(
                "Unknown mode `{}`. Available modes: {}.",
                t.mode,
                known.join(", ")
            ))));
        }
        Needs::Approval(ToolGroup::Modes)
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let (ctx, state) = (c.ctx, c.state);
        let store = &c.agent.store;
        let parent = ctx.task.id.as_str();
        let args = match Args::parse(c.args) {
            Ok(a) => a,
            Err(e) => return Ok(Outcome::mistake(e)),
        };
        let spawner = match ctx.spawner.get() {
            Ok(s) => s,
            Err(e) => return Ok(refused(format!("cannot start subtasks: {e}"))),
        };
        let mut group = match store.group_of_call(parent, c.call_id)? {
            // Started before an interruption: go on with it.
            Some(g) => g,
            None => {
                if let Some(no) = no_room(ctx, store, args.tasks.len())? {
                    return Ok(no);
                }
                let bound = write_bound(ctx, state);
                if let Some(why) = scopes_refused(&args.tasks, bound.as_deref()) {
                    return Ok(refused(why));
                }
                let n = args.tasks.len();
                let group = GroupRecord {
                    id: format!("grp_{}", uuid::Uuid::now_v7().simple()),
                    coordinator: parent.to_owned(),
                    call_id: c.call_id.to_owned(),
                    strategy: args.strategy,
                    status: GroupStatus::Running,
                    max_concurrency: args
                        .max_concurrency
                        .unwrap_or_else(|| u32::try_from(n).unwrap_or(u32::MAX)),
                    timeout_s: args.timeout_s,
                    tasks: args.tasks,
                    children: vec![None; n],
                    results: Vec::new(),
                    created_at: now_ms(),
                    finished_at: None,
                };
                let row = format!(
                    "{} · {} subtasks ({}): {}",
                    group.id,
                    n,
                    group.strategy.as_str(),
                    group
                        .tasks
                        .iter()
                        .map(|t| t.mode.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let step = Step::new()
                    .status(TaskStatus::WaitingForSubtask)
                    .ui(UiRow::say(UiSubtype::Subtask), row.as_str())
                    .group(&group);
                let announce = TaskEvent::GroupStarted {
                    group_id: group.id.clone(),
                    strategy: group.strategy,
                    children: u32::try_from(n).unwrap_or(u32::MAX),
                };
                ctx.events
                    .commit(store, parent, step, vec![announce])
                    .await?;
                group
            }
        };
        if group.status == GroupStatus::Running {
            reconcile(&mut group, &store.children(parent)?);
            run_group(ctx, state, store, spawner.as_ref(), c.call_id, group).await
        } else {
            // It ended before the call's result was recorded.
            let winner = winner_of(&group);
            Ok(result_of(&group, winner).with_spent(spent(&group).0, spent(&group).1))
        }
    }
}

/// The race's winner: the first completed child recorded.
fn winner_of(group: &GroupRecord) -> Option<usize> {
    if group.strategy != GroupStrategy::Race {
        return None;
    }
    group
        .results
        .iter()
        .find(|r| r.result.is_some())
        .and_then(|r| usize::try_from(r.index).ok())
}

/// What the group's children used and cost, together.
fn spent(group: &GroupRecord) -> (Usage, f64) {
    let mut usage = Usage::default();
    let mut cost = 0.0;
    for r in &group.results {
        usage.add(&r.usage);
        cost += r.cost;
    }
    (usage, cost)
}

/// Run a recorded group to its end: every child (at most
/// `max_concurrency` at once), stopped early by a race's winner or the
/// time limit; then its record, its event and the aggregated result.
async fn run_group(
    ctx: &Ctx<'_>,
    state: &RunState,
    store: &Store,
    spawner: &dyn Spawner,
    call_id: &str,
    group: GroupRecord,
) -> Result<Outcome, TaskError> {
    let parent = ctx.task.id.as_str();
    let n = group.tasks.len();
    let (strategy, timeout_s) = (group.strategy, group.timeout_s);
    let slots = usize::try_from(group.max_concurrency)
        .unwrap_or(usize::MAX)
        .clamp(1, n.max(1));
    let (stop_tx, stop) = watch::channel(None::<String>);
    let run = Run {
        ctx,
        state,
        store,
        spawner,
        call_id,
        parent: store.get_task(parent)?,
        record: Mutex::new(group),
        slots: Arc::new(Semaphore::new(slots)),
        stop,
        todos: Todos::new(store.get_todos(parent)?),
    };
    let mut children: FuturesUnordered<_> = (0..n).map(|i| run.child(i)).collect();
    let limit = async {
        match timeout_s {
            Some(s) => tokio::time::sleep(std::time::Duration::from_secs(s)).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(limit);
    let mut ended: Vec<Option<Ended>> = (0..n).map(|_| None).collect();
    let (mut winner, mut timed_out, mut cancelled, mut failure) = (None, false, false, None);
    loop {
        tokio::select! {
            next = children.next() => match next {
                None => break,
                Some(Ok(e)) => {
                    if strategy == GroupStrategy::Race && winner.is_none() && e.completed() {
                        winner = Some(e.index);
                        stop_tx.send_replace(Some(format!(
                            "subtask {} of its group completed first",
                            e.index + 1
                        )));
                    }
                    let i = e.index;
                    if let Some(slot) = ended.get_mut(i) {
                        *slot = Some(e);
                    }
                }
                Some(Err(TaskError::Cancelled)) => cancelled = true,
                Some(Err(e)) => {
                    tracing::error!(task = parent, "a parallel subtask cannot be followed: {e}");
                    stop_tx.send_replace(Some(format!("its group failed: {e}")));
                    failure.get_or_insert(e);
                }
            },
            () = &mut limit, if !timed_out => {
                timed_out = true;
                stop_tx.send_replace(Some(format!(
                    "its group ran longer than its {}s",
                    timeout_s.unwrap_or_default()
                )));
            }
        }
    }
    drop(children);
    if cancelled {
        // The children stopped with the parent; the group stays open (a
        // resume follows it again).
        return Err(TaskError::Cancelled);
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let mut group = run.record.into_inner().unwrap_or_else(|p| p.into_inner());
    group.results = ended.iter().flatten().map(Ended::result).collect();
    let all_completed = ended.iter().flatten().all(Ended::completed);
    group.status = match (strategy, winner) {
        (GroupStrategy::Race, Some(_)) => GroupStatus::Completed,
        _ if timed_out && !all_completed => GroupStatus::TimedOut,
        (GroupStrategy::All, _) if all_completed => GroupStatus::Completed,
        _ => GroupStatus::Failed,
    };
    group.finished_at = Some(now_ms());
    let (usage, cost) = spent(&group);
    let finished = TaskEvent::GroupFinished {
        group_id: group.id.clone(),
        status: group.status,
        usage,
        cost,
    };
    let step = Step::new().status(TaskStatus::Running).group(&group);
    ctx.events
        .commit(store, parent, step, vec![finished])
        .await?;
    Ok(result_of(&group, winner).with_spent(usage, cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(scope: &[&str]) -> GroupTask {
        GroupTask {
            mode: "code".into(),
            message: "m".into(),
            scope: scope.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn sibling_scopes_must_be_disjoint_and_inside_the_parent() {
        let ok = [task(&["src/a/**"]), task(&["src/b/**"]), task(&[])];
        assert_eq!(scopes_refused(&ok, None), None);
        assert_eq!(scopes_refused(&ok, Some(&["src/**".to_owned()])), None);
        let why =
            scopes_refused(&[task(&["src/**"]), task(&["src/a.rs"])], None).unwrap_or_default();
        assert!(why.contains("subtasks 1 and 2 overlap"), "{why}");
        let why = scopes_refused(&ok, Some(&["src/a/**".to_owned()])).unwrap_or_default();
        assert!(why.contains("subtask 2's scope `src/b/**`"), "{why}");
        let why = scopes_refused(&[task(&["../x/**"])], None).unwrap_or_default();
        assert!(why.contains("leaves the workspace"), "{why}");
        // A parent that may write nothing gives nothing.
        let why = scopes_refused(&[task(&["a/**"])], Some(&[])).unwrap_or_default();
        assert!(why.contains("(nothing)"), "{why}");
    }
}
