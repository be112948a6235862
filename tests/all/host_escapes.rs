//! The host-side escapes a red team found, one test per class: the host's
//! own handling of workspace files (sidecars, snapshots, diffs, the trace,
//! the write guard's restore), authority files, globs, `.rooignore` path
//! forms, special files, unbounded host work and impostor tool names. Each
//! runs against real components (the hostile fixture, fs-tools) and full
//! scripted tasks, and hashes the workspace and the canary beside it before
//! and after: every case is denied or contained, the host survives, and
//! nothing outside the grant changes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use roost_core::task::Registry;
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_sandbox::capability::{Grant, Limits, RooIgnore};
use roost_sandbox::plugins::PluginEngine;
use roost_tests::harness::{Harness, call, complete, harness, trace_lines, turn};
use roost_tests::user::ScriptedUser;
use roost_tests::{engine, fixture_wasm, hostile_workspace, mkfifo, tree_hash};
use serde_json::{Value, json};

/// A harness on the hostile workspace with the hostile plugin loaded.
fn hostile_harness(turns: Vec<Value>) -> Harness {
    let mut h = harness(Value::Array(turns), ApprovalPolicy::yes());
    h.ws = hostile_workspace();
    h.add_plugin(
        engine()
            .load_file("hostile", &fixture_wasm("hostile"))
            .expect("hostile"),
    );
    h.config.max_turns = 50;
    h.config.repetition_limit = 50;
    h
}

fn attempt(case: &str) -> Value {
    turn("", vec![call("attempt", json!({ "case": case }))])
}

/// A turn that calls fs-tools' `write_to_file`.
fn write(path: &str, content: &str) -> Value {
    turn(
        "",
        vec![call(
            "write_to_file",
            json!({ "path": path, "content": content }),
        )],
    )
}

fn select(intent: &str) -> Value {
    turn(
        "",
        vec![call("select_active_intent", json!({ "intent_id": intent }))],
    )
}

fn intents(ws: &roost_tests::TestWorkspace, scope: &str) {
    ws.write(
        ".orchestration/active_intents.yaml",
        &format!(
            "active_intents:\n  - {{id: INT-001, name: Work, status: IN_PROGRESS, owned_scope: {scope}}}\n"
        ),
    );
}

/// Everything under the test root except the task store and the trace
/// (which the host appends to).
fn on_disk(root: &Path) -> BTreeMap<String, String> {
    tree_hash(root)
        .into_iter()
        .filter(|(k, _)| {
            !k.starts_with("data") && k != "workspace/.orchestration/agent_trace.jsonl"
        })
        .collect()
}

fn completed(outcome: &TaskOutcome) {
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
}

fn no_pwn() {
    assert!(!Path::new("/tmp/roost-hostile-pwned").exists());
}

/// Writes to `.git/` and `.orchestration/` are undone when intents are off
/// and the call may write the whole workspace.
#[tokio::test]
async fn authority_files_are_out_of_reach_with_intents_off() {
    let h = hostile_harness(vec![
        attempt("write_git_config"),
        attempt("add_git_hook"),
        attempt("control_write"),
        complete("done"),
    ]);
    std::fs::remove_dir_all(h.ws.path().join(".orchestration")).expect("intents off");
    h.ws.write("out/ok.txt", "before\n");
    let git_before = tree_hash(&h.ws.path().join(".git"));
    let (id, outcome) = h.run(&ScriptedUser::default(), "attack").await;
    completed(&outcome);
    assert_eq!(git_before, tree_hash(&h.ws.path().join(".git")));
    let r = h.results(&id);
    for (content, is_error) in &r[..2] {
        assert!(*is_error && content.contains("protected_path"), "{content}");
    }
    // An ordinary write elsewhere is kept: the guard is not a blanket undo.
    assert!(!r[2].1, "{}", r[2].0);
    assert_eq!(h.ws.read("out/ok.txt"), "pwned by hostile plugin\n");
    assert!(!h.ws.path().join(".orchestration").exists());
    no_pwn();
}

