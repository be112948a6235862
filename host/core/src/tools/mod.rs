//! Tools as the host sees them: their specs, results and errors (the
//! protocol's types), what runs each one ([`ToolExecutor`]: a component
//! plugin in the sandbox, a host-native handler, a skill's tools, later
//! MCP tools and commands), the [`Registry`] of every tool by name, the names only
//! the host may use, argument validation, and what a call changed
//! ([`snapshot`]). The one dispatch that runs a call of any of them is
//! [`crate::call`].

pub mod access;
pub mod command;
pub mod component;
pub mod executor;
pub mod mcp;
pub mod native;
mod preview;
pub mod registry;
pub mod reserved;
pub mod skill;
pub(crate) mod snapshot;
mod validate;

pub use access::Access;
pub use component::ComponentTool;
pub use executor::{
    Effect, HOST, Invocation, Needs, Outcome, PreviewCall, ToolExecutor, ToolKind, host_spec,
};
pub use registry::{RegisteredTool, Registry, RegistryError};
pub use validate::ArgsValidator;

pub use roost_sandbox::tool::{ErrorCode, ToolError, ToolGroup, ToolOutput, ToolSpec};
