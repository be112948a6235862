//! `execute_command` end to end, under real bubblewrap: what the policy
//! lets run and who decides the rest; what a command can and cannot reach
//! (its write scope, the rest of the file system, `~`, a private `/tmp`,
//! hidden paths, the network, the host's environment and secrets); a
//! time limit that kills what it started; output capped for the model and
//! pageable whole; refusal with the reason where bubblewrap cannot run;
//! and a scripted task that edits, runs the project's tests and reads
//! their saved output.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use roost_core::commands::{CommandsConfig, ProfileConfig};
use roost_core::config::SecretStore;
use roost_core::events::TaskEvent;
use roost_core::task::{Approval, ApprovalPolicy, TaskOutcome};
use roost_tests::harness::{Harness, assert_pairing, call, complete, scripted_harness, turn};
use roost_tests::user::ScriptedUser;
use serde_json::{Value, json};

/// A model turn that runs `command` (also used by `crate::command_policy`).
pub(crate) fn run(command: &str) -> Value {
    turn(
        "",
        vec![call("execute_command", json!({ "command": command }))],
    )
}

pub(crate) fn run_with(args: Value) -> Value {
    turn("", vec![call("execute_command", args)])
}

/// A harness whose model makes `turns`, commands on under `config` and
/// `profiles`, every call approved by the policy.
pub(crate) fn with_commands(
    turns: Vec<Value>,
    config: CommandsConfig,
    profiles: Vec<(&str, ProfileConfig)>,
    secrets: SecretStore,
) -> Harness {
    let mut turns = turns;
    turns.push(complete("done"));
    let mut h = scripted_harness(json!({ "turns": turns }), ApprovalPolicy::yes());
    let profiles: BTreeMap<String, ProfileConfig> = profiles
        .into_iter()
        .map(|(n, p)| (n.to_owned(), p))
        .collect();
    h.commands = Some((config, profiles, secrets));
    h
}