/// With intents on, not even `owned_scope: ["**"]` reaches the intents
/// file, the trace, AGENT.md or `.git/`; a declared path there is refused
/// before the call.
#[tokio::test]
async fn authority_files_are_out_of_reach_under_any_scope() {
    let h = hostile_harness(vec![
        select("INT-001"),
        attempt("write_git_config"),
        attempt("rewrite_intents"),
        attempt("replace_trace"),
        attempt("plant_agent_link"),
        attempt("plant_trace_link"),
        write(".orchestration/active_intents.yaml", "widened\n"),
        write("/workspace/.git/config", "x\n"),
        complete("done"),
    ]);
    intents(&h.ws, "[\"**\"]");
    let before = on_disk(h.ws.root());
    let (id, outcome) = h.run(&ScriptedUser::default(), "attack").await;
    completed(&outcome);
    assert_eq!(before, on_disk(h.ws.root()), "an authority file changed");
    let r = h.results(&id);
    for (content, is_error) in &r[1..6] {
        assert!(
            *is_error
                && content.contains("scope_violation")
                && content.contains(".git/, .orchestration/ or .rooignore"),
            "{content}"
        );
    }
    for (content, is_error) in &r[6..8] {
        assert!(
            *is_error && content.contains("which no tool may change"),
            "{content}"
        );
    }
    // The trace is still the host's: a regular file of valid lines.
    let meta = std::fs::symlink_metadata(h.ws.path().join(".orchestration/agent_trace.jsonl"))
        .expect("trace");
    assert!(meta.is_file());
    assert!(
        trace_lines(&h.ws.path())
            .iter()
            .any(|e| e["kind"] == "violation")
    );
    no_pwn();
}

/// Links planted in the workspace (by a plugin or anyone with write
/// access) never carry outside files, the host's environment or a device
/// into the system prompt, the intent context or the trace.
#[tokio::test]
async fn planted_links_never_reach_the_model_or_the_trace() {
    use std::os::unix::fs::symlink;
    let h = hostile_harness(vec![
        select("INT-001"),
        write("out/a.md", "hello\n"),
        complete("done"),
    ]);
    intents(&h.ws, "[\"out/**\"]");
    let w = h.ws.path();
    let canary = h.ws.canary();
    symlink(canary.join("secret.txt"), w.join("AGENTS.md")).expect("symlink");
    std::fs::create_dir_all(w.join(".roo/rules")).expect("mkdir");
    symlink("/proc/self/environ", w.join(".roo/rules/01-env.md")).expect("symlink");
    symlink("/dev/zero", w.join(".roo/rules/02-zero.md")).expect("symlink");
    mkfifo(&w.join(".roo/rules/03-fifo.md"));
    std::fs::write(w.join(".roo/rules/04-real.md"), "Use tabs.\n").expect("write");
    symlink("../../canary/secret.txt", w.join(".orchestration/AGENT.md")).expect("symlink");
    std::fs::remove_file(w.join(".orchestration/agent_trace.jsonl")).expect("rm");
    symlink(
        "../../canary/secret.txt",
        w.join(".orchestration/agent_trace.jsonl"),
    )
    .expect("symlink");
    let _ = std::fs::remove_file(w.join(".rooignore"));
    symlink("/dev/zero", w.join(".rooignore")).expect("symlink");
    let canary_before = tree_hash(&canary);

    let (id, outcome) = h.run(&ScriptedUser::default(), "work").await;
    completed(&outcome);
    let requests = serde_json::to_string(&h.transport.requests()).expect("json");
    assert!(
        !requests.contains("canary secret"),
        "an outside file reached the model"
    );
    assert!(
        !requests.contains("CARGO_MANIFEST_DIR"),
        "the host environment reached the model"
    );
    assert!(
        requests.contains("Use tabs."),
        "real rule files still count"
    );
    let r = h.results(&id);
    assert!(r[0].0.contains("agent_notes: (left out"), "{}", r[0].0);
    assert!(!r[1].1, "the in-scope write works: {}", r[1].0);
    assert_eq!(
        canary_before,
        tree_hash(&canary),
        "the trace went through a link"
    );
    // The refused trace append is shown, not only logged.
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(
        ui.iter()
            .any(|m| m.subtype == "error" && m.text.contains("agent_trace.jsonl")),
        "the failed trace append is not reported"
    );
}

/// `owned_scope: [src/*.rs]` does not reach `src/auth/session.rs` or
/// `src/new/deep/x.rs`: `*` never crosses `/`.
#[tokio::test]
async fn scope_globs_do_not_cross_slash() {
    let h = hostile_harness(vec![
        select("INT-001"),
        attempt("write_nested"),
        write("src/auth/session.rs", "// rewritten\n"),
        write("src/lib.rs", "// in scope\n"),
        complete("done"),
    ]);
    intents(&h.ws, "[\"src/*.rs\"]");
    let before = on_disk(h.ws.root());
    let (id, outcome) = h.run(&ScriptedUser::default(), "attack").await;
    completed(&outcome);
    let r = h.results(&id);
    assert!(r[1].1 && r[1].0.contains("scope_violation"), "{}", r[1].0);
    assert!(r[2].1 && r[2].0.contains("scope_violation"), "{}", r[2].0);
    assert!(!r[3].1, "{}", r[3].0);
    let mut after = on_disk(h.ws.root());
    assert!(after.remove("workspace/src/lib.rs").is_some());
    assert_eq!(before, after, "a path outside src/*.rs persisted");
}

