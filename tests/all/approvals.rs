//! "Always allow": an answer that approves a tool or a group for the rest
//! of the task (recorded with it, so a resume keeps it), saved per
//! workspace in Roost's own data dir (a new process's tasks get it), and
//! never read from the workspace.

use std::path::Path;

use roost_core::engine::ResumeSpec;
use roost_core::task::{Approval, ApprovalPolicy, TaskOutcome};
use roost_core::tools::ToolGroup;
use roost_protocol::Grant;
use roost_protocol::events::TaskEvent;
use roost_tests::harness::{call, complete, harness, turn};
use roost_tests::user::ScriptedUser;
use serde_json::json;

use crate::cli::{roost, text};

fn write(path: &str) -> serde_json::Value {
    turn(
        "",
        vec![call(
            "write_to_file",
            json!({"path": path, "content": "x\n"}),
        )],
    )
}

/// A policy's approval of a call is a live signal, like a request's
/// start: front-ends hear it (without a position), the log does not keep
/// it, and the call runs without waiting on a commit for it; a person's
/// approval is recorded. Either way the log keeps the requested call and
/// its result, so a replay shows every call from request to result.
#[tokio::test]
async fn a_policys_approval_is_live_only_and_a_persons_is_recorded() {
    let h = harness(
        json!([
            turn("", vec![call("read_file", json!({"path": "a.txt"}))]),
            write("b.txt"),
            complete("read and wrote")
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    h.ws.write("a.txt", "a\n");
    let mut live = h.events.subscribe();
    let user = ScriptedUser::default().approve(Approval::Approve);
    let (id, outcome) = h.run(&user, "read then write").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let mut heard = Vec::new();
    while let Ok(ev) = live.try_recv() {
        if let TaskEvent::ToolCallApproved { auto, .. } = ev.event {
            heard.push((auto, ev.seq.is_some()));
        }
    }
    assert_eq!(
        heard,
        vec![(true, false), (false, true)],
        "the policy's approval live only, the person's with its position"
    );
    let (log, _) = h.engine().events_after(&id, 0).await.expect("the log");
    let kept: Vec<String> = log
        .iter()
        .filter_map(|e| match &e.event {
            TaskEvent::ToolCallRequested { tool, .. } => Some(format!("requested {tool}")),
            TaskEvent::ToolCallApproved { auto, .. } => Some(format!("approved auto={auto}")),
            TaskEvent::ToolCallResult { tool, .. } => Some(format!("result {tool}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        kept,
        [
            "requested read_file",
            "result read_file",
            "requested write_to_file",
            "approved auto=false",
            "result write_to_file",
            "requested attempt_completion",
            "result attempt_completion"
        ]
    );
    let seqs: Vec<i64> = log.iter().filter_map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=i64::try_from(log.len()).expect("small")).collect::<Vec<_>>(),
        "the log has no gaps where the policy's approval is not kept"
    );
}

/// An "always" answer for the edit group: the next edit of the same task
/// runs without a question, and the task records the grant (a resume
/// keeps the policy it was started with, plus what the person granted).
#[tokio::test]
async fn always_holds_for_the_rest_of_the_task_and_is_recorded() {
    let h = harness(
        json!([write("a.txt"), write("b.txt"), complete("two files")]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    let user = ScriptedUser::default().approve(Approval::Always(Grant::Group(ToolGroup::Edit)));
    let (id, outcome) = h.run(&user, "write two files").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let asked: Vec<String> = user
        .asked()
        .into_iter()
        .filter(|q| q.starts_with("approve"))
        .collect();
    assert_eq!(asked.len(), 1, "one question for two edits: {asked:?}");
    assert_eq!(h.ws.read("b.txt"), "x\n");
    let settings = h
        .engine()
        .records()
        .find(&id)
        .expect("task")
        .settings
        .expect("settings");
    assert!(settings.approval.covers("apply_diff", ToolGroup::Edit));
    assert!(settings.approval.covers("read_file", ToolGroup::Read));
    // Nothing was saved for the workspace: that is the front-end's choice.
    assert!(
        h.engine()
            .approvals()
            .list(Some(&h.ws.path()))
            .expect("list")
            .is_empty()
    );
}

/// A tool saved for a workspace holds for the next task there — also in
/// another process on the same data dir — and for that tool only; a
/// revoked one asks again.
#[tokio::test]
async fn saved_approvals_hold_for_later_tasks_in_that_workspace_only() {
    let h = harness(
        json!([write("a.txt"), complete("done")]),
        ApprovalPolicy::from_groups("read").expect("policy"),
    );
    h.engine()
        .approvals()
        .save(&h.ws.path(), &Grant::Tool("write_to_file".into()))
        .expect("saved");
    let other = h.another_process(json!([write("a.txt"), complete("done")]));
    let id = other
        .create_task(&roost_core::engine::TaskSpec {
            prompt: "write".into(),
            workspace: h.ws.path(),
            mode: "code".into(),
            ..Default::default()
        })
        .await
        .expect("created");
    let user = ScriptedUser::default().approve(Approval::Deny { feedback: None });
    let outcome = h.drive(&other, &id, &user).await.expect("runs");
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert!(
        !user.asked().iter().any(|q| q.starts_with("approve")),
        "the saved approval was not used: {:?}",
        user.asked()
    );
    assert_eq!(h.ws.read("a.txt"), "x\n");

    // Another workspace: not covered.
    let elsewhere = roost_tests::TestWorkspace::new();
    let saved = h
        .engine()
        .approvals()
        .list(Some(&elsewhere.path()))
        .expect("list");
    assert!(saved.is_empty(), "{saved:?}");

    // Revoked: the next task asks again.
    assert!(
        h.engine()
            .approvals()
            .revoke(&h.ws.path(), &Grant::Tool("write_to_file".into()))
            .expect("revoked")
    );
    let again = h.another_process(json!([write("c.txt"), complete("done")]));
    let id = again
        .create_task(&roost_core::engine::TaskSpec {
            prompt: "write".into(),
            workspace: h.ws.path(),
            mode: "code".into(),
            ..Default::default()
        })
        .await
        .expect("created");
    let user = ScriptedUser::default().approve(Approval::Deny { feedback: None });
    h.drive(&again, &id, &user).await.expect("runs");
    assert!(
        user.asked().iter().any(|q| q.starts_with("approve")),
        "{:?}",
        user.asked()
    );
}

/// A resumed task keeps the approval policy it was started with: a resume
/// without flags does not fall back to the engine's default.
#[tokio::test]
async fn a_resumed_task_keeps_its_policy() {
    let h = harness(
        json!([write("a.txt"), complete("done")]),
        ApprovalPolicy::default(),
    );
    // The process that creates the task (and holds it from its creation)
    // dies before the task runs; another one resumes it.
    let first = h.another_process(json!([]));
    let id = first
        .create_task(&roost_core::engine::TaskSpec {
            prompt: "write".into(),
            workspace: h.ws.path(),
            mode: "code".into(),
            approval: Some(ApprovalPolicy::from_groups("edit").expect("policy")),
            ..Default::default()
        })
        .await
        .expect("created");
    drop(first);
    let other = h.another_process(json!([write("a.txt"), complete("done")]));
    let prepared = other
        .prepare_resume(&id, &ResumeSpec::default())
        .expect("resumable");
    let user = ScriptedUser::default().approve(Approval::Deny { feedback: None });
    let outcome = h.drive(&other, &prepared.id, &user).await.expect("runs");
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert!(
        !user.asked().iter().any(|q| q.starts_with("approve")),
        "{:?}",
        user.asked()
    );
}

fn script(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("write.json");
    std::fs::write(
        &path,
        json!({"model": "m", "turns": [write("a.txt"), complete("done")]}).to_string(),
    )
    .expect("script");
    path
}

/// `roost approvals list|revoke` over what a new process saved; a
/// `roost run` without a terminal runs a saved tool, and denies it once
/// revoked. A workspace that carries Roost's own files (a copied store,
/// an approvals file) grants nothing to another data dir.
#[test]
fn approvals_are_listed_revoked_and_never_come_from_the_workspace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, other_data) = (dir.path().join("data"), dir.path().join("other"));
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let script = script(dir.path());
    let run = |data: &Path| {
        roost(data)
            .args(["run", "write a.txt", "--workspace"])
            .arg(&ws)
            .arg("--script")
            .arg(&script)
            .output()
            .expect("runs")
    };
    let o = roost(&data)
        .args(["approvals", "list", "--workspace"])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(
        text(&o).contains("nothing is always allowed"),
        "{}",
        text(&o)
    );

    // Saved as a session saves it (the store under the data dir).
    roost_core::engine::Approvals::open(&roost_core::store::StoreLocation::File(
        roost_core::store::Store::default_path(&data),
    ))
    .expect("store")
    .save(&ws, &Grant::Tool("write_to_file".into()))
    .expect("save");
    let o = roost(&data)
        .args(["approvals", "list", "--workspace"])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(
        o.status.success() && text(&o).contains("  write_to_file"),
        "{}",
        text(&o)
    );

    let o = run(&data);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("denied write_to_file"), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).expect("written"),
        "x\n"
    );
    std::fs::remove_file(ws.join("a.txt")).expect("rm");

    // The workspace carries Roost's files from the first data dir: another
    // data dir gets nothing from them.
    std::fs::copy(data.join("roost.db"), ws.join("roost.db")).expect("copy db");
    std::fs::create_dir_all(ws.join(".roost")).expect("mkdir");
    std::fs::copy(data.join("roost.db"), ws.join(".roost/roost.db")).expect("copy db");
    std::fs::write(
        ws.join(".roost/approvals.toml"),
        "[[always]]\ntool = \"write_to_file\"\n",
    )
    .expect("write");
    let o = run(&other_data);
    assert!(text(&o).contains("denied write_to_file"), "{}", text(&o));
    assert!(!ws.join("a.txt").exists());

    // Revoked: denied without a terminal.
    let o = roost(&data)
        .args(["approvals", "revoke", "write_to_file", "--workspace"])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(
        o.status.success() && text(&o).contains("revoked write_to_file"),
        "{}",
        text(&o)
    );
    let o = roost(&data)
        .args(["approvals", "revoke", "group:edit", "--workspace"])
        .arg(&ws)
        .output()
        .expect("runs");
    assert!(
        !o.status.success() && text(&o).contains("is not always allowed"),
        "{}",
        text(&o)
    );
    let o = run(&data);
    assert!(text(&o).contains("denied write_to_file"), "{}", text(&o));
}
