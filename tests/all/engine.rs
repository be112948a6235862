//! The engine: many tasks at once in one process, addressable by id, whose
//! questions are durable asks answered by id from anywhere. Real
//! components, the scripted provider (one transcript followed by every
//! task), a real SQLite store.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use roost_core::asks::{Answer, Ask};
use roost_core::engine::{Engine, EngineBuilder, ResumeSpec, TaskSpec};
use roost_core::events::{Envelope, TaskEvent};
use roost_core::llm::scripted::{Script, ScriptedTransport};
use roost_core::llm::{ContentBlock, Message};
use roost_core::llm::{OpenAiCompatible, RetryPolicy};
use roost_core::store::{NewTask, Store, TaskStatus};
use roost_core::task::{ApprovalPolicy, TaskConfig, TaskOutcome};
use roost_protocol::EngineErrorCode;
use roost_tests::harness::{assert_pairing, call, complete, turn};
use roost_tests::{TestWorkspace, engine, fixture_wasm};
use serde_json::{Value, json};

/// An engine whose model follows `turns` in every task, under `policy`.
fn engine_with(
    turns: Value,
    policy: ApprovalPolicy,
    data: &TestWorkspace,
) -> (Arc<Engine>, Arc<ScriptedTransport>) {
    engine_with_plugins(turns, policy, data, false)
}

/// [`engine_with`], with the `limits` fixture's tools too when asked.
fn engine_with_plugins(
    turns: Value,
    policy: ApprovalPolicy,
    data: &TestWorkspace,
    limits_fixture: bool,
) -> (Arc<Engine>, Arc<ScriptedTransport>) {
    let script: Script = serde_json::from_value(json!({ "turns": turns })).expect("script");
    let transport = Arc::new(ScriptedTransport::per_conversation(script).recorded());
    // Built the way every front-end builds its engine.
    let mut builder = EngineBuilder::new(&data.root().join("data"))
        .plugin_engine(engine())
        .provider(Arc::new(OpenAiCompatible::new(
            "scripted",
            "scripted",
            transport.clone(),
            RetryPolicy::default(),
        )))
        .config(TaskConfig {
            policy,
            ..TaskConfig::default()
        });
    if limits_fixture {
        builder = builder.plugin_file(&fixture_wasm("limits"));
    }
    (builder.build().expect("engine"), transport)
}

/// Create a task in `code` mode (persisted, not started).
async fn create(engine: &Engine, prompt: &str, workspace: std::path::PathBuf) -> String {
    engine
        .create_task(&TaskSpec {
            prompt: prompt.into(),
            workspace,
            mode: "code".into(),
            ..TaskSpec::default()
        })
        .await
        .expect("created")
}