/// A directory swapped for a symlink to outside the workspace is put back
/// through directory handles: nothing is created, changed or deleted
/// through the link.
#[tokio::test]
async fn a_swapped_directory_is_restored_without_following_the_link() {
    let h = hostile_harness(vec![
        select("INT-001"),
        attempt("swap_dir_for_link"),
        complete("done"),
    ]);
    intents(&h.ws, "[\"src/*.rs\"]");
    let before = on_disk(h.ws.root());
    let (id, outcome) = h.run(&ScriptedUser::default(), "attack").await;
    completed(&outcome);
    let r = h.results(&id);
    assert!(r[1].1 && r[1].0.contains("src/auth"), "{}", r[1].0);
    assert_eq!(
        before,
        on_disk(h.ws.root()),
        "the swap was not undone exactly"
    );
    assert!(
        std::fs::symlink_metadata(h.ws.path().join("src/auth"))
            .expect("restored")
            .is_dir()
    );
}

/// A tree deeper than the guard can walk is refused before the call (it
/// could not be restored); one the call creates is removed whole.
#[tokio::test]
async fn deep_trees_are_refused_or_removed() {
    let h = hostile_harness(vec![
        select("INT-001"),
        attempt("deep_chain"),
        write("out/notes.md", "x\n"),
        complete("done"),
    ]);
    intents(&h.ws, "[\"out/*.md\"]");
    let before = on_disk(h.ws.root());
    let (id, outcome) = h.run(&ScriptedUser::default(), "deep").await;
    completed(&outcome);
    let r = h.results(&id);
    assert!(r[1].1 && r[1].0.contains("out/deep"), "{}", r[1].0);
    let mut after = on_disk(h.ws.root());
    after.remove("workspace/out/notes.md");
    assert_eq!(before, after, "the deep chain persisted");

    // A chain already there, deeper than the guard's walk: refused.
    let h = hostile_harness(vec![
        select("INT-001"),
        write("out/notes.md", "x\n"),
        complete("done"),
    ]);
    intents(&h.ws, "[\"out/*.md\"]");
    let mut p = h.ws.path().join("out/old");
    for _ in 0..200 {
        p.push("d");
    }
    std::fs::create_dir_all(&p).expect("deep tree");
    let (id, outcome) = h.run(&ScriptedUser::default(), "deep").await;
    completed(&outcome);
    let r = h.results(&id);
    assert!(
        r[1].1 && r[1].0.contains("directory levels") && r[1].0.contains("owned_scope"),
        "{}",
        r[1].0
    );
    assert!(!h.ws.path().join("out/notes.md").exists(), "the call ran");
}

