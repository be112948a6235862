//! The tools one task is offered: the process's registry, with the skill
//! tools of its workspace and the tools of its workspace's MCP servers
//! laid over it. Rebuilt only when the workspace's skills or a server's
//! tools change (hot reload, `list_changed`), so each tool list is still
//! encoded once, not every turn.

use std::collections::HashSet;
use std::sync::Arc;

use crate::mcp::{ServerState, Source, WorkspaceMcp};
use crate::skills::Catalog;
use crate::tools::{Registry, mcp, skill};

/// A task's tools and what they were built over.
pub(super) struct TaskTools {
    catalog: Arc<Catalog>,
    /// The MCP servers' signature the tools were built over.
    servers: Option<u64>,
    registry: Arc<Registry>,
    /// Problems the task was told of already.
    reported: HashSet<String>,
}

impl TaskTools {
    /// The process's tools alone, before the skills are known.
    pub(super) fn new(base: &Arc<Registry>) -> Self {
        Self {
            catalog: Arc::default(),
            servers: None,
            registry: Arc::clone(base),
            reported: HashSet::new(),
        }
    }

    /// The tools over `catalog` (the workspace's skills as they stand) and
    /// `servers` (its MCP servers as they stand), the servers' definitions
    /// sized against `context_window`; returns the problems not reported
    /// to the task yet.
    pub(super) fn refresh(
        &mut self,
        base: &Arc<Registry>,
        catalog: Arc<Catalog>,
        servers: Option<&Arc<WorkspaceMcp>>,
        context_window: u64,
    ) -> Vec<String> {
        let signature = servers.filter(|s| !s.is_empty()).map(|s| s.signature());
        if Arc::ptr_eq(&catalog, &self.catalog) && signature == self.servers {
            return Vec::new();
        }
        let mut problems: Vec<String> = catalog
            .issues()
            .iter()
            .map(|i| format!("skill skipped: {i}"))
            .collect();
        let mut extra = Vec::new();
        if !catalog.is_empty() {
            match skill::overlay(&catalog) {
                Ok(tools) => extra.extend(tools),
                Err(e) => tracing::error!("the skill tools cannot be offered: {e}"),
            }
        }
        if let Some(servers) = servers.filter(|s| !s.is_empty()) {
            let (tools, found) = mcp::overlay(base, servers, context_window);
            extra.extend(tools);
            problems.extend(found);
            problems.extend(
                servers
                    .config
                    .issues
                    .iter()
                    .map(|i| format!("MCP configuration: {i}")),
            );
            for s in servers.servers.values() {
                match s.state() {
                    ServerState::Untrusted if s.entry.source == Source::Client => {
                        problems.push(format!(
                            "MCP server `{}` from the editor is not started: the person did not trust it",
                            s.name()
                        ));
                    }
                    ServerState::Untrusted => problems.push(format!(
                        "MCP server `{}` of this workspace is not started: project servers run only once \
                         trusted (`roost mcp trust --workspace {} {}`)",
                        s.name(),
                        servers.workspace.display(),
                        s.name()
                    )),
                    ServerState::Failed(why) | ServerState::Restarting(why) => {
                        problems.push(format!("MCP server `{}` is not available: {why}", s.name()));
                    }
                    _ => {}
                }
            }
        }
        self.registry = if extra.is_empty() {
            Arc::clone(base)
        } else {
            match base.with_overlay(extra) {
                Ok(r) => Arc::new(r),
                Err(e) => {
                    tracing::error!("the workspace's tools cannot be offered: {e}");
                    problems.push(format!(
                        "the workspace's skill and MCP tools are not offered: {e}"
                    ));
                    Arc::clone(base)
                }
            }
        };
        self.catalog = catalog;
        self.servers = signature;
        problems
            .into_iter()
            .filter(|m| self.reported.insert(m.clone()))
            .collect()
    }

    /// The tools the task is offered.
    pub(super) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The skills they were built over.
    pub(super) fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }
}
