//! Delegation (`new_task`) end to end, with the scripted model serving a
//! transcript per task (chosen by its mode and instructions): the child's
//! result comes back as the parent's tool result; trees nest to a bound;
//! a failing or cancelled child is reported as such; and a child can never
//! do more than its parent — its writes stay inside the parent's scope,
//! its approvals inside the parent's policy, and the parent's hooks judge
//! its calls.

use roost_core::events::TaskEvent;
use roost_core::store::TaskStatus;
use roost_core::task::{Approval, ApprovalPolicy, TaskOutcome};
use roost_protocol::UiSubtype;
use roost_tests::harness::{
    Harness, assert_completed_with_its_totals, call, complete, scripted_harness, turn,
};
use roost_tests::user::ScriptedUser;
use serde_json::{Value, json};

fn new_task(mode: &str, message: &str) -> Value {
    turn(
        "Delegating.",
        vec![call("new_task", json!({"mode": mode, "message": message}))],
    )
}

fn write(path: &str) -> Value {
    turn(
        "",
        vec![call(
            "write_to_file",
            json!({"path": path, "content": "hi\n"}),
        )],
    )
}

/// The subtasks of `id`, oldest first.
fn children(h: &Harness, id: &str) -> Vec<roost_core::store::TaskRecord> {
    h.store().children(id).expect("children")
}

/// Orchestrator → code child → result back as the tool result; the todo
/// list handed down is the child's; a second call in the `new_task`
/// message is not run; the child's tokens count in the parent's totals;
/// the parent's UI history shows the subtask and its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_delegates_and_gets_the_childs_result_back() {
    let h = scripted_harness(
        json!({
            "turns": [
                turn("Planning.", vec![call("update_todo_list", json!({"todos": "[ ] write hello.txt"}))]),
                turn("Delegating.", vec![
                    call("new_task", json!({"mode": "code", "message": "Write hello.txt saying hi",
                        "todos": "[ ] write the file\n[ ] report"})),
                    call("read_file", json!({"path": "hello.txt"})),
                ]),
                complete("Everything delegated is done."),
            ],
            "tasks": [{"message": "Write hello.txt saying hi", "mode": "code", "turns": [
                write("hello.txt"),
                complete("hello.txt says hi"),
            ]}]
        }),
        ApprovalPolicy::yes(),
    );
    let mut rx = h.events.subscribe();
    let (id, outcome) = h
        .run_in(
            "orchestrator",
            &ScriptedUser::default(),
            "Get hello.txt written",
        )
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(h.ws.read("hello.txt"), "hi\n");
    let kids = children(&h, &id);
    assert_eq!(kids.len(), 1, "{kids:?}");
    let child = &kids[0];
    assert_eq!(child.parent_id.as_deref(), Some(id.as_str()));
    assert_eq!(child.root_id, id);
    assert_eq!(child.mode, "code");
    assert_eq!(child.status, TaskStatus::Completed);
    // The instructions reached it whole, and its todo list is the one
    // handed down.
    assert!(child.prompt.contains("Write hello.txt saying hi"));
    let todos = h.store().get_todos(&child.id).expect("todos");
    assert_eq!(todos.len(), 2, "{todos:?}");
    // The parent's plan item the child carried out is done.
    let plan = h.store().get_todos(&id).expect("todos");
    assert_eq!(
        plan[0].state,
        roost_core::store::TodoState::Completed,
        "{plan:?}"
    );
    // Its result is the parent's tool result; the call after new_task in
    // the same message was not run.
    let results = h.results(&id);
    assert!(
        results
            .iter()
            .any(|(r, err)| !err && r.contains("completed") && r.contains("hello.txt says hi")),
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|(r, err)| *err && r.contains("must be the only tool call")),
        "{results:?}"
    );
    // The parent's totals include the child's (each scripted turn reports
    // 100 in, 10 out: three of the parent's, two of the child's).
    let parent = h.store().get_task(&id).expect("parent");
    assert_eq!(parent.usage.input_tokens, 500, "{:?}", parent.usage);
    assert_eq!(parent.usage.output_tokens, 50);
    assert_completed_with_its_totals(h.store(), &id);
    assert_completed_with_its_totals(h.store(), &child.id);
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(ui.iter().any(|m| m.subtype == UiSubtype::Subtask.as_str()));
    assert!(
        ui.iter()
            .any(|m| m.subtype == UiSubtype::SubtaskResult.as_str()
                && m.text.contains("hello.txt says hi"))
    );
    // The parent's followers saw the subtask start and finish, and the
    // child's own events (under the child's id).
    let mut seen = Vec::new();
    while let Ok(env) = rx.try_recv() {
        seen.push(env);
    }
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        TaskEvent::SubtaskStarted { child_id, .. } if *child_id == child.id
    )));
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        TaskEvent::SubtaskFinished {
            status: TaskStatus::Completed,
            ..
        }
    )));
    assert!(
        seen.iter()
            .any(|e| e.task_id == child.id && matches!(e.event, TaskEvent::Completed { .. }))
    );
    roost_tests::harness::assert_pairing(h.store(), &id);
    roost_tests::harness::assert_pairing(h.store(), &child.id);
}