/// Every path form of an ignored file is refused to first-party tools:
/// `a/../secret`, `/workspace/secret`, the host path, an in-workspace
/// symlink; a path out of the workspace and a device are refused too.
#[tokio::test]
async fn rooignore_holds_for_every_path_form() {
    let h = hostile_harness(vec![
        turn(
            "",
            vec![
                call("read_file", json!({"path": "sub/../secret.env"})),
                call("read_file", json!({"path": "/workspace/secret.env"})),
                call("read_file", json!({"path": "alias"})),
                call(
                    "search_files",
                    json!({"path": "aliasdir", "regex": "TOKEN"}),
                ),
                call("read_file", json!({"path": "/dev/stdin"})),
                call("read_file", json!({"path": "../canary/secret.txt"})),
                call("read_file", json!({"path": "readme.txt"})),
                call("list_files", json!({"path": ".", "recursive": true})),
                call("search_files", json!({"path": ".", "regex": "TOKEN"})),
            ],
        ),
        complete("done"),
    ]);
    let w = h.ws.path();
    h.ws.write("secret.env", "TOKEN=abc\n");
    h.ws.write("secrets/key.env", "TOKEN=def\n");
    h.ws.write(".rooignore", "secret.env\nsecrets/\n");
    std::os::unix::fs::symlink("secret.env", w.join("alias")).expect("symlink");
    std::os::unix::fs::symlink("secrets", w.join("aliasdir")).expect("symlink");
    let host_form = w.canonicalize().expect("canon").join("secret.env");
    let (id, outcome) = h.run(&ScriptedUser::default(), "read").await;
    completed(&outcome);
    let r = h.results(&id);
    for (content, is_error) in &r[..3] {
        assert!(*is_error && content.contains(".rooignore"), "{content}");
    }
    assert!(!r[3].0.contains("TOKEN=def"), "{}", r[3].0);
    for (content, is_error) in &r[4..6] {
        assert!(
            *is_error && content.contains("outside the workspace"),
            "{content}"
        );
    }
    assert!(!r[6].1 && r[6].0.contains("read me"), "{}", r[6].0);
    // Listing and search leave out what is reached through a symlink into
    // an ignored path.
    assert!(!r[7].1 && r[7].0.contains("readme.txt"), "{}", r[7].0);
    for hidden in ["alias\n", "aliasdir", "secret.env", "secrets/"] {
        assert!(!r[7].0.contains(hidden), "{hidden} listed: {}", r[7].0);
    }
    assert!(!r[8].0.contains("TOKEN="), "{}", r[8].0);
    let ws = roost_sandbox::capability::Workspace::open(&w).expect("ws");
    let ignore = RooIgnore::load_in(&ws);
    let rel = ws
        .normalize(&host_form.display().to_string())
        .expect("host form");
    assert!(ignore.blocks(&rel.as_string()));
}

/// The guest's own open of a FIFO `name` (directly or through a symlink) is
/// refused by the host's `open-at` before it can block, and the host stays
/// responsive.
async fn guest_fifo_open_is_refused(case: &str) {
    let ws = hostile_workspace();
    mkfifo(&ws.path().join("fifo"));
    std::os::unix::fs::symlink("fifo", ws.path().join("fifo_link")).expect("symlink");
    let plugin = engine()
        .load_file("hostile", &fixture_wasm("hostile"))
        .expect("hostile");
    let grant = Grant::new(ws.path()).read().limits(Limits {
        deadline: Duration::from_millis(500),
        ..Limits::default()
    });
    let out = engine()
        .call(
            &plugin,
            "attempt",
            &json!({ "case": case }).to_string(),
            &grant,
        )
        .await
        .expect("refused, not hung");
    let data = out.data.expect("data");
    assert_eq!(data["escaped"], false, "{data}");
    assert!(
        data["detail"]
            .as_str()
            .expect("detail")
            .contains("ermission denied"),
        "{data}"
    );
    let ok = engine()
        .call(
            &plugin,
            "attempt",
            &json!({"case": "control_read"}).to_string(),
            &grant,
        )
        .await
        .expect("next call works");
    assert_eq!(ok.data.expect("data")["escaped"], true);
}

/// Route `open_fifo`: a guest opening a FIFO.
#[tokio::test]
pub(crate) async fn open_fifo() {
    guest_fifo_open_is_refused("open_fifo").await;
}

/// Route `open_fifo_link`: a guest opening a FIFO through a symlink.
#[tokio::test]
pub(crate) async fn open_fifo_link() {
    guest_fifo_open_is_refused("open_fifo_link").await;
}

/// A FIFO or device in the workspace never hangs the host: the host layer
/// refuses special files (the guest's side: [`open_fifo`]).
#[tokio::test]
async fn special_files_never_hang_the_host() {
    // The host's own reads never open a FIFO: `.rooignore` as one is
    // skipped at once.
    let quiet = roost_tests::TestWorkspace::new();
    quiet.write("secret.env", "x");
    mkfifo(&quiet.path().join(".rooignore"));
    assert!(!RooIgnore::load(&quiet.path()).blocks("secret.env"));

    // A whole task: fs-tools refuses the FIFO to read, search skips it, a
    // destructive call that declares it neither hangs the host's snapshot
    // nor the plugin.
    let h = hostile_harness(vec![
        turn(
            "",
            vec![
                call("read_file", json!({"path": "fifo"})),
                call("search_files", json!({"path": ".", "regex": "x"})),
                call("write_to_file", json!({"path": "fifo", "content": "x"})),
            ],
        ),
        complete("done"),
    ]);
    std::fs::remove_dir_all(h.ws.path().join(".orchestration")).expect("intents off");
    mkfifo(&h.ws.path().join("fifo"));
    let (id, outcome) = h.run(&ScriptedUser::default(), "fifo").await;
    completed(&outcome);
    let r = h.results(&id);
    assert!(r[0].1, "{}", r[0].0);
    assert!(r[2].1, "{}", r[2].0);
}

