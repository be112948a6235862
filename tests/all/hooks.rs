//! Mode hooks end to end: real hook components (the `hook-fixture`, whose
//! verdict depends on the mode it runs in, and the first-party
//! `secret-guard` and `protected-paths`) decide on calls of a task driven
//! by the scripted model. Every way a hook can fail must deny the call and
//! leave the task running.

use std::time::Duration;

use roost_core::events::TaskEvent;
use roost_core::task::{Approval, ApprovalPolicy, TaskOutcome};
use roost_sandbox::capability::Limits;
use roost_tests::harness::{Harness, call, complete, harness, turn};
use roost_tests::user::ScriptedUser;
use roost_tests::{engine, fixture_wasm};
use serde_json::{Value, json};

/// Modes named after the fixture's behaviours, plus ones using the
/// first-party hooks and one naming a hook that does not exist.
const ROOMODES: &str = r#"customModes:
  - {slug: hook-allow, name: Allow, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-postcheck, name: Postcheck, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-deny, name: Deny, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-ask, name: Ask, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-rewrite, name: Rewrite, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-badrewrite, name: Bad rewrite, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-garbage, name: Garbage, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-trap, name: Trap, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-loop, name: Loop, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-bomb, name: Bomb, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-sandbox, name: Sandbox, roleDefinition: test, groups: [read, edit], hooks: [hook-fixture]}
  - {slug: hook-missing, name: Missing, roleDefinition: test, groups: [read, edit], hooks: [no-such-hook]}
  - {slug: sdk, name: SDK, roleDefinition: test, groups: [read, edit], hooks: [sdk-hook]}
  - {slug: guarded, name: Guarded, roleDefinition: test, groups: [read, edit], hooks: [secret-guard, protected-paths]}
"#;

const HOOK_DEADLINE: Duration = Duration::from_millis(500);

fn hooked(turns: Value, policy: ApprovalPolicy) -> Harness {
    let mut h = harness(turns, policy);
    for name in ["hook-fixture", "sdk-hook"] {
        h.add_hook(
            engine()
                .load_hook_file(name, &fixture_wasm(name))
                .expect("hook fixture loads"),
        );
    }
    h.config.hook_limits = Limits {
        deadline: HOOK_DEADLINE,
        memory_bytes: 32 << 20,
        output_bytes: 64 << 10,
    };
    h.ws.write(".roomodes", ROOMODES);
    h.ws.write("src/a.rs", "old\n");
    h
}

fn write_a() -> Value {
    turn(
        "",
        vec![call(
            "write_to_file",
            json!({"path": "src/a.rs", "content": "new\n"}),
        )],
    )
}

/// Run one write of `src/a.rs` in `mode`, then complete.
async fn one_write(mode: &str, user: &ScriptedUser) -> (Harness, String, Vec<(String, bool)>) {
    let h = hooked(json!([write_a(), complete("done")]), ApprovalPolicy::yes());
    let (id, outcome) = h.run_in(mode, user, "edit a").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "the task survives whatever the hook does: {outcome:?}"
    );
    let r = h.results(&id);
    (h, id, r)
}

#[tokio::test]
pub(crate) async fn allow_runs_the_call_and_the_hook_adds_to_the_prompt() {
    let (h, _, r) = one_write("hook-allow", &ScriptedUser::default()).await;
    assert!(!r[0].1, "{}", r[0].0);
    assert_eq!(h.ws.read("src/a.rs"), "new\n");
    let reqs = h.transport.requests();
    let system = reqs[0]["messages"][0]["content"].as_str().expect("system");
    assert!(
        system.contains("hook-fixture active in hook-allow"),
        "{system}"
    );
}

#[tokio::test]
async fn deny_refuses_with_the_hooks_reason() {
    let (h, _, r) = one_write("hook-deny", &ScriptedUser::default()).await;
    assert!(r[0].1);
    assert!(
        r[0].0.contains(
            "Denied by hook `hook-fixture`: hook-fixture refuses write_to_file on [\"src/a.rs\"]"
        ),
        "{}",
        r[0].0
    );
    assert_eq!(h.ws.read("src/a.rs"), "old\n");
}

