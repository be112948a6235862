//! The OpenAI-compatible chat-completions wire format (OpenAI, OpenRouter,
//! Ollama, vLLM, llama.cpp's server): request bodies and the stream decoder.
//!
//! Tolerates what real servers send: `id`/`name` repeated on every delta,
//! the deprecated `function_call` field, usage folded into the last chunk,
//! and a missing `[DONE]` after a `finish_reason`.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize, de};
use serde_json::Value;

use super::assemble::ToolCallAssembler;
use super::body::RequestBody;
use super::object::{Obj, Text};
use roost_protocol::conversation::write_str;

use super::wire::{Parts, WireFormat, join_messages};
use super::{
    ChatRequest, ContentBlock, LlmError, Message, Role, StreamEvent, ToolDefinition, Usage,
    WireDecoder,
};

/// Stream index used for the deprecated single `function_call` field.
const LEGACY_FUNCTION_INDEX: u32 = 0;

/// The JSON body of a streaming chat-completions request, every part
/// encoded now (a task reuses its messages' encodings; see [`super::wire`]).
pub fn request_json(model: &str, req: &ChatRequest) -> Result<Vec<u8>, serde_json::Error> {
    super::wire::encode(&OpenAiWire, model, req).map(|b| b.to_bytes().to_vec())
}

/// The chat-completions wire format, in parts.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiWire;

impl WireFormat for OpenAiWire {
    fn id(&self) -> &'static str {
        "openai"
    }

    fn message(&self, out: &mut Vec<u8>, m: &Message) -> Result<(), serde_json::Error> {
        // Each wire message after the first follows a comma.
        let mut first = true;
        let mut next = |out: &mut Vec<u8>| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
        };
        match m.role {
            Role::Assistant => {
                let tool_calls = m
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolUse { id, name, input } => Some(WireCall {
                            id,
                            kind: "function",
                            function: WireFunction {
                                name,
                                arguments: input.to_string(),
                            },
                        }),
                        _ => None,
                    })
                    .collect();
                next(out);
                serde_json::to_writer(
                    &mut *out,
                    &WireMessage::Assistant {
                        content: joined(&m.content, "\n").filter(|t| !t.is_empty()),
                        tool_calls,
                    },
                )?;
            }
            Role::User => {
                // Tool results must directly follow the assistant message
                // that asked for them, so they go first.
                for b in &m.content {
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = b
                    {
                        // What `WireMessage::Tool` serialises to, with the
                        // result (the long text) escaped by SIMD.
                        next(out);
                        out.extend_from_slice(br#"{"role":"tool","tool_call_id":"#);
                        write_str(out, tool_use_id);
                        out.extend_from_slice(br#","content":"#);
                        write_str(out, content);
                        out.push(b'}');
                    }
                }
                if let Some(content) = joined(&m.content, "\n\n") {
                    next(out);
                    serde_json::to_writer(&mut *out, &WireMessage::User { content })?;
                }
            }
        }
        Ok(())
    }

    fn tools(&self, out: &mut Vec<u8>, tools: &[ToolDefinition]) -> Result<(), serde_json::Error> {
        if tools.is_empty() {
            return Ok(());
        }
        let wire: Vec<WireTool<'_>> = tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireToolFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect();
        serde_json::to_writer(out, &wire)
    }

    fn body(&self, parts: &Parts<'_>) -> Result<RequestBody, serde_json::Error> {
        let mut out = parts.builder();
        out.push(b"{\"model\":");
        serde_json::to_writer(out.small(), parts.model)?;
        out.push(b",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[");
        // The system message, from the prompt's kept encoding.
        out.push(b"{\"role\":\"system\",\"content\":");
        out.share(parts.system);
        out.push_static(b"}");
        join_messages(&mut out, parts.messages, false);
        out.push_static(b"]");
        if !parts.tools.is_empty() {
            out.push_static(b",\"tools\":");
            out.share(parts.tools);
        }
        if let Some(n) = parts.max_tokens {
            out.push(b",\"max_tokens\":");
            serde_json::to_writer(out.small(), &n)?;
        }
        out.push_static(b"}");
        Ok(out.finish())
    }
}