/// Delegation nests to depth 3; at the depth bound, `new_task` is an
/// error result the model reads, and the tree still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_nests_to_its_depth_bound() {
    let mut h = scripted_harness(
        json!({
            "turns": [new_task("code", "LEVEL-1 work"), complete("root done")],
            "tasks": [
                {"message": "LEVEL-1 work", "turns": [new_task("code", "LEVEL-2 work"), complete("level 1 done")]},
                {"message": "LEVEL-2 work", "turns": [new_task("code", "LEVEL-3 work"), complete("level 2 done")]},
                {"message": "LEVEL-3 work", "turns": [new_task("code", "LEVEL-4 work"), complete("level 3 done")]},
                {"message": "LEVEL-4 work", "turns": [complete("too deep")]}
            ]
        }),
        ApprovalPolicy::yes(),
    );
    h.config.delegation.max_depth = 3;
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "go deep")
        .await;
    assert!(
        matches!(&outcome, TaskOutcome::Completed { result } if result == "root done"),
        "{outcome:?}"
    );
    let l1 = children(&h, &id);
    let l2 = children(&h, &l1[0].id);
    let l3 = children(&h, &l2[0].id);
    assert_eq!((l1.len(), l2.len(), l3.len()), (1, 1, 1));
    assert_eq!(l3[0].root_id, id);
    // Level 3 could not delegate further.
    assert!(children(&h, &l3[0].id).is_empty());
    let refused = h.results(&l3[0].id);
    assert!(
        refused
            .iter()
            .any(|(r, err)| *err && r.contains("cannot delegate deeper")),
        "{refused:?}"
    );
    // Each level got the one below's result.
    assert!(
        h.results(&l2[0].id)
            .iter()
            .any(|(r, _)| r.contains("level 3 done"))
    );
    assert!(
        h.results(&id)
            .iter()
            .any(|(r, _)| r.contains("level 1 done"))
    );
}

/// A child that fails is an error result saying so; the parent goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_child_is_an_error_result_and_the_parent_goes_on() {
    let h = scripted_harness(
        json!({
            "turns": [new_task("code", "Doomed work"), complete("handled the failure")],
            "tasks": [{"message": "Doomed work", "turns": [
                {"http_error": {"status": 400, "body": "{\"error\":{\"message\":\"bad request\"}}"}}
            ]}]
        }),
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "try it")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let child = &children(&h, &id)[0];
    assert_eq!(child.status, TaskStatus::Failed);
    let results = h.results(&id);
    assert!(
        results
            .iter()
            .any(|(r, err)| *err && r.contains("failed") && r.contains(&child.id)),
        "{results:?}"
    );
}

/// Cancelling the parent while it waits aborts the child too; the
/// parent's `new_task` call stays open (not answered "interrupted"), so a
/// resume follows the same child again instead of starting another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_aborts_its_child_and_a_resume_follows_it_again() {
    let h = scripted_harness(
        json!({
            "turns": [new_task("code", "Slow work"), complete("root done")],
            "tasks": [{"message": "Slow work", "turns": [
                {"text": "thinking", "delay_ms": 600000, "tool_calls": []}
            ]}]
        }),
        ApprovalPolicy::yes(),
    );
    let id = h
        .create("orchestrator", "delegate slow work")
        .await
        .expect("created");
    let engine = h.engine();
    let mut rx = engine.subscribe(&id).expect("subscribe");
    engine.start(&id).expect("started");
    // Wait until the child runs.
    let child_id = loop {
        match rx.recv().await.expect("events").event.clone() {
            TaskEvent::SubtaskStarted { child_id, .. } => break child_id,
            _ => continue,
        }
    };
    engine.cancel(&id, "stop it all").await.expect("cancel");
    let outcome = engine.wait(&id).await.expect("outcome");
    assert!(
        matches!(outcome, TaskOutcome::Aborted { .. }),
        "{outcome:?}"
    );
    let child = h.store().get_task(&child_id).expect("child");
    assert_eq!(child.status, TaskStatus::Aborted);
    // The delegating call is still open: it has no result.
    let results = h.results(&id);
    assert!(results.is_empty(), "{results:?}");
    assert_eq!(children(&h, &id).len(), 1);

    // Resumed (here by another process), the parent follows the same
    // child again: it resumes it, takes its result, and completes.
    let other = h.another_process_with(json!({
        "turns": [new_task("code", "Slow work"), complete("root done")],
        "tasks": [{"message": "Slow work", "turns": [complete("slow work done")]}]
    }));
    let outcome = h
        .resume_on(&other, &id, &ScriptedUser::default())
        .await
        .expect("resumed");
    assert!(
        matches!(&outcome, TaskOutcome::Completed { result } if result == "root done"),
        "{outcome:?}"
    );
    assert_eq!(children(&h, &id).len(), 1, "no second child");
    let child = h.store().get_task(&child_id).expect("child");
    assert_eq!(child.status, TaskStatus::Completed);
    assert!(
        h.results(&id)
            .iter()
            .any(|(r, err)| !err && r.contains("slow work done"))
    );
    roost_tests::harness::assert_pairing(h.store(), &id);
    roost_tests::harness::assert_pairing(h.store(), &child_id);
}

