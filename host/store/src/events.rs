//! The event log: every recorded event of a task, numbered from 1 in the
//! order it was published, so a front-end that reconnects asks for what
//! came after the last number it saw (SSE's `Last-Event-ID`). The store
//! keeps each event as JSON text; the events layer gives it meaning.

use super::db::{Row, params};
use super::{Step, Store, StoreError};

/// One recorded event.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Position in the task's log (1-based, no gaps).
    pub seq: i64,
    /// When it was recorded (ms since the epoch).
    pub ts: i64,
    /// The event as JSON text.
    pub event: String,
}

impl Store {
    /// Record an event of `task`; returns its position. The number is
    /// taken as `append_api` takes it, so two processes on one store
    /// cannot collide.
    pub fn append_event(&self, task: &str, event: &str) -> Result<i64, StoreError> {
        self.commit_step(task, Step::new().event(event.to_owned()))?
            .events
            .first()
            .copied()
            .ok_or_else(|| StoreError::NotFound(task.to_owned()))
    }

    /// The position of `task`'s last recorded event (0: none).
    pub fn last_event_seq(&self, task: &str) -> Result<i64, StoreError> {
        self.db
            .run(|c| {
                c.one(
                    "SELECT COALESCE(MAX(seq), 0) FROM events WHERE task = (SELECT k FROM tasks WHERE id = ?1)",
                    params![task],
                )
            })?
            .get(0)
    }

    /// The last `limit` events of `task`, newest first.
    pub fn last_events(&self, task: &str, limit: usize) -> Result<Vec<StoredEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db
            .read_long(|c| {
                c.query(
                    "SELECT seq, ts, event FROM events \
                     WHERE task = (SELECT k FROM tasks WHERE id = ?1) ORDER BY seq DESC LIMIT ?2",
                    params![task, limit],
                )
            })?
            .into_iter()
            .map(event_row)
            .collect()
    }

    /// Up to `limit` events of `task` after position `after`, in order.
    pub fn events_after(
        &self,
        task: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db
            .read_long(|c| {
                c.query(
                    "SELECT seq, ts, event FROM events \
                     WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND seq > ?2 ORDER BY seq LIMIT ?3",
                    params![task, after, limit],
                )
            })?
            .into_iter()
            .map(event_row)
            .collect()
    }
}

/// A row of `SELECT seq, ts, event`.
fn event_row(mut r: Row) -> Result<StoredEvent, StoreError> {
    Ok(StoredEvent {
        seq: r.get(0)?,
        ts: r.get(1)?,
        event: r.take_text(2)?,
    })
}
