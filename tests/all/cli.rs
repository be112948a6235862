//! The `roost` binary end to end: the README's offline example, JSON
//! events, history, export, bad input, and a task against an
//! OpenAI-compatible server on 127.0.0.1.

use crate::sse_server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) fn roost(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_roost"));
    c.arg("--data-dir")
        .arg(data)
        .env_remove("OPENAI_API_KEY")
        .env("ROOST_CONFIG", empty_config(data));
    c
}

/// The tasks `roost history list --json` lists in data dir `data`, newest
/// first.
pub(crate) fn listed_tasks(data: &Path) -> Vec<serde_json::Value> {
    let o = roost(data)
        .args(["history", "list", "--json"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `cmd` started on a pseudo-terminal, as a person runs it (`TERM=xterm`,
/// colours stripped from what the test reads). The timeout only ends a
/// session that would otherwise hang.
pub(crate) fn on_pty(mut cmd: Command) -> rexpect::session::PtySession {
    cmd.env("TERM", "xterm");
    rexpect::session::spawn_with_options(
        cmd,
        rexpect::reader::Options::new()
            .timeout_ms(Some(120_000))
            .strip_ansi_escape_codes(true),
    )
    .expect("roost starts on a pty")
}

/// An empty config file in `data` (created if missing): a named config
/// file must exist.
fn empty_config(data: &Path) -> PathBuf {
    let path = data.join("none.toml");
    if !path.exists() {
        let _ = std::fs::create_dir_all(data);
        std::fs::write(&path, "").expect("write an empty config");
    }
    path
}

pub(crate) fn repo() -> PathBuf {
    // This test belongs to host/cli.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example_workspace(dir: &Path) -> PathBuf {
    let ws = dir.join("workspace");
    copy_dir(&repo().join("tests/fixtures/example/workspace"), &ws);
    ws
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn readme_example_runs_offline_and_history_exports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = example_workspace(dir.path());
    let script = repo().join("tests/fixtures/example/fix-greeting.json");
    let o = roost(dir.path())
        .args([
            "run",
            "Add a farewell function next to greet",
            "--yes",
            "--json",
        ])
        .arg("--workspace")
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    assert_eq!(
        events.first().map(|e| e["event"].clone()),
        Some("task_created".into())
    );
    assert!(events.iter().any(|e| e["event"] == "completed"));
    assert!(
        std::fs::read_to_string(ws.join("src/greeting.rs"))
            .expect("read")
            .contains("farewell")
    );
    let id = events[0]["task_id"].as_str().expect("id").to_owned();
    // What `--json` prints is a contract: pinned, with the run's id and
    // paths named.
    let ws_text = ws.display().to_string();
    let name = |text: &str| -> String {
        let t = text.replace(&id, "[task]").replace(&ws_text, "[workspace]");
        let t = regex::Regex::new(r#""ask_id":\s*"[0-9a-f-]{36}""#)
            .expect("regex")
            .replace_all(&t, "\"ask_id\": \"[ask]\"")
            .into_owned();
        regex::Regex::new(r#""(ts|created_at|updated_at|timestamp|time)":\s*("[^"]*"|\d+)"#)
            .expect("regex")
            .replace_all(&t, "\"$1\": \"[time]\"")
            .into_owned()
    };
    insta::assert_snapshot!(
        "readme_example_json_events",
        name(&String::from_utf8_lossy(&o.stdout))
    );

    let o = roost(dir.path())
        .args(["history", "list"])
        .output()
        .expect("runs");
    assert!(
        o.status.success() && text(&o).contains(&id) && text(&o).contains("completed"),
        "{}",
        text(&o)
    );
    let export = dir.path().join("export");
    let o = roost(dir.path())
        .args(["history", "show", &id[..12], "--export"])
        .arg(&export)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    for f in [
        "api_conversation_history.json",
        "ui_messages.json",
        "task_metadata.json",
    ] {
        let text = std::fs::read_to_string(export.join(f)).expect(f);
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert!(v.is_array() || v.is_object());
        // Roo Code reads these files: their shape is pinned.
        let pretty = serde_json::to_string_pretty(&v).expect("json");
        insta::assert_snapshot!(format!("roo_export_{f}"), name(&pretty));
    }
    let o = roost(dir.path())
        .args(["resume", &id, "--script"])
        .arg(&script)
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("is completed: give it a new message"),
        "{}",
        text(&o)
    );
}

#[test]
fn without_a_tty_unapproved_edits_are_denied_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = example_workspace(dir.path());
    let o = roost(dir.path())
        .args(["run", "add farewell", "--approve", "read"])
        .arg("--workspace")
        .arg(&ws)
        .arg("--script")
        .arg(repo().join("tests/fixtures/example/fix-greeting.json"))
        .output()
        .expect("runs");
    assert!(text(&o).contains("no terminal to ask"), "{}", text(&o));
    assert!(
        !std::fs::read_to_string(ws.join("src/greeting.rs"))
            .expect("read")
            .contains("farewell")
    );
}

#[test]
fn bad_input_gets_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad_script = dir.path().join("bad.json");
    std::fs::write(&bad_script, "{ not json").expect("write");
    let o = roost(dir.path())
        .args(["run", "x", "--script"])
        .arg(&bad_script)
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("invalid script"),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["run", "x", "--provider", "martian"])
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("unknown provider"),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["run", "x", "--approve", "read,teleport", "--script"])
        .arg(&bad_script)
        .output()
        .expect("runs");
    assert!(!o.status.success(), "{}", text(&o));
    let o = roost(dir.path())
        .args(["resume", "no-such-task"])
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("no task"),
        "{}",
        text(&o)
    );
    // A config file that is named must exist; a bad value names its field.
    let o = roost(dir.path())
        .args(["run", "x", "--config"])
        .arg(dir.path().join("missing.toml"))
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("missing.toml does not exist"),
        "{}",
        text(&o)
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[profiles.p]\ncondense_threshold = 1.5\n").expect("write");
    let o = roost(dir.path())
        .args(["run", "x", "--config"])
        .arg(&bad)
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("profiles.p.condense_threshold"),
        "{}",
        text(&o)
    );
    std::fs::write(dir.path().join("none.toml"), "profiles = 7").expect("write");
    let o = roost(dir.path()).args(["run", "x"]).output().expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("invalid config file"),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["tool", "call", "read_file", "--args", "{oops"])
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("not valid JSON"),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["tool", "call", "nope"])
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("unknown tool"),
        "{}",
        text(&o)
    );
}

