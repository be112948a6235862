//! Trees of tasks: a task's subtasks (`parent_id`), the tool call of the
//! parent that started each (recorded in the child's settings), and how
//! many subtasks a tree holds. Delegation reads these to find a subtask
//! again after a crash and to bound a tree's fan-out.

use super::db::params;
use super::{Store, StoreError, TASK_COLUMNS, TASK_COLUMNS_OF_T, TaskRecord, task_row};

impl Store {
    /// [`Store::children`], each with whether a live process runs it, for
    /// a front-end's request: awaited, one statement however many run (a
    /// group of a hundred running children had been a round trip each).
    pub async fn read_children(&self, parent: &str) -> Result<Vec<(TaskRecord, bool)>, StoreError> {
        let (column, joins) = self.liveness();
        let cols = &*TASK_COLUMNS_OF_T;
        self.db
            .read_one(
                &format!(
                    "SELECT {cols}, {column} FROM tasks t {joins} \
                     WHERE t.parent_id = ?1 ORDER BY t.created_at, t.id"
                ),
                params![parent],
            )
            .await?
            .into_iter()
            .map(|row| self.with_liveness(row))
            .collect()
    }

    /// The subtasks `parent` started, oldest first.
    pub fn children(&self, parent: &str) -> Result<Vec<TaskRecord>, StoreError> {
        self.db
            .run(|c| {
                c.query(
                    &format!(
                        "SELECT {TASK_COLUMNS} FROM tasks WHERE parent_id = ?1 ORDER BY created_at, id"
                    ),
                    params![parent],
                )
            })?
            .into_iter()
            .map(task_row)
            .collect()
    }

    /// The subtask `parent`'s tool call `call_id` started, if it did.
    pub fn child_of_call(
        &self,
        parent: &str,
        call_id: &str,
    ) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self
            .children(parent)?
            .into_iter()
            .find(|c| started_by(c) == Some(call_id)))
    }

    /// The tool calls of `parent` that started subtasks, or a parallel
    /// group (which may not have started any yet).
    pub fn subtask_calls(&self, parent: &str) -> Result<Vec<String>, StoreError> {
        let mut calls: Vec<String> = self
            .children(parent)?
            .iter()
            .filter_map(|c| started_by(c).map(str::to_owned))
            .collect();
        for g in self.groups_of(parent)? {
            if !calls.contains(&g.call_id) {
                calls.push(g.call_id);
            }
        }
        Ok(calls)
    }

    /// How many tasks of the tree rooted at `root` are subtasks.
    pub fn subtasks_in_tree(&self, root: &str) -> Result<u64, StoreError> {
        let n: i64 = self
            .db
            .run(|c| {
                c.one(
                    "SELECT COUNT(*) FROM tasks WHERE root_id = ?1 AND id != ?1",
                    params![root],
                )
            })?
            .get(0)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Every task of the tree rooted at `root` (the root first, then by
    /// creation).
    pub fn tree(&self, root: &str) -> Result<Vec<TaskRecord>, StoreError> {
        self.db
            .run(|c| {
                c.query(
                    &format!(
                        "SELECT {TASK_COLUMNS} FROM tasks WHERE root_id = ?1 ORDER BY (id != ?1), created_at, id"
                    ),
                    params![root],
                )
            })?
            .into_iter()
            .map(task_row)
            .collect()
    }
}

/// The parent's tool call that started `child`.
fn started_by(child: &TaskRecord) -> Option<&str> {
    child
        .settings
        .as_ref()
        .and_then(|s| s.inherited.call_id.as_deref())
}