/// Deterministic pseudo-random order (xorshift), so a failure replays.
fn shuffle<T>(items: &mut [T], seed: &mut u64) {
    for i in (1..items.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let j = usize::try_from(*seed % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}

/// 50 tasks started at once through the engine, each asking for an edit
/// approval and a completion review; another tokio task answers the open
/// asks by id in random order. All complete, with whole, paired histories.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_tasks_answered_by_ask_id_in_random_order() {
    const TASKS: usize = 50;
    let data = TestWorkspace::new();
    let (engine, _) = engine_with(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "out.txt", "content": "done\n"})
                )]
            ),
            complete("wrote out.txt"),
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
        &data,
    );
    let workspaces: Vec<TestWorkspace> = (0..TASKS).map(|_| TestWorkspace::new()).collect();
    let mut ids = Vec::new();
    for ws in &workspaces {
        let id = create(&engine, "write out.txt", ws.path()).await;
        ids.push(id);
    }
    for id in &ids {
        engine.start(id).expect("started");
    }
    // The answerer: whatever is pending, in a shuffled order, by ask id.
    let answerer = {
        let engine = Arc::clone(&engine);
        let ids = ids.clone();
        tokio::spawn(async move {
            let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
            let mut answered = HashSet::new();
            let mut kinds = Vec::new();
            while answered.len() < 2 * TASKS {
                let mut pending = Vec::new();
                for id in &ids {
                    pending.extend(engine.pending_asks(id).expect("asks"));
                }
                shuffle(&mut pending, &mut seed);
                for ask in pending {
                    if answered.insert(ask.ask_id.clone()) {
                        kinds.push(ask.kind.clone());
                        engine
                            .answer(&ask.task_id, &ask.ask_id, Answer::Yes)
                            .await
                            .expect("answer taken");
                    }
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            kinds
        })
    };
    for id in &ids {
        let outcome = engine.wait(id).await.expect("outcome");
        assert_eq!(
            outcome,
            TaskOutcome::Completed {
                result: "wrote out.txt".into()
            }
        );
    }
    let kinds = answerer.await.expect("answerer");
    assert_eq!(kinds.iter().filter(|k| *k == "tool").count(), TASKS);
    assert_eq!(kinds.iter().filter(|k| *k == "completion").count(), TASKS);
    for (id, ws) in ids.iter().zip(&workspaces) {
        assert_eq!(ws.read("out.txt"), "done\n");
        assert_pairing(&engine.agent().store, id);
        assert!(engine.pending_asks(id).expect("asks").is_empty());
        assert_eq!(
            engine.records().find(id).expect("task").status,
            TaskStatus::Completed
        );
    }
}

/// Answers every question of task `id` with yes, from another tokio task.
fn say_yes(engine: &Arc<Engine>, id: &str) {
    let mut rx = engine.subscribe(id).expect("events");
    let engine = Arc::clone(engine);
    tokio::spawn(async move {
        loop {
            let ev = rx.recv().await;
            let Ok(ev) = ev else { break };
            if let TaskEvent::AskRequired { ask_id, .. } = &ev.event {
                let _ = engine.answer(&ev.task_id, ask_id, Answer::Yes).await;
            }
        }
    });
}

/// Waits for the first event of `rx` that `pick` accepts.
async fn until(
    rx: &mut tokio::sync::broadcast::Receiver<Arc<Envelope>>,
    pick: impl Fn(&TaskEvent) -> bool,
) -> TaskEvent {
    loop {
        let ev = rx.recv().await.expect("event").event.clone();
        if pick(&ev) {
            return ev;
        }
    }
}

/// A cancel while the model streams ends the task `aborted` with nothing
/// of the reply recorded; a cancel during a tool call lets the call finish
/// (its file is whole) and skips nothing silently. Both tasks stay
/// resumable and their histories paired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_streaming_and_during_a_tool_call() {
    let data = TestWorkspace::new();
    let (engine, _) = engine_with(
        json!([
            {"delay_ms": 3000, "text": "thinking slowly", "tool_calls": []},
        ]),
        ApprovalPolicy::yes(),
        &data,
    );
    let ws = TestWorkspace::new();
    let id = create(&engine, "slow", ws.path()).await;
    let mut rx = engine.subscribe(&id).expect("events");
    engine.start(&id).expect("started");
    until(&mut rx, |e| matches!(e, TaskEvent::RequestStarted { .. })).await;
    engine
        .cancel(&id, "stopped by the test")
        .await
        .expect("cancel");
    let outcome = engine.wait(&id).await.expect("outcome");
    assert_eq!(
        outcome,
        TaskOutcome::Aborted {
            reason: "stopped by the test".into()
        }
    );
    let store = &engine.agent().store;
    assert_eq!(
        store.get_task(&id).expect("task").status,
        TaskStatus::Aborted
    );
    assert!(
        store
            .load_api(&id, true)
            .expect("history")
            .iter()
            .all(|m| !format!("{:?}", m.message).contains("thinking slowly")),
        "nothing of the cancelled reply is recorded"
    );

    // During a tool call: the call finishes, then the task stops.
    let (engine, _) = engine_with(
        json!([
            turn(
                "",
                vec![
                    call(
                        "write_to_file",
                        json!({"path": "a.txt", "content": "whole\n"})
                    ),
                    call(
                        "write_to_file",
                        json!({"path": "b.txt", "content": "never\n"})
                    ),
                ]
            ),
            complete("done"),
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
        &data,
    );
    let id = create(&engine, "two writes", ws.path()).await;
    let mut rx = engine.subscribe(&id).expect("events");
    engine.start(&id).expect("started");
    // Cancel while the first write waits for its approval, then approve
    // it: the answer is taken as no (the task is stopping), nothing runs.
    let TaskEvent::AskRequired { ask_id, ask, .. } =
        until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await
    else {
        unreachable!("picked an ask")
    };
    assert!(matches!(ask, Ask::Tool { .. }));
    engine.cancel(&id, "user cancelled").await.expect("cancel");
    let outcome = engine.wait(&id).await.expect("outcome");
    assert!(
        matches!(outcome, TaskOutcome::Aborted { .. }),
        "{outcome:?}"
    );
    assert!(!ws.path().join("a.txt").exists() && !ws.path().join("b.txt").exists());
    assert!(
        engine.answer(&id, &ask_id, Answer::Yes).await.is_err(),
        "the ask was closed with the task"
    );
    assert!(engine.pending_asks(&id).expect("asks").is_empty());
    assert_pairing(store, &id);
    assert_eq!(
        store.get_task(&id).expect("task").status,
        TaskStatus::Aborted
    );
}

/// A cancel while a task waits for a person — whatever the question —
/// aborts it (resumable), closes the question, and never counts as an
/// answer: a completion review cancelled is not an accepted result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_at_any_ask_aborts_and_answers_nothing() {
    let data = TestWorkspace::new();
    let read = call("read_file", json!({"path": "a.txt"}));
    let cases: Vec<(&str, Value)> = vec![
        (
            "tool",
            json!([turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "out.txt", "content": "x\n"})
                )]
            )]),
        ),
        (
            "followup",
            json!([turn(
                "",
                vec![call(
                    "ask_followup_question",
                    json!({"question": "which one?"})
                )]
            )]),
        ),
        ("completion", json!([complete("all done")])),
        (
            "guidance",
            json!([
                turn("", vec![read.clone()]),
                turn("", vec![read.clone()]),
                turn("", vec![read.clone()]),
                turn("", vec![read]),
            ]),
        ),
    ];
    for (kind, turns) in cases {
        let (engine, _) = engine_with(
            turns,
            ApprovalPolicy::from_groups("read").expect("policy"),
            &data,
        );
        let ws = TestWorkspace::new();
        ws.write("a.txt", "a\n");
        let id = create(&engine, kind, ws.path()).await;
        let mut rx = engine.subscribe(&id).expect("events");
        engine.start(&id).expect("started");
        let TaskEvent::AskRequired { ask, ask_id, .. } =
            until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await
        else {
            unreachable!("picked an ask")
        };
        assert_eq!(ask.kind(), kind, "{ask:?}");
        engine
            .cancel(&id, "cancelled at the question")
            .await
            .expect("cancel");
        let outcome = engine.wait(&id).await.expect("outcome");
        assert_eq!(
            outcome,
            TaskOutcome::Aborted {
                reason: "cancelled at the question".into()
            },
            "{kind}"
        );
        let store = &engine.agent().store;
        assert_eq!(
            store.get_task(&id).expect("task").status,
            TaskStatus::Aborted,
            "{kind}"
        );
        assert!(engine.pending_asks(&id).expect("asks").is_empty(), "{kind}");
        assert!(
            engine.answer(&id, &ask_id, Answer::Yes).await.is_err(),
            "{kind}"
        );
        let rows = format!("{:?}", store.load_ui(&id).expect("ui"));
        assert!(!rows.contains("accepted"), "{kind}: {rows}");
        assert_pairing(store, &id);
        assert!(!ws.path().join("out.txt").exists(), "{kind}");
        engine
            .prepare_resume(&id, &ResumeSpec::default())
            .expect("resumable");
    }
}

/// A process killed in the middle of an atomic edit leaves the edit's
/// temporary file beside its target; the call was recorded before it ran,
/// so `resume` finds and removes exactly that debris (nothing else of the
/// same look) before answering the call as interrupted.
#[test]
fn a_resume_removes_what_a_killed_edit_left() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let turns = json!([
        turn(
            "",
            vec![call(
                "write_to_file",
                json!({"path": "src/app.py", "content": "new\n"})
            )]
        ),
        complete("done"),
    ]);
    // The first "process" dies while the call is in flight (here: while
    // it waits for its approval, the question then closed as a crash
    // mid-call would leave it).
    let first = process();
    let id = first.block_on(async {
        let (engine, _) = engine_with(
            turns.clone(),
            ApprovalPolicy::from_groups("read").expect("policy"),
            &data,
        );
        let id = create(&engine, "write", ws.path()).await;
        let mut rx = engine.subscribe(&id).expect("events");
        engine.start(&id).expect("started");
        until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await;
        id
    });
    // Down as a kill leaves it, but gone: its blocking threads (and the
    // store's owner lock they hold) finish before the next process starts,
    // else that one sees a live owner and lets the task go.
    first.shutdown_timeout(std::time::Duration::from_secs(60));
    let store = Store::open(&data.root().join("data").join("roost.db")).expect("store");
    store.close_asks(&id, "killed mid-call").expect("closed");
    ws.write("src/app.py", "old\n");
    ws.write("src/.app.py.roost-18f3a2b-0.tmp", "half a wr");
    ws.write("src/.other.py.roost-18f3a2b-0.tmp", "not this call's");
    ws.write("src/.app.py.roost-not-hex.tmp", "not our shape");
    let second = process();
    second.block_on(async {
        let (engine, _) = engine_with(turns, ApprovalPolicy::yes(), &data);
        engine
            .prepare_resume(&id, &ResumeSpec::default())
            .expect("resumable");
        say_yes(&engine, &id);
        engine.start(&id).expect("started");
        let outcome = engine.wait(&id).await.expect("outcome");
        assert!(
            matches!(outcome, TaskOutcome::Completed { .. }),
            "{outcome:?}"
        );
    });
    let left: Vec<String> = roost_tests::tree_hash(&ws.path()).into_keys().collect();
    assert!(
        !left
            .iter()
            .any(|k| k.ends_with(".app.py.roost-18f3a2b-0.tmp")),
        "{left:?}"
    );
    assert!(
        left.iter()
            .any(|k| k.ends_with(".other.py.roost-18f3a2b-0.tmp")),
        "{left:?}"
    );
    assert!(
        left.iter()
            .any(|k| k.ends_with(".app.py.roost-not-hex.tmp")),
        "{left:?}"
    );
    assert_eq!(
        ws.read("src/app.py"),
        "old\n",
        "the interrupted call is not run again"
    );
}

