//! Output whose shape matters, pinned with `insta` snapshots: what the
//! model is sent on the first turn (system prompt, tool definitions,
//! messages) and the NDJSON event stream a front-end reads. Values that
//! change per run (ids, temp paths) are replaced by names first. A change
//! here is a change to a contract: review the `.snap` diff.

use roost_core::events::{TaskEvent, recorded_after};
use roost_core::task::ApprovalPolicy;
use roost_tests::harness::{call, complete, harness, turn};
use roost_tests::user::ScriptedUser;
use serde_json::json;

/// `text` with the run's variable values named.
fn named(text: &str, replacements: &[(&str, &str)]) -> String {
    let mut out = text.to_owned();
    for (from, to) in replacements {
        if !from.is_empty() {
            out = out.replace(from, to);
        }
    }
    // Times change from run to run.
    regex::Regex::new(r#""created_at":\d+"#)
        .expect("regex")
        .replace_all(&out, "\"created_at\":\"[time]\"")
        .into_owned()
}

#[tokio::test]
async fn first_request_and_event_stream() {
    let h = harness(
        json!([
            turn(
                "Reading first.",
                vec![call("read_file", json!({"path": "notes.txt"}))]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "notes.txt", "content": "two\n"})
                )]
            ),
            complete("Rewrote notes.txt."),
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    h.ws.write("notes.txt", "one\n");
    let mut rx = h.events.subscribe();
    let (id, _) = h.run(&ScriptedUser::default(), "rewrite notes.txt").await;
    let ws = h.ws.path().display().to_string();

    // Keys sorted: a tool's schema keeps the order of the plugin-describe
    // cache that served it (written by whichever build described the
    // plugin first); what the request says does not depend on it.
    let first = roost_protocol::sorted_pretty(&h.transport.requests()[0]);
    insta::assert_snapshot!("first_request", named(&first, &[(&ws, "[workspace]")]));

    let mut lines = Vec::new();
    let mut asks = Vec::new();
    let mut recorded = Vec::new();
    while let Ok(ev) = rx.try_recv().map(|e| (*e).clone()) {
        if let TaskEvent::AskRequired { ask_id, .. } = &ev.event {
            asks.push(ask_id.clone());
        }
        lines.push(serde_json::to_string(&ev).expect("json"));
        if ev.seq.is_some() {
            recorded.push(ev);
        }
    }
    // Every event but the streaming partials is in the task's log, numbered
    // 1, 2, 3, … in the order it was published; the log reads back the same.
    let seqs: Vec<i64> = recorded.iter().filter_map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    assert_eq!(
        recorded_after(h.store(), &id, 0).await.expect("log"),
        recorded
    );
    assert_eq!(
        recorded_after(h.store(), &id, 3).await.expect("log"),
        recorded[3..]
    );
    let mut names: Vec<(String, String)> =
        vec![(id.clone(), "[task]".into()), (ws, "[workspace]".into())];
    names.extend(
        asks.iter()
            .enumerate()
            .map(|(i, a)| (a.clone(), format!("[ask {}]", i + 1))),
    );
    let names: Vec<(&str, &str)> = names
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    insta::assert_snapshot!("event_stream", named(&lines.join("\n"), &names));
}

/// The system prompt of every built-in mode, as the model receives it.
#[tokio::test]
async fn the_system_prompt_of_each_built_in_mode() {
    for mode in ["code", "architect", "ask", "debug", "orchestrator"] {
        let h = harness(json!([complete("done")]), ApprovalPolicy::yes());
        let _ = h.run_in(mode, &ScriptedUser::default(), "hello").await;
        let first = &h.transport.requests()[0];
        let system = first["messages"][0]["content"]
            .as_str()
            .expect("the system prompt is the first message");
        let ws = h.ws.path().display().to_string();
        insta::assert_snapshot!(
            format!("system_prompt_{mode}"),
            named(system, &[(&ws, "[workspace]")])
        );
    }
}

/// Every refusal the gates give the model, in one task per mode: what the
/// model reads is pinned (unknown tool, bad arguments, a path outside the
/// workspace, an ignored path, a write without an intent, a write outside
/// the intent's scope, an authority file, a person's no, a repeated call,
/// a tool group the mode lacks, a file the mode may not edit).
#[tokio::test]
async fn every_refusal_text() {
    let one = |name: &str, args: serde_json::Value| turn("", vec![call(name, args)]);
    let write = |path: &str| one("write_to_file", json!({"path": path, "content": "x\n"}));
    let h = harness(
        json!([
            one("no_such_tool", json!({})),
            one("read_file", json!({})),
            one("read_file", json!({"path": 7})),
            one("read_file", json!({"path": "../outside.txt"})),
            one("read_file", json!({"path": "/etc/passwd"})),
            one("read_file", json!({"path": ".env"})),
            write("src/a.rs"),
            one("select_active_intent", json!({"intent_id": "INT-404"})),
            one("select_active_intent", json!({"intent_id": "INT-001"})),
            write("docs/out_of_scope.md"),
            write(".orchestration/active_intents.yaml"),
            write(".rooignore"),
            write("src/denied.rs"),
            one("list_files", json!({"path": "."})),
            one("list_files", json!({"path": "."})),
            one("list_files", json!({"path": "."})),
            complete("done")
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    h.ws.write(".rooignore", ".env\n");
    h.ws.write(".env", "SECRET=1\n");
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-001, name: Core, status: IN_PROGRESS, owned_scope: [\"src/**\"]}\n",
    );
    let user = ScriptedUser::default()
        .approve(roost_core::task::Approval::Deny {
            feedback: Some("not that file".into()),
        })
        .guide("stop listing");
    let (id, _) = h.run(&user, "refusals").await;
    let ws = h.ws.path().display().to_string();
    let mut out = String::new();
    for (i, (text, is_error)) in h.results(&id).iter().enumerate() {
        out.push_str(&format!(
            "--- result {} (error: {is_error})\n{text}\n",
            i + 1
        ));
    }
    // Refusals of the mode gate: a group the mode lacks, a file it may not
    // edit.
    for (mode, path) in [("ask", "notes.md"), ("architect", "src/main.rs")] {
        let h = harness(
            json!([write(path), complete("done")]),
            ApprovalPolicy::yes(),
        );
        let (id, _) = h.run_in(mode, &ScriptedUser::default(), "edit").await;
        let (text, is_error) = h.results(&id)[0].clone();
        out.push_str(&format!(
            "--- {mode} mode, {path} (error: {is_error})\n{text}\n"
        ));
    }
    insta::assert_snapshot!("refusals", named(&out, &[(&ws, "[workspace]")]));
}
