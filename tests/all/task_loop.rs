//! The task loop end to end: the scripted provider replays model turns
//! through the real SSE/wire decoding path, tools run in real components,
//! history lives in a real SQLite file. Only the person is scripted.

use roost_core::events::TaskEvent;
use roost_core::llm::{ContentBlock, Role};
use roost_core::task::{Approval, ApprovalPolicy, CompletionAnswer, TaskOutcome, TaskStatus};
use roost_tests::harness::{
    Harness, assert_completed_with_its_totals, assert_pairing, call, complete, harness,
    scripted_harness, trace_lines, turn,
};
use roost_tests::user::ScriptedUser;
use serde_json::{Value, json};

#[tokio::test]
async fn reads_edits_lists_and_completes() {
    let h = harness(
        json!([
            turn(
                "Let me look at the code.",
                vec![call("read_file", json!({"path": "src/main.rs"}))]
            ),
            turn(
                "I'll fix the greeting.",
                vec![call(
                    "apply_diff",
                    json!({"path": "src/main.rs", "diff": "<<<<<<< SEARCH\n:start_line:2\n-------\n    println!(\"helo\");\n=======\n    println!(\"hello\");\n>>>>>>> REPLACE"}),
                )],
            ),
            turn(
                "",
                vec![
                    call("list_files", json!({"path": ".", "recursive": true})),
                    call("read_file", json!({"path": "src/main.rs"}))
                ]
            ),
            complete("Fixed the typo in src/main.rs."),
        ]),
        ApprovalPolicy::yes(),
    );
    h.ws.write("src/main.rs", "fn main() {\n    println!(\"helo\");\n}\n");
    let mut rx = h.events.subscribe();
    let user = ScriptedUser::default();
    let (id, outcome) = h.run(&user, "Fix the typo in main.rs").await;
    assert_eq!(
        outcome,
        TaskOutcome::Completed {
            result: "Fixed the typo in src/main.rs.".into()
        }
    );
    assert_eq!(
        h.ws.read("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    let results = h.results(&id);
    assert_eq!(results.len(), 5);
    assert!(
        results[0].0.contains("2 |     println!(\"helo\");"),
        "{}",
        results[0].0
    );
    assert!(results[2].0.contains("src/main.rs"), "{}", results[2].0);
    assert!(results.iter().all(|(_, err)| !err));
    assert_pairing(h.store(), &id);
    let task = h.store().get_task(&id).expect("task");
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.usage.input_tokens, 400);
    assert_eq!(task.usage.output_tokens, 40);
    // The edit's diff reached the event stream; the text streamed in pieces.
    let mut saw_diff = false;
    let mut partials = 0;
    while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
        match ev {
            TaskEvent::ToolCallResult { diff: Some(d), .. } => {
                saw_diff |= d.contains("+    println!(\"hello\");")
            }
            TaskEvent::MessagePartial { .. } => partials += 1,
            _ => {}
        }
    }
    assert!(saw_diff);
    assert!(partials > 3);
    // Every request carried the tool definitions and a fresh system prompt.
    let reqs = h.transport.requests();
    assert_eq!(reqs.len(), 4);
    assert!(
        reqs[0]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["function"]["name"] == "attempt_completion")
    );
    assert_eq!(reqs[0]["messages"][0]["role"], "system");
    // Each request carries the whole conversation so far, in order.
    let roles: Vec<&str> = reqs[3]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "tool"
        ]
    );
}

#[tokio::test]
async fn denial_with_feedback_reaches_the_model() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "notes.txt", "content": "x"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "docs/notes.md", "content": "x"})
                )]
            ),
            complete("Wrote docs/notes.md."),
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    let user = ScriptedUser::default().approve(Approval::Deny {
        feedback: Some("put it under docs/ as markdown".into()),
    });
    let (id, outcome) = h.run(&user, "write notes").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let results = h.results(&id);
    assert!(results[0].1);
    assert!(
        results[0].0.contains("put it under docs/ as markdown"),
        "{}",
        results[0].0
    );
    assert!(!h.ws.path().join("notes.txt").exists());
    assert_eq!(h.ws.read("docs/notes.md"), "x");
    assert_eq!(
        user.asked()
            .iter()
            .filter(|q| q.starts_with("approve"))
            .count(),
        2
    );
    assert_pairing(h.store(), &id);
}

