//! The interactive session (`roost` with no command) on a real
//! pseudo-terminal: a prompt typed, an edit approved ("always", saved),
//! a follow-up answered, a result accepted, a completed task continued
//! with a new message, `/mode ask`, Ctrl-C while the reply streams (the
//! streamed part is kept), Ctrl-D to leave.

use std::path::Path;

use rexpect::session::PtySession;

use crate::cli::{roost, text};

/// `roost` on a pty, in `ws`, replaying the session transcript.
fn session(data: &Path, ws: &Path) -> PtySession {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/chat/session.json");
    let mut cmd = roost(data);
    cmd.arg("--workspace")
        .arg(ws)
        .arg("--script")
        .arg(script)
        .env_remove("ROOST_LOG");
    crate::cli::on_pty(cmd)
}

#[test]
fn a_conversation_on_a_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir(&ws).expect("ws");
    let mut p = session(&data, &ws);
    p.exp_string("/help for commands").expect("banner");
    p.exp_string("code> ").expect("prompt");
    p.send_line("/help").expect("send");
    p.exp_string("/approve <groups>")
        .expect("help lists the commands");
    // Garbage at the prompt is said, and the session goes on.
    p.send_line("/nonsense now").expect("send");
    p.exp_string("unknown command /nonsense").expect("refused");
    p.send_line("/mode no-such-mode").expect("send");
    p.exp_string("unknown mode `no-such-mode`")
        .expect("refused");

    // A prompt; the edit's diff comes first, then the question.
    p.send_line("write a greeting").expect("send");
    let before = p
        .exp_string("? Run write_to_file?")
        .expect("approval asked");
    assert!(
        before.contains("+hello"),
        "the diff is shown before the question: {before}"
    );
    p.exp_string("[N]o / or type feedback: ").expect("choices");
    p.send_line("a").expect("send");
    p.exp_string("always allowed here from now on")
        .expect("saved");

    // A follow-up question, answered by number.
    p.exp_string("Which language next?").expect("follow-up");
    p.exp_string("2. French").expect("suggestions");
    p.send_line("2").expect("send");

    // The result first, then the question.
    let before = p.exp_string("? Accept the result?").expect("review");
    assert!(before.contains("Wrote hello.txt."), "{before}");
    p.send_line("").expect("send");
    p.exp_string("(done").expect("completed");

    // A completed task takes a new message and goes on.
    p.send_line("now go on").expect("send");
    p.exp_string("Continued after completion.")
        .expect("continued");
    p.exp_string("? Accept the result?").expect("review");
    p.send_line("y").expect("send");
    p.exp_string("(done").expect("completed again");

    // Another mode, then Ctrl-C while the reply streams.
    p.send_line("/mode ask").expect("send");
    p.exp_string("mode: ask").expect("switched");
    p.exp_string("ask> ").expect("prompt in ask mode");
    p.send_line("explain it").expect("send");
    p.exp_string("This answer stre")
        .expect("part of the reply streamed");
    p.send_control('c').expect("Ctrl-C");
    // The notice starts a line of its own, after the cut-off reply.
    let before = p
        .exp_string("cancelling after the current step")
        .expect("said");
    assert!(
        before.ends_with('\n'),
        "the notice joined the model's line: {before:?}"
    );
    p.exp_string("aborted: interrupted (Ctrl-C)")
        .expect("the turn stops");
    p.exp_string("(stopped").expect("the session goes on");
    p.exp_string("ask> ").expect("prompt again");

    // Ctrl-D leaves.
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("the session ends");

    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).expect("written"),
        "hello\n"
    );
    // The "always" answer was saved in the data dir, for this workspace.
    let o = roost(&data)
        .args(["approvals", "list", "--workspace"])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(text(&o).contains("write_to_file"), "{}", text(&o));
    // One task: both messages, the mode switch and the interrupted reply
    // are in its history.
    let o = roost(&data)
        .args(["history", "show", "--last", "--json"])
        .output()
        .expect("runs");
    let shown: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(shown["task"]["status"], "aborted", "{shown}");
    assert_eq!(shown["task"]["mode"], "ask", "{shown}");
    let said: Vec<String> = shown["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| format!("{} {}", m["subtype"], m["text"]))
        .collect();
    let has = |needle: &str| said.iter().any(|s| s.contains(needle));
    assert!(has("\"user_message\" \"now go on\""), "{said:#?}");
    assert!(has("\"mode_switch\""), "{said:#?}");
    assert!(
        has("This answer stre"),
        "the streamed part is kept: {said:#?}"
    );
    let export = dir.path().join("export");
    let o = roost(&data)
        .args(["history", "show", "--last", "--export"])
        .arg(&export)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let api =
        std::fs::read_to_string(export.join("api_conversation_history.json")).expect("export");
    assert!(api.contains("[Response interrupted by user]"), "{api}");
}

/// Ctrl-C twice while a turn runs leaves the session; the task stays
/// resumable.
#[test]
fn ctrl_c_twice_at_the_prompt_leaves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir(&ws).expect("ws");
    let mut p = session(&data, &ws);
    p.exp_string("code> ").expect("prompt");
    // At the prompt, one Ctrl-C only says how to leave.
    p.send_control('c').expect("Ctrl-C");
    p.exp_string("Ctrl-C again or Ctrl-D to leave")
        .expect("hint");
    p.send_control('c').expect("Ctrl-C");
    p.exp_eof().expect("the session ends");
}

/// A completed task takes a new message from the command line too:
/// `run --continue` (the last task, or `--continue=ID`) and `resume -m`;
/// without a message, a completed task is refused with what to do.
#[test]
fn completed_tasks_continue_from_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let done = |r: &str| serde_json::json!({"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": r}}]});
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"model": "m", "turns": [done("first"), done("second"), done("third")]})
            .to_string(),
    )
    .expect("script");
    let run = |args: &[&str]| {
        roost(dir.path())
            .args(args)
            .arg("--yes")
            .arg("--script")
            .arg(&script)
            .output()
            .expect("runs")
    };
    let o = roost(dir.path())
        .args(["run", "start", "--yes", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("runs");
    assert!(
        o.status.success() && text(&o).contains("first"),
        "{}",
        text(&o)
    );
    let o = run(&["run", "--continue", "go on"]);
    assert!(
        o.status.success() && text(&o).contains("second"),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["history", "list", "--json"])
        .output()
        .expect("runs");
    let tasks: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(tasks.len(), 1, "continued, not a new task: {tasks:?}");
    let id = tasks[0]["id"].as_str().expect("id").to_owned();

    let o = run(&["resume", &id]);
    assert!(
        !o.status.success() && text(&o).contains("is completed: give it a new message"),
        "{}",
        text(&o)
    );
    let o = run(&["resume", &id[..12], "-m", "and once more"]);
    assert!(
        o.status.success() && text(&o).contains("third"),
        "{}",
        text(&o)
    );
    let o = roost(dir.path())
        .args(["history", "show", &id, "--json"])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = v["messages"].to_string();
    assert!(
        rows.contains("go on") && rows.contains("and once more"),
        "{rows}"
    );
    assert_eq!(v["task"]["status"], "completed");
}
