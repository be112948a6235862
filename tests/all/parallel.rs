//! Parallel groups (`new_parallel_tasks`) end to end, the scripted model
//! serving a transcript per child: `all` gathers every result, each child
//! writing only its own scope (one without a scope only reads) and the
//! orchestrator's todo list following its children; overlapping scopes
//! are refused before anything starts; `race` keeps the first result and
//! aborts the rest; a group's time limit aborts what still runs; a big
//! group queues behind the tree's concurrency bound instead of being
//! refused.

use roost_core::engine::TaskSpec;
use roost_core::events::TaskEvent;
use roost_core::store::{TaskStatus, TodoState};
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_protocol::{DelegationLimits, GroupStatus, GroupStrategy};
use roost_tests::harness::{
    Harness, assert_completed_with_its_totals, assert_pairing, call, complete, scripted_harness,
    trace_lines, turn,
};
use roost_tests::user::ScriptedUser;
use serde_json::{Value, json};

fn group(tasks: Value, extra: Value) -> Value {
    let mut args = json!({ "tasks": tasks });
    if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    turn("Fanning out.", vec![call("new_parallel_tasks", args)])
}

fn write(path: &str) -> Value {
    turn(
        "",
        vec![call(
            "write_to_file",
            json!({"path": path, "content": "hi\n"}),
        )],
    )
}

fn slow(result: &str, ms: u64) -> Value {
    let mut t = complete(result);
    t["delay_ms"] = json!(ms);
    t
}

fn children(h: &Harness, id: &str) -> Vec<roost_core::store::TaskRecord> {
    h.store().children(id).expect("children")
}

