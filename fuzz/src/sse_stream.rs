//! A model's response stream, as the task loop receives it: the input is
//! an SSE body (OpenAI's or Anthropic's wire, by the first byte), cut into
//! network chunks at places the input chooses (so events, lines and UTF-8
//! characters split across reads), decoded by the real provider through
//! its one streaming path (the same `run` a real HTTP response takes).
//!
//! Must hold: the stream ends (with `Done` or an error, nothing after);
//! every assembled call has an id, and its arguments, when they parse,
//! are an object.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use roost_llm::anthropic::Anthropic;
use roost_llm::{
    ByteStream, LlmError, OpenAiCompatible, Provider, RequestBody, RetryPolicy, StreamEvent,
    Transport,
};

use crate::input::Input;

/// Hands out the fuzz body in the chunks chosen.
struct Chunks(Vec<Bytes>);

#[async_trait::async_trait]
impl Transport for Chunks {
    async fn send(&self, _body: &RequestBody) -> Result<ByteStream, LlmError> {
        let chunks: Vec<Result<Bytes, LlmError>> = self.0.iter().cloned().map(Ok).collect();
        Ok(Box::pin(futures::stream::iter(chunks)))
    }
}

/// `body` cut after each of the lengths `cuts` gives (cycled).
fn chunked(body: &[u8], cuts: &[u8]) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut i = 0usize;
    while !rest.is_empty() {
        let n = match cuts.get(i % cuts.len().max(1)) {
            Some(c) => usize::from(*c % 64) + 1,
            None => rest.len(),
        };
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        out.push(Bytes::copy_from_slice(chunk));
        rest = tail;
        i += 1;
    }
    out
}

/// The target.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let wire = input.byte();
    let cuts = input.part().to_vec();
    let body = input.rest();
    let transport = Arc::new(Chunks(chunked(body, &cuts)));
    let retry = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    };
    let provider: Box<dyn Provider> = if wire.is_multiple_of(2) {
        Box::new(OpenAiCompatible::new("fuzz", "m", transport, retry))
    } else {
        Box::new(Anthropic::new("m", transport, retry))
    };
    crate::scratch::runtime().block_on(async move {
        let mut events = match provider.stream_body(RequestBody::from(&b"{}"[..])).await {
            Ok(s) => s,
            Err(e) => panic!("a stream that only decodes cannot fail to start: {e}"),
        };
        let mut ended = false;
        while let Some(ev) = events.next().await {
            assert!(!ended, "an event after the stream's end");
            match ev {
                Ok(StreamEvent::Done { calls, .. }) => {
                    for c in &calls {
                        assert!(!c.id.is_empty(), "a call without an id");
                        if let Ok(args) = &c.args {
                            assert!(args.is_object(), "a call's arguments not an object");
                        }
                    }
                    ended = true;
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = e.to_string();
                    ended = true;
                }
            }
        }
        assert!(ended, "the stream stopped without Done or an error");
    });
}