/// A directory outside `/tmp` (which a command's sandbox replaces with
/// its own): under `/var/tmp`, or the build's own temporary directory.
fn outside_tmp() -> std::io::Result<tempfile::TempDir> {
    tempfile::tempdir_in("/var/tmp").or_else(|_| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")))
}

/// Commands on, every line allowed by the rules.
pub(crate) fn everything_allowed() -> CommandsConfig {
    CommandsConfig {
        enabled: true,
        allowed_commands: vec!["*".into()],
        ..CommandsConfig::default()
    }
}

/// The results of the task's execute_command calls, in order.
pub(crate) fn results(h: &Harness, id: &str) -> Vec<(String, bool)> {
    h.results(id)
        .into_iter()
        .filter(|(r, _)| !r.contains("accepted the result"))
        .collect()
}

/// Inside the sandbox: the write scope persists; the rest of the file
/// system, `~` and a hidden path do not; `/tmp` is private; the host's
/// environment is scrubbed and a secret reaches only a profile bound to
/// it; the network is off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_reaches_exactly_what_its_profile_grants() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Outside /tmp (which the sandbox replaces): one directory it may
    // read, one its profile hides.
    let outside = outside_tmp().expect("outside");
    let hidden = outside_tmp().expect("hidden");
    std::fs::write(outside.path().join("readable.txt"), "readable").expect("write");
    std::fs::write(hidden.path().join("secret.txt"), "hidden secret").expect("write");
    let (o, hd) = (outside.path().display(), hidden.path().display());
    let h = with_commands(
        vec![
            run("echo inside > in.txt && cat in.txt"),
            run(&format!(
                "cat {o}/readable.txt; echo; touch {o}/out.txt 2>&1; echo rc=$?"
            )),
            run("touch ~/roost-sandbox-probe.txt; echo rc=$?"),
            run("echo private > /tmp/roost-private-probe.txt && cat /tmp/roost-private-probe.txt"),
            run(&format!(
                "ls -A {hd}; cat {hd}/secret.txt; touch {hd}/new.txt; echo rc=$?"
            )),
            run("env | sort | cut -d= -f1 | tr '\\n' ' '; echo; echo \"token=[$API_TOKEN]\""),
            run(&format!(
                "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo no-network"
            )),
        ],
        CommandsConfig {
            profile: Some("hiding".into()),
            ..everything_allowed()
        },
        vec![(
            "hiding",
            ProfileConfig {
                deny: vec![hidden.path().display().to_string()],
                ..ProfileConfig::default()
            },
        )],
        SecretStore::isolated().with("API_TOKEN", "s3cret-value", vec![]),
    );
    let (id, outcome) = h.run(&ScriptedUser::default(), "probe the sandbox").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = results(&h, &id);
    assert_eq!(r.len(), 7, "{r:#?}");
    // 1. Inside the scope: written, persisted, listed with its hash.
    assert!(
        r[0].0.contains("inside\n") && r[0].0.contains("created in.txt sha256:"),
        "{}",
        r[0].0
    );
    assert_eq!(h.ws.read("in.txt"), "inside\n");
    // 2. Elsewhere: readable, not writable.
    assert!(r[1].0.contains("readable\n"), "{}", r[1].0);
    assert!(
        r[1].0.contains("Read-only file system") && r[1].0.contains("rc=1"),
        "{}",
        r[1].0
    );
    assert!(!outside.path().join("out.txt").exists());
    // 3. Home: read-only too.
    assert!(r[2].0.contains("rc=1"), "{}", r[2].0);
    let home = std::env::var("HOME").expect("HOME");
    assert!(
        !std::path::Path::new(&home)
            .join("roost-sandbox-probe.txt")
            .exists()
    );
    // 4. /tmp works, and is the command's own.
    assert!(r[3].0.contains("private\n"), "{}", r[3].0);
    assert!(!std::path::Path::new("/tmp/roost-private-probe.txt").exists());
    // 5. The hidden path is empty and cannot be written.
    assert!(
        !r[4].0.contains("hidden secret") && r[4].0.contains("rc=1"),
        "{}",
        r[4].0
    );
    assert!(!hidden.path().join("new.txt").exists());
    // 6. Only the scrubbed environment; no secret without its binding.
    let env_line = &r[5].0;
    for allowed in ["PATH", "HOME", "LANG", "TERM"] {
        assert!(env_line.contains(allowed), "{env_line}");
    }
    assert!(env_line.contains("token=[]"), "{env_line}");
    assert!(!env_line.contains("s3cret-value"), "{env_line}");
    assert!(
        !env_line.contains("CARGO") && !env_line.contains("RUST"),
        "{env_line}"
    );
    // 7. No network.
    assert!(r[6].0.contains("no-network"), "{}", r[6].0);
    drop(listener);
    assert_pairing(h.store(), &id);
}

/// A secret bound to the profile by name reaches the command; nothing
/// else does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_bound_to_the_profile_reaches_its_commands() {
    let h = with_commands(
        vec![run("echo \"token=[$API_TOKEN] other=[$OTHER_TOKEN]\"")],
        CommandsConfig {
            profile: Some("with-token".into()),
            ..everything_allowed()
        },
        vec![(
            "with-token",
            ProfileConfig {
                secrets: vec!["API_TOKEN".into()],
                env: vec!["OTHER_TOKEN".into()],
                ..ProfileConfig::default()
            },
        )],
        SecretStore::isolated()
            .with("API_TOKEN", "s3cret-value", vec![])
            .with("OTHER_TOKEN", "other-value", vec![]),
    );
    let (id, _) = h.run(&ScriptedUser::default(), "use the token").await;
    let r = results(&h, &id);
    assert!(
        r[0].0.contains("token=[s3cret-value] other=[]"),
        "{}",
        r[0].0
    );
}

