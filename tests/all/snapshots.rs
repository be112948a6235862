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
    out
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

    let first = serde_json::to_string_pretty(&h.transport.requests()[0]).expect("json");
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
        recorded_after(&h.agent.store, &id, 0).expect("log"),
        recorded
    );
    assert_eq!(
        recorded_after(&h.agent.store, &id, 3).expect("log"),
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
