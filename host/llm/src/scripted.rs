//! The scripted provider: replays a transcript file as if a server sent it.
//! Each turn is rendered to the bytes of an OpenAI-compatible SSE stream,
//! cut into chunks as the file says, and fed through the same SSE decoder,
//! wire decoder, tool-call assembler and retry logic as a real provider: it
//! replaces only the network. Format: `docs/scripted-provider.md`.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ByteStream, LlmError, RequestBody, Transport, Usage};

/// A transcript: the replies, in order, one per model request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Model name reported by the provider.
    #[serde(default = "default_model")]
    pub model: String,
    /// One entry per request.
    pub turns: Vec<Turn>,
    /// The reply to every request that offers no tools (Roost's requests to
    /// condense the history), served without using a turn, so a script does
    /// not depend on when condensation happens. Without it such requests
    /// take the next turn like any other.
    pub summary: Option<String>,
    /// The usage each summary reply reports (none when absent).
    pub summary_usage: Option<Usage>,
    /// The transcripts of other tasks the same model serves (subtasks):
    /// a request is answered from the first whose selectors match its
    /// conversation, turn by turn (numbered by the assistant messages it
    /// holds), else from `turns`.
    #[serde(default)]
    pub tasks: Vec<TaskScript>,
}

/// One task's transcript within a script, chosen by its conversation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskScript {
    /// Text the task's first message contains (its instructions).
    pub message: String,
    /// The mode it runs in (`Current mode: <slug>.` in its system prompt).
    pub mode: Option<String>,
    /// One entry per request of that task.
    pub turns: Vec<Turn>,
}

impl TaskScript {
    /// Whether a request with this system prompt and first user message
    /// belongs to this task.
    fn selects(&self, system: &str, first_user: &str) -> bool {
        first_user.contains(&self.message)
            && self
                .mode
                .as_ref()
                .is_none_or(|m| system.contains(&format!("Current mode: {m}.")))
    }
}

/// The system prompt and the first user message of an OpenAI-style
/// request body.
fn conversation_keys(body: &Value) -> (String, String) {
    let text = |m: &Value| match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .iter()
        .find(|m| m["role"] == "system")
        .map(text)
        .unwrap_or_default();
    let first_user = messages
        .iter()
        .find(|m| m["role"] == "user")
        .map(text)
        .unwrap_or_default();
    (system, first_user)
}

fn default_model() -> String {
    "scripted".into()
}

/// One scripted reply (or failure).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Assistant text.
    #[serde(default)]
    pub text: String,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Usage reported in the last chunk.
    pub usage: Option<Usage>,
    /// Bytes per text/argument delta (default 16).
    pub chunk_size: Option<usize>,
    /// Answer the request with this HTTP error instead of a stream.
    pub http_error: Option<HttpError>,
    /// Send an `error` payload after the text.
    pub stream_error: Option<String>,
    /// End the stream early, without `finish_reason` or `[DONE]`.
    #[serde(default)]
    pub truncate: bool,
    /// Leave out `[DONE]` (servers that end right after `finish_reason`).
    #[serde(default)]
    pub omit_done: bool,
    /// Send these SSE frames verbatim instead of rendering the turn.
    pub raw_sse: Option<Vec<String>>,
    /// Wait this long before answering (benchmarks, concurrency tests).
    pub delay_ms: Option<u64>,
    /// Send only this many pieces of the reply, then keep the stream open
    /// without sending more (a server that stalls mid-reply; a person
    /// stops it).
    pub stall_after: Option<usize>,
    /// Serve this turn only to a request whose conversation holds this
    /// text: a model that decides from what it was sent, not from how
    /// often it was asked. See [`ScriptedTransport`] for how a reply is
    /// picked when turns carry it.
    pub when: Option<String>,
}

/// A scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// Call id (default `call_<turn>_<n>`).
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments as JSON (serialised compactly).
    pub args: Option<Value>,
    /// Arguments as raw text (may be malformed on purpose).
    pub raw_args: Option<String>,
}

/// A scripted HTTP failure.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpError {
    /// Status code.
    pub status: u16,
    /// Retry-After in seconds.
    pub retry_after_secs: Option<f64>,
    /// Response body.
    #[serde(default)]
    pub body: String,
}

