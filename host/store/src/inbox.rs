//! What one host asks of the host running a task (a shared store): an
//! answer recorded here reaches the loop waiting there, a cancel or a
//! queued message the task's control there. Requests are rows, so none is
//! lost while the other host's listener reconnects; a notification on
//! `roost_inbox` wakes the host they are for.

use super::db::params;
use super::{Store, StoreError, now_ms};

/// What another host asks of a task this host runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRequest {
    /// The ask was answered (the answer is on record).
    Answered {
        /// Ask id.
        ask_id: String,
    },
    /// Stop the task for this reason.
    Cancel {
        /// Why.
        reason: String,
    },
    /// A user message for its next turn.
    Message {
        /// The text.
        text: String,
    },
}

impl HostRequest {
    fn parts(&self) -> (&'static str, &str) {
        match self {
            HostRequest::Answered { ask_id } => ("answered", ask_id),
            HostRequest::Cancel { reason } => ("cancel", reason),
            HostRequest::Message { text } => ("message", text),
        }
    }

    fn from_parts(kind: &str, body: String) -> Option<Self> {
        match kind {
            "answered" => Some(HostRequest::Answered { ask_id: body }),
            "cancel" => Some(HostRequest::Cancel { reason: body }),
            "message" => Some(HostRequest::Message { text: body }),
            _ => None,
        }
    }
}

impl Store {
    /// Who runs task `id`, when a live process or host other than this
    /// one does: the owner of its claim.
    pub fn runner_elsewhere(&self, id: &str) -> Result<Option<String>, StoreError> {
        let mine = self.claims.owner.get().map(|o| o.token.clone());
        self.db.run(|c| {
            let owner: Option<String> = c
                .opt("SELECT owner FROM claims WHERE task_id = ?1", params![id])?
                .map(|r| r.get(0))
                .transpose()?;
            match owner {
                Some(o) if Some(&o) != mine.as_ref() && self.owner_alive(c, &o)? => Ok(Some(o)),
                _ => Ok(None),
            }
        })
    }

    /// [`Store::runner_elsewhere`] for a front-end that follows the task,
    /// awaited: one statement, the claim and (on PostgreSQL) its host's
    /// lease joined (it had been two round trips, parking the worker).
    pub async fn read_runner_elsewhere(&self, id: &str) -> Result<Option<String>, StoreError> {
        let (column, joins) = self.liveness();
        let seen: Option<String> = match self
            .db
            .read_one(
                &format!("SELECT {column} FROM tasks t {joins} WHERE t.id = ?1"),
                params![id],
            )
            .await?
            .into_iter()
            .next()
        {
            Some(row) => row.get(0)?,
            None => None,
        };
        let mine = self.claims.owner.get().map(|o| o.token.as_str());
        Ok(match seen {
            Some(owner) if Some(owner.as_str()) != mine && self.live_in(Some(owner.clone())) => {
                Some(owner)
            }
            _ => None,
        })
    }

    /// Ask `host` to act on its task `task`: the request and the
    /// notification that wakes `host`, awaited in one round trip (no
    /// runtime worker parked).
    pub async fn send_to_host(
        &self,
        host: &str,
        task: &str,
        request: &HostRequest,
    ) -> Result<(), StoreError> {
        let (kind, body) = request.parts();
        let now = now_ms();
        self.db
            .exec_each(&[
                (
                    "INSERT INTO host_inbox (host, task_id, kind, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![host, task, kind, body, now],
                ),
                ("SELECT pg_notify('roost_inbox', ?1)", params![host]),
            ])
            .await?;
        Ok(())
    }

    /// Take the requests other hosts left for this one, oldest first.
    /// Awaited: one statement, one round trip, no runtime worker parked
    /// (only a shared store, on PostgreSQL, has an inbox).
    pub async fn take_inbox(&self) -> Result<Vec<(String, HostRequest)>, StoreError> {
        let Some(me) = self.host_id()? else {
            return Ok(Vec::new());
        };
        let mut rows = self
            .db
            .read_one(
                "DELETE FROM host_inbox WHERE host = ?1 RETURNING id, task_id, kind, body",
                params![&me],
            )
            .await?;
        rows.sort_by_key(|r| r.get::<i64>(0).unwrap_or(0));
        let mut out = Vec::with_capacity(rows.len());
        for mut r in rows {
            let task = r.take_text(1)?;
            let kind = r.take_text(2)?;
            match HostRequest::from_parts(&kind, r.take_text(3)?) {
                Some(req) => out.push((task, req)),
                None => tracing::warn!(%task, "ignoring a host request of unknown kind `{kind}`"),
            }
        }
        Ok(out)
    }
}
