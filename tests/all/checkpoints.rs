//! Checkpoints end to end: a task edits with `apply_diff`, a command
//! deletes one file and makes another, the plugin writes a third; each
//! turn's first change took a checkpoint (and a turn whose workspace is
//! as the last checkpoint left it takes none); restoring the first brings
//! the workspace back byte for byte — what the command did included — and
//! the conversation to that turn; a file someone else changed since is a
//! conflict, left alone unless forced; the restore is in the history and
//! the trace; and `roost checkpoints` does the same from the command line.
//!
//! And the shadow repository attacked through the binary, as root and as
//! an unprivileged user: FIFOs named `.gitignore`/`.gitattributes` never
//! hang a task, a `.gitignore` cannot pull what Roost keeps out into a
//! checkpoint (nor `checkpoints diff` print it), and a restore brings
//! symlinks back as symlinks and files with their own modes.

use std::collections::BTreeMap;
use std::path::Path;

use roost_core::config::SecretStore;
use roost_core::store::Store;
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_protocol::RestoreMode;
use roost_tests::harness::{Harness, call, complete, scripted_harness, turn};
use roost_tests::identity::{Identity, NOBODY, chown_tree, identities, runnable_by_anyone};
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
        // Commands that may write (so they take a checkpoint first) and
        // change nothing; a read-only one (`true`) would take none.
        turn("Checking.", vec![call("execute_command", json!({"command": "mkdir -p sub"}))]),
        turn("Checking again.", vec![call("execute_command", json!({"command": "mkdir -p sub"}))]),
        complete("done")
    ]})
}

