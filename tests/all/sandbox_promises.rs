//! What `SECURITY.md` promises about a call's reach, end to end through
//! the `roost` binary — `roost tool call` and `roost run` with an installed
//! plugin alike — against the hostile fixture, hashing the workspace and
//! the canary beside it before and after:
//!
//! - authority files (`.git/`, `.orchestration/`, `.rooignore`) are never
//!   changed by a call, however it is run;
//! - what a call creates outside its scope is removed at any depth, even a
//!   chain whose path is longer than `PATH_MAX`, and the result says
//!   exactly what was undone;
//! - what `.rooignore` hides is unreachable from inside the sandbox for
//!   every grant a manifest can express, with intents on and off;
//! - undoing a flood of files is bounded host work, and a call whose
//!   cleanup took longer than the host's budget is reported so, with
//!   everything still removed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use crate::cli::{roost, text};
use crate::plugin_install::plugin_dir;
use roost_tests::{TestWorkspace, fixture_wasm, hostile_workspace, tree_hash};
use serde_json::{Value, json};

/// The hostile plugin installed in `data` with the grant `read` / `write`.
fn install_hostile(data: &Path, read: &str, write: bool) -> String {
    let dir = data.join("pkg");
    let pkg = plugin_dir(
        &dir,
        "hostile",
        "1.0.0",
        &fixture_wasm("hostile"),
        &format!("read = \"{read}\"\nwrite = {write}"),
        None,
    );
    let o = roost(data)
        .args(["plugin", "install", "--yes"])
        .arg(&pkg)
        .output()
        .expect("install");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    t
}

/// How a direct call reaches the hostile component.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// `--plugin FILE`.
    File,
    /// The installed plugin.
    Installed,
}

/// `roost tool call attempt` of `case` (with `under` and `count` when
/// given) in `ws`, with `flags` (`--read`, `--write DIR`).
fn call(data: &Path, ws: &Path, via: Via, case: &str, extra: Value, flags: &[&str]) -> Output {
    let mut args = json!({ "case": case });
    if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    let mut c = roost(data);
    c.args(["tool", "call", "attempt", "--json", "--workspace"])
        .arg(ws)
        .arg("--args")
        .arg(args.to_string())
        .args(flags);
    if let Via::File = via {
        c.arg("--plugin").arg(fixture_wasm("hostile"));
    }
    c.output().expect("tool call")
}

