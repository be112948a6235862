//! What a new user tripped on, each with its test: a closed pipe, results
//! "accepted" by nobody, endpoints without a model or key, a 404 for an
//! unknown model, a web page where an API was expected, an installed
//! plugin installed again, the listings without headers, the management
//! commands (`doctor`, `config show`, `history search|delete|show
//! --json`).

use std::path::{Path, PathBuf};
use std::process::Output;

use roost_tests::identity::{Identity, identities};
use serde_json::json;

use crate::cli::{roost, text};
use crate::scene::Scene;
use crate::sse_server::{self, Canned};

fn script(dir: &Path, turns: serde_json::Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, json!({"model": "m", "turns": turns}).to_string()).expect("script");
    path
}

fn done(result: &str) -> serde_json::Value {
    json!({"text": "Done.", "tool_calls": [{"name": "attempt_completion", "args": {"result": result}}]})
}

fn workspace(dir: &Path) -> PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    ws
}

async fn output(cmd: std::process::Command) -> Output {
    let mut cmd = cmd;
    tokio::task::spawn_blocking(move || cmd.output().expect("runs"))
        .await
        .expect("join")
}

/// `roost run … | head -1` with stderr closed too: no panic, and the task
/// still completes (it is not left `interrupted`).
#[test]
fn a_closed_pipe_never_kills_a_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let script = script(
        dir.path(),
        json!([
            {"text": "Line one\nline two\nline three\n", "tool_calls": [{"name": "list_files", "args": {"path": "."}}]},
            done("listed")
        ]),
    );
    let probe = roost(dir.path());
    let envs: Vec<(String, String)> = probe
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
        .collect();
    let line = format!(
        "'{}' --data-dir '{}' run 'list the files' --yes --workspace '{}' --script '{}' 2>&- | head -1; echo \"roost exit ${{PIPESTATUS[0]}}\"",
        env!("CARGO_BIN_EXE_roost"),
        dir.path().display(),
        ws.display(),
        script.display()
    );
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(line)
        .envs(envs)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("bash");
    let shown = text(&o);
    assert!(shown.contains("roost exit 0"), "{shown}");
    assert!(!shown.contains("panicked"), "{shown}");
    let o = roost(dir.path())
        .args(["history", "list", "--json"])
        .output()
        .expect("runs");
    let task: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or(""),
    )
    .unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["interrupted"], false, "{task}");
}

/// Without a terminal nobody reviews the result: the output and the
/// history say so (and `--yes` says it was accepted by that flag), never
/// "The user accepted the result".
#[test]
fn results_nobody_reviewed_are_said_to_be_unreviewed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let script = script(dir.path(), json!([done("all good")]));
    for (flags, why) in [
        (vec![], "no terminal to ask"),
        (vec!["--yes"], "accepted by --yes"),
    ] {
        let data = dir.path().join(format!("data{}", flags.len()));
        let o = roost(&data)
            .args(["run", "check"])
            .args(&flags)
            .arg("--workspace")
            .arg(&ws)
            .arg("--script")
            .arg(&script)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", text(&o));
        let shown = text(&o);
        assert!(!shown.contains("The user accepted"), "{shown}");
        assert!(shown.contains(why), "{shown}");
        let o = roost(&data)
            .args(["history", "show", "--last", "--json"])
            .output()
            .expect("runs");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(v["task"]["status"], "completed");
        let rows = v["messages"].to_string();
        assert!(
            rows.contains("accepted without a review by the user"),
            "{rows}"
        );
        assert!(!rows.contains("The user accepted"), "{rows}");
    }
}