/// Route `huge_data`: a 60 MB `data` is dropped by size before any JSON
/// parse.
#[tokio::test]
pub(crate) async fn huge_data() {
    let ws = hostile_workspace();
    let plugin = engine()
        .load_file("hostile", &fixture_wasm("hostile"))
        .expect("hostile");
    let out = engine()
        .call(
            &plugin,
            "attempt",
            &json!({"case": "huge_data"}).to_string(),
            &Grant::new(ws.path()).read(),
        )
        .await
        .expect("call returns");
    assert!(out.truncated && out.data.is_none(), "{:?}", out.text);
    assert!(
        out.text.contains("output truncated by Roost"),
        "{}",
        out.text
    );
}

/// Host work after a call is bounded by the call's limits: a diff of a
/// large file is a summary with hashes, and the plugin's tool list and
/// schemas are bounded at load (`huge_data`: its output).
#[tokio::test]
pub(crate) async fn host_work_is_bounded_by_the_call() {
    for (fixture, needle) in [
        ("tool-flood", "at most 128"),
        ("schema-bomb", "args schema of"),
    ] {
        let err = engine()
            .load_file(fixture, &fixture_wasm(fixture))
            .expect_err(fixture);
        assert!(err.to_string().contains(needle), "{fixture}: {err}");
    }

    // A 60k-line file rewritten by a task: the diff is bounded (a summary
    // past 1 MiB), the trace still has both hashes.
    let big: String = (0..60_000)
        .map(|i| format!("line {i} of a big file\n"))
        .collect();
    let changed: String = (0..60_000)
        .map(|i| format!("LINE {i} of a big file\n"))
        .collect();
    // The write streams in 64 KiB deltas: at the script's usual 16
    // characters its 1.4 MB made 90,000 events, a minute of SSE decoding
    // in a debug build, and nothing this test is about.
    let mut big_write = write("big.txt", &changed);
    big_write["chunk_size"] = json!(65_536);
    let mut h = hostile_harness(vec![select("INT-001"), big_write, complete("done")]);
    // The write's 1.4 MB of arguments fit a window this large uncondensed.
    h.config.context_window = 10_000_000;
    intents(&h.ws, "[\"big.txt\"]");
    h.ws.write("big.txt", &big);
    let (_id, outcome) = h.run(&ScriptedUser::default(), "big").await;
    completed(&outcome);
    let mutation = trace_lines(&h.ws.path())
        .into_iter()
        .find(|e| e["kind"] == "mutation")
        .expect("traced");
    let f = &mutation["files"][0];
    assert!(
        f["sha256_before"].is_string() && f["sha256_after"].is_string(),
        "{f}"
    );
}

/// A plugin may not register a host-native name: the registry refuses it
/// at load, so `roost tool call` and tasks never run an impostor.
#[test]
pub(crate) fn impostor_tool_names_are_refused_at_load() {
    let engine: &PluginEngine = &engine();
    let impostor = engine
        .load_file("impostor", &fixture_wasm("impostor"))
        .expect("a valid component");
    let mut registry = Registry::new();
    let err = registry.add_plugin(impostor).expect_err("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("attempt_completion") && msg.contains("host-native"),
        "{msg}"
    );
    // The name stays the host's, and nothing of the impostor is registered.
    assert!(
        registry
            .get("attempt_completion")
            .is_some_and(|t| t.is_native())
    );
    assert!(registry.iter().all(|t| t.provider() != "impostor"));
}