/// `all` with five children writing disjoint scopes and a sixth without
/// a scope: the five files persist, the sixth's write is refused (it only
/// reads), every result comes back in one aggregated tool result with its
/// usage, the group is recorded with its events, the parent's totals
/// include the children's, and the parent's todo items are done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_gathers_every_childs_result_each_inside_its_own_scope() {
    let mut tasks = Vec::new();
    let mut scripts = Vec::new();
    let mut todos = Vec::new();
    for k in 1..=5 {
        let msg = format!("Write part {k}.");
        tasks.push(json!({"mode": "code", "message": msg, "scope": [format!("part{k}/**")]}));
        scripts.push(json!({"message": msg, "turns": [
            write(&format!("part{k}/out.txt")),
            complete(&format!("part {k} written")),
        ]}));
        todos.push(format!("[ ] Write part {k}"));
    }
    tasks.push(json!({"mode": "code", "message": "Look around only."}));
    scripts.push(json!({"message": "Look around only.", "turns": [
        write("elsewhere.txt"),
        complete("looked around"),
    ]}));
    let h = scripted_harness(
        json!({
            "turns": [
                turn("Planning.", vec![call("update_todo_list", json!({"todos": todos.join("\n")}))]),
                group(json!(tasks), json!({"strategy": "all"})),
                complete("all parts written"),
            ],
            "tasks": scripts,
        }),
        ApprovalPolicy::yes(),
    );
    let mut rx = h.events.subscribe();
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "write five parts")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    for k in 1..=5 {
        assert_eq!(h.ws.read(&format!("part{k}/out.txt")), "hi\n");
    }
    assert!(!h.ws.path().join("elsewhere.txt").exists());
    let kids = children(&h, &id);
    assert_eq!(kids.len(), 6);
    assert!(kids.iter().all(|k| k.status == TaskStatus::Completed));
    let reader = kids
        .iter()
        .find(|k| k.prompt.contains("Look around only."))
        .expect("the reader");
    let r = h.results(&reader.id);
    assert!(
        r[0].1 && r[0].0.contains("outside_parent_scope"),
        "a child without a scope only reads: {r:?}"
    );
    // One aggregated result: every child's id, status, result and usage.
    let results = h.results(&id);
    let (agg, err) = results
        .iter()
        .find(|(r, _)| r.contains("Parallel group"))
        .expect("the group's result");
    assert!(!err, "{agg}");
    assert!(agg.contains("6 of 6 subtasks completed"), "{agg}");
    for k in &kids {
        assert!(agg.contains(&k.id), "{agg}");
    }
    assert!(agg.contains("part 3 written") && agg.contains("input_tokens"));
    // The group as recorded.
    let groups = h.store().groups_of(&id).expect("groups");
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    assert_eq!(g.strategy, GroupStrategy::All);
    assert_eq!(g.status, GroupStatus::Completed);
    assert_eq!(g.results.len(), 6);
    assert!(g.children.iter().all(Option::is_some));
    // Totals: three parent turns and twelve child turns, 100 in each.
    let parent = h.store().get_task(&id).expect("parent");
    assert_eq!(parent.usage.input_tokens, 1500, "{:?}", parent.usage);
    assert_completed_with_its_totals(h.store(), &id);
    // The plan's items were carried out by the children.
    let todos = h.store().get_todos(&id).expect("todos");
    assert!(
        todos.iter().all(|t| t.state == TodoState::Completed),
        "{todos:?}"
    );
    let mut seen = Vec::new();
    while let Ok(env) = rx.try_recv() {
        seen.push(env.event.clone());
    }
    let count = |f: &dyn Fn(&TaskEvent) -> bool| seen.iter().filter(|e| f(e)).count();
    assert_eq!(
        count(&|e| matches!(e, TaskEvent::GroupStarted { children: 6, .. })),
        1
    );
    assert_eq!(
        count(&|e| matches!(e, TaskEvent::GroupChildFinished { .. })),
        6
    );
    assert_eq!(
        count(&|e| matches!(
            e,
            TaskEvent::GroupFinished {
                status: GroupStatus::Completed,
                ..
            }
        )),
        1
    );
    // The todo list as announced, in order: no item ever goes back (a
    // list written before another never lands after it), and the last
    // one has every item done.
    let lists: Vec<Vec<u8>> = seen
        .iter()
        .filter_map(|e| match e {
            TaskEvent::TodosUpdated { markdown } => Some(
                markdown
                    .lines()
                    .map(|l| match l.get(..3) {
                        Some("[x]") => 2,
                        Some("[-]") => 1,
                        _ => 0,
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    assert!(
        lists.len() >= 2,
        "the plan, then its items marked: {lists:?}"
    );
    for pair in lists.windows(2) {
        assert!(
            pair[0].iter().zip(&pair[1]).all(|(a, b)| a <= b),
            "an item went back: {lists:?}"
        );
    }
    assert_eq!(lists.last(), Some(&vec![2; 5]), "{lists:?}");
    assert_pairing(h.store(), &id);
    for k in &kids {
        assert_pairing(h.store(), &k.id);
    }
}

/// Siblings whose scopes overlap are refused before any starts, with the
/// overlap named; so is a scope wider than the parent's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_or_wider_scopes_are_refused_at_spawn() {
    let h = scripted_harness(
        json!({
            "turns": [
                turn("", vec![call("select_active_intent", json!({"intent_id": "INT-SRC"}))]),
                group(json!([
                    {"mode": "code", "message": "A", "scope": ["src/**"]},
                    {"mode": "code", "message": "B", "scope": ["src/auth/login.rs"]},
                ]), json!({})),
                group(json!([
                    {"mode": "code", "message": "A", "scope": ["src/**"]},
                    {"mode": "code", "message": "B", "scope": ["docs/**"]},
                ]), json!({})),
                complete("gave up"),
            ],
        }),
        ApprovalPolicy::yes(),
    );
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - id: INT-SRC\n    name: src\n    status: IN_PROGRESS\n    owned_scope: [\"src/**\"]\n",
    );
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "fan out")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[1].1
            && r[1].0.contains("subtasks 1 and 2 overlap")
            && r[1].0.contains("`src/**`")
            && r[1].0.contains("`src/auth/login.rs`"),
        "{r:?}"
    );
    assert!(
        r[2].1 && r[2].0.contains("subtask 2's scope `docs/**`"),
        "{r:?}"
    );
    assert!(children(&h, &id).is_empty());
    assert!(h.store().groups_of(&id).expect("groups").is_empty());
}

/// `race`: the first completed result wins, the others are aborted with
/// their histories kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn race_keeps_the_first_result_and_aborts_the_others() {
    let h = scripted_harness(
        json!({
            "turns": [
                group(json!([
                    {"mode": "ask", "message": "Slow one."},
                    {"mode": "ask", "message": "Fast one."},
                    {"mode": "ask", "message": "Slower one."},
                ]), json!({"strategy": "race"})),
                complete("raced"),
            ],
            "tasks": [
                {"message": "Slow one.", "turns": [slow("slow answer", 600_000)]},
                {"message": "Fast one.", "turns": [complete("fast answer")]},
                {"message": "Slower one.", "turns": [slow("slower answer", 600_000)]},
            ]
        }),
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "race")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        !r[0].1 && r[0].0.contains("Subtask 2 won the race") && r[0].0.contains("fast answer"),
        "{r:?}"
    );
    let kids = children(&h, &id);
    assert_eq!(kids.len(), 3);
    for k in &kids {
        let want = if k.prompt.contains("Fast one.") {
            TaskStatus::Completed
        } else {
            TaskStatus::Aborted
        };
        assert_eq!(k.status, want, "{}", k.prompt);
        // Every history is kept, the losers' too.
        assert!(!h.store().load_api(&k.id, true).expect("api").is_empty());
        assert_pairing(h.store(), &k.id);
    }
    let g = &h.store().groups_of(&id).expect("groups")[0];
    assert_eq!(g.status, GroupStatus::Completed);
}

