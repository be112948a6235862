//! `roost mcp serve` end to end: the real `roost` binary serving its
//! sandboxed tools to real MCP clients — the MCP Inspector CLI (npm
//! `@modelcontextprotocol/inspector`) and an `rmcp` client — over stdio
//! and streamable HTTP; the grant it was started with holds (writes
//! outside it are denied by the sandbox, writes inside are traced), an
//! intent's scope becomes the grant, skills are served as `skill://`
//! resources, and the HTTP transport refuses foreign `Host`/`Origin`
//! headers and, off loopback, requests without the token.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use roost_tests::identity::{Identity, NOBODY, chown_tree, identities, runnable_by_anyone};
use roost_tests::{TestWorkspace, mcp_bin};
use serde_json::{Value, json};

/// A workspace with a README, intents on, a project skill, and a home
/// with a user skill; the data dir and an empty config beside them.
struct Fixture {
    ws: TestWorkspace,
}

impl Fixture {
    fn new() -> Self {
        let ws = TestWorkspace::new();
        ws.write("README.md", "# MCP fixture\nsecond line\n");
        ws.write(
            ".roo/skills/greet/SKILL.md",
            "---\nname: greet\ndescription: Greets people politely.\n---\nSay hello first.\n",
        );
        ws.write(".roo/skills/greet/refs/guide.md", "Be kind.\n");
        ws.write(".orchestration/active_intents.yaml", INTENTS);
        let home = ws.root().join("home");
        let mine = home.join(".agents/skills/mine");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::write(
            mine.join("SKILL.md"),
            "---\nname: mine\ndescription: The user's own skill.\n---\nDo it my way.\n",
        )
        .unwrap();
        std::fs::create_dir_all(ws.root().join("data")).unwrap();
        std::fs::write(ws.root().join("data/none.toml"), "").unwrap();
        Self { ws }
    }

    fn home(&self) -> PathBuf {
        self.ws.root().join("home")
    }

    fn config(&self) -> PathBuf {
        self.ws.root().join("data/none.toml")
    }

