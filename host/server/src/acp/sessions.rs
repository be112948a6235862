//! The editor's sessions: each one's workspace, mode and Roost task (made
//! by its first prompt), the tools the person rejected for the rest of it,
//! and whether a prompt is running (one at a time).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::Error;
use roost_core::engine::workspace_key;
use roost_core::mcp::SessionMcp;
use roost_core::modes::ModeSet;
use roost_core::task::PinnedWorkspace;

use super::invalid;

/// One editor session.
#[derive(Debug)]
pub(crate) struct AcpSession {
    /// Its workspace (canonical).
    pub(crate) workspace: PathBuf,
    /// The mode its next prompt runs in.
    pub(crate) mode: String,
    /// Whether the mode changed since the task last ran.
    pub(crate) mode_changed: bool,
    /// Its task, once the first prompt made one.
    pub(crate) task: Option<String>,
    /// The model profile the person chose (none: `roost acp`'s).
    pub(crate) profile: Option<String>,
    /// Whether the profile changed since the task last ran.
    pub(crate) profile_changed: bool,
    /// Tools the person rejected for the rest of the session.
    pub(crate) rejected: HashSet<String>,
    /// A prompt runs.
    pub(crate) busy: bool,
    /// The MCP servers the editor handed in for it.
    pub(crate) mcp: Option<Arc<SessionMcp>>,
    /// Those the person was asked about (once per session).
    pub(crate) mcp_asked: HashSet<String>,
}

impl AcpSession {
    fn new(
        workspace: PathBuf,
        mode: String,
        task: Option<String>,
        mcp: Option<Arc<SessionMcp>>,
    ) -> Self {
        Self {
            workspace,
            mode,
            mode_changed: false,
            task,
            profile: None,
            profile_changed: false,
            rejected: HashSet::new(),
            busy: false,
            mcp,
            mcp_asked: HashSet::new(),
        }
    }
}

/// Every session of the connection, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    all: Mutex<HashMap<String, AcpSession>>,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, AcpSession>> {
        self.all.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new session in `workspace`, in `mode`, with the editor's MCP
    /// servers `mcp`: its id.
    pub(crate) fn open(
        &self,
        workspace: PathBuf,
        mode: String,
        mcp: Option<Arc<SessionMcp>>,
    ) -> String {
        let id = format!("roost-{}", uuid::Uuid::now_v7());
        self.lock()
            .insert(id.clone(), AcpSession::new(workspace, mode, None, mcp));
        id
    }

    /// Session `id` again, for task `id` in `workspace` (a loaded
    /// session's id is its task's).
    pub(crate) fn adopt(
        &self,
        id: &str,
        workspace: PathBuf,
        mode: String,
        mcp: Option<Arc<SessionMcp>>,
    ) {
        self.lock().insert(
            id.to_owned(),
            AcpSession::new(workspace, mode, Some(id.to_owned()), mcp),
        );
    }

    /// Run `f` on session `id`.
    pub(crate) fn with<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut AcpSession) -> T,
    ) -> Result<T, Error> {
        match self.lock().get_mut(id) {
            Some(s) => Ok(f(s)),
            None => Err(invalid(format!("no session `{id}` on this connection"))),
        }
    }

    /// Session `id`'s task, if it has one.
    pub(crate) fn task(&self, id: &str) -> Option<String> {
        self.lock().get(id).and_then(|s| s.task.clone())
    }

    /// Every session's task.
    pub(crate) fn tasks(&self) -> Vec<String> {
        self.lock()
            .values()
            .filter_map(|s| s.task.clone())
            .collect()
    }

    /// Forget session `id` (closed).
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Switch session `id` to mode `mode` (one its workspace has).
    pub(crate) fn set_mode(
        &self,
        id: &str,
        mode: &str,
        modes_dir: Option<&Path>,
    ) -> Result<(), Error> {
        let workspace = self.with(id, |s| s.workspace.clone())?;
        if ModeSet::load(&workspace, modes_dir).get(mode).is_none() {
            return Err(invalid(format!("no mode `{mode}` in this workspace")));
        }
        self.with(id, |s| {
            if s.mode != mode {
                s.mode = mode.to_owned();
                s.mode_changed = true;
            }
        })
    }
}

/// The workspace an editor's `cwd` names: absolute, a directory Roost can
/// open, and (with a root) within it — decided on a handle opened beneath
/// the root, not on a path that might lead elsewhere a moment later.
pub(crate) fn workspace(cwd: &Path, root: Option<&Path>) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd `{}` is not an absolute path",
            cwd.display()
        )));
    }
    let canonical = workspace_key(cwd).map(PathBuf::from).map_err(|e| {
        invalid(format!(
            "cwd `{}` is not a directory Roost can open: {e}",
            cwd.display()
        ))
    })?;
    if let Some(root) = root {
        let outside = || {
            invalid(format!(
                "cwd `{}` is outside the workspace root `roost acp` was given",
                cwd.display()
            ))
        };
        if !canonical.starts_with(root) {
            return Err(outside());
        }
        PinnedWorkspace::beneath(root, &canonical).map_err(|_| outside())?;
    }
    Ok(canonical)
}