/// A group's time limit aborts the children still running; the result
/// says so and carries what did complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_time_limit_aborts_what_still_runs() {
    let h = scripted_harness(
        json!({
            "turns": [
                group(json!([
                    {"mode": "ask", "message": "Quick."},
                    {"mode": "ask", "message": "Endless."},
                ]), json!({"timeout_s": 1})),
                complete("partly done"),
            ],
            "tasks": [
                {"message": "Quick.", "turns": [complete("quick answer")]},
                {"message": "Endless.", "turns": [slow("never", 600_000)]},
            ]
        }),
        ApprovalPolicy::yes(),
    );
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "time it")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let r = h.results(&id);
    assert!(
        r[0].1 && r[0].0.contains("past its 1s limit") && r[0].0.contains("quick answer"),
        "{r:?}"
    );
    let g = &h.store().groups_of(&id).expect("groups")[0];
    assert_eq!(g.status, GroupStatus::TimedOut);
    let endless = children(&h, &id)
        .into_iter()
        .find(|k| k.prompt.contains("Endless."))
        .expect("endless child");
    assert_eq!(endless.status, TaskStatus::Aborted);
}

/// Thirty children under a tree bound of four: the extra ones queue
/// (never more than four ask the model at once) and all finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_children_queue_behind_four_slots_and_all_finish() {
    let tasks: Vec<Value> = (1..=30)
        .map(|k| json!({"mode": "ask", "message": format!("Job {k}.")}))
        .collect();
    let mut h = scripted_harness(
        json!({
            "turns": [group(json!(tasks), json!({})), complete("thirty done")],
            "tasks": [{"message": "Job ", "turns": [slow("job done", 40)]}]
        }),
        ApprovalPolicy::yes(),
    );
    h.config.delegation.max_concurrent_children = 4;
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "thirty jobs")
        .await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let kids = children(&h, &id);
    assert_eq!(kids.len(), 30);
    assert!(kids.iter().all(|k| k.status == TaskStatus::Completed));
    let peak = h.transport.peak_concurrent();
    assert!((1..=4).contains(&peak), "{peak} children ran at once");
    let r = h.results(&id);
    assert!(r[0].0.contains("30 of 30 subtasks completed"), "{r:?}");
}