/// A non-default endpoint without a model, and a remote one without an
/// API key, are refused before a task exists or a request leaves; the
/// header of a task names provider, model and endpoint.
#[tokio::test]
async fn endpoints_need_a_model_and_remote_ones_a_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let mut cmd = roost(dir.path());
    cmd.args([
        "run",
        "hi",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--workspace",
    ])
    .arg(&ws);
    let o = output(cmd).await;
    assert!(!o.status.success());
    assert!(
        text(&o).contains("which model should http://127.0.0.1:9/v1 run? Pass --model"),
        "{}",
        text(&o)
    );

    let mut cmd = roost(dir.path());
    cmd.args([
        "run",
        "hi",
        "--base-url",
        "https://llm.example.invalid/v1",
        "--model",
        "m",
        "--workspace",
    ])
    .arg(&ws);
    let o = output(cmd).await;
    assert!(!o.status.success());
    assert!(
        text(&o).contains(
            "OPENAI_API_KEY is not set: set it to your API key for https://llm.example.invalid/v1"
        ),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["history", "list"])
        .output()
        .expect("runs");
    assert!(text(&o).contains("no tasks yet"), "{}", text(&o));

    // A local server needs no key; the header names the endpoint.
    let server = sse_server::start(vec![Canned::sse("openai_complete.sse")]).await;
    let mut cmd = roost(dir.path());
    cmd.args(["run", "hi", "--yes", "--model", "local-model", "--base-url"])
        .arg(server.base_url())
        .arg("--workspace")
        .arg(&ws);
    let o = output(cmd).await;
    assert!(
        text(&o).contains(&format!("openai local-model at {}", server.base_url())),
        "{}",
        text(&o)
    );
}

/// A 404 about the model says the model was not found and lists the
/// server's models; a web page where the API should be is one line, and
/// is not retried.
#[tokio::test]
async fn unknown_models_and_web_pages_are_said_plainly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let server = sse_server::start(vec![
        Canned::error(
            404,
            &[("content-type", "application/json")],
            r#"{"error":{"message":"The model `gpt-9` does not exist","code":"model_not_found"}}"#,
        ),
        Canned::error(
            200,
            &[("content-type", "application/json")],
            r#"{"object":"list","data":[{"id":"llama3.2"},{"id":"qwen2.5-coder"}]}"#,
        ),
    ])
    .await;
    let mut cmd = roost(dir.path());
    cmd.args(["run", "hi", "--yes", "--model", "gpt-9", "--base-url"])
        .arg(server.base_url())
        .arg("--workspace")
        .arg(&ws);
    let o = output(cmd).await;
    let shown = text(&o);
    assert!(
        shown.contains("The model `gpt-9` does not exist"),
        "{shown}"
    );
    assert!(shown.contains("it has: llama3.2, qwen2.5-coder"), "{shown}");
    assert!(!shown.contains("retrying"), "{shown}");

    let page = "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>\n<h1>Welcome</h1>\n</body></html>";
    let server = sse_server::start(vec![Canned::error(
        200,
        &[("content-type", "text/html")],
        page,
    )])
    .await;
    let mut cmd = roost(dir.path());
    cmd.args(["run", "hi", "--yes", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg("--workspace")
        .arg(&ws);
    let o = output(cmd).await;
    let shown = text(&o);
    assert_eq!(o.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(r#"an HTML page ("Welcome to nginx!")"#),
        "{shown}"
    );
    assert!(!shown.contains("<h1>"), "{shown}");
    assert!(!shown.contains("retrying"), "{shown}");
    assert_eq!(server.requests.lock().expect("lock").len(), 1);
}

/// `history list` has a header and dates (and says when it is empty);
/// `history search` finds by prompt and by message; `history show --json`
/// is one object; `history delete` removes a task and all of it.
#[test]
fn history_lists_searches_shows_and_deletes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let o = roost(dir.path())
        .args(["history", "list"])
        .output()
        .expect("runs");
    assert!(text(&o).contains("no tasks yet"), "{}", text(&o));
    for (prompt, result) in [
        ("paint the fence", "fence painted"),
        ("wash the car", "car washed"),
    ] {
        let script = script(dir.path(), json!([done(result)]));
        let o = roost(dir.path())
            .args(["run", prompt, "--yes", "--workspace"])
            .arg(&ws)
            .arg("--script")
            .arg(&script)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = roost(dir.path())
        .args(["history", "list"])
        .output()
        .expect("runs");
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut lines = listed.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with("ID") && header.contains("CREATED") && header.contains("PROMPT"),
        "{listed}"
    );
    let year = regex::Regex::new(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}").expect("regex");
    assert!(lines.all(|l| year.is_match(l)), "{listed}");

    let o = roost(dir.path())
        .args(["history", "search", "FENCE"])
        .output()
        .expect("runs");
    let found = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        found.contains("paint the fence") && !found.contains("wash the car"),
        "{found}"
    );
    // A message's words, not only the prompt's.
    let o = roost(dir.path())
        .args(["history", "search", "car washed", "--json"])
        .output()
        .expect("runs");
    let found: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let id = found[0]["id"].as_str().expect("id").to_owned();
    // `%` and `_` are text, not patterns.
    let o = roost(dir.path())
        .args(["history", "search", "%"])
        .output()
        .expect("runs");
    assert!(text(&o).contains("no task mentions"), "{}", text(&o));

    let o = roost(dir.path())
        .args(["history", "show", &id, "--json"])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["task"]["id"], id.as_str());
    assert!(
        v["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{v}"
    );

    let o = roost(dir.path())
        .args(["history", "delete", &id[..13]])
        .output()
        .expect("runs");
    assert!(
        o.status.success() && text(&o).contains(&format!("deleted task {id}")),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["history", "show", &id])
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("no task with id"),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["history", "list", "--json"])
        .output()
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}

