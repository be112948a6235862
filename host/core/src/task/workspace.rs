//! Where a task's workspace is opened each time its loop starts: when it
//! is created, resumed after a stop or a crash, continued with a new
//! message, or taken over from the work queue by another host of a shared
//! store. A server's tenant's task may only run beneath one of its
//! tenant's workspace roots, and that is checked here, at every start, on
//! the directory as it is now (the path was checked at `POST /v1/tasks`,
//! but a tenant can swap their workspace for a symbolic link to someone
//! else's before the task starts). The handle opened here is the one the
//! task uses, and its identity is pinned for the run: any later open of
//! the same path in this process must reach the same directory
//! ([`Workspace::pin`]).

use std::path::{Path, PathBuf};

use crate::store::{Store, TaskRecord, now_ms};
use crate::turn::TaskError;
use roost_sandbox::capability::{Workspace, WorkspaceError, WorkspacePin};

/// A workspace a front-end checked for a request (`roost serve`'s
/// `POST /v1/tasks`): opened beneath a tenant's root, following no
/// symlink, and pinned while this lives — any open of its path meanwhile
/// that would reach another directory is refused.
#[derive(Debug)]
pub struct PinnedWorkspace {
    _pin: WorkspacePin,
}

impl PinnedWorkspace {
    /// Open `path` beneath `root` (both canonical) and pin it, or why not.
    pub fn beneath(root: &Path, path: &Path) -> Result<Self, WorkspaceError> {
        let ws = Workspace::open_beneath(root, path)?;
        Ok(Self { _pin: ws.pin() })
    }
}

/// How an engine opens the workspace of a task it starts.
#[derive(Debug, Clone, Default)]
pub enum WorkspaceCheck {
    /// As its path names it: the person running Roost chose it (the CLI).
    #[default]
    AsNamed,
    /// Beneath a root of the task's tenant only (`roost serve`): the roots
    /// of the tenant's tokens valid now and, for the server's local
    /// tenant (`--no-auth`), its root. A task with no tenant, or whose
    /// tenant has no root that holds its workspace, is refused.
    TenantRoots {
        /// The local tenant's name and root, when the server has one.
        local: Option<(String, PathBuf)>,
    },
}

impl WorkspaceCheck {
    /// Open `task`'s workspace as this check says.
    pub(crate) fn open(&self, store: &Store, task: &TaskRecord) -> Result<Workspace, TaskError> {
        let path = Path::new(&task.workspace);
        let WorkspaceCheck::TenantRoots { local } = self else {
            return Ok(Workspace::open(path)?);
        };
        let refuse = |reason: String| {
            TaskError::Workspace(WorkspaceError::NotBeneath {
                path: task.workspace.clone(),
                reason,
            })
        };
        let Some(owner) = task.owner.as_deref() else {
            return Err(refuse(
                "the task belongs to no tenant, and this server runs only tenants' tasks"
                    .to_owned(),
            ));
        };
        let mut roots: Vec<PathBuf> = Vec::new();
        if let Some((tenant, root)) = local
            && tenant == owner
        {
            roots.push(root.clone());
        }
        let now = now_ms();
        for t in store.list_token_records()? {
            let root = PathBuf::from(&t.root);
            if t.tenant == owner && t.valid_at(now) && !roots.contains(&root) {
                roots.push(root);
            }
        }
        // The deepest root that holds it first.
        roots.retain(|r| path.starts_with(r));
        roots.sort_by_key(|r| std::cmp::Reverse(r.components().count()));
        let mut last = None;
        for root in &roots {
            match Workspace::open_beneath(root, path) {
                Ok(ws) => return Ok(ws),
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) => TaskError::Workspace(e),
            None => refuse(format!(
                "it does not lie inside a workspace root of tenant `{owner}` (a root of one of its valid tokens)"
            )),
        })
    }
}
