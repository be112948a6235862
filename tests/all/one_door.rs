//! One door: a call outside a task (`roost tool call`; `roost mcp serve`
//! over stdio and over HTTP, driven by the MCP Inspector from npm) passes
//! the same dispatch as a task's call — the same gates, the mode's hooks
//! (first-party `secret-guard` here), the same after stage — and is traced
//! the same way; the gates' own trace entries go through the store's
//! outbox with the call's result, so a crash before the result is durable
//! leaves none behind to double.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;

use crate::cli::{copy_dir, intent_walkthrough, repo, roost, text};
use roost_core::asks::{Answer, Ask};
use roost_core::engine::{Engine, EngineBuilder, ResumeSpec, TaskSpec};
use roost_core::events::TaskEvent;
use roost_core::llm::scripted::{Script, ScriptedTransport};
use roost_core::llm::{OpenAiCompatible, RetryPolicy};
use roost_core::task::{ApprovalPolicy, TaskConfig};
use roost_tests::harness::{call, complete, turn};
use roost_tests::{TestWorkspace, engine, fixture_wasm, mcp_bin};
use serde_json::{Value, json};

/// The key the intent example's script writes; secret-guard refuses it.
const KEY: &str = "AKIAZ7QX2MHN4KLP8RTW";
/// Where the script writes it (inside INT-001's scope, so only the hook
/// stands in the way).
const KEY_FILE: &str = "src/auth/test_keys.rs";

/// What the script writes there.
fn key_file() -> String {
    format!("// for local testing\npub const AWS_KEY: &str = \"{KEY}\";\n")
}

/// The intent example's workspace (`code` mode runs secret-guard and
/// protected-paths; INT-001 owns `src/auth/**`), with its data dir and an
/// empty config beside it.
struct Example {
    dir: tempfile::TempDir,
    ws: PathBuf,
}

impl Example {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("workspace");
        copy_dir(&repo().join("tests/fixtures/intent-example/workspace"), &ws);
        Self { dir, ws }
    }

    fn data(&self) -> &Path {
        self.dir.path()
    }

    /// `roost mcp serve` arguments for the Inspector (config from the
    /// environment: the Inspector has a `--config` of its own).
    fn serve_args(&self, extra: &[&str]) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "--data-dir".into(),
            self.data().into(),
            "mcp".into(),
            "serve".into(),
            "--workspace".into(),
            self.ws.clone().into(),
            "--read".into(),
            "--intent".into(),
            "INT-001".into(),
        ];
        a.extend(extra.iter().map(OsString::from));
        a
    }

    /// The Inspector CLI calling `write_to_file` with the key on `target`.
    fn inspector_writes_the_key(&self, target: &[OsString]) -> Value {
        let config = self.data().join("empty-config.toml");
        std::fs::write(&config, "").expect("config");
        let o = Command::new(mcp_bin("mcp-inspector"))
            .env("HOME", self.data())
            .env("ROOST_CONFIG", &config)
            .args(["--cli", "-e"])
            .arg(format!("ROOST_CONFIG={}", config.display()))
            .args(target)
            .args(["--method", "tools/call", "--tool-name", "write_to_file"])
            .arg(format!("--tool-arg=path={KEY_FILE}"))
            .arg(format!("--tool-arg=content={}", key_file()))
            .arg("-q")
            .stdin(Stdio::null())
            .output()
            .expect("inspector runs");
        // (It exits non-zero for a tool error; the result is on stdout.)
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
    }

    /// The trace's entries.
    fn trace(&self) -> Vec<Value> {
        std::fs::read_to_string(self.ws.join(".orchestration/agent_trace.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a trace line is JSON"))
            .collect()
    }
}

/// `roost mcp serve --http` until dropped.
struct HttpServe {
    child: Child,
    url: String,
}