/// `roost doctor` checks the data dir, the config and each endpoint, and
/// names the optional parts; `roost config show` masks secrets.
#[test]
fn doctor_and_config_show() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "default_profile = \"local\"\n[profiles.local]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[secrets.GITHUB_TOKEN]\nvalue = \"ghp_do_not_show\"\nhosts = [\"api.github.com\"]\n",
    )
    .expect("config");
    let o = roost(dir.path())
        .args(["doctor"])
        .env("ROOST_CONFIG", &cfg)
        .output()
        .expect("runs");
    let shown = text(&o);
    assert!(o.status.success(), "{shown}");
    for needle in [
        "ok    data dir",
        "ok    task store",
        "ok    config",
        "profile local",
        "http://127.0.0.1:9/v1: no answer",
        "bubblewrap",
        "Python plugins",
    ] {
        assert!(shown.contains(needle), "{needle}: {shown}");
    }
    let o = roost(dir.path())
        .args(["config", "show"])
        .env("ROOST_CONFIG", &cfg)
        .output()
        .expect("runs");
    let shown = text(&o);
    assert!(o.status.success(), "{shown}");
    assert!(!shown.contains("ghp_do_not_show"), "{shown}");
    assert!(
        shown.contains("api.github.com") && shown.contains("***"),
        "{shown}"
    );

    // A broken config is a failed check with its reason.
    std::fs::write(&cfg, "default_profile = [").expect("config");
    let o = roost(dir.path())
        .args(["doctor", "--offline"])
        .env("ROOST_CONFIG", &cfg)
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(text(&o).contains("FAIL  config"), "{}", text(&o));
}

/// Installing a plugin that is installed fails before it is compiled or
/// any question is printed.
#[test]
fn installing_an_installed_plugin_fails_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = roost_tests::fixture_wasm("conformance_rs");
    let install = || {
        roost(dir.path())
            .args(["plugin", "install", "--yes"])
            .arg(&wasm)
            .output()
            .expect("runs")
    };
    let o = install();
    assert!(o.status.success(), "{}", text(&o));
    let o = install();
    let shown = text(&o);
    assert!(!o.status.success());
    assert!(shown.contains("is already installed"), "{shown}");
    assert!(!shown.contains("capabilities it asks for"), "{shown}");
}

/// `tool list` has a header and keeps each line within the terminal.
#[test]
fn tool_list_has_a_header_and_fits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = roost(dir.path())
        .args(["tool", "list"])
        .env("COLUMNS", "80")
        .output()
        .expect("runs");
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(listed.starts_with("TOOL"), "{listed}");
    assert!(listed.lines().all(|l| l.chars().count() <= 80), "{listed}");
    assert!(listed.contains("read_file"), "{listed}");
}

/// A workspace that does not exist is said once, not once per layer.
#[test]
fn a_missing_workspace_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = roost(dir.path())
        .args(["run", "hi", "--workspace", "/nonexistent/roost-ws"])
        .output()
        .expect("runs");
    let shown = text(&o);
    assert!(!o.status.success());
    assert_eq!(
        shown.matches("No such file or directory").count(),
        1,
        "{shown}"
    );
    assert_eq!(shown.lines().count(), 1, "{shown}");
}

