//! Options given before the subcommand, `--script`, and paths given relative: honoured everywhere or refused.
//!
//! - `--script` always replays the transcript: a config's `default_profile`
//!   (a "paid" model server here, a real HTTP server on 127.0.0.1 that
//!   records every request) is never asked, in `run`, `resume`, the
//!   conversation and `roost serve`.
//! - Every option of `roost` given before a command reaches the command
//!   that takes it, or is refused by name by a command that does not.
//! - A relative `ROOST_DATA_DIR` works (a command under bubblewrap, as
//!   root and as `nobody`).
//! - Shell completion offers modes after `--mode`; `roost resume` without a
//!   task says `--last`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use roost_tests::http::{Server, reply};
use roost_tests::identity::{Identity, identities};
use serde_json::{Value, json};

use crate::cli::{roost, text};
use crate::scene::Scene;
use crate::served::Served;

/// A task in a final state.
fn ended(task: &Value) -> bool {
    ["completed", "failed", "aborted", "paused"].contains(&task["status"].as_str().unwrap_or(""))
}

/// Start one task (prompt `hi` in the root) on `server` (`--no-auth`) and
/// poll it and its questions until `settled(task, asks)`; the task then.
fn serve_one_task(server: &Served, settled: impl Fn(&Value, &Value) -> bool) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = reqwest::Client::new();
        server.ready(&client).await;
        let id = server.create(&client, "hi").await;
        let json = |text: String| serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
        for _ in 0..600 {
            let asks = json(
                server
                    .get(&client, &format!("/tasks/{id}/asks"), None)
                    .await,
            );
            let task = json(server.get(&client, &format!("/tasks/{id}"), None).await);
            if settled(&task, &asks) {
                return task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the task never settled: {}", server.log());
    })
}

fn script(dir: &Path, turns: Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, json!({"model": "m", "turns": turns}).to_string()).expect("script");
    path
}

fn done(result: &str) -> Value {
    json!({"text": "Done.", "tool_calls": [{"name": "attempt_completion", "args": {"result": result}}]})
}

fn workspace(dir: &Path) -> PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    ws
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A config whose default profile is a model server that would charge
/// for every request: `paid` records them all (and answers 401).
fn paid_config(dir: &Path, paid: &Server) -> PathBuf {
    let cfg = dir.join("paid.toml");
    std::fs::write(
        &cfg,
        format!(
            "default_profile = \"paid\"\n\n[profiles.paid]\nprovider = \"openai\"\nmodel = \"gpt-paid\"\nbase_url = \"{}\"\n",
            paid.url("/v1")
        ),
    )
    .expect("config");
    cfg
}