/// The policy decides who decides: a denied line never runs (whatever
/// the policy approves), an allowed one runs, an unlisted one asks a
/// person even under `--yes` (here: they say no), a redirection out of
/// the workspace is refused before anything runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_decides_what_runs_and_who_is_asked() {
    let h = with_commands(
        vec![
            run("echo ok && rm -rf in.txt"),
            run("echo allowed > allowed.txt"),
            run("python3 -c 'print(1)'"),
            run("echo x > ../outside.txt"),
            run("echo $(git push)"),
        ],
        CommandsConfig {
            enabled: true,
            allowed_commands: vec!["echo".into(), "git status".into()],
            denied_commands: vec!["rm".into(), "git push".into()],
            ..CommandsConfig::default()
        },
        vec![],
        SecretStore::isolated(),
    );
    h.ws.write("in.txt", "keep\n");
    let user = ScriptedUser::default().approve(Approval::Deny { feedback: None });
    let (id, _) = h.run(&user, "try the policy").await;
    let r = results(&h, &id);
    assert_eq!(r.len(), 5, "{r:#?}");
    assert!(
        r[0].1 && r[0].0.contains("denied by the rule `rm`"),
        "{}",
        r[0].0
    );
    assert_eq!(h.ws.read("in.txt"), "keep\n");
    assert!(!r[1].1, "{}", r[1].0);
    assert_eq!(h.ws.read("allowed.txt"), "allowed\n");
    assert!(
        r[2].1 && r[2].0.contains("denied this operation"),
        "{}",
        r[2].0
    );
    let asked = user.asked();
    assert!(
        asked.iter().any(|a| a
            .starts_with("approve: execute_command\nnot in allowed_commands: python3 -c print(1)")),
        "{asked:?}"
    );
    assert!(
        r[3].1 && r[3].0.contains("leaves the workspace"),
        "{}",
        r[3].0
    );
    assert!(
        r[4].1 && r[4].0.contains("denied by the rule `git push`"),
        "{}",
        r[4].0
    );
}

/// A background process that outlives the time limit dies with the
/// command; fifty megabytes of output reach the model as its head and
/// tail, the whole saved and paged by read_command_output; the live
/// stream carries output while the command runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_limits_kill_everything_and_big_output_is_capped_and_pageable() {
    let h = with_commands(
        vec![
            run_with(json!({
                "command": "(sleep 2; echo late > late.txt) & echo started; sleep 100",
                "timeout_s": 1
            })),
            run("head -c 52428800 /dev/zero | tr '\\0' x; echo; echo THE-END"),
        ],
        everything_allowed(),
        vec![],
        SecretStore::isolated(),
    );
    let mut seen = h.events.subscribe();
    let (id, _) = h.run(&ScriptedUser::default(), "slow and loud").await;
    let r = results(&h, &id);
    assert!(r[0].1 && r[0].0.contains("killed"), "{}", r[0].0);
    assert!(r[0].0.contains("started"), "{}", r[0].0);
    // Give the background job the time it asked for: it must be gone.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert!(
        !h.ws.path().join("late.txt").exists(),
        "the background job outlived the command"
    );
    let big = &r[1].0;
    assert!(
        big.len() < 64 * 1024,
        "{} bytes reached the model",
        big.len()
    );
    assert!(
        big.contains("bytes left out; read_command_output(id: \""),
        "{:.300}",
        big
    );
    assert!(big.contains("THE-END"), "the tail is kept");
    let output_id = big
        .split("id: \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("an output id")
        .to_owned();
    let mut live = 0usize;
    while let Ok(e) = seen.try_recv() {
        if let TaskEvent::CommandOutput { chunk, .. } = &e.event {
            live += chunk.len();
        }
    }
    // Both commands' live output: the second's is capped at 1 MiB.
    assert!(
        live > 1000 && live <= (1 << 20) + 64,
        "{live} bytes streamed live"
    );
    // The whole output, paged.
    let page = h
        .engine()
        .agent()
        .commands
        .as_ref()
        .expect("commands on")
        .outputs
        .page(&id, &output_id, 52_428_800 - 10, 100)
        .expect("page");
    assert_eq!(page.1, 52_428_800 + 9, "the whole output is saved");
    assert!(page.0.ends_with("xxx\nTHE-END\n"), "{:?}", page.0);
}

