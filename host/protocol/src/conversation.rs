//! The provider-neutral conversation: what the task loop keeps as API
//! history, what the store persists (so the store needs no model crate),
//! and what each provider translates to its own wire format.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (and tool results, as in Anthropic's format).
    User,
    /// The model.
    Assistant,
}

/// One block of a message, in Anthropic's shape (Roo Code keeps its API
/// history this way too): text, a tool call, or a tool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks for a tool call.
    ToolUse {
        /// Call id, unique within the task; the matching result refers to it.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments (a JSON object; `{}` when the model's JSON was malformed).
        input: serde_json::Value,
    },
    /// The result of a tool call, sent back as part of a user message.
    ToolResult {
        /// Id of the `ToolUse` this answers.
        tool_use_id: String,
        /// Result text for the model.
        content: String,
        /// Whether the call failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// One message of the API history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Content blocks, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// An assistant message with one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// Ids of the tool calls this message asks for.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }
}

/// A tool as offered to a model (native function calling).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolDefinition {
    /// Tool name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

pub use crate::task::Usage;