/// No host code reads or writes a workspace path with `std::fs` outside
/// the workspace-access layer. Files allowed to use `std::fs` name what
/// they touch, none of it in a workspace.
#[test]
fn no_std_fs_on_workspace_paths_outside_the_layer() {
    // File → why it may use std::fs.
    let allowed: &[(&str, &str)] = &[
        ("sandbox/src/capability/dirfd.rs", "the layer itself"),
        ("sandbox/src/capability/workspace.rs", "the layer itself"),
        ("core/src/config/mod.rs", "the user's config file"),
        (
            "cli/src/doctor.rs",
            "`roost doctor` and `config show`: Roost's own data dir (its size, that it can be made) and config file, never a workspace",
        ),
        (
            "cli/src/template.rs",
            "the new plugin folder the user names",
        ),
        (
            "cli/src/serve.rs",
            "the metrics token file the operator names (`--metrics-token-file`)",
        ),
        (
            "core/src/install/mod.rs",
            "the plugin source the user names, and the plugins dir in the data dir",
        ),
        (
            "core/src/install/archive.rs",
            "the plugin archive the user names, unpacked into a temporary folder of ours",
        ),
        (
            "core/src/modes/file.rs",
            "the global custom_modes.yaml in the config dir",
        ),
        (
            "core/src/llm/scripted.rs",
            "transcripts named on the command line",
        ),
        ("core/src/store/mod.rs", "the data dir"),
        (
            "core/src/mcp/config.rs",
            "the global mcp_settings.json in the config dir (a workspace's files only through the layer)",
        ),
        (
            "core/src/mcp/server.rs",
            "the program and paths a server's entry names (the user's config), made visible in its sandbox",
        ),
        (
            "core/src/mcp/trust.rs",
            "the MCP trust file in the data dir (a workspace's path only canonicalised as its key)",
        ),
        (
            "core/src/commands/output.rs",
            "command outputs kept in the data dir",
        ),
        (
            "core/src/commands/limits.rs",
            "a command's cgroup under /sys/fs/cgroup and /proc/self/cgroup, never a workspace",
        ),
        (
            "core/src/commands/sandbox.rs",
            "the seccomp filter in an unlinked temporary file (a workspace only by handle)",
        ),
        (
            "core/src/engine/builder.rs",
            "the task store file's own path, resolved to hide it from commands",
        ),
        (
            "core/src/checkpoints/shadow.rs",
            "the shadow repositories in the data dir (the workspace itself only through git, read)",
        ),
        (
            "core/src/store/claims.rs",
            "owner lock files in the data dir",
        ),
        ("core/src/store/export.rs", "the export dir the user names"),
        (
            "core/src/skills/catalog.rs",
            "skill folders, their links resolved on purpose (a folder reached twice counts once; a project's links \
             must stay in the project) before SKILL.md is read through a handle that follows none",
        ),
        (
            "core/src/skills/library.rs",
            "the workspace and skill folders, resolved to be watched",
        ),
        (
            "sandbox/src/plugins/skill.rs",
            "component files named by the user",
        ),
        (
            "core/src/mcp/runner.rs",
            "the user's ~/.npmrc and a package runner's cache in the data dir",
        ),
        (
            "cli/src/skills.rs",
            "the skill folder `roost skills validate` names",
        ),
        (
            "sandbox/src/plugins/engine.rs",
            "component files named by the user",
        ),
        (
            "sandbox/src/plugins/component_file.rs",
            "an installed component's file in the data dir, held open from its check at load to its first call",
        ),
        (
            "sandbox/src/plugins/hook.rs",
            "component files named by the user",
        ),
        (
            "sandbox/src/plugins/cache.rs",
            "the component cache in the data dir",
        ),
        (
            "sandbox/src/capability/hidden.rs",
            "a guest's own WASI paths, looked up beneath its preopened directory with O_PATH (cap-primitives, \
             as wasmtime-wasi resolves them)",
        ),
        (
            "sandbox/src/capability/top_entries.rs",
            "the directory a workspace holds open, through /proc/self/fd, checked to be that very directory \
             before and after inotify watches it",
        ),
        (
            "sandbox/src/plugins/special_files.rs",
            "a guest's own WASI open-at, beneath its preopened directory (cap-primitives, as wasmtime-wasi resolves it)",
        ),
    ];
    // Every crate of the host, by its path under host/.
    // This binary belongs to host/cli.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut offenders = Vec::new();
    let mut stack: Vec<_> = ["sandbox/src", "core/src", "server/src", "cli/src"]
        .iter()
        .map(|c| src.join(c))
        .collect();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if rel.ends_with("tests.rs") || allowed.iter().any(|(f, _)| *f == rel) {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("read");
            // Unit tests build their fixtures with std::fs; only code before
            // the test module counts.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                let l = line.trim_start();
                if l.starts_with("//") {
                    continue;
                }
                if [
                    "std::fs",
                    "fs::read",
                    "fs::write",
                    "File::open",
                    "OpenOptions",
                    ".canonicalize()",
                    "tokio::fs",
                ]
                .iter()
                .any(|pat| l.contains(pat))
                {
                    offenders.push(format!("{rel}:{}: {l}", n + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "host code touches files outside the workspace-access layer:\n{}",
        offenders.join("\n")
    );
}

/// The front-ends reach the sandbox only through the engine: neither the
/// server (`roost serve`, `roost mcp serve`) nor the protocol every
/// front-end shares depends on `roost-sandbox`, so Cargo refuses an import
/// that would give them a door of their own.
#[test]
fn front_ends_reach_the_sandbox_only_through_the_engine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for krate in ["host/server", "host/protocol"] {
        let text = std::fs::read_to_string(root.join(krate).join("Cargo.toml")).expect("manifest");
        let manifest: toml::Table = toml::from_str(&text).expect("toml");
        for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let deps = manifest.get(table).and_then(toml::Value::as_table);
            assert!(
                deps.is_none_or(|d| !d.contains_key("roost-sandbox")),
                "{krate} depends on roost-sandbox ({table})"
            );
        }
    }
}

/// The front-ends reach tasks only through the engine and its sessions: no
/// source of `roost-server` or of the CLI imports the store or takes the
/// engine's services (`Engine::agent()`), so tenancy, replay and answers
/// are never decided a second time beside the session service.
#[test]
fn front_ends_reach_tasks_only_through_the_engine_and_its_sessions() {
    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder").flatten() {
            let p = entry.path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    sources(&root.join("host/server/src"), &mut files);
    sources(&root.join("host/cli/src"), &mut files);
    assert!(files.len() > 40, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).expect("source");
        for door in ["roost_core::store", ".agent()", "roost_store"] {
            assert!(!text.contains(door), "{} uses `{door}`", f.display());
        }
        // Creating, resuming, starting, waiting for and stopping a task
        // go through a session (its owner checked), never around it.
        for around in [
            ".create_task(",
            ".create_task_for(",
            ".enqueue_task_for(",
            ".prepare_resume(",
            "engine.start(",
            "engine.wait(",
            "engine.cancel(",
        ] {
            assert!(
                !text.contains(around),
                "{} drives a task around the session service: `{around}`",
                f.display()
            );
        }
    }
}