#[test]
fn tool_call_prints_the_readme() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = roost(dir.path())
        .args([
            "tool",
            "call",
            "read_file",
            "--args",
            r#"{"path":"README.md"}"#,
            "--read",
            "--workspace",
        ])
        .arg(repo())
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 | # Roost"));
    let o = roost(dir.path())
        .args([
            "tool",
            "call",
            "read_file",
            "--args",
            r#"{"path":"missing.md"}"#,
            "--read",
            "--workspace",
        ])
        .arg(repo())
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("error [not-found]"),
        "{}",
        text(&o)
    );
}

#[test]
fn tool_output_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    let evil = "clear\x1b[2J clip\x1b]52;c;cHduZWQ=\x07 title\x1b]0;pwned\x07 csi\u{9b}31m red";
    std::fs::write(ws.join("evil.txt"), format!("{evil}\n")).expect("write");
    let call = |tool: &str, args: &str, json: bool| {
        let mut c = roost(dir.path());
        c.args([
            "tool",
            "call",
            tool,
            "--args",
            args,
            "--read",
            "--workspace",
        ])
        .arg(&ws);
        if json {
            c.arg("--json");
        }
        c.output().expect("runs")
    };
    let raw = |out: &[u8]| {
        let s = String::from_utf8_lossy(out);
        out.contains(&0x1b) || out.contains(&0x07) || s.contains('\u{9b}')
    };

    let o = call("read_file", r#"{"path":"evil.txt"}"#, false);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!raw(&o.stdout) && !raw(&o.stderr), "{:?}", o.stdout);
    let out = String::from_utf8_lossy(&o.stdout);
    for shown in [
        "clear\\e[2J",
        "clip\\e]52;c;cHduZWQ=\\x07",
        "title\\e]0;pwned\\x07",
        "csi\\u{9b}31m",
    ] {
        assert!(out.contains(shown), "{shown} in {out}");
    }

    // --json stays exact: C0 controls are JSON-escaped (serde_json leaves
    // C1 as is), and everything parses back raw.
    let o = call("read_file", r#"{"path":"evil.txt"}"#, true);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !o.stdout.contains(&0x1b) && !o.stdout.contains(&0x07),
        "{:?}",
        o.stdout
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let read = v["ok"]["text"].as_str().expect("text");
    assert!(read.contains(evil), "{read:?}");

    // A file name carrying an escape sequence.
    std::fs::write(ws.join("name\x1b[2J\x1b]0;pwned\x07.txt"), "x").expect("write");
    let o = call("list_files", r#"{"path":"."}"#, false);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!raw(&o.stdout) && !raw(&o.stderr), "{:?}", o.stdout);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("name\\e[2J\\e]0;pwned\\x07.txt"),
        "{}",
        text(&o)
    );
}

async fn run_against(provider: &str, responses: Vec<sse_server::Canned>) {
    let server = sse_server::start(responses).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    std::fs::write(ws.join("hello.txt"), "hi\n").expect("write");
    let mut cmd = roost(dir.path());
    cmd.args([
        "run",
        "what does hello.txt say?",
        "--yes",
        "--provider",
        provider,
        "--model",
        "test-model",
        "--base-url",
        &server.base_url(),
        "--workspace",
    ])
    .arg(&ws)
    .env("ANTHROPIC_API_KEY", "test-key");
    let o = tokio::task::spawn_blocking(move || cmd.output().expect("runs"))
        .await
        .expect("join");
    assert!(o.status.success(), "{provider}: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("hello.txt says hi"),
        "{}",
        text(&o)
    );
    let requests = server.requests.lock().expect("lock").clone();
    assert_eq!(requests.len(), 2, "{provider}: one request per turn");
    // The second request carries the tool result of the first call.
    assert!(
        requests[1].contains("1 | hi"),
        "{provider}: {}",
        requests[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_completes_against_an_openai_compatible_server() {
    run_against(
        "openai",
        vec![
            sse_server::Canned::sse("openai_quirks.sse"),
            sse_server::Canned::sse("openai_complete.sse"),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_completes_against_an_anthropic_server() {
    run_against(
        "anthropic",
        vec![
            sse_server::Canned::sse("anthropic_tool_use.sse"),
            sse_server::Canned::sse("anthropic_complete.sse"),
        ],
    )
    .await;
}

/// `roost run` of the README's intent walkthrough (its script) in `ws`
/// (a copy of `tests/fixtures/intent-example/workspace`).
pub(crate) fn intent_walkthrough(data: &Path, ws: &Path) -> Command {
    let mut c = roost(data);
    c.args([
        "run",
        "Sessions should expire after an hour",
        "--approve",
        "read,edit,modes",
        "--workspace",
    ])
    .arg(ws)
    .arg("--script")
    .arg(repo().join("tests/fixtures/intent-example/shorten-sessions.json"));
    c
}

#[test]
fn readme_intent_walkthrough_stays_in_scope_and_is_traced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("workspace");
    copy_dir(&repo().join("tests/fixtures/intent-example/workspace"), &ws);
    let o = intent_walkthrough(dir.path(), &ws)
        .env("RUST_LOG", "debug")
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let run_output = text(&o);
    assert!(text(&o).contains("scope_violation"), "{}", text(&o));
    assert!(
        text(&o).contains("hook secret-guard: deny") && !ws.join("src/auth/test_keys.rs").exists(),
        "the workspace's code mode runs secret-guard: {}",
        text(&o)
    );
    assert!(
        std::fs::read_to_string(ws.join("src/auth/session.rs"))
            .expect("read")
            .contains("3_600")
    );
    assert!(
        std::fs::read_to_string(ws.join("src/billing.rs"))
            .expect("read")
            .contains("999"),
        "out-of-scope write refused"
    );
    let o = roost(dir.path())
        .args(["trace", "--intent", "INT-001", "--workspace"])
        .arg(&ws)
        .output()
        .expect("runs");
    let t = text(&o);
    assert!(
        t.contains("mutation") && t.contains("src/auth/session.rs") && t.contains("violation"),
        "{t}"
    );
    let trace_output = t;
    let o = roost(dir.path())
        .args(["intents", "list", "--workspace"])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(
        text(&o).contains("INT-002") && text(&o).contains("PENDING"),
        "{}",
        text(&o)
    );

    // The AWS key secret-guard refused is persisted nowhere and shown
    // nowhere: not in the data dir (store, WAL), the workspace (trace), the
    // run's own output and logs, the history, an export or `roost trace`.
    const KEY: &str = "AKIAZ7QX2MHN4KLP8RTW";
    let mut seen = vec![("run output", run_output)];
    let o = roost(dir.path())
        .args(["history", "show", "--last"])
        .output()
        .expect("runs");
    seen.push(("history show", text(&o)));
    let export = dir.path().join("export");
    let o = roost(dir.path())
        .args(["history", "show", "--last", "--export"])
        .arg(&export)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    seen.push(("trace", trace_output));
    for (what, out) in &seen {
        assert!(!out.contains(KEY), "{what} shows the secret:\n{out}");
    }
    assert!(
        seen[1].1.contains("[REDACTED: an AWS access key id]"),
        "the history shows the call with the key redacted: {}",
        seen[1].1
    );
    let leaks = files_containing(dir.path(), KEY.as_bytes());
    assert!(leaks.is_empty(), "the secret was persisted in {leaks:?}");
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(files_containing(&path, needle)),
            Ok(t) if t.is_file() => {
                let bytes = std::fs::read(&path).unwrap_or_default();
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    out.push(path);
                }
            }
            _ => {}
        }
    }
    out
}

/// `roost tool call` runs declared paths through the same gate as a task:
/// every form of an ignored path, a path out of the workspace and a device
/// are refused; a FIFO in the workspace never blocks the command; a write
/// to `.git/` is refused; `--memory-mib` cannot wrap.
#[test]
fn tool_call_applies_the_path_gate_and_never_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
    std::fs::create_dir_all(ws.join(".git")).expect("mkdir");
    std::fs::write(ws.join("secret.env"), "TOKEN=abc\n").expect("write");
    std::fs::write(ws.join(".rooignore"), "secret.env\n").expect("write");
    std::fs::write(ws.join(".git/config"), "[core]\n").expect("write");
    std::os::unix::fs::symlink("secret.env", ws.join("alias")).expect("symlink");
    mkfifo(&ws.join("fifo"));
    let host_form = ws.canonicalize().expect("canon").join("secret.env");
    let call = |tool: &str, args: String, extra: &[&str]| {
        let mut c = roost(dir.path());
        c.args([
            "tool",
            "call",
            tool,
            "--args",
            &args,
            "--read",
            "--workspace",
        ])
        .arg(&ws)
        .args(extra);
        c.output().expect("runs")
    };
    for path in [
        "sub/../secret.env".to_owned(),
        "/workspace/secret.env".to_owned(),
        host_form.display().to_string(),
        "alias".to_owned(),
    ] {
        let o = call("read_file", format!(r#"{{"path":"{path}"}}"#), &[]);
        assert!(!o.status.success(), "{path}: {}", text(&o));
        assert!(text(&o).contains(".rooignore"), "{path}: {}", text(&o));
        assert!(!text(&o).contains("TOKEN"), "{path}");
    }
    for path in ["/dev/stdin", "../outside", "/etc/passwd"] {
        let o = call("read_file", format!(r#"{{"path":"{path}"}}"#), &[]);
        assert!(!o.status.success(), "{path}");
        assert!(
            text(&o).contains("outside the workspace"),
            "{path}: {}",
            text(&o)
        );
    }
    let o = call("read_file", r#"{"path":"fifo"}"#.into(), &[]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("not a regular file"), "{}", text(&o));
    let o = call(
        "write_to_file",
        r#"{"path":".git/config","content":"[core]\n\tfsmonitor = evil\n"}"#.into(),
        &["--write", "."],
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).expect("read"),
        "[core]\n"
    );
    let o = call(
        "read_file",
        r#"{"path":"sub"}"#.into(),
        &["--memory-mib", "18446744073709551615"],
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("too large"), "{}", text(&o));
}

/// A task started against a local server resumes against that server and
/// model with no flags: its history never goes to the default endpoint.
/// Naming another endpoint on resume is explicit, said and recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_stays_on_the_endpoint_the_task_was_created_with() {
    let a = sse_server::start(vec![
        sse_server::Canned::sse("openai_quirks.sse"),
        sse_server::Canned::sse("openai_quirks.sse"),
        sse_server::Canned::sse("openai_complete.sse"),
    ])
    .await;
    let b = sse_server::start(vec![sse_server::Canned::sse("openai_complete.sse")]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    std::fs::write(ws.join("hello.txt"), "hi\n").expect("write");
    let data = dir.path().to_path_buf();
    let roost_cmd = move |args: Vec<String>| {
        let mut cmd = roost(&data);
        cmd.args(&args)
            .env_remove("OPENAI_BASE_URL")
            .env("OPENAI_API_KEY", "test-key");
        async move {
            tokio::task::spawn_blocking(move || cmd.output().expect("runs"))
                .await
                .expect("join")
        }
    };
    let start = |base: String| {
        vec![
            "run".to_owned(),
            "what does hello.txt say?".into(),
            "--yes".into(),
            "--max-turns".into(),
            "1".into(),
            "--base-url".into(),
            base,
            "--model".into(),
            "local-model".into(),
            "--workspace".into(),
            ws.display().to_string(),
        ]
    };
    let task_id = |out: &str| {
        out.split_whitespace()
            .skip_while(|w| *w != "task")
            .nth(1)
            .expect("task id printed")
            .to_owned()
    };

    // Task 1 pauses after one turn on A; resumed with no flags it goes
    // back to A with the same model.
    let o = roost_cmd(start(a.base_url())).await;
    let id1 = task_id(&text(&o));
    let o = roost_cmd(start(a.base_url())).await;
    let id2 = task_id(&text(&o));
    assert_eq!(a.requests.lock().expect("lock").len(), 2);
    let o = roost_cmd(vec!["resume".into(), id1.clone(), "--yes".into()]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("hello.txt says hi"), "{}", text(&o));
    assert!(!text(&o).contains("resuming task"), "{}", text(&o));
    let requests = a.requests.lock().expect("lock").clone();
    assert_eq!(requests.len(), 3, "the resume went elsewhere: {}", text(&o));
    assert!(requests[2].contains("local-model"), "{}", requests[2]);

    // Task 2, resumed with an explicit other base URL: said and recorded.
    let o = roost_cmd(vec![
        "resume".into(),
        id2.clone(),
        "--yes".into(),
        "--base-url".into(),
        b.base_url(),
    ])
    .await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "resuming task {id2} on openai local-model at {}",
            b.base_url()
        )),
        "{}",
        text(&o)
    );
    assert_eq!(b.requests.lock().expect("lock").len(), 1);
    let o = roost_cmd(vec!["history".into(), "show".into(), id2.clone()]).await;
    assert!(text(&o).contains("endpoint_changed"), "{}", text(&o));

    // A finished task is refused before anything about it changes.
    let o = roost_cmd(vec![
        "resume".into(),
        id1,
        "--base-url".into(),
        "http://127.0.0.1:9/v1".into(),
    ])
    .await;
    assert!(!o.status.success());
    assert!(!text(&o).contains("resuming task"), "{}", text(&o));
}

/// Log lines on stderr carry no colour codes when stderr is not a terminal
/// (here a warning about a `.rooignore` that is a FIFO, which is skipped
/// without blocking).
#[test]
fn logs_have_no_colour_codes_off_a_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    std::fs::write(ws.join("a.txt"), "a\n").expect("write");
    mkfifo(&ws.join(".rooignore"));
    let o = roost(dir.path())
        .args([
            "tool",
            "call",
            "read_file",
            "--args",
            r#"{"path":"a.txt"}"#,
            "--read",
            "--workspace",
        ])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(".rooignore not read"), "{err}");
    assert!(!o.stderr.contains(&0x1b), "{err:?}");
}

/// CLI habits: `roost run -` reads the prompt from stdin, `-y` is `--yes`,
/// `history list` and `intents list` speak JSON, a file or a missing path
/// as `--workspace` is refused for every command, and the todo list is
/// printed once.
#[test]
fn cli_habits_and_clear_refusals() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = example_workspace(dir.path());
    let script = repo().join("tests/fixtures/example/fix-greeting.json");
    let mut child = roost(dir.path())
        .args(["run", "-", "-y", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"Add a farewell function next to greet\n")
        .expect("write prompt");
    let o = child.wait_with_output().expect("waits");
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("Todo list:").count(), 1, "{out}");
    assert!(
        !out.contains("Todo list updated"),
        "todo list printed twice: {out}"
    );

    let o = roost(dir.path())
        .args(["history", "list", "--json"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let tasks: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(tasks.len(), 1);
    assert!(
        tasks[0]["prompt"]
            .as_str()
            .expect("prompt")
            .contains("farewell")
    );
    assert_eq!(tasks[0]["status"], "completed");

    let iws = dir.path().join("iws");
    copy_dir(
        &repo().join("tests/fixtures/intent-example/workspace"),
        &iws,
    );
    let o = roost(dir.path())
        .args(["intents", "list", "--json", "--workspace"])
        .arg(&iws)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let first: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .expect("a line"),
    )
    .expect("JSON");
    assert_eq!(first["id"], "INT-001");

    let file = ws.join("README.md");
    std::fs::write(&file, "x").expect("write");
    let missing = dir.path().join("no-such-dir");
    for bad in [&file, &missing] {
        for args in [
            vec!["run", "hi", "-y", "--script"],
            vec!["intents", "list"],
            vec!["trace"],
            vec!["modes", "list"],
        ] {
            let mut c = roost(dir.path());
            c.args(&args);
            if args[0] == "run" {
                c.arg(&script);
            }
            let o = c.arg("--workspace").arg(bad).output().expect("runs");
            assert!(
                !o.status.success(),
                "{args:?} {}: {}",
                bad.display(),
                text(&o)
            );
            assert!(
                text(&o).contains("not a directory Roost can open")
                    || text(&o).contains("cannot be opened"),
                "{args:?}: {}",
                text(&o)
            );
        }
    }
}

/// SIGTERM stops a run as Ctrl-C does: the task is aborted (resumable),
/// its history kept, the exit code 143 (128 + SIGTERM).
#[test]
fn sigterm_aborts_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("out")).expect("mkdir");
    let script = repo().join("tests/fixtures/example/crash-script.json");
    let mut child = roost(dir.path())
        .args(["run", "write a, b and c", "--yes", "--json", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    // Wait until the task exists (its first event), then terminate.
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).expect("first event");
    let ev: serde_json::Value = serde_json::from_str(&first).expect("JSON");
    let id = ev["task_id"].as_str().expect("task id").to_owned();
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("waits");
    assert_eq!(status.code(), Some(143), "exit code");
    let o = roost(dir.path())
        .args(["history", "show", &id])
        .output()
        .expect("runs");
    assert!(
        text(&o).contains("aborted") && text(&o).contains("SIGTERM"),
        "{}",
        text(&o)
    );
}

