//! Crash safety: `roost run` is killed with SIGKILL at pseudo-random points,
//! many times. After each kill the history in SQLite is valid, everything
//! the run acknowledged (printed as an event) is in it, and `roost resume`
//! finishes the task with every tool_use answered in order.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use roost_core::llm::{ContentBlock, Role};
use roost_core::store::Store;
use roost_core::task::{TaskOutcome, TaskStatus};

/// Kills that must land while the task is running.
const WANTED: usize = 22;
/// Attempts before giving up.
const MAX_RUNS: usize = 40;

fn repo() -> PathBuf {
    // This test belongs to host/cli.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn roost(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_roost"));
    c.arg("--data-dir")
        .arg(data)
        .env("ROOST_CONFIG", "/dev/null");
    c
}

/// Deterministic pseudo-random points in (0.05, 0.95) of a run (xorshift),
/// so a failure replays.
fn fractions() -> impl Iterator<Item = f64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        0.05 + 0.9 * ((x % 10_000) as f64 / 10_000.0)
    })
}

/// Start `cmd` (a `roost … --json` run), SIGKILL it after `delay`, and
/// return the events it printed. A run that ends sooner shortens `span`
/// (the machine got faster), so later kills aim inside a run.
fn kill_after(cmd: &mut Command, delay: Duration, span: &mut Duration) -> Vec<serde_json::Value> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<serde_json::Value>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let start = Instant::now();
    while start.elapsed() < delay {
        if child.try_wait().expect("wait").is_some() {
            *span = (*span).min(start.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    let _ = reader.join();
    rx.try_iter().collect()
}

/// Every task of `tasks` the store says completed or failed has that
/// ending in its event log, whatever instant the kill of run `n` hit.
fn assert_ended_in_log(data: &Path, tasks: &[roost_core::store::TaskRecord], n: usize) {
    let records = roost_core::engine::Records::open(&roost_core::store::StoreLocation::File(
        Store::default_path(data),
    ))
    .expect("records");
    for t in tasks {
        let ended = match t.status {
            TaskStatus::Completed => records
                .outcome(&t.id)
                .expect("outcome")
                .is_some_and(|o| matches!(o, TaskOutcome::Completed { .. })),
            TaskStatus::Failed => records
                .outcome(&t.id)
                .expect("outcome")
                .is_some_and(|o| matches!(o, TaskOutcome::Failed { .. })),
            _ => continue,
        };
        assert!(
            ended,
            "run {n}: task {} is {:?} in the store but its log never says how it ended",
            t.id, t.status
        );
    }
}

fn tool_results(store: &Store, id: &str) -> Vec<String> {
    store
        .load_api(id, true)
        .expect("history loads after a crash")
        .into_iter()
        .flat_map(|m| m.message.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id),
            _ => None,
        })
        .collect()
}

fn assert_paired(store: &Store, id: &str) {
    let h = store.load_api(id, true).expect("history");
    for (i, m) in h.iter().enumerate() {
        let uses: Vec<&str> = m.message.tool_use_ids().collect();
        if m.message.role == Role::Assistant && !uses.is_empty() {
            let answered: Vec<&str> = h[i + 1]
                .message
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                uses, answered,
                "task {id}: message {} not answered in order",
                m.seq
            );
        }
    }
}

