//! Intent scopes held by the sandbox, end to end: a hostile plugin acting
//! under an intent whose `owned_scope` is finer than a directory tries every
//! escape route of the sandbox suite, and nothing outside the scope may
//! persist; globs finer than a directory hold for well-behaved tools too;
//! concurrent tasks leave a valid trace.

use std::collections::BTreeMap;

use roost_core::engine::TaskSpec;
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_tests::harness::{call, complete, harness, trace_lines, turn};
use roost_tests::user::ScriptedUser;
use roost_tests::{engine, escape_routes, fixture_wasm, hostile_workspace, tree_hash};
use serde_json::{Value, json};

/// Everything on disk that the task may not change: the workspace, the
/// canary beside it, minus the trace, the task store and the files the
/// scope owns.
fn protected(root: &std::path::Path) -> BTreeMap<String, String> {
    tree_hash(root)
        .into_iter()
        .filter(|(k, _)| {
            !k.starts_with("data")
                && k != "workspace/.orchestration/agent_trace.jsonl"
                && !(k.starts_with("workspace/out/") && k.ends_with(".md"))
        })
        .collect()
}

#[tokio::test]
async fn a_hostile_plugin_under_an_intent_cannot_write_outside_its_scope() {
    // One task: select the intent, then one call per route, then complete.
    let mut turns = vec![turn(
        "",
        vec![call(
            "select_active_intent",
            json!({"intent_id": "INT-001"}),
        )],
    )];
    let h0 = hostile_workspace();
    let canary_secret = h0.canary().join("secret.txt").display().to_string();
    // Every route the list marks for this suite, controls included.
    let routes: Vec<String> = escape_routes()
        .into_iter()
        .filter(|r| r.scope)
        .map(|r| r.case)
        .collect();
    assert!(routes.len() > 50, "the route list was cut");
    for case in &routes {
        turns.push(turn(
            "",
            vec![call(
                "attempt",
                json!({"case": case, "port": 9, "target": canary_secret}),
            )],
        ));
    }
    turns.push(complete("done"));
    let mut h = harness(Value::Array(turns), ApprovalPolicy::yes());
    // The harness's workspace is replaced by the hostile one.
    h.ws = h0;
    h.add_plugin(
        engine()
            .load_file("hostile", &fixture_wasm("hostile"))
            .expect("hostile"),
    );
    h.config.max_turns = 100;
    h.config.repetition_limit = 100;
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-001, name: Notes, status: IN_PROGRESS, owned_scope: [\"out/*.md\"]}\n",
    );
    h.ws.write("out/notes.md", "notes\n");
    let before = protected(h.ws.root());

    let (id, outcome) = h.run(&ScriptedUser::default(), "attack").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(
        before,
        protected(h.ws.root()),
        "something outside the owned scope persisted"
    );
    assert!(!std::path::Path::new("/tmp/roost-hostile-pwned").exists());

    let r = h.results(&id);
    assert_eq!(r.len(), routes.len() + 2);
    let mut violations = 0;
    for (case, (content, is_error)) in routes.iter().zip(&r[1..]) {
        if *is_error {
            assert!(
                content.contains("\"code\":\"scope_violation\"") && content.contains("INT-001"),
                "{case}: {content}"
            );
            violations += 1;
        } else {
            assert!(
                content.ends_with(": denied")
                    || matches!(case.as_str(), "control_read" | "control_list"),
                "{case} got through: {content}"
            );
        }
    }
    // The positive control writes `out/ok.txt`: inside the write root,
    // outside the glob. The sandbox lets it happen; the guard undoes it.
    let control = &r[1 + routes
        .iter()
        .position(|c| c == "control_write")
        .expect("listed")];
    assert!(
        control.1 && control.0.contains("out/ok.txt"),
        "{}",
        control.0
    );
    let traced = trace_lines(&h.ws.path())
        .into_iter()
        .filter(|e| e["kind"] == "violation")
        .count();
    assert_eq!(traced, violations, "every violation is traced");
}