/// A scripted task edits a file, runs the project's tests through
/// execute_command, pages their saved output by the id it got, and
/// completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_edits_runs_the_tests_and_reads_their_output() {
    let mut run_tests = call("execute_command", json!({"command": "bash run_tests.sh"}));
    run_tests["id"] = json!("run-tests");
    let h = with_commands(
        vec![
            turn(
                "Fixing.",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/lib.txt", "content": "fixed\n"}),
                )],
            ),
            turn("Testing.", vec![run_tests]),
            turn(
                "Reading the start.",
                vec![call("read_command_output", json!({"id": "run-tests"}))],
            ),
            turn(
                "Another task's?",
                vec![call(
                    "read_command_output",
                    json!({"id": "../other/run-tests"}),
                )],
            ),
        ],
        everything_allowed(),
        vec![],
        SecretStore::isolated(),
    );
    h.ws.write(
        "run_tests.sh",
        "for i in $(seq 1 2000); do echo \"test case $i ... ok\"; done\n\
         if grep -q fixed src/lib.txt; then echo 'RESULT: all passed'; else echo 'RESULT: FAILED'; exit 1; fi\n",
    );
    h.ws.write("src/lib.txt", "broken\n");
    let (id, outcome) = h.run(&ScriptedUser::default(), "fix and test").await;
    assert!(
        matches!(&outcome, TaskOutcome::Completed { result } if result == "done"),
        "{outcome:?}"
    );
    let r = results(&h, &id);
    assert_eq!(r.len(), 4, "{r:#?}");
    assert!(
        r[1].0.contains("RESULT: all passed") && r[1].0.contains("exit code 0"),
        "{}",
        r[1].0
    );
    assert!(
        r[1].0
            .contains("bytes left out; read_command_output(id: \"run-tests\""),
        "{}",
        r[1].0
    );
    assert!(
        !r[1].0.contains("test case 1000 ..."),
        "the middle is left out"
    );
    assert!(
        r[2].0.starts_with("[output run-tests: bytes 0–")
            && r[2].0.contains("test case 1000 ... ok"),
        "{:.200}",
        r[2].0
    );
    assert!(
        r[2].0
            .contains("[more: read_command_output(id: \"run-tests\", offset: "),
        "a page, with where to go on"
    );
    assert!(r[3].1 && r[3].0.contains("no saved output"), "{}", r[3].0);
    assert_pairing(h.store(), &id);
}

/// Where bubblewrap cannot run, commands are refused with the reason; the
/// task goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_bubblewrap_commands_are_refused_with_the_reason() {
    let h = with_commands(
        vec![run("echo hi > hi.txt")],
        CommandsConfig {
            bwrap: Some("/nonexistent/bwrap".into()),
            ..everything_allowed()
        },
        vec![],
        SecretStore::isolated(),
    );
    let (id, outcome) = h.run(&ScriptedUser::default(), "try").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = results(&h, &id);
    assert!(r[0].1, "{}", r[0].0);
    assert!(
        r[0].0
            .contains("bubblewrap is not installed (no /nonexistent/bwrap)"),
        "{}",
        r[0].0
    );
    assert!(r[0].0.contains("command_sandbox = \"none\""), "{}", r[0].0);
    assert!(!h.ws.path().join("hi.txt").exists());
}

/// A tiny HTTP server on 127.0.0.1 answering every request with `body`;
/// how many connections it got.
pub(crate) fn http_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hits);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (port, hits)
}

/// A harness like [`with_commands`] whose commands run under the profile
/// `net`, which reaches only `http://127.0.0.1:{allowed}` (through the
/// proxy of the real binary's command bridge).
pub(crate) fn with_net_profile(turns: Vec<Value>, allowed: u16) -> Harness {
    let mut h = with_commands(
        turns,
        CommandsConfig {
            profile: Some("net".into()),
            ..everything_allowed()
        },
        vec![(
            "net",
            ProfileConfig {
                network: vec![format!("http://127.0.0.1:{allowed}")],
                ..ProfileConfig::default()
            },
        )],
        SecretStore::isolated(),
    );
    h.command_bridge = Some(env!("CARGO_BIN_EXE_roost").into());
    h
}

/// A request through the command's proxy, in plain bash.
fn fetch(port: u16) -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'GET http://127.0.0.1:{port}/ HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n' >&3 && cat <&3"
    )
}

