//! What a command locks: a line the policy proves read-only runs with the
//! workspace mounted read-only and takes no write lease, so another task's
//! write in the same workspace goes ahead while it runs; a mutating
//! command still holds its lease, and the write waits for it.

use std::collections::BTreeMap;

use roost_core::asks::Answer;
use roost_core::config::SecretStore;
use roost_core::events::TaskEvent;
use roost_core::task::ApprovalPolicy;
use roost_tests::harness::{Harness, call, complete, scripted_harness, turn};
use serde_json::json;

use crate::commands::run;

fn write(path: &str) -> serde_json::Value {
    turn(
        "",
        vec![call(
            "write_to_file",
            json!({"path": path, "content": "written\n"}),
        )],
    )
}

/// Four tasks of one workspace, told apart by their prompts.
fn harness() -> Harness {
    let script = json!({"turns": [], "tasks": [
        {"message": "the reader", "turns": [run("echo started; sleep 5; ls"), complete("done")]},
        {"message": "the first writer", "turns": [write("src/one.txt"), complete("done")]},
        {"message": "the mutator", "turns": [run("echo started; sleep 3; touch made.txt"), complete("done")]},
        {"message": "the second writer", "turns": [write("src/two.txt"), complete("done")]},
    ]});
    let mut h = scripted_harness(script, ApprovalPolicy::yes());
    h.commands = Some((
        crate::commands::everything_allowed(),
        BTreeMap::new(),
        SecretStore::default(),
    ));
    h.ws.write("src/keep.txt", "kept\n");
    h
}

/// Start the task prompted `prompt` and wait until its command has said
/// `started` (it is running, past its write session's start).
async fn start_command(h: &Harness, prompt: &str) -> String {
    let engine = h.engine();
    let id = h.create("code", prompt).await.expect("created");
    let mut rx = engine.subscribe(&id).expect("events");
    accept_the_result(h, &id);
    engine.start(&id).expect("started");
    loop {
        let ev = rx.recv().await.expect("event");
        if let TaskEvent::CommandOutput { chunk, .. } = &ev.event
            && chunk.contains("started")
        {
            return id;
        }
    }
}

/// Say yes to task `id`'s questions (its completion review).
fn accept_the_result(h: &Harness, id: &str) {
    let engine = std::sync::Arc::clone(h.engine());
    let mut rx = engine.subscribe(id).expect("events");
    let id = id.to_owned();
    tokio::spawn(async move {
        while let Ok(ev) = rx.recv().await {
            if let TaskEvent::AskRequired { ask_id, .. } = &ev.event {
                let _ = engine.answer(&id, ask_id, Answer::Yes).await;
            }
        }
    });
}

/// Run the task prompted `prompt` to its end.
async fn finish(h: &Harness, prompt: &str) {
    let engine = h.engine();
    let id = h.create("code", prompt).await.expect("created");
    accept_the_result(h, &id);
    engine.start(&id).expect("started");
    engine.wait(&id).await.expect("outcome");
}

/// Whether task `id` has recorded its command's result.
fn command_done(h: &Harness, id: &str) -> bool {
    h.results(id).iter().any(|(r, _)| r.starts_with("$ "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_command_locks_nothing_and_a_mutating_one_still_does() {
    let h = harness();
    // While the reader's `sleep 5` runs, the writer starts and finishes.
    let reader = start_command(&h, "the reader").await;
    finish(&h, "the first writer").await;
    assert!(
        !command_done(&h, &reader),
        "the write waited for a read-only command: {:?}",
        h.results(&reader)
    );
    assert_eq!(h.ws.read("src/one.txt"), "written\n");
    h.engine().wait(&reader).await.expect("outcome");
    assert!(
        h.results(&reader)
            .iter()
            .any(|(r, failed)| !failed && r.contains("src")),
        "{:?}",
        h.results(&reader)
    );

    // A command that writes holds the workspace: the second writer waits
    // for it to end.
    let mutator = start_command(&h, "the mutator").await;
    finish(&h, "the second writer").await;
    assert!(
        command_done(&h, &mutator),
        "a mutating command's lease was not held: {:?}",
        h.results(&mutator)
    );
    assert_eq!(h.ws.read("src/two.txt"), "written\n");
    assert!(h.ws.path().join("made.txt").exists());
    h.engine().wait(&mutator).await.expect("outcome");
}