/// Host-native tools pass the mode's hooks too: a policy hook cannot be
/// sidestepped by switching to a mode that does not run it, or by any
/// other host-native call.
#[tokio::test]
async fn hooks_decide_on_host_native_calls_too() {
    let h = hooked(
        json!([
            turn(
                "",
                vec![call(
                    "switch_mode",
                    json!({"mode_slug": "code", "reason": "no hooks there"})
                )]
            ),
            turn(
                "",
                vec![call("update_todo_list", json!({"todos": "[ ] sneak"}))]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h
        .run_in("hook-deny", &ScriptedUser::default(), "escape")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[0].1
            && r[0]
                .0
                .contains("Denied by hook `hook-fixture`: hook-fixture refuses switch_mode"),
        "{}",
        r[0].0
    );
    assert!(
        r[1].1 && r[1].0.contains("refuses update_todo_list"),
        "{}",
        r[1].0
    );
    let task = h.store().get_task(&id).expect("task");
    assert_eq!(task.mode, "hook-deny", "the mode did not change");
    assert!(h.store().get_todos(&id).expect("todos").is_empty());
}

#[tokio::test]
async fn ask_puts_the_hooks_question_to_the_user() {
    // Approved: the call runs, and the user is not asked a second time
    // even though the policy does not cover edits.
    let h = hooked(
        json!([write_a(), complete("done")]),
        ApprovalPolicy::default(),
    );
    let user = ScriptedUser::default().hook(Approval::Approve);
    let (id, _) = h.run_in("hook-ask", &user, "edit a").await;
    let r = h.results(&id);
    assert!(!r[0].1, "{}", r[0].0);
    assert_eq!(h.ws.read("src/a.rs"), "new\n");
    let asked = user.asked();
    assert!(
        asked.contains(
            &"hook: hook-fixture write_to_file hook-fixture asks: may write_to_file touch src/a.rs?"
                .to_owned()
        ),
        "{asked:?}"
    );
    assert!(
        !asked.iter().any(|q| q.starts_with("approve:")),
        "{asked:?}"
    );

    // Denied with feedback: nothing is written and the model hears why.
    let user = ScriptedUser::default().hook(Approval::Deny {
        feedback: Some("not that file".into()),
    });
    let (h, _, r) = one_write("hook-ask", &user).await;
    assert!(r[0].1);
    assert!(
        r[0].0
            .contains("denied this operation when hook `hook-fixture` asked")
            && r[0].0.contains("not that file"),
        "{}",
        r[0].0
    );
    assert_eq!(h.ws.read("src/a.rs"), "old\n");
}

#[tokio::test]
async fn rewrite_replaces_the_arguments() {
    let (h, id, r) = one_write("hook-rewrite", &ScriptedUser::default()).await;
    assert!(!r[0].1, "{}", r[0].0);
    assert_eq!(h.ws.read("src/a.rs"), "new\n// checked by hook-fixture\n");
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(ui.iter().any(|m| m.subtype == "hook_rewrite"));
}

#[tokio::test]
async fn a_rewrite_that_fails_the_schema_is_denied() {
    let (h, _, r) = one_write("hook-badrewrite", &ScriptedUser::default()).await;
    assert!(r[0].1);
    assert!(
        r[0].0
            .contains("rewrote the arguments into ones the tool does not accept")
            && r[0].0.contains("fail closed"),
        "{}",
        r[0].0
    );
    assert_eq!(h.ws.read("src/a.rs"), "old\n");
}

/// Every failing hook: the call is denied with a clear message, the file is
/// untouched, and the task goes on to complete.
#[tokio::test]
async fn failing_hooks_fail_closed() {
    let cases = [
        ("hook-garbage", "malformed JSON"),
        ("hook-trap", "hook `hook-fixture` failed (internal"),
        ("hook-loop", "exceeded its deadline"),
        ("hook-bomb", "exceeded its memory limit"),
    ];
    for (mode, needle) in cases {
        let (h, _, r) = one_write(mode, &ScriptedUser::default()).await;
        assert!(r[0].1, "{mode}: {}", r[0].0);
        assert!(r[0].0.contains(needle), "{mode}: {}", r[0].0);
        assert!(r[0].0.contains("denied"), "{mode}: {}", r[0].0);
        assert_eq!(h.ws.read("src/a.rs"), "old\n", "{mode}");
    }
}

/// A mode naming a hook that is not installed denies every call, the
/// host-native ones included (even `attempt_completion`): the task can only
/// stop at a limit, and nothing it asked for ran.
#[tokio::test]
async fn a_missing_hook_denies_every_call() {
    let mut h = hooked(json!([write_a(), complete("done")]), ApprovalPolicy::yes());
    h.config.max_turns = 2;
    let (id, outcome) = h
        .run_in("hook-missing", &ScriptedUser::default(), "edit a")
        .await;
    assert!(matches!(outcome, TaskOutcome::Paused { .. }), "{outcome:?}");
    let r = h.results(&id);
    assert_eq!(r.len(), 2);
    for (text, is_error) in &r {
        assert!(
            *is_error
                && text.contains(
                    "hook `no-such-hook`, listed by mode `hook-missing`, is not installed"
                )
                && text.contains("denied"),
            "{text}"
        );
    }
    assert_eq!(h.ws.read("src/a.rs"), "old\n");
}

#[tokio::test]
async fn hooks_run_with_their_own_grant() {
    // A read: with `.orchestration/` present, writes would need an intent.
    let h = hooked(
        json!([
            turn("", vec![call("read_file", json!({"path": "src/a.rs"}))]),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    h.ws.write(".orchestration/active_intents.yaml", "active_intents: []\n");
    let (id, _) = h
        .run_in("hook-sandbox", &ScriptedUser::default(), "go")
        .await;
    let r = h.results(&id);
    assert!(
        r[0].0
            .contains("orchestration readable: true, workspace readable: false, write: false"),
        "{}",
        r[0].0
    );
    assert!(!h.ws.path().join(".orchestration/hook-was-here").exists());
    assert!(!h.ws.path().join("hook-was-here").exists());
}

#[tokio::test]
async fn post_tool_sees_the_result_and_changed_paths() {
    let h = hooked(
        json!([
            write_a(),
            turn("", vec![call("read_file", json!({"path": "src/a.rs"}))]),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    let mut rx = h.events.subscribe();
    let (id, _) = h
        .run_in("hook-postcheck", &ScriptedUser::default(), "go")
        .await;
    let r = h.results(&id);
    assert!(!r[0].1 && !r[1].1, "{r:?}");
    let mut warnings = Vec::new();
    while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
        if let TaskEvent::Warning { message } = ev {
            warnings.push(message);
        }
    }
    // The fixture traps in post-tool unless it was given changed paths:
    // the write passes; the read and the host-native completion (which
    // change nothing, and reach post-tool hooks like every call) are
    // reported.
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("post-tool hook `hook-fixture` failed")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn secret_guard_and_protected_paths() {
    let aws = format!("let key = \"{}{}\";\n", "AKIA", "Z7QX2MHN4KLP8RTW");
    let h = hooked(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/keys.rs", "content": aws})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": ".env.local", "content": "A=1\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/ok.rs", "content": "fn ok() {}\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": ".roomodes", "content": "customModes: []\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "AGENTS.md", "content": "# rules\n"})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default()
        .hook(Approval::Approve)
        .hook(Approval::Deny { feedback: None });
    let (id, _) = h.run_in("guarded", &user, "go").await;
    let r = h.results(&id);
    assert!(
        r[0].1 && r[0].0.contains("secret-guard") && r[0].0.contains("AWS"),
        "{}",
        r[0].0
    );
    // The host names the hook once; the hook's reason does not repeat it.
    assert!(!r[0].0.contains(": secret-guard:"), "{}", r[0].0);
    assert!(
        !r[0].0.contains("Z7QX2MHN4KLP8RTW"),
        "the secret is never echoed"
    );
    // The refused call is recorded, and shown to the model from then on,
    // with the key redacted.
    for (n, req) in h.transport.requests().iter().enumerate().skip(1) {
        let body = req.to_string();
        assert!(!body.contains("Z7QX2MHN4KLP8RTW"), "request {n}: {body}");
        assert!(
            body.contains("[REDACTED: an AWS access key id]"),
            "request {n}"
        );
    }
    let api = format!("{:?}", h.store().load_api(&id, true).expect("messages"));
    let ui = format!("{:?}", h.store().load_ui(&id).expect("ui"));
    assert!(!api.contains("Z7QX2MHN4KLP8RTW") && !ui.contains("Z7QX2MHN4KLP8RTW"));
    assert!(!h.ws.path().join("src/keys.rs").exists());
    assert!(r[1].1 && r[1].0.contains(".env"), "{}", r[1].0);
    assert!(!h.ws.path().join(".env.local").exists());
    assert!(!r[2].1, "{}", r[2].0);
    assert!(!r[3].1, "approved: {}", r[3].0);
    assert_eq!(h.ws.read(".roomodes"), "customModes: []\n");
    assert!(r[4].1, "{}", r[4].0);
    assert!(!h.ws.path().join("AGENTS.md").exists());
    let asked = user.asked();
    assert_eq!(
        asked
            .iter()
            .filter(|q| q.starts_with("hook: protected-paths"))
            .count(),
        2,
        "{asked:?}"
    );
}

/// A hook written with `roost-hook-sdk`: its rewrite of parsed arguments
/// applies, post-tool receives the changed paths (it traps otherwise), and
/// its prompt contribution reaches the model.
#[tokio::test]
pub(crate) async fn a_hook_on_the_sdk_rewrites_observes_and_contributes() {
    let h = hooked(
        json!([
            write_a(),
            turn("", vec![call("read_file", json!({"path": "src/a.rs"}))]),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    let mut rx = h.events.subscribe();
    let (id, _) = h.run_in("sdk", &ScriptedUser::default(), "go").await;
    let r = h.results(&id);
    assert!(!r[0].1 && !r[1].1, "{r:?}");
    assert_eq!(h.ws.read("src/a.rs"), "new\n// via sdk-hook\n");
    while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
        assert!(
            !matches!(ev, TaskEvent::Warning { .. }),
            "post-tool must not fail: {ev:?}"
        );
    }
    let reqs = h.transport.requests();
    let system = reqs[0]["messages"][0]["content"].as_str().expect("system");
    assert!(system.contains("sdk-hook watching sdk"), "{system}");
}
