//! Asks: the questions a task puts to a person (approvals, follow-ups,
//! completions, scope widenings, hook questions, guidance), stored so any
//! front-end can list and answer them later, and so a question still open
//! when the process dies is open again after a resume. The store keeps the
//! kind, payload and answer as text; the task layer gives them meaning.

use std::sync::LazyLock;

use serde::Serialize;

use super::db::{Conn, Row, params};
use super::{Store, StoreError, now_ms};

/// One stored ask.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredAsk {
    /// Task that asked.
    pub task_id: String,
    /// Unique id, used to answer it.
    pub ask_id: String,
    /// Tool call the ask is about, if any (a resumed call finds its ask).
    pub call_id: Option<String>,
    /// Kind (`tool`, `followup`, `completion`, `scope`, `hook`, `guidance`).
    pub kind: String,
    /// What is asked, as JSON text.
    pub payload: String,
    /// The answer as JSON text; `None` while open.
    pub answer: Option<String>,
    /// When it was asked (ms since the epoch).
    pub created_at: i64,
    /// When it was answered.
    pub answered_at: Option<i64>,
}

const COLUMNS: &str = "task_id, ask_id, call_id, kind, payload, answer, created_at, answered_at";

/// The open asks of task `?1`, oldest first.
static OPEN_ASKS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM asks WHERE task_id = ?1 AND answer IS NULL \
         ORDER BY created_at, ask_id"
    )
});

/// The open asks of task `?1` and of the tasks below it, oldest first:
/// the tree below it walked by `parent_id` (indexed).
static OPEN_ASKS_BELOW: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH RECURSIVE below(id) AS (SELECT id FROM tasks WHERE id = ?1 \
         UNION ALL SELECT t.id FROM tasks t JOIN below b ON t.parent_id = b.id) \
         SELECT {COLUMNS} FROM asks WHERE answer IS NULL \
         AND task_id IN (SELECT id FROM below) ORDER BY created_at, ask_id"
    )
});

fn row(mut r: Row) -> Result<StoredAsk, StoreError> {
    Ok(StoredAsk {
        task_id: r.take_text(0)?,
        ask_id: r.take_text(1)?,
        call_id: r.get(2)?,
        kind: r.take_text(3)?,
        payload: r.take_text(4)?,
        answer: r.get(5)?,
        created_at: r.get(6)?,
        answered_at: r.get(7)?,
    })
}

impl StoredAsk {
    /// A new open ask of `task`, not yet recorded: [`super::Step::ask`]
    /// records it with the step that announces it. Credentials in
    /// `payload` are redacted.
    pub fn open(task: &str, call_id: Option<&str>, kind: &str, payload: &str) -> Self {
        Self {
            task_id: task.to_owned(),
            ask_id: uuid::Uuid::now_v7().to_string(),
            call_id: call_id.map(str::to_owned),
            kind: kind.to_owned(),
            payload: roost_secrets::redact(payload).into_owned(),
            answer: None,
            created_at: now_ms(),
            answered_at: None,
        }
    }
}

/// Insert the open ask `ask`.
pub(super) fn insert(conn: &Conn<'_>, ask: &StoredAsk) -> Result<(), StoreError> {
    conn.later(
        "INSERT INTO asks (task_id, ask_id, call_id, kind, payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            &ask.task_id,
            &ask.ask_id,
            &ask.call_id,
            &ask.kind,
            &ask.payload,
            ask.created_at
        ],
    )
}

/// [`record_answer`]'s statement with a row back when it answered: on
/// PostgreSQL a shared commit sends it for each of its answers with the
/// round trip that locks the commit's tasks, so answering costs no trip of
/// its own ([`super::step`]).
pub(super) const ANSWER_RETURNING: &str = "UPDATE asks SET answer = ?3, answered_at = ?4 \
     WHERE task_id = ?1 AND ask_id = ?2 AND answer IS NULL RETURNING ask_id";

/// Record `answer` for the open ask `ask_id` of `task` at `now`; `false`
/// when there is no such open ask.
pub(super) fn record_answer(
    conn: &Conn<'_>,
    task: &str,
    ask_id: &str,
    answer: &str,
    now: i64,
) -> Result<bool, StoreError> {
    let n = conn.exec(
        "UPDATE asks SET answer = ?3, answered_at = ?4 WHERE task_id = ?1 AND ask_id = ?2 AND answer IS NULL",
        params![task, ask_id, answer, now],
    )?;
    Ok(n == 1)
}