/// Every crate of the host and the SDK refuses unsafe code at its root
/// (`forbid`, or `deny` where a module needs it), and each module that
/// allows it says why in the line above.
#[test]
fn unsafe_code_is_refused_but_where_a_module_says_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut roots = Vec::new();
    for dir in ["host", "sdk"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let lib = entry.unwrap().path().join("src/lib.rs");
            if lib.exists() {
                roots.push(lib);
            }
        }
    }
    roots.push(root.join("sdk/src/lib.rs"));
    roots.push(root.join("tests/src/lib.rs"));
    let mut missing = Vec::new();
    for lib in &roots {
        let text = std::fs::read_to_string(lib).unwrap();
        if !text.contains("#![forbid(unsafe_code)]") && !text.contains("#![deny(unsafe_code)]") {
            missing.push(lib.display().to_string());
        }
    }
    let sdk_bindings = [
        "sdk/src/lib.rs",
        "sdk/hook/src/lib.rs",
        "sdk/skill/src/lib.rs",
    ];
    missing.retain(|m| !sdk_bindings.iter().any(|b| m.ends_with(b)));
    assert!(
        missing.is_empty(),
        "crates that do not refuse unsafe code: {missing:?}"
    );
    let mut unexplained = Vec::new();
    let mut stack = vec![root.join("host")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                for (i, line) in lines.iter().enumerate() {
                    if line.trim() == "#![allow(unsafe_code)]"
                        && !i
                            .checked_sub(1)
                            .and_then(|p| lines.get(p))
                            .is_some_and(|l| l.trim_start().starts_with("//"))
                    {
                        unexplained.push(path.display().to_string());
                    }
                }
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "modules that allow unsafe code without saying why: {unexplained:?}"
    );
}

/// Answers as `inner` does; at the model's question, first swaps the
/// workspace's path for a link to `other` (the original moved aside).
struct SwapsAtQuestion {
    inner: ScriptedUser,
    ws: std::path::PathBuf,
    other: std::path::PathBuf,
}