/// One message in OpenAI's shape: tool results are messages of their own.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    User {
        content: Cow<'a, str>,
    },
    Assistant {
        /// `null` when the reply was only tool calls.
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    /// Written by hand ([`OpenAiWire::message`]); serialised only to
    /// test that the two agree.
    #[cfg(test)]
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

/// A function call; `arguments` is the JSON text of the input.
#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: String,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireToolFunction<'a>,
}

#[derive(Serialize)]
struct WireToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The text blocks of `blocks` joined by `sep`, borrowed when there is one.
fn joined<'a>(blocks: &'a [ContentBlock], sep: &str) -> Option<Cow<'a, str>> {
    let mut texts = blocks.iter().filter_map(|b| match b {
        ContentBlock::Text { text } => Some(text.as_str()),
        _ => None,
    });
    let first = texts.next()?;
    match texts.next() {
        None => Some(Cow::Borrowed(first)),
        Some(second) => {
            let mut all = format!("{first}{sep}{second}");
            for t in texts {
                all.push_str(sep);
                all.push_str(t);
            }
            Some(Cow::Owned(all))
        }
    }
}

/// Decodes `data:` payloads of an OpenAI-compatible stream.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    asm: ToolCallAssembler,
    announced: BTreeSet<u32>,
    finish_reason: Option<String>,
    done: bool,
    generated_ids: u32,
    response_id: Option<String>,
    response_model: Option<String>,
}

impl OpenAiDecoder {
    /// A decoder for one reply.
    pub fn new() -> Self {
        Self::default()
    }

    fn tool_delta(
        &mut self,
        index: u32,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
        out: &mut Vec<StreamEvent>,
    ) {
        self.asm.start(index, id, name);
        if !self.announced.contains(&index)
            && let Some((id, name)) = self.asm.id_and_name(index)
            && !name.is_empty()
        {
            self.announced.insert(index);
            out.push(StreamEvent::ToolCallStarted {
                index,
                id: id.to_owned(),
                name: name.to_owned(),
            });
        }
        if let Some(delta) = args.filter(|a| !a.is_empty())
            && let Some(partial) = self.asm.push_args(index, delta)
        {
            out.push(StreamEvent::ToolCallArgs { index, partial });
        }
    }
}

fn usage_of(u: &Value) -> Usage {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let cached = n(&u["prompt_tokens_details"]["cached_tokens"]);
    Usage {
        input_tokens: n(&u["prompt_tokens"]).saturating_sub(cached),
        output_tokens: n(&u["completion_tokens"]),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// A streamed chunk in its usual shape, strings borrowed where they hold
/// no escapes. A field of another type, an array where an object belongs
/// or a repeated key fails to read, and the chunk is then read as a
/// [`Value`], which takes every shape: the two readings agree wherever
/// this one succeeds.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default)]
    error: Option<de::IgnoredAny>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    model: Option<Text<'a>>,
    #[serde(default)]
    usage: Option<Obj<ChunkUsage>>,
    #[serde(borrow, default)]
    choices: Option<Vec<Obj<ChunkChoice<'a>>>>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Obj<ChunkUsageDetails>>,
}

#[derive(Deserialize)]
struct ChunkUsageDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<Obj<ChunkDelta<'a>>>,
    #[serde(borrow, default)]
    finish_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct ChunkDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Text<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Obj<ChunkToolCall<'a>>>>,
    #[serde(borrow, default)]
    function_call: Option<Obj<ChunkFunction<'a>>>,
}

#[derive(Deserialize)]
struct ChunkToolCall<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    function: Option<Obj<ChunkFunction<'a>>>,
}

#[derive(Deserialize)]
struct ChunkFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Text<'a>>,
}

