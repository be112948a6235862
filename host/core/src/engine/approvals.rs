//! Saved approvals as a front-end manages them: "always allow" answers
//! kept per workspace in the store under Roost's data dir, listed and
//! revoked (`roost approvals`), and added to the policy of each new task
//! in that workspace when the engine creates it.

use std::path::Path;

use crate::store::{SavedApproval, Store, StoreError, StoreLocation};
use roost_protocol::{ApprovalPolicy, Grant};
use roost_sandbox::capability::Workspace;

use super::EngineError;

/// The saved approvals of a store.
#[derive(Clone)]
pub struct Approvals {
    store: Store,
}

/// The key a workspace's approvals are saved under: its canonical path,
/// so `.`, a symlink and the full path name the same workspace.
pub fn workspace_key(workspace: &Path) -> Result<String, EngineError> {
    let ws = Workspace::open(workspace).map_err(crate::task::TaskError::from)?;
    Ok(ws.host_path().display().to_string())
}

impl Approvals {
    pub(super) fn new(store: Store) -> Self {
        Self { store }
    }

    /// The saved approvals of the store at `location` (opening, or creating, it).
    pub fn open(location: &StoreLocation) -> Result<Self, StoreError> {
        Ok(Self::new(Store::open_at(location)?))
    }

    /// Save `grant` for `workspace`.
    pub fn save(&self, workspace: &Path, grant: &Grant) -> Result<(), EngineError> {
        Ok(self
            .store
            .save_approval(&workspace_key(workspace)?, grant)?)
    }

    /// Forget `grant` for `workspace`; whether it was saved.
    pub fn revoke(&self, workspace: &Path, grant: &Grant) -> Result<bool, EngineError> {
        Ok(self
            .store
            .revoke_approval(&workspace_key(workspace)?, grant)?)
    }

    /// The approvals saved for `workspace`, or for every workspace.
    pub fn list(&self, workspace: Option<&Path>) -> Result<Vec<SavedApproval>, EngineError> {
        let key = workspace.map(workspace_key).transpose()?;
        Ok(self.store.saved_approvals(key.as_deref())?)
    }

    /// `policy` widened by what was saved for the workspace `ws` (opened
    /// by the caller: its key is its canonical path), for a new task
    /// ([`Store::approvals_for_new_task`]).
    pub fn widen(&self, ws: &Workspace, policy: &mut ApprovalPolicy) -> Result<(), EngineError> {
        let key = ws.host_path().display().to_string();
        for saved in self.store.approvals_for_new_task(&key)? {
            policy.grant(&saved.grant);
        }
        Ok(())
    }
}
