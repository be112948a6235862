//! Looking after the history: delete a task (with everything recorded of
//! it), search tasks by what was said in them.

use super::db::{Conn, Dialect, params};
use super::{
    LOG_TABLES, Store, StoreError, TASK_COLUMNS, TASK_COLUMNS_OF_T, TaskRecord, TaskStatus,
    task_row,
};

/// The tables with rows keyed by a task's id (besides `tasks`).
const BY_ID: [&str; 5] = ["asks", "condensations", "claims", "pending_trace", "todos"];

/// Which tasks a listing wants.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter<'a> {
    /// Only this owner's (`None`: the local user's and everyone's).
    pub owner: Option<&'a str>,
    /// Only tasks with this status.
    pub status: Option<TaskStatus>,
    /// Only tasks older than this one (`created_at`, `id`): the cursor of
    /// the previous page.
    pub before: Option<(i64, &'a str)>,
}

impl Store {
    /// Up to `limit` tasks `f` wants, newest first, each with whether a
    /// live process runs it: a front-end's listing, awaited, in one round
    /// trip on PostgreSQL however many of them run.
    pub async fn list_filtered(
        &self,
        f: &TaskFilter<'_>,
        limit: usize,
    ) -> Result<Vec<(TaskRecord, bool)>, StoreError> {
        let (before_at, before_id) = f.before.unwrap_or((i64::MAX, ""));
        let (column, joins) = self.liveness();
        let cols = &*TASK_COLUMNS_OF_T;
        self.db
            .read_one(
                &format!(
                    "SELECT {cols}, {column} FROM tasks t {joins}
                     WHERE (CAST(?1 AS TEXT) IS NULL OR t.owner = ?1) AND (CAST(?2 AS TEXT) IS NULL OR t.status = ?2)
                       AND (t.created_at < ?3 OR (t.created_at = ?3 AND t.id < ?4) OR ?4 = '')
                     ORDER BY t.created_at DESC, t.id DESC LIMIT ?5"
                ),
                params![
                    f.owner,
                    f.status.map(TaskStatus::as_str),
                    before_at,
                    before_id,
                    i64::try_from(limit).unwrap_or(i64::MAX)
                ],
            )
            .await?
            .into_iter()
            .map(|row| self.with_liveness(row))
            .collect()
    }

    /// Delete task `id` (the full id) and everything recorded of it — both
    /// histories, events, asks, todos — in one transaction. A task a live
    /// process runs is refused; its subtasks stay (they have their own
    /// records).
    pub fn delete_task(&self, id: &str) -> Result<(), StoreError> {
        let task = self.get_task(id)?;
        if self.is_live(&task.id) {
            return Err(StoreError::Live(task.id));
        }
        self.db.write(|c| delete_rows(c, &task.id))
    }

    /// Tasks whose prompt or any UI message contains `text` (ASCII
    /// case-insensitive), newest first, at most `limit`.
    pub fn search_tasks(&self, text: &str, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let pattern = format!(
            "%{}%",
            text.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        self.db
            .read_long(|c| {
                // SQLite's LIKE ignores ASCII case; PostgreSQL's ILIKE does.
                let like = match c.dialect() {
                    Dialect::Sqlite => "LIKE",
                    Dialect::Postgres => "ILIKE",
                };
                c.query(
                    &format!(
                        "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.prompt {like} ?1 ESCAPE '\\'
                         OR EXISTS (SELECT 1 FROM ui_messages u WHERE u.task = t.k AND u.text {like} ?1 ESCAPE '\\')
                         OR EXISTS (SELECT 1 FROM events e WHERE e.task = t.k AND e.ui_text {like} ?1 ESCAPE '\\')
                         ORDER BY t.created_at DESC, t.id DESC LIMIT ?2"
                    ),
                    params![&pattern, i64::try_from(limit).unwrap_or(i64::MAX)],
                )
            })?
            .into_iter()
            .map(task_row)
            .collect()
    }
}

fn delete_rows(c: &Conn<'_>, id: &str) -> Result<(), StoreError> {
    // On PostgreSQL the task's row is locked first, as every writer of its
    // logs locks it: a step committed meanwhile lands before these deletes
    // see its rows, or finds the task gone (its logs have no foreign key
    // that would refuse rows left behind; SQLite's one writer at a time
    // needs no lock).
    if c.dialect() == Dialect::Postgres
        && c.query("SELECT k FROM tasks WHERE id = ?1 FOR UPDATE", params![id])?
            .is_empty()
    {
        return Err(StoreError::NotFound(id.to_owned()));
    }
    for (table, _, _) in LOG_TABLES {
        c.exec(
            &format!("DELETE FROM {table} WHERE task = (SELECT k FROM tasks WHERE id = ?1)"),
            params![id],
        )?;
    }
    for table in BY_ID {
        c.exec(
            &format!("DELETE FROM {table} WHERE task_id = ?1"),
            params![id],
        )?;
    }
    c.exec(
        "DELETE FROM task_groups WHERE coordinator = ?1",
        params![id],
    )?;
    c.exec("DELETE FROM checkpoints WHERE task_id = ?1", params![id])?;
    c.exec("DELETE FROM tasks WHERE id = ?1", params![id])?;
    Ok(())
}
