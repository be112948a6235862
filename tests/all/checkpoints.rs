//! Checkpoints end to end: a task edits with `apply_diff`, a command
//! deletes one file and makes another, the plugin writes a third; each
//! turn's first change took a checkpoint (and a turn whose workspace is
//! as the last checkpoint left it takes none); restoring the first brings
//! the workspace back byte for byte — what the command did included — and
//! the conversation to that turn; a file someone else changed since is a
//! conflict, left alone unless forced; the restore is in the history and
//! the trace; and `roost checkpoints` does the same from the command line.

use std::collections::BTreeMap;
use std::path::Path;

use roost_core::commands::CommandsConfig;
use roost_core::config::SecretStore;
use roost_core::store::Store;
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_protocol::RestoreMode;
use roost_tests::harness::{Harness, call, complete, scripted_harness, turn};
use roost_tests::user::ScriptedUser;
use serde_json::{Value, json};

/// Every file of the workspace (but Roost's own `.orchestration/`) with
/// its bytes: two equal maps are byte-for-byte the same tree.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(root)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            if rel.starts_with(".orchestration") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

fn script() -> Value {
    json!({"turns": [
        turn("Editing.", vec![call("apply_diff", json!({
            "path": "a.txt",
            "diff": "<<<<<<< SEARCH\n:start_line:1\n-------\nalpha\n=======\nALPHA\n>>>>>>> REPLACE"
        }))]),
        turn("Shuffling.", vec![call("execute_command", json!({"command": "rm del.txt && echo made > made.txt"}))]),
        turn("Writing.", vec![call("write_to_file", json!({"path": "third.txt", "content": "third\n"}))]),
        turn("Checking.", vec![call("execute_command", json!({"command": "true"}))]),
        turn("Checking again.", vec![call("execute_command", json!({"command": "true"}))]),
        complete("done")
    ]})
}

fn harness() -> Harness {
    let mut h = scripted_harness(script(), ApprovalPolicy::yes());
    h.commands = Some((
        CommandsConfig {
            enabled: true,
            allowed_commands: vec!["*".into()],
            ..CommandsConfig::default()
        },
        BTreeMap::new(),
        SecretStore::isolated(),
    ));
    h.ws.write("a.txt", "alpha\n");
    h.ws.write("del.txt", "delete me\n");
    h.ws.write("sub/keep.bin", "\u{0}\u{1}binary\u{ff}");
    h
}

/// The whole story, through the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_brings_back_every_change_commands_included() {
    let h = harness();
    let original = tree(&h.ws.path());
    let (id, outcome) = h.run(&ScriptedUser::default(), "change things").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let changed = tree(&h.ws.path());
    assert_ne!(changed, original);
    assert!(!h.ws.path().join("del.txt").exists());
    // Turns 1–4 each took one; turn 5 found the workspace as turn 4's
    // checkpoint left it and took none.
    let (_, list) = h.engine().checkpoints(&id).expect("list");
    assert_eq!(
        list.iter().map(|c| (c.id, c.turn)).collect::<Vec<_>>(),
        vec![(1, 1), (2, 2), (3, 3), (4, 4)],
        "{list:?}"
    );
    let diff = h.engine().checkpoint_diff(&id, 1).await.expect("diff");
    assert!(diff.contains("-alpha") && diff.contains("+ALPHA"), "{diff}");
    assert!(
        diff.contains("del.txt") && diff.contains("made.txt") && diff.contains("third.txt"),
        "{diff}"
    );

    let api_before = h.store().load_api(&id, true).expect("api").len();
    let report = h
        .engine()
        .restore_checkpoint(&id, 1, RestoreMode::Both, false)
        .await
        .expect("restore");
    assert!(report.conflicts.is_empty(), "{report:?}");
    assert_eq!(
        tree(&h.ws.path()),
        original,
        "byte for byte, as before turn 1"
    );
    assert!(report.conversation);
    let api_after = h.store().load_api(&id, true).expect("api");
    assert!(api_after.len() < api_before);
    assert!(
        api_after
            .iter()
            .all(|m| m.message.role != roost_core::llm::Role::Assistant),
        "the conversation is back before the first reply"
    );
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(
        ui.iter()
            .any(|m| m.subtype == "checkpoint_restored" && m.text.contains("Restored checkpoint 1")),
        "{ui:?}"
    );
    // An unknown checkpoint is a clear error.
    let e = h
        .engine()
        .restore_checkpoint(&id, 99, RestoreMode::FilesOnly, false)
        .await
        .expect_err("no such checkpoint");
    assert!(e.to_string().contains("has no checkpoint 99"), "{e}");
}

/// Someone else edits a file the task changed: the restore reports it and
/// leaves it alone, restores the rest; forced, it overwrites it too. Only
/// files: the conversation stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_by_someone_else_is_a_conflict() {
    let h = harness();
    let original = tree(&h.ws.path());
    let (id, _) = h.run(&ScriptedUser::default(), "change things").await;
    h.ws.write("a.txt", "edited by a person\n");
    let api_before = h.store().load_api(&id, true).expect("api").len();
    let report = h
        .engine()
        .restore_checkpoint(&id, 1, RestoreMode::FilesOnly, false)
        .await
        .expect("restore");
    assert_eq!(report.conflicts, vec!["a.txt".to_owned()]);
    assert!(!report.conversation);
    assert_eq!(
        h.store().load_api(&id, true).expect("api").len(),
        api_before
    );
    assert_eq!(h.ws.read("a.txt"), "edited by a person\n");
    assert_eq!(h.ws.read("del.txt"), "delete me\n");
    assert!(!h.ws.path().join("made.txt").exists() && !h.ws.path().join("third.txt").exists());
    // The person's edit now is what the task's view knows as restored:
    // forcing brings the checkpoint's version back.
    h.ws.write("a.txt", "edited again\n");
    let report = h
        .engine()
        .restore_checkpoint(&id, 1, RestoreMode::FilesOnly, true)
        .await
        .expect("forced");
    assert_eq!(tree(&h.ws.path()), original);
    assert!(
        report.restored.contains(&"a.txt".to_owned()) || report.conflicts.is_empty(),
        "{report:?}"
    );
}

