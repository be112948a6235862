//! What a front-end reads of the tasks in the store — lists, searches,
//! one task, its messages, its todos, its export — and deletes, without
//! running anything, so a `history` command or a server's listing never
//! touches the store's API or SQL.

use std::path::Path;

use crate::events::TaskEvent;
use crate::store::{
    Store, StoreError, StoreLocation, TaskFilter, TaskRecord, TaskStatus, TodoItem, UiMessage,
};
use crate::task::TaskOutcome;

/// How many of a task's last events are searched for how its last run
/// ended (the ending event is the last or nearly so).
const ENDING_WITHIN: usize = 16;

/// The store's tasks.
#[derive(Clone)]
pub struct Records {
    store: Store,
}

/// A page of a listing.
#[derive(Debug, Clone)]
pub struct Page {
    /// The tasks, newest first.
    pub tasks: Vec<Listed>,
    /// Where the next page starts (`created_at`, `id` of this page's last
    /// task), when there may be one.
    pub next: Option<(i64, String)>,
}

/// A task as a listing shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its record.
    pub task: TaskRecord,
    /// It says it runs, but no process holds it: it was interrupted (a
    /// crash, a kill) and can be resumed.
    pub interrupted: bool,
}

impl Listed {
    /// Whether a live process runs it now (this host or another): it
    /// says it runs, and was not interrupted.
    pub fn is_running(&self) -> bool {
        says_it_runs(&self.task) && !self.interrupted
    }
}

/// Whether `task`'s status says a loop runs it (or waits in it).
fn says_it_runs(task: &TaskRecord) -> bool {
    matches!(
        task.status,
        TaskStatus::Running
            | TaskStatus::WaitingForApproval
            | TaskStatus::WaitingForInput
            | TaskStatus::WaitingForSubtask
    )
}

impl Records {
    pub(super) fn new(store: Store) -> Self {
        Self { store }
    }

    /// The records of the store at `location` (opening, or creating, it).
    pub fn open(location: &StoreLocation) -> Result<Self, StoreError> {
        Ok(Self::new(Store::open_at(location)?))
    }

    /// Bring the store at `location` to this Roost's schema: `(from, to)`
    /// versions (`roost store migrate`). A store written by a newer Roost is
    /// refused.
    pub fn migrate(location: &StoreLocation) -> Result<(i64, i64), StoreError> {
        Store::migrate(location)
    }

    /// What the store has written and what it cost (steps, transactions,
    /// round trips to a shared database), for benchmarks and diagnostics.
    pub fn stats(&self) -> crate::store::StoreStats {
        self.store.stats()
    }

    /// Whether the store answers now (a server's readiness).
    pub fn ping(&self) -> Result<(), StoreError> {
        self.store.ping()
    }

    /// Whether the store is thought to answer, without waiting for it
    /// (false while a shared database's outage is being waited out).
    pub fn reachable(&self) -> bool {
        self.store.reachable()
    }