impl OpenAiDecoder {
    /// Take in a chunk read in its usual shape; `false` (nothing taken)
    /// when it needs the general reading: it reports an error, or a tool
    /// call's index is out of range.
    fn on_chunk(&mut self, chunk: &Chunk<'_>, out: &mut Vec<StreamEvent>) -> bool {
        if chunk.error.is_some() {
            return false;
        }
        let choices = chunk.choices.as_deref().unwrap_or_default();
        let in_range = choices
            .iter()
            .filter_map(|c| c.0.delta.as_ref()?.0.tool_calls.as_ref())
            .all(|calls| {
                u32::try_from(calls.len()).is_ok()
                    && calls
                        .iter()
                        .all(|tc| tc.0.index.is_none_or(|i| u32::try_from(i).is_ok()))
            });
        if !in_range {
            return false;
        }
        let label = |s: &Option<Text<'_>>| {
            s.as_deref()
                .filter(|s| !s.is_empty())
                .map(|s| s.chars().take(crate::MAX_LABEL).collect::<String>())
        };
        if self.response_id.is_none() {
            self.response_id = label(&chunk.id);
        }
        if self.response_model.is_none() {
            self.response_model = label(&chunk.model);
        }
        if let Some(Obj(u)) = &chunk.usage {
            let cached = u
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.0.cached_tokens)
                .unwrap_or(0);
            out.push(StreamEvent::Usage(Usage {
                input_tokens: u.prompt_tokens.unwrap_or(0).saturating_sub(cached),
                output_tokens: u.completion_tokens.unwrap_or(0),
                cache_read_tokens: cached,
                cache_write_tokens: 0,
            }));
        }
        for Obj(choice) in choices {
            let delta = choice.delta.as_ref().map(|d| &d.0);
            if let Some(text) = delta
                .and_then(|d| d.content.as_deref())
                .filter(|t| !t.is_empty())
            {
                out.push(StreamEvent::TextDelta(text.to_owned()));
            }
            if let Some(calls) = delta.and_then(|d| d.tool_calls.as_ref()) {
                for (pos, Obj(tc)) in calls.iter().enumerate() {
                    let index = match tc.index {
                        Some(i) => u32::try_from(i).unwrap_or(u32::MAX),
                        None => u32::try_from(pos).unwrap_or(u32::MAX),
                    };
                    let function = tc.function.as_ref().map(|f| &f.0);
                    self.tool_delta(
                        index,
                        tc.id.as_deref(),
                        function.and_then(|f| f.name.as_deref()),
                        function.and_then(|f| f.arguments.as_deref()),
                        out,
                    );
                }
            } else if let Some(Obj(fc)) = delta.and_then(|d| d.function_call.as_ref()) {
                self.tool_delta(
                    LEGACY_FUNCTION_INDEX,
                    None,
                    fc.name.as_deref(),
                    fc.arguments.as_deref(),
                    out,
                );
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.0.as_ref().to_owned());
            }
        }
        true
    }
}

impl OpenAiDecoder {
    /// Take in a chunk of any shape, read as a [`Value`].
    fn on_value(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| LlmError::Decode(format!("{e} in chunk {}", cut(data))))?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let msg = err["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| err.to_string());
            return Err(LlmError::Provider(msg));
        }
        if self.response_id.is_none() {
            self.response_id = crate::label(&v["id"]);
        }
        if self.response_model.is_none() {
            self.response_model = crate::label(&v["model"]);
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage(usage_of(u)));
        }
        for choice in v["choices"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                out.push(StreamEvent::TextDelta(text.to_owned()));
            }
            if let Some(calls) = delta["tool_calls"].as_array() {
                for (pos, tc) in calls.iter().enumerate() {
                    let index = tool_index(&tc["index"], pos)?;
                    self.tool_delta(
                        index,
                        tc["id"].as_str(),
                        tc["function"]["name"].as_str(),
                        tc["function"]["arguments"].as_str(),
                        out,
                    );
                }
            } else if delta["function_call"].is_object() {
                let fc = &delta["function_call"];
                self.tool_delta(
                    LEGACY_FUNCTION_INDEX,
                    None,
                    fc["name"].as_str(),
                    fc["arguments"].as_str(),
                    out,
                );
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        Ok(())
    }
}