/// Ctrl-C cancels after the current step; while a long tool call holds
/// the task (a third party's tool spinning towards its 25 s deadline), a
/// second Ctrl-C leaves at once, exit 130, and the task stays interrupted
/// and resumable.
#[test]
fn a_second_ctrl_c_leaves_at_once() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    let folder = crate::plugin_install::plugin_dir(
        dir.path(),
        "limits",
        "1.0.0",
        &roost_tests::fixture_wasm("limits"),
        "read = \"none\"\n\n[capabilities.limits]\ndeadline_ms = 25000",
        None,
    );
    let o = roost(dir.path())
        .args(["plugin", "install", "--yes"])
        .arg(&folder)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let script = dir.path().join("spin.json");
    std::fs::write(
        &script,
        serde_json::json!({"model": "scripted", "turns": [
            {"tool_calls": [{"name": "spin", "args": {}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    let mut child = roost(dir.path())
        .args(["run", "spin", "--yes", "--json", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let interrupt = |pid: u32| {
        let sent = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
    };
    // Once the call is approved it runs (nothing cancels a call between
    // its approval and its executor): wait for that event.
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut id = None;
    loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).expect("event") > 0, "no approval");
        let ev: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        id.get_or_insert_with(|| ev["task_id"].as_str().expect("id").to_owned());
        if ev["event"] == "tool_call_approved" {
            break;
        }
    }
    let id = id.expect("task id");
    interrupt(child.id());
    // The first Ctrl-C says a second one leaves at once.
    let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut said = String::new();
    while !said.contains("Ctrl-C again leaves at once") {
        let mut line = String::new();
        assert!(err.read_line(&mut line).expect("stderr") > 0, "{said}");
        said.push_str(&line);
    }
    interrupt(child.id());
    let status = child.wait().expect("waits");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).expect("stderr");
    assert_eq!(status.code(), Some(130), "{said}{rest}");
    assert!(rest.contains("leaving now"), "{said}{rest}");
    let o = roost(dir.path())
        .args(["history", "list"])
        .output()
        .expect("runs");
    let listed = text(&o);
    let row = listed
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains("interrupted"), "{row}");
}

/// An unreachable endpoint says why ("connection refused"), once: nothing
/// listens there, so it is not retried (issue 44).
#[test]
fn an_unreachable_endpoint_names_the_root_cause() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let o = roost(dir.path())
        .args([
            "run",
            "hi",
            "--yes",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
        ])
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .arg("--workspace")
        .arg(&ws)
        .env("OPENAI_API_KEY", "k")
        .output()
        .expect("runs");
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.to_lowercase().contains("connection refused"), "{all}");
    assert_eq!(all.matches("connection refused").count(), 1, "{all}");
    assert!(!all.contains("retrying"), "{all}");
}

/// `--last`, ambiguous id prefixes, shell completions, a clear word for a
/// call with no read access, and a notice when the first run compiles the
/// tools (once).
#[test]
fn last_ambiguity_completions_and_clear_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = example_workspace(dir.path());
    let script = repo().join("tests/fixtures/example/fix-greeting.json");
    // No task at all: `--last` says so in words, not as a task id.
    for (args, says) in [
        (&["history", "show", "--last"][..], "no task yet"),
        (&["resume", "--last"][..], "no resumable task"),
    ] {
        let o = roost(dir.path()).args(args).output().expect("runs");
        assert!(
            !o.status.success() && text(&o).contains(says) && !text(&o).contains("no task with id"),
            "{args:?}: {}",
            text(&o)
        );
    }
    let mut ids = Vec::new();
    for i in 0..2 {
        let o = roost(dir.path())
            .args(["run", "go", "-y", "--json", "--workspace"])
            .arg(&ws)
            .arg("--script")
            .arg(&script)
            .output()
            .expect("runs");
        // Nothing is compiled, not even on the first run: the first-party
        // components come precompiled (first_run.rs).
        let notice = String::from_utf8_lossy(&o.stderr).contains("preparing the sandboxed tools");
        assert!(!notice, "run {i}: {}", text(&o));
        let first: serde_json::Value = serde_json::from_str(
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .expect("event"),
        )
        .expect("JSON");
        ids.push(first["task_id"].as_str().expect("id").to_owned());
    }
    let o = roost(dir.path())
        .args(["history", "show", "--last"])
        .output()
        .expect("runs");
    assert!(
        o.status.success() && text(&o).contains(&ids[1]),
        "{}",
        text(&o)
    );
    // Both are completed: nothing to resume.
    let o = roost(dir.path())
        .args(["resume", "--last"])
        .output()
        .expect("runs");
    assert!(
        !o.status.success()
            && text(&o).contains("no resumable task")
            && !text(&o).contains("no task with id"),
        "{}",
        text(&o)
    );
    // The common prefix of the two ids is ambiguous, and says so.
    let common: String = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let o = roost(dir.path())
        .args(["history", "show", &common])
        .output()
        .expect("runs");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("ambiguous") && text(&o).contains(&ids[0]) && text(&o).contains(&ids[1]),
        "{}",
        text(&o)
    );

    let o = roost(dir.path())
        .args(["completions", "bash"])
        .output()
        .expect("runs");
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("_roost()"));

    let o = roost(dir.path())
        .args([
            "tool",
            "call",
            "read_file",
            "--args",
            r#"{"path":"README.md"}"#,
            "--workspace",
        ])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(text(&o).contains("no read access"), "{}", text(&o));
    assert!(!text(&o).contains("os error"), "{}", text(&o));
}

