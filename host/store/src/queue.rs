//! The work queue of a shared store: a task that needs a host (created and
//! not yet run, or its host's lease ran out) is claimed by exactly one
//! host, with `SELECT … FOR UPDATE SKIP LOCKED`, and only by a host that
//! has its workspace (one of the roots it advertises).

use super::db::DB_NOW;
use super::db::params;
use super::{Store, StoreError};

/// The statuses of a task whose loop should be running somewhere.
const WANTS_A_HOST: &str =
    "('running', 'waiting_for_approval', 'waiting_for_input', 'waiting_for_subtask')";

/// Whether `workspace` is `root` or under it.
fn under(workspace: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    workspace == root
        || workspace
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

impl Store {
    /// Claim up to `limit` tasks that need a host and whose workspace is
    /// under one of `roots`, oldest first; their ids. Only top-level
    /// tenants' tasks: a subtask is resumed by its parent. Never the same
    /// task for two hosts: rows another host is claiming are skipped, and
    /// a task with a live claim is not offered.
    pub fn claim_next(&self, roots: &[String], limit: usize) -> Result<Vec<String>, StoreError> {
        if limit == 0 || !self.is_shared() {
            return Ok(Vec::new());
        }
        let me = self.owner()?.token.clone();
        let scan = i64::try_from(limit.saturating_mul(4).max(16)).unwrap_or(64);
        self.db.write(|c| {
            let rows = c.query(
                &format!(
                    "SELECT t.id, t.workspace FROM tasks t \
                     WHERE t.status IN {WANTS_A_HOST} AND t.parent_id IS NULL AND t.owner IS NOT NULL \
                       AND NOT EXISTS (SELECT 1 FROM claims c JOIN hosts h ON h.id = c.owner \
                                       WHERE c.task_id = t.id AND h.seen_at + h.lease_ms > {DB_NOW}) \
                     ORDER BY t.created_at, t.id LIMIT ?1 FOR UPDATE OF t SKIP LOCKED"
                ),
                params![scan],
            )?;
            let mut taken = Vec::new();
            for mut r in rows {
                if taken.len() >= limit {
                    break;
                }
                let id = r.take_text(0)?;
                let ws: String = r.get(1)?;
                if !roots.iter().any(|root| under(&ws, root)) {
                    continue;
                }
                // The row is locked now; another host may have claimed it
                // between this statement's snapshot and the lock (its
                // claim is a row of `claims`, which the lock does not
                // re-check): look again, as a fresh statement sees it.
                let live = c.opt(
                    &format!(
                        "SELECT 1 FROM claims c JOIN hosts h ON h.id = c.owner \
                         WHERE c.task_id = ?1 AND c.owner != ?2 AND h.seen_at + h.lease_ms > {DB_NOW}"
                    ),
                    params![&id, &me],
                )?;
                if live.is_some() {
                    continue;
                }
                c.exec(
                    "INSERT INTO claims (task_id, owner) VALUES (?1, ?2) \
                     ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner",
                    params![&id, &me],
                )?;
                taken.push(id);
            }
            Ok(taken)
        })
    }

    /// Give back the claim on `id` (this host could not run it after all).
    pub fn release_claim(&self, id: &str) -> Result<(), StoreError> {
        let Some(me) = self.host_id()? else {
            return Ok(());
        };
        self.db
            .run(|c| c.exec(super::claims::RELEASE, params![id, &me]))?;
        Ok(())
    }

    /// Wake the hosts' work queues (a task was created or handed over).
    pub fn notify_queue(&self) -> Result<(), StoreError> {
        if !self.is_shared() {
            return Ok(());
        }
        self.db
            .run(|c| c.exec("SELECT pg_notify('roost_queue', '')", params![]))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::under;

    #[test]
    fn a_workspace_is_under_its_root_only() {
        assert!(under("/srv/a/ws", "/srv/a"));
        assert!(under("/srv/a", "/srv/a/"));
        assert!(!under("/srv/ab/ws", "/srv/a"));
        assert!(!under("/srv/b", "/srv/a"));
    }
}
