//! Language-model providers: one streaming trait ([`Provider`]), the
//! OpenAI-compatible wire format over HTTP, a scripted provider that replays
//! transcripts through the very same decoding path, and incremental
//! tool-call assembly.
//!
//! Layers: a [`Transport`] delivers the bytes of a server-sent-event stream
//! (HTTP, or a script standing in for the network); the SSE decoder
//! (`eventsource-stream`) splits them into events; a [`WireDecoder`] turns
//! the events of one wire format into [`StreamEvent`]s and assembles tool
//! calls. Retries with backoff wrap the transport.

#![forbid(unsafe_code)]

pub mod anthropic;
mod assemble;
mod body;
mod error;
mod http;
pub mod limiter;
mod object;
pub mod openai;
mod retry;
pub mod schema;
pub mod scripted;
pub mod wire;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};

pub use assemble::{
    AssembledCall, ToolCallAssembler, partial as partial_json, strict as strict_json,
};
pub use body::{BodyBuilder, RequestBody};
pub use error::{LlmError, parse_retry_after, summarise_body};
pub use http::HttpTransport;
pub use retry::RetryPolicy;
pub use roost_protocol::conversation::{ContentBlock, Message, Role, ToolDefinition, Usage};
pub use wire::{Parts, WireFormat, encode_system};

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// System prompt.
    pub system: String,
    /// Conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// Output token cap, if any.
    pub max_tokens: Option<u32>,
}

/// What a streaming reply yields, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A request failed and will be retried after `delay`.
    Retrying {
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Wait before the next attempt.
        delay: Duration,
        /// What failed.
        reason: String,
    },
    /// A piece of assistant text.
    TextDelta(String),
    /// A tool call began (its name is known).
    ToolCallStarted {
        /// Stream index of the call.
        index: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// The arguments so far, parsed best-effort (for the UI).
    ToolCallArgs {
        /// Stream index of the call.
        index: u32,
        /// Partial arguments.
        partial: serde_json::Value,
    },
    /// Token usage (may come more than once; add them up).
    Usage(Usage),
    /// The reply is complete.
    Done {
        /// Every tool call, strictly parsed, in order.
        calls: Vec<AssembledCall>,
        /// Why the model stopped.
        stop_reason: Option<String>,
        /// The provider's id of the response, when it gave one.
        response_id: Option<String>,
        /// The model that answered, when the provider said.
        response_model: Option<String>,
    },
}

/// Most characters kept of a provider's response id or model name (they
/// are labels, not content; a hostile server's megabyte is cut).
pub const MAX_LABEL: usize = 200;

/// `v` as a label: a string, cut to [`MAX_LABEL`] characters.
pub(crate) fn label(v: &serde_json::Value) -> Option<String> {
    v.as_str()
        .filter(|s| !s.is_empty())
        .map(|s| s.chars().take(MAX_LABEL).collect())
}

/// A reply as a stream of events; ends after `Done` or an error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// Bytes of one response body.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, LlmError>> + Send>>;

/// A streaming model: the one interface the task loop uses.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// Provider name (`openai`, `anthropic`, `scripted`).
    fn name(&self) -> &str;
    /// Model id.
    fn model(&self) -> &str;
    /// Base URL of the API the requests go to (empty when there is none,
    /// as for the scripted provider). Stored with each task, so a resume
    /// goes back to the same endpoint.
    fn base_url(&self) -> &str {
        ""
    }
    /// Config profile the provider was built from (empty: none).
    fn profile(&self) -> &str {
        ""
    }
    /// How this provider encodes request bodies, in parts a task can keep
    /// from turn to turn.
    fn wire(&self) -> &dyn WireFormat;
    /// Bytes of the request body this provider would send for `req`:
    /// system prompt, messages and tool definitions in its wire format, so
    /// the context estimate counts everything that is sent.
    fn request_bytes(&self, req: &ChatRequest) -> usize {
        wire::encode(self.wire(), self.model(), req).map_or(0, |b| b.len())
    }
    /// Start a reply to a request already encoded in this provider's wire
    /// format; errors before any output are retried inside.
    async fn stream_body(&self, body: RequestBody) -> Result<EventStream, LlmError>;
    /// Start a reply to `req` (encoded now).
    async fn stream(&self, req: &ChatRequest) -> Result<EventStream, LlmError> {
        let body = wire::encode(self.wire(), self.model(), req)
            .map_err(|e| LlmError::Config(format!("request body: {e}")))?;
        self.stream_body(body).await
    }
}

/// A provider labelled with where it points: its base URL and the config
/// profile it came from, for the task record.
pub struct Labelled {
    inner: Arc<dyn Provider>,
    base_url: String,
    profile: String,
}

impl Labelled {
    /// `inner`, recorded as pointing at `base_url` through `profile`.
    pub fn new(inner: Arc<dyn Provider>, base_url: &str, profile: &str) -> Self {
        Self {
            inner,
            base_url: base_url.to_owned(),
            profile: profile.to_owned(),
        }
    }
}

