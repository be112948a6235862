//! Earlier sessions: `session/list` shows the host's tasks in the
//! workspaces `roost acp` serves (a session's id, once it has a task, is
//! the task's), and `session/load` replays one's recorded events through
//! the same display mapping before it goes on.

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, SessionInfo,
};
use roost_core::engine::Listed;
use roost_core::session::{Owner, Session};

use super::editor::Editor;
use super::updates::Updates;
use super::{Acp, invalid, sessions};

/// Most sessions `session/list` returns.
const MAX_LISTED: usize = 200;

/// Whether `listed` is a session this agent serves: a task of its own
/// (not a subtask) in a workspace within the root.
fn served(acp: &Acp, listed: &Listed) -> bool {
    listed.task.parent_id.is_none()
        && acp
            .settings
            .root
            .as_deref()
            .is_none_or(|root| PathBuf::from(&listed.task.workspace).starts_with(root))
}

/// `session/list`: the newest first, in `cwd` when it names one.
pub(crate) fn list(acp: &Acp, req: &ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
    let cwd = match &req.cwd {
        Some(cwd) => Some(sessions::workspace(cwd, acp.settings.root.as_deref())?),
        None => None,
    };
    let all = acp
        .engine
        .records()
        .list(MAX_LISTED)
        .map_err(|e| invalid(format!("the task store cannot be read: {e}")))?;
    let sessions = all
        .iter()
        .filter(|l| served(acp, l))
        .filter(|l| {
            cwd.as_deref()
                .is_none_or(|c| std::path::Path::new(&l.task.workspace) == c)
        })
        .map(|l| {
            let title: String = l
                .task
                .prompt
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect();
            let updated = u64::try_from(l.task.updated_at).ok().map(|ms| {
                humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
            });
            SessionInfo::new(l.task.id.clone(), PathBuf::from(&l.task.workspace))
                .title(title)
                .updated_at(updated)
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}

/// `session/load`: the session of an earlier task, its history replayed
/// as updates before the response; its next prompt continues the task.
pub(crate) async fn load(
    acp: &Acp,
    ed: &Editor,
    req: &LoadSessionRequest,
) -> Result<LoadSessionResponse, Error> {
    let id = req.session_id.0.to_string();
    // A session of this connection not prompted yet has nothing recorded:
    // it is taken up again as it stands.
    let fresh = acp
        .sessions
        .with(&id, |s| {
            s.task
                .is_none()
                .then(|| (s.workspace.clone(), s.mode.clone(), s.profile.clone()))
        })
        .ok()
        .flatten();
    if let Some((workspace, mode, profile)) = fresh {
        let cwd = sessions::workspace(&req.cwd, acp.settings.root.as_deref())?;
        if cwd != workspace {
            return Err(invalid(format!(
                "session `{id}` is in {}, not in {}",
                workspace.display(),
                cwd.display()
            )));
        }
        let (mcp, left_out) = super::mcp::session_servers(acp, &workspace, &req.mcp_servers)?;
        acp.sessions.with(&id, |s| {
            s.mcp = mcp;
            s.mcp_asked.clear();
        })?;
        for line in left_out {
            ed.notify(&id, super::updates::said(line))?;
        }
        ed.notify(&id, super::commands::available())?;
        return Ok(LoadSessionResponse::new()
            .modes(acp.modes(&workspace, &mode))
            .config_options(acp.config_options(profile.as_deref())));
    }
    let session = Session::new(&acp.engine, Owner::Host);
    let unknown = || invalid(format!("no session `{id}` to load"));
    let listed = session.task(&id).await.map_err(|_| unknown())?;
    // Exactly that task (not a prefix), one this agent serves.
    if listed.task.id != id || !served(acp, &listed) {
        return Err(unknown());
    }
    let cwd = sessions::workspace(&req.cwd, acp.settings.root.as_deref())?;
    let workspace = PathBuf::from(&listed.task.workspace);
    if cwd != workspace {
        return Err(invalid(format!(
            "session `{id}` is in {}, not in {}",
            workspace.display(),
            cwd.display()
        )));
    }
    let recorded = session
        .follow(&id, 0)
        .await
        .map_err(|e| invalid(e.to_string()))?
        .past;
    let mut display = session.display();
    let mut updates = Updates::new(&workspace);
    for env in recorded.iter().filter(|e| e.task_id == id) {
        for item in display.items(env) {
            for update in updates.of(&item) {
                ed.notify(&id, update)?;
            }
        }
    }
    ed.notify(&id, super::commands::available())?;
    let (mcp, left_out) = super::mcp::session_servers(acp, &workspace, &req.mcp_servers)?;
    for line in left_out {
        ed.notify(&id, super::updates::said(line))?;
    }
    acp.sessions
        .adopt(&id, workspace.clone(), listed.task.mode.clone(), mcp);
    Ok(LoadSessionResponse::new()
        .modes(acp.modes(&workspace, &listed.task.mode))
        .config_options(acp.config_options(None)))
}