/// Run a scripted task that (with `intent`) selects INT-001, then calls
/// `attempt` with each of `calls`, then completes; the `attempt` results
/// from its NDJSON events, in order.
fn run_attempts(data: &Path, ws: &Path, intent: bool, calls: &[Value]) -> Vec<Value> {
    let mut turns = Vec::new();
    if intent {
        turns.push(json!({"tool_calls": [{"name": "select_active_intent", "args": {"intent_id": "INT-001"}}]}));
    }
    for c in calls {
        turns.push(json!({"tool_calls": [{"name": "attempt", "args": c}]}));
    }
    turns.push(json!({"tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}));
    let script = data.join("script.json");
    std::fs::write(
        &script,
        json!({"model": "scripted", "turns": turns}).to_string(),
    )
    .expect("script");
    let o = roost(data)
        .args([
            "run",
            "attack",
            "--yes",
            "--json",
            "--max-turns",
            "100",
            "--workspace",
        ])
        .arg(ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("run");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let results: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "tool_call_result" && e["tool"] == "attempt")
        .collect();
    assert_eq!(results.len(), calls.len(), "{t}");
    results
}

/// Everything under the test root but the trace the host appends to.
fn state(root: &Path) -> BTreeMap<String, String> {
    tree_hash(root)
        .into_iter()
        .filter(|(k, _)| k != "workspace/.orchestration/agent_trace.jsonl")
        .collect()
}

fn intents(ws: &TestWorkspace, scope: &str) {
    ws.write(
        ".orchestration/active_intents.yaml",
        &format!(
            "active_intents:\n  - {{id: INT-001, name: Work, status: IN_PROGRESS, owned_scope: {scope}}}\n"
        ),
    );
}

fn intents_off(ws: &TestWorkspace) {
    std::fs::remove_dir_all(ws.path().join(".orchestration")).expect("intents off");
}

fn no_pwn() {
    assert!(!Path::new("/tmp/roost-hostile-pwned").exists());
}

/// The cases that attack an authority file from inside a write root of
/// the whole workspace.
const AUTHORITY_CASES: [&str; 7] = [
    "write_git_config",
    "add_git_hook",
    "rewrite_intents",
    "replace_trace",
    "plant_agent_link",
    "plant_trace_link",
    "rewrite_rooignore",
];

/// `roost tool call --write .` (with `--plugin` or an installed plugin)
/// cannot change `.git/`, `.orchestration/` or `.rooignore`: each attack is
/// undone and fails with `protected_path`, as under `roost run`; an
/// ordinary write is kept.
#[test]
fn direct_calls_cannot_change_authority_files() {
    for via in [Via::File, Via::Installed] {
        let ws = hostile_workspace();
        let data = tempfile::tempdir().expect("data");
        if let Via::Installed = via {
            install_hostile(data.path(), "workspace", true);
        }
        let before = state(ws.root());
        for case in AUTHORITY_CASES {
            let o = call(
                data.path(),
                &ws.path(),
                via,
                case,
                json!({}),
                &["--read", "--write", "."],
            );
            let t = text(&o);
            assert!(!o.status.success(), "{via:?} {case}: {t}");
            assert!(t.contains("protected_path"), "{via:?} {case}: {t}");
            assert!(!t.contains("NOT undone"), "{via:?} {case}: {t}");
        }
        assert_eq!(
            before,
            state(ws.root()),
            "{via:?}: an authority file changed"
        );
        no_pwn();
        // The guard is not a blanket undo: an ordinary write stays.
        let o = call(
            data.path(),
            &ws.path(),
            via,
            "control_write",
            json!({}),
            &["--read", "--write", "."],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(ws.read("out/ok.txt"), "pwned by hostile plugin\n");
    }
}

/// The same attacks through `roost run` with the installed plugin, intents
/// off (so the call may write the whole workspace): each undone.
#[test]
fn tasks_cannot_change_authority_files() {
    let ws = hostile_workspace();
    intents_off(&ws);
    let data = tempfile::tempdir().expect("data");
    install_hostile(data.path(), "workspace", true);
    let before = state(ws.root());
    let calls: Vec<Value> = AUTHORITY_CASES
        .iter()
        .map(|c| json!({ "case": c }))
        .collect();
    for (case, r) in
        AUTHORITY_CASES
            .iter()
            .zip(run_attempts(data.path(), &ws.path(), false, &calls))
    {
        let s = r.to_string();
        // Without `.orchestration/`, writing into it fails on its own.
        assert!(
            s.contains("protected_path") || s.contains(&format!("{case}: denied")),
            "{case}: {s}"
        );
        assert!(!s.contains("SUCCEEDED"), "{case}: {s}");
    }
    assert_eq!(before, state(ws.root()));
    assert!(
        !ws.path().join(".orchestration").exists(),
        "intents stay off"
    );
    no_pwn();
}

/// The name each level of the hostile fixture's long chain has.
fn chain_dir() -> String {
    "l".repeat(120)
}

/// A chain of directories longer than `PATH_MAX`, made through
/// descriptors outside the scope, is removed to its bottom file, and the
/// result says it was undone only because it was.
#[test]
fn a_chain_past_path_max_is_removed_and_reported_truly() {
    // Under an intent finer than a directory, through `roost run`.
    let ws = hostile_workspace();
    intents(&ws, "[\"out/*.md\"]");
    let data = tempfile::tempdir().expect("data");
    install_hostile(data.path(), "workspace", true);
    let before = state(ws.root());
    let r = run_attempts(
        data.path(),
        &ws.path(),
        true,
        &[json!({"case": "long_chain", "under": "out"})],
    );
    let s = r[0].to_string();
    assert!(s.contains("scope_violation"), "{s}");
    assert!(!s.contains("NOT undone"), "{s}");
    assert!(s.contains(&format!("out/{}", chain_dir())), "{s}");
    assert!(!ws.path().join("out").join(chain_dir()).exists());
    assert_eq!(before, state(ws.root()));

    // A direct call that may write the whole workspace, into `.git/`.
    let before = state(ws.root());
    let o = call(
        data.path(),
        &ws.path(),
        Via::Installed,
        "long_chain",
        json!({"under": ".git"}),
        &["--read", "--write", "."],
    );
    let t = text(&o);
    assert!(!o.status.success() && t.contains("protected_path"), "{t}");
    assert!(!t.contains("NOT undone"), "{t}");
    assert!(!ws.path().join(".git").join(chain_dir()).exists());
    assert_eq!(before, state(ws.root()));
}

/// The cases that try to reach what `.rooignore` hides (`.env`, and
/// `conf/secret.txt` by an anchored pattern).
const IGNORED_CASES: [&str; 8] = [
    "read_ignored",
    "list_ignored",
    "stat_ignored",
    "write_ignored",
    "rename_ignored",
    "link_ignored",
    "symlink_to_ignored",
    "rename_ignored_parent",
];

/// Whether an attempt's output (or error) shows that it got through.
fn got_through(s: &str) -> bool {
    s.contains("SUCCEEDED") || s.contains("hidden-by-rooignore")
}

/// Every grant a manifest can express (read: workspace or none; write: yes
/// or no), with intents off and on (scope `**`, so a write root of the
/// whole workspace): nothing reaches `.env` or `conf/secret.txt`, by
/// `roost tool call` with the flags the grant allows or by `roost run`;
/// the install prompt says what the grant really is.
#[test]
fn what_rooignore_hides_is_unreachable_for_every_grant() {
    for read in ["workspace", "none"] {
        for write in [false, true] {
            for intent in [false, true] {
                let combo = format!("read={read} write={write} intents={intent}");
                let ws = hostile_workspace();
                if intent {
                    intents(&ws, "[\"**\"]");
                } else {
                    intents_off(&ws);
                }
                let data = tempfile::tempdir().expect("data");
                let shown = install_hostile(data.path(), read, write);
                match (read, write) {
                    ("none", true) => assert!(
                        shown
                            .contains("read: only where it may write (write access is read access"),
                        "{combo}: {shown}"
                    ),
                    ("none", false) => assert!(shown.contains("read: nothing"), "{combo}: {shown}"),
                    _ => assert!(
                        shown.contains("except what its .rooignore hides"),
                        "{combo}: {shown}"
                    ),
                }
                let before = state(ws.root());
                let mut flags: Vec<&str> = Vec::new();
                if read == "workspace" {
                    flags.push("--read");
                }
                if write {
                    flags.extend(["--write", "."]);
                }
                for case in IGNORED_CASES {
                    let o = call(
                        data.path(),
                        &ws.path(),
                        Via::Installed,
                        case,
                        json!({}),
                        &flags,
                    );
                    let t = text(&o);
                    assert!(!got_through(&t), "{combo} {case} (tool call): {t}");
                }
                let calls: Vec<Value> =
                    IGNORED_CASES.iter().map(|c| json!({ "case": c })).collect();
                for (case, r) in
                    IGNORED_CASES
                        .iter()
                        .zip(run_attempts(data.path(), &ws.path(), intent, &calls))
                {
                    let s = r.to_string();
                    assert!(!got_through(&s), "{combo} {case} (run): {s}");
                }
                // Nothing hidden moved or changed; what the denied attempts
                // left in their write root is all the difference there is.
                assert_eq!(ws.read(".env"), "API_KEY=hidden-by-rooignore\n", "{combo}");
                assert_eq!(
                    ws.read("conf/secret.txt"),
                    "hidden-by-rooignore\n",
                    "{combo}"
                );
                let after = state(ws.root());
                let changed: Vec<&String> = before
                    .keys()
                    .chain(after.keys())
                    .filter(|k| before.get(*k) != after.get(*k))
                    .collect();
                assert!(
                    changed
                        .iter()
                        .all(|k| k.starts_with("workspace/out/")
                            || k.as_str() == "workspace/env_sym"),
                    "{combo}: {changed:?}"
                );
            }
        }
    }
}

/// How many files the flood makes.
const FLOOD: u32 = 20_000;

/// A flood of files outside the scope is all removed, and reported with a
/// bounded list; with a cleanup budget the host cannot meet, the call is
/// reported as over its limits, and everything is still removed.
#[test]
fn a_flood_outside_the_scope_is_removed_within_a_budget_or_reported() {
    let ws = hostile_workspace();
    intents(&ws, "[\"out/*.md\"]");
    let data = tempfile::tempdir().expect("data");
    install_hostile(data.path(), "workspace", true);
    let before = state(ws.root());
    let flood = json!({"case": "flood_files", "under": "out", "count": FLOOD});
    let r = run_attempts(data.path(), &ws.path(), true, std::slice::from_ref(&flood));
    let s = r[0].to_string();
    assert!(
        s.contains("scope_violation") && s.contains("more_paths"),
        "{s}"
    );
    assert!(!s.contains("NOT undone") && !s.contains("budget"), "{s}");
    assert!(
        s.len() < 64 << 10,
        "the report is bounded: {} bytes",
        s.len()
    );
    assert!(!ws.path().join("out/flood").exists());
    assert_eq!(before, state(ws.root()));

    // A budget of nothing: over it, said so, and still all removed.
    std::fs::write(
        data.path().join("none.toml"),
        "[sandbox]\nguard_cleanup_ms = 0\n",
    )
    .expect("config");
    let r = run_attempts(data.path(), &ws.path(), true, &[flood]);
    let s = r[0].to_string();
    assert!(
        s.contains("more than its budget") && s.contains("limit-exceeded"),
        "{s}"
    );
    assert!(!ws.path().join("out/flood").exists());
    assert_eq!(before, state(ws.root()));

    // And through a direct call, into `.git/`.
    let o = call(
        data.path(),
        &ws.path(),
        Via::Installed,
        "flood_files",
        json!({"under": ".git", "count": 2000}),
        &["--read", "--write", "."],
    );
    let t = text(&o);
    assert!(
        !o.status.success() && t.contains("more than its budget"),
        "{t}"
    );
    assert!(!ws.path().join(".git/flood").exists());
    assert_eq!(before, state(ws.root()));
}