#[async_trait::async_trait]
impl Provider for Labelled {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn base_url(&self) -> &str {
        &self.base_url
    }

    fn profile(&self) -> &str {
        &self.profile
    }

    fn wire(&self) -> &dyn WireFormat {
        self.inner.wire()
    }

    async fn stream_body(&self, body: RequestBody) -> Result<EventStream, LlmError> {
        self.inner.stream_body(body).await
    }
}

/// Delivers the raw SSE bytes for a request body: HTTP for real providers,
/// a transcript for the scripted one. Everything after it is shared.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Send `body` (JSON, joined once per request from its parts and kept
    /// for retries) and return the response's bytes, or an error (HTTP
    /// status, connection) for the retry logic to judge.
    async fn send(&self, body: &RequestBody) -> Result<ByteStream, LlmError>;
}

/// Turns the SSE events of one wire format into [`StreamEvent`]s.
pub trait WireDecoder: Send {
    /// Handle one SSE event (`event:` name and `data:` payload).
    fn on_event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError>;
    /// The body ended: the final `Done`, or an error if the reply is incomplete.
    fn finish(self: Box<Self>) -> Result<StreamEvent, LlmError>;
}

/// The OpenAI-compatible chat-completions protocol over some transport.
pub struct OpenAiCompatible {
    name: String,
    model: String,
    transport: Arc<dyn Transport>,
    retry: RetryPolicy,
}

impl OpenAiCompatible {
    /// A provider speaking the OpenAI format over `transport`.
    pub fn new(name: &str, model: &str, transport: Arc<dyn Transport>, retry: RetryPolicy) -> Self {
        Self {
            name: name.to_owned(),
            model: model.to_owned(),
            transport,
            retry,
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiCompatible {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn wire(&self) -> &dyn WireFormat {
        &openai::OpenAiWire
    }

    async fn stream_body(&self, body: RequestBody) -> Result<EventStream, LlmError> {
        Ok(run(Arc::clone(&self.transport), body, self.retry, || {
            Box::new(openai::OpenAiDecoder::new())
        }))
    }
}

/// Drive one reply: send (with retries) and decode, yielding events through
/// a channel so the caller consumes a plain stream. This is Roost's one
/// retry layer for failed requests: when `retry` is spent the error comes
/// out as [`LlmError::GaveUp`], which the task loop does not retry again
/// (it only retries a stream that broke after the request succeeded).
pub fn run(
    transport: Arc<dyn Transport>,
    body: RequestBody,
    retry: RetryPolicy,
    decoder: impl Fn() -> Box<dyn WireDecoder> + Send + 'static,
) -> EventStream {
    let (mut tx, rx) = mpsc::channel::<Result<StreamEvent, LlmError>>(64);
    // The body as sent: bytes, not a tree of values kept alive while the
    // model thinks (ten thousand tasks wait at once). The request goes
    // out in the caller's trace context (its `traceparent`).
    let driven = async move {
        let mut attempt = 0u32;
        let bytes = loop {
            attempt += 1;
            match transport.send(&body).await {
                Ok(b) => break b,
                Err(e) if e.is_retryable() && attempt < retry.max_attempts.max(1) => {
                    let delay = retry.delay(attempt, e.retry_after());
                    // Shown once, as the `retrying` event; the log keeps detail.
                    tracing::debug!(attempt, ?delay, "model request failed, retrying: {e}");
                    let ev = StreamEvent::Retrying {
                        attempt,
                        delay,
                        reason: e.to_string(),
                    };
                    if tx.send(Ok(ev)).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(delay).await;
                }
                // The policy is spent: say so, so no one retries again.
                Err(e) if e.is_retryable() => {
                    let gave_up = LlmError::GaveUp {
                        attempts: attempt,
                        last: Box::new(e),
                    };
                    let _ = tx.send(Err(gave_up)).await;
                    return;
                }
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            }
        };
        // Answered: no retry needs the request now, and a reply can
        // stream for minutes.
        drop(body);
        let result = decode(bytes, decoder(), &mut tx).await;
        if let Err(e) = result {
            let _ = tx.send(Err(e)).await;
        }
    };
    tokio::spawn(opentelemetry::context::FutureExt::with_current_context(
        driven,
    ));
    Box::pin(rx)
}

async fn decode(
    bytes: ByteStream,
    mut decoder: Box<dyn WireDecoder>,
    tx: &mut mpsc::Sender<Result<StreamEvent, LlmError>>,
) -> Result<(), LlmError> {
    let mut events = bytes.eventsource();
    let mut out = Vec::new();
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(|e| match e {
            eventsource_stream::EventStreamError::Transport(t) => t,
            other => LlmError::Decode(other.to_string()),
        })?;
        decoder.on_event(&ev.event, &ev.data, &mut out)?;
        for e in out.drain(..) {
            if tx.send(Ok(e)).await.is_err() {
                return Ok(());
            }
        }
    }
    let done = decoder.finish()?;
    let _ = tx.send(Ok(done)).await;
    Ok(())
}