impl Script {
    /// Load a transcript (JSON).
    pub fn load(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::Config(format!("cannot read script {}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| LlmError::Config(format!("invalid script {}: {e}", path.display())))
    }
}

/// What the scripted transport reads of a request body for a script with
/// a summary turn: whether it offers tools (a condensing request does not).
#[derive(serde::Deserialize)]
struct Peek {
    #[serde(default)]
    tools: Option<Vec<serde::de::IgnoredAny>>,
}

/// How many assistant messages a request body holds, counted as the bytes
/// `"role":"assistant"` (or with a space after the colon). Only a member of
/// a JSON object can match: inside a string a quote is escaped. A body is
/// not parsed for this, as a server's parse is not the host's cost, and it
/// is read once: for each `"role":`, the value that follows.
fn assistant_messages(body: &RequestBody) -> usize {
    static ROLE: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\"role\":"));
    let mut n = 0;
    body.find_each(&ROLE, |at| {
        let value = at + ROLE.needle().len();
        if body.has_at(value, b"\"assistant\"") || body.has_at(value, b" \"assistant\"") {
            n += 1;
        }
    });
    n
}

/// The text of a request's conversation as a model reads it: every
/// message's text and tool results, the system prompt and the tool list
/// left out (they hold the instructions, not what happened).
fn conversation_text(body: &Value) -> String {
    let mut out = String::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "system" {
            continue;
        }
        match &m["content"] {
            Value::String(s) => out.push_str(s),
            Value::Array(parts) => {
                for p in parts {
                    if let Some(t) = p["text"].as_str() {
                        out.push_str(t);
                    }
                }
            }
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// The turn a request is answered with when the turns carry `when`: the
/// last of them whose text the conversation holds (the furthest the
/// conversation has got), so a model that was not shown a result asks
/// for it again as a real one would.
fn turn_by_content(turns: &[Turn], body: &[u8]) -> Result<usize, LlmError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::Config(format!("the request body is not JSON: {e}")))?;
    let text = conversation_text(&v);
    turns
        .iter()
        .rposition(|t| t.when.as_deref().is_some_and(|w| text.contains(w)))
        .ok_or_else(|| {
            LlmError::Config(
                "no turn of the script answers this request: its conversation holds none of the turns' `when` texts"
                    .into(),
            )
        })
}

/// Whether `turns` are picked by what a request holds (any carries `when`).
fn turns_by_content(turns: &[Turn]) -> bool {
    turns.iter().any(|t| t.when.is_some())
}

/// Serves a [`Script`] turn by turn in place of the network: in order of
/// arrival, by the assistant messages a request holds
/// ([`ScriptedTransport::per_conversation`], subtasks' transcripts), or,
/// when the turns carry `when`, by what the request's conversation holds.
pub struct ScriptedTransport {
    script: Script,
    /// Each turn's SSE bytes, rendered the first time it is served (a turn
    /// renders the same whoever asks).
    rendered: Vec<OnceLock<Bytes>>,
    next: AtomicUsize,
    requests: Option<Mutex<Vec<Value>>>,
    /// Pick each reply by the conversation it answers, not by arrival.
    by_history: bool,
    /// Requests waiting out their turn's `delay_ms` now, and the most
    /// there ever were at once (how many tasks asked the model together).
    waiting: AtomicUsize,
    peak_waiting: AtomicUsize,
}

impl ScriptedTransport {
    /// Serve `script` from its first turn.
    pub fn new(script: Script) -> Self {
        Self::starting_at(script, 0)
    }

    /// Serve `script` from turn `first` (resuming a task replays only what
    /// is left).
    pub fn starting_at(script: Script, first: usize) -> Self {
        Self {
            rendered: script.turns.iter().map(|_| OnceLock::new()).collect(),
            script,
            next: AtomicUsize::new(first),
            requests: None,
            by_history: false,
            waiting: AtomicUsize::new(0),
            peak_waiting: AtomicUsize::new(0),
        }
    }

    /// Serve `script` and keep every request body, for tests that check
    /// what the model was sent (costs a copy of each body).
    pub fn recording(script: Script) -> Self {
        Self {
            requests: Some(Mutex::new(Vec::new())),
            ..Self::new(script)
        }
    }

    /// Serve `script` to many conversations at once: each request gets
    /// the turn numbered by the assistant messages it already holds (the
    /// first request of every task gets turn 1), so concurrent tasks each
    /// follow the whole script.
    pub fn per_conversation(script: Script) -> Self {
        Self {
            by_history: true,
            ..Self::new(script)
        }
    }

    /// This transport, keeping every request body (see [`Self::recording`]).
    pub fn recorded(mut self) -> Self {
        self.requests = Some(Mutex::new(Vec::new()));
        self
    }

