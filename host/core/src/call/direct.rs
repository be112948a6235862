//! One component tool called directly, outside a task (`roost tool call`;
//! later an MCP server's `tools/call`): the same path gate, the same
//! ceiling (what an installed plugin was granted), the same write session
//! (lease and guard) as a task's call, so no front-end keeps access checks
//! of its own.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Agent;
use super::paths;
use super::write_session::{self, WriteRule, WriteSession};
use crate::intents::redact_record;
use crate::tools::{ToolError, ToolOutput};
use roost_sandbox::capability::{
    Grant, GuardBudget, Limits, NetworkGrant, RooIgnore, Workspace, WorkspaceError,
};
use roost_sandbox::plugins::NetworkRecord;

/// What a direct call asks for.
#[derive(Debug, Clone)]
pub struct DirectCall<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Arguments (a JSON object).
    pub args: Value,
    /// The workspace it works in.
    pub workspace: &'a Path,
    /// Read access to the whole workspace.
    pub read: bool,
    /// Workspace-relative directories it may write under.
    pub write: &'a [PathBuf],
    /// Its limits (an installed plugin's grant lowers them).
    pub limits: Limits,
    /// The network of a component under development (a front-end's
    /// `--allow-net`); an installed plugin gets the network it was granted
    /// instead, a first-party one none.
    pub network: Option<NetworkGrant>,
    /// How long the write guard may spend undoing what it must.
    pub guard_budget: GuardBudget,
}

/// Why a direct call was not made.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    /// No tool has this name.
    #[error("unknown tool `{name}`; known tools: {known}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The tools there are, comma-separated.
        known: String,
    },
    /// A host-native tool talks to the person or the task.
    #[error(
        "`{0}` is a host-native tool: it talks to the person or the task, so it runs only inside a task"
    )]
    HostNative(String),
    /// The arguments are not a JSON object.
    #[error("the arguments must be a JSON object")]
    NotAnObject,
    /// The workspace cannot be opened.
    #[error("cannot open the workspace: {0}")]
    Workspace(#[from] WorkspaceError),
    /// A declared path was refused (outside the workspace, ignored, an
    /// authority file).
    #[error("{0}")]
    Path(String),
    /// The plugin was not granted what the call asks for.
    #[error("plugin `{plugin}` was not granted {what} access at install")]
    NotGranted {
        /// Plugin name.
        plugin: String,
        /// `read` or `write`.
        what: &'static str,
    },
    /// The call asks for network beside an installed grant.
    #[error("`{0}` gets the network it was granted at install")]
    NetworkGranted(String),
    /// The write session could not be opened.
    #[error("{0}")]
    Session(String),
}

/// What a direct call did.
#[derive(Debug)]
pub struct DirectOutcome {
    /// The tool's result (or the guard's refusal of what it changed).
    pub result: Result<ToolOutput, ToolError>,
    /// Its outgoing requests, credentials redacted.
    pub network: Vec<NetworkRecord>,
}

impl Agent {
    /// Call one component tool directly (see the module doc).
    pub async fn call_direct(&self, c: DirectCall<'_>) -> Result<DirectOutcome, DirectError> {
        let Some(tool) = self.registry.get(c.name) else {
            let known: Vec<&str> = self.registry.iter().map(|t| t.spec.name.as_str()).collect();
            return Err(DirectError::UnknownTool {
                name: c.name.to_owned(),
                known: known.join(", "),
            });
        };
        let Some(plugin) = tool.component() else {
            return Err(DirectError::HostNative(c.name.to_owned()));
        };
        if !c.args.is_object() {
            return Err(DirectError::NotAnObject);
        }
        // Declared paths get the same gate as in a task: normalised,
        // refused when they leave the workspace, are ignored by .rooignore,
        // or (for a destructive tool) name an authority file.
        let mut args = c.args;
        let ws = Workspace::open(c.workspace)?;
        paths::check(&ws, &RooIgnore::load_in(&ws), &tool.spec, &mut args)
            .map_err(|r| DirectError::Path(r.message))?;
        let access = &tool.access;
        let not_granted = |what| DirectError::NotGranted {
            plugin: plugin.name().to_owned(),
            what,
        };
        if c.read && !access.read {
            return Err(not_granted("read"));
        }
        if !c.write.is_empty() && !access.write {
            return Err(not_granted("write"));
        }
        let mut grant = Grant::new(c.workspace).limits(access.limits(c.limits));
        if c.read {
            grant = grant.read();
        }
        for w in c.write {
            grant = grant.write(w);
        }
        match (&access.network, c.network) {
            (Some(_), Some(_)) => {
                return Err(DirectError::NetworkGranted(plugin.name().to_owned()));
            }
            (Some(installed), None) => grant = grant.network(installed.as_ref().clone()),
            (None, Some(dev)) => grant = grant.network(dev),
            (None, None) => {}
        }
        // The same write session as a task's calls: a lease on the roots
        // and a guard that undoes any change to an authority file under
        // them.
        let session = if c.write.is_empty() {
            None
        } else {
            Some(
                WriteSession::open(&ws, c.write, WriteRule::default(), c.guard_budget)
                    .await
                    .map_err(|e| DirectError::Session(e.to_string()))?,
            )
        };
        let report = self
            .engine
            .call_with_report(plugin, c.name, &args.to_string(), &grant)
            .await;
        let mut result = report.result;
        if let Some((guarded, _lease)) = session.map(WriteSession::close)
            && let Some(v) = write_session::violation(&guarded, c.name, None)
        {
            result = Err(v);
        }
        let mut network = report.network.records;
        for r in &mut network {
            redact_record(r);
        }
        tracing::info!(tool = c.name, ok = result.is_ok(), "direct tool call");
        Ok(DirectOutcome { result, network })
    }
}