/// The network: an origin the profile names is reached through the
/// host's proxy (the command's only way out); another is refused with
/// 403 and recorded; a profile without origins has no network at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_profiles_origins_are_reachable() {
    let (allowed, _) = http_server("hello-from-host");
    let (other, _) = http_server("should-not-see");
    let h = with_net_profile(
        vec![
            run(&fetch(allowed)),
            run(&format!(
                "{}; echo; echo direct: ; (exec 3<>/dev/tcp/127.0.0.1/{other}) 2>/dev/null && echo connected || echo no-route",
                fetch(other)
            )),
        ],
        allowed,
    );
    let (id, _) = h.run(&ScriptedUser::default(), "reach out").await;
    let r = results(&h, &id);
    assert!(
        r[0].0.contains("200 OK") && r[0].0.contains("hello-from-host"),
        "{}",
        r[0].0
    );
    assert!(r[1].0.contains("403 Forbidden"), "{}", r[1].0);
    assert!(!r[1].0.contains("should-not-see"), "{}", r[1].0);
    assert!(r[1].0.contains("no-route"), "{}", r[1].0);
    assert!(
        r[1].0.contains(&format!(
            "Network refused (not in profile `net`): http://127.0.0.1:{other}"
        )),
        "{}",
        r[1].0
    );
}

/// Under an intent: a command writes only inside the intent's owned
/// scope — elsewhere the file system is read-only, and a write inside a
/// write root but outside a finer scope is undone by the write guard —
/// and the trace records the command, its profile, exit code and the
/// files it changed with their hashes. An intent names the profile its
/// commands run under.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_an_intent_a_command_writes_only_its_scope_and_is_traced() {
    let h = with_commands(
        vec![
            turn(
                "",
                vec![call(
                    "select_active_intent",
                    json!({"intent_id": "INT-001"}),
                )],
            ),
            run("touch src/lib.rs src/notes.txt; touch top.txt; echo rc=$?"),
            turn(
                "",
                vec![call(
                    "select_active_intent",
                    json!({"intent_id": "INT-002"}),
                )],
            ),
            run("touch src/other.rs; echo rc=$?"),
        ],
        everything_allowed(),
        vec![],
        SecretStore::isolated(),
    );
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-001, name: Rust, status: IN_PROGRESS, owned_scope: [\"src/*.rs\"]}\n  \
         - {id: INT-002, name: Look only, status: IN_PROGRESS, owned_scope: [\"src/*.rs\"], command_profile: read-only}\n",
    );
    h.ws.write("src/keep.rs", "keep\n");
    let (id, outcome) = h
        .run(&ScriptedUser::default(), "build under an intent")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = results(&h, &id);
    let cmd = &r[1].0;
    // top.txt: outside every write root, a read-only file system.
    assert!(
        cmd.contains("Read-only file system") && cmd.contains("rc=1"),
        "{cmd}"
    );
    assert!(!h.ws.path().join("top.txt").exists());
    // src/notes.txt: inside the root `src`, outside `src/*.rs`: undone.
    assert!(r[1].1 && cmd.contains("scope_violation"), "{cmd}");
    assert!(!h.ws.path().join("src/notes.txt").exists());
    assert!(h.ws.path().join("src/lib.rs").exists());
    // INT-002 names `read-only`: nothing is writable.
    assert!(
        r[3].0.contains("rc=1") && r[3].0.contains("profile read-only"),
        "{}",
        r[3].0
    );
    assert!(!h.ws.path().join("src/other.rs").exists());
    let trace = roost_tests::harness::trace_lines(&h.ws.path());
    let mutation = trace
        .iter()
        .find(|l| l["tool"] == "execute_command" && l["kind"] == "mutation")
        .expect("the command is traced");
    let detail = mutation["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("command `touch src/lib.rs src/notes.txt; touch top.txt; echo rc=$?` in . under profile workspace: exit code 0"),
        "{mutation}"
    );
    let files = mutation["files"].as_array().cloned().unwrap_or_default();
    assert!(
        files.iter().any(|f| f["path"] == "src/lib.rs"
            && f["sha256_after"].as_str().is_some_and(|h| h.len() == 64)),
        "{mutation}"
    );
}