#[tokio::test]
async fn malformed_json_is_never_executed_and_the_model_corrects_it() {
    let h = harness(
        json!([
            {"tool_calls": [{"name": "write_to_file", "raw_args": "{\"path\": \"a.txt\", \"content\": \"x"}]},
            turn("", vec![call("write_to_file", json!({"path": "a.txt", "content": "fixed"}))]),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default();
    let (id, outcome) = h.run(&user, "write a").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let results = h.results(&id);
    assert!(results[0].1);
    assert!(
        results[0]
            .0
            .contains("malformed JSON in arguments of write_to_file"),
        "{}",
        results[0].0
    );
    assert_eq!(h.ws.read("a.txt"), "fixed");
    assert_pairing(h.store(), &id);
}

#[tokio::test]
async fn unknown_tool_and_schema_invalid_args_are_errors_the_model_sees() {
    let h = harness(
        json!([
            turn("", vec![call("delete_everything", json!({}))]),
            turn(
                "",
                vec![call("read_file", json!({"path": 3, "bogus": true}))]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let (id, _) = h.run(&ScriptedUser::default(), "go").await;
    let results = h.results(&id);
    assert!(
        results[0].1
            && results[0]
                .0
                .contains("Tool `delete_everything` does not exist"),
        "{}",
        results[0].0
    );
    assert!(
        results[0].0.contains("read_file"),
        "lists the available tools"
    );
    assert!(
        results[1].1
            && results[1]
                .0
                .contains("Invalid arguments for tool `read_file`"),
        "{}",
        results[1].0
    );
    assert!(
        results[1].0.contains("/path") && results[1].0.contains("bogus"),
        "every violation listed: {}",
        results[1].0
    );
}

#[tokio::test]
async fn repetition_is_caught_and_the_user_is_asked() {
    let same = || turn("", vec![call("list_files", json!({"path": "."}))]);
    let h = harness(
        json!([same(), same(), same(), complete("done")]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default().guide("stop listing, just finish");
    let (id, outcome) = h.run(&user, "go").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let results = h.results(&id);
    assert!(!results[0].1 && !results[1].1);
    assert!(
        results[2].1 && results[2].0.contains("same arguments 3 times"),
        "{}",
        results[2].0
    );
    assert!(results[2].0.contains("stop listing, just finish"));
    assert!(user.asked().iter().any(|q| q.starts_with("guidance")));
}

#[tokio::test]
async fn mistake_limit_asks_the_user_and_stops_without_guidance() {
    let h = harness(
        json!([
            turn("thinking", vec![]),
            turn("still thinking", vec![]),
            turn("hmm", vec![])
        ]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default();
    let (id, outcome) = h.run(&user, "go").await;
    assert!(
        matches!(outcome, TaskOutcome::Aborted { .. }),
        "{outcome:?}"
    );
    assert_eq!(
        h.store().get_task(&id).expect("task").status,
        TaskStatus::Aborted
    );
    let history = h.store().load_api(&id, true).expect("history");
    let corrective = history
        .iter()
        .filter(|m| {
            m.message.content.iter().any(
                |b| matches!(b, ContentBlock::Text { text } if text.contains("did not use a tool")),
            )
        })
        .count();
    assert_eq!(corrective, 3);
    assert!(
        user.asked()
            .iter()
            .any(|q| q.contains("3 mistakes in a row"))
    );
}

#[tokio::test]
async fn mistake_limit_with_guidance_continues() {
    let h = harness(
        json!([
            turn("a", vec![]),
            turn("b", vec![]),
            turn("c", vec![]),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default().guide("use attempt_completion");
    let (id, outcome) = h.run(&user, "go").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let reqs = h.transport.requests();
    assert!(
        reqs[3].to_string().contains("use attempt_completion"),
        "guidance sent to the model"
    );
    assert_pairing(h.store(), &id);
}

#[tokio::test]
async fn completion_rejected_with_feedback_then_accepted() {
    let h = harness(
        json!([
            complete("All done."),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "CHANGELOG.md", "content": "- fix\n"})
                )]
            ),
            complete("All done, changelog updated."),
        ]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default().complete(CompletionAnswer::Feedback(
        "also update the changelog".into(),
    ));
    let (id, outcome) = h.run(&user, "go").await;
    assert_eq!(
        outcome,
        TaskOutcome::Completed {
            result: "All done, changelog updated.".into()
        }
    );
    let results = h.results(&id);
    assert!(results[0].0.contains("also update the changelog"));
    assert_eq!(
        user.asked()
            .iter()
            .filter(|q| q.starts_with("completion"))
            .count(),
        2
    );
    assert_eq!(h.ws.read("CHANGELOG.md"), "- fix\n");
}

/// A "no" without words to the completion review is not an acceptance:
/// the model is told the result was not accepted and goes on.
#[tokio::test]
async fn a_declined_result_is_not_accepted() {
    let h = harness(
        json!([complete("First try."), complete("Second try.")]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    let user = ScriptedUser::default().complete(CompletionAnswer::Declined);
    let (id, outcome) = h.run(&user, "go").await;
    assert_eq!(
        outcome,
        TaskOutcome::Completed {
            result: "Second try.".into()
        }
    );
    let results = h.results(&id);
    assert!(
        results[0].0.contains("did not accept the result")
            && !results[0].0.contains("accepted the result."),
        "{}",
        results[0].0
    );
}

#[tokio::test]
async fn followup_questions_and_todos() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "ask_followup_question",
                    json!({"question": "Which file?", "follow_up": ["a.txt", "b.txt"]})
                )]
            ),
            turn(
                "",
                vec![call(
                    "update_todo_list",
                    json!({"todos": "[x] ask\n[-] write\n[ ] finish"})
                )]
            ),
            turn(
                "",
                vec![call("update_todo_list", json!({"todos": "not a list"}))]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default().answer("b.txt");
    let (id, _) = h.run(&user, "go").await;
    let results = h.results(&id);
    assert!(results[0].0.contains("b.txt"));
    assert!(results[2].1, "a bad todo list is an error");
    let todos = h.store().get_todos(&id).expect("todos");
    assert_eq!(todos.len(), 3);
}

#[tokio::test]
async fn provider_errors_are_retried_then_succeed() {
    let h = harness(
        json!([
            {"http_error": {"status": 429, "retry_after_secs": 0.01, "body": "slow down"}},
            {"http_error": {"status": 500}},
            complete("first try after errors"),
        ]),
        ApprovalPolicy::yes(),
    );
    let mut rx = h.events.subscribe();
    let (_, outcome) = h.run(&ScriptedUser::default(), "go").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let mut retries = 0;
    while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
        if matches!(ev, TaskEvent::Retrying { .. }) {
            retries += 1;
        }
    }
    assert_eq!(retries, 2);
}

#[tokio::test]
async fn truncated_stream_and_error_events_are_retried() {
    let h = harness(
        json!([
            {"text": "partial reply that never", "truncate": true},
            {"text": "x", "stream_error": "Overloaded"},
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    // The broken partial replies never became history.
    let h2 = h.store().load_api(&id, true).expect("history");
    assert!(!h2.iter().any(|m| {
        serde_json::to_string(&m.message.content)
            .expect("json")
            .contains("never")
    }));
}

#[tokio::test]
async fn a_provider_that_keeps_failing_fails_the_task_with_the_error_in_history() {
    let h = harness(
        json!([{"http_error": {"status": 401, "body": "bad key"}}]),
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    let TaskOutcome::Failed { error } = outcome else {
        panic!("expected failure")
    };
    assert!(
        error.contains("401") && error.contains("bad key"),
        "{error}"
    );
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(
        ui.iter()
            .any(|m| m.subtype == "error" && m.text.contains("401"))
    );
    assert_eq!(
        h.store().get_task(&id).expect("task").status,
        TaskStatus::Failed
    );
}

#[tokio::test]
async fn resume_answers_dangling_calls_and_finishes() {
    // The first run's script ends after a tool call: the task fails with the
    // call answered; a second run resumes from history with a new script.
    let h = harness(
        json!([turn("", vec![call("read_file", json!({"path": "a.txt"}))])]),
        ApprovalPolicy::yes(),
    );
    h.ws.write("a.txt", "A\n");
    let (id, outcome) = h.run(&ScriptedUser::default(), "read a").await;
    assert!(matches!(outcome, TaskOutcome::Failed { .. }));
    // Simulate a crash mid-tool: an assistant tool_use with no result.
    h.store()
        .append_api(
            &id,
            &roost_core::llm::Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "dangling".into(),
                    name: "read_file".into(),
                    input: json!({"path": "a.txt"}),
                }],
            },
        )
        .expect("append");

    let second = h.another_process(json!([complete("resumed and done")]));
    let outcome = h
        .resume_on(&second, &id[..13], &ScriptedUser::default())
        .await
        .expect("resumes");
    assert_eq!(
        outcome,
        TaskOutcome::Completed {
            result: "resumed and done".into()
        }
    );
    assert_pairing(h.store(), &id);
    let results = h.results(&id);
    assert!(results.iter().any(|(c, e)| *e && c.contains("interrupted")));
    assert!(
        h.resume_on(&second, &id, &ScriptedUser::default())
            .await
            .is_err(),
        "completed tasks do not resume"
    );
}

/// A task is held by the engine that created it from its first commit:
/// another live process cannot take it before it starts (its run gives
/// up without writing), and the task then runs once, on its creator.
#[tokio::test]
async fn a_created_task_is_held_by_its_creator_before_it_starts() {
    let h = harness(
        json!([complete("done by its creator")]),
        ApprovalPolicy::yes(),
    );
    let id = h.create("code", "hold me").await.expect("created");
    let other = h.another_process(json!([complete("taken")]));
    let taken = h.resume_on(&other, &id, &ScriptedUser::default()).await;
    assert!(
        matches!(
            &taken,
            Ok(TaskOutcome::Aborted { reason }) if reason.contains("another process or host runs the task")
        ) || taken.is_err(),
        "{taken:?}"
    );
    let outcome = h
        .drive(h.engine(), &id, &ScriptedUser::default())
        .await
        .expect("runs");
    assert_eq!(
        outcome,
        TaskOutcome::Completed {
            result: "done by its creator".into()
        }
    );
    let record = h.store().get_task(&id).expect("task");
    assert_eq!(record.status, TaskStatus::Completed);
    assert_pairing(h.store(), &id);
    // The other process wrote nothing: one completion, its creator's.
    let api = h.store().load_api(&id, true).expect("history");
    let texts = format!("{api:?}");
    assert!(texts.contains("done by its creator"), "{texts}");
    assert!(!texts.contains("taken"), "{texts}");
}

#[tokio::test]
async fn max_turns_pauses_the_task() {
    let h = harness(
        json!([
            turn("", vec![call("list_files", json!({"path": "."}))]),
            turn("", vec![call("read_file", json!({"path": "x"}))]),
        ]),
        ApprovalPolicy::yes(),
    );
    let mut h = h;
    h.config.max_turns = 2;
    let mut rx = h.events.subscribe();
    let (id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    assert!(matches!(outcome, TaskOutcome::Paused { .. }));
    assert_eq!(
        h.store().get_task(&id).expect("task").status,
        TaskStatus::Paused
    );
    // Events, history and outcome agree: paused, not failed.
    let mut last = None;
    while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
        assert!(!matches!(ev, TaskEvent::Failed { .. }), "{ev:?}");
        last = Some(ev);
    }
    assert!(matches!(last, Some(TaskEvent::Paused { .. })), "{last:?}");
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(
        ui.iter()
            .any(|m| m.subtype == "paused" && m.text.contains("roost resume"))
    );
    assert!(
        !ui.iter()
            .any(|m| m.subtype == "error" && m.text.contains("limit"))
    );
}

/// With no one to give guidance, the repetition gate stops the task and
/// says why (not "stopped by the user").
#[tokio::test]
async fn repetition_without_guidance_stops_with_the_real_reason() {
    let same = || turn("", vec![call("list_files", json!({"path": "."}))]);
    let h = harness(json!([same(), same(), same()]), ApprovalPolicy::yes());
    let (id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    let TaskOutcome::Aborted { reason } = outcome else {
        panic!("expected a stop")
    };
    assert!(!reason.contains("by the user"), "{reason}");
    assert!(reason.contains("same arguments 3 times"), "{reason}");
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(
        ui.iter()
            .any(|m| m.text.contains("same arguments 3 times") && m.text.starts_with("aborted"))
    );
}

/// With a small window, history is condensed so that no request the
/// provider receives (as sent: system prompt, messages and tool
/// definitions) exceeds the window, summary requests included; pairs stay
/// intact, nothing is deleted, and the export marks what was condensed.
#[tokio::test]
async fn condensation_keeps_every_request_inside_the_window() {
    const WINDOW: u64 = 8_000;
    let mut turns: Vec<Value> = (0..8)
        .map(|i| {
            turn(
                "",
                vec![call("read_file", json!({"path": format!("f{i}.txt")}))],
            )
        })
        .collect();
    turns.push(complete("done"));
    let h = scripted_harness(
        json!({"turns": turns, "summary": "Summary: read f0..f7, all filler."}),
        ApprovalPolicy::yes(),
    );
    for i in 0..8 {
        h.ws.write(&format!("f{i}.txt"), &"filler line\n".repeat(300));
    }
    let mut h = h;
    h.config.context_window = WINDOW;
    h.config.keep_recent_messages = 4;
    let (id, outcome) = h.run(&ScriptedUser::default(), "read everything").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let reqs = h.transport.requests();
    let summaries = reqs
        .iter()
        .filter(|r| {
            r.get("tools")
                .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
        })
        .count();
    assert!(summaries >= 1, "the history was condensed");
    for (n, r) in reqs.iter().enumerate() {
        let tokens = r.to_string().len() / 4;
        assert!(
            tokens as u64 <= WINDOW,
            "request {n} is ~{tokens} tokens, over the {WINDOW}-token window"
        );
    }
    let all = h.store().load_api(&id, true).expect("history");
    assert!(
        all.iter().any(|m| m.hidden),
        "older messages hidden, not deleted"
    );
    assert_eq!(
        all.first().map(|m| m.hidden),
        Some(false),
        "first message kept"
    );
    assert_pairing(h.store(), &id);
    let last = reqs.last().expect("requests");
    assert!(
        last.to_string().contains("Summary: read f0..f7"),
        "summary sent to the model"
    );
    // The Roo-format export marks condensed messages and carries the summary.
    let dir = tempfile::tempdir().expect("tempdir");
    h.store().export_roo(&id, dir.path()).expect("export");
    let api: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("api_conversation_history.json")).expect("read"),
    )
    .expect("json");
    let summary = api
        .iter()
        .find(|m| m["isSummary"] == true)
        .expect("a summary message");
    assert!(
        summary["content"]
            .to_string()
            .contains("Summary: read f0..f7")
    );
    let id_of = summary["condenseId"].as_str().expect("condenseId");
    assert!(api.iter().any(|m| m["condenseParent"] == id_of));
    assert_eq!(
        api.iter().filter(|m| m.get("isSummary").is_none()).count(),
        all.len(),
        "every stored message is exported"
    );
    let ui: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("ui_messages.json")).expect("read"),
    )
    .expect("json");
    assert!(ui.iter().any(|m| {
        m["say"] == "condense_context"
            && m["contextCondense"]["summary"]
                .as_str()
                .is_some_and(|s| s.contains("Summary"))
    }));
}

/// On a small window, condensing leaves half the room the system prompt
/// and tools leave under the threshold free, so it does not condense
/// again at once: 16 reads of ~3.4 KB in a 9,000-token window make at
/// most one condensation per three turns (the newest turns are kept
/// whole, not cut). The summaries' own tokens count in the task's totals.
#[tokio::test]
async fn condensation_does_not_thrash_and_its_tokens_count() {
    // Room for the tools' definitions (every mode's, `new_task` included)
    // and three reads between condensations.
    const WINDOW: u64 = 9_000;
    const READS: usize = 16;
    let mut turns: Vec<Value> = (0..READS)
        .map(|i| {
            turn(
                "",
                vec![call("read_file", json!({"path": format!("f{i}.txt")}))],
            )
        })
        .collect();
    turns.push(complete("done"));
    let h = scripted_harness(
        json!({
            "turns": turns,
            "summary": "Summary: read some files, all filler.",
            "summary_usage": {"input_tokens": 1000, "output_tokens": 50}
        }),
        ApprovalPolicy::yes(),
    );
    for i in 0..READS {
        h.ws.write(
            &format!("f{i}.txt"),
            &"filler line for reading\n".repeat(140),
        );
    }
    let mut h = h;
    h.config.context_window = WINDOW;
    let (id, outcome) = h.run(&ScriptedUser::default(), "read everything").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let reqs = h.transport.requests();
    let is_summary = |r: &Value| {
        r.get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
    };
    let summaries = reqs.iter().filter(|r| is_summary(r)).count();
    let turns = reqs.len() - summaries;
    assert!(summaries >= 1, "the history was condensed");
    assert!(
        summaries * 3 <= turns,
        "{summaries} condensations in {turns} turns: more than one per three turns"
    );
    let task = h.store().get_task(&id).expect("task");
    let turn_tokens = 100 * u64::try_from(turns).expect("turns");
    assert_eq!(
        task.usage.input_tokens,
        turn_tokens + 1000 * u64::try_from(summaries).expect("summaries"),
        "the summaries' tokens count"
    );
    assert_completed_with_its_totals(h.store(), &id);
    assert_pairing(h.store(), &id);
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn architect_may_edit_markdown_but_not_code() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/main.rs", "content": "fn main() {}"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "docs/plan.md", "content": "# Plan\n"})
                )]
            ),
            complete("planned"),
        ]),
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h
        .run_in("architect", &ScriptedUser::default(), "plan it")
        .await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let results = h.results(&id);
    assert!(results[0].1);
    assert!(
        results[0].0.contains("FileRestrictionError: This mode (🏗️ Architect) can only edit files matching pattern: \\.md$ (Markdown files only). Got: src/main.rs"),
        "{}",
        results[0].0
    );
    assert!(!h.ws.path().join("src/main.rs").exists());
    assert_eq!(h.ws.read("docs/plan.md"), "# Plan\n");
    let req = &h.transport.requests()[0];
    assert!(
        req["messages"][0]["content"]
            .as_str()
            .expect("system")
            .contains("technical lead")
    );
}

#[tokio::test]
async fn ask_mode_is_not_offered_edit_tools_and_the_gate_checks_again() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "a.txt", "content": "x"})
                )]
            ),
            complete("answered")
        ]),
        ApprovalPolicy::yes(),
    );
    let (id, _) = h.run_in("ask", &ScriptedUser::default(), "explain").await;
    let names = tool_names(&h.transport.requests()[0]);
    assert!(
        names.contains(&"read_file".to_owned()) && names.contains(&"attempt_completion".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"write_to_file".to_owned()), "{names:?}");
    let results = h.results(&id);
    assert!(
        results[0].1 && results[0].0.contains("not allowed in ask mode"),
        "{}",
        results[0].0
    );
    assert!(!h.ws.path().join("a.txt").exists());
}