const INTENTS: &str = r#"active_intents:
  - id: INT-AUTH
    name: auth
    status: IN_PROGRESS
    owned_scope: ["src/auth/**"]
  - id: INT-SRC
    name: all of src
    status: IN_PROGRESS
    owned_scope: ["src/**"]
"#;

/// A child may only select intents inside its parent's scope, may not
/// write outside it (refused, no one asked), and neither may a grandchild
/// through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_never_writes_beyond_its_parents_scope() {
    let select = |intent: &str| {
        turn(
            "",
            vec![call("select_active_intent", json!({"intent_id": intent}))],
        )
    };
    let h = scripted_harness(
        json!({
            "turns": [select("INT-AUTH"), new_task("code", "CHILD: auth work"), complete("root done")],
            "tasks": [
                {"message": "CHILD: auth work", "turns": [
                    select("INT-SRC"),
                    select("INT-AUTH"),
                    write("src/auth/login.rs"),
                    write("src/main.rs"),
                    new_task("code", "GRANDCHILD: more"),
                    complete("child done"),
                ]},
                {"message": "GRANDCHILD: more", "turns": [
                    select("INT-SRC"),
                    select("INT-AUTH"),
                    write("src/lib.rs"),
                    complete("grandchild done"),
                ]}
            ]
        }),
        ApprovalPolicy::yes(),
    );
    h.ws.write(".orchestration/active_intents.yaml", INTENTS);
    let user = ScriptedUser::default();
    let (id, outcome) = h.run_in("orchestrator", &user, "auth work").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let child = &children(&h, &id)[0];
    let grandchild = &children(&h, &child.id)[0];
    for task in [&child.id, &grandchild.id] {
        let r = h.results(task);
        assert!(
            r[0].1 && r[0].0.contains("intent_outside_parent_scope"),
            "{task}: {r:?}"
        );
        assert!(!r[1].1, "{task}: the parent's own intent is fine: {r:?}");
    }
    let r = h.results(&child.id);
    assert!(!r[2].1, "inside the scope: {r:?}");
    assert!(
        r[3].1 && r[3].0.contains("outside_parent_scope"),
        "outside the parent's scope, refused: {r:?}"
    );
    let g = h.results(&grandchild.id);
    assert!(g[2].1 && g[2].0.contains("outside_parent_scope"), "{g:?}");
    assert_eq!(h.ws.read("src/auth/login.rs"), "hi\n");
    assert!(!h.ws.path().join("src/main.rs").exists());
    assert!(!h.ws.path().join("src/lib.rs").exists());
    // No one was asked to widen a child's scope.
    let asked = user.asked();
    assert!(!asked.iter().any(|a| a.starts_with("scope")), "{asked:?}");
}

/// Without intents, a parent with no edit group still gives its child the
/// whole workspace (the parent's own grant bounds it); a child never gets
/// an approval policy wider than its parent's: a write the parent would
/// be asked about is asked about in the child too (and denied here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_approvals_are_bounded_by_its_parents_policy() {
    let h = scripted_harness(
        json!({
            "turns": [new_task("code", "Write two files"), complete("root done")],
            "tasks": [{"message": "Write two files", "turns": [
                write("one.txt"),
                write("two.txt"),
                complete("child done"),
            ]}]
        }),
        ApprovalPolicy::from_groups("read,modes").expect("policy"),
    );
    let user = ScriptedUser::default()
        .approve(Approval::Approve)
        .approve(Approval::Deny {
            feedback: Some("not that one".into()),
        });
    let (id, outcome) = h.run_in("orchestrator", &user, "two files").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let child = &children(&h, &id)[0];
    let settings = child.settings.clone().expect("settings");
    assert_eq!(settings.approval.describe(), "read,modes");
    assert_eq!(settings.inherited.depth, 1);
    assert_eq!(h.ws.read("one.txt"), "hi\n");
    assert!(!h.ws.path().join("two.txt").exists());
    let asked = user.asked();
    assert_eq!(
        asked.iter().filter(|a| a.contains("write_to_file")).count(),
        2,
        "{asked:?}"
    );
}