/// Two tasks on one workspace keep their checkpoints apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_tasks_keep_their_checkpoints_apart() {
    let h = scripted_harness(
        json!({"turns": [
            turn("", vec![call("write_to_file", json!({"path": "one.txt", "content": "1\n"}))]),
            complete("one")
        ], "tasks": [{"message": "second", "turns": [
            turn("", vec![call("write_to_file", json!({"path": "two.txt", "content": "2\n"}))]),
            complete("two")
        ]}]}),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default();
    let (a, b) = tokio::join!(h.run(&user, "first"), h.run(&user, "second"));
    let (ida, idb) = (a.0, b.0);
    assert_eq!(h.engine().checkpoints(&ida).expect("a").1.len(), 1);
    assert_eq!(h.engine().checkpoints(&idb).expect("b").1.len(), 1);
    // Restoring the first task's checkpoint takes back only its write.
    h.engine()
        .restore_checkpoint(&ida, 1, RestoreMode::FilesOnly, false)
        .await
        .expect("restore a");
    assert!(!h.ws.path().join("one.txt").exists());
    assert_eq!(h.ws.read("two.txt"), "2\n");
}

/// `roost checkpoints list|diff|restore` on the command line.
#[test]
fn the_cli_lists_diffs_and_restores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::write(ws.join("a.txt"), "alpha\n").expect("write");
    let script_path = dir.path().join("script.json");
    std::fs::write(
        &script_path,
        json!({"turns": [
            {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "a.txt", "content": "beta\n"}}]},
            {"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "ok"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    let roost = |args: &[&str]| {
        let out = crate::cli::roost(&data).args(args).output().expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let ws_s = ws.to_string_lossy().into_owned();
    let sp = script_path.to_string_lossy().into_owned();
    let (code, out, err) = roost(&[
        "run",
        "edit",
        "--yes",
        "--workspace",
        &ws_s,
        "--script",
        &sp,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("◆ checkpoint 1 (turn 1)"), "{out}");
    let store = Store::open(&Store::default_path(&data)).expect("store");
    let id = store.list_tasks(1).expect("tasks")[0].id.clone();
    drop(store);
    let (code, out, _) = roost(&["checkpoints", "list", &id, "--json"]);
    assert_eq!(code, Some(0));
    let first: Value = serde_json::from_str(out.lines().next().expect("a line")).expect("json");
    assert_eq!(
        (first["id"].as_u64(), first["turn"].as_u64()),
        (Some(1), Some(1)),
        "{out}"
    );
    let (_, out, _) = roost(&["checkpoints", "diff", &id, "1"]);
    assert!(out.contains("-alpha") && out.contains("+beta"), "{out}");
    std::fs::write(ws.join("a.txt"), "someone else\n").expect("write");
    let (code, out, _) = roost(&["checkpoints", "restore", &id, "1", "--files-only"]);
    assert_eq!(code, Some(3), "a conflict: {out}");
    assert!(out.contains("conflict a.txt"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).expect("read"),
        "someone else\n"
    );
    let (code, out, _) = roost(&[
        "checkpoints",
        "restore",
        &id,
        "1",
        "--files-only",
        "--force",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).expect("read"),
        "alpha\n"
    );
    let (code, _, err) = roost(&["checkpoints", "diff", &id, "7"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("has no checkpoint 7"), "{err}");
}

/// A hostile workspace: `.gitignore` and `.rooignore` linked to
/// `/dev/zero`, a FIFO, a link to a file outside. A checkpoint is still
/// taken (nothing blocks, nothing is read through a link), the restore
/// puts back only what the task changed, and the outside file is never
/// touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_workspaces_neither_hang_nor_leak_a_checkpoint() {
    use std::os::unix::fs::symlink;
    let h = scripted_harness(
        json!({"turns": [
            turn("", vec![call("write_to_file", json!({"path": "a.txt", "content": "changed\n"}))]),
            complete("done")
        ]}),
        ApprovalPolicy::yes(),
    );
    let w = h.ws.path();
    h.ws.write("a.txt", "original\n");
    std::fs::write(h.ws.canary().join("secret.txt"), "outside").expect("canary");
    symlink("/dev/zero", w.join(".gitignore")).expect("link");
    symlink("/dev/zero", w.join(".rooignore")).expect("link");
    symlink(h.ws.canary().join("secret.txt"), w.join("outside-link")).expect("link");
    roost_tests::mkfifo(&w.join("pipe"));
    let (id, outcome) = h.run(&ScriptedUser::default(), "write").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(h.engine().checkpoints(&id).expect("list").1.len(), 1);
    let report = h
        .engine()
        .restore_checkpoint(&id, 1, RestoreMode::FilesOnly, false)
        .await
        .expect("restore");
    assert_eq!(report.restored, vec!["a.txt".to_owned()], "{report:?}");
    assert_eq!(h.ws.read("a.txt"), "original\n");
    assert_eq!(
        std::fs::read_to_string(h.ws.canary().join("secret.txt")).expect("read"),
        "outside"
    );
    assert!(
        std::fs::symlink_metadata(w.join("outside-link"))
            .expect("link")
            .file_type()
            .is_symlink()
    );
}