/// A call's trace entries are recorded with its result, in the step that
/// makes the result durable, and appended to the trace after it; a crash
/// in between leaves them in the store, and the resume appends each once
/// (one the crash left appended but not forgotten is not doubled).
#[test]
fn trace_entries_follow_their_durable_result_once() {
    use roost_core::intents::TraceEntry;
    use roost_core::store::Step;
    use roost_protocol::TraceKind;
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    ws.write(".orchestration/active_intents.yaml", "active_intents: []\n");
    let turns = json!([
        turn("", vec![call("read_file", json!({"path": "a.txt"}))]),
        complete("done")
    ]);
    let first = process();
    let id = first.block_on(async {
        let (engine, _) = engine_with(
            turns.clone(),
            ApprovalPolicy::from_groups("edit").expect("policy"),
            &data,
        );
        let id = create(&engine, "read", ws.path()).await;
        let mut rx = engine.subscribe(&id).expect("events");
        engine.start(&id).expect("started");
        until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await;
        id
    });
    // Down as a kill leaves it, but gone: its blocking threads (and the
    // store's owner lock they hold) finish before the next process starts,
    // else that one sees a live owner and lets the task go.
    first.shutdown_timeout(std::time::Duration::from_secs(60));
    // The crash: two entries recorded with a durable result; the second
    // made it to the trace file, the first did not.
    let entry = |tool: &str| {
        let mut e = TraceEntry::now(TraceKind::Mutation, &id, None, "code", tool, &json!({}));
        e.detail = Some(format!("{tool} before the crash"));
        e
    };
    let (lost, appended) = (entry("lost_tool"), entry("appended_tool"));
    let store = Store::open(&data.root().join("data").join("roost.db")).expect("store");
    store
        .commit_step(
            &id,
            Step::new().trace(vec![
                serde_json::to_string(&lost).expect("json"),
                serde_json::to_string(&appended).expect("json"),
            ]),
        )
        .expect("recorded");
    roost_core::intents::Trace::of(&ws.path())
        .append(&appended)
        .expect("appended");
    let second = process();
    second.block_on(async {
        let (engine, _) = engine_with(turns, ApprovalPolicy::yes(), &data);
        engine
            .prepare_resume(&id, &ResumeSpec::default())
            .expect("resumable");
        say_yes(&engine, &id);
        engine.start(&id).expect("started");
        engine.wait(&id).await.expect("outcome");
    });
    let lines = roost_tests::harness::trace_lines(&ws.path());
    let count = |tool: &str| lines.iter().filter(|l| l["tool"] == tool).count();
    assert_eq!(count("lost_tool"), 1, "{lines:?}");
    assert_eq!(count("appended_tool"), 1, "{lines:?}");
    assert!(store.pending_trace(&id).expect("pending").is_empty());
}

/// A message sent while the task runs joins the conversation at its next
/// turn (Roo's message queue).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_running_reach_the_next_turn() {
    let data = TestWorkspace::new();
    let (engine, transport) = engine_with(
        json!([
            {"delay_ms": 300, "text": "", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
            complete("done"),
        ]),
        ApprovalPolicy::yes(),
        &data,
    );
    let ws = TestWorkspace::new();
    ws.write("a.txt", "hello\n");
    let id = create(&engine, "read", ws.path()).await;
    let mut rx = engine.subscribe(&id).expect("events");
    say_yes(&engine, &id);
    engine.start(&id).expect("started");
    until(&mut rx, |e| {
        matches!(e, TaskEvent::RequestStarted { turn: 1 })
    })
    .await;
    engine
        .send_message(&id, "also check b.txt")
        .await
        .expect("queued");
    let outcome = engine.wait(&id).await.expect("outcome");
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let reqs = transport.requests();
    let second = reqs.last().expect("requests").to_string();
    assert!(
        second.contains("<user_message>") && second.contains("also check b.txt"),
        "{second}"
    );
    let ui = engine.agent().store.load_ui(&id).expect("ui");
    assert!(ui.iter().any(|m| m.subtype == "user_message"));
}

/// A runtime standing for one process of a crash test.
fn process() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A transcript that writes `out.txt` with `content` (asking approval
/// under a read-only policy), then completes with "done".
fn write_then_complete(content: &str) -> serde_json::Value {
    json!([
        turn(
            "",
            vec![call(
                "write_to_file",
                json!({"path": "out.txt", "content": content})
            )]
        ),
        complete("done"),
    ])
}

/// The first "process" of a crash test: task `write` waits on its first
/// question when its runtime is shut down under it (as a kill would);
/// the task's id and the open ask's.
fn die_waiting(
    turns: &serde_json::Value,
    policy: &ApprovalPolicy,
    data: &TestWorkspace,
    ws: &TestWorkspace,
) -> (String, String) {
    let first = process();
    let out = first.block_on(async {
        let (engine, _) = engine_with(turns.clone(), policy.clone(), data);
        let id = create(&engine, "write", ws.path()).await;
        let mut rx = engine.subscribe(&id).expect("events");
        engine.start(&id).expect("started");
        let TaskEvent::AskRequired { ask_id, .. } =
            until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await
        else {
            unreachable!("picked an ask")
        };
        (id, ask_id)
    });
    // Down as a kill leaves it, but gone: its blocking threads (and the
    // store's owner lock they hold) finish before the next process starts,
    // else that one sees a live owner and lets the task go.
    first.shutdown_timeout(std::time::Duration::from_secs(60));
    out
}

/// A question answered while no loop waits for it (its process died and
/// the task is not resumed yet — on a shared store, another host has not
/// taken it over yet) is not lost: the resumed task runs the call with the
/// recorded answer instead of answering it "interrupted".
#[test]
fn an_answer_recorded_before_the_resume_is_taken_by_it() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let turns = write_then_complete("approved while down\n");
    let policy = ApprovalPolicy::from_groups("read").expect("policy");
    let (id, ask_id) = die_waiting(&turns, &policy, &data, &ws);
    let second = process();
    second.block_on(async {
        let (engine, _) = engine_with(turns, policy, &data);
        engine
            .answer(&id, &ask_id, Answer::Yes)
            .await
            .expect("recorded");
        assert!(engine.pending_asks(&id).expect("asks").is_empty());
        engine
            .prepare_resume(&id, &ResumeSpec::default())
            .expect("resumable");
        let mut rx = engine.subscribe(&id).expect("events");
        engine.start(&id).expect("started");
        let TaskEvent::AskRequired { ask_id: review, .. } =
            until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await
        else {
            unreachable!("picked an ask")
        };
        assert_ne!(review, ask_id, "the approval is not asked again");
        engine
            .answer(&id, &review, Answer::Yes)
            .await
            .expect("accepted");
        let outcome = engine.wait(&id).await.expect("outcome");
        assert_eq!(
            outcome,
            TaskOutcome::Completed {
                result: "done".into()
            }
        );
        assert_eq!(ws.read("out.txt"), "approved while down\n");
        assert_pairing(&engine.agent().store, &id);
    });
}