/// The parent's mode hooks judge its child's calls: a `guarded` parent's
/// `protected-paths` hook asks about the child's edit of `AGENTS.md`
/// (denied), though the child's own mode has no hooks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parents_hooks_judge_its_childs_calls() {
    let h = scripted_harness(
        json!({
            "turns": [new_task("code", "Edit the agents file"), complete("root done")],
            "tasks": [{"message": "Edit the agents file", "turns": [
                write("AGENTS.md"),
                write("notes.md"),
                complete("child done"),
            ]}]
        }),
        ApprovalPolicy::yes(),
    );
    h.ws.write(
        ".roomodes",
        "customModes:\n  - {slug: guarded, name: Guarded, roleDefinition: test, groups: [read, edit], hooks: [secret-guard, protected-paths]}\n",
    );
    let (id, outcome) = h
        .run_in("guarded", &ScriptedUser::default(), "delegate")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let child = &children(&h, &id)[0];
    assert_eq!(
        child.settings.clone().expect("settings").inherited.hooks,
        vec!["secret-guard".to_owned(), "protected-paths".to_owned()]
    );
    let r = h.results(&child.id);
    assert!(r[0].1, "the inherited hook denied the edit: {r:?}");
    assert!(!r[1].1, "{r:?}");
    assert!(!h.ws.path().join("AGENTS.md").exists());
    assert_eq!(h.ws.read("notes.md"), "hi\n");
}

/// A `new_task` child of a task working under `INT-A` starts under
/// `INT-A` — it writes inside it without selecting anything — and so does
/// its own child; a write outside the intent is refused with no one
/// asked; the trace records their writes under `INT-A`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_works_under_its_parents_intent_without_selecting_it() {
    let h = scripted_harness(
        json!({
            "turns": [
                turn("", vec![call("select_active_intent", json!({"intent_id": "INT-AUTH"}))]),
                new_task("code", "CHILD: auth work"),
                complete("root done"),
            ],
            "tasks": [
                {"message": "CHILD: auth work", "turns": [
                    write("src/auth/login.rs"),
                    write("src/main.rs"),
                    new_task("code", "GRANDCHILD: more"),
                    complete("child done"),
                ]},
                {"message": "GRANDCHILD: more", "turns": [
                    write("src/auth/deep/token.rs"),
                    complete("grandchild done"),
                ]}
            ]
        }),
        ApprovalPolicy::yes(),
    );
    h.ws.write(".orchestration/active_intents.yaml", INTENTS);
    let user = ScriptedUser::default();
    let (id, outcome) = h.run_in("orchestrator", &user, "auth work").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let child = &children(&h, &id)[0];
    let grandchild = &children(&h, &child.id)[0];
    let r = h.results(&child.id);
    assert!(!r[0].1, "inside the inherited intent: {r:?}");
    assert!(
        r[1].1 && r[1].0.contains("outside_parent_scope"),
        "outside it: {r:?}"
    );
    assert!(!r[2].1, "the grandchild completed: {r:?}");
    let g = h.results(&grandchild.id);
    assert!(!g[0].1, "the grandchild inherits it too: {g:?}");
    assert_eq!(h.ws.read("src/auth/login.rs"), "hi\n");
    assert_eq!(h.ws.read("src/auth/deep/token.rs"), "hi\n");
    assert!(!h.ws.path().join("src/main.rs").exists());
    for (task, path) in [
        (child, "src/auth/login.rs"),
        (grandchild, "src/auth/deep/token.rs"),
    ] {
        assert_eq!(task.active_intent.as_deref(), Some("INT-AUTH"));
        // Shown as any selection is, right after its instructions: its
        // creation recorded both.
        let ui = h.store().load_ui(&task.id).expect("ui");
        let shown: Vec<(&str, &str)> = ui
            .iter()
            .take(2)
            .map(|m| (m.subtype.as_str(), m.text.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("text", task.prompt.as_str()),
                ("intent_selected", "INT-AUTH")
            ],
            "{ui:#?}"
        );
        let trace = roost_tests::harness::trace_lines(&h.ws.path());
        let m = trace
            .iter()
            .find(|e| e["task_id"] == task.id.as_str() && e["kind"] == "mutation")
            .unwrap_or_else(|| panic!("{}'s write is traced: {trace:#?}", task.prompt));
        assert_eq!(m["intent_id"], "INT-AUTH", "{m}");
        assert_eq!(m["files"][0]["path"], path, "{m}");
    }
    let asked = user.asked();
    assert!(!asked.iter().any(|a| a.starts_with("scope")), "{asked:?}");
}