#[async_trait::async_trait]
impl roost_core::asks::Answers for SwapsAtQuestion {
    async fn approve(
        &self,
        tool: &str,
        group: roost_core::tools::ToolGroup,
        args: &Value,
        preview: Option<&str>,
    ) -> roost_core::asks::Approval {
        roost_core::asks::Answers::approve(&self.inner, tool, group, args, preview).await
    }
    async fn followup(&self, question: &str, suggestions: &[String]) -> Option<String> {
        std::fs::rename(&self.ws, self.ws.with_extension("moved")).expect("move aside");
        std::os::unix::fs::symlink(&self.other, &self.ws).expect("swap for a link");
        roost_core::asks::Answers::followup(&self.inner, question, suggestions).await
    }
    async fn completion(&self, result: &str) -> roost_core::asks::CompletionAnswer {
        roost_core::asks::Answers::completion(&self.inner, result).await
    }
    async fn scope_violation(
        &self,
        intent: &str,
        tool: &str,
        path: &str,
        preview: Option<&str>,
    ) -> roost_core::asks::Approval {
        roost_core::asks::Answers::scope_violation(&self.inner, intent, tool, path, preview).await
    }
    async fn hook_question(
        &self,
        hook: &str,
        tool: &str,
        question: &str,
    ) -> roost_core::asks::Approval {
        roost_core::asks::Answers::hook_question(&self.inner, hook, tool, question).await
    }
    async fn guidance(&self, reason: &str) -> Option<String> {
        roost_core::asks::Answers::guidance(&self.inner, reason).await
    }
}

/// A task started from the CLI runs in the directory its creation opened
/// (whose saved approvals it was given), held since: its path swapped for
/// a link to another directory between the creation and the start leads
/// no read there, and nothing in the other directory changes.
#[tokio::test]
async fn a_workspace_swapped_between_creation_and_start_leads_no_read_elsewhere() {
    let h = harness(
        json!([
            turn("", vec![call("read_file", json!({ "path": "secret.txt" }))]),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    let (other, before) = swap_target(&h);
    let id = h.create("code", "read").await.expect("created");
    std::fs::rename(h.ws.path(), h.ws.path().with_extension("moved")).expect("move aside");
    std::os::unix::fs::symlink(other.path(), h.ws.path()).expect("swap for a link");
    let outcome = h.drive(h.engine(), &id, &ScriptedUser::default()).await;
    swapped_back(&h, &id, other.path(), &before, &outcome);
}

/// A `secret.txt` of the task's own in `h`'s workspace, and another
/// directory with one of its own (to swap the workspace for a link to),
/// hashed as it is before the task runs.
fn swap_target(h: &Harness) -> (tempfile::TempDir, BTreeMap<String, String>) {
    h.ws.write("secret.txt", "the task's own\n");
    let other = tempfile::tempdir().expect("tempdir");
    std::fs::write(other.path().join("secret.txt"), "another's secret\n").expect("other");
    let before = tree_hash(other.path());
    (other, before)
}

/// Undo a workspace's swap for a link to `other` (the harness cleans the
/// workspace up where it was), then check task `id` read its own
/// `secret.txt`, not `other`'s, and left `other` (hashed `before`) as it was.
fn swapped_back(
    h: &Harness,
    id: &str,
    other: &Path,
    before: &BTreeMap<String, String>,
    outcome: &dyn std::fmt::Debug,
) {
    std::fs::remove_file(h.ws.path()).expect("unlink");
    std::fs::rename(h.ws.path().with_extension("moved"), h.ws.path()).expect("back");
    let results = h.results(id);
    assert!(
        !results.iter().any(|(r, _)| r.contains("another's secret")),
        "a read followed the swapped path: {results:?} ({outcome:?})"
    );
    assert!(
        results
            .iter()
            .any(|(r, error)| !*error && r.contains("the task's own")),
        "the read did not see the workspace the task holds: {results:?} ({outcome:?})"
    );
    assert_eq!(&tree_hash(other), before, "the other directory changed");
}

/// A task's calls mount the workspace the task holds open, never its path
/// looked up again: once the task runs, the path swapped for a link to
/// another directory leads no read there (the read sees the directory the
/// task pinned, or fails), and nothing in the other directory changes.
#[tokio::test]
async fn a_workspace_swapped_mid_task_leads_no_read_elsewhere() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "ask_followup_question",
                    json!({ "question": "go on?" })
                )]
            ),
            turn("", vec![call("read_file", json!({ "path": "secret.txt" }))]),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    let (other, before) = swap_target(&h);
    let inner = ScriptedUser::default();
    inner
        .followups
        .lock()
        .expect("lock")
        .push_back("yes".into());
    let user = SwapsAtQuestion {
        inner,
        ws: h.ws.path(),
        other: other.path().to_path_buf(),
    };
    let id = h.create("code", "read").await.expect("created");
    let outcome = h.drive(h.engine(), &id, &user).await.expect("task ran");
    swapped_back(&h, &id, other.path(), &before, &outcome);
}