/// The process dies while a question is open (here: a runtime shut down
/// under the task, dropping it mid-wait, as a kill would); after `resume`
/// the same ask is pending again, and answering it by its id continues
/// the task to the end.
#[test]
fn an_ask_open_when_the_process_dies_is_pending_again_after_resume() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let turns = write_then_complete("after the crash\n");
    let policy = ApprovalPolicy::from_groups("read").expect("policy");
    let (id, ask_id) = die_waiting(&turns, &policy, &data, &ws);

    // The second: the ask is open in the store, and again after resume.
    let second = process();
    second.block_on(async {
        let (engine, _) = engine_with(turns, policy, &data);
        let open = engine.pending_asks(&id).expect("asks");
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].ask_id, ask_id, "the open ask survived the crash");
        let mut rx = {
            let resumed = engine
                .prepare_resume(&id, &ResumeSpec::default())
                .expect("resumable");
            assert_eq!(resumed.id, id);
            engine.subscribe(&id).expect("events")
        };
        engine.start(&id).expect("started");
        let TaskEvent::AskRequired { ask_id: again, .. } =
            until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await
        else {
            unreachable!("picked an ask")
        };
        assert_eq!(again, ask_id, "the same question is asked again");
        engine
            .answer(&id, &ask_id, Answer::Yes)
            .await
            .expect("answered");
        let TaskEvent::AskRequired { ask_id: review, .. } =
            until(&mut rx, |e| matches!(e, TaskEvent::AskRequired { .. })).await
        else {
            unreachable!("picked an ask")
        };
        engine
            .answer(&id, &review, Answer::Yes)
            .await
            .expect("accepted");
        let outcome = engine.wait(&id).await.expect("outcome");
        assert_eq!(
            outcome,
            TaskOutcome::Completed {
                result: "done".into()
            }
        );
        assert_eq!(ws.read("out.txt"), "after the crash\n");
        assert_pairing(&engine.agent().store, &id);
    });
}

/// Two tasks whose write roots overlap (`src/a` under intent A, `src` under
/// intent B's `src/*.md`) run at once on one workspace. B's call holds its
/// write open waiting for A's file and also writes outside its scope. Each
/// in-scope write persists; B's out-of-scope write is undone; B's guard
/// never undoes A's write, because the calls take turns on their roots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_write_roots_take_turns() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - {id: INT-A, name: A, status: IN_PROGRESS, owned_scope: [\"src/a/**\"]}\n  - {id: INT-B, name: B, status: IN_PROGRESS, owned_scope: [\"src/*.md\"]}\n",
    );
    ws.write("src/a/.keep", "");
    let policy = ApprovalPolicy::from_groups("read,edit,modes").expect("policy");
    let (a, _) = engine_with(
        json!([
            turn(
                "",
                vec![call("select_active_intent", json!({"intent_id": "INT-A"}))]
            ),
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "src/a/one.txt", "content": "A\n"})
                )]
            ),
            complete("A done"),
        ]),
        policy.clone(),
        &data,
    );
    let (b, _) = engine_with_plugins(
        json!([
            turn(
                "",
                vec![call("select_active_intent", json!({"intent_id": "INT-B"}))]
            ),
            turn(
                "",
                vec![call(
                    "write_after",
                    json!({"path": "src/notes.md", "text": "B\n", "wait_for": "src/a/one.txt",
                           "polls": 300, "also": "src/b.txt"})
                )]
            ),
            complete("B done"),
        ]),
        policy,
        &data,
        true,
    );
    let spec = |prompt: &str| TaskSpec {
        prompt: prompt.into(),
        workspace: ws.path(),
        mode: "code".into(),
        ..TaskSpec::default()
    };
    let b_id = b.create_task(&spec("B")).await.expect("created");
    let mut b_events = b.subscribe(&b_id).expect("events");
    b.start(&b_id).expect("started");
    say_yes(&b, &b_id);
    // A starts once B's write call is under way.
    until(&mut b_events, |e| {
        matches!(e, TaskEvent::ToolCallApproved { .. })
    })
    .await;
    let a_id = a.create_task(&spec("A")).await.expect("created");
    say_yes(&a, &a_id);
    a.start(&a_id).expect("started");
    let (ra, rb) = tokio::join!(a.wait(&a_id), b.wait(&b_id));
    assert!(matches!(ra, Ok(TaskOutcome::Completed { .. })), "{ra:?}");
    assert!(matches!(rb, Ok(TaskOutcome::Completed { .. })), "{rb:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/a/one.txt"))
            .ok()
            .as_deref(),
        Some("A\n"),
        "B's guard undid A's write"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/notes.md"))
            .ok()
            .as_deref(),
        Some("B\n"),
        "B's in-scope write did not persist; B's conversation: {:#?}",
        b.agent().store.load_api(&b_id, false)
    );
    assert!(
        !ws.path().join("src/b.txt").exists(),
        "B's out-of-scope write persisted"
    );
    assert_pairing(&a.agent().store, &a_id);
    assert_pairing(&b.agent().store, &b_id);
}

