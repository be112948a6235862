//! The Anthropic Messages wire format: `tool_use` blocks whose input
//! arrives as `input_json_delta`, `ping`s (even before `message_start`),
//! usage in `message_start` and `message_delta`, and `error` events.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::assemble::ToolCallAssembler;
use super::wire::{Parts, WireFormat, join_messages};
use super::{
    ChatRequest, EventStream, LlmError, Message, Provider, RetryPolicy, StreamEvent,
    ToolDefinition, Transport, Usage, WireDecoder,
};

/// Output cap sent when the request names none (the API requires one).
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The JSON body of a streaming Messages request, every part encoded now
/// (a task reuses its messages' encodings; see [`super::wire`]).
pub fn request_json(model: &str, req: &ChatRequest) -> Result<Vec<u8>, serde_json::Error> {
    super::wire::encode(&AnthropicWire, model, req)
}

/// The Messages wire format, in parts (history messages are already in
/// Anthropic's block shape).
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicWire;

impl WireFormat for AnthropicWire {
    fn id(&self) -> &'static str {
        "anthropic"
    }

    fn message(&self, out: &mut Vec<u8>, m: &Message) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, m)
    }

    fn tools(&self, out: &mut Vec<u8>, tools: &[ToolDefinition]) -> Result<(), serde_json::Error> {
        if tools.is_empty() {
            return Ok(());
        }
        let wire: Vec<WireTool<'_>> = tools
            .iter()
            .map(|t| WireTool {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
            })
            .collect();
        serde_json::to_writer(out, &wire)
    }

    fn body(&self, parts: &Parts<'_>) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(parts.len());
        out.extend_from_slice(b"{\"model\":");
        serde_json::to_writer(&mut out, parts.model)?;
        out.extend_from_slice(b",\"max_tokens\":");
        serde_json::to_writer(&mut out, &parts.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))?;
        out.extend_from_slice(b",\"stream\":true,\"system\":");
        out.extend_from_slice(parts.system);
        out.extend_from_slice(b",\"messages\":[");
        join_messages(&mut out, parts.messages, true);
        out.push(b']');
        if !parts.tools.is_empty() {
            out.extend_from_slice(b",\"tools\":");
            out.extend_from_slice(parts.tools);
        }
        out.push(b'}');
        Ok(out)
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// Decodes an Anthropic Messages stream.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    asm: ToolCallAssembler,
    tool_blocks: BTreeSet<u32>,
    stop_reason: Option<String>,
    stopped: bool,
    response_id: Option<String>,
    response_model: Option<String>,
}

impl WireDecoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        if data.trim().is_empty() {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| LlmError::Decode(format!("{e} in {event} event")))?;
        let kind = v["type"].as_str().unwrap_or(event);
        match kind {
            "ping" | "content_block_stop" => {}
            "message_start" => {
                self.response_id = crate::label(&v["message"]["id"]);
                self.response_model = crate::label(&v["message"]["model"]);
                let u = &v["message"]["usage"];
                let n = |k: &str| u[k].as_u64().unwrap_or(0);
                out.push(StreamEvent::Usage(Usage {
                    input_tokens: n("input_tokens"),
                    output_tokens: 0,
                    cache_read_tokens: n("cache_read_input_tokens"),
                    cache_write_tokens: n("cache_creation_input_tokens"),
                }));
            }
            "content_block_start" => {
                let index = block_index(&v)?;
                let block = &v["content_block"];
                match block["type"].as_str() {
                    Some("tool_use") => {
                        self.tool_blocks.insert(index);
                        let id = block["id"].as_str().unwrap_or_default();
                        let name = block["name"].as_str().unwrap_or_default();
                        self.asm.start(index, Some(id), Some(name));
                        out.push(StreamEvent::ToolCallStarted {
                            index,
                            id: id.to_owned(),
                            name: name.to_owned(),
                        });
                    }
                    Some("text") => {
                        if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(StreamEvent::TextDelta(t.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = block_index(&v)?;
                let delta = &v["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        if let Some(t) = delta["text"].as_str() {
                            out.push(StreamEvent::TextDelta(t.to_owned()));
                        }
                    }
                    Some("input_json_delta") if self.tool_blocks.contains(&index) => {
                        if let Some(partial) = self
                            .asm
                            .push_args(index, delta["partial_json"].as_str().unwrap_or_default())
                        {
                            out.push(StreamEvent::ToolCallArgs { index, partial });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(r.to_owned());
                }
                if let Some(o) = v["usage"]["output_tokens"].as_u64() {
                    out.push(StreamEvent::Usage(Usage {
                        output_tokens: o,
                        ..Usage::default()
                    }));
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let msg = v["error"]["message"].as_str().unwrap_or("unknown error");
                let ty = v["error"]["type"].as_str().unwrap_or("error");
                return Err(LlmError::Provider(format!("{ty}: {msg}")));
            }
            other => tracing::debug!("ignoring Anthropic event {other}"),
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<StreamEvent, LlmError> {
        if !self.stopped && self.stop_reason.is_none() {
            return Err(LlmError::TruncatedStream);
        }
        let calls = self
            .asm
            .finish(|| format!("toolu_{}", uuid::Uuid::now_v7().simple()));
        Ok(StreamEvent::Done {
            calls,
            stop_reason: self.stop_reason,
            response_id: self.response_id,
            response_model: self.response_model,
        })
    }
}

/// A content block's `index`: required, an unsigned integer that fits a
/// `u32`; anything else is a stream error (never block 0 by default, which
/// would merge two calls).
fn block_index(v: &serde_json::Value) -> Result<u32, LlmError> {
    v["index"]
        .as_u64()
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| {
            LlmError::Decode(format!(
                "content block index {} is not a small unsigned integer",
                v["index"]
            ))
        })
}

/// The Anthropic Messages provider over some transport.
pub struct Anthropic {
    model: String,
    transport: Arc<dyn Transport>,
    retry: RetryPolicy,
}

impl Anthropic {
    /// A provider for `model` over `transport` (HTTP to `/v1/messages`).
    pub fn new(model: &str, transport: Arc<dyn Transport>, retry: RetryPolicy) -> Self {
        Self {
            model: model.to_owned(),
            transport,
            retry,
        }
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn wire(&self) -> &dyn WireFormat {
        &AnthropicWire
    }

    async fn stream_body(&self, body: Bytes) -> Result<EventStream, LlmError> {
        Ok(super::run(
            Arc::clone(&self.transport),
            body,
            self.retry,
            || Box::new(AnthropicDecoder::default()),
        ))
    }
}