/// Runs `roost` with `args` on a pseudo-terminal (util-linux `script`), its
/// keyboard fed from `keys`; returns everything the terminal showed, with
/// carriage returns left out.
fn on_a_terminal(data: &Path, args: &[&std::ffi::OsStr], keys: &str) -> String {
    raw_terminal(data, args, keys, &[]).replace('\r', "")
}

/// Like [`on_a_terminal`], with `env` set, returning the raw bytes shown.
fn raw_terminal(
    data: &Path,
    args: &[&std::ffi::OsStr],
    keys: &str,
    env: &[(&str, &str)],
) -> String {
    use std::io::Write;
    let mut line = vec![shell_quote(env!("CARGO_BIN_EXE_roost").as_ref())];
    line.push("--data-dir".into());
    line.push(shell_quote(data.as_os_str()));
    line.extend(args.iter().map(|a| shell_quote(a)));
    let mut child = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .env("ROOST_CONFIG", empty_config(data))
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(keys.as_bytes())
        .expect("keys");
    let o = child.wait_with_output().expect("finishes");
    text(&o)
}

/// `s` quoted for `sh -c`.
fn shell_quote(s: &std::ffi::OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"))
}

/// On a terminal: an edit's approval shows the diff it would make (not the
/// call's JSON); an empty answer denies it; `--yes` asks nothing at all,
/// not even "Accept the result?".
#[test]
fn terminal_questions_show_diffs_and_yes_means_no_questions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = repo().join("tests/fixtures/example/fix-greeting.json");
    let ws = example_workspace(dir.path());
    let original = std::fs::read_to_string(ws.join("src/greeting.rs")).expect("read");
    let args = |extra: &[&str]| {
        let mut v: Vec<std::ffi::OsString> = ["run", "add farewell", "--workspace"]
            .into_iter()
            .map(Into::into)
            .collect();
        v.push(ws.clone().into());
        v.push("--script".into());
        v.push(script.clone().into());
        v.extend(extra.iter().map(Into::into));
        v
    };
    let run = |extra: &[&str], keys: &str| {
        let a = args(extra);
        let refs: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        on_a_terminal(dir.path(), &refs, keys)
    };

    // An empty answer denies the edit; the question showed the diff.
    let shown = run(&["--approve", "read"], "\n\n");
    // The subject first (the diff), then the question on its own line.
    let diff_at = shown.find("+pub fn farewell").expect("the diff is shown");
    let question_at = shown.find("\n? Run write_to_file?").expect("the question");
    assert!(
        diff_at < question_at,
        "the question came before its diff: {shown}"
    );
    assert!(
        !shown.contains("? Run write_to_file {"),
        "the question is the diff, not the JSON: {shown}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("src/greeting.rs")).expect("read"),
        original,
        "an empty answer denied the edit (and the dry run changed nothing)"
    );

    // `y` approves it.
    let shown = run(&["--approve", "read"], "y\n\n");
    assert!(shown.contains("Updated src/greeting.rs"), "{shown}");
    assert!(
        std::fs::read_to_string(ws.join("src/greeting.rs"))
            .expect("read")
            .contains("farewell")
    );

    // `--yes`: no question of any kind.
    std::fs::write(ws.join("src/greeting.rs"), &original).expect("reset");
    let shown = run(&["--yes"], "");
    assert!(!shown.contains("? "), "--yes asked something: {shown}");
    assert!(shown.contains("Result:"), "{shown}");
}

