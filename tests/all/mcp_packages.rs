//! MCP servers started by a package runner (npx, uvx, …) inside the sandbox: a per-server cache, the registry's origin only, and a clear failure.
//!
//! Each test runs the real `roost` binary (`roost mcp list` / `call`) with
//! a global `mcp_settings.json`, real bubblewrap and, for `npx`, the real
//! npm registry reached through the server's filtering proxy — as the
//! test's user (root on CI) and as `nobody`. Each run is bounded: a server
//! that is not reported within its bound fails the test instead of
//! hanging it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use roost_tests::TestWorkspace;
use roost_tests::identity::{Identity, NOBODY, chown_tree, identities, runnable_by_anyone};
use serde_json::{Value, json};

/// The server the README's example starts, pinned to the version the
/// other MCP tests install.
const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// A workspace, its data dir and its `XDG_CONFIG_HOME`, with `servers` as
/// the user's global MCP configuration, all given to `who`.
fn setup(who: Identity, servers: Value) -> (TestWorkspace, PathBuf, PathBuf) {
    let ws = TestWorkspace::new();
    let data = ws.root().join("data");
    let xdg = ws.root().join("xdg");
    std::fs::create_dir_all(xdg.join("roost")).expect("config dir");
    std::fs::write(
        xdg.join("roost/mcp_settings.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .expect("settings");
    if who == Identity::Nobody {
        chown_tree(ws.root(), NOBODY);
    }
    (ws, data, xdg)
}

/// What one bounded `roost` run printed.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// `roost ARGS` as `who`, failing the test if it has not ended within
/// `bound` (it is killed then).
fn roost(who: Identity, data: &Path, xdg: &Path, args: &[&str], bound: Duration) -> Run {
    let mut child = who
        .command(&runnable_by_anyone(Path::new(env!("CARGO_BIN_EXE_roost"))))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env("XDG_CONFIG_HOME", xdg)
        .env_remove("ROOST_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("roost runs");
    let pipe = |mut p: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        })
    };
    let out = pipe(Box::new(child.stdout.take().expect("stdout")));
    let err = pipe(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`roost {}` had not ended after {bound:?}: a failing server must be reported, not waited for",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        ok: status.success(),
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
    }
}

/// `roost mcp list --json` in `ws`: the first server's JSON.
fn listed(who: Identity, data: &Path, xdg: &Path, ws: &Path, bound: Duration) -> Value {
    listed_all(who, data, xdg, ws, bound)[0].clone()
}

