//! OpenTelemetry end to end: `roost run` with the standard variables sends
//! its task as one trace of GenAI spans to a real OTLP receiver (the
//! protobuf decoded by `opentelemetry-proto`), over HTTP and over gRPC;
//! disabled, it sends nothing; an unreachable collector costs the task
//! nothing and is said once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use roost_tests::otlp::{ReceivedSpan, Receiver};
use serde_json::json;

/// A workspace with `a.txt`, and a script whose task reads it, tries to
/// write outside the workspace (refused), starts a subtask that reads it
/// too, and completes.
fn workspace(dir: &Path) -> (PathBuf, PathBuf) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("a.txt"), "alpha\n").expect("a");
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        json!({
            "turns": [
                {"text": "Reading.", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}],
                 "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 40, "cache_write_tokens": 0}},
                {"tool_calls": [{"name": "write_to_file", "args": {"path": "../outside.txt", "content": "x"}}]},
                {"tool_calls": [{"name": "new_task", "args": {"mode": "code", "message": "CHILD: read a"}}]},
                {"tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}
            ],
            "tasks": [{"message": "CHILD: read a", "turns": [
                {"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
                {"tool_calls": [{"name": "attempt_completion", "args": {"result": "child done"}}]}
            ]}]
        })
        .to_string(),
    )
    .expect("script");
    (ws, script)
}

/// `roost run` of the script in `ws` with these variables set.
async fn run(dir: &Path, ws: &Path, script: &Path, vars: &[(&str, &str)]) -> Output {
    let mut cmd = crate::cli::roost(&dir.join("data"));
    cmd.args(["run", "read a and delegate", "--yes", "--json"])
        .arg("--workspace")
        .arg(ws)
        .arg("--script")
        .arg(script);
    for k in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_SDK_DISABLED",
        "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    output(cmd).await
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("roost runs"))
        .await
        .expect("joined")
}

/// [`run`], which must succeed, then the spans of both runs (the task's
/// and its subtask's) once `receiver` has them.
async fn traced(
    receiver: &Receiver,
    dir: &Path,
    ws: &Path,
    script: &Path,
    vars: &[(&str, &str)],
) -> (Output, Vec<ReceivedSpan>) {
    let o = run(dir, ws, script, vars).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spans = receiver
        .wait_for(|s| named(s, "invoke_agent code").len() == 2)
        .await;
    (o, spans)
}

fn named<'a>(spans: &'a [ReceivedSpan], name: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_one_trace_of_genai_spans_over_http() {
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    // The process flushed before it exited; every span is in.
    let (o, spans) = traced(
        &receiver,
        dir.path(),
        &ws,
        &script,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str())],
    )
    .await;
    let task_id = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|e| e["task_id"].as_str().map(str::to_owned))
        .expect("the task's id");
    // One trace, from one service.
    let trace = &spans[0].trace_id;
    assert!(spans.iter().all(|s| &s.trace_id == trace), "{spans:#?}");
    assert!(spans.iter().all(|s| s.service == "roost"), "{spans:#?}");
    // The task's run is the root.
    let agents = named(&spans, "invoke_agent code");
    let root = agents
        .iter()
        .find(|s| s.parent_span_id.is_empty())
        .unwrap_or_else(|| panic!("a root: {spans:#?}"));
    assert_eq!(root.attr("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(root.attr("gen_ai.agent.name"), Some("code"));
    assert_eq!(root.attr("gen_ai.conversation.id"), Some(task_id.as_str()));
    assert_eq!(root.attr("gen_ai.provider.name"), Some("scripted"));
    // Its model requests and calls are its children.
    let chats: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat ") && s.parent_span_id == root.span_id)
        .collect();
    assert_eq!(chats.len(), 4, "{spans:#?}");
    assert_eq!(chats[0].attr("gen_ai.operation.name"), Some("chat"));
    assert!(
        chats
            .iter()
            .any(|c| c.attr("gen_ai.usage.input_tokens") == Some("100")
                && c.attr("gen_ai.usage.cache_read.input_tokens") == Some("40")
                && c.attr("gen_ai.response.finish_reasons") == Some("tool_calls")),
        "{chats:#?}"
    );
    let tool = |name: &str, parent: &str| {
        spans
            .iter()
            .find(|s| s.name == format!("execute_tool {name}") && s.parent_span_id == parent)
            .unwrap_or_else(|| panic!("execute_tool {name} under {parent}: {spans:#?}"))
    };
    let read = tool("read_file", &root.span_id);
    assert_eq!(read.attr("gen_ai.tool.name"), Some("read_file"));
    // Content only when opted in.
    assert!(
        spans
            .iter()
            .all(|s| s.attr("gen_ai.tool.call.arguments").is_none()
                && s.attr("gen_ai.tool.call.result").is_none()),
        "{spans:#?}"
    );
    assert!(read.attr("roost.result.bytes").is_some(), "{read:#?}");
    assert!(
        read.attr("gen_ai.tool.call.id")
            .is_some_and(|i| !i.is_empty())
    );
    assert_eq!(read.status, 0, "{read:#?}");
    // The refused write: an error, with its type.
    let refused = tool("write_to_file", &root.span_id);
    assert_eq!(refused.status, 2, "{refused:#?}");
    assert!(refused.attr("error.type").is_some(), "{refused:#?}");
    assert!(
        refused.events.iter().any(|e| e == "roost.refusal"),
        "{refused:#?}"
    );
    // The subtask's run is a child of the parent's `new_task` call, and
    // its own calls are its.
    let delegate = tool("new_task", &root.span_id);
    let child = agents
        .iter()
        .find(|s| s.parent_span_id == delegate.span_id)
        .unwrap_or_else(|| panic!("the subtask under new_task: {spans:#?}"));
    tool("read_file", &child.span_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_grpc_too_and_nothing_when_disabled() {
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    let (_, spans) = traced(
        &receiver,
        dir.path(),
        &ws,
        &script,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.grpc.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_SERVICE_NAME", "roost-grpc-test"),
        ],
    )
    .await;
    assert!(
        spans.iter().all(|s| s.service == "roost-grpc-test"),
        "{spans:#?}"
    );

    // Disabled: the same run sends nothing (the process flushes what it
    // has before it exits, so nothing can come later).
    let quiet = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    let o = run(
        dir.path(),
        &ws,
        &script,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", quiet.http.as_str()),
            ("OTEL_SDK_DISABLED", "true"),
        ],
    )
    .await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(quiet.spans().is_empty());
    // `roost doctor` says where telemetry goes.
    let mut doctor = crate::cli::roost(&dir.path().join("data"));
    doctor
        .arg("doctor")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str())
        .env_remove("OTEL_SDK_DISABLED");
    let said = output(doctor).await;
    let text = String::from_utf8_lossy(&said.stdout);
    assert!(
        text.contains(&format!(
            "traces to {}/v1/traces over OTLP/HTTP",
            receiver.http
        )),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_costs_the_task_nothing_and_is_said_once() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    let endpoint = format!("http://127.0.0.1:{port}");
    let o = run(
        dir.path(),
        &ws,
        &script,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    )
    .await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("\"completed\""), "{stdout}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr.matches("telemetry: spans cannot be sent").count(),
        1,
        "{stderr}"
    );
}

