//! One step of a task as one transaction: a message of the API history,
//! the UI rows that show it, the task's usage and status, and the events
//! that announce it land together or not at all, so a front-end never hears
//! of a write that a crash could lose, and a turn pays for one commit per
//! step instead of one per row.

use std::borrow::Cow;

use rusqlite::params;

use super::{Store, StoreError, TaskStatus, exec, now_ms, one_row, role_str};
use crate::llm::{Message, Usage};

/// What a step without usage adds to the totals.
const NO_USAGE: Usage = Usage {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
};

/// The history message a step writes.
#[derive(Debug)]
enum StepMessage<'a> {
    /// Appended with the next seq.
    Append(&'a Message),
    /// Replaces the message at this seq (tool results of one assistant
    /// message, filled in as its calls finish).
    Replace(i64, &'a Message),
}

/// The writes of one step of a task, built up and then committed with
/// [`Store::commit_step`]. Every part is optional.
#[derive(Debug, Default)]
pub struct Step<'a> {
    message: Option<StepMessage<'a>>,
    usage: Option<(&'a Usage, f64)>,
    ui: Vec<(&'a str, &'a str, Cow<'a, str>)>,
    status: Option<TaskStatus>,
    events: Vec<String>,
}

/// Positions a committed step took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Seq of the step's history message, if it wrote one.
    pub message: Option<i64>,
    /// Positions of its events in the task's event log, in order.
    pub events: Vec<i64>,
}

impl<'a> Step<'a> {
    /// A step that writes nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append `m` to the API history.
    pub fn append(mut self, m: &'a Message) -> Self {
        self.message = Some(StepMessage::Append(m));
        self
    }

    /// Append `m`, or replace the message at `seq` with it when there is one.
    pub fn put(mut self, seq: Option<i64>, m: &'a Message) -> Self {
        self.message = Some(match seq {
            Some(seq) => StepMessage::Replace(seq, m),
            None => StepMessage::Append(m),
        });
        self
    }

    /// Add a turn's usage and cost to the task's totals.
    pub fn usage(mut self, u: &'a Usage, cost: f64) -> Self {
        self.usage = Some((u, cost));
        self
    }

    /// Add a UI row. Credentials in `text` are redacted when it is written.
    pub fn ui(mut self, kind: &'a str, subtype: &'a str, text: impl Into<Cow<'a, str>>) -> Self {
        self.ui.push((kind, subtype, text.into()));
        self
    }

    /// Set the task's status.
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Record an event (JSON text) in the task's event log.
    pub fn event(mut self, json: String) -> Self {
        self.events.push(json);
        self
    }

    /// Whether the step writes nothing.
    pub fn is_empty(&self) -> bool {
        self.message.is_none()
            && self.usage.is_none()
            && self.ui.is_empty()
            && self.status.is_none()
            && self.events.is_empty()
    }
}

impl Store {
    /// Commit `step` for `task` in one transaction. A task that does not
    /// exist gets nothing written. An empty step commits nothing.
    pub fn commit_step(&self, task: &str, step: &Step<'_>) -> Result<Committed, StoreError> {
        let mut committed = Committed {
            message: None,
            events: Vec::with_capacity(step.events.len()),
        };
        if step.is_empty() {
            return Ok(committed);
        }
        let content = |m: &Message, seq: i64| {
            serde_json::to_string(&m.content).map_err(|e| StoreError::Corrupt {
                task: task.to_owned(),
                seq,
                detail: e.to_string(),
            })
        };
        let now = now_ms();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        // Touching the task first makes a missing task an error before
        // anything else is written (the history rows would also fail on
        // their foreign key, but UI rows and events have none).
        let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let (u, cost) = step.usage.unwrap_or((&NO_USAGE, 0.0));
        let touched = exec(
            &tx,
            "UPDATE tasks SET tokens_in = tokens_in + ?2, tokens_out = tokens_out + ?3, \
             cache_reads = cache_reads + ?4, cache_writes = cache_writes + ?5, cost = cost + ?6, \
             status = COALESCE(?7, status), updated_at = ?8 WHERE id = ?1",
            params![
                task,
                i(u.input_tokens),
                i(u.output_tokens),
                i(u.cache_read_tokens),
                i(u.cache_write_tokens),
                cost,
                step.status.map(TaskStatus::as_str),
                now
            ],
        )?;
        if touched == 0 {
            return Err(StoreError::NotFound(task.to_owned()));
        }
        committed.message = match step.message {
            None => None,
            Some(StepMessage::Append(m)) => Some(one_row(
                &tx,
                "INSERT INTO api_messages (task_id, seq, role, content, created_at) \
                 SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4 FROM api_messages WHERE task_id = ?1 \
                 RETURNING seq",
                params![task, role_str(m.role), content(m, -1)?, now],
                |r| r.get(0),
            )?),
            Some(StepMessage::Replace(seq, m)) => {
                let n = exec(
                    &tx,
                    "UPDATE api_messages SET content = ?3 WHERE task_id = ?1 AND seq = ?2",
                    params![task, seq, content(m, seq)?],
                )?;
                if n == 0 {
                    return Err(StoreError::Corrupt {
                        task: task.to_owned(),
                        seq,
                        detail: "no such message to replace".into(),
                    });
                }
                Some(seq)
            }
        };
        for (kind, subtype, text) in &step.ui {
            let text = roost_secrets::redact(text);
            exec(
                &tx,
                "INSERT INTO ui_messages (task_id, seq, ts, kind, subtype, text) \
                 SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5 FROM ui_messages WHERE task_id = ?1",
                params![task, now, kind, subtype, text.as_ref()],
            )?;
        }
        for event in &step.events {
            committed.events.push(one_row(
                &tx,
                "INSERT INTO events (task_id, seq, ts, event) \
                 SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3 FROM events WHERE task_id = ?1 \
                 RETURNING seq",
                params![task, now, event],
                |r| r.get(0),
            )?);
        }
        tx.commit()?;
        Ok(committed)
    }
}
