//! The Anthropic Messages wire format: `tool_use` blocks whose input
//! arrives as `input_json_delta`, `ping`s (even before `message_start`),
//! usage in `message_start` and `message_delta`, and `error` events.

use std::collections::BTreeSet;
use std::sync::Arc;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::assemble::ToolCallAssembler;
use super::body::RequestBody;
use super::object::{Obj, Text};
use roost_protocol::conversation::write_blocks;

use super::wire::{Parts, WireFormat, join_messages};
use super::{
    ChatRequest, EventStream, LlmError, Message, Provider, RetryPolicy, Role, StreamEvent,
    ToolDefinition, Transport, Usage, WireDecoder,
};

/// Output cap sent when the request names none (the API requires one).
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The JSON body of a streaming Messages request, every part encoded now
/// (a task reuses its messages' encodings; see [`super::wire`]).
pub fn request_json(model: &str, req: &ChatRequest) -> Result<Vec<u8>, serde_json::Error> {
    super::wire::encode(&AnthropicWire, model, req).map(|b| b.to_bytes().to_vec())
}

/// The Messages wire format, in parts (history messages are already in
/// Anthropic's block shape).
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicWire;

impl WireFormat for AnthropicWire {
    fn id(&self) -> &'static str {
        "anthropic"
    }

    /// The message as serde writes a [`Message`], its blocks written by
    /// [`write_blocks`] (texts escaped by SIMD).
    fn message(&self, out: &mut Vec<u8>, m: &Message) -> Result<(), serde_json::Error> {
        // Every field named: one added to `Message` is a compile error here,
        // not a field the wire silently drops.
        let Message { role, content } = m;
        out.extend_from_slice(match role {
            Role::User => br#"{"role":"user","content":"#,
            Role::Assistant => br#"{"role":"assistant","content":"#,
        });
        write_blocks(out, content)?;
        out.push(b'}');
        Ok(())
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

    fn body(&self, parts: &Parts<'_>) -> Result<RequestBody, serde_json::Error> {
        let mut out = parts.builder();
        out.push(b"{\"model\":");
        serde_json::to_writer(out.small(), parts.model)?;
        out.push(b",\"max_tokens\":");
        serde_json::to_writer(out.small(), &parts.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))?;
        out.push(b",\"stream\":true,\"system\":");
        out.share(parts.system);
        out.push_static(b",\"messages\":[");
        join_messages(&mut out, parts.messages, true);
        out.push_static(b"]");
        if !parts.tools.is_empty() {
            out.push_static(b",\"tools\":");
            out.share(parts.tools);
        }
        out.push_static(b"}");
        Ok(out.finish())
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
        // Most of a reply is deltas: read without a tree of values; any
        // other shape as a `Value` below.
        if event == "content_block_delta"
            && let Ok(Obj(d)) = serde_json::from_str::<Obj<BlockDelta<'_>>>(data)
            && self.on_block_delta(&d, out)
        {
            return Ok(());
        }
        self.on_value(event, data, out)
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

/// A `content_block_delta` event in its usual shape, strings borrowed
/// where they hold no escapes. Any other shape fails to read and is read
/// as a `Value`: the two readings agree wherever this one succeeds.
#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    index: u64,
    #[serde(borrow)]
    delta: Obj<DeltaBody<'a>>,
}

#[derive(Deserialize)]
struct DeltaBody<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Text<'a>>,
}

impl AnthropicDecoder {
    /// Take in a delta read in its usual shape; `false` (nothing taken)
    /// when it needs the general reading.
    fn on_block_delta(&mut self, d: &BlockDelta<'_>, out: &mut Vec<StreamEvent>) -> bool {
        let Ok(index) = u32::try_from(d.index) else {
            return false;
        };
        if d.kind != "content_block_delta" {
            return false;
        }
        let delta = &d.delta.0;
        match delta.kind.as_deref() {
            Some("text_delta") => {
                if let Some(t) = &delta.text {
                    out.push(StreamEvent::TextDelta(t.0.as_ref().to_owned()));
                }
            }
            Some("input_json_delta") if self.tool_blocks.contains(&index) => {
                if let Some(partial) = self
                    .asm
                    .push_args(index, delta.partial_json.as_deref().unwrap_or_default())
                {
                    out.push(StreamEvent::ToolCallArgs { index, partial });
                }
            }
            _ => {}
        }
        true
    }