#[tokio::test]
async fn roomodes_overrides_a_builtin_mode() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "a.txt", "content": "x"})
                )]
            ),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    h.ws.write(
        ".roomodes",
        "customModes:\n  - slug: code\n    name: Read-only Code\n    roleDefinition: You are a careful reviewer who never edits.\n    customInstructions: Cite line numbers.\n    groups: [read]\n",
    );
    let (id, _) = h.run(&ScriptedUser::default(), "review").await;
    let req = &h.transport.requests()[0];
    let system = req["messages"][0]["content"].as_str().expect("system");
    assert!(
        system.starts_with("You are a careful reviewer who never edits."),
        "{system}"
    );
    assert!(system.contains("Cite line numbers."));
    assert!(!tool_names(req).contains(&"write_to_file".to_owned()));
    assert!(h.results(&id)[0].0.contains("not allowed in code mode"));
}

#[tokio::test]
async fn an_invalid_roomodes_is_reported_and_the_task_goes_on() {
    let h = harness(json!([complete("done")]), ApprovalPolicy::yes());
    h.ws.write(
        ".roomodes",
        "customModes:\n  - slug: broken\n    roleDefinition: no name\n    groups: [read]\n",
    );
    let mut rx = h.events.subscribe();
    let (id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let ui = h.store().load_ui(&id).expect("ui");
    let err = ui
        .iter()
        .find(|m| m.text.contains("invalid mode file"))
        .expect("reported");
    assert!(
        err.text.contains(".roomodes") && err.text.contains("field `name`"),
        "{}",
        err.text
    );
    let mut warned = false;
    while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
        warned |= matches!(ev, TaskEvent::Warning { .. });
    }
    assert!(warned);
}

