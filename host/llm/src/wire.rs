//! Request bodies in parts. A provider's wire format encodes each history
//! message on its own, the tool list on its own, and joins the parts with
//! the system prompt into a body; its `request_json` is that join of
//! freshly encoded parts. A long task keeps each message's bytes from the
//! turn it was first sent (the task loop's request cache in `roost-core`), so a turn
//! shares its history's encodings instead of encoding it again (the history
//! of a 300-turn task is ~600 KiB of JSON to escape, every turn), and the
//! body holds those encodings rather than a copy of them
//! ([`RequestBody`]).

use bytes::Bytes;

use super::body::{BodyBuilder, RequestBody};
use super::{ChatRequest, Message, ToolDefinition};

/// How one provider lays out a request body.
pub trait WireFormat: Send + Sync {
    /// Which encoding this is (`openai`, `anthropic`): equal ids encode
    /// equal inputs to equal bytes, so encodings can be shared by it.
    fn id(&self) -> &'static str;

    /// Append `m` as this format sends it: zero or more wire messages,
    /// comma-separated, without brackets (OpenAI sends each tool result as
    /// a message of its own).
    fn message(&self, out: &mut Vec<u8>, m: &Message) -> Result<(), serde_json::Error>;

    /// Append the tool definitions as this format sends them (a JSON
    /// array); nothing when there are none.
    fn tools(&self, out: &mut Vec<u8>, tools: &[ToolDefinition]) -> Result<(), serde_json::Error>;

    /// The body: `model`, `system`, the encoded `messages` (each from
    /// [`WireFormat::message`]; empty ones are skipped), the encoded
    /// `tools` (from [`WireFormat::tools`]) and the output cap; the parts
    /// are shared by the body, not copied into it.
    fn body(&self, parts: &Parts<'_>) -> Result<RequestBody, serde_json::Error>;
}

/// The parts of one request body, encoded.
pub struct Parts<'a> {
    /// Model id.
    pub model: &'a str,
    /// System prompt, encoded as a JSON string (quotes included, see
    /// [`encode_system`]): a task's prompt rarely changes between turns,
    /// so its encoding is kept instead of escaping it again every turn.
    pub system: &'a Bytes,
    /// Each model message, encoded by [`WireFormat::message`].
    pub messages: &'a [Bytes],
    /// The tool list, encoded by [`WireFormat::tools`] (empty: none).
    pub tools: &'a Bytes,
    /// Output token cap, if any.
    pub max_tokens: Option<u32>,
}

impl Parts<'_> {
    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
            && matches!(&self.system[..], b"" | b"\"\"")
            && self.tools.is_empty()
    }

    /// A builder for these parts' body.
    pub(super) fn builder(&self) -> BodyBuilder {
        BodyBuilder::with_capacity(self.messages.len() + 2)
    }
}

/// `system` encoded as a JSON string, as [`Parts::system`] takes it.
pub fn encode_system(system: &str) -> Result<Bytes, serde_json::Error> {
    serde_json::to_vec(system).map(Bytes::from)
}

/// The body of `req` in `wire`'s format for `model`, every part encoded now.
pub fn encode(
    wire: &dyn WireFormat,
    model: &str,
    req: &ChatRequest,
) -> Result<RequestBody, serde_json::Error> {
    let mut messages = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        let mut out = Vec::new();
        wire.message(&mut out, m)?;
        messages.push(Bytes::from(out));
    }
    let mut tools = Vec::new();
    wire.tools(&mut tools, &req.tools)?;
    let system = encode_system(&req.system)?;
    wire.body(&Parts {
        model,
        system: &system,
        messages: &messages,
        tools: &Bytes::from(tools),
        max_tokens: req.max_tokens,
    })
}

/// Add `parts`' messages to `out`, comma-separated, skipping empty ones.
pub(super) fn join_messages(out: &mut BodyBuilder, messages: &[Bytes], mut first: bool) {
    for m in messages.iter().filter(|m| !m.is_empty()) {
        if !first {
            out.push_static(b",");
        }
        out.share(m);
        first = false;
    }
}