/// On a terminal, a log line or notice never lands on the spinner's line or
/// in the middle of the model's text: stderr first clears the spinner.
#[test]
fn notices_start_on_a_line_of_their_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = example_workspace(dir.path());
    let script = dir.path().join("slow.json");
    std::fs::write(
        &script,
        serde_json::json!({"turns": [
            {"delay_ms": 400, "http_error": {"status": 500, "body": "busy"}},
            {"text": "Done.", "tool_calls": [{"name": "attempt_completion", "args": {"result": "ok"}}]}
        ]})
        .to_string(),
    )
    .expect("write");
    let args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        "hi".into(),
        "-y".into(),
        "--workspace".into(),
        ws.into(),
        "--script".into(),
        script.into(),
    ];
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_os_str()).collect();
    let shown = raw_terminal(dir.path(), &refs, "", &[("ROOST_LOG", "roost=debug")]);
    let mut saw_log = false;
    for line in shown.split('\n') {
        // What stays visible on a terminal line: the text after its last
        // carriage return (a terminal's newline is "\r\n").
        let line = line.trim_end_matches('\r');
        let visible = line.rsplit('\r').next().unwrap_or(line);
        if visible.contains("retrying") && visible.contains("busy") && visible.contains("DEBUG") {
            saw_log = true;
            assert!(
                !visible.contains("thinking"),
                "a log line landed on the spinner's line: {visible:?}"
            );
        }
    }
    assert!(saw_log, "the retry was logged: {shown}");
}

