//! The editor's MCP servers: the `mcpServers` of `session/new` and
//! `session/load` join the session's tasks under the rules a project's
//! servers run under — checked as a configuration file's entries are, each
//! started only once the person trusts it in the workspace (asked here as
//! a `session/request_permission`, once per session), a stdio one inside
//! the command sandbox with the read-only profile and no network of its
//! own. Their values (an API key in `env`, a token in a header) stay in
//! this process's memory: the store never sees them, and the person is
//! shown their names, not their values.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    HttpHeader, McpServer, PermissionOption, PermissionOptionKind, RequestPermissionRequest,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};
use roost_core::mcp::{SessionMcp, Written, client_entry, trust::disclosure};

use super::editor::Editor;
use super::updates::text;
use super::{Acp, invalid};

/// Most servers one session may hand in (as one configuration file).
const MAX_SERVERS: usize = 64;

/// The session servers `servers` configure in `workspace`, none started
/// (`None` when there are none, or this engine runs no MCP servers),
/// with a line for each left out. A malformed entry refuses the whole
/// request, saying which and why.
pub(crate) fn session_servers(
    acp: &Acp,
    workspace: &Path,
    servers: &[McpServer],
) -> Result<(Option<Arc<SessionMcp>>, Vec<String>), Error> {
    if servers.is_empty() {
        return Ok((None, Vec::new()));
    }
    if servers.len() > MAX_SERVERS {
        return Err(invalid(format!(
            "{} MCP servers given; Roost takes at most {MAX_SERVERS} per session",
            servers.len()
        )));
    }
    let mut names = HashSet::new();
    let mut entries = Vec::with_capacity(servers.len());
    for server in servers {
        let (name, written) = written(server)?;
        if !names.insert(name.clone()) {
            return Err(invalid(format!(
                "two MCP servers are called `{name}`; each needs its own name"
            )));
        }
        let entry = client_entry(&name, written)
            .map_err(|m| invalid(format!("MCP server `{name}`: {m}")))?;
        entries.push(entry);
    }
    let Some(hub) = acp.engine.mcp() else {
        return Ok((
            None,
            vec!["The editor's MCP servers are not used: this Roost runs no MCP servers.".into()],
        ));
    };
    let (servers, left_out) = hub.session_servers(workspace, entries);
    Ok((Some(servers), left_out))
}

/// An ACP server as a configuration entry is written (Roo's fields).
fn written(server: &McpServer) -> Result<(String, Written), Error> {
    let mut w = Written {
        kind: None,
        command: None,
        args: Vec::new(),
        cwd: None,
        env: BTreeMap::new(),
        url: None,
        headers: BTreeMap::new(),
        disabled: false,
        timeout: None,
        always_allow: Vec::new(),
        disabled_tools: Vec::new(),
        profile: None,
        allow_network: Vec::new(),
        watch_paths: Vec::new(),
    };
    let name = match server {
        McpServer::Stdio(s) => {
            let command = s.command.to_str().ok_or_else(|| {
                invalid(format!(
                    "MCP server `{}`: its command is not valid UTF-8",
                    s.name
                ))
            })?;
            w.kind = Some("stdio".into());
            w.command = Some(command.to_owned());
            w.args.clone_from(&s.args);
            w.env = pairs(
                "variable",
                &s.name,
                s.env
                    .iter()
                    .map(|e| (e.name.clone(), e.value.clone()))
                    .collect(),
            )?;
            s.name.clone()
        }
        McpServer::Http(h) => remote(&mut w, "streamable-http", &h.name, &h.url, &h.headers)?,
        McpServer::Sse(h) => remote(&mut w, "sse", &h.name, &h.url, &h.headers)?,
        _ => {
            return Err(invalid(
                "an MCP server over a transport Roost does not take (stdio, http and sse)",
            ));
        }
    };
    Ok((name, w))
}

/// A server at a URL (`kind`: streamable HTTP or SSE) written into `w`:
/// its name.
fn remote(
    w: &mut Written,
    kind: &str,
    name: &str,
    url: &str,
    headers: &[HttpHeader],
) -> Result<String, Error> {
    w.kind = Some(kind.to_owned());
    w.url = Some(url.to_owned());
    w.headers = pairs(
        "header",
        name,
        headers
            .iter()
            .map(|e| (e.name.clone(), e.value.clone()))
            .collect(),
    )?;
    Ok(name.to_owned())
}

/// `list` as a map, refusing a `what` (variable, header) given twice.
fn pairs(
    what: &str,
    name: &str,
    list: Vec<(String, String)>,
) -> Result<BTreeMap<String, String>, Error> {
    let mut out = BTreeMap::new();
    for (k, v) in list {
        if out.insert(k.clone(), v).is_some() {
            return Err(invalid(format!(
                "MCP server `{name}`: {what} `{k}` is given twice"
            )));
        }
    }
    Ok(out)
}

/// Ask the person about each of session `sid`'s servers not trusted yet
/// and not asked about in this session: allowed for the session, always
/// in the workspace (recorded as `roost mcp trust` records it), or not
/// started. No answer in time is a no; a server is asked about once per
/// session.
pub(crate) async fn trust(acp: &Acp, ed: &Editor, sid: &str) -> Result<(), Error> {
    let (servers, asked) = acp
        .sessions
        .with(sid, |s| (s.mcp.clone(), s.mcp_asked.clone()))?;
    let Some(servers) = servers else {
        return Ok(());
    };
    for entry in servers.untrusted() {
        if asked.contains(&entry.name) {
            continue;
        }
        acp.sessions.with(sid, |s| {
            s.mcp_asked.insert(entry.name.clone());
        })?;
        let shown = disclosure(&entry).join("\n");
        let fields = ToolCallUpdateFields::new()
            .title(format!(
                "Start the editor's MCP server `{}`? It runs in Roost's sandbox.",
                entry.name
            ))
            .content(vec![ToolCallContent::from(text(shown))]);
        let request = RequestPermissionRequest::new(
            sid.to_owned(),
            ToolCallUpdate::new(format!("mcp-trust-{}", uuid::Uuid::now_v7()), fields),
            vec![
                PermissionOption::new(
                    "allow_once",
                    "Allow in this session",
                    PermissionOptionKind::AllowOnce,
                ),
                PermissionOption::new(
                    "allow_always",
                    "Always allow it in this workspace",
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new(
                    "reject_once",
                    "Do not start it",
                    PermissionOptionKind::RejectOnce,
                ),
            ],
        );
        let asked = ed.ask(request, acp.settings.ask_timeout).await;
        match asked.chosen() {
            Some("allow_once") => servers.allow(&entry.name),
            Some("allow_always") => {
                if let Some(hub) = acp.engine.mcp()
                    && let Err(e) =
                        hub.trust_entries(servers.workspace(), std::slice::from_ref(&entry))
                {
                    tracing::warn!("the trust was not recorded: {e}");
                }
                servers.allow(&entry.name);
            }
            _ => tracing::info!(server = %entry.name, "the editor's MCP server is not started"),
        }
    }
    Ok(())
}
