//! The event log: every recorded event of a task, numbered from 1 in the
//! order it was published, so a front-end that reconnects asks for what
//! came after the last number it saw (SSE's `Last-Event-ID`). The store
//! keeps each event as JSON text; the events layer gives it meaning.
//!
//! An event announcing a tool's successful result may keep its output in
//! the conversation message that answers the call (column `result_in`,
//! that message's seq) instead of a second copy: a read's output is
//! written once. Reading the log back fills it in ([`StoredEvent::output`]);
//! taking the conversation back past such a message writes the output
//! into the event first ([`inline_outputs_after`]).

use std::sync::LazyLock;

use serde::Deserialize;

use roost_protocol::conversation::ContentBlock;

use super::db::{Conn, Row, params};
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
    /// The output of the tool result the event announces, when the event
    /// keeps it in the conversation (its own `result` is then empty).
    pub output: Option<String>,
}

/// Columns of an event row read back with the message holding its output:
/// `seq, ts, event, result_in, content` ([`event_row`]).
const EVENT_COLUMNS: &str = "SELECT e.seq, e.ts, e.event, e.result_in, m.content FROM events e \
     LEFT JOIN api_messages m ON m.task = e.task AND m.seq = e.result_in";

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
        self.db.run(|c| c.one(LAST_EVENT, params![task]))?.get(0)
    }

    /// [`Store::last_event_seq`] for a front-end's request, awaited.
    pub async fn read_last_event_seq(&self, task: &str) -> Result<i64, StoreError> {
        match self.db.read_one(LAST_EVENT, params![task]).await?.first() {
            Some(row) => row.get(0),
            None => Ok(0),
        }
    }

    /// The last `limit` events of `task`, newest first.
    pub fn last_events(&self, task: &str, limit: usize) -> Result<Vec<StoredEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.db.read_long(|c| {
            c.query(
                &format!(
                    "{EVENT_COLUMNS} WHERE e.task = (SELECT k FROM tasks WHERE id = ?1) \
                     ORDER BY e.seq DESC LIMIT ?2"
                ),
                params![task, limit],
            )
        })?;
        event_rows(task, rows)
    }

    /// Up to `limit` events of `task` after position `after`, in order.
    pub fn events_after(
        &self,
        task: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .db
            .read_long(|c| c.query(&EVENTS_AFTER, params![task, after, limit]))?;
        event_rows(task, rows)
    }

    /// [`Store::events_after`] for a front-end's request (a stream that
    /// follows a task from a position), awaited.
    pub async fn read_events_after(
        &self,
        task: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .db
            .read_one(&EVENTS_AFTER, params![task, after, limit])
            .await?;
        event_rows(task, rows)
    }
}

/// The position of task `?1`'s last recorded event (0 when none).
const LAST_EVENT: &str =
    "SELECT COALESCE(MAX(seq), 0) FROM events WHERE task = (SELECT k FROM tasks WHERE id = ?1)";

/// Up to `?3` events of task `?1` after position `?2`, in order.
static EVENTS_AFTER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{EVENT_COLUMNS} WHERE e.task = (SELECT k FROM tasks WHERE id = ?1) \
         AND e.seq > ?2 ORDER BY e.seq LIMIT ?3"
    )
});

/// Rows of [`EVENT_COLUMNS`] of `task`'s log, in their order.
fn event_rows(task: &str, rows: Vec<Row>) -> Result<Vec<StoredEvent>, StoreError> {
    rows.into_iter().map(|r| event_row(task, r)).collect()
}

/// A row of [`EVENT_COLUMNS`] of `task`'s log.
fn event_row(task: &str, mut r: Row) -> Result<StoredEvent, StoreError> {
    let seq: i64 = r.get(0)?;
    let event = r.take_text(2)?;
    let output = match r.get::<Option<i64>>(3)? {
        None => None,
        Some(message) => {
            let content = r.get::<Option<String>>(4)?;
            Some(output_of(task, seq, &event, message, content.as_deref())?)
        }
    };
    Ok(StoredEvent {
        seq,
        ts: r.get(1)?,
        event,
        output,
    })
}

/// The call a result's event announces (the rest of it is the events
/// layer's).
#[derive(Deserialize)]
struct CallId {
    id: String,
}

/// The output of the result that event `seq` (JSON `event`) announces,
/// from the content of message `message` that holds it (`None`: no such
/// message). An event whose message no longer answers its call is
/// corrupt: its output is lost, and saying so beats replaying an empty
/// result.
fn output_of(
    task: &str,
    seq: i64,
    event: &str,
    message: i64,
    content: Option<&str>,
) -> Result<String, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        task: task.to_owned(),
        seq,
        detail,
    };
    let call = serde_json::from_str::<CallId>(event)
        .map_err(|e| corrupt(format!("a result's event without its call id: {e}")))?
        .id;
    let content = content.ok_or_else(|| {
        corrupt(format!(
            "its result's output is kept in message {message}, which is gone"
        ))
    })?;
    let blocks = serde_json::from_str::<Vec<ContentBlock>>(content)
        .map_err(|e| corrupt(format!("message {message} does not decode: {e}")))?;
    blocks
        .into_iter()
        .find_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error: false,
            } if tool_use_id == call => Some(content),
            _ => None,
        })
        .ok_or_else(|| corrupt(format!("message {message} no longer answers call {call}")))
}

/// Before `task`'s conversation loses the messages after `api_seq`: write
/// the output of each result those messages hold into the event that
/// announces it, so the log still says what every call returned. Runs in
/// the caller's write transaction.
pub(super) fn inline_outputs_after(
    c: &Conn<'_>,
    task: &str,
    api_seq: i64,
) -> Result<(), StoreError> {
    let rows = c.query(
        &format!(
            "{EVENT_COLUMNS} WHERE e.task = (SELECT k FROM tasks WHERE id = ?1) AND e.result_in > ?2"
        ),
        params![task, api_seq],
    )?;
    for r in rows {
        let stored = event_row(task, r)?;
        let Some(output) = stored.output else {
            continue;
        };
        let mut event = serde_json::from_str::<serde_json::Value>(&stored.event).map_err(|e| {
            StoreError::Corrupt {
                task: task.to_owned(),
                seq: stored.seq,
                detail: e.to_string(),
            }
        })?;
        if let Some(fields) = event.as_object_mut() {
            fields.insert("result".into(), serde_json::json!({ "ok": output }));
        }
        c.exec(
            "UPDATE events SET event = ?3, result_in = NULL \
             WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND seq = ?2",
            params![task, stored.seq, event.to_string().as_str()],
        )?;
    }
    Ok(())
}