    /// The most recent tasks, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<Listed>, StoreError> {
        Ok(self
            .store
            .list_tasks(limit)?
            .into_iter()
            .map(|task| self.listed(task))
            .collect())
    }

    /// `task` as a listing shows it: interrupted when it says it runs but
    /// no process holds it.
    fn listed(&self, task: TaskRecord) -> Listed {
        let interrupted = Self::interrupted(&task, || self.store.is_live(&task.id));
        Listed { task, interrupted }
    }

    /// Whether `task` was interrupted: it says it runs, and `live` (asked
    /// only then) says no process holds it.
    fn interrupted(task: &TaskRecord, live: impl FnOnce() -> bool) -> bool {
        says_it_runs(task) && !live()
    }

    /// A page of the tasks `filter` wants (at most `limit`, newest first),
    /// and the cursor of the next page when there may be one.
    /// Awaited: a server's listing, in one round trip on a shared database.
    pub async fn page(&self, filter: &TaskFilter<'_>, limit: usize) -> Result<Page, StoreError> {
        let tasks: Vec<Listed> = self
            .store
            .list_filtered(filter, limit)
            .await?
            .into_iter()
            .map(|(task, live)| Self::listed_as(task, live))
            .collect();
        let next = (tasks.len() == limit && limit > 0)
            .then(|| tasks.last().map(|l| (l.task.created_at, l.task.id.clone())))
            .flatten();
        Ok(Page { tasks, next })
    }

    /// A task's API messages (what the model saw), hidden ones included.
    /// Awaited.
    pub async fn api_messages(
        &self,
        id: &str,
    ) -> Result<Vec<crate::store::StoredMessage>, StoreError> {
        self.store.read_api(id, true).await
    }

    /// Task `id` (the full id, no prefix) as a listing shows it.
    pub fn get(&self, id: &str) -> Result<Listed, StoreError> {
        Ok(self.listed(self.store.get_task(id)?))
    }

    /// [`Records::get`] for a front-end's request, awaited: on a shared
    /// database one round trip (the record and its liveness together)
    /// that parks no runtime worker.
    pub async fn read(&self, id: &str) -> Result<Listed, StoreError> {
        let (task, live) = self.store.read_task(id).await?;
        Ok(Self::listed_as(task, live))
    }

    /// `task`, which a live process runs or not, as a listing shows it.
    fn listed_as(task: TaskRecord, live: bool) -> Listed {
        let interrupted = Self::interrupted(&task, || live);
        Listed { task, interrupted }
    }

    /// The subtasks task `id` started, oldest first.
    /// Awaited, in one round trip on a shared database.
    pub async fn children(&self, id: &str) -> Result<Vec<Listed>, StoreError> {
        Ok(self
            .store
            .read_children(id)
            .await?
            .into_iter()
            .map(|(task, live)| Self::listed_as(task, live))
            .collect())
    }

    /// The parallel groups task `id` started, oldest first.
    /// Awaited.
    pub async fn groups(&self, id: &str) -> Result<Vec<roost_protocol::GroupRecord>, StoreError> {
        self.store.read_groups(id).await
    }

    /// Task `id` and every task below it (its subtasks, theirs, …), the
    /// task first, then in order of creation.
    pub fn subtree(&self, id: &str) -> Result<Vec<Listed>, StoreError> {
        Ok(self
            .subtree_records(id)?
            .into_iter()
            .map(|t| self.listed(t))
            .collect())
    }

    /// [`Records::subtree`]'s records, without their liveness (which
    /// costs a lookup each).
    pub(crate) fn subtree_records(&self, id: &str) -> Result<Vec<TaskRecord>, StoreError> {
        let task = self.store.get_task(id)?;
        let tree = self.store.tree(&task.root_id)?;
        let mut inside = vec![task.id.clone()];
        let mut out = Vec::new();
        for t in tree {
            let below = t.id == task.id || t.parent_id.as_ref().is_some_and(|p| inside.contains(p));
            if below {
                if t.id != task.id {
                    inside.push(t.id.clone());
                }
                out.push(t);
            }
        }
        Ok(out)
    }

    /// One task, by id or unambiguous prefix.
    pub fn find(&self, id: &str) -> Result<TaskRecord, StoreError> {
        self.store.find_task(id)
    }

    /// The most recent task (`resumable`: the most recent one not
    /// finished).
    pub fn last(&self, resumable: bool) -> Result<TaskRecord, StoreError> {
        self.store.last_task(resumable)
    }

    /// How the last run of task `id` ended, from its event log; `None`
    /// while it runs, or when no run of it has ended.
    pub fn outcome(&self, id: &str) -> Result<Option<TaskOutcome>, StoreError> {
        for row in self.store.last_events(id, ENDING_WITHIN)? {
            // A row of another version that does not decode is not an
            // ending this one knows.
            let Ok(event) = serde_json::from_str::<TaskEvent>(&row.event) else {
                continue;
            };
            let ended = match event {
                TaskEvent::Completed { result, .. } => TaskOutcome::Completed { result },
                TaskEvent::Failed { error } => TaskOutcome::Failed { error },
                TaskEvent::Aborted { reason } => TaskOutcome::Aborted { reason },
                TaskEvent::Paused { reason } => TaskOutcome::Paused { reason },
                TaskEvent::TaskStarted { .. } => return Ok(None),
                _ => continue,
            };
            return Ok(Some(ended));
        }
        Ok(None)
    }

    /// A task's UI messages, in order.
    /// Awaited.
    pub async fn ui_messages(&self, id: &str) -> Result<Vec<UiMessage>, StoreError> {
        self.store.read_ui(id).await
    }

    /// The installed plugins, as recorded (by name).
    pub fn plugins(&self) -> Result<Vec<crate::store::PluginRecord>, StoreError> {
        self.store.list_plugins()
    }

    /// A task's todo list.
    /// Awaited.
    pub async fn todos(&self, id: &str) -> Result<Vec<TodoItem>, StoreError> {
        self.store.read_todos(id).await
    }

    /// Tasks whose prompt or messages contain `text`, newest first.
    pub fn search(&self, text: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.store.search_tasks(text, limit)
    }

    /// Delete task `id` (a full id or unambiguous prefix) and everything
    /// recorded of it; a task a live process runs is refused. Its full id.
    pub fn delete(&self, id: &str) -> Result<String, StoreError> {
        let task = self.store.find_task(id)?;
        self.store.delete_task(&task.id)?;
        Ok(task.id)
    }

    /// Write Roo Code's files of a task into `dir`.
    pub fn export_roo(&self, id: &str, dir: &Path) -> Result<(), StoreError> {
        self.store.export_roo(id, dir)
    }
}