/// On the command line: `--allow-commands` turns commands on as the
/// config's `[commands]` says; the output streams live (text and
/// `--json`), and the result says the exit code.
#[test]
fn the_cli_streams_a_commands_output_live() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::create_dir_all(&data).expect("mkdir");
    let config = data.join("config.toml");
    std::fs::write(
        &config,
        "[commands]\nallowed_commands = [\"echo\", \"seq\"]\n",
    )
    .expect("config");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"text": "", "tool_calls": [{"name": "execute_command", "args": {"command": "seq 1 3; echo streamed-line"}}]},
            {"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "ran"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    for json_mode in [false, true] {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_roost"));
        c.arg("--data-dir")
            .arg(&data)
            .env("ROOST_CONFIG", &config)
            .args(["run", "count", "--yes", "--allow-commands", "--workspace"])
            .arg(&ws)
            .arg("--script")
            .arg(&script)
            .env_remove("OPENAI_API_KEY");
        if json_mode {
            c.arg("--json");
        }
        let out = c.output().expect("runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if json_mode {
            let chunks: String = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["event"] == "command_output")
                .filter_map(|v| v["chunk"].as_str().map(str::to_owned))
                .collect();
            assert_eq!(chunks, "1\n2\n3\nstreamed-line\n", "{text}");
        } else {
            assert!(text.contains("1\n2\n3\nstreamed-line\n"), "{text}");
            assert!(text.contains("exit code 0"), "{text}");
        }
    }
    // Without the flag (and `enabled` unset) there is no such tool.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roost"))
        .arg("--data-dir")
        .arg(&data)
        .env("ROOST_CONFIG", &config)
        .args(["run", "count", "--yes", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Tool `execute_command` does not exist"),
        "{text}"
    );
}

/// A profile with `read` sees only those paths, the system's program
/// directories and the workspace: the rest of the file system is not
/// there at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_restricted_profile_sees_only_what_it_names() {
    let shown = outside_tmp().expect("shown");
    let unseen = outside_tmp().expect("unseen");
    std::fs::write(shown.path().join("a.txt"), "shown").expect("write");
    std::fs::write(unseen.path().join("b.txt"), "unseen").expect("write");
    let (sh, un) = (shown.path().display(), unseen.path().display());
    let h = with_commands(
        vec![run(&format!(
            "cat {sh}/a.txt; echo; cat {un}/b.txt 2>/dev/null || echo not-there; ls /root 2>/dev/null || echo no-home; cat seed.txt"
        ))],
        CommandsConfig {
            profile: Some("narrow".into()),
            ..everything_allowed()
        },
        vec![(
            "narrow",
            ProfileConfig {
                read: Some(vec![shown.path().display().to_string()]),
                ..ProfileConfig::default()
            },
        )],
        SecretStore::isolated(),
    );
    h.ws.write("seed.txt", "workspace-visible\n");
    let (id, _) = h.run(&ScriptedUser::default(), "look around").await;
    let r = results(&h, &id);
    assert!(r[0].0.contains("shown\n"), "{}", r[0].0);
    assert!(
        r[0].0.contains("not-there") && !r[0].0.contains("unseen"),
        "{}",
        r[0].0
    );
    assert!(r[0].0.contains("workspace-visible"), "{}", r[0].0);
}

/// A subtask cannot widen its commands: its parent runs under an intent
/// whose profile is `read-only`; the child selects an intent naming
/// `workspace`, yet its command still runs read-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subtask_never_runs_commands_under_a_wider_profile() {
    let script = json!({
        "turns": [
            turn("", vec![call("select_active_intent", json!({"intent_id": "INT-001"}))]),
            turn("", vec![call("new_task", json!({"mode": "code", "message": "CHILD: touch a file"}))]),
            complete("done")
        ],
        "tasks": [{"message": "CHILD: touch a file", "turns": [
            turn("", vec![call("select_active_intent", json!({"intent_id": "INT-002"}))]),
            run("touch out/child.txt; echo rc=$?"),
            complete("child done")
        ]}]
    });
    let mut h = scripted_harness(script, ApprovalPolicy::yes());
    h.commands = Some((
        everything_allowed(),
        BTreeMap::new(),
        SecretStore::isolated(),
    ));
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-001, name: Look, status: IN_PROGRESS, owned_scope: [\"out/**\"], command_profile: read-only}\n  \
         - {id: INT-002, name: Wider, status: IN_PROGRESS, owned_scope: [\"out/**\"], command_profile: workspace}\n",
    );
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "delegate")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let child = h.store().children(&id).expect("children")[0].id.clone();
    let r = results(&h, &child);
    let cmd = r
        .iter()
        .find(|(t, _)| t.contains("touch out/child.txt"))
        .expect("the command ran");
    assert!(
        cmd.0.contains("profile read-only") && cmd.0.contains("rc=1"),
        "{}",
        cmd.0
    );
    assert!(!h.ws.path().join("out/child.txt").exists());
}
