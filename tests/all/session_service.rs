//! The session service every front-end goes through: tenancy (exact ids,
//! another tenant's task looks like no task), answers checked against the
//! question they answer, and following a task's events with replay from a
//! sequence number, none missed or repeated.

use roost_core::engine::TaskSpec;
use roost_core::events::TaskEvent;
use roost_core::session::{Created, Owner, Session, SessionError};
use roost_core::task::ApprovalPolicy;
use roost_protocol::api::Decision;
use roost_tests::harness::{call, complete, harness, turn};
use serde_json::json;

fn spec(h: &roost_tests::harness::Harness, prompt: &str) -> TaskSpec {
    TaskSpec {
        prompt: prompt.to_owned(),
        workspace: h.ws.path(),
        mode: "code".into(),
        ..TaskSpec::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_reaches_only_its_own_tasks_by_their_exact_id() {
    let h = harness(json!([complete("done")]), ApprovalPolicy::default());
    let engine = h.engine();
    let a = Session::new(engine, Owner::Tenant("alice".into()));
    let b = Session::new(engine, Owner::Tenant("bob".into()));
    let host = Session::new(engine, Owner::Host);

    assert!(matches!(
        a.create(&spec(&h, "  \n")).await,
        Err(SessionError::Invalid(_))
    ));
    let Ok(Created::Here(id)) = a.create(&spec(&h, "hello")).await else {
        panic!("alice's task is created here (no shared store)")
    };
    assert_eq!(a.task(&id).await.expect("alice's own").task.id, id);
    assert_eq!(
        a.task(&id)
            .await
            .expect("alice's own")
            .task
            .owner
            .as_deref(),
        Some("alice")
    );

    // Bob: every way in looks like no such task; nothing of alice's moves.
    let not_found = |r: Result<(), SessionError>, what: &str| match r {
        Err(SessionError::NotFound) => {}
        other => panic!("{what}: {other:?}"),
    };
    not_found(b.task(&id).await.map(drop), "show");
    not_found(b.asks(&id, true).await.map(drop), "asks");
    not_found(
        b.decide(&id, "any", Decision::Approve).await.map(drop),
        "decide",
    );
    not_found(b.follow(&id, 0).await.map(drop), "follow");
    not_found(b.cancel(&id, "bob").await.map(drop), "cancel");
    not_found(b.send_message(&id, "hi").await.map(drop), "message");
    // A prefix is no id for a tenant (it would let one probe another's).
    not_found(a.task(&id[..8]).await.map(drop), "alice by prefix");
    // The host's user names tasks by a unique prefix, and sees every one.
    assert_eq!(host.task(&id[..8]).await.expect("by prefix").task.id, id);
    assert!(matches!(
        a.follow(&id, -1).await,
        Err(SessionError::Invalid(_))
    ));
    assert_eq!(
        SessionError::NotFound.body().message,
        "no such task here",
        "the refusal names nothing of the task"
    );
    // The completion review: bob cannot take it either; alice accepts.
    let mut rx = engine.subscribe(&id).expect("subscribes");
    engine.start(&id).expect("starts");
    let ask_id = next_ask(&mut rx).await;
    not_found(
        b.decide(&id, &ask_id, Decision::Accept).await.map(drop),
        "decide an open question",
    );
    a.decide(&id, &ask_id, Decision::Accept)
        .await
        .expect("accepted");
    engine.wait(&id).await.expect("runs");
}

/// The id of the next question the task asks.
async fn next_ask(rx: &mut roost_core::events::Subscription) -> String {
    loop {
        let env = rx.recv().await.expect("an event");
        if let TaskEvent::AskRequired { ask_id, .. } = &env.event {
            return ask_id.clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_must_fit_its_question_and_a_follower_misses_nothing() {
    let h = harness(
        json!([
            turn(
                "",
                vec![call(
                    "write_to_file",
                    json!({"path": "a.txt", "content": "hi\n"})
                )]
            ),
            complete("written")
        ]),
        ApprovalPolicy::default(),
    );
    let engine = h.engine();
    let s = Session::new(engine, Owner::Tenant("alice".into()));
    let id = s
        .create(&spec(&h, "write a.txt"))
        .await
        .expect("created")
        .id()
        .to_owned();
    let mut rx = engine.subscribe(&id).expect("subscribes");
    engine.start(&id).expect("starts");
    let ask_id = next_ask(&mut rx).await;
    let open = s.asks(&id, true).await.expect("asks");
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].ask_id, ask_id);
    assert_eq!(open[0].kind, "tool");

    // Words do not answer an approval, nor "accept" a tool call; an id
    // that is not open is a conflict. None of them answers it.
    for wrong in [Decision::Answer { text: "yes".into() }, Decision::Accept] {
        match s.decide(&id, &ask_id, wrong.clone()).await {
            Err(SessionError::Invalid(m)) => assert!(m.contains("does not answer"), "{m}"),
            other => panic!("{wrong:?}: {other:?}"),
        }
    }
    assert!(matches!(
        s.decide(&id, "ask-that-is-not-open", Decision::Approve)
            .await,
        Err(SessionError::Conflict(_))
    ));
    assert_eq!(
        s.asks(&id, false).await.expect("asks").len(),
        1,
        "still open"
    );
    std::fs::metadata(h.ws.path().join("a.txt")).expect_err("nothing written yet");

    let decided = s
        .decide(&id, &ask_id, Decision::Approve)
        .await
        .expect("approved");
    assert_eq!(decided.stored.ask_id, ask_id);
    // The completion review: an approval does not accept a result.
    let review = next_ask(&mut rx).await;
    assert!(matches!(
        s.decide(&id, &review, Decision::Approve).await,
        Err(SessionError::Invalid(_))
    ));
    s.decide(&id, &review, Decision::Accept)
        .await
        .expect("accepted");
    engine.wait(&id).await.expect("runs");
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join("a.txt")).expect("written"),
        "hi\n"
    );

    // Replay: from 0 every recorded event once, in order; from any seq
    // exactly those after it.
    use futures::StreamExt;
    let all: Vec<_> = s
        .follow(&id, 0)
        .await
        .expect("follows")
        .into_stream()
        .collect()
        .await;
    let seqs: Vec<i64> = all.iter().filter_map(|e| e.seq).collect();
    assert!(seqs.len() > 4, "{seqs:?}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let from = seqs[seqs.len() - 3];
    let rest: Vec<i64> = s
        .follow(&id, from)
        .await
        .expect("follows")
        .into_stream()
        .filter_map(|e| std::future::ready(e.seq))
        .collect()
        .await;
    assert_eq!(rest, seqs[seqs.len() - 2..].to_vec());
}

/// Tasks created by many front-ends at once ride one shared commit of the
/// store: of twelve creations the first goes alone and the other eleven
/// share one transaction, each task stored with its first message, its
/// owner and its claim; a creation the engine refuses
/// (an unknown mode, a workspace that does not open) stores nothing and
/// holds none of the others up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_at_once_share_a_commit_and_a_refused_one_stores_nothing() {
    let h = harness(json!([complete("done")]), ApprovalPolicy::default());
    let engine = h.engine();
    let records = engine.records();
    let sessions: Vec<Session> = (0..12)
        .map(|i| Session::new(engine, Owner::Tenant(format!("tenant-{i}"))))
        .collect();
    let before = records.stats();
    let listed = records.list(100).expect("listed").len();
    let unknown = TaskSpec {
        mode: "wizard".into(),
        ..spec(&h, "no such mode")
    };
    let nowhere = TaskSpec {
        workspace: h.ws.path().join("missing"),
        ..spec(&h, "no such workspace")
    };
    let specs: Vec<TaskSpec> = (0..12).map(|i| spec(&h, &format!("task {i}"))).collect();
    let refusing = Session::new(engine, Owner::Host);
    let (created, wizard, missing) = tokio::join!(
        futures::future::join_all(sessions.iter().zip(&specs).map(|(s, spec)| s.create(spec))),
        refusing.create(&unknown),
        refusing.create(&nowhere),
    );
    let after = records.stats();
    assert!(matches!(wizard, Err(SessionError::Engine(_))), "{wizard:?}");
    assert!(
        matches!(missing, Err(SessionError::Engine(_))),
        "{missing:?}"
    );
    assert_eq!(after.steps - before.steps, 12, "{before:?} {after:?}");
    assert_eq!(
        after.transactions - before.transactions,
        2,
        "the first alone, the rest in one shared commit: {before:?} {after:?}"
    );
    assert_eq!(records.list(100).expect("listed").len(), listed + 12);
    let store = h.store();
    for (i, (s, created)) in sessions.iter().zip(created).enumerate() {
        let Ok(Created::Here(id)) = created else {
            panic!("created here: {created:?}")
        };
        let task = s.task(&id).await.expect("its own").task;
        assert_eq!(task.prompt, format!("task {i}"));
        assert_eq!(task.owner.as_deref(), Some(format!("tenant-{i}").as_str()));
        let api = store.load_api(&id, false).expect("history");
        assert_eq!(api.len(), 1, "its first message");
        assert!(
            store.is_live(&id),
            "claimed by this engine as it was created"
        );
    }
}