fn harness() -> Harness {
    let mut h = scripted_harness(script(), ApprovalPolicy::yes());
    h.commands = Some((
        crate::commands::everything_allowed(),
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

/// A workspace, a canary beside it and a data dir, driven through the
/// `roost` binary with commands allowed (`--allow-commands`, every
/// command line) as `who`: the attacks of issue 43 on the shadow
/// repository.
struct Cli {
    dir: tempfile::TempDir,
    who: Identity,
}

/// Longest a scripted run may take before the test calls it hung.
const RUN_BOUND: std::time::Duration = std::time::Duration::from_secs(180);

impl Cli {
    fn new(who: Identity) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["data", "ws", "canary", "home"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        std::fs::write(dir.path().join("canary/secret.txt"), "canary secret\n").expect("canary");
        std::fs::write(
            dir.path().join("data/config.toml"),
            "[commands]\nallowed_commands = [\"*\"]\n",
        )
        .expect("config");
        Self { dir, who }
    }

    fn ws(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    fn data(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    fn canary(&self) -> std::path::PathBuf {
        self.dir.path().join("canary")
    }

    /// `roost` as `who`, everything the test made so far handed to it.
    fn roost(&self) -> std::process::Command {
        if self.who == Identity::Nobody {
            chown_tree(self.dir.path(), NOBODY);
        }
        let mut c = self
            .who
            .command(&runnable_by_anyone(Path::new(env!("CARGO_BIN_EXE_roost"))));
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.dir.path().join("home"))
            .env("ROOST_CONFIG", self.data().join("config.toml"))
            .arg("--data-dir")
            .arg(self.data());
        c
    }

    /// `roost ARGS`: exit code, stdout, stderr.
    fn cmd(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = self.roost().args(args).output().expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Run the scripted task `turns` to its end and return its id and
    /// what it printed. A run still going after [`RUN_BOUND`] is killed,
    /// each FIFO of `fifos` opened (so no git left behind stays blocked on
    /// one) and removed, and the test fails.
    fn run(&self, turns: Value, fifos: &[std::path::PathBuf]) -> (String, String) {
        use std::process::Stdio;
        let script = self.dir.path().join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
        let child = self
            .roost()
            .args(["run", "work", "--yes", "--allow-commands", "--workspace"])
            .arg(self.ws())
            .arg("--script")
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn roost");
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = match rx.recv_timeout(RUN_BOUND) {
            Ok(out) => out.expect("roost runs"),
            Err(_) => {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                for f in fifos {
                    // Read-write never blocks on a FIFO, and wakes a reader.
                    let _ = std::fs::OpenOptions::new().read(true).write(true).open(f);
                    let _ = std::fs::remove_file(f);
                }
                panic!("the task hung: still running after {RUN_BOUND:?}");
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "as {:?}: {stdout}{}",
            self.who,
            String::from_utf8_lossy(&out.stderr)
        );
        let store = Store::open(&Store::default_path(&self.data())).expect("store");
        let id = store.list_tasks(1).expect("tasks")[0].id.clone();
        (id, stdout)
    }

    /// Every object of every shadow repository, as `git cat-file` prints
    /// it (reachable or not, loose or packed).
    fn shadow_objects(&self) -> Vec<u8> {
        let mut all = Vec::new();
        let root = self.data().join("checkpoints");
        for e in std::fs::read_dir(&root).expect("checkpoints dir").flatten() {
            let out = std::process::Command::new("git")
                .arg("--git-dir")
                .arg(e.path())
                .args(["cat-file", "--batch-all-objects", "--batch"])
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .expect("git cat-file");
            assert!(out.status.success(), "{out:?}");
            all.extend(out.stdout);
        }
        assert!(
            !all.is_empty(),
            "no shadow repository under {}",
            root.display()
        );
        all
    }
}

fn write_call(path: &str, content: &str) -> Value {
    turn(
        "",
        vec![call(
            "write_to_file",
            json!({"path": path, "content": content}),
        )],
    )
}

fn command_turn(line: &str) -> Value {
    turn(
        "",
        vec![call("execute_command", json!({ "command": line }))],
    )
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Issue 43, item 9: FIFOs named `.gitignore` and `.gitattributes` (at
/// the root and in a subdirectory, planted before the task, and one
/// planted by the task's own command) never hang it: every turn still
/// takes its checkpoint, a restore still brings the files back, and
/// neither the FIFOs nor the canary outside are touched.
#[test]
pub(crate) fn fifos_named_like_git_files_never_hang_a_task() {
    for who in identities() {
        fifos_named_like_git_files_never_hang_a_task_as(who);
    }
}

fn fifos_named_like_git_files_never_hang_a_task_as(who: Identity) {
    let cli = Cli::new(who);
    let ws = cli.ws();
    std::fs::write(ws.join("a.txt"), "original\n").expect("write");
    std::fs::create_dir_all(ws.join("src")).expect("mkdir");
    std::fs::create_dir_all(ws.join("lib")).expect("mkdir");
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").expect("write");
    let fifos = [
        ws.join(".gitignore"),
        ws.join("src/.gitattributes"),
        ws.join("lib/.gitignore"),
    ];
    roost_tests::mkfifo(&fifos[0]);
    roost_tests::mkfifo(&fifos[1]);
    let canary = roost_tests::tree_hash(&cli.canary());
    let (id, out) = cli.run(
        json!([
            write_call("a.txt", "changed\n"),
            command_turn("mkfifo lib/.gitignore && echo made > lib/x.txt"),
            write_call("src/main.rs", "fn main() { println!(); }\n"),
            complete("done"),
        ]),
        &fifos,
    );
    for n in 1..=3 {
        assert!(
            out.contains(&format!("◆ checkpoint {n} (turn {n})")),
            "{out}"
        );
    }
    let (code, out, err) = cli.cmd(&["checkpoints", "restore", &id, "1", "--files-only"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).expect("a"),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("src/main.rs")).expect("main"),
        "fn main() {}\n"
    );
    assert!(!ws.join("lib/x.txt").exists(), "{out}");
    for f in &fifos {
        use std::os::unix::fs::FileTypeExt;
        let ft = std::fs::symlink_metadata(f)
            .expect("still there")
            .file_type();
        assert!(ft.is_fifo(), "{} is still a FIFO", f.display());
    }
    assert_eq!(roost_tests::tree_hash(&cli.canary()), canary);
}

/// Issue 43, item 10: a workspace `.gitignore` whose `!` lines name what
/// Roost keeps out of checkpoints (a `.rooignore`d secret, a file over
/// the size cap, `.orchestration/`) pulls none of it into the shadow
/// repository — not a tree entry, not a blob — and `roost checkpoints
/// diff` prints no secret.
#[test]
pub(crate) fn a_gitignore_cannot_pull_what_roost_excludes_into_a_checkpoint() {
    for who in identities() {
        a_gitignore_cannot_pull_what_roost_excludes_into_a_checkpoint_as(who);
    }
}

fn a_gitignore_cannot_pull_what_roost_excludes_into_a_checkpoint_as(who: Identity) {
    use std::io::Write;
    let cli = Cli::new(who);
    let ws = cli.ws();
    std::fs::write(ws.join("a.txt"), "alpha\n").expect("write");
    std::fs::write(
        ws.join(".gitignore"),
        "!.env\n!big.bin\n!.orchestration/\n!.orchestration/**\n",
    )
    .expect("write");
    std::fs::write(ws.join(".rooignore"), ".env\n").expect("write");
    std::fs::write(ws.join(".env"), "API_KEY=sk-first-checkpoint-secret\n").expect("write");
    // Over the 32 MiB cap (sparse), with a marker at the start.
    let mut big = std::fs::File::create(ws.join("big.bin")).expect("big");
    big.write_all(b"big-file-marker-7f3a").expect("marker");
    big.set_len(33 << 20).expect("grow");
    drop(big);
    let canary = roost_tests::tree_hash(&cli.canary());
    let (id, out) = cli.run(
        json!([write_call("a.txt", "beta\n"), complete("done")]),
        &[],
    );
    assert!(out.contains("◆ checkpoint 1 (turn 1)"), "{out}");
    // Since: the secret rotated, Roost's own files written.
    std::fs::write(ws.join(".env"), "API_KEY=sk-rotated-secret\n").expect("write");
    std::fs::create_dir_all(ws.join(".orchestration")).expect("mkdir");
    std::fs::write(
        ws.join(".orchestration/agent_trace.jsonl"),
        "{\"marker\":\"orchestration-marker-5c1d\"}\n",
    )
    .expect("write");
    let (code, diff, err) = cli.cmd(&["checkpoints", "diff", &id, "1"]);
    assert_eq!(code, Some(0), "{diff}{err}");
    assert!(diff.contains("-alpha") && diff.contains("+beta"), "{diff}");
    for secret in [
        "sk-first-checkpoint-secret",
        "sk-rotated-secret",
        "orchestration-marker-5c1d",
        "big-file-marker-7f3a",
        ".env",
        "big.bin",
        ".orchestration",
    ] {
        assert!(!diff.contains(secret), "the diff shows {secret}:\n{diff}");
    }
    let objects = cli.shadow_objects();
    for secret in [
        &b"sk-first-checkpoint-secret"[..],
        b"sk-rotated-secret",
        b"orchestration-marker-5c1d",
        b"big-file-marker-7f3a",
        // Tree entries: `<mode> <name>\0`.
        b" .env\0",
        b" big.bin\0",
        b" .orchestration\0",
    ] {
        assert!(
            !contains(&objects, secret),
            "the shadow repository holds {}",
            String::from_utf8_lossy(secret)
        );
    }
    assert!(contains(&objects, b"alpha") && contains(&objects, b" a.txt\0"));
    assert_eq!(roost_tests::tree_hash(&cli.canary()), canary);
}

/// Issue 43, item 11: a command removes two symlinks (one inside the
/// workspace, one to the canary outside) and changes a file's mode; the
/// restore brings the links back as links with their targets (the one
/// outside is not followed: the canary is untouched) and the file with
/// its own mode, not a default one.
#[test]
pub(crate) fn a_restore_brings_back_symlinks_as_symlinks_and_keeps_modes() {
    for who in identities() {
        a_restore_brings_back_symlinks_as_symlinks_and_keeps_modes_as(who);
    }
}

fn a_restore_brings_back_symlinks_as_symlinks_and_keeps_modes_as(who: Identity) {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let cli = Cli::new(who);
    let ws = cli.ws();
    std::fs::write(ws.join("a.txt"), "alpha\n").expect("write");
    std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
    symlink("../a.txt", ws.join("sub/link")).expect("link");
    let outside = cli.canary().join("secret.txt");
    symlink(&outside, ws.join("out-link")).expect("link");
    std::fs::write(ws.join("tool.sh"), "#!/bin/sh\necho hi\n").expect("write");
    std::fs::set_permissions(ws.join("tool.sh"), std::fs::Permissions::from_mode(0o640))
        .expect("chmod");
    let canary = roost_tests::tree_hash(&cli.canary());
    let before = roost_tests::tree_hash(&ws);
    let (id, _) = cli.run(
        json!([
            command_turn("rm sub/link out-link && chmod 0750 tool.sh"),
            complete("done"),
        ]),
        &[],
    );
    assert!(!ws.join("sub/link").exists() && ws.join("tool.sh").exists());
    let (code, out, err) = cli.cmd(&["checkpoints", "restore", &id, "1", "--files-only"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let link = std::fs::symlink_metadata(ws.join("sub/link")).expect("link back");
    assert!(link.file_type().is_symlink(), "{link:?}");
    assert_eq!(
        std::fs::read_link(ws.join("sub/link")).expect("target"),
        Path::new("../a.txt")
    );
    assert_eq!(
        std::fs::read_link(ws.join("out-link")).expect("target"),
        outside
    );
    assert_eq!(
        std::fs::metadata(ws.join("tool.sh"))
            .expect("tool")
            .permissions()
            .mode()
            & 0o7777,
        0o640
    );
    let mut after = roost_tests::tree_hash(&ws);
    after.retain(|k, _| !k.starts_with(".orchestration"));
    assert_eq!(after, before, "byte for byte, links and modes, as before");
    assert_eq!(roost_tests::tree_hash(&cli.canary()), canary);
}