impl WireDecoder for OpenAiDecoder {
    fn on_event(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        // The usual chunk is read without a tree of values; any other
        // shape (an error, a field of another type) as a `Value` below.
        if let Ok(Obj(chunk)) = serde_json::from_str::<Obj<Chunk<'_>>>(data)
            && self.on_chunk(&chunk, out)
        {
            return Ok(());
        }
        self.on_value(data, out)
    }

    fn finish(self: Box<Self>) -> Result<StreamEvent, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::TruncatedStream);
        }
        let mut n = self.generated_ids;
        let calls = self.asm.finish(|| {
            n += 1;
            format!("call_{}_{n}", uuid::Uuid::now_v7().simple())
        });
        Ok(StreamEvent::Done {
            calls,
            stop_reason: self.finish_reason,
            response_id: self.response_id,
            response_model: self.response_model,
        })
    }
}

fn cut(s: &str) -> &str {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A tool call's `index` from the network: an unsigned integer that fits
/// a `u32`, or absent (some servers leave it out; the position in the
/// delta then says which call). Anything else is a stream error, never a
/// merge of two calls.
pub(crate) fn tool_index(v: &serde_json::Value, pos: usize) -> Result<u32, LlmError> {
    let bad = || {
        LlmError::Decode(format!(
            "tool call index {v} is not a small unsigned integer"
        ))
    };
    if v.is_null() {
        return u32::try_from(pos).map_err(|_| bad());
    }
    v.as_u64()
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A chunk's strings are read in place where they hold no escapes,
    /// optional ones included (serde copies a `Cow` inside an `Option`):
    /// a streamed reply's chunks cost no allocation a string.
    #[test]
    fn a_chunks_plain_strings_are_borrowed_and_escaped_ones_copied() {
        let data = r#"{"id":"c1","model":"m","choices":[{"delta":{"content":"hi","tool_calls":[{"index":0,"id":"t1","function":{"name":"read_file","arguments":"{\"path\":1}"}}]},"finish_reason":"stop"}]}"#;
        let chunk: Chunk<'_> = serde_json::from_str(data).expect("usual shape");
        let borrowed = |t: &Option<Text<'_>>| matches!(t, Some(Text(Cow::Borrowed(_))));
        assert!(borrowed(&chunk.id) && borrowed(&chunk.model));
        let choice = &chunk.choices.as_deref().expect("choices")[0].0;
        assert!(borrowed(&choice.finish_reason));
        let delta = &choice.delta.as_ref().expect("delta").0;
        assert!(borrowed(&delta.content));
        let call = &delta.tool_calls.as_deref().expect("calls")[0].0;
        assert!(borrowed(&call.id));
        let function = &call.function.as_ref().expect("function").0;
        assert!(borrowed(&function.name));
        // Escapes must be undone: a copy, with the text it stands for.
        assert!(matches!(&function.arguments, Some(Text(Cow::Owned(a))) if a == r#"{"path":1}"#));
    }

    /// A chunk in the usual shape is read without a `Value` tree, and that
    /// reading agrees with the `Value` reading on everything it takes: the
    /// events, the error, the decoder's state after. Chunks of another
    /// shape (arrays where objects belong, fields of other types, repeated
    /// keys, errors, indexes out of range) give way to the `Value` reading.
    #[test]
    fn the_usual_chunk_reads_as_the_value_reading_does() {
        // (chunk, taken by the usual reading)
        let chunks: &[(&str, bool)] = &[
            (
                r#"{"id":"c1","model":"m","choices":[{"delta":{"content":"hi \"there\"\n"}}]}"#,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"th\":1}"}}]},"finish_reason":"tool_calls"}]}"#,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}"#,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":null,"function_call":{"name":"g"}}}]}"#,
                true,
            ),
            (
                r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":5}}}"#,
                true,
            ),
            (
                r#"{"choices":null,"usage":null,"error":null,"id":"","extra":[1,{"x":2}]}"#,
                true,
            ),
            (r#"{"choices":[{"delta":null,"finish_reason":null}]}"#, true),
            (
                r#"[null,null,null,null,[{"delta":{"content":"x"}}]]"#,
                false,
            ),
            (r#"{"choices":[[{"content":"x"}]]}"#, false),
            (r#"{"choices":[{"delta":["x"]}]}"#, false),
            (r#"{"choices":[{"delta":{"content":5}}]}"#, false),
            (r#"{"choices":[{"finish_reason":7}]}"#, false),
            (r#"{"id":3,"choices":[{"delta":{"content":"y"}}]}"#, false),
            (r#"{"usage":[1],"choices":[]}"#, false),
            (r#"{"usage":{"prompt_tokens":1.5}}"#, false),
            (
                r#"{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"}}]}"#,
                false,
            ),
            (r#"{"error":{"message":"overloaded"}}"#, false),
            (r#"{"error":"plain"}"#, false),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"index":4294967296,"function":{"name":"x"}}]}}]}"#,
                false,
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}"#,
                false,
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"index":2.0}]}}]}"#,
                false,
            ),
            (r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#, false),
            (r#"{"choices": tru"#, false),
            (r#"42"#, false),
        ];
        for (chunk, usual) in chunks {
            let taken = serde_json::from_str::<Obj<Chunk<'_>>>(chunk)
                .is_ok_and(|Obj(c)| OpenAiDecoder::new().on_chunk(&c, &mut Vec::new()));
            assert_eq!(taken, *usual, "{chunk}");
            let (mut fast, mut slow) = (OpenAiDecoder::new(), OpenAiDecoder::new());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let ra = fast.on_event("", chunk, &mut a).map_err(|e| e.to_string());
            let rb = slow.on_value(chunk, &mut b).map_err(|e| e.to_string());
            assert_eq!(ra, rb, "{chunk}");
            assert_eq!(a, b, "{chunk}");
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{chunk}");
        }
        // A whole stream read both ways assembles the same calls.
        let stream = [chunks[1].0, chunks[2].0];
        let (mut fast, mut slow) = (OpenAiDecoder::new(), OpenAiDecoder::new());
        for chunk in stream {
            fast.on_event("", chunk, &mut Vec::new()).expect("fast");
            slow.on_value(chunk, &mut Vec::new()).expect("slow");
        }
        let (fast, slow) = (
            Box::new(fast).finish().expect("fast"),
            Box::new(slow).finish().expect("slow"),
        );
        assert_eq!(fast, slow);
        assert!(format!("{fast:?}").contains("read_file"), "{fast:?}");
    }

    #[test]
    fn bad_tool_indexes_are_stream_errors() {
        assert_eq!(tool_index(&serde_json::json!(2), 0).ok(), Some(2));
        assert_eq!(tool_index(&serde_json::Value::Null, 3).ok(), Some(3));
        for bad in [
            serde_json::json!(4_294_967_296u64),
            serde_json::json!(-1),
            serde_json::json!("0"),
            serde_json::json!(1.5),
        ] {
            assert!(tool_index(&bad, 0).is_err(), "{bad}");
        }
        let mut d = OpenAiDecoder::new();
        let mut out = Vec::new();
        let data = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":4294967297,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#;
        assert!(matches!(
            d.on_event("", data, &mut out),
            Err(LlmError::Decode(_))
        ));
    }
    use crate::{Message, ToolDefinition};

    fn run(chunks: &[&str]) -> Result<Vec<StreamEvent>, LlmError> {
        let mut d = Box::new(OpenAiDecoder::new());
        let mut out = Vec::new();
        for c in chunks {
            d.on_event("", c, &mut out)?;
        }
        out.push(d.finish()?);
        Ok(out)
    }

    /// A user message of tool results (and text) is written as serde
    /// writes `WireMessage`s, byte for byte: results first, each a `tool`
    /// message, with every character an escape can meet.
    #[test]
    fn tool_results_are_written_as_serde_writes_them() {
        let mut every: String = (0u8..0x80).map(char::from).collect();
        every.push_str("é漢字\u{2028}\"\\/");
        let long = format!("{}{every}", "7 | let s = \"x\";\n".repeat(200));
        let m = Message {
            role: crate::Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: long.clone(),
                    is_error: false,
                },
                ContentBlock::Text {
                    text: every.clone(),
                },
                ContentBlock::ToolResult {
                    tool_use_id: every.clone(),
                    content: String::new(),
                    is_error: true,
                },
            ],
        };
        let mut written = Vec::new();
        OpenAiWire.message(&mut written, &m).expect("written");
        let mut serde = Vec::new();
        for (id, content) in [("call_1", long.as_str()), (every.as_str(), "")] {
            serde_json::to_writer(
                &mut serde,
                &WireMessage::Tool {
                    tool_call_id: id,
                    content,
                },
            )
            .expect("tool");
            serde.push(b',');
        }
        serde_json::to_writer(
            &mut serde,
            &WireMessage::User {
                content: Cow::Borrowed(every.as_str()),
            },
        )
        .expect("user");
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&serde)
        );
    }

    /// A response's id and model are kept as labels: the first given, cut
    /// to `MAX_LABEL` characters (a hostile server's megabyte is not),
    /// and a non-string one is no label.
    #[test]
    fn response_id_and_model_are_bounded_labels() {
        let huge = "i".repeat(1 << 20);
        let first = json!({"id": huge, "model": 7, "choices": [{"delta": {"content": "hi"}}]});
        let later = json!({"id": "other", "model": "m-2", "choices": [{"delta": {}, "finish_reason": "stop"}]});
        let ev = run(&[&first.to_string(), &later.to_string()]).expect("decodes");
        let Some(StreamEvent::Done {
            response_id,
            response_model,
            ..
        }) = ev.last()
        else {
            panic!("no done")
        };
        assert_eq!(
            response_id.as_ref().map(|i| i.chars().count()),
            Some(crate::MAX_LABEL)
        );
        assert_eq!(response_model.as_deref(), Some("m-2"));
    }

    #[test]
    fn repeated_ids_and_names_do_not_duplicate() {
        let ev = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read_file","arguments":"th\":\"a\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#,
        ])
        .expect("decodes");
        let Some(StreamEvent::Done { calls, .. }) = ev.last() else {
            panic!("no done")
        };
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].args, Ok(json!({"path": "a"})));
        assert!(ev.iter().any(
            |e| matches!(e, StreamEvent::Usage(u) if u.input_tokens == 10 && u.output_tokens == 3)
        ));
        assert_eq!(
            ev.iter()
                .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
                .count(),
            1
        );
    }

    #[test]
    fn legacy_function_call_is_accepted() {
        let ev = run(&[
            r#"{"choices":[{"delta":{"function_call":{"name":"list_files","arguments":""}}}]}"#,
            r#"{"choices":[{"delta":{"function_call":{"arguments":"{}"}},"finish_reason":"function_call"}]}"#,
        ])
        .expect("decodes");
        let Some(StreamEvent::Done { calls, .. }) = ev.last() else {
            panic!("no done")
        };
        assert_eq!(calls[0].name, "list_files");
        assert!(calls[0].id.starts_with("call_"));
    }

    #[test]
    fn truncation_and_errors() {
        assert_eq!(
            run(&[r#"{"choices":[{"delta":{"content":"hi"}}]}"#]).expect_err("truncated"),
            LlmError::TruncatedStream
        );
        assert!(
            matches!(run(&[r#"{"error":{"message":"overloaded"}}"#]), Err(LlmError::Provider(m)) if m == "overloaded")
        );
        assert!(matches!(run(&["{not json"]), Err(LlmError::Decode(_))));
        assert!(
            run(&[r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}"#]).is_ok()
        );
    }

    #[test]
    fn history_translates_tool_use_and_results() {
        let req = ChatRequest {
            system: "sys".into(),
            messages: vec![
                Message::user_text("go"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentBlock::Text { text: "ok".into() },
                        ContentBlock::ToolUse {
                            id: "c1".into(),
                            name: "t".into(),
                            input: json!({"a": 1}),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "c1".into(),
                        content: "r".into(),
                        is_error: false,
                    }],
                },
            ],
            tools: vec![ToolDefinition {
                name: "t".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
        };
        let b: Value =
            serde_json::from_slice(&request_json("m", &req).expect("encodes")).expect("json");
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(b["messages"][3]["role"], "tool");
        assert_eq!(b["tools"][0]["function"]["name"], "t");
    }
}
