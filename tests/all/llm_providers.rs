//! Each real provider against an HTTP server on 127.0.0.1 serving recorded
//! SSE streams byte for byte: quirks, truncation, error events, 429 with
//! Retry-After, 500 then success. Plus the property that tool-call assembly
//! does not depend on how the stream is chunked.

use crate::sse_server;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use roost_core::llm::anthropic::{Anthropic, AnthropicDecoder};
use roost_core::llm::openai::OpenAiDecoder;
use roost_core::llm::{
    AssembledCall, ChatRequest, HttpTransport, LlmError, Message, OpenAiCompatible, Provider,
    RetryPolicy, StreamEvent, WireDecoder,
};
use serde_json::json;
use sse_server::{Canned, start};

fn req() -> ChatRequest {
    ChatRequest {
        system: "sys".into(),
        messages: vec![Message::user_text("hi")],
        tools: vec![],
        max_tokens: None,
    }
}

fn retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
    }
}

fn openai(base: &str) -> OpenAiCompatible {
    let t = HttpTransport::new(
        format!("{base}/chat/completions"),
        vec![("authorization".into(), "Bearer test".into())],
    )
    .expect("client");
    OpenAiCompatible::new("openai", "gpt-x", Arc::new(t), retry())
}

fn anthropic(base: &str) -> Anthropic {
    let t = HttpTransport::new(
        format!("{base}/messages"),
        vec![("x-api-key".into(), "k".into())],
    )
    .expect("client");
    Anthropic::new("claude-x", Arc::new(t), retry())
}

async fn collect(p: &dyn Provider) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut s = match p.stream(&req()).await {
        Ok(s) => s,
        Err(e) => return (vec![], Some(e)),
    };
    let mut out = Vec::new();
    while let Some(ev) = s.next().await {
        match ev {
            Ok(e) => out.push(e),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

fn done(events: &[StreamEvent]) -> &[AssembledCall] {
    match events.last() {
        Some(StreamEvent::Done { calls, .. }) => calls,
        other => panic!("no Done event: {other:?}"),
    }
}

fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| {
            if let StreamEvent::TextDelta(t) = e {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect()
}

#[tokio::test]
async fn openai_with_real_server_quirks() {
    let server = start(vec![Canned::sse("openai_quirks.sse")]).await;
    let (events, err) = collect(&openai(&server.base_url())).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text(&events), "Reading the file.");
    let calls = done(&events);
    assert_eq!(
        calls.len(),
        1,
        "repeated id/name must not duplicate the call"
    );
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_abc", "read_file")
    );
    assert_eq!(calls[0].args, Ok(json!({"path": "hello.txt"})));
    let usage = events
        .iter()
        .find_map(|e| {
            if let StreamEvent::Usage(u) = e {
                Some(*u)
            } else {
                None
            }
        })
        .expect("usage");
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens
        ),
        (200, 1000, 25)
    );
    let sent = server.requests.lock().expect("lock")[0].clone();
    assert!(
        sent.contains("authorization: Bearer test")
            || sent.to_lowercase().contains("authorization: bearer test")
    );
    assert!(sent.contains("\"stream\":true"));
}

