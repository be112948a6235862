//! Context condensation on small windows: the newest turns survive, progress is made, and a window too small is said plainly.
//!
//! The model here decides from what it is sent: each reply is picked by the
//! furthest file whose end it can see in the request's conversation (the
//! scripted provider's `when`), so a condensation that drops or cuts the
//! result just read makes it read that file again, as a real model does.

use roost_core::llm::ContentBlock;
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_tests::harness::{Harness, assert_pairing, call, scripted_harness, turn};
use roost_tests::user::ScriptedUser;
use serde_json::{Value, json};

const FILES: usize = 16;
const SUMMARY: &str = "Summary: the files are being read in order.";
const PROMPT: &str = "Read f00.txt to f15.txt, one per turn, then say you are done.";

/// The end of file `i`: what the model looks for to know it was read.
fn mark(i: usize) -> String {
    format!("MARK-{i:02}-END")
}

/// File `i`: about 4 KB of text ending in its mark.
fn content(i: usize) -> String {
    let mut s: String = (0..72)
        .map(|l| format!("file {i:02} line {l:02}: the quick brown fox jumps over it\n"))
        .collect();
    s.push_str(&format!("{}\n", mark(i)));
    s
}

/// A model that reads the files in order: it answers the task with the
/// first read, and a request whose conversation shows file `i`'s end
/// with the read of file `i + 1` (the completion after the last).
fn reader_script() -> Value {
    let read = |i: usize| {
        turn(
            "",
            vec![call("read_file", json!({"path": format!("f{i:02}.txt")}))],
        )
    };
    let mut turns = vec![with_when(read(0), PROMPT)];
    for i in 0..FILES {
        let next = if i + 1 < FILES {
            read(i + 1)
        } else {
            turn(
                "",
                vec![call("attempt_completion", json!({"result": "read all 16"}))],
            )
        };
        turns.push(with_when(next, &mark(i)));
    }
    json!({"turns": turns, "summary": SUMMARY})
}

fn with_when(mut t: Value, when: &str) -> Value {
    t["when"] = json!(when);
    t
}

fn is_summary(r: &Value) -> bool {
    r.get("tools")
        .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
}

/// The text of a request message's content.
fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn reader(window: u64) -> Harness {
    let mut h = scripted_harness(reader_script(), ApprovalPolicy::yes());
    for i in 0..FILES {
        h.ws.write(&format!("f{i:02}.txt"), &content(i));
    }
    h.config.context_window = window;
    h
}

/// In a small window (the code mode's real tools and system prompt, as
/// the engine sends them), a task reading 16 files of ~4 KB one per turn
/// progresses: the history is condensed, each condensation keeps the
/// newest result verbatim, so each file is read once and the task
/// completes in 17 model requests.
async fn reads_every_file_once(window: u64) {
    let h = reader(window);
    let (id, outcome) = h.run(&ScriptedUser::default(), PROMPT).await;
    let reqs = h.transport.requests();
    let turns: Vec<&Value> = reqs.iter().filter(|r| !is_summary(r)).collect();
    let summaries = reqs.len() - turns.len();
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "window {window}: {outcome:?} after {} model requests and {summaries} summaries",
        turns.len()
    );
    // Each file read exactly once.
    let all = h.store().load_api(&id, true).expect("history");
    let mut reads = Vec::new();
    for m in &all {
        for b in &m.message.content {
            if let ContentBlock::ToolUse { name, input, .. } = b
                && name == "read_file"
            {
                reads.push(input["path"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    let expected: Vec<String> = (0..FILES).map(|i| format!("f{i:02}.txt")).collect();
    assert_eq!(
        reads, expected,
        "window {window}: each file read once, in order"
    );
    assert_eq!(
        turns.len(),
        FILES + 1,
        "window {window}: no request repeated"
    );
    assert!(summaries >= 1, "window {window}: the history was condensed");
    assert!(all.iter().any(|m| m.hidden), "older messages hidden");
    // Every request after the first ends with the result just read,
    // whole: every line of the file is in it, nothing cut.
    for (n, r) in turns.iter().enumerate().skip(1) {
        let last = r["messages"]
            .as_array()
            .and_then(|m| m.last())
            .expect("a message");
        let text = text_of(last);
        for line in content(n - 1).lines() {
            assert!(
                text.contains(line),
                "window {window}: request {n} lacks {line:?} of the newest result:\n{text}"
            );
        }
        let condensed = reqs
            .iter()
            .take_while(|q| !std::ptr::eq(*q, *r))
            .any(is_summary);
        assert!(
            !condensed || r.to_string().contains(SUMMARY),
            "window {window}: request {n} lacks the summary"
        );
        let tokens = r.to_string().len() / 4;
        assert!(
            tokens as u64 <= window,
            "window {window}: request {n} is ~{tokens} tokens"
        );
    }
    assert_pairing(h.store(), &id);
}

#[tokio::test]
async fn an_8k_window_reads_sixteen_files_once_each() {
    reads_every_file_once(8_000).await;
}

/// In a window where only the newest turn fits beside the system prompt
/// and the tools, every turn condenses, yet each file is still read once:
/// a condensation never costs the result just read.
#[tokio::test]
async fn a_6k_window_condenses_every_turn_and_still_progresses() {
    reads_every_file_once(6_000).await;
}

/// A 4k window cannot hold the code mode's system prompt, tools and task
/// with room for a 4 KB result: the task fails at once saying so plainly
/// (what takes how much, the mode, the remedies), with no model request
/// and no condensation, instead of reading and summarising in a loop.
#[tokio::test]
async fn a_4k_window_is_said_to_be_too_small_for_the_mode() {
    let h = reader(4_000);
    let (_id, outcome) = h.run(&ScriptedUser::default(), PROMPT).await;
    let TaskOutcome::Failed { error } = outcome else {
        panic!("expected a failure saying the window is too small, got {outcome:?}")
    };
    assert!(
        h.transport.requests().is_empty(),
        "no model request, no summary: {} made",
        h.transport.requests().len()
    );
    for part in [
        "mode `code`",
        "system prompt",
        "tools",
        "context_window",
        "4000-token window",
    ] {
        assert!(error.contains(part), "{part:?} in {error}");
    }
    // The numbers depend on the workspace's path (in the system prompt).
    insta::assert_snapshot!("window_too_small", digits_redacted(&error));
}

/// `text` with each number after a `~` written as N.
fn digits_redacted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut after_tilde = false;
    for c in text.chars() {
        if after_tilde && c.is_ascii_digit() {
            continue;
        }
        if after_tilde {
            out.push('N');
        }
        after_tilde = c == '~';
        out.push(c);
    }
    out
}
