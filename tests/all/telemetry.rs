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

/// `roost run` sends its metrics too, flushed at exit: the GenAI token
/// and duration histograms and Roost's counters.
async fn metrics_of_the_run(receiver: &Receiver) {
    let points = receiver
        .wait_for_points(|p| p.iter().any(|p| p.name == "roost.tasks"))
        .await;
    let point = |name: &str, key: &str, value: &str| {
        points
            .iter()
            .find(|p| p.name == name && p.attr(key) == Some(value))
            .unwrap_or_else(|| panic!("{name} with {key}={value}: {points:#?}"))
    };
    assert!(point("gen_ai.client.token.usage", "gen_ai.token.type", "input").value >= 1.0);
    assert!(point("gen_ai.client.token.usage", "gen_ai.token.type", "output").value >= 1.0);
    assert!(
        point(
            "gen_ai.client.operation.duration",
            "gen_ai.operation.name",
            "chat"
        )
        .value
            >= 4.0
    );
    assert!(
        point(
            "gen_ai.execute_tool.duration",
            "gen_ai.tool.name",
            "read_file"
        )
        .value
            >= 2.0
    );
    assert!(point("gen_ai.invoke_agent.duration", "gen_ai.agent.name", "code").value >= 2.0);
    assert!(point("roost.sandbox.calls", "roost.tool.kind", "component").value >= 2.0);
    assert!(
        points
            .iter()
            .any(|p| p.name == "roost.refusals" && p.attr("roost.refusal.code").is_some()),
        "{points:#?}"
    );
    assert!(point("roost.tasks", "roost.task.status", "completed").value >= 2.0);
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
                && s.attr("gen_ai.tool.call.result").is_none()
                && s.attr("gen_ai.input.messages").is_none()
                && s.attr("gen_ai.output.messages").is_none()),
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
    assert_eq!(read.attr("roost.tool.kind"), Some("component"));
    assert_eq!(read.attr("gen_ai.tool.type"), Some("extension"));
    assert_eq!(delegate.attr("roost.tool.kind"), Some("subtask"));
    assert_eq!(delegate.attr("gen_ai.tool.type"), Some("function"));
    // The model's answer: its id, its model, its time to a first chunk.
    assert!(
        chats.iter().all(|c| c
            .attr("gen_ai.response.id")
            .is_some_and(|i| i.starts_with("chatcmpl-scripted-"))
            && c.attr("gen_ai.response.model") == Some("scripted")
            && c.attr("gen_ai.response.time_to_first_chunk").is_some()),
        "{chats:#?}"
    );
    metrics_of_the_run(&receiver).await;
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
            "traces to {http}/v1/traces, metrics to {http}/v1/metrics over OTLP/HTTP",
            http = receiver.http
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
        stderr.matches("telemetry: cannot send to").count(),
        1,
        "{stderr}"
    );
}