/// A request goes out in the pieces it was joined from (the system
/// prompt, each message and the tool list shared with what keeps them, not
/// copied into one buffer), and a server reads it as one body: with its
/// `Content-Length` up front, not chunked, byte for byte the body a fresh
/// encoding makes — for both wire formats.
#[tokio::test]
async fn a_request_in_pieces_arrives_as_one_body_with_its_length() {
    use roost_core::llm::wire::encode;
    use roost_core::llm::{ToolDefinition, WireFormat, anthropic, openai};
    let req = ChatRequest {
        system: "sys \u{1F600} \"quoted\"".into(),
        messages: vec![
            Message::user_text("first"),
            Message {
                role: roost_core::llm::Role::Assistant,
                content: vec![roost_core::llm::ContentBlock::Text {
                    text: "reply".into(),
                }],
            },
            Message::user_text("long ".repeat(5000)),
        ],
        tools: vec![ToolDefinition {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_tokens: Some(77),
    };
    let cases: [(&dyn WireFormat, &str, Vec<u8>); 2] = [
        (
            &openai::OpenAiWire,
            "gpt-x",
            openai::request_json("gpt-x", &req).expect("encodes"),
        ),
        (
            &anthropic::AnthropicWire,
            "claude-x",
            anthropic::request_json("claude-x", &req).expect("encodes"),
        ),
    ];
    for (wire, model, fresh) in cases {
        let body = encode(wire, model, &req).expect("encodes");
        assert!(
            body.pieces().len() > 4,
            "{model}: the body keeps its parts ({} pieces)",
            body.pieces().len()
        );
        let server = start(vec![Canned::sse("openai_complete.sse")]).await;
        let provider: Box<dyn Provider> = if model == "gpt-x" {
            Box::new(openai(&server.base_url()))
        } else {
            Box::new(anthropic(&server.base_url()))
        };
        let mut events = provider.stream(&req).await.expect("sent");
        while events.next().await.is_some() {}
        let sent = server.requests.lock().expect("lock")[0].clone();
        let (head, received) = sent.split_once("\r\n\r\n").expect("a head and a body");
        let head = head.to_ascii_lowercase();
        assert!(!head.contains("transfer-encoding"), "{model}: {head}");
        assert!(
            head.contains(&format!("content-length: {}", fresh.len())),
            "{model}: {head}"
        );
        assert_eq!(received.as_bytes(), &fresh[..], "{model}");
        serde_json::from_str::<serde_json::Value>(received).expect("the body is JSON");
    }
}

#[tokio::test]
async fn openai_deprecated_function_call() {
    let server = start(vec![Canned::sse("openai_function_call.sse")]).await;
    let (events, err) = collect(&openai(&server.base_url())).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(done(&events)[0].name, "list_files");
    assert_eq!(done(&events)[0].args, Ok(json!({"path": "."})));
}

#[tokio::test]
async fn openai_truncated_stream_is_an_error() {
    let server = start(vec![Canned::sse("openai_truncated.sse")]).await;
    let (_, err) = collect(&openai(&server.base_url())).await;
    assert_eq!(err, Some(LlmError::TruncatedStream));
}

#[tokio::test]
async fn openai_error_event_is_reported() {
    let server = start(vec![Canned::sse("openai_error_event.sse")]).await;
    let (_, err) = collect(&openai(&server.base_url())).await;
    assert!(matches!(err, Some(LlmError::Provider(m)) if m.contains("server had an error")));
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = start(vec![
        Canned::error(
            429,
            &[("retry-after", "1")],
            "{\"error\":{\"message\":\"rate limited\"}}",
        ),
        Canned::sse("openai_complete.sse"),
    ])
    .await;
    let (events, err) = collect(&openai(&server.base_url())).await;
    assert!(err.is_none(), "{err:?}");
    let retry = events.iter().find_map(|e| {
        if let StreamEvent::Retrying { delay, .. } = e {
            Some(*delay)
        } else {
            None
        }
    });
    assert_eq!(retry, Some(Duration::from_secs(1)), "Retry-After honoured");
    assert_eq!(done(&events)[0].name, "attempt_completion");
}

#[tokio::test]
async fn server_error_then_success_and_persistent_errors_surface() {
    let server = start(vec![
        Canned::error(500, &[], "boom"),
        Canned::sse("openai_complete.sse"),
    ])
    .await;
    let (events, err) = collect(&openai(&server.base_url())).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retrying { attempt: 1, .. }))
    );

    let server = start(vec![
        Canned::error(503, &[], "a"),
        Canned::error(503, &[], "b"),
        Canned::error(503, &[], "c"),
    ])
    .await;
    let (_, err) = collect(&openai(&server.base_url())).await;
    // The policy (3 attempts) is spent: the last failure, marked final.
    assert!(
        matches!(&err, Some(LlmError::GaveUp { attempts: 3, last }) if matches!(**last, LlmError::Http { status: 503, .. })),
        "{err:?}"
    );
    assert_eq!(server.requests.lock().expect("lock").len(), 3);

    let server = start(vec![Canned::error(400, &[], "bad request body")]).await;
    let (events, err) = collect(&openai(&server.base_url())).await;
    assert!(events.is_empty(), "4xx is not retried");
    assert!(
        matches!(err, Some(LlmError::Http { status: 400, body, .. }) if body.contains("bad request body"))
    );
}

/// Nothing listens there: said at once, not retried (issue 44).
#[tokio::test]
async fn connection_refused_is_reported_at_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let (events, err) = collect(&openai(&format!("http://127.0.0.1:{port}/v1"))).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retrying { .. })),
        "{events:?}"
    );
    assert_eq!(
        err,
        Some(LlmError::Unreachable(format!("http://127.0.0.1:{port}")))
    );
}