/// Events carry their task and their position in its log. A front-end
/// that disconnects and comes back asks for everything after the last
/// position it saw: the recorded past and then the live stream, with no
/// event missed or repeated; after the process is gone, a new engine on the
/// same store reads the whole log back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_end_that_reconnects_gets_what_it_missed() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let (engine, _) = engine_with(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "out.txt", "content": "done\n"})
                )]
            ),
            complete("wrote out.txt"),
        ]),
        ApprovalPolicy::from_groups("read").expect("policy"),
        &data,
    );
    let id = create(&engine, "write out.txt", ws.path()).await;
    let mut live = engine.subscribe(&id).expect("events");
    engine.start(&id).expect("started");
    // The first front-end sees events up to the first question, then goes.
    let mut seen = Vec::new();
    let first_ask = loop {
        let ev = live.recv().await.expect("event");
        assert_eq!(ev.task_id, id);
        seen.extend(ev.seq);
        if let TaskEvent::AskRequired { ask_id, .. } = &ev.event {
            break ask_id.clone();
        }
    };
    drop(live);
    let last_seen = *seen.last().expect("a recorded event");
    assert_eq!(seen, (1..=last_seen).collect::<Vec<_>>());
    // Meanwhile the question is answered elsewhere and the task goes on.
    engine
        .answer(&id, &first_ask, Answer::Yes)
        .await
        .expect("answered");
    let completion = loop {
        if let Some(ask) = engine
            .pending_asks(&id)
            .expect("asks")
            .into_iter()
            .find(|a| a.kind == "completion")
        {
            break ask.ask_id;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // The missed result is replayed whole: its output, which the log
    // keeps in the conversation rather than twice, is the conversation's.
    let answered = || -> Vec<(String, String)> {
        let stored = engine.agent().store.load_api(&id, true).expect("history");
        stored
            .iter()
            .flat_map(|m| &m.message.content)
            .filter_map(|b| match b {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => Some((tool_use_id.clone(), content.clone())),
                _ => None,
            })
            .collect()
    };
    let replayed_results = |events: &[Envelope]| -> Vec<(String, String)> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                TaskEvent::ToolCallResult {
                    id,
                    result: Ok(output),
                    ..
                } => Some((id.clone(), output.clone())),
                _ => None,
            })
            .collect()
    };
    // It reconnects while the task waits, from the last position it saw.
    let (past, rx) = engine.events_after(&id, last_seen).await.expect("replay");
    let missed = answered();
    let mut rx = rx.expect("the task runs here");
    engine
        .answer(&id, &completion, Answer::Yes)
        .await
        .expect("answered");
    let mut after: Vec<i64> = past.iter().filter_map(|e| e.seq).collect();
    assert_eq!(
        replayed_results(&past),
        missed,
        "the missed tool result is replayed whole: {past:?}"
    );
    assert!(!missed.is_empty() && missed.iter().all(|(_, output)| !output.is_empty()));
    loop {
        let ev = rx.recv().await.expect("event");
        after.extend(ev.seq);
        if matches!(ev.event, TaskEvent::Completed { .. }) {
            break;
        }
    }
    let last = *after.last().expect("events");
    assert_eq!(
        after,
        (last_seen + 1..=last).collect::<Vec<_>>(),
        "nothing missed or repeated"
    );
    engine.wait(&id).await.expect("outcome");

    // Another process (a new engine on the same store) reads the log back.
    let (again, _) = engine_with(json!([]), ApprovalPolicy::yes(), &data);
    let (all, rx) = again.events_after(&id, 0).await.expect("replay");
    assert!(rx.is_none());
    assert_eq!(
        all.iter().filter_map(|e| e.seq).collect::<Vec<_>>(),
        (1..=last).collect::<Vec<_>>()
    );
    assert!(matches!(all[0].event, TaskEvent::TaskCreated { .. }));
    // Every result, the completion's too, read back whole by another
    // process.
    let every = answered();
    assert_eq!(every.len(), 2);
    assert_eq!(replayed_results(&all), every);
    assert!(matches!(
        all.last().map(|e| &e.event),
        Some(TaskEvent::Completed { .. })
    ));
}

/// How many of each record every appending process writes.
const APPENDS: usize = 150;

/// Not a test on its own: the child process of
/// A new task's creation and start are recorded by the transaction that
/// creates it: a process that dies before the task runs leaves a log that
/// says how it began. They go out to front-ends only as it starts, once,
/// at their positions; a front-end that reads the log back in between is
/// handed them by its receiver, not twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_tasks_opening_events_are_recorded_as_it_is_created() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let (engine, _) = engine_with(
        json!([complete("nothing to do")]),
        ApprovalPolicy::yes(),
        &data,
    );
    let id = create(&engine, "finish", ws.path()).await;
    let store = &engine.agent().store;
    let logged: Vec<(i64, TaskEvent)> = store
        .events_after(&id, 0, 10)
        .expect("log")
        .into_iter()
        .map(|row| {
            let event = serde_json::from_str(&row.event).expect("an event");
            (row.seq, event)
        })
        .collect();
    assert!(
        matches!(
            logged.as_slice(),
            [
                (1, TaskEvent::TaskCreated { .. }),
                (2, TaskEvent::TaskStarted { resumed: false })
            ]
        ),
        "recorded with the task, before it runs: {logged:?}"
    );
    let (past, rx) = engine.events_after(&id, 0).await.expect("replay");
    assert!(past.is_empty(), "not yet announced: {past:?}");
    let mut rx = rx.expect("held here");
    say_yes(&engine, &id);
    engine.start(&id).expect("started");
    let mut seqs = Vec::new();
    let mut kinds = Vec::new();
    loop {
        let ev = rx.recv().await.expect("event");
        if let Some(seq) = ev.seq {
            seqs.push(seq);
            kinds.push(ev.event.clone());
        }
        if matches!(ev.event, TaskEvent::Completed { .. }) {
            break;
        }
    }
    assert!(
        matches!(
            kinds.as_slice(),
            [
                TaskEvent::TaskCreated { .. },
                TaskEvent::TaskStarted { resumed: false },
                ..
            ]
        ),
        "announced first as it starts: {kinds:?}"
    );
    let last = *seqs.last().expect("events");
    assert_eq!(seqs, (1..=last).collect::<Vec<_>>(), "each once, in order");
    engine.wait(&id).await.expect("outcome");
}

