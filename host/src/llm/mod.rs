//! Language-model providers: one streaming trait, the OpenAI-compatible and
//! Anthropic wire formats, a scripted provider that replays transcripts
//! through the same decoding path, and incremental tool-call assembly.

mod types;

pub use types::{ContentBlock, Message, Role, ToolDefinition, Usage};
