//! Saved approvals: the "always allow" answers a person gave for a
//! workspace, kept in Roost's own store (never in the workspace, so a
//! repository cannot grant itself anything) and added to the policy of
//! every later task in that workspace.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::db::params;
use super::{Store, StoreError, now_ms};
use roost_protocol::{Grant, ToolGroup};

/// How long a workspace read with no saved approval is taken to have none
/// ([`Store::approvals_for_new_task`]).
const NONE_SAVED_FOR: Duration = Duration::from_secs(1);

/// Most workspaces remembered at once (the oldest are forgotten first).
const NONE_SAVED_MAX: usize = 4096;

/// The workspaces this store read lately with no saved approval, and
/// when. Only "none" is remembered: a stale "none" can only leave out an
/// approval saved meanwhile (a task asks once more), never keep one that
/// was revoked.
#[derive(Debug)]
pub(super) struct NoneSaved {
    seen: Mutex<Seen>,
}

/// When each workspace was read with none saved, and for how long that
/// holds ([`NONE_SAVED_FOR`]; longer in tests that count round trips).
#[derive(Debug)]
struct Seen {
    at: HashMap<String, Instant>,
    holds_for: Duration,
}

impl Default for NoneSaved {
    fn default() -> Self {
        Self {
            seen: Mutex::new(Seen {
                at: HashMap::new(),
                holds_for: NONE_SAVED_FOR,
            }),
        }
    }
}

impl NoneSaved {
    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        // A map of instants stays consistent whatever panicked.
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `workspace` was read with none saved lately.
    fn holds(&self, workspace: &str) -> bool {
        let seen = self.lock();
        seen.at
            .get(workspace)
            .is_some_and(|at| at.elapsed() < seen.holds_for)
    }

    /// `workspace` had none saved when a read that began at `at` looked.
    fn remember(&self, workspace: &str, at: Instant) {
        let mut seen = self.lock();
        if seen.at.len() >= NONE_SAVED_MAX {
            let holds_for = seen.holds_for;
            seen.at.retain(|_, t| t.elapsed() < holds_for);
        }
        if seen.at.len() < NONE_SAVED_MAX {
            seen.at.insert(workspace.to_owned(), at);
        }
    }

    /// Something was saved for `workspace`.
    fn forget(&self, workspace: &str) {
        self.lock().at.remove(workspace);
    }

    /// Take a "none saved" to hold for `d` (a test that counts reads).
    #[cfg(test)]
    pub(super) fn hold_for(&self, d: Duration) {
        self.lock().holds_for = d;
    }
}

/// One saved approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedApproval {
    /// The workspace it holds for (its canonical path).
    pub workspace: String,
    /// What it allows.
    pub grant: Grant,
    /// When it was saved (ms since the epoch).
    pub saved_at: i64,
}

fn to_row(grant: &Grant) -> (&'static str, String) {
    match grant {
        Grant::Tool(t) => ("tool", t.clone()),
        Grant::Group(g) => ("group", g.as_str().to_owned()),
    }
}

fn from_row(kind: &str, name: &str) -> Option<Grant> {
    match kind {
        "tool" => Some(Grant::Tool(name.to_owned())),
        "group" => ToolGroup::parse(name).map(Grant::Group),
        _ => None,
    }
}

impl Store {
    /// Save `grant` for `workspace` (saving it again changes nothing).
    pub fn save_approval(&self, workspace: &str, grant: &Grant) -> Result<(), StoreError> {
        let (kind, name) = to_row(grant);
        self.db.run(|c| {
            c.exec(
                "INSERT INTO saved_approvals (workspace, kind, name, saved_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT DO NOTHING",
                params![workspace, kind, &name, now_ms()],
            )
        })?;
        self.none_saved.forget(workspace);
        Ok(())
    }

    /// Forget `grant` for `workspace`; whether it was saved.
    pub fn revoke_approval(&self, workspace: &str, grant: &Grant) -> Result<bool, StoreError> {
        let (kind, name) = to_row(grant);
        let n = self.db.run(|c| {
            c.exec(
                "DELETE FROM saved_approvals WHERE workspace = ?1 AND kind = ?2 AND name = ?3",
                params![workspace, kind, &name],
            )
        })?;
        Ok(n > 0)
    }

    /// The approvals saved for `workspace`, for a task about to be created
    /// there: [`Store::saved_approvals`], except that a workspace read
    /// with none saved is taken to have none for [`NONE_SAVED_FOR`] (no
    /// read, on PostgreSQL no round trip, for each of many tasks started
    /// at once). An approval saved through this store holds at once; one
    /// saved by another process or host, within that second. A workspace
    /// with approvals saved is read every time, so a revoked one never
    /// holds.
    pub fn approvals_for_new_task(
        &self,
        workspace: &str,
    ) -> Result<Vec<SavedApproval>, StoreError> {
        if self.none_saved.holds(workspace) {
            return Ok(Vec::new());
        }
        let at = Instant::now();
        let saved = self.saved_approvals(Some(workspace))?;
        if saved.is_empty() {
            self.none_saved.remember(workspace, at);
        }
        Ok(saved)
    }

    /// The approvals saved for `workspace` (all workspaces: `None`),
    /// by workspace, then grant.
    pub fn saved_approvals(
        &self,
        workspace: Option<&str>,
    ) -> Result<Vec<SavedApproval>, StoreError> {
        // Two statements, not one with an optional filter: each has one
        // plan that suits every call (one workspace's grants by its key).
        let rows = self.db.read_long(|c| match workspace {
            Some(workspace) => c.query(
                "SELECT workspace, kind, name, saved_at FROM saved_approvals
                 WHERE workspace = ?1 ORDER BY workspace, kind, name",
                params![workspace],
            ),
            None => c.query(
                "SELECT workspace, kind, name, saved_at FROM saved_approvals
                 ORDER BY workspace, kind, name",
                &[],
            ),
        })?;
        let mut out = Vec::new();
        for mut row in rows {
            let (workspace, kind, name, saved_at): (String, String, String, i64) = (
                row.take_text(0)?,
                row.take_text(1)?,
                row.take_text(2)?,
                row.get(3)?,
            );
            // A row this Roost does not understand grants nothing.
            match from_row(&kind, &name) {
                Some(grant) => out.push(SavedApproval {
                    workspace,
                    grant,
                    saved_at,
                }),
                None => tracing::warn!("ignoring a saved approval of unknown kind `{kind}`"),
            }
        }
        Ok(out)
    }
}