#[test]
fn sigkill_at_random_points_loses_nothing_and_resume_finishes() {
    let script = repo().join("tests/fixtures/example/crash-script.json");
    let mut killed_mid_task = 0;
    // One data dir for all runs (each run is its own task), warmed so runs
    // start in milliseconds and the kills land inside the task.
    let shared = tempfile::tempdir().expect("tempdir");
    let data = shared.path().join("data");
    let warm = roost(&data)
        .args(["tool", "list"])
        .output()
        .expect("warm-up");
    assert!(warm.status.success());
    // How long an undisturbed run takes here; kills land inside it.
    let ws0 = shared.path().join("ws0");
    std::fs::create_dir_all(ws0.join("out")).expect("mkdir");
    let mut span = Duration::MAX;
    for _ in 0..2 {
        let t0 = Instant::now();
        let full = roost(&data)
            .args(["run", "warm", "--yes", "--json", "--workspace"])
            .arg(&ws0)
            .arg("--script")
            .arg(&script)
            .output()
            .expect("runs");
        assert!(
            full.status.success(),
            "{}",
            String::from_utf8_lossy(&full.stderr)
        );
        span = span.min(t0.elapsed());
    }
    for (run, frac) in fractions().take(MAX_RUNS).enumerate() {
        if killed_mid_task >= WANTED {
            break;
        }
        let delay = span.mul_f64(frac);
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("out")).expect("mkdir");
        let mut cmd = roost(&data);
        cmd.args(["run", "write a, b and c", "--yes", "--json", "--workspace"])
            .arg(&ws)
            .arg("--script")
            .arg(&script);
        let events = kill_after(&mut cmd, delay, &mut span);

        eprintln!(
            "run {run}: killed after {delay:?} of {span:?}, {} events",
            events.len()
        );
        let Some(id) = events
            .iter()
            .find_map(|e| e["task_id"].as_str().map(str::to_owned))
        else {
            continue; // killed before the task was announced
        };
        let store = Store::open(&Store::default_path(&data)).expect("store opens after a crash");
        let task = store.get_task(&id).expect("an announced task exists");

        // Everything acknowledged is durable.
        let finals = events
            .iter()
            .filter(|e| e["event"] == "message_final")
            .count();
        let assistant = store
            .load_api(&id, true)
            .expect("history")
            .iter()
            .filter(|m| m.message.role == Role::Assistant)
            .count();
        assert!(
            assistant >= finals,
            "run {run}: {finals} replies announced, {assistant} stored"
        );
        let results = tool_results(&store, &id);
        for e in events.iter().filter(|e| e["event"] == "tool_call_result") {
            let call = e["id"].as_str().expect("id");
            assert!(
                results.iter().any(|r| r == call),
                "run {run}: result of {call} was announced but lost"
            );
        }
        assert_ended_in_log(&data, std::slice::from_ref(&task), run);
        drop(store);
        // Edits are atomic: a file the task writes is its old content or
        // its new one after any kill, never empty or torn.
        for name in ["a.txt", "b.txt", "c.txt"] {
            if let Ok(text) = std::fs::read_to_string(ws.join("out").join(name)) {
                assert!(
                    !text.is_empty() && text.ends_with('\n'),
                    "run {run} (killed after {delay:?}): out/{name} is torn: {text:?}"
                );
            }
        }

        if task.status == TaskStatus::Completed {
            continue;
        }
        killed_mid_task += 1;
        // No process runs it any more: the listing says so.
        if matches!(
            task.status,
            TaskStatus::Running | TaskStatus::WaitingForApproval | TaskStatus::WaitingForInput
        ) {
            let o = roost(&data)
                .args(["history", "list"])
                .output()
                .expect("history runs");
            let listing = String::from_utf8_lossy(&o.stdout);
            let line = listing
                .lines()
                .find(|l| l.starts_with(&id))
                .unwrap_or_default()
                .to_owned();
            assert!(line.contains("interrupted"), "run {run}: {line}");
        }
        let o = roost(&data)
            .args(["resume", &id, "--yes", "--json", "--script"])
            .arg(&script)
            .output()
            .expect("resume runs");
        assert!(
            o.status.success(),
            "run {run} (killed after {delay:?}): resume failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let store = Store::open(&Store::default_path(&data)).expect("store");
        assert_eq!(
            store.get_task(&id).expect("task").status,
            TaskStatus::Completed,
            "run {run}"
        );
        assert_paired(&store, &id);
        // A kill in the middle of an atomic edit leaves its temporary file;
        // the resume removed it: no debris in the workspace.
        let debris: Vec<String> = roost_tests::tree_hash(&ws)
            .into_keys()
            .filter(|k| k.contains(".roost-") && k.ends_with(".tmp"))
            .collect();
        assert!(debris.is_empty(), "run {run}: left behind {debris:?}");
    }
    assert!(
        killed_mid_task >= 20,
        "only {killed_mid_task} kills landed mid-task in {MAX_RUNS} runs; the harness needs at least 20"
    );
}

