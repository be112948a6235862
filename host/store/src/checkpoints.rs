//! A task's checkpoints: one row each, in order — the shadow commit that
//! holds the workspace as it was before the turn's first change, and where
//! the conversation stood then (the last API and UI rows before the turn).

use super::db::{Row, params};
use super::{Store, StoreError, now_ms};
use roost_protocol::Checkpoint;

/// A checkpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// What front-ends show.
    pub view: Checkpoint,
    /// The shadow commit.
    pub commit: String,
    /// Its tree.
    pub tree: String,
    /// The last API row before the turn.
    pub api_seq: i64,
    /// The last UI row before the turn.
    pub ui_seq: i64,
}

fn row(mut r: Row) -> Result<CheckpointRecord, StoreError> {
    Ok(CheckpointRecord {
        view: Checkpoint {
            id: r.get(0)?,
            turn: r.get(1)?,
            created_at: r.get(6)?,
        },
        commit: r.take_text(2)?,
        tree: r.take_text(3)?,
        api_seq: r.get(4)?,
        ui_seq: r.get(5)?,
    })
}

const COLUMNS: &str = "seq, turn, commit_id, tree, api_seq, ui_seq, created_at";

/// Task `?1`'s checkpoints, oldest first.
static CHECKPOINTS_OF: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {COLUMNS} FROM checkpoints WHERE task_id = ?1 ORDER BY seq")
});

impl Store {
    /// Record a checkpoint of `task` (its id the next one) and return it.
    pub fn add_checkpoint(
        &self,
        task: &str,
        turn: u32,
        commit: &str,
        tree: &str,
        api_seq: i64,
        ui_seq: i64,
    ) -> Result<CheckpointRecord, StoreError> {
        let at = now_ms();
        let seq: u32 = self.db.write(|c| {
            let seq: u32 = c
                .one(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE task_id = ?1",
                    params![task],
                )?
                .get(0)?;
            c.exec(
                "INSERT INTO checkpoints (task_id, seq, turn, commit_id, tree, api_seq, ui_seq, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![task, seq, turn, commit, tree, api_seq, ui_seq, at],
            )?;
            Ok(seq)
        })?;
        Ok(CheckpointRecord {
            view: Checkpoint {
                id: seq,
                turn,
                created_at: at,
            },
            commit: commit.to_owned(),
            tree: tree.to_owned(),
            api_seq,
            ui_seq,
        })
    }

    /// `task`'s checkpoints, oldest first.
    pub fn checkpoints(&self, task: &str) -> Result<Vec<CheckpointRecord>, StoreError> {
        self.db
            .rows(&CHECKPOINTS_OF, params![task])?
            .into_iter()
            .map(row)
            .collect()
    }

    /// [`Store::checkpoints`] for a front-end's request, awaited.
    pub async fn read_checkpoints(&self, task: &str) -> Result<Vec<CheckpointRecord>, StoreError> {
        self.db
            .read_one(&CHECKPOINTS_OF, params![task])
            .await?
            .into_iter()
            .map(row)
            .collect()
    }

    /// `task`'s checkpoint `id`.
    pub fn checkpoint(&self, task: &str, id: u32) -> Result<Option<CheckpointRecord>, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    &format!("SELECT {COLUMNS} FROM checkpoints WHERE task_id = ?1 AND seq = ?2"),
                    params![task, id],
                )
            })?
            .map(row)
            .transpose()
    }

    /// `task`'s latest checkpoint.
    pub fn last_checkpoint(&self, task: &str) -> Result<Option<CheckpointRecord>, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    &format!(
                        "SELECT {COLUMNS} FROM checkpoints WHERE task_id = ?1 ORDER BY seq DESC LIMIT 1"
                    ),
                    params![task],
                )
            })?
            .map(row)
            .transpose()
    }

    /// Where `task`'s conversation stands before the turn in progress:
    /// the API row before its last reply and the UI row before the
    /// request that made it, and how many replies came before.
    pub fn turn_start(&self, task: &str) -> Result<(i64, i64, u32), StoreError> {
        // Both in one round trip on PostgreSQL.
        let answers = self.db.run(|c| {
            c.query_all(&[
                (
                    "SELECT COALESCE(MAX(seq), 1) - 1, COUNT(*) FROM api_messages
                     WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND role = 'assistant'",
                    params![task],
                ),
                (
                    "SELECT COALESCE(MAX(seq), 1) - 1 FROM (
                       SELECT seq FROM ui_messages
                       WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND subtype = 'api_req_started'
                       UNION ALL SELECT ui_seq FROM events
                       WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND ui_subtype = 'api_req_started'
                     ) AS started",
                    params![task],
                ),
            ])
        })?;
        let mut firsts = answers.into_iter().map(|rows| rows.into_iter().next());
        let (Some(Some(api_row)), Some(Some(ui_row))) = (firsts.next(), firsts.next()) else {
            return Err(StoreError::Decode {
                detail: "no row from a turn's aggregates".into(),
            });
        };
        let (api, replies): (i64, u32) = (api_row.get(0)?, api_row.get(1)?);
        Ok((api, ui_row.get(0)?, replies))
    }

    /// Take `task`'s conversation back to the API row `api_seq` and the UI
    /// row `ui_seq`: everything after is gone (condensations of it too).
    pub fn truncate_conversation(
        &self,
        task: &str,
        api_seq: i64,
        ui_seq: i64,
    ) -> Result<(), StoreError> {
        self.db.write(|c| {
            // The log keeps what every call returned, outputs kept in
            // those messages included.
            super::events::inline_outputs_after(c, task, api_seq)?;
            c.exec(
                "DELETE FROM api_messages WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND seq > ?2",
                params![task, api_seq],
            )?;
            c.exec(
                "DELETE FROM ui_messages WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND seq > ?2",
                params![task, ui_seq],
            )?;
            // The events stay; the UI rows they carry go.
            c.exec(
                "UPDATE events SET ui_seq = NULL, ui_kind = NULL, ui_subtype = NULL, ui_text = NULL \
                 WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND ui_seq > ?2",
                params![task, ui_seq],
            )?;
            c.exec(
                "DELETE FROM condensations WHERE task_id = ?1 AND upto_seq > ?2",
                params![task, api_seq],
            )?;
            Ok(())
        })
    }
}
