//! The tools a workspace's MCP servers bring, laid over the process's
//! registry for each task whose workspace has servers (a per-task
//! overlay, rebuilt when a server's tools change): each server tool as
//! `mcp__<server>__<tool>` ([`call`]), Roo's `access_mcp_resource`
//! ([`resource`]), `read_mcp_output` to page an oversized result
//! (the same pager as `read_command_output`), and — when the servers' tool definitions would take more
//! than a tenth of the context window — `search_tools` ([`search`]), which
//! offers the definitions it finds instead of all of them. Each is a
//! [`ToolExecutor`](super::ToolExecutor) like any tool and goes through
//! the one dispatch: group `mcp`, schema validation, the intent gate,
//! mode hooks, approvals, the trace.

pub(super) mod call;
pub(super) mod resource;
pub(super) mod search;

use std::collections::BTreeSet;
use std::sync::Arc;

use super::access::Access;
use super::registry::{RegisteredTool, Registry};
use crate::mcp::WorkspaceMcp;
use roost_protocol::ToolGroup;

pub use super::reserved::{READ_MCP_OUTPUT, SEARCH_TOOLS};
pub use call::result_text;
pub use resource::NAME as ACCESS_MCP_RESOURCE;

/// Bytes per token when sizing tool definitions against the window.
const BYTES_PER_TOKEN: u64 = 4;

/// The MCP tools of `servers` over `base` (their definitions deferred
/// behind `search_tools` when they would take more than a tenth of
/// `context_window` tokens), and the problems found (a name another tool
/// has, a schema that does not compile).
pub fn overlay(
    base: &Registry,
    servers: &Arc<WorkspaceMcp>,
    context_window: u64,
) -> (Vec<RegisteredTool>, Vec<String>) {
    let mut tools = Vec::new();
    let names: BTreeSet<String> = base.iter().map(|t| t.spec.name.clone()).collect();
    let mut size: u64 = 0;
    let mut calls = Vec::new();
    let (offered, mut problems) = servers.offered(&names);
    for (server, infos) in offered {
        for info in infos {
            if info.refused.is_some() {
                continue;
            }
            size = size.saturating_add(
                u64::try_from(
                    info.offered.len() + info.description.len() + info.schema.to_string().len(),
                )
                .unwrap_or(u64::MAX),
            );
            calls.push(call::McpTool::new(
                Arc::clone(&server),
                info,
                Arc::clone(servers),
            ));
        }
    }
    let deferred = size / BYTES_PER_TOKEN > context_window / 10;
    let mut catalog = Vec::new();
    for mut c in calls {
        c.deferred = deferred;
        catalog.push(c.spec_ref().clone());
        match RegisteredTool::new(Arc::new(c), Access::FULL) {
            Ok(t) => tools.push(t),
            Err(e) => problems.push(format!("MCP tool not offered: {e}")),
        }
    }
    let helpers: Vec<Arc<dyn super::ToolExecutor>> = {
        let mut h: Vec<Arc<dyn super::ToolExecutor>> = vec![
            Arc::new(resource::AccessMcpResource::new(Arc::clone(servers))),
            Arc::new(super::command::read_output::PagedOutput::new(
                READ_MCP_OUTPUT,
                "Read the whole result of an MCP tool call that was too large to show, \
                 a page at a time: the cut result gives its id and the offset to go on from.",
                "the cut result",
                ToolGroup::Mcp,
                servers.outputs.clone(),
            )),
        ];
        if deferred {
            h.push(Arc::new(search::SearchTools::new(catalog)));
        }
        h
    };
    for h in helpers {
        match RegisteredTool::new(h, Access::FULL) {
            Ok(t) => tools.push(t),
            Err(e) => problems.push(format!("MCP tool not offered: {e}")),
        }
    }
    (tools, problems)
}