/// A warning in normal output is a short line — no timestamp, no module
/// path (those are for `ROOST_LOG`).
#[test]
fn warnings_are_short_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let script = script(
        dir.path(),
        json!([
            {"text": "", "tool_calls": [{"name": "list_files", "args": {"path": "."}}]},
            done("two")
        ]),
    );
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[profiles.replay]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display()
        ),
    )
    .expect("config");
    let o = roost(dir.path())
        .args([
            "run",
            "hi",
            "--yes",
            "--profile",
            "replay",
            "--max-turns",
            "1",
            "--workspace",
        ])
        .arg(&ws)
        .env("ROOST_CONFIG", &cfg)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    // The profile is gone from the config: the resume warns and goes on
    // on the task's recorded endpoint.
    std::fs::write(&cfg, "").expect("config");
    let o = roost(dir.path())
        .args(["resume", "--last", "--yes", "--script"])
        .arg(&script)
        .env("ROOST_CONFIG", &cfg)
        .output()
        .expect("runs");
    let shown = text(&o);
    let warning = shown
        .lines()
        .find(|l| l.contains("WARN"))
        .unwrap_or_else(|| panic!("no warning: {shown}"));
    assert!(warning.trim_start().starts_with("WARN"), "{warning}");
    assert!(!warning.contains("roost_core"), "{warning}");
    let stamp = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:").expect("regex");
    assert!(!stamp.is_match(warning), "{warning}");
}

/// Output made stable for a snapshot: task ids, temporary paths, hashes
/// and times replaced by placeholders.
fn stable(out: &str, paths: &[(&Path, &str)]) -> String {
    let mut s = out.to_owned();
    for (p, name) in paths {
        s = s.replace(&p.display().to_string(), name);
    }
    for (re, with) in [
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<task>",
        ),
        (r"sha256:[0-9a-f]+", "sha256:<hash>"),
        (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}Z)?", "<time>"),
    ] {
        s = regex::Regex::new(re)
            .expect("regex")
            .replace_all(&s, with)
            .into_owned();
    }
    s
}

/// `roost run --yes --allow-commands` as `who`, with `config` and a model
/// that runs `command` and then completes with `result`.
fn run_one_command(who: Identity, config: &str, command: &str, result: &str) -> (Scene, Output) {
    let place = Scene::new();
    place.dirs(["ws", "home", "data"]);
    let config_file = place.p("config.toml");
    std::fs::write(&config_file, config).expect("config");
    let script = script(
        &place.p(""),
        json!([
            {"text": "", "tool_calls": [{"name": "execute_command", "args": {"command": command}}]},
            done(result)
        ]),
    );
    place.hand_to(who);
    let o = place
        .roost(who, &config_file)
        .args(["run", "run it", "--yes", "--allow-commands", "--script"])
        .arg(&script)
        .output()
        .expect("runs");
    (place, o)
}

/// `--yes --allow-commands` and a command no `allowed_commands` rule
/// allows: the denial says that, and how to allow it — not "use --yes",
/// which the user passed. Said once.
#[test]
fn a_command_no_rule_allows_is_denied_for_that_reason_under_yes() {
    for who in identities() {
        let (_place, o) = run_one_command(who, "", "ls -la", "listed");
        let shown = text(&o);
        assert!(o.status.success(), "{who:?}: {shown}");
        assert!(!shown.contains("use --yes"), "{who:?}: {shown}");
        let denial: Vec<&str> = shown.lines().filter(|l| l.contains("denied")).collect();
        assert_eq!(denial.len(), 1, "{who:?}: {shown}");
        insta::assert_snapshot!("command_no_rule_allows", denial[0]);
    }
}