/// An orchestrator's tree on the terminal: the group and each subtask
/// announced, every child's lines under `[child <id> · mode]` (ids told
/// apart by their ends: siblings share their first characters), the
/// parent's todo items following its children, and `history show --tree`
/// listing the whole tree afterwards.
#[test]
fn the_cli_shows_a_tree_of_subtasks_live_and_in_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    let out = roost(&data)
        .args([
            "run",
            "three parts",
            "--mode",
            "orchestrator",
            "--yes",
            "--workspace",
        ])
        .arg(&ws)
        .arg("--script")
        .arg(repo().join("tests/fixtures/example/tree-crash-script.json"))
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("⤷ parallel group") && text.contains("3 subtasks · all"),
        "{text}"
    );
    assert!(text.contains("⤶ parallel group"), "{text}");
    // Where the tree stands, each time one of the group's children ends.
    assert_eq!(text.matches("⋯ subtasks: ").count(), 3, "{text}");
    assert!(text.contains("⋯ subtasks: 3 of 3 ended\n"), "{text}");
    let store = roost_core::store::Store::open(&roost_core::store::Store::default_path(&data))
        .expect("store");
    let root = store
        .list_tasks(10)
        .expect("tasks")
        .into_iter()
        .find(|t| t.parent_id.is_none())
        .expect("the root");
    let kids = store.children(&root.id).expect("children");
    assert_eq!(kids.len(), 3);
    for k in &kids {
        let tail = &k.id[k.id.len() - 8..];
        assert!(text.contains(&format!("⤷ subtask {tail} · code")), "{text}");
        assert!(
            text.contains(&format!("[child {tail} · code] ⏺ write_to_file")),
            "{text}"
        );
        assert!(
            text.contains(&format!("⤶ subtask {tail} completed")),
            "{text}"
        );
    }
    // The plan followed the children: every item done at the end.
    assert!(
        text.contains("[x] Part a\n[x] Part b\n[x] Part c"),
        "{text}"
    );
    for (k, v) in [("a", "1"), ("b", "1"), ("c", "2")] {
        let f = if v == "1" { "one" } else { "two" };
        assert_eq!(
            std::fs::read_to_string(ws.join(format!("out/{k}/{f}.txt"))).expect("written"),
            format!("{k}{v}\n")
        );
    }
    let shown = roost(&data)
        .args(["history", "show", &root.id, "--tree"])
        .output()
        .expect("history");
    let tree = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{tree}");
    for k in &kids {
        assert!(
            tree.contains(&format!("  {} completed · code", k.id)),
            "{tree}"
        );
    }
    assert!(tree.contains("part b done"), "{tree}");
}