#[tokio::test]
async fn switch_mode_needs_approval_and_persists() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "switch_mode",
                    json!({"mode_slug": "code", "reason": "to implement"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "switch_mode",
                    json!({"mode_slug": "code", "reason": "please"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "a.txt", "content": "x"})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::from_groups("read,edit").expect("policy"),
    );
    let user = ScriptedUser::default()
        .approve(Approval::Deny {
            feedback: Some("not yet".into()),
        })
        .approve(Approval::Approve);
    let (id, outcome) = h.run_in("ask", &user, "do it").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let results = h.results(&id);
    assert!(
        results[0].1 && results[0].0.contains("not yet"),
        "{}",
        results[0].0
    );
    assert!(
        results[1].0.contains("Switched from ask mode to code mode"),
        "{}",
        results[1].0
    );
    assert!(!results[2].1, "{}", results[2].0);
    assert_eq!(h.ws.read("a.txt"), "x");
    assert_eq!(h.store().get_task(&id).expect("task").mode, "code");
    let reqs = h.transport.requests();
    assert!(!tool_names(&reqs[1]).contains(&"write_to_file".to_owned()));
    assert!(tool_names(&reqs[2]).contains(&"write_to_file".to_owned()));
}

#[tokio::test]
async fn unknown_mode_is_refused_before_a_task_exists() {
    let h = harness(json!([]), ApprovalPolicy::yes());
    let err = h.create("wizard", "x").await.expect_err("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("unknown mode `wizard`") && msg.contains("architect"),
        "{msg}"
    );
    assert!(h.store().list_tasks(10).expect("list").is_empty());
}