/// [`two_processes_append_to_one_store_without_collisions`], which runs
/// this binary again with the store, task and its name in the environment.
#[test]
#[ignore = "run by two_processes_append_to_one_store_without_collisions"]
fn store_appender_child() {
    let (Ok(path), Ok(task), Ok(who), Ok(go)) = (
        std::env::var("ROOST_APPEND_STORE"),
        std::env::var("ROOST_APPEND_TASK"),
        std::env::var("ROOST_APPEND_WHO"),
        std::env::var("ROOST_APPEND_GO"),
    ) else {
        return;
    };
    let store = Store::open(std::path::Path::new(&path)).expect("store");
    // Start together with the other process.
    while !std::path::Path::new(&go).exists() {
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in 0..APPENDS {
        let text = format!("{who} {i}");
        store
            .append_api(&task, &Message::user_text(text.clone()))
            .expect("api message");
        store
            .append_ui(
                &task,
                roost_protocol::UiRow::say(roost_protocol::UiSubtype::Text),
                &text,
            )
            .expect("ui row");
        store
            .append_event(&task, &json!({"who": who, "i": i}).to_string())
            .expect("event");
    }
}

/// Two processes append messages, UI rows and events to one task of one
/// store at the same time: every record is there once, numbered 1…N with
/// no collision and no gap, and each process's records keep their order.
#[test]
fn two_processes_append_to_one_store_without_collisions() {
    let data = TestWorkspace::new();
    let path = data.root().join("roost.db");
    let store = Store::open(&path).expect("store");
    let task = store
        .create_task(&NewTask {
            parent_id: None,
            root_id: None,
            mode: "code".into(),
            workspace: data.path().display().to_string(),
            prompt: "append".into(),
            provider: "scripted".into(),
            model: "scripted".into(),
            base_url: String::new(),
            profile: String::new(),
            settings: None,
            owner: None,
            active_intent: None,
        })
        .expect("task");
    let go = data.root().join("go");
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|who| {
            std::process::Command::new(std::env::current_exe().expect("test binary"))
                .args([
                    "--exact",
                    "engine::store_appender_child",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("ROOST_APPEND_STORE", &path)
                .env("ROOST_APPEND_TASK", &task.id)
                .env("ROOST_APPEND_WHO", who)
                .env("ROOST_APPEND_GO", &go)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    std::fs::write(&go, "").expect("go");
    for child in children {
        let out = child.wait_with_output().expect("child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let total = 2 * APPENDS;
    let numbered = |seqs: Vec<i64>| {
        assert_eq!(
            seqs,
            (1..=i64::try_from(total).expect("small")).collect::<Vec<_>>()
        );
    };
    let api = store.load_api(&task.id, true).expect("api");
    numbered(api.iter().map(|m| m.seq).collect());
    let ui = store.load_ui(&task.id).expect("ui");
    // The prompt row is not written here; only the appended rows count.
    numbered(ui.iter().map(|m| m.seq).collect());
    let events = store.events_after(&task.id, 0, usize::MAX).expect("events");
    numbered(events.iter().map(|e| e.seq).collect());
    for who in ["a", "b"] {
        let mine: Vec<String> = ui
            .iter()
            .filter(|m| m.text.starts_with(&format!("{who} ")))
            .map(|m| m.text.clone())
            .collect();
        let expected: Vec<String> = (0..APPENDS).map(|i| format!("{who} {i}")).collect();
        assert_eq!(mine, expected, "{who}'s rows in order, none lost");
    }
}

/// The builder refuses, with a clear error and nothing half-built: no
/// model, a plugin impersonating a host tool, a component that is not one,
/// a store file that is not a database.
#[test]
fn the_builder_refuses_what_it_cannot_run() {
    let data = TestWorkspace::new();
    let provider = || {
        Arc::new(OpenAiCompatible::new(
            "scripted",
            "scripted",
            Arc::new(ScriptedTransport::per_conversation(
                serde_json::from_value(json!({"turns": []})).expect("script"),
            )),
            RetryPolicy::default(),
        ))
    };
    let dir = data.root().join("data");
    let err = |b: EngineBuilder| b.build().err().expect("refused").to_string();
    assert!(err(EngineBuilder::new(&dir).plugin_engine(engine())).contains("no model provider"));
    let impostor = err(EngineBuilder::new(&dir)
        .plugin_engine(engine())
        .provider(provider())
        .plugin_file(&fixture_wasm("impostor")));
    assert!(impostor.contains("attempt_completion"), "{impostor}");
    data.write("junk.wasm", "not a component");
    let junk = err(EngineBuilder::new(&dir)
        .plugin_engine(engine())
        .provider(provider())
        .plugin_file(&data.path().join("junk.wasm")));
    assert!(junk.contains("junk"), "{junk}");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("roost.db"), "not a database, not at all").expect("write");
    let store = err(EngineBuilder::new(&dir)
        .plugin_engine(engine())
        .provider(provider()));
    assert!(store.contains("SQLite"), "{store}");
}

/// Ids and positions from outside (a front-end, later an HTTP client) get
/// clear errors: unknown tasks and asks, any position, a corrupt log row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_refuses_bad_ids_and_positions() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let (engine, _) = engine_with(json!([complete("done")]), ApprovalPolicy::yes(), &data);
    let err = |e: Result<(), roost_core::engine::EngineError>| e.expect_err("refused").to_string();
    assert!(err(engine.cancel("no-such-task", "x").await).contains("no task no-such-task"));
    let code = |e: roost_core::engine::EngineError| e.code();
    assert_eq!(
        code(
            engine
                .cancel("no-such-task", "x")
                .await
                .expect_err("refused")
        ),
        EngineErrorCode::NotFound
    );
    assert_eq!(
        code(
            engine
                .records()
                .find("no-such-task")
                .map_err(Into::into)
                .expect_err("refused")
        ),
        EngineErrorCode::NotFound
    );
    let bad_mode = engine
        .create_task(&TaskSpec {
            prompt: "p".into(),
            workspace: std::path::PathBuf::from("/"),
            mode: "wizard".into(),
            ..TaskSpec::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(bad_mode.code(), EngineErrorCode::InvalidRequest);
    assert_eq!(bad_mode.body().code.as_str(), "invalid_request");
    assert!(err(engine.send_message("no-such-task", "x").await).contains("no task"));
    assert!(engine.subscribe("no-such-task").is_err());
    assert!(
        engine
            .answer("no-such-task", "no-such-ask", Answer::Yes)
            .await
            .is_err()
    );
    assert!(engine.events_after("no-such-task", 0).await.is_err());
    assert!(engine.records().find("no-such-task").is_err());
    let id = create(&engine, "p", ws.path()).await;
    say_yes(&engine, &id);
    engine.start(&id).expect("started");
    assert_eq!(
        engine.start(&id).expect_err("started twice").code(),
        EngineErrorCode::Conflict
    );
    engine.wait(&id).await.expect("outcome");
    assert!(
        engine
            .answer(&id, "no-such-ask", Answer::Yes)
            .await
            .is_err(),
        "an unknown ask"
    );
    let (all, _) = engine.events_after(&id, -5).await.expect("any position");
    assert!(!all.is_empty());
    let (none, _) = engine
        .events_after(&id, i64::MAX)
        .await
        .expect("past the end");
    assert!(none.is_empty());
    // A row that does not decode is reported, not skipped or a panic.
    engine
        .agent()
        .store
        .append_event(&id, "{not json")
        .expect("written");
    let bad = engine.events_after(&id, 0).await.expect_err("corrupt");
    assert!(bad.to_string().contains("does not decode"), "{bad}");
}

/// Answers task `id`'s questions with `pick`, from another tokio task.
fn answer_by(engine: &Arc<Engine>, id: &str, pick: fn(&Ask) -> Answer) {
    let mut rx = engine.subscribe(id).expect("events");
    let engine = Arc::clone(engine);
    tokio::spawn(async move {
        while let Ok(ev) = rx.recv().await {
            if let TaskEvent::AskRequired { ask_id, ask, .. } = &ev.event {
                let _ = engine.answer(&ev.task_id, ask_id, pick(ask)).await;
            }
        }
    });
}

/// A config file with two scripted profiles, each its own model and
/// transcript, written into `dir`.
fn two_profiles(dir: &TestWorkspace, a: Value, b: Value) -> roost_core::config::Config {
    dir.write(
        "a.json",
        &json!({"model": "model-a", "turns": a}).to_string(),
    );
    dir.write(
        "b.json",
        &json!({"model": "model-b", "turns": b}).to_string(),
    );
    let text = format!(
        "default_profile = \"a\"\n\
         [profiles.a]\nprovider = \"scripted\"\nscript = \"{}\"\n\
         [profiles.b]\nprovider = \"scripted\"\nscript = \"{}\"\ncontext_window = 64000\n",
        dir.path().join("a.json").display(),
        dir.path().join("b.json").display()
    );
    dir.write("config.toml", &text);
    roost_core::config::load(Some(&dir.path().join("config.toml"))).expect("config loads")
}

/// One engine runs a `--yes` task on one model beside an ask-everything
/// task on another, at once; each records its own settings and endpoint,
/// and a resume gets them back (a resume that names another policy
/// records that one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_with_their_own_policies_and_models_in_one_engine() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let writes = |path: &str| {
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": path, "content": "x\n"})
                )]
            ),
            complete("done")
        ])
    };
    let cfg = two_profiles(&data, writes("a.txt"), writes("b.txt"));
    let roost = EngineBuilder::from_config(&data.root().join("data"), &cfg)
        .plugin_engine(engine())
        .build()
        .expect("engine");
    let a = roost
        .create_task(&TaskSpec {
            prompt: "write a".into(),
            workspace: ws.path(),
            approval: Some(ApprovalPolicy::yes()),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    let b = roost
        .create_task(&TaskSpec {
            prompt: "write b".into(),
            workspace: ws.path(),
            endpoint: roost_core::engine::Endpoint {
                profile: Some("b".into()),
                ..Default::default()
            },
            max_turns: Some(7),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    // The ask-everything task's person says no to the write, yes to the
    // result; the `--yes` task is never asked about a tool (only, as every
    // task, whether its result is accepted).
    answer_by(&roost, &a, |ask| match ask {
        Ask::Tool { .. } => Answer::No {
            feedback: Some("a --yes task asked a person".into()),
        },
        _ => Answer::Yes,
    });
    answer_by(&roost, &b, |ask| match ask {
        Ask::Tool { .. } => Answer::No { feedback: None },
        _ => Answer::Yes,
    });
    roost.start(&a).expect("started");
    roost.start(&b).expect("started");
    let (oa, ob) = tokio::join!(roost.wait(&a), roost.wait(&b));
    assert!(matches!(oa, Ok(TaskOutcome::Completed { .. })), "{oa:?}");
    assert!(
        matches!(ob, Ok(TaskOutcome::Completed { .. })),
        "{ob:?} {:#?}",
        roost.agent().store.load_ui(&b)
    );
    assert_eq!(ws.read("a.txt"), "x\n");
    let asked_a = roost.records().ui_messages(&a).await.expect("ui");
    assert!(
        asked_a
            .iter()
            .all(|m| !(m.kind == "ask" && m.subtype == "tool")),
        "a --yes task asked: {asked_a:?}"
    );
    assert!(!ws.path().join("b.txt").exists(), "b's write was denied");
    let records = roost.records();
    let (ra, rb) = (records.find(&a).expect("a"), records.find(&b).expect("b"));
    assert_eq!(
        (ra.model.as_str(), rb.model.as_str()),
        ("model-a", "model-b")
    );
    let sa = ra.settings.expect("a's settings");
    let sb = rb.settings.expect("b's settings");
    assert!(sa.approval.approve_all && sa.max_turns == 50, "{sa:?}");
    assert!(!sb.approval.approve_all && sb.max_turns == 7, "{sb:?}");

    // A resume keeps what the task recorded: b goes back to model-b and its
    // own turn limit, unless the resume names others.
    let data2 = TestWorkspace::new();
    let cfg2 = two_profiles(&data2, json!([]), json!([complete("again")]));
    let engine2 = EngineBuilder::from_config(&data.root().join("data"), &cfg2)
        .plugin_engine(engine())
        .build()
        .expect("engine");
    // Completed tasks do not resume; a paused one does. Pause b's twin.
    let paused = engine2
        .create_task(&TaskSpec {
            prompt: "p".into(),
            workspace: ws.path(),
            endpoint: roost_core::engine::Endpoint {
                profile: Some("b".into()),
                ..Default::default()
            },
            max_turns: Some(0),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    engine2.start(&paused).expect("started");
    assert!(matches!(
        engine2.wait(&paused).await,
        Ok(TaskOutcome::Paused { .. })
    ));
    let prepared = engine2
        .prepare_resume(
            &paused,
            &ResumeSpec {
                max_turns: Some(3),
                ..ResumeSpec::default()
            },
        )
        .expect("resumable");
    assert_eq!(
        prepared.endpoint_change, None,
        "the recorded endpoint holds"
    );
    let record = engine2.records().find(&paused).expect("record");
    assert_eq!(record.model, "model-b");
    let s = record.settings.expect("settings");
    assert_eq!(s.max_turns, 3, "the resume's turn limit is recorded");
    assert!(!s.approval.approve_all, "the task's own policy is kept");
    answer_by(&engine2, &paused, |_| Answer::Yes);
    engine2.start(&paused).expect("started");
    let done = engine2.wait(&paused).await.expect("outcome");
    assert_eq!(
        done,
        TaskOutcome::Completed {
            result: "again".into()
        }
    );
    // How a task ended is still there for an engine that never ran it
    // (read back from the store's event log), and for one that has let it
    // leave memory.
    assert_eq!(
        engine2.wait(&b).await.expect("read back"),
        TaskOutcome::Completed {
            result: "done".into()
        }
    );
    assert_eq!(roost.in_memory(), 0);
    assert!(matches!(
        roost.wait(&a).await,
        Ok(TaskOutcome::Completed { .. })
    ));
    // An endpoint the config does not have is refused before anything is
    // stored, with a typed error.
    let before = engine2.records().list(100).expect("list").len();
    let err = engine2
        .create_task(&TaskSpec {
            prompt: "p".into(),
            workspace: ws.path(),
            endpoint: roost_core::engine::Endpoint {
                profile: Some("nope".into()),
                ..Default::default()
            },
            ..TaskSpec::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(err.code(), EngineErrorCode::InvalidRequest);
    assert!(err.to_string().contains("no profile `nope`"), "{err}");
    assert_eq!(engine2.records().list(100).expect("list").len(), before);
}

/// A provider that panics in the task's loop when asked for a reply (a
/// bug in a provider); everything else is the OpenAI-compatible one's.
struct PanickingProvider(OpenAiCompatible);

#[async_trait::async_trait]
impl roost_core::llm::Provider for PanickingProvider {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "falls-over"
    }
    fn wire(&self) -> &dyn roost_core::llm::WireFormat {
        self.0.wire()
    }
    async fn stream_body(
        &self,
        _: roost_core::llm::RequestBody,
    ) -> Result<roost_core::llm::EventStream, roost_core::llm::LlmError> {
        panic!("the provider fell over");
    }
}

/// A task whose loop panics ends `failed` with the panic's message, its
/// history consistent; `wait` returns; the engine goes on running others;
/// finished tasks leave memory but their outcome and events stay reachable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_task_ends_failed_and_the_engine_goes_on() {
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let engine = EngineBuilder::new(&data.root().join("data"))
        .plugin_engine(engine())
        .provider(Arc::new(PanickingProvider(OpenAiCompatible::new(
            "scripted",
            "scripted",
            Arc::new(ScriptedTransport::per_conversation(
                serde_json::from_value(json!({"turns": []})).expect("script"),
            )),
            RetryPolicy::default(),
        ))))
        .build()
        .expect("engine");
    let id = create(&engine, "p", ws.path()).await;
    engine.start(&id).expect("started");
    let outcome = engine.wait(&id).await.expect("wait returns");
    let TaskOutcome::Failed { error } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(error.contains("the provider fell over"), "{error}");
    let record = engine.records().find(&id).expect("record");
    assert_eq!(record.status, TaskStatus::Failed);
    assert_pairing(&engine.agent().store, &id);
    let ui = engine.records().ui_messages(&id).await.expect("ui");
    assert!(ui.iter().any(|m| m.text.contains("panicked")), "{ui:?}");
    // The task left memory; what it did is still there.
    assert_eq!(engine.in_memory(), 0);
    assert_eq!(engine.wait(&id).await.expect("remembered"), outcome);
    let (events, live) = engine.events_after(&id, 0).await.expect("recorded");
    assert!(live.is_none());
    assert!(
        events
            .iter()
            .any(|e| matches!(e.event, TaskEvent::Failed { .. }))
    );
    // Another task of the same engine still runs (and fails the same way,
    // without taking the engine down).
    let other = create(&engine, "q", ws.path()).await;
    engine.start(&other).expect("started");
    assert!(matches!(
        engine.wait(&other).await,
        Ok(TaskOutcome::Failed { .. })
    ));
}

/// A task reaches its engine through a weak handle: a task it starts is
/// its child (parent and root recorded) and never gets more than it has;
/// once the engine is gone the handle says so instead of keeping it alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spawner_handle_starts_children_that_never_exceed_their_parent() {
    use roost_core::turn::{ChildSpec, SpawnError};
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    let (engine, _) = engine_with(
        json!([complete("done")]),
        ApprovalPolicy::from_groups("read,edit").expect("policy"),
        &data,
    );
    let parent = engine
        .create_task(&TaskSpec {
            prompt: "parent".into(),
            workspace: ws.path(),
            approval: Some(ApprovalPolicy::from_groups("read").expect("policy")),
            max_turns: Some(5),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    let handle = engine.spawner();
    let child_spec = ChildSpec {
        mode: "code".into(),
        message: "child".into(),
        todos: None,
        approval: ApprovalPolicy::yes(),
        inherited: Default::default(),
    };
    let parent_record = engine.records().find(&parent).expect("parent");
    let (child, _events) = handle
        .get()
        .expect("the engine is there")
        .spawn_child(&parent_record, &child_spec)
        .await
        .expect("spawned");
    let record = engine.records().find(&child).expect("child");
    assert_eq!(record.parent_id.as_deref(), Some(parent.as_str()));
    assert_eq!(record.root_id, parent);
    let s = record.settings.expect("settings");
    assert!(!s.approval.approve_all, "{s:?}");
    assert_eq!(s.approval.describe(), "read");
    assert_eq!(s.max_turns, 5);
    // It was started at once: its question may be out before anyone
    // listens, so it is found among the pending asks, as a front-end that
    // connects late finds it.
    let outcome = {
        let waiting = engine.wait(&child);
        tokio::pin!(waiting);
        loop {
            tokio::select! {
                o = &mut waiting => break o,
                () = tokio::time::sleep(Duration::from_millis(20)) => {
                    for ask in engine.pending_asks(&child).expect("asks") {
                        let _ = engine.answer(&child, &ask.ask_id, Answer::Yes).await;
                    }
                }
            }
        }
    };
    assert!(
        matches!(outcome, Ok(TaskOutcome::Completed { .. })),
        "{outcome:?}"
    );
    // A mode that does not exist is a typed refusal, and stores nothing.
    let unknown = ChildSpec {
        mode: "no-such-mode".into(),
        ..child_spec
    };
    let err = handle
        .get()
        .expect("engine")
        .spawn_child(&parent_record, &unknown)
        .await
        .expect_err("refused");
    assert!(
        matches!(&err, SpawnError::Refused(_)) && err.to_string().contains("no-such-mode"),
        "{err}"
    );
    assert_eq!(
        engine
            .records()
            .children(&parent)
            .await
            .expect("children")
            .len(),
        1
    );
    drop(engine);
    assert!(matches!(handle.get(), Err(SpawnError::Gone)));
}

/// Subtasks created at once (a parallel group's) share the store's
/// commits: twelve children are twelve steps in two transactions (the
/// first alone, the rest together, as a front-end's creations are), each
/// stored whole — its parent, root and owner, its first message, its
/// claim by this engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subtasks_created_at_once_share_a_commit() {
    use roost_core::turn::ChildSpec;
    let data = TestWorkspace::new();
    let ws = TestWorkspace::new();
    // A model that has not answered yet: the children wait for it and
    // write nothing meanwhile.
    let (engine, _) = engine_with(
        json!([{"delay_ms": 3_600_000, "text": "thinking"}]),
        ApprovalPolicy::from_groups("read").expect("policy"),
        &data,
    );
    let parent = engine
        .create_task(&TaskSpec {
            prompt: "parent".into(),
            workspace: ws.path(),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    let record = engine.records().find(&parent).expect("parent");
    let specs: Vec<ChildSpec> = (0..12)
        .map(|i| ChildSpec {
            mode: "code".into(),
            message: format!("child {i}"),
            todos: None,
            approval: ApprovalPolicy::yes(),
            inherited: Default::default(),
        })
        .collect();
    let spawner = engine.spawner().get().expect("the engine is there");
    let records = engine.records();
    let before = records.stats();
    let spawned =
        futures::future::join_all(specs.iter().map(|c| spawner.spawn_child(&record, c))).await;
    let after = records.stats();
    assert_eq!(after.steps - before.steps, 12, "{before:?} {after:?}");
    assert_eq!(
        after.transactions - before.transactions,
        2,
        "the first alone, the rest in one shared commit: {before:?} {after:?}"
    );
    let store = engine.agent().store.clone();
    for (i, spawned) in spawned.into_iter().enumerate() {
        let (id, _events) = spawned.expect("spawned");
        let child = records.find(&id).expect("child");
        assert_eq!(child.parent_id.as_deref(), Some(parent.as_str()));
        assert_eq!(child.root_id, parent);
        assert_eq!(child.prompt, format!("child {i}"));
        assert_eq!(store.load_api(&id, false).expect("history").len(), 1);
        assert!(store.is_live(&id), "claimed as it was created");
        engine.cancel(&id, "test over").await.expect("cancelled");
    }
}
