//! What a tool is, as the WIT contract between the host and a plugin
//! describes it and front-ends list it: its spec and group, its output and
//! its errors, and the one structured form every refusal of a call takes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Roo Code's tool groups; modes enable tools and policies approve them by group.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolGroup {
    /// Reads the workspace.
    Read,
    /// Changes files.
    Edit,
    /// Runs native commands.
    Command,
    /// Drives a browser.
    Browser,
    /// Bridges to MCP servers.
    Mcp,
    /// Switches modes, starts subtasks.
    Modes,
}

impl ToolGroup {
    /// Every group, in the order Roo lists them.
    pub const ALL: [ToolGroup; 6] = [
        Self::Read,
        Self::Edit,
        Self::Command,
        Self::Browser,
        Self::Mcp,
        Self::Modes,
    ];

    /// Lower-case name, as used in mode files and CLI flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Edit => "edit",
            Self::Command => "command",
            Self::Browser => "browser",
            Self::Mcp => "mcp",
            Self::Modes => "modes",
        }
    }

    /// The group named `name` (as [`ToolGroup::as_str`] spells it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.as_str() == name)
    }
}

impl std::fmt::Display for ToolGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the host knows about a tool: enough to offer it to a model, gate it
/// and sandbox it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSpec {
    /// Name the model calls.
    pub name: String,
    /// Description shown to the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub args_schema: serde_json::Value,
    /// Group, for mode filtering and approvals.
    pub group: ToolGroup,
    /// Whether the tool changes state.
    pub destructive: bool,
    /// Top-level args holding workspace-relative paths.
    pub path_args: Vec<String>,
    /// Hints for people and front-ends (none for host-native tools and
    /// `roost:plugin@0.1.0` plugins).
    #[serde(default)]
    pub annotations: ToolAnnotations,
}

/// Hints about a tool for people and front-ends (MCP's tool annotations):
/// they never widen what a call is granted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolAnnotations {
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default)]
    pub idempotent: bool,
    /// It reaches beyond the workspace (the network).
    #[serde(default)]
    pub open_world: bool,
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolOutput {
    /// Text for the model.
    pub text: String,
    /// Structured result, if the tool gave one.
    pub data: Option<serde_json::Value>,
    /// Whether the host cut the output at the call's size cap.
    pub truncated: bool,
}

impl ToolOutput {
    /// Plain text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            data: None,
            truncated: false,
        }
    }
}

/// Category of a tool failure; mirrors the WIT `error-code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// Arguments did not match what the tool accepts.
    InvalidArgs,
    /// Something named does not exist.
    NotFound,
    /// The sandbox or policy refused.
    PermissionDenied,
    /// A time, memory or size limit was hit.
    LimitExceeded,
    /// Anything else.
    Internal,
}

impl ErrorCode {
    /// Kebab-case name, as in the WIT.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgs => "invalid-args",
            Self::NotFound => "not-found",
            Self::PermissionDenied => "permission-denied",
            Self::LimitExceeded => "limit-exceeded",
            Self::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed tool call: what the model sees in its error `tool_result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// Category.
    pub code: ErrorCode,
    /// Explanation.
    pub message: String,
}

impl ToolError {
    /// Error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}