const INTENTS: &str = "active_intents:
  - id: INT-001
    name: Harden the auth module
    status: IN_PROGRESS
    owned_scope: [\"src/auth/**\"]
    constraints: [\"no new dependencies\"]
    acceptance_criteria: [\"tests pass\"]
  - id: INT-002
    name: Old work
    status: DONE
    owned_scope: [\"docs/**\"]
";

fn orchestrated(h: &Harness) {
    h.ws.write(".orchestration/active_intents.yaml", INTENTS);
    h.ws.write(".orchestration/AGENT.md", "Prefer small commits.\n");
    h.ws.write(".orchestration/.intentignore", "CHANGELOG.md\n");
    h.ws.write("src/auth/x.rs", "old\n");
}

#[tokio::test]
async fn destructive_tools_need_an_intent_and_stay_in_its_scope() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/auth/x.rs", "content": "new\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "select_active_intent",
                    json!({"intent_id": "INT-404"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "select_active_intent",
                    json!({"intent_id": "INT-002"})
                )]
            ),
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
                    json!({"path": "src/auth/x.rs", "content": "new\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/other.rs", "content": "nope\n"})
                )]
            ),
            turn(
                "",
                vec![call("read_file", json!({"path": "src/other_existing.rs"}))]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    orchestrated(&h);
    h.ws.write("src/other_existing.rs", "readable\n");
    let user = ScriptedUser::default();
    let (id, outcome) = h.run(&user, "harden auth").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[0].1 && r[0].0.contains("intent_required") && r[0].0.contains("select_active_intent"),
        "{}",
        r[0].0
    );
    assert!(
        r[1].1 && r[1].0.contains("unknown_intent") && r[1].0.contains("INT-001"),
        "{}",
        r[1].0
    );
    assert!(
        r[2].1 && r[2].0.contains("intent_not_in_progress"),
        "{}",
        r[2].0
    );
    assert!(
        !r[3].1 && r[3].0.starts_with("<intent_context>"),
        "{}",
        r[3].0
    );
    for needle in [
        "src/auth/**",
        "no new dependencies",
        "tests pass",
        "Prefer small commits.",
    ] {
        assert!(r[3].0.contains(needle), "{needle} missing from {}", r[3].0);
    }
    assert!(!r[4].1, "{}", r[4].0);
    assert_eq!(h.ws.read("src/auth/x.rs"), "new\n");
    assert!(r[5].1, "{}", r[5].0);
    let v: Value =
        serde_json::from_str(r[5].0.trim_start_matches("[ERROR] ")).expect("structured error");
    assert_eq!(
        v,
        json!({"code": "scope_violation", "intent_id": "INT-001", "path": "src/other.rs"})
    );
    assert!(!h.ws.path().join("src/other.rs").exists());
    assert!(
        !r[6].1,
        "read-only tools read the whole workspace: {}",
        r[6].0
    );
    assert_eq!(
        h.store()
            .get_task(&id)
            .expect("task")
            .active_intent
            .as_deref(),
        Some("INT-001")
    );
    // The scope question shows the change, as an edit's approval does.
    let scope_q = user
        .asked()
        .into_iter()
        .find(|q| q.starts_with("scope: INT-001 write_to_file src/other.rs"))
        .expect("the scope question was asked");
    assert!(
        scope_q.contains("+++ b/src/other.rs") && scope_q.contains("\n+"),
        "{scope_q}"
    );

    let trace = trace_lines(&h.ws.path());
    let mutation = trace
        .iter()
        .find(|e| e["kind"] == "mutation" && e["intent_id"] == "INT-001")
        .expect("mutation traced");
    let f = &mutation["files"][0];
    assert_eq!(f["path"], "src/auth/x.rs");
    assert_eq!(f["sha256_before"], roost_sha256(b"old\n"));
    assert_eq!(f["sha256_after"], roost_sha256(b"new\n"));
    assert_eq!(f["lines_changed"], 2);
    assert_eq!(mutation["task_id"], id.as_str());
    assert_eq!(mutation["mode"], "code");
    assert!(trace.iter().any(|e| {
        e["kind"] == "violation"
            && e["detail"]
                .as_str()
                .is_some_and(|d| d.contains("src/other.rs"))
    }));
}