#[tokio::test]
async fn a_glob_finer_than_a_directory_holds_for_declared_paths() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "select_active_intent",
                    json!({"intent_id": "INT-001"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/lib.rs", "content": "ok\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/notes.txt", "content": "no\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "insert_content",
                    json!({"path": "src/sub/deep.rs", "line": 0, "content": "deep\n"})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-001, name: Rust only, status: IN_PROGRESS, owned_scope: [\"src/**/*.rs\", \"src/*.rs\"]}\n",
    );
    h.ws.write("src/sub/deep.rs", "");
    let (id, _) = h.run(&ScriptedUser::default(), "go").await;
    let r = h.results(&id);
    assert!(!r[1].1, "{}", r[1].0);
    assert_eq!(h.ws.read("src/lib.rs"), "ok\n");
    assert!(r[2].1 && r[2].0.contains("scope_violation"), "{}", r[2].0);
    assert!(!h.ws.path().join("src/notes.txt").exists());
    assert!(!r[3].1, "{}", r[3].0);
    assert_eq!(h.ws.read("src/sub/deep.rs"), "deep\n");
}

/// Eight tasks editing under the same intent at once: every trace line is
/// whole and every mutation is there.
#[tokio::test]
async fn concurrent_tasks_leave_a_valid_trace() {
    const TASKS: usize = 8;
    const WRITES: usize = 5;
    let shared = harness(json!([]), ApprovalPolicy::yes());
    shared.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-001, name: Auth, status: IN_PROGRESS, owned_scope: [\"src/auth/**\"]}\n",
    );
    let harnesses: Vec<_> = (0..TASKS)
        .map(|t| {
            let mut turns = vec![turn(
                "",
                vec![call("select_active_intent", json!({"intent_id": "INT-001"}))],
            )];
            for i in 0..WRITES {
                turns.push(turn(
                    "",
                    vec![call(
                        "write_to_file",
                        json!({"path": format!("src/auth/t{t}_{i}.rs"), "content": "x\n".repeat(200 + i)}),
                    )],
                ));
            }
            turns.push(complete("done"));
            harness(Value::Array(turns), ApprovalPolicy::yes())
        })
        .collect();
    let ws = shared.ws.path();
    let user = ScriptedUser::default();
    let runs = harnesses.iter().map(|h| async {
        let id = h
            .engine()
            .create_task(&TaskSpec {
                prompt: "write".into(),
                workspace: ws.clone(),
                mode: "code".into(),
                ..TaskSpec::default()
            })
            .await
            .expect("created");
        h.drive(h.engine(), &id, &user).await
    });
    for res in futures::future::join_all(runs).await {
        let outcome = res.expect("task runs");
        assert!(
            matches!(outcome, TaskOutcome::Completed { .. }),
            "{outcome:?}"
        );
    }
    let trace = trace_lines(&ws);
    let mutations: Vec<&Value> = trace.iter().filter(|e| e["kind"] == "mutation").collect();
    assert_eq!(mutations.len(), TASKS * WRITES);
    for t in 0..TASKS {
        for i in 0..WRITES {
            let path = format!("src/auth/t{t}_{i}.rs");
            assert!(
                mutations
                    .iter()
                    .any(|e| e["files"][0]["path"] == path.as_str()
                        && e["files"][0]["sha256_after"].is_string()),
                "{path} missing from the trace"
            );
        }
    }
}

/// `.rooignore`d paths are refused with Roo's message, for reads and writes,
/// and listing leaves them out.
#[tokio::test]
async fn rooignored_paths_are_neither_read_nor_written() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call("read_file", json!({"path": "secrets/token.txt"}))]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "secrets/new.txt", "content": "x\n"})
                )]
            ),
            turn(
                "",
                vec![call("read_file", json!({"path": "conf/server.key"}))]
            ),
            turn(
                "",
                vec![call("list_files", json!({"path": ".", "recursive": true}))]
            ),
            turn("", vec![call("read_file", json!({"path": "src/main.rs"}))]),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    h.ws.write(".rooignore", "secrets/\n*.key\n");
    h.ws.write("secrets/token.txt", "hunter2\n");
    h.ws.write("conf/server.key", "KEY\n");
    h.ws.write("src/main.rs", "fn main() {}\n");
    let (id, _) = h.run(&ScriptedUser::default(), "go").await;
    let r = h.results(&id);
    for (content, is_error) in &r[..3] {
        assert!(
            *is_error && content.contains("is blocked by the .rooignore file settings"),
            "{content}"
        );
        assert!(!content.contains("hunter2") && !content.contains("KEY"));
    }
    assert!(!h.ws.path().join("secrets/new.txt").exists());
    assert!(
        !r[3].1 && !r[3].0.contains("token.txt") && !r[3].0.contains("server.key"),
        "{}",
        r[3].0
    );
    assert!(r[3].0.contains("main.rs"), "{}", r[3].0);
    assert!(!r[4].1, "{}", r[4].0);
}
