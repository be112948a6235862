//! MCP servers' tools for tasks (the client side of MCP): servers are
//! configured in Roo Code's files ([`config`]), a workspace's own are
//! started only once trusted there ([`trust`]), stdio servers run in the
//! command sandbox ([`server`]) over a bounded pipe ([`stdio`]), what they
//! send is bounded ([`limits`]), package runners (`npx`, `uvx`, …) get a
//! cache of their own and their registry while they start ([`runner`]),
//! and the [`McpHub`] keeps each workspace's servers running. Their tools
//! reach tasks as `roost-core`'s tool executors laid over the registry
//! (`tools::mcp`) and go through the one dispatch.

#![forbid(unsafe_code)]

pub mod config;
pub mod hub;
pub mod limits;
pub mod runner;
pub mod server;
pub mod stdio;
pub mod tls;
pub mod trust;

pub use config::{
    ConfigIssue, HostVar, McpConfig, ServerEntry, Source, Transport, Written, client_entry,
};
pub use hub::{McpHub, SessionMcp, WorkspaceMcp};
pub use limits::ToolInfo;
pub use server::{CallError, McpServer, ServerState, ServerStatus};
pub use trust::{TrustError, TrustStore};

/// Name of the tool that pages an MCP tool's oversized result (the hub's
/// output store tells the model to call it; the registry reserves it).
pub const READ_MCP_OUTPUT: &str = "read_mcp_output";