/// Two broken skills beside a good one: the terminal says so, one line
/// each, in a run and in a conversation.
#[test]
fn skipped_skills_are_warned_about_on_the_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    for (name, text) in [
        (
            "fine",
            "---\nname: fine\ndescription: A fine skill\n---\nBody\n",
        ),
        ("no-description", "---\nname: no-description\n---\n"),
        ("Upper", "---\nname: Upper\ndescription: x\n---\n"),
    ] {
        let d = ws.join(".roo/skills").join(name);
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("SKILL.md"), text).expect("skill");
    }
    let script = script(dir.path(), json!([done("ok"), done("ok again")]));
    let o = roost(dir.path())
        .args(["run", "hi", "--yes", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .env("HOME", dir.path())
        .output()
        .expect("runs");
    let shown = text(&o);
    assert!(o.status.success(), "{shown}");
    let warnings: Vec<String> = shown
        .lines()
        .filter(|l| l.contains("skill skipped"))
        .map(|l| stable(l, &[(&ws, "<ws>")]))
        .collect();
    insta::assert_snapshot!("skipped_skills_run", warnings.join("\n"));

    // The conversation says it too.
    let mut cmd = roost(&dir.path().join("chat"));
    cmd.arg("--workspace")
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .env("HOME", dir.path())
        .env("TERM", "xterm")
        .env_remove("ROOST_LOG");
    let mut p = crate::cli::on_pty(cmd);
    p.exp_string("code> ").expect("prompt");
    p.send_line("hi").expect("send");
    let before = p.exp_string("? Accept the result?").expect("review");
    assert_eq!(
        before.matches("warning: skill skipped").count(),
        2,
        "{before}"
    );
    assert!(before.contains("no-description"), "{before}");
    p.send_line("").expect("send");
    p.exp_string("code> ").expect("prompt again");
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("the session ends");
}

/// A model server that is not running: one short line that nothing
/// listens there, pointing to `roost doctor` — no retries, no stack of
/// long lines.
#[test]
fn an_unreachable_model_server_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let o = roost(dir.path())
        .args(["run", "hi", "--yes", "--model", "m", "--base-url"])
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .arg("--workspace")
        .arg(&ws)
        .output()
        .expect("runs");
    let shown = text(&o);
    assert_eq!(o.status.code(), Some(1), "{shown}");
    assert!(!shown.contains("retrying"), "{shown}");
    let said: Vec<&str> = shown
        .lines()
        .filter(|l| !l.starts_with("task "))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(said.len(), 1, "{shown}");
    insta::assert_snapshot!(
        "unreachable_model_server",
        said[0].replace(&port.to_string(), "<port>")
    );
}

/// A command's output is printed once, as it comes, followed by its exit
/// code and the files it changed (not a cut second copy) — as root and as
/// an unprivileged user.
#[test]
fn command_output_is_printed_once_with_exit_code_and_files() {
    for who in identities() {
        let (place, o) = run_one_command(
            who,
            "[commands]\nallowed_commands = [\"printf\", \"tee\"]\n",
            "printf 'line-%s\\n' 1 2 3 4 5 6 7 8 | tee out.txt",
            "written",
        );
        let shown = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{who:?}: {}", text(&o));
        for n in 1..=8 {
            assert_eq!(
                shown.matches(&format!("line-{n}")).count(),
                1,
                "{who:?}: {shown}"
            );
        }
        let from = shown.find("line-1").expect("output");
        let to = shown.find("Done.").expect("the next turn");
        insta::assert_snapshot!(
            "command_output_once",
            stable(&shown[from..to], &[(&place.p("ws"), "<ws>")])
        );
    }
}