/// Opted in (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`),
/// a call's arguments and result are on its span — a credential in the
/// file it read redacted, as in the agent trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_is_captured_only_when_opted_in_and_without_secrets() {
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    let key = format!("sk-proj-{}", "Zx9".repeat(10));
    std::fs::write(ws.join("a.txt"), format!("alpha\nkey = {key}\n")).expect("a");
    let (_, spans) = traced(
        &receiver,
        dir.path(),
        &ws,
        &script,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str()),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ],
    )
    .await;
    let read = spans
        .iter()
        .find(|s| s.name == "execute_tool read_file")
        .expect("a read");
    assert!(
        read.attr("gen_ai.tool.call.arguments")
            .is_some_and(|a| a.contains("a.txt")),
        "{read:#?}"
    );
    let result = read.attr("gen_ai.tool.call.result").expect("the result");
    assert!(
        result.contains("alpha") && result.contains("[REDACTED"),
        "{result}"
    );
    assert!(
        spans.iter().all(|s| !format!("{s:?}").contains(&key)),
        "the key left Roost"
    );
}

/// `roost serve` continues an incoming `traceparent`: the task's spans
/// are in the caller's trace; a malformed header is ignored (the task's
/// trace is its own) and the task runs all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roost_serve_continues_the_callers_trace() {
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    std::fs::write(
        &script,
        json!({"turns": [{"tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}]})
            .to_string(),
    )
    .expect("script");
    let mut cmd = crate::cli::roost(&dir.path().join("data"));
    cmd.args(["serve", "--no-auth", "--root"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str())
        // Batches leave every 50 ms (the default is 5 s).
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env_remove("OTEL_SDK_DISABLED");
    let server = crate::served::Served::start(cmd, &dir.path().join("serve.log"));
    let client = reqwest::Client::new();
    server.ready(&client).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller = "00f067aa0ba902b7";
    // (The run's own span, a child of `caller`, is sent when the run ends.)
    for header in [
        format!("00-{trace}-{caller}-01"),
        "00-nonsense-01".to_owned(),
    ] {
        let made = client
            .post(format!("{}/tasks", server.base))
            .header("traceparent", header.as_str())
            .json(&json!({"prompt": "hi", "workspace": "."}))
            .send()
            .await
            .expect("create");
        assert!(made.status().is_success(), "{header}: {}", server.log());
    }
    // Each task now waits for its result to be reviewed: its run's span
    // is open, its model request's is sent — in the caller's trace for
    // the first, in a trace of its own for the second.
    let spans = receiver
        .wait_for(|s| s.iter().filter(|s| s.name.starts_with("chat ")).count() == 2)
        .await;
    let chats: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(
        chats.iter().filter(|s| s.trace_id == trace).count(),
        1,
        "the caller's trace: {spans:#?}"
    );
    assert_eq!(
        chats.iter().filter(|s| s.trace_id != trace).count(),
        1,
        "a trace of its own: {spans:#?}"
    );
}