/// A malformed endpoint turns telemetry off with a warning that says why;
/// the task runs all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_endpoint_is_said_and_costs_the_task_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    for bad in ["http://[::1", "not a url at all"] {
        let o = run(
            dir.path(),
            &ws,
            &script,
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", bad)],
        )
        .await;
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("\"completed\""),
            "{bad}"
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("telemetry is off"), "{bad}: {stderr}");
    }
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
    // The model's requests and answers too, the key redacted there as
    // well.
    let chats: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert!(
        chats.iter().any(|c| c
            .attr("gen_ai.input.messages")
            .is_some_and(|m| m.contains("read a and delegate"))),
        "{chats:#?}"
    );
    assert!(
        chats.iter().any(|c| c
            .attr("gen_ai.output.messages")
            .is_some_and(|m| m.contains("read_file"))),
        "{chats:#?}"
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

/// `roost serve` with a person answering over the API: a task that reads,
/// makes an edit the person approves, is refused a write outside the
/// workspace, runs a command, calls an MCP tool and delegates is one trace
/// — each call's span with who approved it, the command's profile and
/// exit code, and the trace context the command (`TRACEPARENT`) and the
/// MCP server (`params._meta`) got, which name the very span of their
/// call. `/metrics` serves the metrics as Prometheus reads them (loopback:
/// no token); they go over OTLP too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_task_tree_is_one_trace_with_the_sandboxs_decisions() {
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("a.txt"), "alpha\n").expect("a");
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("roost")).expect("config dir");
    std::fs::write(
        xdg.join("roost/mcp_settings.json"),
        json!({"mcpServers": {"traced": {
            "command": "node",
            "args": [roost_tests::mcp_script("hostile.mjs"), "traced"],
            "timeout": 10,
            "alwaysAllow": ["meta"]
        }}})
        .to_string(),
    )
    .expect("mcp settings");
    let script = dir.path().join("script.json");
    let call =
        |name: &str, args: serde_json::Value| json!({"tool_calls": [{"name": name, "args": args}]});
    std::fs::write(
        &script,
        json!({
            "turns": [
                call("read_file", json!({"path": "a.txt"})),
                call("write_to_file", json!({"path": "b.txt", "content": "beta\n"})),
                call("write_to_file", json!({"path": "../outside.txt", "content": "x"})),
                call("execute_command", json!({"command": "echo tp=$TRACEPARENT"})),
                call("mcp__traced__meta", json!({})),
                call("new_task", json!({"mode": "code", "message": "CHILD: read a"})),
                call("attempt_completion", json!({"result": "done"}))
            ],
            "tasks": [{"message": "CHILD: read a", "turns": [
                call("read_file", json!({"path": "a.txt"})),
                call("attempt_completion", json!({"result": "child done"}))
            ]}]
        })
        .to_string(),
    )
    .expect("script");
    let mut cmd = crate::cli::roost(&dir.path().join("data"));
    cmd.args([
        "serve",
        "--no-auth",
        "--allow-commands",
        "--metrics",
        "--root",
    ])
    .arg(&ws)
    .arg("--script")
    .arg(&script)
    .env("XDG_CONFIG_HOME", &xdg)
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str())
    .env("OTEL_BSP_SCHEDULE_DELAY", "50")
    .env("OTEL_METRIC_EXPORT_INTERVAL", "200")
    .env_remove("OTEL_SDK_DISABLED");
    let server = crate::served::Served::start(cmd, &dir.path().join("serve.log"));
    let client = reqwest::Client::new();
    server.ready(&client).await;
    let id = server.create(&client, "do it all").await;
    // The person: yes to every question, until the task completes (a
    // bounded number of looks).
    let mut approved = 0;
    let mut settled = false;
    for _ in 0..2400 {
        let task: serde_json::Value =
            serde_json::from_str(&server.get(&client, &format!("/tasks/{id}"), None).await)
                .expect("task");
        match task["status"].as_str() {
            Some("completed") => {
                settled = true;
                break;
            }
            Some("failed" | "aborted") => panic!("{task}\n{}", server.log()),
            _ => {}
        }
        // Every task of the tree asks (the subtask too).
        let listed: serde_json::Value =
            serde_json::from_str(&server.get(&client, "/tasks", None).await).expect("tasks");
        for t in listed["tasks"].as_array().into_iter().flatten() {
            let Some(tid) = t["id"].as_str() else {
                continue;
            };
            let body = server
                .get(&client, &format!("/tasks/{tid}/asks"), None)
                .await;
            let asks: serde_json::Value = serde_json::from_str(&body).expect("asks");
            for ask in asks.as_array().into_iter().flatten() {
                let decision = if ask["kind"] == "completion" {
                    "accept"
                } else {
                    approved += 1;
                    "approve"
                };
                let ask_id = ask["ask_id"].as_str().expect("ask id");
                client
                    .post(format!("{}/tasks/{tid}/asks/{ask_id}", server.base))
                    .json(&json!({ "decision": decision }))
                    .send()
                    .await
                    .expect("answer");
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(settled, "the task never completed: {}", server.log());
    assert!(approved >= 2, "the edit and the command were asked");

    // `/metrics`, as Prometheus parses it.
    let page = client
        .get(format!("{}/metrics", server.base.trim_end_matches("/v1")))
        .send()
        .await
        .expect("metrics");
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .is_ok_and(|c| c.starts_with("text/plain")),
    );
    let text = page.text().await.expect("text");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("the Prometheus text format");
    let sample = |prefix: &str, label: Option<(&str, &str)>| {
        scrape
            .samples
            .iter()
            .find(|s| {
                s.metric.starts_with(prefix)
                    && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v))
            })
            .unwrap_or_else(|| panic!("{prefix} {label:?} in:\n{text}"))
    };
    let counted = |s: &prometheus_parse::Sample| match &s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => *v,
        prometheus_parse::Value::Histogram(h) => h.last().map_or(0.0, |c| c.count),
        prometheus_parse::Value::Summary(_) => 0.0,
    };
    assert!(
        counted(sample(
            "roost_sandbox_calls",
            Some(("roost_tool_kind", "command"))
        )) >= 1.0
    );
    assert!(
        counted(sample(
            "roost_sandbox_calls",
            Some(("roost_tool_kind", "mcp"))
        )) >= 1.0
    );
    assert!(counted(sample("roost_refusals", None)) >= 1.0);
    assert!(
        counted(sample(
            "roost_tasks",
            Some(("roost_task_status", "completed"))
        )) >= 2.0
    );
    // A histogram's samples: `_bucket`s, `_sum` and `_count`.
    let count = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric.starts_with("gen_ai_client_token_usage")
                && s.metric.ends_with("_count")
                && s.labels.get("gen_ai_token_type") == Some("input")
        })
        .unwrap_or_else(|| panic!("the token histogram's count in:\n{text}"));
    assert!(counted(count) >= 7.0, "{count:?}");
    sample(
        "gen_ai_execute_tool_duration",
        Some(("gen_ai_tool_name", "execute_command")),
    );
    sample("roost_serve_queue_depth", None);
    sample("roost_serve_tasks_running", None);
    assert!(!text.contains(&id), "no task ids on the page");
    assert!(
        !text.contains(&ws.display().to_string()),
        "no paths on the page"
    );

    // The trace: every span of the tree.
    let spans = receiver
        .wait_for(|s| named(s, "invoke_agent code").len() == 2)
        .await;
    let trace = &spans[0].trace_id;
    assert!(spans.iter().all(|s| &s.trace_id == trace), "{spans:#?}");
    let root = spans
        .iter()
        .find(|s| s.name == "invoke_agent code" && s.parent_span_id.is_empty())
        .unwrap_or_else(|| panic!("a root: {spans:#?}"));
    let tool = |name: &str| {
        spans
            .iter()
            .find(|s| s.name == format!("execute_tool {name}") && s.parent_span_id == root.span_id)
            .unwrap_or_else(|| panic!("execute_tool {name}: {spans:#?}"))
    };
    let writes: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "execute_tool write_to_file")
        .collect();
    assert!(
        writes
            .iter()
            .any(|w| w.attr("roost.approval") == Some("person") && w.status != 2),
        "the approved edit: {writes:#?}"
    );
    assert!(
        writes
            .iter()
            .any(|w| w.status == 2 && w.events.iter().any(|e| e == "roost.refusal")),
        "the refused write: {writes:#?}"
    );
    let command = tool("execute_command");
    assert_eq!(command.attr("roost.tool.kind"), Some("command"));
    assert_eq!(command.attr("roost.approval"), Some("person"));
    assert_eq!(command.attr("roost.command.exit_code"), Some("0"));
    assert_eq!(command.attr("roost.grant.read"), Some("."));
    assert!(
        command.attr("roost.command.profile").is_some(),
        "{command:#?}"
    );
    let mcp = tool("mcp__traced__meta");
    assert_eq!(mcp.attr("roost.tool.kind"), Some("mcp"));
    assert_eq!(mcp.attr("gen_ai.tool.type"), Some("extension"));
    let delegate = tool("new_task");
    assert!(
        spans
            .iter()
            .any(|s| s.name == "invoke_agent code" && s.parent_span_id == delegate.span_id),
        "the subtask under new_task: {spans:#?}"
    );
    // What the command and the MCP server were given names their call.
    let history = server
        .get(&client, &format!("/tasks/{id}/api-messages"), None)
        .await;
    assert!(
        history.contains(&format!("tp=00-{trace}-{}-01", command.span_id)),
        "the command's TRACEPARENT: {history}"
    );
    assert!(
        history.contains(&format!("00-{trace}-{}-01", mcp.span_id)),
        "the MCP server's _meta.traceparent: {history}"
    );
    // And the metrics went over OTLP too.
    receiver
        .wait_for_points(|p| p.iter().any(|p| p.name == "roost.serve.tasks.running"))
        .await;
}