#[tokio::test]
async fn anthropic_tool_use_with_pings_and_usage() {
    let server = start(vec![Canned::sse("anthropic_tool_use.sse")]).await;
    let (events, err) = collect(&anthropic(&server.base_url())).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text(&events), "Let me read hello.txt.");
    let calls = done(&events);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("toolu_01", "read_file")
    );
    assert_eq!(calls[0].args, Ok(json!({"path": "hello.txt"})));
    let mut total = roost_core::llm::Usage::default();
    for e in &events {
        if let StreamEvent::Usage(u) = e {
            total.add(u);
        }
    }
    assert_eq!(
        (
            total.input_tokens,
            total.cache_read_tokens,
            total.cache_write_tokens,
            total.output_tokens
        ),
        (900, 500, 100, 48)
    );
    let sent = server.requests.lock().expect("lock")[0].clone();
    assert!(sent.contains("\"max_tokens\"") && sent.contains("\"system\":\"sys\""));
}

#[tokio::test]
async fn anthropic_error_event_is_reported() {
    let server = start(vec![Canned::sse("anthropic_error.sse")]).await;
    let (_, err) = collect(&anthropic(&server.base_url())).await;
    assert!(
        matches!(&err, Some(LlmError::Provider(m)) if m.contains("overloaded_error")),
        "{err:?}"
    );
    assert!(LlmError::Provider("overloaded_error: Overloaded".into()).is_retryable());
}

/// Feed `body` to a decoder split at `cuts` (byte offsets into the data of
/// each event, so JSON deltas break anywhere) and return the calls.
fn decode_with_cuts(
    decoder: Box<dyn WireDecoder>,
    frames: &[(String, String)],
) -> Vec<AssembledCall> {
    let mut d = decoder;
    let mut out = Vec::new();
    for (event, data) in frames {
        d.on_event(event, data, &mut out).expect("decodes");
    }
    match d.finish().expect("finishes") {
        StreamEvent::Done { calls, .. } => calls,
        other => panic!("{other:?}"),
    }
}

/// OpenAI frames carrying `args` split at the given points.
fn openai_frames(args: &str, cuts: &[usize]) -> Vec<(String, String)> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut p = c % (args.len() + 1);
            while !args.is_char_boundary(p) {
                p -= 1;
            }
            p
        })
        .collect();
    points.push(0);
    points.push(args.len());
    points.sort_unstable();
    points.dedup();
    let mut frames = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let piece = &args[a..b];
        frames.push((
            String::new(),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "write_to_file", "arguments": piece}}]}}]}).to_string(),
        ));
    }
    frames.push((
        String::new(),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
    ));
    frames
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn assembly_does_not_depend_on_chunking(
        content in "[a-zA-Z0-9 \\n\"\\\\{}é]{0,200}",
        cuts in proptest::collection::vec(0usize..400, 0..30),
    ) {
        let args = json!({"path": "src/x.rs", "content": content}).to_string();
        let whole = decode_with_cuts(Box::new(OpenAiDecoder::new()), &openai_frames(&args, &[]));
        let chunked = decode_with_cuts(Box::new(OpenAiDecoder::new()), &openai_frames(&args, &cuts));
        prop_assert_eq!(whole.len(), 1);
        prop_assert_eq!(&whole, &chunked);
        prop_assert_eq!(&whole[0].args, &Ok(json!({"path": "src/x.rs", "content": content})));

        // The same property for Anthropic's input_json_delta.
        let mut frames = vec![("content_block_start".to_owned(), json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "write_to_file", "input": {}}}).to_string())];
        for (_, data) in openai_frames(&args, &cuts).iter().take_while(|(_, d)| !d.contains("finish_reason")) {
            let v: serde_json::Value = serde_json::from_str(data).expect("json");
            let piece = v["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str().unwrap_or_default().to_owned();
            frames.push(("content_block_delta".to_owned(), json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}}).to_string()));
        }
        frames.push(("message_stop".to_owned(), json!({"type": "message_stop"}).to_string()));
        let anth = decode_with_cuts(Box::<AnthropicDecoder>::default(), &frames);
        prop_assert_eq!(&anth[0].args, &whole[0].args);
    }
}