impl Store {
    /// The ask `ask_id` of `task`, open or answered.
    pub fn get_ask(&self, task: &str, ask_id: &str) -> Result<Option<StoredAsk>, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    &format!("SELECT {COLUMNS} FROM asks WHERE task_id = ?1 AND ask_id = ?2"),
                    params![task, ask_id],
                )
            })?
            .map(row)
            .transpose()
    }

    /// The open asks of `task`, oldest first.
    pub fn open_asks(&self, task: &str) -> Result<Vec<StoredAsk>, StoreError> {
        self.db
            .rows(&OPEN_ASKS, params![task])?
            .into_iter()
            .map(row)
            .collect()
    }

    /// [`Store::open_asks`] for a front-end's request, awaited.
    pub async fn read_open_asks(&self, task: &str) -> Result<Vec<StoredAsk>, StoreError> {
        self.db
            .read_one(&OPEN_ASKS, params![task])
            .await?
            .into_iter()
            .map(row)
            .collect()
    }

    /// The open asks of `task` and of every task below it (its subtasks,
    /// theirs, …), oldest first, for a front-end's request: one approver
    /// answers for a tree. Awaited, one statement however deep the tree
    /// (it had been three round trips: the task, its tree, the asks).
    pub async fn read_open_asks_below(&self, task: &str) -> Result<Vec<StoredAsk>, StoreError> {
        self.db
            .read_one(&OPEN_ASKS_BELOW, params![task])
            .await?
            .into_iter()
            .map(row)
            .collect()
    }

    /// The newest ask of `task`, answered or not.
    pub fn last_ask(&self, task: &str) -> Result<Option<StoredAsk>, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    &format!(
                        "SELECT {COLUMNS} FROM asks WHERE task_id = ?1 ORDER BY created_at DESC, ask_id DESC LIMIT 1"
                    ),
                    params![task],
                )
            })?
            .map(row)
            .transpose()
    }

    /// The open ask of `kind` about tool call `call_id` (or about no call),
    /// if one survives from before a crash.
    pub fn find_open_ask(
        &self,
        task: &str,
        kind: &str,
        call_id: Option<&str>,
    ) -> Result<Option<StoredAsk>, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    &format!(
                        "SELECT {COLUMNS} FROM asks WHERE task_id = ?1 AND kind = ?2 \
                         AND call_id IS NOT DISTINCT FROM CAST(?3 AS TEXT) AND answer IS NULL \
                         ORDER BY created_at DESC LIMIT 1"
                    ),
                    params![task, kind, call_id],
                )
            })?
            .map(row)
            .transpose()
    }

    /// The answered ask of `kind` about tool call `call_id` that asked
    /// exactly `payload` (the newest), if there is one: a call run again
    /// after an interruption finds the answer it already got.
    pub fn answered_ask(
        &self,
        task: &str,
        kind: &str,
        call_id: &str,
        payload: &str,
    ) -> Result<Option<StoredAsk>, StoreError> {
        let payload = roost_secrets::redact(payload);
        self.db
            .run(|c| {
                c.opt(
                    &format!(
                        "SELECT {COLUMNS} FROM asks WHERE task_id = ?1 AND kind = ?2 AND call_id = ?3 AND payload = ?4 \
                         AND answer IS NOT NULL ORDER BY answered_at DESC LIMIT 1"
                    ),
                    params![task, kind, call_id, payload.as_ref()],
                )
            })?
            .map(row)
            .transpose()
    }

    /// Close every open ask of `task` without an answer (the task ended:
    /// completed, aborted or failed); returns how many were closed.
    pub fn close_asks(&self, task: &str, why: &str) -> Result<usize, StoreError> {
        let answer = serde_json::json!({"type": "closed", "reason": why}).to_string();
        self.fenced_write(task, |c| {
            c.exec(
                "UPDATE asks SET answer = ?2, answered_at = ?3 WHERE task_id = ?1 AND answer IS NULL",
                params![task, &answer, now_ms()],
            )
        })
    }
}