fn roost_sha256(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

#[tokio::test]
async fn an_out_of_scope_write_can_be_approved_once() {
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
                    json!({"path": "src/other.rs", "content": "ok\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/again.rs", "content": "no\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "CHANGELOG.md", "content": "- auth\n"})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    orchestrated(&h);
    let user = ScriptedUser::default().scope(Approval::Approve);
    let (id, _) = h.run(&user, "go").await;
    let r = h.results(&id);
    assert!(!r[1].1, "{}", r[1].0);
    assert_eq!(h.ws.read("src/other.rs"), "ok\n");
    assert!(
        r[2].1 && r[2].0.contains("scope_violation"),
        "the widening was for one call only: {}",
        r[2].0
    );
    assert!(!h.ws.path().join("src/again.rs").exists());
    assert!(!r[3].1, ".intentignore exempts CHANGELOG.md: {}", r[3].0);
    assert_eq!(h.ws.read("CHANGELOG.md"), "- auth\n");
    assert_eq!(
        user.asked()
            .iter()
            .filter(|q| q.starts_with("scope:"))
            .count(),
        2,
        "{:?}",
        user.asked()
    );
    let trace = trace_lines(&h.ws.path());
    assert!(trace.iter().any(|e| {
        e["kind"] == "approval"
            && e["detail"]
                .as_str()
                .is_some_and(|d| d.contains("src/other.rs"))
    }));
}

#[tokio::test]
async fn without_orchestration_intents_are_off() {
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
                    json!({"path": "a.txt", "content": "x"})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    let (id, _) = h.run(&ScriptedUser::default(), "go").await;
    let r = h.results(&id);
    assert!(r[0].1 && r[0].0.contains("intents_off"), "{}", r[0].0);
    assert!(!r[1].1, "{}", r[1].0);
    assert!(!h.ws.path().join(".orchestration").exists());
}

/// `select_active_intent` is offered only where intents are on (the
/// workspace has `.orchestration/`), and from the turn they turn on.
#[tokio::test]
async fn select_active_intent_is_offered_only_where_intents_are_on() {
    let h = harness(
        json!([
            turn("", vec![call("list_files", json!({"path": "."}))]),
            complete("done")
        ]),
        ApprovalPolicy::yes(),
    );
    let names = |req: &Value| -> Vec<String> {
        req["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let (_id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let reqs = h.transport.requests();
    assert!(names(&reqs[0]).iter().any(|n| n == "attempt_completion"));
    assert!(!names(&reqs[0]).iter().any(|n| n == "select_active_intent"));
    // Tool schemas go out as their portable subset.
    let tools = reqs[0]["tools"].to_string();
    assert!(!tools.contains("$schema"), "{tools}");
    assert!(!tools.contains("\"uint\""), "{tools}");

    let h = harness(json!([complete("done")]), ApprovalPolicy::yes());
    h.ws.write(".orchestration/active_intents.yaml", "active_intents: []\n");
    let (_id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    assert!(
        names(&h.transport.requests()[0])
            .iter()
            .any(|n| n == "select_active_intent")
    );
}

/// One retry layer: a persistent 429 or 500 costs exactly the policy's
/// number of requests (the harness's policy: 3), and the `retrying`
/// events number them 1..n-1 once, never restarting.
#[tokio::test]
async fn a_persistent_error_costs_exactly_the_policys_requests() {
    for status in [429u16, 500, 503] {
        let turns: Vec<Value> = (0..20)
            .map(|_| json!({"http_error": {"status": status, "retry_after_secs": 0.001}}))
            .collect();
        let h = harness(Value::Array(turns), ApprovalPolicy::yes());
        let mut rx = h.events.subscribe();
        let (_id, outcome) = h.run(&ScriptedUser::default(), "go").await;
        let TaskOutcome::Failed { error } = outcome else {
            panic!("{status}: expected failure")
        };
        assert!(error.contains("gave up after 3 attempts"), "{error}");
        assert_eq!(h.transport.requests().len(), 3, "{status}: requests made");
        let mut attempts = Vec::new();
        while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
            if let TaskEvent::Retrying { attempt, .. } = ev {
                attempts.push(attempt);
            }
        }
        assert_eq!(attempts, vec![1, 2], "{status}");
    }
}

/// A resumed task whose intent file became invalid is told so (a UI error
/// row and a warning event), not silently left without its intent.
#[tokio::test]
async fn an_invalid_intents_file_on_resume_is_reported() {
    let h = harness(
        json!([turn(
            "",
            vec![call(
                "select_active_intent",
                json!({"intent_id": "INT-001"})
            )]
        )]),
        ApprovalPolicy::yes(),
    );
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-001, name: A, status: IN_PROGRESS, owned_scope: [\"src/**\"]}\n",
    );
    let (id, outcome) = h.run(&ScriptedUser::default(), "go").await;
    assert!(matches!(outcome, TaskOutcome::Failed { .. }), "{outcome:?}");
    assert_eq!(
        h.store()
            .get_task(&id)
            .expect("task")
            .active_intent
            .as_deref(),
        Some("INT-001")
    );
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents: [unclosed\n",
    );
    let second = h.another_process(json!([complete("done")]));
    let mut rx = h.events.subscribe();
    let outcome = h
        .resume_on(&second, &id, &ScriptedUser::default())
        .await
        .expect("resumes");
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(
        ui.iter().any(|m| m.subtype == "error"
            && m.text.contains("INT-001 could not be restored")
            && m.text.contains("active_intents.yaml")),
        "not reported"
    );
    let mut warned = false;
    while let Ok(ev) = rx.try_recv().map(|e| e.event.clone()) {
        warned |= matches!(ev, TaskEvent::Warning { message } if message.contains("could not be restored"));
    }
    assert!(warned);
}

/// Edits are atomic (a temporary file renamed over the target, so a crash
/// never leaves a torn file), keep the file's permission bits, leave no
/// temporaries, and write through an in-workspace symlink to its target.
#[tokio::test]
async fn edits_replace_files_whole_and_keep_their_mode() {
    use std::os::unix::fs::PermissionsExt;
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "apply_diff",
                    json!({"path": "run.sh", "diff": "<<<<<<< SEARCH\necho new\n=======\necho newer\n>>>>>>> REPLACE"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "alias.txt", "content": "through the link\n"})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
    );
    h.ws.write("run.sh", "#!/bin/sh\necho old\n");
    let script = h.ws.path().join("run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    h.ws.write("real.txt", "real\n");
    std::os::unix::fs::symlink("real.txt", h.ws.path().join("alias.txt")).expect("symlink");
    let (id, outcome) = h.run(&ScriptedUser::default(), "edit").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(r.iter().take(3).all(|(_, e)| !e), "{r:?}");
    assert_eq!(h.ws.read("run.sh"), "#!/bin/sh\necho newer\n");
    let mode = std::fs::metadata(&script)
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o755, "the script lost its mode");
    assert_eq!(h.ws.read("real.txt"), "through the link\n");
    assert!(
        std::fs::symlink_metadata(h.ws.path().join("alias.txt"))
            .expect("link")
            .file_type()
            .is_symlink()
    );
    let leftovers: Vec<String> = std::fs::read_dir(h.ws.path())
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("roost-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The UI history (`roost history show`) holds every gate error the API
/// history holds: unknown tools, schema-invalid arguments, repetition
/// refusals, calls skipped after `attempt_completion`.
#[tokio::test]
async fn gate_errors_reach_the_ui_history() {
    let same = || turn("", vec![call("list_files", json!({"path": "."}))]);
    let h = harness(
        json!([
            turn("", vec![call("delete_everything", json!({}))]),
            turn("", vec![call("read_file", json!({"path": 42}))]),
            same(),
            same(),
            same(),
            turn(
                "",
                vec![
                    call("attempt_completion", json!({"result": "done"})),
                    call("list_files", json!({"path": "src"})),
                ]
            ),
        ]),
        ApprovalPolicy::yes(),
    );
    let user = ScriptedUser::default().guide("carry on");
    let (id, outcome) = h.run(&user, "go").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let ui: Vec<String> = h
        .store()
        .load_ui(&id)
        .expect("ui")
        .into_iter()
        .filter(|m| m.subtype == "error")
        .map(|m| m.text)
        .collect();
    for needle in [
        "delete_everything",
        "read_file",
        "same arguments 3 times",
        "Not executed",
    ] {
        assert!(
            ui.iter().any(|t| t.contains(needle)),
            "{needle} missing from {ui:#?}"
        );
    }
}

/// Approving an edit shows the change it would make, computed by a dry run
/// of the tool before the question: the diff for `write_to_file` and for
/// `apply_diff`, the failure for a diff that does not apply. Denied edits
/// (and the dry runs) leave the workspace as it was.
#[tokio::test]
async fn edit_approvals_show_the_diff_before_the_call() {
    let diff = "<<<<<<< SEARCH\nold line\n=======\nnew line\n>>>>>>> REPLACE\n";
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/a.txt", "content": "one\nTWO\nthree\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "apply_diff",
                    json!({"path": "src/b.txt", "diff": diff})
                )]
            ),
            turn(
                "",
                vec![call(
                    "apply_diff",
                    json!({"path": "src/b.txt", "diff": diff.replace("old line", "missing")})
                )]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    h.ws.write("src/a.txt", "one\ntwo\nthree\n");
    h.ws.write("src/b.txt", "first\nold line\nlast\n");
    let before = roost_tests::tree_hash(&h.ws.path());
    let user = ScriptedUser::default()
        .approve(Approval::Deny { feedback: None })
        .approve(Approval::Approve)
        .approve(Approval::Deny { feedback: None });
    let (id, outcome) = h.run(&user, "edit").await;
    assert!(matches!(outcome, TaskOutcome::Completed { .. }));
    let asked: Vec<String> = user
        .asked()
        .into_iter()
        .filter(|q| q.starts_with("approve"))
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        asked[0].contains("--- a/src/a.txt") && asked[0].contains("-two\n+TWO"),
        "{}",
        asked[0]
    );
    assert!(
        asked[1].contains("-old line\n+new line") && !asked[1].contains("first\n+"),
        "{}",
        asked[1]
    );
    assert!(asked[2].contains("(the call would fail"), "{}", asked[2]);
    // The denied write and the dry runs changed nothing; the approved diff
    // applied once.
    assert_eq!(h.ws.read("src/a.txt"), "one\ntwo\nthree\n");
    assert_eq!(h.ws.read("src/b.txt"), "first\nnew line\nlast\n");
    let mut after = roost_tests::tree_hash(&h.ws.path());
    let mut expected = before;
    for m in [&mut after, &mut expected] {
        m.remove("src/b.txt");
    }
    assert_eq!(after, expected, "nothing else in the workspace changed");
    // The ask row in the UI history carries the diff.
    let ui = h.store().load_ui(&id).expect("ui");
    assert!(
        ui.iter()
            .any(|m| m.kind == "ask" && m.subtype == "tool" && m.text.contains("-two\\n+TWO")),
        "{ui:?}"
    );
    assert_pairing(h.store(), &id);
}