/// `/metrics` off loopback needs a token: without one the server does not
/// start; with one, a scrape without it (or with another) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_token_gated_off_loopback() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let mut open = crate::cli::roost(&dir.path().join("data"));
    open.args(["serve", "--metrics", "--listen", "0.0.0.0:0", "--root"])
        .arg(&ws);
    let refused = output(open).await;
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("refusing to serve /metrics"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let token_file = dir.path().join("metrics.token");
    let token = "m".repeat(32);
    std::fs::write(&token_file, format!("{token}\n")).expect("token");
    let mut cmd = crate::cli::roost(&dir.path().join("data"));
    cmd.args(["serve", "--no-auth", "--metrics", "--metrics-token-file"])
        .arg(&token_file)
        .arg("--root")
        .arg(&ws);
    let server = crate::served::Served::start(cmd, &dir.path().join("serve.log"));
    let client = reqwest::Client::new();
    server.ready(&client).await;
    let url = format!("{}/metrics", server.base.trim_end_matches("/v1"));
    for wrong in [None, Some("not-the-token"), Some("")] {
        let mut req = client.get(&url);
        if let Some(t) = wrong {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.expect("metrics");
        assert_eq!(r.status(), 401, "{wrong:?}");
    }
    let r = client
        .get(&url)
        .bearer_auth(&token)
        .send()
        .await
        .expect("metrics");
    assert_eq!(r.status(), 200);
    // Without --metrics there is no page.
    drop(server);
    let mut plain = crate::cli::roost(&dir.path().join("data"));
    plain.args(["serve", "--no-auth", "--root"]).arg(&ws);
    let server = crate::served::Served::start(plain, &dir.path().join("plain.log"));
    server.ready(&client).await;
    let r = client
        .get(format!("{}/metrics", server.base.trim_end_matches("/v1")))
        .send()
        .await
        .expect("metrics");
    assert_eq!(r.status(), 404);
}

/// A resumed task's run links to its earlier run: the first `roost run`
/// pauses at its turn limit, `roost resume` runs it again in another
/// process and another trace, its `invoke_agent` span linked to the first
/// run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_task_links_to_its_earlier_run() {
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, script) = workspace(dir.path());
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    let endpoint = [("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str())];
    let mut first = crate::cli::roost(&dir.path().join("data"));
    first
        .args(["run", "read a", "--yes", "--json", "--max-turns", "1"])
        .arg("--workspace")
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .envs(endpoint);
    // It pauses at its turn limit.
    let o = output(first).await;
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("paused"),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut again = crate::cli::roost(&dir.path().join("data"));
    again
        .args(["resume", "--last", "--yes", "--json"])
        .arg("--script")
        .arg(&script)
        .envs(endpoint);
    let o = output(again).await;
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("task_started"),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let spans = receiver
        .wait_for(|s| named(s, "invoke_agent code").len() == 2)
        .await;
    let runs = named(&spans, "invoke_agent code");
    let (earlier, later) = match runs.iter().position(|r| r.links.is_empty()) {
        Some(0) => (runs[0], runs[1]),
        Some(_) => (runs[1], runs[0]),
        None => panic!("the first run links to nothing: {runs:#?}"),
    };
    assert_ne!(earlier.trace_id, later.trace_id, "two traces");
    assert_eq!(
        later.links,
        vec![(earlier.trace_id.clone(), earlier.span_id.clone())],
        "{runs:#?}"
    );
    assert_eq!(
        earlier.attr("gen_ai.conversation.id"),
        later.attr("gen_ai.conversation.id")
    );
}

/// A provider's HTTP request carries the trace context of its model
/// request: each request to a real OpenAI-compatible server on 127.0.0.1
/// names its own `chat` span (W3C `traceparent`), in the task's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_request_carries_its_chat_spans_traceparent() {
    use roost_core::llm::scripted::{Turn, render};
    let receiver = Receiver::start().await;
    let turns: Vec<Turn> = [
        json!({"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]}),
        json!({"tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}),
    ]
    .into_iter()
    .map(|t| serde_json::from_value(t).expect("turn"))
    .collect();
    let served = std::sync::atomic::AtomicUsize::new(0);
    let server = roost_tests::http::Server::start(move |_| {
        let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let turn = &turns[n.min(turns.len() - 1)];
        roost_tests::http::reply(
            200,
            &[("content-type", "text/event-stream")],
            &render(turn, n).concat(),
        )
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, _) = workspace(dir.path());
    let mut cmd = crate::cli::roost(&dir.path().join("data"));
    cmd.args(["run", "read a", "--yes", "--json", "--provider", "openai"])
        .args(["--model", "test-model", "--base-url"])
        .arg(server.base())
        .arg("--workspace")
        .arg(&ws)
        .env("OPENAI_API_KEY", "test-key")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str())
        .env_remove("OTEL_SDK_DISABLED");
    let o = output(cmd).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spans = receiver
        .wait_for(|s| !named(s, "invoke_agent code").is_empty())
        .await;
    let chats: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "chat test-model")
        .collect();
    let requests = server.received();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for r in &requests {
        let parent = r.header("traceparent").unwrap_or_else(|| panic!("{r:?}"));
        assert!(
            chats
                .iter()
                .any(|c| parent == format!("00-{}-{}-01", c.trace_id, c.span_id)),
            "{parent} names no chat span: {chats:#?}"
        );
    }
}