impl HttpServe {
    fn start(ex: &Example) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_roost"))
            .args(ex.serve_args(&["--http", "127.0.0.1:0"]))
            .env("ROOST_CONFIG", ex.data().join("empty-config.toml"))
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the server stopped before listening")
                .expect("a line");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().expect("url").to_owned();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of an MCP tool result.
fn mcp_text(v: &Value) -> String {
    v["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

/// Secret-guard refuses the key in a task, through `roost tool call`, and
/// through `roost mcp serve` over stdio and HTTP: the same words, nothing
/// written, and one `hook` trace entry each with the same verdict, under
/// the same intent, the key redacted everywhere.
#[test]
fn a_secret_is_refused_and_traced_the_same_way_through_every_door() {
    let ex = Example::new();
    std::fs::write(ex.data().join("empty-config.toml"), "").expect("config");

    // In a task (the README's walkthrough script).
    let o = intent_walkthrough(ex.data(), &ex.ws)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("hook secret-guard: deny"), "{}", text(&o));

    // `roost tool call`, under the same intent.
    let args = json!({"path": KEY_FILE, "content": key_file()});
    let o: Output = roost(ex.data())
        .args([
            "tool",
            "call",
            "write_to_file",
            "--intent",
            "INT-001",
            "--read",
        ])
        .arg("--args")
        .arg(args.to_string())
        .arg("--workspace")
        .arg(&ex.ws)
        .output()
        .expect("runs");
    assert!(!o.status.success(), "{}", text(&o));
    let cli = text(&o);
    assert!(
        cli.contains("Denied by hook `secret-guard`") && cli.contains("AWS"),
        "{cli}"
    );

    // `roost mcp serve` on stdio, the Inspector from npm driving it.
    let mut stdio = vec![OsString::from(env!("CARGO_BIN_EXE_roost"))];
    stdio.extend(ex.serve_args(&[]));
    let over_stdio = ex.inspector_writes_the_key(&stdio);
    // And over HTTP.
    let server = HttpServe::start(&ex);
    let over_http = ex.inspector_writes_the_key(&[
        server.url.clone().into(),
        "--transport".into(),
        "http".into(),
    ]);
    drop(server);
    for (door, r) in [("stdio", &over_stdio), ("http", &over_http)] {
        assert_eq!(r["isError"], true, "{door}: {r}");
        let t = mcp_text(r);
        assert!(
            t.contains("Denied by hook `secret-guard`") && t.contains("AWS"),
            "{door}: {t}"
        );
        assert!(!t.contains(KEY), "{door}: the key is never echoed: {t}");
    }
    assert!(!ex.ws.join(KEY_FILE).exists(), "no door wrote the key");

    // Four refusals, four `hook` entries alike but for who made the call.
    let trace = ex.trace();
    let hooks: Vec<&Value> = trace
        .iter()
        .filter(|e| e["kind"] == "hook" && e["tool"] == "write_to_file")
        .collect();
    assert_eq!(hooks.len(), 4, "{hooks:#?}");
    let callers: Vec<&str> = hooks.iter().filter_map(|e| e["task_id"].as_str()).collect();
    assert_eq!(
        &callers[1..],
        ["cli", "mcp:inspector-cli", "mcp:inspector-cli"].as_slice(),
        "{hooks:#?}"
    );
    for e in &hooks {
        assert_eq!(e["intent_id"], "INT-001", "{e}");
        assert_eq!(e["mode"], "code", "{e}");
        assert_eq!(e["detail"], hooks[0]["detail"], "the same verdict: {e}");
        assert!(
            e["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with("denied: secret-guard:")),
            "{e}"
        );
    }
    let lines =
        std::fs::read_to_string(ex.ws.join(".orchestration/agent_trace.jsonl")).expect("trace");
    assert!(!lines.contains(KEY), "the key is in no trace line");
}

/// The intent example's modes, and a mode whose two hooks both ask: the
/// first-party `protected-paths` (for `AGENTS.md`), then the fixture
/// (which asks in a mode named `hook-ask`).
const TWO_ASKING_HOOKS: &str = "customModes:
  - {slug: hook-ask, name: Ask twice, roleDefinition: test, groups: [read, edit], hooks: [protected-paths, hook-fixture]}
";

fn asking_engine(data: &TestWorkspace, turns: &Value) -> Arc<Engine> {
    let script: Script = serde_json::from_value(json!({ "turns": turns })).expect("script");
    let transport = Arc::new(ScriptedTransport::per_conversation(script));
    EngineBuilder::new(&data.root().join("data"))
        .plugin_engine(engine())
        .hook(
            engine()
                .load_hook_file("hook-fixture", &fixture_wasm("hook-fixture"))
                .expect("hook fixture loads"),
        )
        .provider(Arc::new(OpenAiCompatible::new(
            "scripted",
            "scripted",
            transport,
            RetryPolicy::default(),
        )))
        .config(TaskConfig {
            policy: ApprovalPolicy::yes(),
            ..TaskConfig::default()
        })
        .build()
        .expect("engine")
}

/// A call approved by one hook and waiting on the next is killed (the
/// process's runtime dropped, as a kill leaves it): the first hook's
/// verdict is not in the trace yet — it waits in the call's result, not
/// yet durable — so the resumed task, which asks both hooks again, traces
/// each verdict exactly once.
#[test]
fn a_kill_between_a_gates_verdict_and_the_result_leaves_each_entry_once() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    ws.write(".roomodes", TWO_ASKING_HOOKS);
    ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-1, name: Docs, status: IN_PROGRESS, owned_scope: [\"**\"]}\n",
    );
    let turns = json!([
        turn(
            "",
            vec![call("select_active_intent", json!({"intent_id": "INT-1"}))]
        ),
        turn(
            "",
            vec![call(
                "write_to_file",
                json!({"path": "AGENTS.md", "content": "# rules\n"})
            )]
        ),
        complete("done"),
    ]);
    // The fixture asking about the write: the moment of the kill.
    let last_ask = |e: &TaskEvent| match e {
        TaskEvent::AskRequired {
            ask: Ask::Hook { hook, tool, .. },
            ..
        } => hook == "hook-fixture" && tool == "write_to_file",
        _ => false,
    };
    let first = tokio::runtime::Runtime::new().expect("runtime");
    let id = first.block_on(async {
        let engine = asking_engine(&data, &turns);
        let id = engine
            .create_task(&TaskSpec {
                prompt: "rules".into(),
                workspace: ws.path(),
                mode: "hook-ask".into(),
                ..TaskSpec::default()
            })
            .await
            .expect("created");
        let mut rx = engine.subscribe(&id).expect("events");
        engine.start(&id).expect("started");
        // Every question before it (the fixture's on the intent's
        // selection, protected-paths' on the write): yes.
        loop {
            let ev = rx.recv().await.expect("event");
            if last_ask(&ev.event) {
                break;
            }
            if let TaskEvent::AskRequired { ask_id, .. } = &ev.event {
                engine
                    .answer(&id, ask_id, Answer::Yes)
                    .await
                    .expect("answered");
            }
        }
        id
    });
    first.shutdown_timeout(std::time::Duration::from_secs(60));
    let approved = |lines: &[Value], hook: &str| {
        lines
            .iter()
            .filter(|e| {
                e["kind"] == "hook"
                    && e["tool"] == "write_to_file"
                    && e["detail"]
                        .as_str()
                        .is_some_and(|d| d.starts_with(&format!("approved: {hook}:")))
            })
            .count()
    };
    let before = roost_tests::harness::trace_lines(&ws.path());
    assert_eq!(
        approved(&before, "protected-paths"),
        0,
        "a verdict is traced with its call's result, not before: {before:#?}"
    );

    let second = tokio::runtime::Runtime::new().expect("runtime");
    second.block_on(async {
        let engine = asking_engine(&data, &turns);
        engine
            .prepare_resume(&id, &ResumeSpec::default())
            .expect("resumable");
        let mut rx = engine.subscribe(&id).expect("events");
        engine.start(&id).expect("started");
        loop {
            let ev = rx.recv().await.expect("event");
            match &ev.event {
                TaskEvent::AskRequired { ask_id, .. } => {
                    engine
                        .answer(&id, ask_id, Answer::Yes)
                        .await
                        .expect("answered");
                }
                TaskEvent::Completed { .. } => break,
                _ => {}
            }
        }
    });
    assert_eq!(ws.read("AGENTS.md"), "# rules\n");
    let after = roost_tests::harness::trace_lines(&ws.path());
    assert_eq!(approved(&after, "protected-paths"), 1, "{after:#?}");
    assert_eq!(approved(&after, "hook-fixture"), 1, "{after:#?}");
}

/// Bad input at the direct door: an unknown mode, an unknown intent, an
/// intent not in progress, a host-native tool, arguments that are not an
/// object — each a clear error, the call not made, nothing written.
#[test]
fn a_direct_call_with_bad_input_is_refused_clearly() {
    let ex = Example::new();
    let before = std::fs::read_to_string(ex.ws.join("src/auth/session.rs")).expect("read");
    let call = |extra: &[&str], tool: &str, args: &str| {
        let o = roost(ex.data())
            .args(["tool", "call", tool, "--read", "--args", args])
            .args(extra)
            .arg("--workspace")
            .arg(&ex.ws)
            .output()
            .expect("runs");
        assert!(!o.status.success(), "{}", text(&o));
        text(&o)
    };
    let write = r#"{"path":"src/auth/session.rs","content":"x"}"#;
    let t = call(&["--mode", "no-such-mode"], "write_to_file", write);
    assert!(
        t.contains("unknown mode `no-such-mode`") && t.contains("code"),
        "{t}"
    );
    let t = call(&["--intent", "INT-999"], "write_to_file", write);
    assert!(t.contains("INT-999") && t.contains("no such intent"), "{t}");
    let t = call(&["--intent", "INT-002"], "write_to_file", write);
    assert!(t.contains("PENDING") && t.contains("IN_PROGRESS"), "{t}");
    let t = call(&[], "attempt_completion", r#"{"result":"x"}"#);
    assert!(t.contains("host-native tool"), "{t}");
    let t = call(&[], "write_to_file", "[1, 2]");
    assert!(t.contains("must be a JSON object"), "{t}");
    assert_eq!(
        std::fs::read_to_string(ex.ws.join("src/auth/session.rs")).expect("read"),
        before
    );
}