/// `roost mcp list --json` in `ws`: every server's JSON, in name order.
fn listed_all(who: Identity, data: &Path, xdg: &Path, ws: &Path, bound: Duration) -> Vec<Value> {
    let w = ws.to_str().expect("utf-8");
    let run = roost(
        who,
        data,
        xdg,
        &["mcp", "list", "--json", "--workspace", w],
        bound,
    );
    assert!(run.ok, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    v["servers"].as_array().cloned().unwrap_or_default()
}

/// The README's example: a server started with `npx -y PACKAGE` is
/// fetched from the npm registry through its sandbox's proxy into a cache
/// of its own in Roost's data dir, starts, and lists its tools; a call
/// works; inside, its home is that cache and its registry the one npm
/// would use. The workspace stays untouched, and nothing is cached outside
/// the data dir.
#[test]
pub(crate) fn an_npx_server_from_npm_runs_in_the_sandbox() {
    for who in identities() {
        eprintln!("as {who:?}");
        npx_as(who);
    }
}

fn npx_as(who: Identity) {
    let (ws, data, xdg) = setup(
        who,
        json!({"everything": {"command": "npx", "args": ["-y", EVERYTHING]}}),
    );
    let before = roost_tests::tree_hash(&ws.path());
    let s = listed(who, &data, &xdg, &ws.path(), Duration::from_secs(400));
    assert_eq!(s["status"]["state"], "ready", "{s:#}");
    let tools: Vec<&str> = s["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"echo") && tools.contains(&"get-env"),
        "{tools:?}"
    );
    // Fetched once, into its own cache in the data dir.
    let caches: Vec<PathBuf> = std::fs::read_dir(data.join("mcp-cache"))
        .expect("a cache dir in the data dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(caches.len(), 1, "{caches:?}");
    assert!(caches[0].join(".npm/_npx").is_dir(), "{caches:?}");
    // Started again from that cache: a call, and what the server sees.
    let w = ws.path();
    let w = w.to_str().expect("utf-8");
    let run = roost(
        who,
        &data,
        &xdg,
        &[
            "mcp",
            "call",
            "everything",
            "echo",
            "--args",
            r#"{"message": "hello from the sandbox"}"#,
            "--workspace",
            w,
        ],
        Duration::from_secs(400),
    );
    assert!(run.ok, "{}", run.stderr);
    assert!(
        run.stdout.contains("hello from the sandbox"),
        "{}",
        run.stdout
    );
    let run = roost(
        who,
        &data,
        &xdg,
        &["mcp", "call", "everything", "get-env", "--workspace", w],
        Duration::from_secs(400),
    );
    assert!(run.ok, "{}", run.stderr);
    let result: Value = serde_json::from_str(&run.stdout).expect("json");
    let env: Value = result["content"][0]["text"]
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_else(|| panic!("get-env's environment: {result}"));
    assert_eq!(env["HOME"], "/tmp/roost-mcp-cache", "{env:#}");
    // The registry npm would use outside (the default, or the user's).
    assert!(
        env["npm_config_registry"]
            .as_str()
            .is_some_and(|r| r.starts_with("https://")),
        "{env:#}"
    );
    assert_eq!(
        roost_tests::tree_hash(&ws.path()),
        before,
        "the workspace is untouched"
    );
}

/// A server that writes to stderr and exits is reported at once — not
/// after its hour-long timeout — with how it exited, the end of its
/// stderr, and, for a write its sandbox refused, that the file system is
/// read-only there. Under the `workspace` profile the same write lands in
/// the workspace.
#[test]
pub(crate) fn a_server_that_exits_is_reported_at_once_with_its_stderr() {
    for who in identities() {
        eprintln!("as {who:?}");
        exits_as(who);
    }
}

fn exits_as(who: Identity) {
    let script = "console.error('starting the notes server'); \
                  try { require('fs').writeFileSync('notes.db', '') } \
                  catch (e) { console.error('cannot open notes.db: ' + e.message); process.exit(3) }";
    // The same server under the `workspace` profile writes its file.
    let writes = "require('fs').writeFileSync('notes.db', 'kept'); \
                  console.error('notes.db written, no MCP here'); process.exit(4)";
    let (ws, data, xdg) = setup(
        who,
        json!({
            "notes": {"command": "node", "args": ["-e", script], "timeout": 3600},
            "writer": {"command": "node", "args": ["-e", writes], "timeout": 3600,
                       "profile": "workspace"},
        }),
    );
    let all = listed_all(who, &data, &xdg, &ws.path(), Duration::from_secs(120));
    let w = &all[1];
    assert_eq!(w["name"], "writer");
    let why = w["status"]["detail"].as_str().unwrap_or_default();
    assert!(
        why.contains("it exited (exit code 4) before answering `initialize`; its stderr ends: notes.db written"),
        "{w:#}"
    );
    assert_eq!(ws.read("notes.db"), "kept");
    std::fs::remove_file(ws.path().join("notes.db")).expect("remove");
    let s = &all[0];
    let why = s["status"]["detail"].as_str().unwrap_or_default();
    assert!(
        why.contains("it exited (exit code 3) before answering `initialize`")
            && why.contains(
                "its stderr ends: starting the notes server | cannot open notes.db: EROFS: read-only file system"
            )
            && why.contains("it tried to write where its sandbox is read-only"),
        "{s:#}"
    );
    // The words too, one line, without escapes.
    let w = ws.path();
    let run = roost(
        who,
        &data,
        &xdg,
        &["mcp", "list", "--workspace", w.to_str().expect("utf-8")],
        Duration::from_secs(120),
    );
    assert!(
        run.stdout
            .contains("it exited (exit code 3) before answering `initialize`; its stderr ends:"),
        "{}",
        run.stdout
    );
}

/// A package whose runner reaches for another origin than its registry
/// (here `npx` fetching a tarball from another host) is refused by the
/// sandbox's proxy, and the failure names the refused origin at once.
#[test]
pub(crate) fn another_origin_is_refused_and_the_refusal_is_shown() {
    for who in identities() {
        eprintln!("as {who:?}");
        refused_as(who);
    }
}

fn refused_as(who: Identity) {
    let (ws, data, xdg) = setup(
        who,
        json!({"elsewhere": {
            "command": "npx",
            "args": ["-y", "https://downloads.example.com/mcp-server.tgz"],
            "timeout": 3600,
        }}),
    );
    let s = listed(who, &data, &xdg, &ws.path(), Duration::from_secs(300));
    let why = s["status"]["detail"].as_str().unwrap_or_default();
    assert!(
        why.contains("it exited (exit code 1)")
            && why.contains(
                "its sandbox refused the network origin https://downloads.example.com:443"
            )
            && why.contains("403"),
        "{s:#}"
    );
}