/// A run without a terminal, as the demo makes one: the header names the
/// scripted transcript (no "at (none)"), a denial and "no terminal to
/// ask" are said once, and tokens without a price are not "$0.0000".
#[test]
fn a_run_without_a_terminal_says_each_thing_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let script = script(
        dir.path(),
        json!([
            {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "a.txt", "content": "a\n"}}],
             "usage": {"input_tokens": 100, "output_tokens": 20}},
            {"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "tried"}}],
             "usage": {"input_tokens": 120, "output_tokens": 10}}
        ]),
    );
    let o = roost(dir.path())
        .args(["run", "write a", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    let shown = text(&o);
    assert!(o.status.success(), "{shown}");
    assert_eq!(shown.matches("accepted without").count(), 1, "{shown}");
    assert_eq!(
        shown.lines().filter(|l| l.contains("denied")).count(),
        1,
        "{shown}"
    );
    assert!(!shown.contains("at (none)"), "{shown}");
    assert!(!shown.contains("$0.0000"), "{shown}");
    insta::assert_snapshot!("run_without_a_terminal", stable(&shown, &[(&ws, "<ws>")]));
}

/// `tool list`'s columns line up under its header; `skills list` and
/// `checkpoints list` have headers; descriptions are cut at a word, with
/// an ellipsis (the snapshots show where).
#[test]
fn listings_have_headers_and_cut_at_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = roost(dir.path())
        .args(["tool", "list"])
        .env("COLUMNS", "80")
        .output()
        .expect("runs");
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut lines = listed.lines();
    let header = lines.next().expect("header");
    let group_at = header.find("GROUP").expect("GROUP");
    let from_at = header.find("FROM").expect("FROM");
    for l in lines {
        let chars: Vec<char> = l.chars().collect();
        let at = |i: usize| chars.get(i).copied().unwrap_or(' ');
        assert!(
            at(group_at - 1) == ' ' && at(group_at) != ' ',
            "GROUP off its header:\n{header}\n{l}"
        );
        assert!(
            at(from_at - 1) == ' ' && at(from_at) != ' ',
            "FROM off its header:\n{header}\n{l}"
        );
    }
    insta::assert_snapshot!("tool_list", listed);

    let ws = workspace(dir.path());
    let d = ws.join(".roo/skills/tidy");
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::write(
        d.join("SKILL.md"),
        "---\nname: tidy\ndescription: Tidy a repository's imports, formatting and dead code before a release is cut\n---\nBody\n",
    )
    .expect("skill");
    let o = roost(dir.path())
        .args(["skills", "list", "--workspace"])
        .arg(&ws)
        .env("HOME", dir.path())
        .output()
        .expect("runs");
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", text(&o));
    insta::assert_snapshot!("skills_list", stable(&listed, &[(&ws, "<ws>")]));

    let script = script(
        dir.path(),
        json!([
            {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "a.txt", "content": "a\n"}}]},
            done("written")
        ]),
    );
    let o = roost(dir.path())
        .args(["run", "write a", "--yes", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let o = roost(dir.path())
        .args(["history", "list", "--json"])
        .output()
        .expect("runs");
    let task: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or(""),
    )
    .expect("json");
    let id = task["id"].as_str().expect("id");
    let o = roost(dir.path())
        .args(["checkpoints", "list", id])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    insta::assert_snapshot!(
        "checkpoints_list",
        stable(&String::from_utf8_lossy(&o.stdout), &[])
    );
}

/// Ctrl-C at "Accept the result?" is an interruption, not a "no": the
/// history records no refusal, the task is interrupted and resumes.
#[test]
fn ctrl_c_at_the_result_review_is_an_interruption() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let data = dir.path().join("data");
    let script = script(dir.path(), json!([done("all done"), done("done again")]));
    let mut cmd = roost(&data);
    cmd.arg("--workspace")
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .env("TERM", "xterm")
        .env_remove("ROOST_LOG");
    let mut p = crate::cli::on_pty(cmd);
    p.exp_string("code> ").expect("prompt");
    p.send_line("finish it").expect("send");
    p.exp_string("? Accept the result?").expect("review");
    p.send_control('c').expect("Ctrl-C");
    p.exp_string("aborted: interrupted (Ctrl-C)")
        .expect("said to be interrupted");
    p.exp_string("code> ").expect("prompt again");
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("the session ends");

    let o = roost(&data)
        .args(["history", "show", "--last", "--json"])
        .output()
        .expect("runs");
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let rows = v["messages"].to_string();
    assert!(!rows.contains("not accepted"), "{rows}");
    assert!(!rows.contains("did not accept"), "{rows}");
    assert!(rows.contains("interrupted"), "{rows}");
    let task = crate::cli::listed_tasks(&data).swap_remove(0);
    assert_eq!(task["status"], "aborted", "{task}");
    // `roost run` on a terminal: the same, and the interruption is shown
    // at once (the display does not wait on the unanswered question).
    let run_data = dir.path().join("run-data");
    let mut cmd = roost(&run_data);
    cmd.args(["run", "finish it", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .env("TERM", "xterm")
        .env_remove("ROOST_LOG");
    let mut p = crate::cli::on_pty(cmd);
    p.exp_string("? Accept the result?").expect("review");
    p.send_control('c').expect("Ctrl-C");
    p.exp_string("aborted: interrupted (Ctrl-C)")
        .expect("said to be interrupted");
    p.exp_string("continues it").expect("resumable");
    p.exp_eof().expect("the run ends");
    let o = roost(&run_data)
        .args(["history", "show", "--last", "--json"])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["task"]["status"], "aborted", "{v}");
    assert!(!v["messages"].to_string().contains("not accepted"), "{v}");

    // It resumes, to its end.
    let o = roost(&data)
        .args(["resume", "--last", "--yes", "--script"])
        .arg(&script)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let o = roost(&data)
        .args(["history", "show", "--last", "--json"])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["task"]["status"], "completed", "{v}");
}
