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

    /// Room for this message encoded as JSON in any of the shapes Roost
    /// writes it (a provider's wire, the store): its texts with an
    /// eighth more for escapes (source code quotes often), and room for
    /// the keys. An encoding the host keeps sized from this is neither
    /// copied while it grows nor left with up to twice the bytes it
    /// holds.
    pub fn encoded_len_hint(&self) -> usize {
        let text: usize = self
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.len().saturating_add(32),
                ContentBlock::ToolResult { content, .. } => content.len().saturating_add(96),
                ContentBlock::ToolUse { .. } => 256,
            })
            .fold(0, usize::saturating_add);
        text.saturating_add(text / 8).saturating_add(64)
    }

    /// Ids of the tool calls this message asks for.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }
}

/// `blocks` as JSON, byte for byte what `serde_json::to_writer` writes
/// for them, with their texts escaped by SIMD: a tool's result is escaped
/// for its row in the store and for the request that sends it, and
/// serde_json's escaping (a byte at a time) cost 3.5% of a P6 turn.
pub fn write_blocks(out: &mut Vec<u8>, blocks: &[ContentBlock]) -> Result<(), serde_json::Error> {
    out.push(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match block {
            ContentBlock::Text { text } => {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                write_str(out, text);
                out.push(b'}');
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                out.extend_from_slice(br#"{"type":"tool_result","tool_use_id":"#);
                write_str(out, tool_use_id);
                out.extend_from_slice(br#","content":"#);
                write_str(out, content);
                if *is_error {
                    out.extend_from_slice(br#","is_error":true"#);
                }
                out.push(b'}');
            }
            ContentBlock::ToolUse { .. } => serde_json::to_writer(&mut *out, block)?,
        }
    }
    out.push(b']');
    Ok(())
}

/// `s` as a JSON string (quoted, escaped as serde_json escapes it), by
/// SIMD. The escaper needs six times the string's length free past the
/// end of what it writes to; it writes into a scratch buffer of the
/// thread's, so `out` grows only by what the string takes (an encoding
/// sized from [`Message::encoded_len_hint`] stays as sized).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    /// Scratch kept between strings up to this capacity (a larger one is
    /// let go after its string).
    const KEPT: usize = 256 << 10;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.clear();
            json_escape_simd::escape_into(s, &mut scratch);
            out.extend_from_slice(&scratch);
            if scratch.capacity() > KEPT {
                *scratch = Vec::new();
            }
        }
        // Not re-entered in practice; escaped straight into `out` if it is.
        Err(_) => json_escape_simd::escape_into(s, out),
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool result of source text (a newline every line, quotes, a
    /// tab) and a reply with text and a call fit their hint in both the
    /// store's shape (the blocks) and a wire's (the message), so the
    /// buffer sized from it never grows.
    #[test]
    fn typical_messages_fit_their_encoded_len_hint() {
        let source = "fn main() {\n\tprintln!(\"hello, {}\", name);\n}\n".repeat(100);
        let result = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "call_0123456789".into(),
                content: source,
                is_error: false,
            }],
        };
        let reply = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text {
                    text: "Reading the file.".into(),
                },
                ContentBlock::ToolUse {
                    id: "call_0123456789".into(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": "src/main.rs", "start_line": 1}),
                },
            ],
        };
        for m in [&result, &reply] {
            let hint = m.encoded_len_hint();
            let mut written = Vec::with_capacity(hint);
            write_blocks(&mut written, &m.content).expect("blocks");
            assert_eq!(written.capacity(), hint, "the buffer grew");
            for encoded in [
                serde_json::to_vec(&m.content).expect("blocks"),
                serde_json::to_vec(m).expect("message"),
            ] {
                assert!(
                    encoded.len() <= hint,
                    "{} bytes encoded, {hint} hinted",
                    encoded.len()
                );
            }
        }
    }
    /// What [`write_blocks`] writes is what serde_json writes, byte for
    /// byte, for every kind of block and every character an escape can
    /// meet: control characters, quotes, backslashes, DEL, non-ASCII,
    /// the line separators JavaScript minds, and empty strings.
    #[test]
    fn written_blocks_are_serde_jsons_bytes() {
        let mut every: String = (0u8..0x80).map(char::from).collect();
        every.push_str("é漢字\u{2028}\u{2029}\u{1F600}\"\\/");
        let long = format!("{}{every}", "12 | let x = \"y\";\n".repeat(300));
        let cases: Vec<Vec<ContentBlock>> = vec![
            Vec::new(),
            vec![ContentBlock::Text {
                text: String::new(),
            }],
            vec![ContentBlock::Text {
                text: every.clone(),
            }],
            vec![
                ContentBlock::Text {
                    text: "reading".into(),
                },
                ContentBlock::ToolUse {
                    id: "c\"1".into(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": every.clone(), "n": 1}),
                },
            ],
            vec![
                ContentBlock::ToolResult {
                    tool_use_id: every.clone(),
                    content: long.clone(),
                    is_error: false,
                },
                ContentBlock::ToolResult {
                    tool_use_id: "c2".into(),
                    content: every.clone(),
                    is_error: true,
                },
                ContentBlock::Text { text: long },
            ],
        ];
        for blocks in cases {
            let mut written = Vec::new();
            write_blocks(&mut written, &blocks).expect("written");
            let serde = serde_json::to_vec(&blocks).expect("serde");
            assert_eq!(
                String::from_utf8_lossy(&written),
                String::from_utf8_lossy(&serde)
            );
        }
    }
}