/// `--script` means the scripted provider whatever else names an
/// endpoint: the config's default profile, a `--profile`, a resumed task's
/// recorded endpoint, in the conversation and in `roost serve`. The paid
/// server never hears a request; `--script` with another `--provider` is
/// refused.
#[test]
fn a_script_is_replayed_and_the_configs_model_never_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let paid = Server::start(|_| reply(401, &[], r#"{"error":{"message":"a paid API"}}"#));
    let cfg = paid_config(dir.path(), &paid);
    let script = script(
        dir.path(),
        json!([done("first"), done("second"), done("third")]),
    );
    let run = |args: &[&str]| {
        roost(dir.path())
            .args(args)
            .arg("--script")
            .arg(&script)
            .env("ROOST_CONFIG", &cfg)
            .env("OPENAI_API_KEY", "sk-a-real-looking-key")
            .output()
            .expect("runs")
    };
    let ws_arg = ws.to_str().expect("utf-8 path");

    let o = run(&["run", "hi", "--yes", "--workspace", ws_arg]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains("first"), "{}", text(&o));

    // The task recorded the scripted endpoint; a resume with a message
    // replays on.
    let o = run(&["resume", "--last", "-m", "more", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains("second"), "{}", text(&o));

    // A profile named with it lends its settings; the transcript answers.
    let o = run(&[
        "run",
        "hi",
        "--yes",
        "--profile",
        "paid",
        "--workspace",
        ws_arg,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains("first"), "{}", text(&o));

    // Another provider named with it: refused, saying why.
    let o = run(&[
        "run",
        "hi",
        "--yes",
        "--provider",
        "openai",
        "--workspace",
        ws_arg,
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains("--script replays a transcript")
            && stderr(&o).contains("--provider openai"),
        "{}",
        text(&o)
    );

    // The conversation, on a terminal.
    let mut cmd = roost(&dir.path().join("chat"));
    cmd.args(["--yes", "--workspace", ws_arg, "--script"])
        .arg(&script)
        .env("ROOST_CONFIG", &cfg)
        .env("OPENAI_API_KEY", "sk-a-real-looking-key")
        .env("TERM", "xterm")
        .env_remove("ROOST_LOG");
    let mut p = crate::cli::on_pty(cmd);
    p.exp_string("code> ").expect("prompt");
    p.send_line("hi").expect("send");
    let before = p.exp_string("code> ").expect("the task ends");
    assert!(before.contains("first"), "{before}");
    assert!(before.contains("(done"), "{before}");
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("the session ends");

    // A task a client of `roost serve --script` starts.
    let mut cmd = roost(&dir.path().join("serve"));
    cmd.args(["serve", "--no-auth", "--root", ws_arg, "--script"])
        .arg(&script)
        .env("ROOST_CONFIG", &cfg)
        .env("OPENAI_API_KEY", "sk-a-real-looking-key");
    let server = Served::start(cmd, &dir.path().join("serve.log"));
    let task = serve_one_task(&server, |task, asks| {
        let waiting = asks.as_array().is_some_and(|a| !a.is_empty());
        waiting || ended(task)
    });
    drop(server);
    assert_eq!(task["provider"], json!("scripted"), "{task}");
    assert_ne!(task["status"], json!("failed"), "{task}");

    let asked = paid.received();
    assert!(
        asked.is_empty(),
        "the config's model was asked: {:?}",
        asked.iter().map(|s| &s.path).collect::<Vec<_>>()
    );
}

/// Every option `roost` takes, spelled as it is given, with a value where
/// it needs one (`--data-dir`, `--store` and `--config`, which every
/// command reads, are tested apart).
fn conversation_options(ws: &Path, script: &Path) -> Vec<Vec<String>> {
    let s = |v: &str| v.to_owned();
    let p = |v: &Path| v.display().to_string();
    vec![
        vec![s("--workspace"), p(ws)],
        vec![s("--mode"), s("ask")],
        vec![s("--provider"), s("scripted")],
        vec![s("--model"), s("m")],
        vec![s("--base-url"), s("http://127.0.0.1:9/v1")],
        vec![s("--script"), p(script)],
        vec![s("--profile"), s("replay")],
        vec![s("--yes")],
        vec![s("--approve"), s("read")],
        vec![s("--json")],
        vec![s("--max-turns"), s("3")],
        vec![s("--hook"), s("guard.wasm")],
        vec![s("--allow-commands")],
        vec![s("--max-depth"), s("1")],
        vec![s("--max-total-children"), s("1")],
        vec![s("--max-concurrent-children"), s("1")],
        vec![s("--child-timeout-secs"), s("5")],
    ]
}

/// The long options `roost --help` lists.
fn listed_options(dir: &Path) -> BTreeSet<String> {
    let o = roost(dir).arg("--help").output().expect("runs");
    let long = regex::Regex::new(r"^\s+(?:-\w, )?(--[a-z-]+)").expect("regex");
    stdout(&o)
        .lines()
        .filter_map(|l| long.captures(l).map(|c| c[1].to_owned()))
        .collect()
}

/// Each option of `roost` before a command that does not take it (and
/// after it) is refused by name, never dropped; the test covers every
/// option `roost --help` lists.
#[test]
fn an_option_a_command_does_not_take_is_refused_before_and_after_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let script = script(dir.path(), json!([done("ok")]));
    let options = conversation_options(&ws, &script);

    let mut covered: BTreeSet<String> = options.iter().map(|o| o[0].clone()).collect();
    covered.extend(["--data-dir", "--store", "--config", "--help", "--version"].map(String::from));
    assert_eq!(
        listed_options(dir.path()),
        covered,
        "an option is not tested"
    );

    for option in &options {
        for before in [true, false] {
            let mut cmd = roost(dir.path());
            if before {
                cmd.args(option).args(["store", "where"]);
            } else {
                cmd.args(["store", "where"]).args(option);
            }
            let o = cmd.output().expect("runs");
            assert_eq!(o.status.code(), Some(2), "{option:?}: {}", text(&o));
            assert!(
                stderr(&o).contains(&format!(
                    "`{}` does not apply to `roost store where`",
                    option[0]
                )),
                "{option:?} (before: {before}): {}",
                text(&o)
            );
            assert!(stdout(&o).is_empty(), "{option:?}: {}", text(&o));
        }
    }
    // The spelling in the message is the long one, however it was given.
    let o = roost(dir.path())
        .args(["-y", "history", "list"])
        .output()
        .expect("runs");
    assert!(
        stderr(&o).contains("`--yes` does not apply to `roost history list`"),
        "{}",
        text(&o)
    );
}

/// The options given before the command are the ones in effect: the
/// config (`config show`, `config path`, `doctor`, `store where`, `run`),
/// the workspace (`skills list`, `run`), the mode, the profile, `--yes`,
/// `--json`, `--max-turns`, `--script`.
#[test]
fn options_before_the_command_are_the_ones_in_effect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let script = script(
        dir.path(),
        json!([
            {"text": "", "tool_calls": [{"name": "list_files", "args": {"path": "."}}]},
            done("replayed")
        ]),
    );
    // The config named before the command: a scripted profile by default,
    // and a store of its own.
    let cfg = dir.path().join("before.toml");
    let store = dir.path().join("config-store.db");
    std::fs::write(
        &cfg,
        format!(
            "store = \"{}\"\ndefault_profile = \"replay\"\n\n[profiles.replay]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            store.display(),
            script.display()
        ),
    )
    .expect("config");
    let cfg_arg = cfg.to_str().expect("utf-8 path");
    let ws_arg = ws.to_str().expect("utf-8 path");
    // `roost` in `elsewhere`, ROOST_CONFIG naming the empty config.
    let roost_in = |args: &[&str]| {
        roost(dir.path())
            .current_dir(&elsewhere)
            .args(args)
            .output()
            .expect("runs")
    };

    let o = roost_in(&["--config", cfg_arg, "config", "show"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains(&format!("# {cfg_arg}")), "{}", text(&o));
    assert!(
        stdout(&o).contains("# default profile: replay"),
        "{}",
        text(&o)
    );

    let o = roost_in(&["--config", cfg_arg, "config", "path"]);
    assert_eq!(stdout(&o).trim(), cfg_arg, "{}", text(&o));

    let o = roost_in(&["--config", cfg_arg, "doctor", "--offline"]);
    let line = stdout(&o)
        .lines()
        .find(|l| l.contains(" config "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no config line: {}", text(&o)));
    assert!(line.contains(cfg_arg), "{line}");

    let o = roost_in(&["--config", cfg_arg, "store", "where"]);
    assert_eq!(
        stdout(&o).trim(),
        store.display().to_string(),
        "{}",
        text(&o)
    );

    // A run takes the config's default (scripted) profile, in the
    // workspace and mode given before it.
    let o = roost_in(&[
        "--config",
        cfg_arg,
        "--workspace",
        ws_arg,
        "--mode",
        "ask",
        "--yes",
        "--json",
        "run",
        "hi",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let events: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not NDJSON ({e}): {l}")))
        .collect();
    assert!(!events.is_empty(), "{}", text(&o));
    let o = roost_in(&["--config", cfg_arg, "--json", "history", "list"]);
    let task: Value = serde_json::from_str(stdout(&o).lines().next().expect("a task"))
        .unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(task["workspace"], json!(ws_arg), "{task}");
    assert_eq!(task["mode"], json!("ask"), "{task}");
    assert_eq!(task["profile"], json!("replay"), "{task}");
    assert_eq!(task["status"], json!("completed"), "{task}");
    assert_eq!(
        task["settings"]["approval"]["approve_all"],
        json!(true),
        "{task}"
    );

    // The profile and the turn limit given before it (the config of the
    // environment, empty, has no default profile).
    let with_profile = dir.path().join("profiles.toml");
    std::fs::write(
        &with_profile,
        format!(
            "[profiles.replay]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display()
        ),
    )
    .expect("config");
    let o = roost(dir.path())
        .current_dir(&elsewhere)
        .args([
            "--profile",
            "replay",
            "--max-turns",
            "1",
            "--yes",
            "run",
            "hi",
        ])
        .args(["--workspace", ws_arg])
        .env("ROOST_CONFIG", &with_profile)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(3), "paused at one turn: {}", text(&o));

    // The transcript given before it.
    let o = roost_in(&[
        "--script",
        script.to_str().expect("utf-8"),
        "--yes",
        "run",
        "hi",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains("replayed"), "{}", text(&o));

    // The workspace given before `skills list`: its project skills, not
    // those of the current directory.
    let skill = ws.join(".roo/skills/only-in-ws");
    std::fs::create_dir_all(&skill).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: only-in-ws\ndescription: a skill of the workspace\n---\n\nDo it.\n",
    )
    .expect("skill");
    let o = roost_in(&["--workspace", ws_arg, "skills", "list"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains("only-in-ws"), "{}", text(&o));
}

/// A relative `ROOST_DATA_DIR` (and a relative `--config`) works: the
/// task's command runs under bubblewrap, its checkpoint is taken, the
/// store is where the data dir says — as root and as `nobody`.
#[test]
fn a_relative_data_dir_works_for_a_sandboxed_command() {
    for who in identities() {
        relative_data_dir_as(who);
    }
}

fn relative_data_dir_as(who: Identity) {
    let scene = Scene::new();
    let (base, bin) = (&scene.base, &scene.bin);
    let ws = workspace(base.path());
    std::fs::create_dir_all(base.path().join("home")).expect("home");
    let script = script(
        base.path(),
        json!([
            {"text": "", "tool_calls": [{"name": "execute_command", "args": {"command": "echo hi > out.txt"}}]},
            done("ran")
        ]),
    );
    std::fs::write(
        base.path().join("cfg.toml"),
        "[commands]\nallowed_commands = [\"echo\"]\n",
    )
    .expect("config");
    scene.hand_to(who);
    let o = who
        .command(bin)
        .current_dir(base.path())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", base.path().join("home"))
        .env("ROOST_DATA_DIR", "data")
        .args([
            "--config",
            "cfg.toml",
            "run",
            "run echo",
            "--yes",
            "--allow-commands",
        ])
        .args(["--workspace", "ws", "--script"])
        .arg(&script)
        .output()
        .expect("runs");
    let shown = text(&o);
    assert!(o.status.success(), "{who:?}: {shown}");
    assert!(shown.contains("exit code 0"), "{who:?}: {shown}");
    assert!(!shown.contains("bwrap"), "{who:?}: {shown}");
    assert!(!shown.contains("no checkpoint"), "{who:?}: {shown}");
    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).expect("the command wrote"),
        "hi\n",
        "{who:?}"
    );
    assert!(
        base.path().join("data/roost.db").exists(),
        "{who:?}: the store is in the data dir"
    );
}

/// `roost completions bash`, loaded into bash: after `--mode` it offers
/// the modes, not the files of the current directory; its help says to
/// make the folder first.
#[test]
fn completion_offers_modes_after_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("decoy.txt"), "").expect("decoy");
    let o = roost(dir.path())
        .args(["completions", "bash"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let completion = dir.path().join("roost.bash");
    std::fs::write(&completion, &o.stdout).expect("write");
    for words in [
        "roost run hi --mode",
        "roost --mode",
        "roost skills list --mode",
    ] {
        let line = format!(
            "source '{}'; COMP_WORDS=({words} ''); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _roost roost '' --mode; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            completion.display()
        );
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(line)
            .current_dir(dir.path())
            .output()
            .expect("bash");
        let offered: BTreeSet<String> = stdout(&o).lines().map(str::to_owned).collect();
        let modes: BTreeSet<String> = ["architect", "ask", "code", "debug", "orchestrator"]
            .map(String::from)
            .into();
        assert_eq!(offered, modes, "{words}: {}", text(&o));
    }
    let o = roost(dir.path())
        .args(["completions", "--help"])
        .output()
        .expect("runs");
    assert!(
        stdout(&o).contains(
            "mkdir -p ~/.local/share/bash-completion/completions && roost completions bash > ~/.local/share/bash-completion/completions/roost"
        ),
        "{}",
        text(&o)
    );
}

/// `roost resume` without a task says how to name one, `--last` included.
#[test]
fn resume_without_a_task_mentions_last() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = roost(dir.path()).arg("resume").output().expect("runs");
    assert!(!o.status.success(), "{}", text(&o));
    let said = stderr(&o);
    assert!(said.contains("roost resume --last"), "{said}");
    assert!(said.contains("roost resume ID"), "{said}");
}

/// `roost serve --profile P`: a task a client starts without naming a
/// profile talks to P, not to the config's `default_profile` (the flag was
/// parsed and dropped before: the default profile's server was asked).
#[test]
fn serve_flags_name_the_endpoint_of_tasks_that_name_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let ws_arg = ws.to_str().expect("utf-8 path");
    let answer =
        |_: &roost_tests::http::Seen| reply(401, &[], r#"{"error":{"message":"no key here"}}"#);
    let default_server = Server::start(answer);
    let chosen_server = Server::start(answer);
    let cfg = dir.path().join("two.toml");
    std::fs::write(
        &cfg,
        format!(
            "default_profile = \"usual\"\n\n[profiles.usual]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"{}\"\n\n[profiles.chosen]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"{}\"\n",
            default_server.url("/v1"),
            chosen_server.url("/v1")
        ),
    )
    .expect("config");
    let mut cmd = roost(&dir.path().join("serve"));
    cmd.args([
        "serve",
        "--no-auth",
        "--root",
        ws_arg,
        "--profile",
        "chosen",
    ])
    .env("ROOST_CONFIG", &cfg);
    let server = Served::start(cmd, &dir.path().join("serve.log"));
    let task = serve_one_task(&server, |task, _| ended(task));
    let log = server.log();
    drop(server);
    let status = task["status"].as_str().unwrap_or("").to_owned();
    assert_eq!(status, "failed", "the servers answer 401");
    assert!(
        !chosen_server.received().is_empty(),
        "--profile chosen was not asked: {log}"
    );
    assert!(
        default_server.received().is_empty(),
        "the config's default profile was asked although serve named another"
    );
}
