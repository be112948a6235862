//! Looking after the history: delete a task (with everything recorded of
//! it), search tasks by what was said in them.

use rusqlite::{Connection, params};

use super::{LOG_TABLES, Store, StoreError, TASK_COLUMNS, TaskRecord, TaskStatus, exec, task_row};

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
    /// Up to `limit` tasks `f` wants, newest first.
    pub fn list_filtered(
        &self,
        f: &TaskFilter<'_>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let (before_at, before_id) = f.before.unwrap_or((i64::MAX, ""));
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks
             WHERE (?1 IS NULL OR owner = ?1) AND (?2 IS NULL OR status = ?2)
               AND (created_at < ?3 OR (created_at = ?3 AND id < ?4) OR ?4 = '')
             ORDER BY created_at DESC, id DESC LIMIT ?5"
        ))?;
        let rows = stmt.query_map(
            params![
                f.owner,
                f.status.map(TaskStatus::as_str),
                before_at,
                before_id,
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            task_row,
        )?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r??);
        }
        Ok(out)
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
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        delete_rows(&tx, &task.id)?;
        tx.commit()?;
        Ok(())
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
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.prompt LIKE ?1 ESCAPE '\\'
             OR EXISTS (SELECT 1 FROM ui_messages u WHERE u.task = t.k AND u.text LIKE ?1 ESCAPE '\\')
             ORDER BY t.created_at DESC, t.id DESC LIMIT ?2"
        ))?;
        let rows = stmt.query_map(
            params![pattern, i64::try_from(limit).unwrap_or(i64::MAX)],
            task_row,
        )?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r??);
        }
        Ok(out)
    }
}

fn delete_rows(conn: &Connection, id: &str) -> Result<(), StoreError> {
    for (table, _, _) in LOG_TABLES {
        exec(
            conn,
            &format!("DELETE FROM {table} WHERE task = (SELECT k FROM tasks WHERE id = ?1)"),
            [id],
        )?;
    }
    for table in BY_ID {
        exec(
            conn,
            &format!("DELETE FROM {table} WHERE task_id = ?1"),
            [id],
        )?;
    }
    exec(conn, "DELETE FROM task_groups WHERE coordinator = ?1", [id])?;
    exec(conn, "DELETE FROM checkpoints WHERE task_id = ?1", [id])?;
    exec(conn, "DELETE FROM tasks WHERE id = ?1", [id])?;
    Ok(())
}
