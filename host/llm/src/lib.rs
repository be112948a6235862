//! Language-model providers: one streaming trait ([`Provider`]), the
//! OpenAI-compatible wire format over HTTP, a scripted provider that replays
//! transcripts through the very same decoding path, and incremental
//! tool-call assembly.
//!
//! Layers: a [`Transport`] delivers the bytes of a server-sent-event stream
//! (HTTP, or a script standing in for the network); the SSE parser
//! (`sse-parse`, the WHATWG algorithm) splits them into events, none
//! larger than [`MAX_EVENT_BYTES`]; a [`WireDecoder`] turns
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
    Box::pin(Driven {
        driver: Some(Box::pin(
            opentelemetry::context::FutureExt::with_current_context(driven),
        )),
        rx,
    })
}

/// A reply's driver (request, retries, decoding) and the channel it yields
/// through, both polled by the reader: a request needs no task of its
/// own (a spawn, a task's memory, and a wake across tasks per event), and
/// a reader that stops reading drops the request with the stream.
struct Driven<F> {
    /// `None` once it has run to its end (its sender dropped with it).
    driver: Option<Pin<Box<F>>>,
    rx: mpsc::Receiver<Result<StreamEvent, LlmError>>,
}

impl<F: std::future::Future<Output = ()>> Stream for Driven<F> {
    type Item = Result<StreamEvent, LlmError>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        // The driver goes as far as it can (it waits on the network, a
        // retry's delay, or the channel full), then the reader takes what
        // it sent.
        if let Some(driver) = self.driver.as_mut()
            && driver.as_mut().poll(cx).is_ready()
        {
            self.driver = None;
        }
        self.rx.poll_next_unpin(cx)
    }
}

/// Most bytes one server-sent event of a reply may hold (its `data`
/// lines and its name). A model's delta is a few hundred bytes; a server
/// that streams without ever ending an event would otherwise be buffered
/// until memory runs out.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

async fn decode(
    mut bytes: ByteStream,
    mut decoder: Box<dyn WireDecoder>,
    tx: &mut mpsc::Sender<Result<StreamEvent, LlmError>>,
) -> Result<(), LlmError> {
    // Invalid UTF-8 is read as U+FFFD, as a browser's `EventSource` reads
    // it; an event the stream leaves unended is dropped at its end.
    let mut events = sse_parse::SseParser::new().max_buffer(MAX_EVENT_BYTES);
    let mut out = Vec::new();
    while let Some(chunk) = bytes.next().await {
        events.feed(&chunk?);
        if events.overflows() > 0 {
            return Err(LlmError::Decode(format!(
                "an event of the stream is larger than {} MiB",
                MAX_EVENT_BYTES >> 20
            )));
        }
        while let Some(ev) = events.next_event() {
            decoder.on_event(&ev.event, &ev.data, &mut out)?;
            for e in out.drain(..) {
                if tx.send(Ok(e)).await.is_err() {
                    return Ok(());
                }
            }
        }
    }
    events.finish();
    let done = decoder.finish()?;
    let _ = tx.send(Ok(done)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A network that delivers `0`'s chunks, in order.
    struct Chunks(Vec<Bytes>);

    #[async_trait::async_trait]
    impl Transport for Chunks {
        async fn send(&self, _body: &RequestBody) -> Result<ByteStream, LlmError> {
            let chunks: Vec<Result<Bytes, LlmError>> = self.0.iter().cloned().map(Ok).collect();
            Ok(Box::pin(futures::stream::iter(chunks)))
        }
    }

    /// Everything an OpenAI-compatible reply of `chunks` yields.
    async fn reply(chunks: Vec<Bytes>) -> Vec<Result<StreamEvent, LlmError>> {
        let retry = RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        };
        let provider = OpenAiCompatible::new("t", "m", Arc::new(Chunks(chunks)), retry);
        let stream = provider
            .stream_body(RequestBody::from(&b"{}"[..]))
            .await
            .expect("a stream");
        stream.collect().await
    }

    /// A server that streams one event and never ends it is cut off with
    /// a decoding error once the event passes the cap, not buffered.
    #[tokio::test]
    async fn an_event_that_never_ends_is_an_error_not_a_buffer() {
        let mut chunks = vec![Bytes::from_static(b"data: ")];
        let mib = Bytes::from(vec![b'x'; 1 << 20]);
        chunks.extend(std::iter::repeat_n(mib, (MAX_EVENT_BYTES >> 20) + 2));
        let events = reply(chunks).await;
        match events.as_slice() {
            [Err(LlmError::Decode(why))] => assert!(why.contains("larger than 16 MiB"), "{why}"),
            other => panic!("expected one decoding error, got {other:?}"),
        }
    }

    /// Invalid UTF-8 in an event reads as U+FFFD (as `EventSource` reads
    /// it); the reply goes on, with CRLF line ends and an event cut across
    /// chunks.
    #[tokio::test]
    async fn invalid_utf8_reads_as_the_replacement_character() {
        let body: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\xffb\"}}]}\r\n\r\n\
            data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n";
        let (head, tail) = body.split_at(20);
        let events = reply(vec![
            Bytes::copy_from_slice(head),
            Bytes::copy_from_slice(tail),
        ])
        .await;
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                Ok(StreamEvent::TextDelta(t)) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "a\u{FFFD}b");
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Done { .. }))),
            "{events:?}"
        );
    }
}
