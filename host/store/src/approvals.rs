//! Saved approvals: the "always allow" answers a person gave for a
//! workspace, kept in Roost's own store (never in the workspace, so a
//! repository cannot grant itself anything) and added to the policy of
//! every later task in that workspace.

use super::db::params;
use super::{Store, StoreError, now_ms};
use roost_protocol::{Grant, ToolGroup};

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