    /// Turns served so far.
    pub fn turns_used(&self) -> usize {
        self.next.load(Ordering::SeqCst)
    }

    /// The most requests that ever waited out a turn's `delay_ms` at the
    /// same time.
    pub fn peak_concurrent(&self) -> usize {
        self.peak_waiting.load(Ordering::SeqCst)
    }

    /// The request bodies received, when recording.
    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .as_ref()
            .and_then(|r| r.lock().ok().map(|r| r.clone()))
            .unwrap_or_default()
    }
}

fn chunks(s: &str, size: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in s.chars() {
        cur.push(ch);
        if cur.len() >= size {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn frame(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// Render a turn as the SSE frames an OpenAI-compatible server would send.
pub fn render(turn: &Turn, turn_index: usize) -> Vec<String> {
    if let Some(raw) = &turn.raw_sse {
        return raw.clone();
    }
    let size = turn.chunk_size.unwrap_or(16).max(1);
    let id = format!("chatcmpl-scripted-{turn_index}");
    let mut frames = vec![frame(
        &json!({"id": id, "model": "scripted", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
    )];
    for piece in chunks(&turn.text, size) {
        frames.push(frame(
            &json!({"id": id, "choices": [{"index": 0, "delta": {"content": piece}}]}),
        ));
    }
    if let Some(err) = &turn.stream_error {
        frames.push(frame(&json!({"error": {"message": err}})));
        return frames;
    }
    for (i, call) in turn.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{turn_index}_{i}"));
        let args = match (&call.raw_args, &call.args) {
            (Some(raw), _) => raw.clone(),
            (None, Some(v)) => v.to_string(),
            (None, None) => "{}".to_owned(),
        };
        // Like many servers, repeat id and name on every delta.
        let mut first = true;
        for piece in chunks(&args, size)
            .into_iter()
            .chain(std::iter::once(String::new()))
        {
            if piece.is_empty() && !first {
                break;
            }
            frames.push(frame(
                &json!({"id": id, "choices": [{"index": 0, "delta": {"tool_calls": [{
                    "index": i, "id": call_id, "type": "function",
                    "function": {"name": call.name, "arguments": piece}
                }]}}]}),
            ));
            first = false;
        }
    }
    if turn.truncate {
        return frames;
    }
    let reason = if turn.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let mut last =
        json!({"id": id, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]});
    if let Some(u) = &turn.usage {
        last["usage"] = json!({
            "prompt_tokens": u.input_tokens + u.cache_read_tokens,
            "completion_tokens": u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens}
        });
    }
    frames.push(frame(&last));
    if !turn.omit_done {
        frames.push("data: [DONE]\n\n".to_owned());
    }
    frames
}

#[async_trait::async_trait]
impl Transport for ScriptedTransport {
    async fn send(&self, body: &RequestBody) -> Result<ByteStream, LlmError> {
        let unreadable =
            |e: serde_json::Error| LlmError::Config(format!("the request body is not JSON: {e}"));
        // Joined into one buffer only for what parses it whole.
        let by_content = turns_by_content(&self.script.turns);
        let parsed = self.requests.is_some()
            || self.script.summary.is_some()
            || !self.script.tasks.is_empty()
            || by_content;
        let whole = if parsed {
            body.to_bytes()
        } else {
            Bytes::new()
        };
        if let Some(Ok(mut r)) = self.requests.as_ref().map(|r| r.lock()) {
            r.push(serde_json::from_slice(&whole).map_err(unreadable)?);
        }
        // Only what picks the reply is read (the tool list, for a script
        // with a summary; the roles, when serving many conversations);
        // otherwise the body is sent on as a server would take it.
        if let Some(summary) = &self.script.summary {
            let peek: Peek = serde_json::from_slice(&whole).map_err(unreadable)?;
            if peek.tools.is_none_or(|t| t.is_empty()) {
                let turn = Turn {
                    text: summary.clone(),
                    usage: self.script.summary_usage,
                    ..Turn::default()
                };
                let joined = render(&turn, usize::MAX).concat().into_bytes();
                return Ok(Box::pin(futures::stream::iter([Ok(Bytes::from(joined))])));
            }
        }
        // A script of several tasks answers each from its own transcript.
        let task = if self.script.tasks.is_empty() {
            None
        } else {
            let v: Value = serde_json::from_slice(&whole).map_err(unreadable)?;
            let (system, first_user) = conversation_keys(&v);
            self.script
                .tasks
                .iter()
                .position(|t| t.selects(&system, &first_user))
        };
        let index = if by_content && task.is_none() {
            self.next.fetch_add(1, Ordering::SeqCst);
            turn_by_content(&self.script.turns, &whole)?
        } else if self.by_history || !self.script.tasks.is_empty() {
            self.next.fetch_add(1, Ordering::SeqCst);
            assistant_messages(body)
        } else {
            self.next.fetch_add(1, Ordering::SeqCst)
        };
        drop(whole);
        let turns = match task.and_then(|t| self.script.tasks.get(t)) {
            Some(t) => &t.turns,
            None => &self.script.turns,
        };
        let Some(turn) = turns.get(index) else {
            return Err(LlmError::Config(format!(
                "the script has no turn {} (it has {}): the model was asked more often than the transcript expects",
                index + 1,
                turns.len()
            )));
        };
        if let Some(ms) = turn.delay_ms {
            let now = self
                .waiting
                .fetch_add(1, Ordering::SeqCst)
                .saturating_add(1);
            self.peak_waiting.fetch_max(now, Ordering::SeqCst);
            // Counted out however the wait ends (a cancelled request too).
            struct Out<'a>(&'a AtomicUsize);
            impl Drop for Out<'_> {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, Ordering::SeqCst);
                }
            }
            let _out = Out(&self.waiting);
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if let Some(e) = &turn.http_error {
            return Err(LlmError::Http {
                status: e.status,
                body: e.body.clone(),
                retry_after: e.retry_after_secs.map(Duration::from_secs_f64),
            });
        }
        let joined = match self.rendered.get(index).filter(|_| task.is_none()) {
            Some(once) => once
                .get_or_init(|| Bytes::from(render(turn, index).concat()))
                .clone(),
            None => Bytes::from(render(turn, index).concat()),
        };
        // Split frames at arbitrary byte positions too, as TCP would.
        let cut = turn.chunk_size.unwrap_or(16).max(1) * 3 + 1;
        let mut pieces: Vec<Result<Bytes, LlmError>> = (0..joined.len())
            .step_by(cut)
            .map(|at| Ok(joined.slice(at..joined.len().min(at + cut))))
            .collect();
        if let Some(n) = turn.stall_after {
            pieces.truncate(n);
            return Ok(Box::pin(futures::StreamExt::chain(
                futures::stream::iter(pieces),
                futures::stream::pending(),
            )));
        }
        Ok(Box::pin(futures::stream::iter(pieces)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `when`, a request gets the last turn whose text its
    /// conversation holds; the system prompt does not count, and a
    /// request no turn answers is an error, not a guess.
    #[test]
    fn turns_are_picked_by_what_the_conversation_holds() {
        let turn = |when: &str, text: &str| Turn {
            when: Some(when.into()),
            text: text.into(),
            ..Turn::default()
        };
        let turns = [
            turn("task", "first"),
            turn("A-END", "second"),
            turn("B-END", "third"),
        ];
        let body = |messages: Value| json!({"messages": messages}).to_string().into_bytes();
        let pick = |messages: Value| turn_by_content(&turns, &body(messages));
        assert_eq!(
            pick(json!([{"role": "user", "content": "the task"}])).ok(),
            Some(0)
        );
        let later = json!([
            {"role": "system", "content": "B-END is in the instructions only"},
            {"role": "user", "content": [{"type": "text", "text": "the task"}]},
            {"role": "tool", "content": "... A-END"},
        ]);
        assert_eq!(pick(later).ok(), Some(1));
        let both = json!([
            {"role": "user", "content": "the task"},
            {"role": "tool", "content": "A-END"},
            {"role": "tool", "content": "B-END"},
        ]);
        assert_eq!(pick(both).ok(), Some(2));
        assert!(pick(json!([{"role": "user", "content": "other"}])).is_err());
    }

    /// Assistant messages are counted as members of the body's objects;
    /// the same words inside a string (a file that quotes a request) do
    /// not count.
    #[test]
    fn assistant_messages_are_counted_as_members_only() {
        let body = json!({
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "{\"role\":\"assistant\",\"content\":\"quoted\"}"},
                {"role": "assistant", "content": "one"},
                {"role": "tool", "content": "\"role\": \"assistant\""},
                {"role": "assistant", "content": "two"},
            ]
        });
        assert_eq!(
            assistant_messages(&RequestBody::from(body.to_string().into_bytes())),
            2
        );
        let pretty = serde_json::to_string_pretty(&body).expect("json");
        assert_eq!(
            assistant_messages(&RequestBody::from(pretty.into_bytes())),
            2
        );
    }
}
