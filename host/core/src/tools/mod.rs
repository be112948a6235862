//! Tools as the host sees them: their specs, results and errors (shared by
//! plugins and host-native tools), and the registry that maps a tool name to
//! the plugin providing it.

mod registry;
pub mod reserved;
mod validate;

pub use registry::{RegisteredTool, Registry, RegistryError};
pub use validate::ArgsValidator;

pub use roost_sandbox::tool::{ErrorCode, ToolError, ToolGroup, ToolOutput, ToolSpec};
