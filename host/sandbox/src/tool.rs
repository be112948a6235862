//! What a tool is, as the WIT contract between the host and a plugin
//! describes it: its spec and group, its output and its errors. Shared by
//! everything above the sandbox (plugin tools, host-native tools, hooks).

pub use roost_protocol::tool::{
    ErrorCode, ToolAnnotations, ToolError, ToolGroup, ToolOutput, ToolSpec,
};