/// Ctrl-C (SIGINT) aborts cleanly: exit 130, status aborted, history kept
/// with every tool_use answered, and the task resumes to completion.
#[test]
fn ctrl_c_aborts_cleanly_and_the_task_resumes() {
    let script = repo().join("tests/fixtures/example/crash-script.json");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("out")).expect("mkdir");
    assert!(
        roost(&data)
            .args(["tool", "list"])
            .output()
            .expect("warm-up")
            .status
            .success()
    );
    let mut child = roost(&data)
        .args(["run", "write a, b and c", "--yes", "--json", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    // Wait for the second tool result, then interrupt.
    let mut id = None;
    let mut results = 0;
    for line in lines.by_ref() {
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        if let Some(t) = v["task_id"].as_str() {
            id = Some(t.to_owned());
        }
        if v["event"] == "tool_call_result" {
            results += 1;
            if results == 2 {
                break;
            }
        }
    }
    let id = id.expect("task announced");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let rest: Vec<String> = lines.collect();
    let exit = child.wait().expect("wait");
    assert_eq!(exit.code(), Some(130), "exit code after Ctrl-C");
    assert!(
        rest.iter().any(|l| l.contains("\"aborted\"")),
        "an aborted event was printed: {rest:?}"
    );
    let store = Store::open(&Store::default_path(&data)).expect("store");
    assert_eq!(
        store.get_task(&id).expect("task").status,
        TaskStatus::Aborted
    );
    assert_paired(&store, &id);
    drop(store);
    let o = roost(&data)
        .args(["resume", &id, "--yes", "--script"])
        .arg(&script)
        .output()
        .expect("resume");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let store = Store::open(&Store::default_path(&data)).expect("store");
    assert_eq!(
        store.get_task(&id).expect("task").status,
        TaskStatus::Completed
    );
}

/// Kills in a tree: an orchestrator runs a parallel group of three
/// children (two at a time), each writing two files, and `roost run` is
/// SIGKILLed at pseudo-random points until twenty kills landed inside the
/// tree. After each: everything acknowledged, by any task of the tree, is
/// durable; `roost resume <root>` picks the whole tree up — the group and
/// its children, started or not — and completes it; every child exists
/// once, every file is written, and a child that had completed before
/// the kill is not run again.
#[test]
fn sigkill_in_a_tree_of_subtasks_loses_nothing_and_resume_completes_it() {
    let script = repo().join("tests/fixtures/example/tree-crash-script.json");
    let shared = tempfile::tempdir().expect("tempdir");
    let data = shared.path().join("data");
    let run = |ws: &Path| {
        let mut c = roost(&data);
        c.args([
            "run",
            "three parts",
            "--mode",
            "orchestrator",
            "--yes",
            "--json",
        ])
        .arg("--workspace")
        .arg(ws)
        .arg("--script")
        .arg(&script);
        c
    };
    // An undisturbed run, for its span (and to warm the data dir).
    let mut span = Duration::MAX;
    for i in 0..2 {
        let ws = shared.path().join(format!("warm{i}"));
        std::fs::create_dir_all(&ws).expect("mkdir");
        let t0 = Instant::now();
        let full = run(&ws).output().expect("runs");
        assert!(
            full.status.success(),
            "{}{}",
            String::from_utf8_lossy(&full.stdout),
            String::from_utf8_lossy(&full.stderr)
        );
        span = span.min(t0.elapsed());
    }
    let mut landed = 0;
    for (n, frac) in fractions().take(MAX_RUNS).enumerate() {
        if landed >= 20 {
            break;
        }
        let delay = span.mul_f64(frac);
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let events = kill_after(&mut run(&ws), delay, &mut span);
        let Some(root) = events
            .iter()
            .find_map(|e| e["task_id"].as_str().map(str::to_owned))
        else {
            continue;
        };
        let store = Store::open(&Store::default_path(&data)).expect("store opens after a crash");
        let task = store.get_task(&root).expect("an announced task exists");
        // Everything acknowledged, by any task of the tree, is durable.
        for e in events.iter().filter(|e| e["event"] == "tool_call_result") {
            let (Some(call), Some(owner)) = (e["id"].as_str(), e["task_id"].as_str()) else {
                continue;
            };
            assert!(
                tool_results(&store, owner).iter().any(|r| r == call),
                "run {n}: result of {call} of {owner} was announced but lost"
            );
        }
        // A task the store says completed has its ending in its log (the
        // status and the ending are one step: a parent waiting on a child
        // reads the ending).
        let tree = store.tree(&root).expect("tree");
        assert_ended_in_log(&data, &tree, n);
        if task.status == TaskStatus::Completed {
            continue;
        }
        let before = store.children(&root).expect("children");
        if before.is_empty() {
            // Killed before the tree grew: not a kill inside the tree.
            continue;
        }
        landed += 1;
        let done_before: Vec<(String, usize)> = before
            .iter()
            .filter(|c| c.status == TaskStatus::Completed)
            .map(|c| {
                let replies = store.load_api(&c.id, true).expect("history").len();
                (c.id.clone(), replies)
            })
            .collect();
        drop(store);
        let o = roost(&data)
            .args(["resume", &root, "--yes", "--json", "--script"])
            .arg(&script)
            .output()
            .expect("resume runs");
        assert!(
            o.status.success(),
            "run {n} (killed after {delay:?}): resume failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let store = Store::open(&Store::default_path(&data)).expect("store");
        assert_eq!(
            store.get_task(&root).expect("root").status,
            TaskStatus::Completed,
            "run {n}"
        );
        assert_paired(&store, &root);
        let kids = store.children(&root).expect("children");
        assert_eq!(kids.len(), 3, "run {n}: every child exists once");
        for c in &kids {
            let ui = store.load_ui(&c.id).expect("ui");
            let last: Vec<String> = ui
                .iter()
                .rev()
                .take(4)
                .map(|m| format!("{}: {}", m.subtype, m.text))
                .collect();
            assert_eq!(
                c.status,
                TaskStatus::Completed,
                "run {n}: {} {last:#?}",
                c.prompt
            );
            assert_paired(&store, &c.id);
        }
        for (id, replies) in done_before {
            let now = store.load_api(&id, true).expect("history").len();
            assert_eq!(now, replies, "run {n}: finished child {id} was run again");
        }
        // Every write a child was told succeeded is on disk, whole; one cut
        // off by the kill was answered "interrupted" (the model decides),
        // and its file is whole or absent, never torn.
        for c in &kids {
            let history = store.load_api(&c.id, true).expect("history");
            let blocks: Vec<ContentBlock> = history
                .into_iter()
                .flat_map(|m| m.message.content)
                .collect();
            for b in &blocks {
                let ContentBlock::ToolUse { id, name, input } = b else {
                    continue;
                };
                if name != "write_to_file" {
                    continue;
                }
                let path = input["path"].as_str().expect("path");
                let content = input["content"].as_str().expect("content");
                let ok = blocks.iter().any(|r| {
                    matches!(r, ContentBlock::ToolResult { tool_use_id, is_error: false, .. } if tool_use_id == id)
                });
                let on_disk = std::fs::read_to_string(ws.join(path)).ok();
                if ok {
                    assert_eq!(on_disk.as_deref(), Some(content), "run {n}: {path}");
                } else if let Some(text) = on_disk {
                    assert_eq!(text, content, "run {n}: {path} is torn");
                }
            }
        }
        let groups = store.groups_of(&root).expect("groups");
        assert_eq!(groups.len(), 1, "run {n}: one group: {groups:#?}");
        assert_eq!(
            groups[0].status,
            roost_protocol::GroupStatus::Completed,
            "run {n}: {groups:#?}"
        );
    }
    assert!(
        landed >= 20,
        "only {landed} kills landed inside the tree in {MAX_RUNS} runs; the test needs 20"
    );
}
