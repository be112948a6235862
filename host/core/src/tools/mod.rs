//! Tools as the host sees them: their specs, results and errors (shared by
//! plugins and host-native tools), the names only the host may use, and
//! argument validation. What runs each tool is the task layer's registry
//! (`task::Registry`).

pub mod reserved;
mod validate;

pub use validate::ArgsValidator;

pub use roost_sandbox::tool::{ErrorCode, ToolError, ToolGroup, ToolOutput, ToolSpec};
