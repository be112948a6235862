//! Parallel groups of subtasks (`new_parallel_tasks`), one row each: the
//! coordinator's call that started it, and the record itself as JSON (its
//! children, strategy, status and results). A resumed coordinator finds
//! its group again by the call's id.

use super::db::{Conn, Row, params};
use super::{Store, StoreError};
use roost_protocol::GroupRecord;

fn decode(coordinator: &str, body: &str) -> Result<GroupRecord, StoreError> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt {
        task: coordinator.to_owned(),
        seq: 0,
        detail: format!("parallel group record: {e}"),
    })
}

/// The groups a coordinator (`?1`) started, oldest first.
const GROUP_ROWS: &str =
    "SELECT body FROM task_groups WHERE coordinator = ?1 ORDER BY created_at, id";

/// [`GROUP_ROWS`]' rows, `coordinator`'s groups.
fn group_rows(coordinator: &str, rows: &[Row]) -> Result<Vec<GroupRecord>, StoreError> {
    rows.iter()
        .map(|r| decode(coordinator, &r.get::<String>(0)?))
        .collect()
}

/// A group's record as a step writes it ([`super::Step::group`]): encoded
/// by its coordinator's task, so a shared commit only inserts it.
#[derive(Debug)]
pub(super) struct PreparedGroup {
    id: String,
    coordinator: String,
    call_id: String,
    body: String,
    created_at: i64,
}

impl PreparedGroup {
    /// `group`'s row.
    pub(super) fn of(group: &GroupRecord) -> Result<Self, StoreError> {
        let body = serde_json::to_string(group).map_err(|e| StoreError::Corrupt {
            task: group.coordinator.clone(),
            seq: 0,
            detail: format!("parallel group record: {e}"),
        })?;
        Ok(Self {
            id: group.id.clone(),
            coordinator: group.coordinator.clone(),
            call_id: group.call_id.clone(),
            body,
            created_at: group.created_at,
        })
    }

    /// Record it in `task`'s step, or its new state when it is recorded
    /// already; a group is written only by its coordinator's steps.
    pub(super) fn write(&self, c: &Conn<'_>, task: &str) -> Result<(), StoreError> {
        if self.coordinator != task {
            return Err(StoreError::Commit(format!(
                "parallel group {} belongs to task {}, not {task}",
                self.id, self.coordinator
            )));
        }
        c.later(
            "INSERT INTO task_groups (id, coordinator, call_id, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (id) DO UPDATE SET body = excluded.body",
            params![
                &self.id,
                &self.coordinator,
                &self.call_id,
                &self.body,
                self.created_at
            ],
        )
    }
}

impl Store {
    /// The groups task `coordinator` started, oldest first.
    pub fn groups_of(&self, coordinator: &str) -> Result<Vec<GroupRecord>, StoreError> {
        group_rows(
            coordinator,
            &self.db.rows(GROUP_ROWS, params![coordinator])?,
        )
    }

    /// [`Store::groups_of`] for a front-end's request, awaited.
    pub async fn read_groups(&self, coordinator: &str) -> Result<Vec<GroupRecord>, StoreError> {
        group_rows(
            coordinator,
            &self.db.read_one(GROUP_ROWS, params![coordinator]).await?,
        )
    }

    /// The group `coordinator`'s call `call_id` started, if it did.
    pub fn group_of_call(
        &self,
        coordinator: &str,
        call_id: &str,
    ) -> Result<Option<GroupRecord>, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    "SELECT body FROM task_groups WHERE coordinator = ?1 AND call_id = ?2",
                    params![coordinator, call_id],
                )
            })?
            .map(|r| decode(coordinator, &r.get::<String>(0)?))
            .transpose()
    }
}