/// One rate limiter per profile, shared by every task of the process:
/// twenty parallel subtasks on a profile limited to 600 requests a minute
/// (one every 100 ms) never reach a real local server faster than that,
/// counted by the server in every one-second window; and the 429 it sends
/// once backs the whole profile off for its `Retry-After`, whichever task
/// got it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_children_share_their_profiles_rate_limit_and_its_back_off() {
    use roost_core::config::Config;
    use roost_core::engine::{ConfigEndpoints, EngineBuilder, TaskSpec};
    use roost_core::llm::scripted::{Turn, render};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let sse = |turn: &Turn, n: usize| -> Vec<u8> {
        let body = render(turn, n).concat();
        roost_tests::http::reply(200, &[("content-type", "text/event-stream")], &body)
    };
    let tasks: Vec<Value> = (1..=20)
        .map(|k| json!({"mode": "ask", "message": format!("Question {k}.")}))
        .collect();
    let turn = |v: Value| -> Turn { serde_json::from_value(v).expect("turn") };
    let fan_out = turn(group(json!(tasks), json!({})));
    let done = turn(complete("answered"));
    let arrivals = Arc::new(Mutex::new(Vec::<(Instant, u16)>::new()));
    let seen = Arc::clone(&arrivals);
    let server = roost_tests::http::Server::start(move |_| {
        let mut seen = seen.lock().expect("arrivals");
        let n = seen.len();
        let (status, reply) = match n {
            0 => (200, sse(&fan_out, n)),
            // Once, the provider says "too many requests".
            6 => (
                429,
                roost_tests::http::reply(429, &[("retry-after", "1")], "slow down"),
            ),
            _ => (200, sse(&done, n)),
        };
        seen.push((Instant::now(), status));
        reply
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg_path = dir.path().join("config.toml");
    std::fs::write(
        &cfg_path,
        format!(
            "default_profile = \"local\"\n[profiles.local]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"{}/v1\"\nrequests_per_minute = 600\n",
            server.base()
        ),
    )
    .expect("config");
    let cfg: Config = roost_core::config::load(Some(&cfg_path)).expect("config");
    let engine = EngineBuilder::from_config(&dir.path().join("data"), &cfg)
        .endpoints(Arc::new(ConfigEndpoints::new(cfg.clone(), None)))
        .plugin_engine(roost_tests::engine())
        .build()
        .expect("engine");
    let ws = roost_tests::TestWorkspace::new();
    let id = engine
        .create_task(&TaskSpec {
            prompt: "twenty questions".into(),
            workspace: ws.path(),
            mode: "orchestrator".into(),
            approval: Some(ApprovalPolicy::yes()),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    // The person accepts the root's result (the children's complete on
    // their own under the root's policy).
    let user = ScriptedUser::default();
    let answering = engine.answer_with(&id, &user).expect("answerer");
    engine.start(&id).expect("started");
    tokio::pin!(answering);
    let wait = engine.wait(&id);
    tokio::pin!(wait);
    let outcome = tokio::select! {
        o = &mut wait => o,
        () = &mut answering => wait.await,
    }
    .expect("outcome");
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let kids = engine.agent().store.children(&id).expect("children");
    assert_eq!(kids.len(), 20);
    assert!(kids.iter().all(|k| k.status == TaskStatus::Completed));
    let arrivals = arrivals.lock().expect("arrivals").clone();
    // 1 + 20 + 1 answers, and the one refused.
    assert_eq!(arrivals.len(), 23, "{arrivals:?}");
    // Never more than the limit (plus one request already on its way) in
    // any one-second window.
    for (i, (start, _)) in arrivals.iter().enumerate() {
        let within = arrivals[i..]
            .iter()
            .take_while(|(t, _)| t.duration_since(*start) < Duration::from_secs(1))
            .count();
        assert!(
            within <= 11,
            "{within} requests within a second of request {i}"
        );
    }
    // After the 429, the whole profile waited out its Retry-After: at
    // most the one request already on its way arrived in that second.
    let refused = arrivals
        .iter()
        .position(|(_, s)| *s == 429)
        .expect("the 429");
    let (at, _) = arrivals[refused];
    let during = arrivals[refused + 1..]
        .iter()
        .filter(|(t, _)| t.duration_since(at) < Duration::from_millis(900))
        .count();
    assert!(during <= 1, "{during} requests during the back-off");
}

/// Run a task in mode orchestrator whose own delegation bounds are
/// `limits`, to its end.
async fn run_bounded(h: &Harness, limits: DelegationLimits, prompt: &str) -> (String, TaskOutcome) {
    let id = h
        .engine()
        .create_task(&TaskSpec {
            prompt: prompt.to_owned(),
            workspace: h.ws.path(),
            mode: "orchestrator".to_owned(),
            delegation: limits,
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    let outcome = h
        .drive(h.engine(), &id, &ScriptedUser::default())
        .await
        .expect("runs");
    (id, outcome)
}

fn twelve_jobs() -> Value {
    let tasks: Vec<Value> = (1..=12)
        .map(|k| json!({"mode": "ask", "message": format!("Job {k}.")}))
        .collect();
    json!({
        "turns": [group(json!(tasks), json!({})), complete("twelve done")],
        "tasks": [{"message": "Job ", "turns": [slow("job done", 40)]}]
    })
}

/// A task's own delegation bounds tighten the engine's for its whole
/// tree (its children carry them, recorded), and never widen them: a
/// task asking for 3 at once gets at most 3 while the engine allows 8; one
/// asking for 50 gets at most the engine's 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_own_delegation_bounds_only_tighten_the_engines() {
    let narrow = DelegationLimits {
        max_concurrent_children: Some(3),
        ..DelegationLimits::default()
    };
    let h = scripted_harness(twelve_jobs(), ApprovalPolicy::yes());
    let (id, outcome) = run_bounded(&h, narrow, "twelve jobs, three at a time").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let kids = children(&h, &id);
    assert_eq!(kids.len(), 12);
    assert!(kids.iter().all(|k| k.status == TaskStatus::Completed));
    assert!(
        kids.iter()
            .all(|k| k.settings.as_ref().map(|s| s.delegation) == Some(narrow)),
        "children carry their root's bounds"
    );
    let peak = h.transport.peak_concurrent();
    assert!((1..=3).contains(&peak), "{peak} children ran at once");

    let mut h = scripted_harness(twelve_jobs(), ApprovalPolicy::yes());
    h.config.delegation.max_concurrent_children = 2;
    let wide = DelegationLimits {
        max_concurrent_children: Some(50),
        ..DelegationLimits::default()
    };
    let (id, outcome) = run_bounded(&h, wide, "twelve jobs, fifty at a time?").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(children(&h, &id).len(), 12);
    let peak = h.transport.peak_concurrent();
    assert!((1..=2).contains(&peak), "{peak} children ran at once");
}

/// A task's own `max_depth` of 1 holds for its children: a child's
/// `new_task` is an error result the child reads, though the engine would
/// allow depth 4; a `max_total_children` of 2 refuses a group of three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_own_depth_and_total_bounds_hold_down_its_tree() {
    let h = scripted_harness(
        json!({
            "turns": [
                turn("", vec![call("new_task", json!({"mode": "code", "message": "LEVEL-1 work"}))]),
                group(json!([
                    {"mode": "ask", "message": "Job A."},
                    {"mode": "ask", "message": "Job B."},
                    {"mode": "ask", "message": "Job C."}
                ]), json!({})),
                complete("root done")
            ],
            "tasks": [
                {"message": "LEVEL-1 work", "turns": [
                    turn("", vec![call("new_task", json!({"mode": "code", "message": "LEVEL-2 work"}))]),
                    complete("level 1 done")
                ]},
                {"message": "LEVEL-2 work", "turns": [complete("too deep")]},
                {"message": "Job ", "turns": [complete("job done")]}
            ]
        }),
        ApprovalPolicy::yes(),
    );
    let limits = DelegationLimits {
        max_depth: Some(1),
        max_total_children: Some(2),
        ..DelegationLimits::default()
    };
    let (id, outcome) = run_bounded(&h, limits, "bounded tree").await;
    assert!(
        matches!(&outcome, TaskOutcome::Completed { result } if result == "root done"),
        "{outcome:?}"
    );
    let l1 = children(&h, &id);
    assert_eq!(l1.len(), 1, "the group of three was refused whole");
    assert!(children(&h, &l1[0].id).is_empty());
    let refused = h.results(&l1[0].id);
    assert!(
        refused
            .iter()
            .any(|(r, err)| *err && r.contains("cannot delegate deeper")),
        "{refused:?}"
    );
    let r = h.results(&id);
    assert!(
        r.iter().any(|(r, err)| *err && r.contains("subtasks")),
        "the group over the total is an error result: {r:?}"
    );
}

/// Garbage arguments from the model are error results it reads, one per
/// call, and start nothing: no tasks, too many tasks, a zero bound, an
/// unknown strategy, a task without its message, tasks that are not a
/// list, a scope escaping the workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_group_arguments_are_error_results_and_start_nothing() {
    let job = json!({"mode": "ask", "message": "Job."});
    let many: Vec<Value> = (0..101).map(|_| job.clone()).collect();
    let bad = [
        json!({"tasks": []}),
        json!({"tasks": many}),
        json!({"tasks": [job], "max_concurrency": 0}),
        json!({"tasks": [job], "timeout_s": 0}),
        json!({"tasks": [job], "strategy": "fastest"}),
        json!({"tasks": [{"mode": "ask"}]}),
        json!({"tasks": "all of them"}),
        json!({"tasks": [{"mode": "code", "message": "Out.", "scope": ["../elsewhere/**"]}]}),
        json!({"tasks": [job], "surprise": true}),
    ];
    let mut turns: Vec<Value> = bad
        .iter()
        .map(|a| turn("Trying.", vec![call("new_parallel_tasks", a.clone())]))
        .collect();
    turns.push(complete("gave up"));
    let mut h = scripted_harness(
        json!({"turns": turns, "tasks": [{"message": "Job", "turns": [complete("ran")]}]}),
        ApprovalPolicy::yes(),
    );
    // Every refusal is an error result, not a mistake that ends the task.
    h.config.max_mistakes = 20;
    let (id, outcome) = h
        .run_in("orchestrator", &ScriptedUser::default(), "garbage")
        .await;
    assert!(
        matches!(&outcome, TaskOutcome::Completed { result } if result == "gave up"),
        "{outcome:?}"
    );
    assert!(children(&h, &id).is_empty(), "nothing started");
    let results: Vec<(String, bool)> = h
        .results(&id)
        .into_iter()
        .filter(|(r, _)| !r.contains("accepted the result"))
        .collect();
    assert_eq!(results.len(), bad.len(), "{results:?}");
    assert!(results.iter().all(|(_, err)| *err), "{results:?}");
    assert_pairing(h.store(), &id);
    insta::assert_snapshot!(
        results
            .iter()
            .map(|(r, _)| r.as_str())
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
}

/// Roo's "Touch and Go" with intents on: an orchestrator under `INT-A`
/// (`src/a/**`) fans out children scoped `src/a/p1.txt` and `src/a/p2.txt`.
/// Each works under `INT-A` narrowed to its own file — one selects it
/// (allowed, its context names its own part), the other just writes (it
/// started under it) — each file is written, a write to the sibling's
/// file (inside `INT-A`, outside the child's scope) is refused with no one
/// asked, and the trace records each child's write under `INT-A` with that
/// child's path only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn siblings_under_an_intent_write_their_own_parts_of_it() {
    let select = turn(
        "",
        vec![call("select_active_intent", json!({"intent_id": "INT-A"}))],
    );
    let h = scripted_harness(
        json!({
            "turns": [
                select.clone(),
                group(json!([
                    {"mode": "code", "message": "P1: write src/a/p1.txt", "scope": ["src/a/p1.txt"]},
                    {"mode": "code", "message": "P2: write src/a/p2.txt", "scope": ["src/a/p2.txt"]},
                ]), json!({"strategy": "all"})),
                complete("both parts written"),
            ],
            "tasks": [
                {"message": "P1: write src/a/p1.txt", "turns": [
                    select,
                    write("src/a/p1.txt"),
                    write("src/a/p2.txt"),
                    complete("p1 written"),
                ]},
                {"message": "P2: write src/a/p2.txt", "turns": [
                    write("src/a/p2.txt"),
                    write("src/a/p3.txt"),
                    complete("p2 written"),
                ]},
            ],
        }),
        ApprovalPolicy::yes(),
    );
    h.ws.write(
        ".orchestration/active_intents.yaml",
        "active_intents:\n  - id: INT-A\n    name: part a\n    status: IN_PROGRESS\n    owned_scope: [\"src/a/**\"]\n",
    );
    let user = ScriptedUser::default();
    let (id, outcome) = h.run_in("orchestrator", &user, "touch and go").await;
    assert!(
        matches!(outcome, TaskOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(h.ws.read("src/a/p1.txt"), "hi\n");
    assert_eq!(h.ws.read("src/a/p2.txt"), "hi\n");
    assert!(!h.ws.path().join("src/a/p3.txt").exists());
    let kids = children(&h, &id);
    assert_eq!(kids.len(), 2);
    let kid = |p: &str| {
        kids.iter()
            .find(|k| k.prompt.starts_with(p))
            .expect("the child")
    };
    let (p1, p2) = (kid("P1"), kid("P2"));
    for k in [p1, p2] {
        assert_eq!(k.status, TaskStatus::Completed, "{}", k.prompt);
        assert_eq!(k.active_intent.as_deref(), Some("INT-A"), "{}", k.prompt);
        assert_pairing(h.store(), &k.id);
    }
    // P1 selected the parent's intent: held, narrowed to its own file.
    let r = h.results(&p1.id);
    assert!(!r[0].1, "the parent's intent is selectable: {r:?}");
    assert!(
        r[0].0.contains("<intent_context>")
            && r[0].0.contains("owned_scope:\n  - src/a/p1.txt\n")
            && r[0].0.contains("intent_scope:")
            && r[0].0.contains("  - src/a/**"),
        "the context names the child's own part: {r:?}"
    );
    assert!(!r[1].1, "its own file: {r:?}");
    assert!(
        r[2].1 && r[2].0.contains("outside_parent_scope") && r[2].0.contains("src/a/p1.txt"),
        "the sibling's file, inside INT-A, is not P1's: {r:?}"
    );
    // P2 never selected: it started under the intent.
    let r = h.results(&p2.id);
    assert!(!r[0].1, "it works under the parent's intent: {r:?}");
    assert!(
        r[1].1 && r[1].0.contains("outside_parent_scope"),
        "outside its own file: {r:?}"
    );
    let results = h.results(&id);
    assert!(
        results
            .iter()
            .any(|(r, err)| !err && r.contains("2 of 2 subtasks completed")),
        "{results:?}"
    );
    // No one was asked to widen anything.
    let asked = user.asked();
    assert!(!asked.iter().any(|a| a.starts_with("scope")), "{asked:?}");
    // The trace: each child's write under INT-A, with its own path only.
    let trace = trace_lines(&h.ws.path());
    for (k, path) in [(p1, "src/a/p1.txt"), (p2, "src/a/p2.txt")] {
        let mutations: Vec<&Value> = trace
            .iter()
            .filter(|e| e["task_id"] == k.id.as_str() && e["kind"] == "mutation")
            .collect();
        assert_eq!(mutations.len(), 1, "{}: {trace:#?}", k.prompt);
        let m = mutations[0];
        assert_eq!(m["intent_id"], "INT-A", "{m}");
        let files: Vec<&str> = m["files"]
            .as_array()
            .expect("files")
            .iter()
            .filter_map(|f| f["path"].as_str())
            .collect();
        assert_eq!(files, [path], "{m}");
        let refused: Vec<&Value> = trace
            .iter()
            .filter(|e| e["task_id"] == k.id.as_str() && e["kind"] == "violation")
            .collect();
        assert_eq!(refused.len(), 1, "{}: {trace:#?}", k.prompt);
        assert_eq!(refused[0]["intent_id"], "INT-A", "{}", refused[0]);
    }
}