    /// Take in an event of any shape, read as a [`Value`].
    fn on_value(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
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

    async fn stream_body(&self, body: RequestBody) -> Result<EventStream, LlmError> {
        Ok(super::run(
            Arc::clone(&self.transport),
            body,
            self.retry,
            || Box::new(AnthropicDecoder::default()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A delta's optional strings are read in place where they hold no
    /// escapes (serde copies a `Cow` inside an `Option`), and copied with
    /// their escapes undone where they do.
    #[test]
    fn a_deltas_plain_strings_are_borrowed_and_escaped_ones_copied() {
        let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","text":"plain","partial_json":"{\"path\":"}}"#;
        let Obj(d) = serde_json::from_str::<Obj<BlockDelta<'_>>>(data).expect("usual shape");
        let body = &d.delta.0;
        assert!(matches!(
            &body.kind,
            Some(Text(Cow::Borrowed("input_json_delta")))
        ));
        assert!(matches!(&body.text, Some(Text(Cow::Borrowed("plain")))));
        assert!(matches!(&body.partial_json, Some(Text(Cow::Owned(p))) if p == r#"{"path":"#));
    }

    /// A message is written as serde writes a [`Message`], byte for byte,
    /// for either role.
    #[test]
    fn messages_are_written_as_serde_writes_them() {
        let reply = Message {
            role: Role::Assistant,
            content: vec![
                crate::ContentBlock::Text {
                    text: "reading \"a\"\n".into(),
                },
                crate::ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": "a\tb"}),
                },
            ],
        };
        let results = Message {
            role: Role::User,
            content: vec![crate::ContentBlock::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: "1 | \u{1}x\\\n".repeat(50),
                is_error: true,
            }],
        };
        for m in [&reply, &results] {
            let mut written = Vec::new();
            AnthropicWire.message(&mut written, m).expect("written");
            assert_eq!(
                String::from_utf8_lossy(&written),
                serde_json::to_string(m).expect("serde")
            );
        }
    }

    /// A delta in the usual shape is read without a `Value` tree, and that
    /// reading agrees with the `Value` reading on everything it takes (the
    /// events, the error, the decoder's state after); deltas of another
    /// shape give way to the `Value` reading.
    #[test]
    fn the_usual_delta_reads_as_the_value_reading_does() {
        let start = r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}"#;
        // (event name, data, taken by the usual reading)
        let deltas: &[(&str, &str, bool)] = &[
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi \"you\"\n"}}"#,
                true,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#,
                true,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
                true,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"a.txt\"}"}}"#,
                true,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
                true,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
                true,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#,
                true,
            ),
            (
                "content_block_delta",
                r#"{"index":0,"delta":{"type":"text_delta","text":"no type"}}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"ping","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":4294967296,"delta":{"type":"text_delta","text":"x"}}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":-1,"delta":{}}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":"0","delta":{}}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":["text_delta","x"]}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"text_delta","text":"d"}}"#,
                false,
            ),
            (
                "content_block_delta",
                r#"["content_block_delta",0,{"type":"text_delta","text":"x"}]"#,
                false,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud800"}}"#,
                false,
            ),
            ("content_block_delta", r#"{"type":"content_bl"#, false),
            (
                "message_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"named otherwise"}}"#,
                false,
            ),
        ];
        for (event, data, usual) in deltas {
            let taken = *event == "content_block_delta"
                && serde_json::from_str::<Obj<BlockDelta<'_>>>(data).is_ok_and(|Obj(d)| {
                    let mut probe = AnthropicDecoder::default();
                    probe.on_block_delta(&d, &mut Vec::new())
                });
            assert_eq!(taken, *usual, "{data}");
            let (mut fast, mut slow) = (AnthropicDecoder::default(), AnthropicDecoder::default());
            for d in [&mut fast, &mut slow] {
                d.on_value("content_block_start", start, &mut Vec::new())
                    .expect("start");
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let ra = fast
                .on_event(event, data, &mut a)
                .map_err(|e| e.to_string());
            let rb = slow
                .on_value(event, data, &mut b)
                .map_err(|e| e.to_string());
            assert_eq!(ra, rb, "{data}");
            assert_eq!(a, b, "{data}");
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{data}");
        }
    }
}