    /// `roost … mcp serve` arguments (no `--config`: the Inspector has an
    /// option of that name; the config comes from `ROOST_CONFIG`).
    fn serve_args(&self, extra: &[&str]) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "--data-dir".into(),
            self.ws.root().join("data").into(),
            "mcp".into(),
            "serve".into(),
            "--workspace".into(),
            self.ws.path().into(),
            "--read".into(),
        ];
        a.extend(extra.iter().map(OsString::from));
        a
    }

    /// The environment every process gets: its own home (for the user's
    /// skills and the Inspector's files), the empty config, no token.
    fn env(&self, c: &mut Command) {
        c.env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("ROOST_CONFIG", self.config())
            .env_remove("ROOST_MCP_TOKEN");
    }

    fn roost(&self, extra: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_roost"));
        self.env(&mut c);
        c.args(self.serve_args(extra));
        c
    }

    /// `roost … mcp serve` run by `who`, from a copy of the binary every
    /// user can run.
    fn roost_as(&self, who: Identity, extra: &[&str]) -> Command {
        let mut c = who.command(&runnable_by_anyone(Path::new(env!("CARGO_BIN_EXE_roost"))));
        self.env(&mut c);
        c.args(self.serve_args(extra));
        c
    }

    /// The Inspector CLI against `target` (a command line or a URL),
    /// quiet: the result alone on stdout.
    fn inspector(&self, target: &[OsString], method: &[&str]) -> std::process::Output {
        let mut c = Command::new(mcp_bin("mcp-inspector"));
        self.env(&mut c);
        c.arg("--cli")
            .args(["-e"])
            .arg(format!("ROOST_CONFIG={}", self.config().display()))
            .args(target)
            .args(["--method"])
            .args(method)
            .arg("-q")
            .stdin(Stdio::null());
        c.output().unwrap()
    }

    /// The Inspector CLI against `roost mcp serve` over stdio.
    fn inspect_stdio(&self, method: &[&str]) -> std::process::Output {
        let mut target = vec![OsString::from(env!("CARGO_BIN_EXE_roost"))];
        target.extend(self.serve_args(&["--write", "out"]));
        self.inspector(&target, method)
    }

    /// An `rmcp` client of `roost mcp serve` over stdio.
    async fn rmcp_stdio(&self, extra: &[&str]) -> RunningService<RoleClient, ()> {
        let args = self.serve_args(extra);
        let (home, config) = (self.home(), self.config());
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_roost")).configure(|c| {
            c.args(&args)
                .env("HOME", &home)
                .env("XDG_CONFIG_HOME", home.join(".config"))
                .env("ROOST_CONFIG", &config)
                .env_remove("ROOST_MCP_TOKEN");
        });
        ().serve(TokioChildProcess::new(cmd).unwrap())
            .await
            .unwrap()
    }

    fn trace(&self) -> Vec<Value> {
        std::fs::read_to_string(self.ws.path().join(".orchestration/agent_trace.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

const INTENTS: &str = "active_intents:
  - id: INT-7
    name: Source
    status: IN_PROGRESS
    owned_scope: [\"src/**\"]
  - id: INT-8
    name: Rust files only
    status: IN_PROGRESS
    owned_scope: [\"src/*.rs\"]
";

/// `roost mcp serve --http` running until dropped.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    /// Start it on `addr` and wait for the line saying where it listens.
    fn start(fx: &Fixture, addr: &str, extra: &[&str]) -> Self {
        Self::start_with(fx, addr, extra, &[])
    }

    /// [`HttpServer::start`] with these variables set.
    fn start_with(fx: &Fixture, addr: &str, extra: &[&str], vars: &[(&str, &str)]) -> Self {
        let mut c = fx.roost(&["--write", "out", "--http", addr]);
        c.args(extra)
            .envs(vars.iter().copied())
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("the server stopped before listening")
                .unwrap();
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let authority = rest.split('/').next().unwrap();
                break authority.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        // Keep reading its log so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn json_out(o: &std::process::Output) -> Value {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The text of a tool result.
fn text_of(r: &CallToolResult) -> String {
    let v = serde_json::to_value(r).unwrap();
    v["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, a: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(a)))
        .await
        .unwrap()
}

#[test]
fn inspector_lists_and_calls_tools_and_reads_skills_over_stdio() {
    let fx = Fixture::new();
    let tools = json_out(&fx.inspect_stdio(&["tools/list"]));
    let tools = tools["tools"].as_array().unwrap();
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    assert_eq!(tool("read_file")["annotations"]["readOnlyHint"], true);
    assert_eq!(
        tool("write_to_file")["annotations"]["destructiveHint"],
        true
    );
    assert_eq!(tool("write_to_file")["inputSchema"]["type"], "object");
    assert!(
        !tools.iter().any(|t| t["name"] == "ask_followup_question"),
        "host-native tools run only in a task"
    );

    let read = json_out(&fx.inspect_stdio(&[
        "tools/call",
        "--tool-name",
        "read_file",
        "--tool-arg",
        "path=README.md",
    ]));
    assert_eq!(read["isError"], false, "{read}");
    assert!(
        read["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("# MCP fixture")
    );

    let listed = json_out(&fx.inspect_stdio(&["resources/list"]));
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    for uri in [
        "skill://index.json",
        "skill://greet/SKILL.md",
        "skill://greet/refs/guide.md",
        "skill://mine/SKILL.md",
        "roost://intents",
    ] {
        assert!(uris.contains(&uri), "{uri} in {uris:?}");
    }

    let index = json_out(&fx.inspect_stdio(&["resources/read", "--uri", "skill://index.json"]));
    let index: Value =
        serde_json::from_str(index["contents"][0]["text"].as_str().unwrap()).unwrap();
    let names: Vec<&str> = index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greet", "mine"], "{index}");
    assert_eq!(index["skills"][0]["url"], "skill://greet/SKILL.md");

    let skill = json_out(&fx.inspect_stdio(&["resources/read", "--uri", "skill://greet/SKILL.md"]));
    assert!(
        skill["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Say hello first.")
    );
    // Nothing outside a skill's folder is reachable through its URIs.
    let escape = fx.inspect_stdio(&[
        "resources/read",
        "--uri",
        "skill://greet/../../../README.md",
    ]);
    assert!(!escape.status.success());

    // The skills extension: entries with digests the Inspector verifies.
    let verified = fx.inspect_stdio(&["skills/list", "--verify"]);
    let out = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success(), "{out}");
    assert_eq!(out.matches("\"outcome\":\"verified\"").count(), 2, "{out}");
}

#[test]
fn inspector_calls_tools_over_http_and_foreign_hosts_are_refused() {
    let fx = Fixture::new();
    let server = HttpServer::start(&fx, "127.0.0.1:0", &[]);
    let target = [
        OsString::from(server.url()),
        "--transport".into(),
        "http".into(),
    ];
    let listed = json_out(&fx.inspector(&target, &["tools/list"]));
    assert!(
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read_file")
    );
    let read = json_out(&fx.inspector(
        &target,
        &[
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=README.md",
        ],
    ));
    assert!(
        read["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("second line")
    );
    let index =
        json_out(&fx.inspector(&target, &["resources/read", "--uri", "skill://index.json"]));
    assert!(
        index["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("greet")
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let post = |headers: Vec<(&'static str, String)>| {
        let url = server.url();
        rt.block_on(async move {
            let mut r = reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(initialize().to_string());
            for (k, v) in headers {
                r = r.header(k, v);
            }
            r.send().await.unwrap().status().as_u16()
        })
    };
    let port = server.port;
    assert_eq!(post(vec![("host", "evil.example".into())]), 403);
    assert_eq!(post(vec![("host", format!("evil.example:{port}"))]), 403);
    assert_eq!(post(vec![("origin", "http://evil.example".into())]), 403);
    assert_eq!(
        post(vec![("origin", format!("http://localhost:{port}"))]),
        200
    );
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_over_stdio_writes_only_inside_the_grant_and_is_traced() {
    let fx = Fixture::new();
    let client = fx.rmcp_stdio(&["--write", "out"]).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "roost");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "write_to_file"));

    let inside = call(
        &client,
        "write_to_file",
        json!({"path": "out/notes.md", "content": "kept\n"}),
    )
    .await;
    assert_eq!(inside.is_error, Some(false), "{}", text_of(&inside));
    assert_eq!(fx.ws.read("out/notes.md"), "kept\n");

    let outside = call(
        &client,
        "write_to_file",
        json!({"path": "src/evil.rs", "content": "no\n"}),
    )
    .await;
    assert_eq!(outside.is_error, Some(true));
    // Refused by the dispatch's gate before the tool runs, as a task's
    // call outside its bound is.
    assert!(
        text_of(&outside).contains("outside_grant"),
        "{}",
        text_of(&outside)
    );
    assert!(!fx.ws.path().join("src/evil.rs").exists());

    // Bad arguments are the caller's to fix (a tool error); an unknown
    // tool is a protocol error.
    let bad = call(&client, "write_to_file", json!({"path": 3})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(
        text_of(&bad).contains("Invalid arguments"),
        "{}",
        text_of(&bad)
    );
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await;
    assert!(unknown.is_err());

    let trace = fx.trace();
    let kept = trace
        .iter()
        .find(|e| e["files"][0]["path"] == "out/notes.md")
        .unwrap_or_else(|| panic!("{trace:?}"));
    assert_eq!(kept["kind"], "mutation");
    assert_eq!(kept["tool"], "write_to_file");
    assert!(kept["task_id"].as_str().unwrap().starts_with("mcp"));
    assert!(kept["files"][0]["sha256_after"].is_string());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_over_http_lists_and_calls() {
    let fx = Fixture::new();
    let server = HttpServer::start(&fx, "127.0.0.1:0", &[]);
    // rmcp's reqwest client (`reqwest-tls-no-provider`) needs a TLS
    // provider installed even for an http:// URL.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_uri(server.url());
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let read = tools.iter().find(|t| t.name == "read_file").unwrap();
    assert_eq!(
        read.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    let r = call(&client, "read_file", json!({"path": "README.md"})).await;
    assert!(text_of(&r).contains("# MCP fixture"), "{}", text_of(&r));
    let written = call(
        &client,
        "write_to_file",
        json!({"path": "out/http.txt", "content": "over http\n"}),
    )
    .await;
    assert_eq!(written.is_error, Some(false), "{}", text_of(&written));
    assert_eq!(fx.ws.read("out/http.txt"), "over http\n");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intent_scope_is_the_write_grant() {
    let fx = Fixture::new();
    let client = fx.rmcp_stdio(&["--intent", "INT-7"]).await;
    let ok = call(
        &client,
        "write_to_file",
        json!({"path": "src/new.rs", "content": "pub fn f() {}\n"}),
    )
    .await;
    assert_eq!(ok.is_error, Some(false), "{}", text_of(&ok));
    let out = call(
        &client,
        "write_to_file",
        json!({"path": "docs/x.md", "content": "no\n"}),
    )
    .await;
    assert_eq!(out.is_error, Some(true));
    assert!(text_of(&out).contains("owned_scope"), "{}", text_of(&out));
    assert!(!fx.ws.path().join("docs/x.md").exists());
    client.cancel().await.unwrap();
    let trace = fx.trace();
    assert!(
        trace
            .iter()
            .any(|e| e["intent_id"] == "INT-7" && e["files"][0]["path"] == "src/new.rs"),
        "{trace:?}"
    );

    // A scope finer than a directory cannot be granted as one: refused.
    let o = fx
        .roost(&["--intent", "INT-8"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("src/*.rs") && err.contains("finer than a directory"),
        "{err}"
    );
}

/// An intent whose scope goes through a symlink out of the workspace is
/// refused when the server starts (scopes are resolved by handle within
/// the workspace), and nothing is written where the symlink points.
#[test]
pub(crate) fn an_intent_scope_through_a_symlink_is_refused_at_start() {
    for who in identities() {
        eprintln!("as {who:?}");
        symlinked_scope_as(who);
    }
}

fn symlinked_scope_as(who: Identity) {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.ws.path().join("out")).unwrap();
    fx.ws.write(
        ".orchestration/active_intents.yaml",
        &format!(
            "{INTENTS}  - id: INT-9
    name: Through a symlink
    status: IN_PROGRESS
    owned_scope: [\"out/**\"]
"
        ),
    );
    if who == Identity::Nobody {
        // Everything is theirs, the symlink's target too: only the
        // refusal keeps a write out of it.
        chown_tree(fx.ws.root(), NOBODY);
        chown_tree(outside.path(), NOBODY);
    }
    let o = fx
        .roost_as(who, &["--intent", "INT-9"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("INT-9") && err.contains("out/**") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn off_loopback_http_needs_a_token_and_checks_it() {
    let fx = Fixture::new();
    let o = fx
        .roost(&["--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("without a token"), "{err}");

    let server = HttpServer::start(&fx, "0.0.0.0:0", &["--token", "s3cret-t0ken"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let status = |auth: Option<&str>| {
        let url = server.url();
        let auth = auth.map(str::to_owned);
        rt.block_on(async move {
            let mut r = reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(initialize().to_string());
            if let Some(a) = auth {
                r = r.header("authorization", a);
            }
            r.send().await.unwrap().status().as_u16()
        })
    };
    assert_eq!(status(None), 401);
    assert_eq!(status(Some("Bearer wrong")), 401);
    assert_eq!(status(Some("Bearer s3cret-t0ken")), 200);
}

/// `roost mcp serve` continues its caller's trace: a call whose
/// `params._meta.traceparent` names a span has its `execute_tool` span in
/// that trace, under that span; a malformed one is ignored (the call is
/// a trace of its own) and the call runs all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_continues_the_callers_trace() {
    let receiver = roost_tests::otlp::Receiver::start().await;
    let fx = Fixture::new();
    let server = HttpServer::start_with(
        &fx,
        "127.0.0.1:0",
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_uri(server.url());
    let client = ().serve(transport).await.unwrap();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller = "00f067aa0ba902b7";
    for parent in [
        format!("00-{trace}-{caller}-01"),
        "00-not-a-trace-01".to_owned(),
        "x".repeat(10_000),
    ] {
        let mut meta = rmcp::model::RequestMetaObject::new();
        meta.insert("traceparent".into(), Value::String(parent));
        let mut req = CallToolRequestParams::new("read_file")
            .with_arguments(args(json!({"path": "README.md"})));
        req.meta = Some(meta);
        let r = client.call_tool(req).await.unwrap();
        assert!(text_of(&r).contains("# MCP fixture"), "{}", text_of(&r));
    }
    let spans = receiver
        .wait_for(|s| {
            s.iter()
                .filter(|s| s.name == "execute_tool read_file")
                .count()
                == 3
        })
        .await;
    let reads: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "execute_tool read_file")
        .collect();
    assert_eq!(
        reads
            .iter()
            .filter(|s| s.trace_id == trace && s.parent_span_id == caller)
            .count(),
        1,
        "{reads:#?}"
    );
    assert_eq!(
        reads
            .iter()
            .filter(|s| s.trace_id != trace && s.parent_span_id.is_empty())
            .count(),
        2,
        "{reads:#?}"
    );
    client.cancel().await.unwrap();
}
