use serde_json::json;

use super::*;
use roost_protocol::{Grant, UiRow, UiSubtype};

/// Which database a test of the store suite runs on: every test that is
/// not about one backend's own files runs on both.
#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    #[cfg(feature = "postgres")]
    Postgres,
}

/// Where a test's store lives, kept for opening it again.
struct Place {
    dir: tempfile::TempDir,
    location: StoreLocation,
}

impl Place {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn reopen(&self) -> Store {
        Store::open_at(&self.location).expect("reopens")
    }
}

/// Round trips made between two readings of a store's stats, besides
/// preparing statements (which each connection does once a statement).
fn trips_between(before: &StoreStats, after: &StoreStats) -> u64 {
    (after.round_trips - after.prepared) - (before.round_trips - before.prepared)
}

fn store_on(b: Backend) -> (Place, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = match b {
        Backend::Sqlite => StoreLocation::File(dir.path().join("roost.db")),
        #[cfg(feature = "postgres")]
        Backend::Postgres => StoreLocation::Postgres(
            roost_testpg::shared()
                .and_then(|pg| pg.fresh_database())
                .unwrap_or_else(|e| panic!("{e}")),
        ),
    };
    let s = Store::open_at(&location).expect("opens");
    (Place { dir, location }, s)
}

/// Run each named test of the suite on SQLite and on PostgreSQL.
macro_rules! on_both {
    ($($name:ident),+ $(,)?) => {
        mod on_sqlite {
            $(#[test] fn $name() { super::$name(super::Backend::Sqlite) })+
        }
        #[cfg(feature = "postgres")]
        mod on_postgres {
            $(#[test] fn $name() {
                roost_testpg::skip_without_postgres!();
                super::$name(super::Backend::Postgres)
            })+
        }
    };
}

fn spec() -> NewTask {
    NewTask {
        parent_id: None,
        root_id: None,
        mode: "code".into(),
        workspace: "/ws".into(),
        prompt: "do it".into(),
        provider: "scripted".into(),
        model: "m".into(),
        base_url: String::new(),
        profile: String::new(),
        settings: None,
        owner: None,
        active_intent: None,
    }
}

fn new_task(s: &Store) -> TaskRecord {
    s.create_task(&spec()).expect("creates")
}

/// A task's messages, each with its position.
fn api_of(s: &Store, task: &str) -> Vec<(i64, Message)> {
    s.load_api(task, false)
        .expect("api")
        .into_iter()
        .map(|m| (m.seq, m.message))
        .collect()
}

/// A task's UI rows' texts, each with its position.
fn ui_of(s: &Store, task: &str) -> Vec<(i64, String)> {
    s.load_ui(task)
        .expect("ui")
        .into_iter()
        .map(|r| (r.seq, r.text))
        .collect()
}

/// A task's first ten events, each with its position.
fn events_of(s: &Store, task: &str) -> Vec<(i64, String)> {
    s.events_after(task, 0, 10)
        .expect("events")
        .into_iter()
        .map(|e| (e.seq, e.event))
        .collect()
}

/// `steps` written in one shared commit's transaction.
fn commit_together(s: &Store, steps: &[(&str, step::PreparedStep)]) -> Vec<Committed> {
    let refs: Vec<(&str, &step::PreparedStep)> = steps.iter().map(|(t, st)| (*t, st)).collect();
    s.db.write(|c| step::write_batch(c, &[], &refs, &[], None, now_ms(), None))
        .expect("committed together")
}

fn tool_use(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Text {
                text: "on it".into(),
            },
            ContentBlock::ToolUse {
                id: id.into(),
                name: "read_file".into(),
                input: json!({"path": "a"}),
            },
        ],
    }
}

fn tasks_round_trip_and_persist_across_reopen(b: Backend) {
    let (dir, s) = store_on(b);
    let t = new_task(&s);
    assert_eq!(t.status, TaskStatus::Running);
    assert_eq!(t.root_id, t.id);
    s.set_status(&t.id, TaskStatus::Paused).expect("status");
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 2,
        cache_write_tokens: 1,
    };
    s.commit_step(&t.id, Step::new().usage(&usage, 0.25))
        .expect("usage");
    s.append_api(&t.id, &Message::user_text("hello"))
        .expect("append");
    drop(s);
    let s = dir.reopen();
    let t2 = s.get_task(&t.id).expect("found");
    assert_eq!(t2.status, TaskStatus::Paused);
    assert_eq!(t2.usage.input_tokens, 10);
    assert!((t2.cost - 0.25).abs() < 1e-9);
    assert_eq!(s.load_api(&t.id, false).expect("history").len(), 1);
    assert_eq!(s.find_task(&t.id[..8]).expect("prefix").id, t.id);
    assert!(matches!(s.get_task("nope"), Err(StoreError::NotFound(_))));
}

fn api_history_order_update_and_hidden(b: Backend) {
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    let a = s
        .append_api(&t.id, &Message::user_text("1"))
        .expect("append");
    let b = s.append_api(&t.id, &tool_use("c1")).expect("append");
    let c = s
        .append_api(&t.id, &Message::user_text("3"))
        .expect("append");
    assert_eq!((a, b, c), (1, 2, 3));
    s.update_api(&t.id, c, &Message::user_text("three"))
        .expect("update");
    s.hide_api(&t.id, &[a]).expect("hide");
    let visible = s.load_api(&t.id, false).expect("load");
    assert_eq!(
        visible.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert_eq!(visible[1].message, Message::user_text("three"));
    assert_eq!(s.load_api(&t.id, true).expect("load").len(), 3);
}

fn dangling_tool_uses_are_answered_as_interrupted(b: Backend) {
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    s.append_api(&t.id, &Message::user_text("go"))
        .expect("append");
    let mut two = tool_use("c1");
    two.content.push(ContentBlock::ToolUse {
        id: "c2".into(),
        name: "list_files".into(),
        input: json!({}),
    });
    s.append_api(&t.id, &two).expect("append");
    s.append_api(
        &t.id,
        &Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "c1".into(),
                content: "ok".into(),
                is_error: false,
            }],
        },
    )
    .expect("append");
    assert_eq!(s.repair_dangling_tool_uses(&t.id).expect("repair"), 1);
    assert_eq!(s.repair_dangling_tool_uses(&t.id).expect("idempotent"), 0);
    let h = s.load_api(&t.id, false).expect("load");
    assert_eq!(h.len(), 3);
    let ids: Vec<_> = h[2]
        .message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                is_error,
                ..
            } => Some((tool_use_id.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(ids, vec![("c1".to_owned(), false), ("c2".to_owned(), true)]);

    let t2 = new_task(&s);
    s.append_api(&t2.id, &tool_use("x")).expect("append");
    assert_eq!(s.repair_dangling_tool_uses(&t2.id).expect("repair"), 1);
    assert_eq!(s.load_api(&t2.id, false).expect("load").len(), 2);
}

fn ui_messages_todos_and_export(b: Backend) {
    let (dir, s) = store_on(b);
    let t = new_task(&s);
    s.append_api(&t.id, &Message::user_text("go"))
        .expect("append");
    s.append_api(&t.id, &tool_use("c1")).expect("append");
    s.append_ui(&t.id, UiRow::say(UiSubtype::Text), "hello")
        .expect("ui");
    s.append_ui(
        &t.id,
        UiRow::ask(UiSubtype::Tool),
        "{\"tool\":\"read_file\"}",
    )
    .expect("ui");
    let todos = vec![
        TodoItem {
            text: "a".into(),
            state: TodoState::Completed,
        },
        TodoItem {
            text: "b".into(),
            state: TodoState::Pending,
        },
    ];
    s.commit_step(&t.id, Step::new().todos(&todos))
        .expect("todos");
    assert_eq!(s.get_todos(&t.id).expect("todos"), todos);
    let out = dir.path().join("export");
    s.export_roo(&t.id, &out).expect("export");
    let api: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("api_conversation_history.json")).expect("read"),
    )
    .expect("json");
    assert_eq!(api[1]["content"][1]["type"], "tool_use");
    assert!(api[0]["ts"].is_i64());
    let ui: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("ui_messages.json")).expect("read"))
            .expect("json");
    assert_eq!(ui[0]["type"], "say");
    assert_eq!(ui[0]["say"], "text");
    assert_eq!(ui[1]["ask"], "tool");
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("task_metadata.json")).expect("read"),
    )
    .expect("json");
    assert!(meta["files_in_context"].is_array());
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("roost.db");
    std::fs::write(
        &p,
        "this is not sqlite, just text that is long enough to have a header",
    )
    .expect("write");
    let e = Store::open(&p).err().expect("refused");
    let msg = e.to_string();
    assert!(msg.contains("roost.db"), "{msg}");
}

fn a_corrupt_row_is_reported_not_a_panic(b: Backend) {
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    s.append_api(&t.id, &Message::user_text("ok"))
        .expect("append");
    s.db.run(|c| c.exec("INSERT INTO api_messages (task, seq, role, content, created_at) SELECT k, 2, 'user', '{broken', 0 FROM tasks WHERE id = ?1", params![&t.id]))
        .expect("inject");
    let e = s.load_api(&t.id, false).expect_err("corrupt");
    assert!(matches!(e, StoreError::Corrupt { seq: 2, .. }), "{e}");
    s.db.run(|c| {
        c.exec(
            "UPDATE tasks SET status = 'weird' WHERE id = ?1",
            params![&t.id],
        )
    })
    .expect("inject");
    assert!(matches!(s.get_task(&t.id), Err(StoreError::Corrupt { .. })));
    // An event's row that carries half a UI row (a position, no kind).
    s.db.run(|c| c.exec("INSERT INTO events (task, seq, ts, event, ui_seq, ui_text) SELECT k, 1, 0, '{}', 1, 'half' FROM tasks WHERE id = ?1", params![&t.id]))
        .expect("inject");
    let e = s.load_ui(&t.id).expect_err("corrupt");
    assert!(matches!(e, StoreError::Decode { .. }), "{e}");
}

fn concurrent_appends_keep_order_per_task(b: Backend) {
    let (_d, s) = store_on(b);
    let tasks: Vec<String> = (0..4).map(|_| new_task(&s).id).collect();
    std::thread::scope(|sc| {
        for id in &tasks {
            let s = s.clone();
            sc.spawn(move || {
                for i in 0..50 {
                    s.append_api(id, &Message::user_text(i.to_string()))
                        .expect("append");
                }
            });
        }
    });
    for id in &tasks {
        let h = s.load_api(id, false).expect("load");
        assert_eq!(h.len(), 50);
        for (i, m) in h.iter().enumerate() {
            assert_eq!(m.message, Message::user_text(i.to_string()));
        }
    }
}

/// A store written by schema 1 (no endpoint columns) opens, gains them,
/// and keeps its tasks; new tasks record their endpoint.
#[test]
fn schema_1_stores_are_migrated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    {
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, parent_id TEXT, root_id TEXT NOT NULL, mode TEXT NOT NULL,
               workspace TEXT NOT NULL, status TEXT NOT NULL, prompt TEXT NOT NULL,
               provider TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',
               created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
               tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,
               cache_reads INTEGER NOT NULL DEFAULT 0, cache_writes INTEGER NOT NULL DEFAULT 0,
               cost REAL NOT NULL DEFAULT 0, active_intent TEXT);
             INSERT INTO tasks (id, root_id, mode, workspace, status, prompt, provider, model, created_at, updated_at)
               VALUES ('old-1', 'old-1', 'code', '/ws', 'paused', 'p', 'openai', 'm', 1, 1);
             PRAGMA user_version=1;",
        )
        .expect("v1 schema");
    }
    let s = Store::open(&path).expect("migrates");
    let old = s.get_task("old-1").expect("kept");
    assert_eq!((old.base_url.as_str(), old.profile.as_str()), ("", ""));
    s.set_endpoint("old-1", "openai", "http://127.0.0.1:1/v1", "m2", "local")
        .expect("set");
    let old = s.get_task("old-1").expect("kept");
    assert_eq!(old.base_url, "http://127.0.0.1:1/v1");
    assert_eq!((old.model.as_str(), old.profile.as_str()), ("m2", "local"));
    drop(s);
    // Opening again is a no-op.
    assert!(Store::open(&path).is_ok());
}

/// A store written by schema 12 (plugins recorded without their
/// component's BLAKE3) opens as schema 13 with each plugin kept and its
/// BLAKE3 empty: the install layer then checks it by its SHA-256.
#[test]
fn schema_12_plugins_are_kept_without_a_blake3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v12.db");
    drop(Store::open(&path).expect("create"));
    {
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "ALTER TABLE plugins DROP COLUMN blake3;
             INSERT INTO plugins (name, version, manifest, sha256, granted, tools, enabled, size, installed_at)
               VALUES ('old', '1.0.0', '', 'ab', '{}', '[]', 1, 10, 1);
             PRAGMA user_version=12;",
        )
        .expect("v12 schema");
    }
    let s = Store::open(&path).expect("migrates");
    let old = s.get_plugin("old").expect("read").expect("kept");
    assert_eq!((old.sha256.as_str(), old.blake3.as_str()), ("ab", ""));
}

/// A store written by schema 13 (every event holding its own result)
/// opens as schema 14: its events read back as they were written, and a
/// result's event recorded from then on keeps its output in the message.
#[test]
fn schema_13_events_keep_their_own_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v13.db");
    let task = {
        let s = Store::open(&path).expect("create");
        let t = new_task(&s);
        s.append_event(&t.id, RESULT_OLD).expect("event");
        t.id
    };
    {
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch("ALTER TABLE events DROP COLUMN result_in; PRAGMA user_version=13;")
            .expect("v13 schema");
    }
    let s = Store::open(&path).expect("migrates");
    let old = s.events_after(&task, 0, 10).expect("read");
    assert_eq!(old.len(), 1);
    assert_eq!(
        (old[0].event.as_str(), old[0].output.as_deref()),
        (RESULT_OLD, None)
    );
    let m = results(&[("c1", "kept once")]);
    s.commit_step(
        &task,
        Step::new().append(&m).result_event(lean_result("c1")),
    )
    .expect("recorded");
    let new = s.events_after(&task, 1, 10).expect("read");
    assert_eq!(new[0].output.as_deref(), Some("kept once"));
}

/// A result's event as recorded before schema 14: its output in it.
const RESULT_OLD: &str = r#"{"event":"tool_call_result","id":"c0","tool":"read_file","result":{"ok":"old output"},"diff":null}"#;

/// A result's event recorded with its output left to the message.
fn lean_result(call: &str) -> String {
    format!(
        r#"{{"event":"tool_call_result","id":"{call}","tool":"read_file","result":{{"ok":""}},"diff":null}}"#
    )
}

/// The user message answering calls `(id, output)`.
fn results(calls: &[(&str, &str)]) -> Message {
    Message {
        role: Role::User,
        content: calls
            .iter()
            .map(|(id, out)| ContentBlock::ToolResult {
                tool_use_id: (*id).to_owned(),
                content: (*out).to_owned(),
                is_error: false,
            })
            .collect(),
    }
}

/// A result's output is written once, in the conversation: its event
/// keeps where it is and reads back whole, also when the message grows
/// by a second call's result. Taking the conversation back past that
/// message first writes the outputs into their events. A result's event
/// in a step without a message, or whose message does not answer its
/// call, is refused or reported corrupt, never replayed empty.
fn a_results_output_is_written_once(b: Backend) {
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    let big = "file line\n".repeat(400);
    let first = results(&[("c0", &big)]);
    let step = Step::new().append(&first);
    assert!(step.holds_output("c0", &big));
    assert!(!step.holds_output("c0", "other text"));
    assert!(!step.holds_output("c9", &big));
    let seq = s
        .commit_step(&t.id, step.result_event(lean_result("c0")))
        .expect("first")
        .message
        .expect("a message");
    let both = results(&[("c0", &big), ("c1", "second output")]);
    s.commit_step(
        &t.id,
        Step::new()
            .put(Some(seq), &both)
            .result_event(lean_result("c1")),
    )
    .expect("second");
    let read = s.events_after(&t.id, 0, 10).expect("read");
    let outputs: Vec<Option<&str>> = read.iter().map(|e| e.output.as_deref()).collect();
    assert_eq!(outputs, [Some(big.as_str()), Some("second output")]);
    assert!(
        read.iter()
            .all(|e| !e.event.contains("file line") && !e.event.contains("second output"))
    );
    assert_eq!(
        s.last_events(&t.id, 1).expect("last")[0].output.as_deref(),
        Some("second output")
    );

    // No message to keep it in: the step writes nothing.
    let before = s.last_event_seq(&t.id).expect("seq");
    assert!(
        s.commit_step(&t.id, Step::new().result_event(lean_result("c2")))
            .is_err()
    );
    assert_eq!(s.last_event_seq(&t.id).expect("seq"), before);

    // Back before the message: the outputs move into their events.
    s.truncate_conversation(&t.id, seq - 1, 0)
        .expect("truncate");
    assert!(
        s.load_api(&t.id, true)
            .expect("api")
            .iter()
            .all(|m| m.seq < seq)
    );
    let kept = s.events_after(&t.id, 0, 10).expect("read");
    assert!(kept.iter().all(|e| e.output.is_none()));
    assert!(
        kept[0].event.contains("file line") && kept[1].event.contains("second output"),
        "{kept:?}"
    );

    // A message that does not answer the event's call: reported corrupt.
    let other = results(&[("c5", "five")]);
    s.commit_step(
        &t.id,
        Step::new().append(&other).result_event(lean_result("c6")),
    )
    .expect("written");
    let err = s.events_after(&t.id, 0, 10).expect_err("corrupt");
    assert!(
        err.to_string().contains("no longer answers call c6"),
        "{err}"
    );
}

/// A store written by schema 5 (history, UI rows and events filed under
/// the task's id text) opens as schema 6 with every row kept under the
/// task's integer key, in order, and the numbering goes on from there.
#[test]
fn schema_5_stores_are_rekeyed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v5.db");
    {
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA foreign_keys=ON;
             CREATE TABLE tasks (id TEXT PRIMARY KEY, parent_id TEXT, root_id TEXT NOT NULL, mode TEXT NOT NULL,
               workspace TEXT NOT NULL, status TEXT NOT NULL, prompt TEXT NOT NULL,
               provider TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',
               base_url TEXT NOT NULL DEFAULT '', profile TEXT NOT NULL DEFAULT '',
               created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
               tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,
               cache_reads INTEGER NOT NULL DEFAULT 0, cache_writes INTEGER NOT NULL DEFAULT 0,
               cost REAL NOT NULL DEFAULT 0, active_intent TEXT);
             CREATE TABLE api_messages (task_id TEXT NOT NULL REFERENCES tasks(id), seq INTEGER NOT NULL,
               role TEXT NOT NULL, content TEXT NOT NULL, hidden INTEGER NOT NULL DEFAULT 0,
               created_at INTEGER NOT NULL, PRIMARY KEY (task_id, seq));
             CREATE TABLE ui_messages (task_id TEXT NOT NULL REFERENCES tasks(id), seq INTEGER NOT NULL,
               ts INTEGER NOT NULL, kind TEXT NOT NULL, subtype TEXT NOT NULL, text TEXT NOT NULL,
               PRIMARY KEY (task_id, seq));
             CREATE TABLE events (task_id TEXT NOT NULL REFERENCES tasks(id), seq INTEGER NOT NULL,
               ts INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (task_id, seq));
             CREATE TABLE todos (task_id TEXT NOT NULL REFERENCES tasks(id), idx INTEGER NOT NULL,
               text TEXT NOT NULL, state TEXT NOT NULL, PRIMARY KEY (task_id, idx));
             INSERT INTO tasks (id, root_id, mode, workspace, status, prompt, provider, model, created_at, updated_at, tokens_in)
               VALUES ('old-a', 'old-a', 'code', '/ws', 'paused', 'a', 'openai', 'm', 1, 1, 7),
                      ('old-b', 'old-b', 'ask', '/ws', 'completed', 'b', 'openai', 'm', 2, 2, 0);
             INSERT INTO api_messages VALUES
               ('old-a', 1, 'user', '[{\"type\":\"text\",\"text\":\"first\"}]', 0, 1),
               ('old-b', 1, 'user', '[{\"type\":\"text\",\"text\":\"other\"}]', 0, 2),
               ('old-a', 2, 'assistant', '[{\"type\":\"text\",\"text\":\"second\"}]', 1, 3);
             INSERT INTO ui_messages VALUES ('old-a', 1, 1, 'say', 'text', 'first'), ('old-b', 1, 2, 'say', 'text', 'other');
             INSERT INTO events VALUES ('old-a', 1, 1, '{\"event\":\"task_created\"}'), ('old-a', 2, 3, '{\"event\":\"paused\"}');
             INSERT INTO todos VALUES ('old-a', 0, 'do it', 'pending');
             PRAGMA user_version=5;",
        )
        .expect("v5 schema");
    }
    let s = Store::open(&path).expect("migrates");
    let a = s.get_task("old-a").expect("kept");
    assert_eq!((a.status, a.usage.input_tokens), (TaskStatus::Paused, 7));
    let history = s.load_api("old-a", true).expect("history");
    let kept: Vec<(i64, &Message, bool)> = history
        .iter()
        .map(|m| (m.seq, &m.message, m.hidden))
        .collect();
    assert_eq!(
        kept,
        [
            (1, &Message::user_text("first"), false),
            (2, &Message::assistant_text("second"), true)
        ]
    );
    assert_eq!(s.load_api("old-b", true).expect("b").len(), 1);
    assert_eq!(s.load_ui("old-a").expect("ui")[0].text, "first");
    assert_eq!(s.last_event_seq("old-a").expect("events"), 2);
    // A step's UI row rides in its event's row now (schema 15), after the
    // rows the old table holds.
    let step = Step::new()
        .ui(UiRow::say(UiSubtype::Text), "again")
        .event(r#"{"event":"warning","message":"w"}"#.to_owned());
    assert_eq!(s.commit_step("old-a", step).expect("step").ui, vec![2]);
    let ui: Vec<(i64, String)> = s
        .load_ui("old-a")
        .expect("ui")
        .into_iter()
        .map(|r| (r.seq, r.text))
        .collect();
    assert_eq!(ui, [(1, "first".to_owned()), (2, "again".to_owned())]);
    assert_eq!(s.get_todos("old-a").expect("todos").len(), 1);
    // Numbering goes on; the keys hold (a row of a missing task is refused).
    assert_eq!(
        s.append_api("old-a", &Message::user_text("third"))
            .expect("append"),
        3
    );
    assert_eq!(s.append_event("old-a", "{}").expect("event"), 4);
    assert!(matches!(
        s.append_api("gone", &Message::user_text("x")),
        Err(StoreError::NotFound(_))
    ));
    let fresh = new_task(&s);
    assert_eq!(
        s.append_ui(&fresh.id, UiRow::say(UiSubtype::Text), "hi")
            .expect("ui"),
        1
    );
    let leftovers: i64 = s
        .db
        .run(|c| {
            c.one(
                "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '%_v5' OR name LIKE '%_v6' OR sql LIKE '%_v6%'",
                params![],
            )?
            .get(0)
        })
        .expect("schema");
    assert_eq!(leftovers, 0);
    assert!(
        s.db.run(|c| c.query("PRAGMA foreign_key_check", params![]))
            .expect("check")
            .is_empty()
    );
    drop(s);
    let s = Store::open(&path).expect("opens again");
    assert_eq!(s.load_api("old-a", true).expect("history").len(), 3);
}

/// A model reply is one step: message, UI row and usage land together.
fn a_reply_is_recorded_as_one_step(b: Backend) {
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 2,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    };
    let reply = |task: &str, m: &Message, text: &'static str| {
        s.commit_step(
            task,
            Step::new()
                .append(m)
                .usage(&usage, 0.5)
                .ui(UiRow::say(UiSubtype::Text), text),
        )
        .map(|c| c.message)
    };
    let seq = reply(&t.id, &tool_use("c1"), "on it")
        .expect("recorded")
        .expect("a message");
    let api = s.load_api(&t.id, true).expect("api");
    assert_eq!(api.last().map(|m| m.seq), Some(seq));
    let ui = s.load_ui(&t.id).expect("ui");
    assert_eq!(ui.last().map(|m| m.text.as_str()), Some("on it"));
    let rec = s.get_task(&t.id).expect("task");
    assert_eq!(rec.usage.input_tokens, 10);
    assert!((rec.cost - 0.5).abs() < f64::EPSILON);
    // A reply on a task that does not exist writes nothing at all.
    assert!(reply("no-such-task", &tool_use("c2"), "x").is_err());
    assert!(s.load_ui("no-such-task").expect("ui").is_empty());
}

/// A tool call's outcome is one step: the result message, its UI row and,
/// for the call that ended the task, the final status land together.
fn a_result_is_recorded_as_one_step(b: Backend) {
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    let results = |n: usize| Message {
        role: Role::User,
        content: (0..n)
            .map(|i| ContentBlock::ToolResult {
                tool_use_id: format!("c{i}"),
                content: format!("r{i}"),
                is_error: false,
            })
            .collect(),
    };
    let result = |task: &str, seq: Option<i64>, m: &Message, text: &'static str, status| {
        let mut step = Step::new()
            .put(seq, m)
            .ui(UiRow::say(UiSubtype::ToolResult), text);
        if let Some(status) = status {
            step = step.status(status);
        }
        s.commit_step(task, step).map(|c| c.message)
    };
    let seq = result(&t.id, None, &results(1), "r0", None)
        .expect("recorded")
        .expect("a message");
    let again = result(
        &t.id,
        Some(seq),
        &results(2),
        "r1",
        Some(TaskStatus::Completed),
    )
    .expect("recorded")
    .expect("a message");
    assert_eq!(seq, again);
    let api = s.load_api(&t.id, true).expect("api");
    assert_eq!(api.last().map(|m| m.message.content.len()), Some(2));
    let ui: Vec<String> = s
        .load_ui(&t.id)
        .expect("ui")
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert!(ui.ends_with(&["r0".to_owned(), "r1".to_owned()]), "{ui:?}");
    assert_eq!(
        s.get_task(&t.id).expect("task").status,
        TaskStatus::Completed
    );
    // A result for a task that does not exist writes nothing at all.
    assert!(result("no-such-task", None, &results(1), "x", None).is_err());
    assert!(s.load_ui("no-such-task").expect("ui").is_empty());
}

/// A claim keeps a task from running twice: in this process, and in
/// another (a second store handle has its own owner lock); releasing it
/// frees the task, and only a live owner counts.
fn claims_are_exclusive_and_released(b: Backend) {
    let (dir, s) = store_on(b);
    let t = new_task(&s);
    assert!(!s.is_live(&t.id));
    let claim = s.claim(&t.id).expect("claimed");
    assert!(s.is_live(&t.id));
    let again = s.claim(&t.id).expect_err("twice in one process");
    assert!(again.to_string().contains("this process"), "{again}");
    let other = dir.reopen();
    let err = other.claim(&t.id).expect_err("held by a live owner");
    assert!(err.to_string().contains("another process"), "{err}");
    assert!(other.is_live(&t.id));
    drop(claim);
    assert!(!s.is_live(&t.id));
    let taken = other.claim(&t.id).expect("free again");
    assert!(s.is_live(&t.id));
    drop(taken);
}

/// One shared commit that holds several steps of one task and steps of
/// others (PostgreSQL sends each table's rows, and the tasks' totals, as
/// one statement): the totals add up, the last status and mode stand,
/// every row lands in its task's logs in order, numbered without gaps.
fn one_commits_steps_add_up_and_land_in_order(b: Backend) {
    let (_d, s) = store_on(b);
    let (t, u) = (new_task(&s), new_task(&s));
    let usage = |n: u64| Usage {
        input_tokens: n,
        output_tokens: 2 * n,
        cache_read_tokens: 3 * n,
        cache_write_tokens: 4 * n,
    };
    let (small, big, other) = (usage(1), usage(10), usage(5));
    let (m1, m2, m3) = (
        Message::user_text("one"),
        Message::user_text("two"),
        Message::user_text("three"),
    );
    let event = |n: u32| format!("{{\"event\":\"warning\",\"message\":\"{n}\"}}");
    let steps = [
        (
            t.id.as_str(),
            Step::new()
                .append(&m1)
                .usage(&small, 0.25)
                .status(TaskStatus::WaitingForApproval)
                .mode("architect")
                .ui(UiRow::say(UiSubtype::Text), "t1")
                .event(event(1)),
        ),
        (
            u.id.as_str(),
            Step::new()
                .append(&m3)
                .usage(&other, 2.0)
                .status(TaskStatus::Failed)
                .ui(UiRow::say(UiSubtype::Text), "u1")
                .event(event(3)),
        ),
        (
            t.id.as_str(),
            Step::new()
                .append(&m2)
                .usage(&big, 1.0)
                .status(TaskStatus::Completed)
                .ui(UiRow::say(UiSubtype::Text), "t2")
                .ui(UiRow::say(UiSubtype::Text), "t3")
                .event(event(2))
                .event(event(4)),
        ),
    ];
    let prepared: Vec<(&str, step::PreparedStep)> = steps
        .into_iter()
        .map(|(task, st)| (task, st.prepare(task).expect("prepared")))
        .collect();
    let committed = commit_together(&s, &prepared);
    assert_eq!(committed[0].message, Some(1));
    assert_eq!(committed[2].message, Some(2));
    assert_eq!(committed[2].ui, vec![2, 3]);
    assert_eq!(committed[2].events, vec![2, 3]);
    assert_eq!(committed[1].events, vec![1]);
    let got = s.get_task(&t.id).expect("task");
    assert_eq!(got.usage, usage(11));
    assert!((got.cost - 1.25).abs() < 1e-9, "{}", got.cost);
    assert_eq!(got.status, TaskStatus::Completed);
    assert_eq!(got.mode, "architect");
    let other_task = s.get_task(&u.id).expect("task");
    assert_eq!(other_task.usage, usage(5));
    assert_eq!(other_task.status, TaskStatus::Failed);
    assert_eq!(other_task.mode, "code");
    assert_eq!(api_of(&s, &t.id), vec![(1, m1.clone()), (2, m2.clone())]);
    assert_eq!(
        ui_of(&s, &t.id),
        vec![(1, "t1".into()), (2, "t2".into()), (3, "t3".into())]
    );
    assert_eq!(
        events_of(&s, &t.id),
        vec![(1, event(1)), (2, event(2)), (3, event(4))]
    );
    assert_eq!(s.events_after(&u.id, 0, 10).expect("events").len(), 1);
}

/// A task created claimed is claimed from its first commit: this process
/// cannot claim it again, another cannot take it, a shared store's work
/// queue does not offer it, and its writes are fenced by it; dropping the
/// claim frees it as a claim taken later would be.
fn a_task_created_claimed_is_held_from_its_first_commit(b: Backend) {
    let (dir, s) = store_on(b);
    let mut owned = spec();
    owned.owner = Some("tenant".into());
    let crate::ClaimedTask { task: t, claim, .. } = s
        .create_claimed_task(&owned, Step::new())
        .expect("created claimed");
    assert_eq!(
        s.get_task(&t.id).expect("stored").status,
        TaskStatus::Running
    );
    assert!(s.is_live(&t.id));
    let again = s.claim(&t.id).expect_err("twice in one process");
    assert!(again.to_string().contains("this process"), "{again}");
    let other = dir.reopen();
    assert!(other.is_live(&t.id));
    let err = other.claim(&t.id).expect_err("held by a live owner");
    assert!(err.to_string().contains("another process"), "{err}");
    if other.is_shared() {
        assert!(
            other
                .claim_next(&["/ws".to_owned()], 4)
                .expect("queue")
                .is_empty(),
            "a claimed task is not offered"
        );
    }
    s.append_api(&t.id, &Message::user_text("mine"))
        .expect("the creator writes");
    drop(claim);
    assert!(!s.is_live(&t.id));
    let taken = other.claim(&t.id).expect("free again");
    assert!(s.is_live(&t.id));
    drop(taken);
}

/// Steps of many tasks committed at once share commits, and every one
/// lands whole, numbered without gaps; a step of a task that does not
/// exist fails alone, queued among the others (the batch it shared is
/// rolled back and each of its steps committed on its own).
fn shared_commits_keep_every_step_whole_and_fail_alone(b: Backend) {
    let (_d, s) = store_on(b);
    let tasks: Vec<String> = (0..40).map(|_| new_task(&s).id).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut joins = Vec::new();
        for (n, id) in tasks.iter().cloned().enumerate() {
            let store = s.clone();
            joins.push(tokio::spawn(async move {
                let s = store;
                let mut seqs = Vec::new();
                for i in 0..25 {
                    let m = Message::user_text(format!("{n}/{i}"));
                    let step = Step::new()
                        .append(&m)
                        .ui(UiRow::say(UiSubtype::Text), format!("row {i}"))
                        .event(format!("{{\"event\":\"warning\",\"message\":\"{i}\"}}"));
                    let prepared = step.prepare(&id).expect("prepared");
                    seqs.push(s.commit(&id, prepared).await.expect("committed"));
                }
                seqs
            }));
            let s = s.clone();
            joins.push(tokio::spawn(async move {
                let m = Message::user_text("lost");
                let prepared = Step::new()
                    .append(&m)
                    .ui(UiRow::say(UiSubtype::Text), "lost")
                    .prepare("no-such-task")
                    .expect("prepared");
                let err = s
                    .commit("no-such-task", prepared)
                    .await
                    .expect_err("no task");
                assert!(matches!(err, StoreError::NotFound(_)), "{err}");
                Vec::new()
            }));
        }
        for j in joins {
            let seqs = j.await.expect("joined");
            for (i, c) in seqs.iter().enumerate() {
                let n = i64::try_from(i).expect("small") + 1;
                assert_eq!(c.message, Some(n), "message seq");
                assert_eq!(c.events, vec![n], "event seq");
            }
        }
    });
    for id in &tasks {
        let api = s.load_api(id, true).expect("api");
        assert_eq!(api.len(), 25);
        let seqs: Vec<i64> = api.iter().map(|m| m.seq).collect();
        assert_eq!(seqs, (1..=25).collect::<Vec<_>>());
        assert_eq!(s.load_ui(id).expect("ui").len(), 25);
        assert_eq!(s.events_after(id, 0, usize::MAX).expect("events").len(), 25);
    }
    assert!(s.load_ui("no-such-task").expect("ui").is_empty());
    assert!(
        s.events_after("no-such-task", 0, 10)
            .expect("events")
            .is_empty()
    );
}

/// A task is created with its opening messages in one transaction, and an
/// ask recorded by a step lands with that step or not at all (an ask of
/// another task is refused, and the step's other rows with it).
fn a_task_opens_with_its_first_messages_and_asks_land_with_their_step(b: Backend) {
    let (_dir, s) = store_on(b);
    let first = Message::user_text("<task>\ndo it\n</task>");
    let t = s
        .create_task_with(
            &spec(),
            Step::new()
                .ui(UiRow::say(UiSubtype::Text), "do it")
                .append(&first),
        )
        .expect("creates");
    assert_eq!(s.load_api(&t.id, true).expect("api").len(), 1);
    assert_eq!(s.load_ui(&t.id).expect("ui").len(), 1);

    let ask = StoredAsk::open(&t.id, Some("c1"), "tool", r#"{"tool":"x"}"#);
    s.commit_step(
        &t.id,
        Step::new()
            .status(TaskStatus::WaitingForApproval)
            .ui(UiRow::ask(UiSubtype::Tool), "may I?")
            .ask(&ask),
    )
    .expect("commits");
    let open = s.open_asks(&t.id).expect("open");
    assert_eq!(open, vec![ask.clone()]);
    assert_eq!(
        s.get_task(&t.id).expect("task").status,
        TaskStatus::WaitingForApproval
    );

    let other = new_task(&s);
    let foreign = StoredAsk::open(&other.id, None, "followup", "{}");
    let refused = s.commit_step(
        &t.id,
        Step::new()
            .ui(UiRow::ask(UiSubtype::Followup), "?")
            .ask(&foreign),
    );
    assert!(refused.is_err());
    assert_eq!(
        s.load_ui(&t.id).expect("ui").len(),
        2,
        "nothing of it landed"
    );
    assert!(s.open_asks(&other.id).expect("open").is_empty());
}

/// An answer recorded in a step lands once, for an open ask of its own
/// task only; a refused answer fails alone in a shared commit.
async fn answers_land_in_shared_commits_once_on(b: Backend) {
    let (_dir, s) = store_on(b);
    let t = new_task(&s);
    let other = new_task(&s);
    let ask = StoredAsk::open(&t.id, Some("c1"), "tool", "{}");
    s.commit_step(&t.id, Step::new().ask(&ask)).expect("asks");
    let foreign = Step::new()
        .answer(&ask.ask_id, "\"yes\"")
        .prepare(&other.id)
        .expect("prepares");
    let mine = Step::new()
        .answer(&ask.ask_id, "\"yes\"")
        .ui(UiRow::say(UiSubtype::Text), "answered")
        .prepare(&t.id)
        .expect("prepares");
    let (foreign, mine) = tokio::join!(s.commit(&other.id, foreign), s.commit(&t.id, mine));
    assert!(
        matches!(foreign, Err(StoreError::AskNotOpen { .. })),
        "{foreign:?}"
    );
    mine.expect("the open ask is answered");
    let stored = s
        .get_ask(&t.id, &ask.ask_id)
        .expect("reads")
        .expect("there");
    assert_eq!(stored.answer.as_deref(), Some("\"yes\""));
    assert!(s.open_asks(&t.id).expect("open").is_empty());
    let again = Step::new()
        .answer(&ask.ask_id, "\"no\"")
        .ui(UiRow::say(UiSubtype::Text), "answered twice")
        .prepare(&t.id)
        .expect("prepares");
    assert!(matches!(
        s.commit(&t.id, again).await,
        Err(StoreError::AskNotOpen { .. })
    ));
    let ui: Vec<String> = s
        .load_ui(&t.id)
        .expect("ui")
        .into_iter()
        .map(|r| r.text)
        .collect();
    assert_eq!(
        ui,
        ["answered"],
        "nothing of a refused answer's step landed"
    );
    assert_eq!(
        s.get_ask(&t.id, &ask.ask_id)
            .expect("reads")
            .expect("there")
            .answer
            .as_deref(),
        Some("\"yes\"")
    );
    // Two answers to one ask at once (two front-ends): one lands, the
    // other is refused, whichever commit takes them.
    let ask = StoredAsk::open(&t.id, Some("c2"), "tool", "{}");
    s.commit_step(&t.id, Step::new().ask(&ask)).expect("asks");
    let answering = |text: &'static str| {
        Step::new()
            .answer(&ask.ask_id, text)
            .ui(UiRow::say(UiSubtype::Text), text)
            .prepare(&t.id)
            .expect("prepares")
    };
    let (a, b) = tokio::join!(
        s.commit(&t.id, answering("\"a\"")),
        s.commit(&t.id, answering("\"b\""))
    );
    let won = match (&a, &b) {
        (Ok(_), Err(StoreError::AskNotOpen { .. })) => "\"a\"",
        (Err(StoreError::AskNotOpen { .. }), Ok(_)) => "\"b\"",
        _ => panic!("one answer lands and one is refused: {a:?} {b:?}"),
    };
    let stored = s
        .get_ask(&t.id, &ask.ask_id)
        .expect("reads")
        .expect("there");
    assert_eq!(stored.answer.as_deref(), Some(won));
    let ui: Vec<String> = s
        .load_ui(&t.id)
        .expect("ui")
        .into_iter()
        .map(|r| r.text)
        .collect();
    assert_eq!(ui, ["answered", won], "only the answer that landed wrote");
}

#[tokio::test]
async fn answers_land_in_shared_commits_once_on_sqlite() {
    answers_land_in_shared_commits_once_on(Backend::Sqlite).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn answers_land_in_shared_commits_once_on_postgres() {
    answers_land_in_shared_commits_once_on(Backend::Postgres).await;
}

/// A task created while no other creation is in flight takes a
/// transaction of its own (one round trip on PostgreSQL); those created
/// meanwhile ride a shared commit with the steps of tasks already
/// running: a creation, a running task's step and two more creations
/// made at once are two transactions (on PostgreSQL three round trips:
/// the shared commit's two, its creations adding none). Each new task is
/// stored with its first step, numbered from 1 and dated with the task,
/// and claimed by this process. Only the running task's events are
/// announced. A step of a task that does not exist, queued with a
/// creation, fails alone, and the creation lands.
async fn creations_ride_a_shared_commit_on(b: Backend) {
    let (dir, s) = store_on(b);
    let running = new_task(&s);
    let first = Message::user_text("<task>\ndo it\n</task>");
    let opening = || {
        Step::new()
            .ui(UiRow::say(UiSubtype::Text), "do it")
            .append(&first)
            .event(r#"{"type":"task_started","resumed":false}"#.to_owned())
    };
    let said = |id: &str, text: &str| {
        Step::new()
            .ui(UiRow::say(UiSubtype::Text), text)
            .event(r#"{"event":"warning","message":"said"}"#.to_owned())
            .prepare(id)
            .expect("prepared")
    };
    let cost = |before: StoreStats, after: StoreStats| trips_between(&before, &after);
    let new = spec();
    let mut notices = s.notices();
    #[cfg(feature = "postgres")]
    if let Some(n) = notices.as_mut() {
        listening(n).await;
    }
    // Twice: the first prepares the statements and takes keys ahead.
    for round in 0..2 {
        let before = s.stats();
        let (a, step, c, d) = tokio::join!(
            s.create_claimed_task_shared(&new, opening()),
            s.commit(&running.id, said(&running.id, "meanwhile")),
            s.create_claimed_task_shared(&new, opening()),
            s.create_claimed_task_shared(&new, opening()),
        );
        let after = s.stats();
        step.expect("the running task's step");
        assert_eq!(after.steps - before.steps, 4, "round {round}");
        assert_eq!(
            after.transactions - before.transactions,
            2,
            "the first alone, the rest in one shared commit, round {round}"
        );
        if round == 1 && !matches!(b, Backend::Sqlite) {
            assert_eq!(
                cost(before, after),
                3,
                "one trip alone, the shared commit's two"
            );
        }
        for created in [a, c, d] {
            let crate::ClaimedTask {
                task,
                claim,
                first: took,
            } = created.expect("created");
            assert_eq!(task, s.get_task(&task.id).expect("stored"));
            assert_eq!(took.message, Some(1));
            assert_eq!(
                (took.ui.as_slice(), took.events.as_slice()),
                (&[1][..], &[1][..])
            );
            let api = s.load_api(&task.id, false).expect("api");
            assert_eq!(api.len(), 1);
            assert_eq!((api[0].seq, &api[0].message), (1, &first));
            assert_eq!(api[0].created_at, task.created_at, "dated with its task");
            assert_eq!(s.last_event_seq(&task.id).expect("events"), 1);
            let other = dir.reopen();
            assert!(other.is_live(&task.id), "claimed as it was created");
            assert!(other.claim(&task.id).is_err());
            drop(claim);
        }
        if let Some(n) = notices.as_mut() {
            // The running task's events are announced; a new task's
            // are not (its id was unknown until the commit).
            loop {
                match tokio::time::timeout(std::time::Duration::from_secs(60), n.recv()).await {
                    Ok(Ok(Notice::Events { task: t, .. })) if t == running.id => break,
                    Ok(Ok(Notice::Events { task: t, .. })) => {
                        panic!("a task created in a shared commit was announced: {t}")
                    }
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => panic!("notices: {e}"),
                    Err(_) => panic!("the running task's events were not announced"),
                }
            }
        }
    }
    let missing = "00000000-0000-0000-0000-000000000000";
    let (alone, created, lost) = tokio::join!(
        s.create_claimed_task_shared(&new, opening()),
        s.create_claimed_task_shared(&new, opening()),
        s.commit(missing, said(missing, "nobody")),
    );
    assert!(matches!(lost, Err(StoreError::NotFound(_))), "{lost:?}");
    for created in [alone, created] {
        let created = created.expect("the creations land");
        assert_eq!(s.load_api(&created.task.id, false).expect("api").len(), 1);
    }
    assert_eq!(orphan_rows(&s), 0);
}

#[tokio::test]
async fn creations_ride_a_shared_commit_on_sqlite() {
    creations_ride_a_shared_commit_on(Backend::Sqlite).await;
}

/// A SQLite store's shared commits keep each task's key and log positions
/// from one to the next, and drop them as soon as anything else writes to
/// the file: a task's conversation taken back through the same store, or
/// through another connection, numbers its next rows on from where the
/// logs now end, with no gap and no collision.
#[tokio::test]
async fn kept_positions_give_way_to_any_other_write_on_sqlite() {
    let (dir, s) = store_on(Backend::Sqlite);
    let t = new_task(&s);
    let said = |n: usize| {
        let text = format!("turn {n}");
        Step::new()
            .append(&Message::user_text(&text))
            .ui(UiRow::say(UiSubtype::Text), &text)
            .event(r#"{"event":"warning","message":"said"}"#.to_owned())
            .prepare(&t.id)
            .expect("prepared")
    };
    let seqs = |c: &Committed| (c.message, c.ui.clone());
    for n in 1..=3 {
        let c = s.commit(&t.id, said(n)).await.expect("committed");
        let at = i64::try_from(n).expect("small");
        assert_eq!(seqs(&c), (Some(at), vec![at]), "step {n}");
    }
    // Taken back to the first message and UI row by the same store.
    s.truncate_conversation(&t.id, 1, 1).expect("truncated");
    let c = s.commit(&t.id, said(4)).await.expect("committed");
    assert_eq!(seqs(&c), (Some(2), vec![2]), "after the store's own rewind");
    let c = s.commit(&t.id, said(5)).await.expect("committed");
    assert_eq!(seqs(&c), (Some(3), vec![3]));
    // Taken back by another connection to the same file.
    let other = dir.reopen();
    other.truncate_conversation(&t.id, 1, 1).expect("truncated");
    let c = s.commit(&t.id, said(6)).await.expect("committed");
    assert_eq!(
        seqs(&c),
        (Some(2), vec![2]),
        "after another connection's rewind"
    );
    // Appended to by another connection: the next row follows it.
    let c = other.commit(&t.id, said(7)).await.expect("committed");
    assert_eq!(seqs(&c), (Some(3), vec![3]));
    let c = s.commit(&t.id, said(8)).await.expect("committed");
    assert_eq!(
        seqs(&c),
        (Some(4), vec![4]),
        "after another connection's append"
    );
    let api = s.load_api(&t.id, false).expect("api");
    assert_eq!(
        api.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert_eq!(
        api[3].message,
        Message::user_text("turn 8"),
        "the last row is the last step's"
    );
    assert_eq!(s.last_event_seq(&t.id).expect("events"), 8);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_ride_a_shared_commit_on_postgres() {
    roost_testpg::skip_without_postgres!();
    creations_ride_a_shared_commit_on(Backend::Postgres).await;
}

/// A claim released as its task's run ends goes with the store's shared
/// commit: once `release` returns, the task is free here and in another
/// process; on PostgreSQL the releases of many tasks cost no round trip of
/// their own.
fn claims_are_released_with_shared_commits_on(b: Backend) {
    let (dir, s) = store_on(b);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let claimed: Vec<(TaskRecord, crate::TaskClaim)> = (0..20)
        .map(|_| {
            let c = s
                .create_claimed_task(&spec(), Step::new())
                .expect("created");
            (c.task, c.claim)
        })
        .collect();
    let other = dir.reopen();
    for (t, _) in &claimed {
        assert!(other.is_live(&t.id), "claimed");
        assert!(other.claim(&t.id).is_err(), "held by the first store");
    }
    let ids: Vec<String> = claimed.iter().map(|(t, _)| t.id.clone()).collect();
    let before = s.stats();
    rt.block_on(futures::future::join_all(
        claimed.into_iter().map(|(_, claim)| claim.release()),
    ));
    let after = s.stats();
    assert!(after.transactions > before.transactions, "shared commits");
    if !matches!(b, Backend::Sqlite) {
        assert_eq!(
            trips_between(&before, &after),
            2 * (after.transactions - before.transactions),
            "releases cost no round trip of their own: {before:?} {after:?}"
        );
    }
    for id in &ids {
        assert!(!other.is_live(id), "released");
        let again = other.claim(id).expect("another process claims it");
        drop(again);
        let here = s.claim(id).expect("claimed here again");
        drop(here);
    }
}

#[test]
fn claims_are_released_with_shared_commits_on_sqlite() {
    claims_are_released_with_shared_commits_on(Backend::Sqlite);
}

#[cfg(feature = "postgres")]
#[test]
fn claims_are_released_with_shared_commits_on_postgres() {
    roost_testpg::skip_without_postgres!();
    claims_are_released_with_shared_commits_on(Backend::Postgres);
}

/// Steps of one transaction hide (and on SQLite replace) messages
/// appended earlier in it: on PostgreSQL, where a transaction's log rows
/// are sent at its end, they are sent before a statement that changes
/// them. Seventy steps' rows land whole and in order. (PostgreSQL replaces
/// a batch's messages ahead, in its first round trip: a batch replacing a
/// message it appends fails there, and its steps are written one at a
/// time.)
fn a_transaction_sees_the_rows_it_appended_on(b: Backend) {
    let replaces = matches!(b, Backend::Sqlite);
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    let first = Message::user_text("first");
    let second = Message::user_text("second, as first written");
    let replaced = Message::user_text("second, as it stands");
    let third = Message::user_text("third");
    let mut steps = vec![
        (t.id.as_str(), Step::new().append(&first)),
        (t.id.as_str(), Step::new().append(&second)),
        (t.id.as_str(), Step::new().put(Some(2), &replaced)),
        (t.id.as_str(), Step::new().append(&third)),
        (t.id.as_str(), Step::new().condense(1, 2, "the first two")),
    ];
    if !replaces {
        steps.remove(2);
    }
    for i in 0..70 {
        steps.push((
            t.id.as_str(),
            Step::new()
                .ui(UiRow::say(UiSubtype::Text), format!("row {i}"))
                .event(format!("{{\"event\":\"warning\",\"message\":\"{i}\"}}")),
        ));
    }
    let prepared: Vec<(&str, step::PreparedStep)> = steps
        .into_iter()
        .map(|(task, st)| (task, st.prepare(task).expect("prepared")))
        .collect();
    let committed = commit_together(&s, &prepared);
    if replaces {
        assert_eq!(committed[2].message, Some(2), "replaced in place");
    }
    assert_eq!(committed[if replaces { 3 } else { 2 }].message, Some(3));
    let api = s.load_api(&t.id, true).expect("api");
    let seen: Vec<(i64, Message, bool)> = api
        .into_iter()
        .map(|m| (m.seq, m.message, m.hidden))
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, first, false),
            (2, if replaces { replaced } else { second }, true),
            (3, third, false),
        ]
    );
    let ui = s.load_ui(&t.id).expect("ui");
    assert_eq!(ui.len(), 70);
    let events = s.events_after(&t.id, 0, usize::MAX).expect("events");
    let got: Vec<(i64, String)> = events.into_iter().map(|e| (e.seq, e.event)).collect();
    let want: Vec<(i64, String)> = (0..70)
        .map(|i| {
            (
                i + 1,
                format!("{{\"event\":\"warning\",\"message\":\"{i}\"}}"),
            )
        })
        .collect();
    assert_eq!(got, want);
    for (n, row) in ui.iter().enumerate() {
        assert_eq!(row.text, format!("row {n}"));
    }
}

#[test]
fn a_transaction_sees_the_rows_it_appended_on_sqlite() {
    a_transaction_sees_the_rows_it_appended_on(Backend::Sqlite);
}

#[cfg(feature = "postgres")]
#[test]
fn a_transaction_sees_the_rows_it_appended_on_postgres() {
    roost_testpg::skip_without_postgres!();
    a_transaction_sees_the_rows_it_appended_on(Backend::Postgres);
}

/// A new task's saved approvals: a workspace read with none saved is not
/// read again for each task (on PostgreSQL, no round trip), an approval
/// saved through the store holds for the next task at once, and a
/// workspace with approvals saved is read every time, so one revoked
/// elsewhere never holds.
fn approvals_for_new_tasks_on(b: Backend) {
    let (dir, s) = store_on(b);
    // However slow the machine, "none saved" holds through this test.
    s.none_saved.hold_for(std::time::Duration::from_secs(3600));
    let elsewhere = dir.reopen();
    let ws = "/ws/approvals";
    let tool = Grant::Tool("read_file".into());
    let grants = |s: &Store| -> Vec<Grant> {
        s.approvals_for_new_task(ws)
            .expect("reads")
            .into_iter()
            .map(|a| a.grant)
            .collect()
    };
    assert!(grants(&s).is_empty());
    let before = s.stats();
    assert!(grants(&s).is_empty());
    assert_eq!(s.stats().round_trips, before.round_trips, "not read again");
    s.save_approval(ws, &tool).expect("saves");
    assert_eq!(
        grants(&s),
        std::slice::from_ref(&tool),
        "saved here: holds at once"
    );
    assert!(elsewhere.revoke_approval(ws, &tool).expect("revokes"));
    assert!(
        grants(&s).is_empty(),
        "revoked elsewhere: never holds again"
    );
    // Another workspace's grants are its own.
    s.save_approval("/ws/other", &tool).expect("saves");
    assert!(grants(&s).is_empty());
}

#[test]
fn approvals_for_new_tasks_on_sqlite() {
    approvals_for_new_tasks_on(Backend::Sqlite);
}

#[cfg(feature = "postgres")]
#[test]
fn approvals_for_new_tasks_on_postgres() {
    roost_testpg::skip_without_postgres!();
    approvals_for_new_tasks_on(Backend::Postgres);
}

/// Every other kind of record round-trips: saved approvals, tokens,
/// plugins, checkpoints, events, asks, trees, listings and deletion.
fn every_record_kind_round_trips(b: Backend) {
    let (_place, s) = store_on(b);
    // Saved approvals.
    let g = roost_protocol::Grant::Tool("read_file".into());
    s.save_approval("/ws", &g).expect("save");
    s.save_approval("/ws", &g).expect("save twice");
    assert_eq!(s.saved_approvals(Some("/ws")).expect("list").len(), 1);
    assert_eq!(s.saved_approvals(None).expect("all").len(), 1);
    assert!(s.revoke_approval("/ws", &g).expect("revoke"));
    assert!(s.saved_approvals(None).expect("none").is_empty());
    // Tokens (read by their hash in `a_front_ends_reads_are_awaited`).
    s.put_token("tok1", "h1", "acme", "/ws", Some(i64::MAX))
        .expect("token");
    assert!(s.revoke_token("tok1").expect("revoke"));
    assert!(!s.revoke_token("tok1").expect("revoke twice"));
    assert!(
        s.list_token_records().expect("list")[0]
            .revoked_at
            .is_some()
    );
    // Plugins.
    let mut p = PluginRecord {
        name: "p".into(),
        version: "1".into(),
        manifest: "{}".into(),
        sha256: "ab".into(),
        granted: "[]".into(),
        tools: "[]".into(),
        enabled: true,
        size: 10,
        installed_at: 0,
        signer: String::new(),
        source: "oci://127.0.0.1:5000/p:1".into(),
        digest: format!("sha256:{}", "0".repeat(64)),
        blake3: "cd".into(),
    };
    s.put_plugin(&p).expect("put");
    p.version = "2".into();
    s.put_plugin(&p).expect("replace");
    let got = s.get_plugin("p").expect("get").expect("found");
    assert_eq!(got.version, "2");
    assert_eq!(
        (
            got.source.as_str(),
            got.digest.as_str(),
            got.blake3.as_str()
        ),
        (p.source.as_str(), p.digest.as_str(), "cd")
    );
    assert!(s.set_plugin_enabled("p", false).expect("disable"));
    assert!(!s.list_plugins().expect("list")[0].enabled);
    assert!(s.delete_plugin("p").expect("delete"));
    assert!(s.get_plugin("p").expect("get").is_none());
    // Checkpoints and truncation.
    let t = new_task(&s);
    s.append_api(&t.id, &Message::user_text("go"))
        .expect("append");
    s.append_api(&t.id, &tool_use("c1")).expect("append");
    let cp = s
        .add_checkpoint(&t.id, 1, "c0ffee", "tree", 1, 0)
        .expect("cp");
    assert_eq!(cp.view.id, 1);
    assert_eq!(
        s.add_checkpoint(&t.id, 2, "beef", "tree2", 2, 0)
            .expect("cp")
            .view
            .id,
        2
    );
    assert_eq!(s.checkpoints(&t.id).expect("list").len(), 2);
    assert_eq!(
        s.checkpoint(&t.id, 1).expect("one").expect("found").commit,
        "c0ffee"
    );
    assert_eq!(
        s.last_checkpoint(&t.id)
            .expect("last")
            .expect("found")
            .view
            .id,
        2
    );
    assert_eq!(s.turn_start(&t.id).expect("turn").2, 1);
    s.truncate_conversation(&t.id, 1, 0).expect("truncate");
    assert_eq!(s.load_api(&t.id, true).expect("load").len(), 1);
    // Events.
    assert_eq!(s.append_event(&t.id, "{\"e\":1}").expect("event"), 1);
    assert_eq!(s.append_event(&t.id, "{\"e\":2}").expect("event"), 2);
    assert_eq!(s.last_event_seq(&t.id).expect("last"), 2);
    assert_eq!(s.events_after(&t.id, 1, 10).expect("after")[0].seq, 2);
    assert_eq!(s.last_events(&t.id, 1).expect("last")[0].seq, 2);
    // Asks.
    let ask = StoredAsk::open(&t.id, None, "followup", "{}");
    s.commit_step(&t.id, Step::new().ask(&ask)).expect("asks");
    assert_eq!(
        s.find_open_ask(&t.id, "followup", None)
            .expect("find")
            .expect("open")
            .ask_id,
        ask.ask_id
    );
    let with_call = StoredAsk::open(&t.id, Some("c9"), "tool", "{\"x\":1}");
    s.commit_step(&t.id, Step::new().ask(&with_call))
        .expect("asks");
    assert!(
        s.find_open_ask(&t.id, "tool", None)
            .expect("find")
            .is_none()
    );
    s.commit_step(&t.id, Step::new().answer(&with_call.ask_id, "\"yes\""))
        .expect("answer");
    assert!(
        s.answered_ask(&t.id, "tool", "c9", "{\"x\":1}")
            .expect("answered")
            .is_some()
    );
    assert_eq!(s.open_asks(&t.id).expect("open").len(), 1);
    assert_eq!(s.close_asks(&t.id, "done").expect("close"), 1);
    // Trees, listings, search, deletion.
    let mut child = spec();
    child.parent_id = Some(t.id.clone());
    child.root_id = Some(t.id.clone());
    child.prompt = "Find the NEEDLE".into();
    child.owner = Some("acme".into());
    let c = s.create_task(&child).expect("child");
    assert_eq!(s.children(&t.id).expect("children")[0].id, c.id);
    assert_eq!(s.subtasks_in_tree(&t.id).expect("count"), 1);
    assert_eq!(s.tree(&t.id).expect("tree")[0].id, t.id);
    assert_eq!(s.search_tasks("needle", 10).expect("search")[0].id, c.id);
    assert!(s.search_tasks("50%_off", 10).expect("search").is_empty());
    // (Listings by filter: `a_front_ends_reads_are_awaited`.)
    assert_eq!(s.last_task(false).expect("last").id, c.id);
    s.set_active_intent(&c.id, Some("i1")).expect("intent");
    s.set_mode(&c.id, "architect").expect("mode");
    let got = s.get_task(&c.id).expect("get");
    assert_eq!(
        (got.active_intent.as_deref(), got.mode.as_str()),
        (Some("i1"), "architect")
    );
    s.delete_task(&c.id).expect("delete");
    assert!(matches!(s.get_task(&c.id), Err(StoreError::NotFound(_))));
    assert_eq!(s.list_tasks(10).expect("list").len(), 1);
}

/// A shared commit of many tasks' steps (PostgreSQL sends each log's rows
/// as one statement): 100 tasks, each a message, two UI rows and three
/// events, every row in its task's logs, in order, numbered from 1.
fn a_large_commits_rows_all_land_in_their_tasks_logs(b: Backend) {
    let (_d, s) = store_on(b);
    let tasks: Vec<TaskRecord> = (0..100).map(|_| new_task(&s)).collect();
    let messages: Vec<Message> = (0..100)
        .map(|n| Message::user_text(format!("message {n}")))
        .collect();
    let texts: Vec<[String; 2]> = (0..100)
        .map(|n| [format!("{n} first"), format!("{n} second")])
        .collect();
    let event = |n: usize, i: usize| format!("{{\"event\":\"warning\",\"message\":\"{n}.{i}\"}}");
    let prepared: Vec<(&str, step::PreparedStep)> = tasks
        .iter()
        .zip(&messages)
        .zip(&texts)
        .enumerate()
        .map(|(n, ((t, m), [a, b]))| {
            let step = Step::new()
                .append(m)
                .ui(UiRow::say(UiSubtype::Text), a)
                .ui(UiRow::say(UiSubtype::Text), b)
                .event(event(n, 1))
                .event(event(n, 2))
                .event(event(n, 3));
            (t.id.as_str(), step.prepare(&t.id).expect("prepared"))
        })
        .collect();
    let committed = commit_together(&s, &prepared);
    assert_eq!(committed.len(), 100);
    for (n, (t, c)) in tasks.iter().zip(&committed).enumerate() {
        assert_eq!(
            (c.message, c.ui.as_slice(), c.events.as_slice()),
            (Some(1), &[1, 2][..], &[1, 2, 3][..]),
            "task {n}"
        );
        assert_eq!(
            api_of(&s, &t.id),
            vec![(1, messages[n].clone())],
            "task {n}"
        );
        assert_eq!(
            ui_of(&s, &t.id),
            vec![(1, texts[n][0].clone()), (2, texts[n][1].clone())],
            "task {n}"
        );
        assert_eq!(
            events_of(&s, &t.id),
            (1..=3)
                .map(|i| (i64::try_from(i).expect("small"), event(n, i)))
                .collect::<Vec<_>>(),
            "task {n}"
        );
    }
}

on_both!(
    every_record_kind_round_trips,
    tasks_round_trip_and_persist_across_reopen,
    api_history_order_update_and_hidden,
    dangling_tool_uses_are_answered_as_interrupted,
    ui_messages_todos_and_export,
    a_corrupt_row_is_reported_not_a_panic,
    concurrent_appends_keep_order_per_task,
    a_reply_is_recorded_as_one_step,
    a_result_is_recorded_as_one_step,
    claims_are_exclusive_and_released,
    one_commits_steps_add_up_and_land_in_order,
    a_task_created_claimed_is_held_from_its_first_commit,
    shared_commits_keep_every_step_whole_and_fail_alone,
    a_task_opens_with_its_first_messages_and_asks_land_with_their_step,
    a_step_whose_later_statement_fails_writes_nothing,
    what_a_run_starts_from_reads_as_it_was_written,
    a_results_output_is_written_once,
    a_deleted_tasks_logs_go_with_it_and_nothing_lands_after,
    a_group_lands_with_its_coordinators_step,
    a_large_commits_rows_all_land_in_their_tasks_logs,
    ui_rows_ride_their_steps_events_and_read_back_as_one_log,
);

/// A step's UI rows ride in its events' rows, as many as it has events,
/// the rest in `ui_messages`; read back, they are one log in the order
/// they were written, numbered on across a reopened store, found by a
/// search, the last request's found by a turn's start, and taken back by
/// a rewind that leaves the events whole.
fn ui_rows_ride_their_steps_events_and_read_back_as_one_log(b: Backend) {
    let (place, s) = store_on(b);
    let t = new_task(&s);
    let event = |n: u32| format!(r#"{{"event":"warning","message":"e{n}"}}"#);
    let say = UiRow::say(UiSubtype::Text);
    let steps = [
        Step::new().ui(say, "alpha").ui(say, "beta").event(event(1)),
        Step::new().event(event(2)),
        Step::new().ui(say, "gamma"),
        Step::new()
            .ui(UiRow::say(UiSubtype::ApiReqStarted), "delta needle")
            .event(event(3))
            .event(event(4)),
    ];
    let mut seqs = Vec::new();
    for step in steps {
        seqs.extend(s.commit_step(&t.id, step).expect("committed").ui);
    }
    assert_eq!(seqs, vec![1, 2, 3, 4]);
    let rows = |s: &Store| {
        s.load_ui(&t.id)
            .expect("ui")
            .into_iter()
            .map(|r| (r.seq, r.subtype, r.text))
            .collect::<Vec<_>>()
    };
    let text = |n: i64, subtype: &str, text: &str| (n, subtype.to_owned(), text.to_owned());
    let written = vec![
        text(1, "text", "alpha"),
        text(2, "text", "beta"),
        text(3, "text", "gamma"),
        text(4, "api_req_started", "delta needle"),
    ];
    assert_eq!(rows(&s), written);
    // Where they live: "alpha" and "delta needle" in their events' rows.
    let count = |sql: &str| -> i64 {
        s.db.run(|c| c.one(sql, params![&t.id]))
            .expect("counted")
            .get(0)
            .expect("a count")
    };
    let key = "(SELECT k FROM tasks WHERE id = ?1)";
    assert_eq!(
        count(&format!(
            "SELECT COUNT(*) FROM ui_messages WHERE task = {key}"
        )),
        2
    );
    assert_eq!(
        count(&format!(
            "SELECT COUNT(*) FROM events WHERE task = {key} AND ui_seq IS NOT NULL"
        )),
        2
    );
    assert_eq!(events_of(&s, &t.id).len(), 4, "the events are whole");
    // A store opened again (nothing kept of the task) numbers on.
    let s = place.reopen();
    let c = s
        .commit_step(&t.id, Step::new().ui(say, "epsilon").event(event(5)))
        .expect("committed");
    assert_eq!(c.ui, vec![5]);
    assert_eq!(s.turn_start(&t.id).expect("turn").1, 3, "before delta");
    let found = s.search_tasks("NEEDLE", 10).expect("searched");
    assert_eq!(
        found.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
        [t.id.as_str()]
    );
    // Taken back to "beta": the later UI rows go, wherever they were; the
    // events stay, and the next row follows "beta".
    s.truncate_conversation(&t.id, 0, 2).expect("rewound");
    assert_eq!(rows(&s), written[..2].to_vec());
    assert_eq!(events_of(&s, &t.id).len(), 5);
    assert!(s.search_tasks("needle", 10).expect("searched").is_empty());
    let c = s
        .commit_step(&t.id, Step::new().ui(say, "zeta").event(event(6)))
        .expect("committed");
    assert_eq!(c.ui, vec![3]);
    assert_eq!(rows(&s).last(), Some(&text(3, "text", "zeta")));
}

/// The open asks below a task are its own and every subtask's below it
/// (not its parent's, not another tree's, not answered ones), oldest
/// first, awaited in one round trip however deep the tree; a task's own
/// open asks awaited are the engine's.
async fn a_trees_open_asks_are_one_lookup(b: Backend) {
    let (_d, s) = store_on(b);
    let root = new_task(&s);
    let other = new_task(&s);
    let under = |parent: &TaskRecord| {
        s.create_task(&NewTask {
            parent_id: Some(parent.id.clone()),
            root_id: Some(parent.root_id.clone()),
            ..spec()
        })
        .expect("child")
    };
    let child = under(&root);
    let grandchild = under(&child);
    let great = under(&grandchild);
    let theirs = under(&other);
    let mut asked = Vec::new();
    for (i, t) in [&grandchild, &root, &theirs, &child, &great]
        .into_iter()
        .enumerate()
    {
        let mut ask = StoredAsk::open(&t.id, None, "followup", "{}");
        ask.created_at = 100 + i64::try_from(i).expect("small");
        s.commit_step(&t.id, Step::new().ask(&ask)).expect("asked");
        asked.push(ask);
    }
    s.commit_step(&child.id, Step::new().answer(&asked[3].ask_id, "\"yes\""))
        .expect("answered");
    let ids =
        |open: Vec<StoredAsk>| -> Vec<String> { open.into_iter().map(|a| a.ask_id).collect() };
    let before = s.stats();
    let open = s.read_open_asks_below(&root.id).await.expect("open");
    if s.is_shared() {
        assert_eq!(trips_between(&before, &s.stats()), 1);
    }
    let want =
        |i: &[usize]| -> Vec<String> { i.iter().map(|&i| asked[i].ask_id.clone()).collect() };
    assert_eq!(ids(open), want(&[0, 1, 4]));
    assert_eq!(
        ids(s.read_open_asks_below(&child.id).await.expect("open")),
        want(&[0, 4]),
        "not its parent's"
    );
    assert_eq!(
        ids(s.read_open_asks_below(&other.id).await.expect("open")),
        want(&[2]),
        "the other tree's own"
    );
    assert!(
        s.read_open_asks_below("no-such-task")
            .await
            .expect("open")
            .is_empty()
    );
    assert_eq!(
        s.read_open_asks(&grandchild.id).await.expect("open"),
        s.open_asks(&grandchild.id).expect("open")
    );
    assert!(s.read_open_asks(&child.id).await.expect("open").is_empty());
}

/// A parallel group's record lands with the coordinator's step that
/// announces it, each new state replacing the last; a step of another
/// task cannot write it, and that step writes nothing.
fn a_group_lands_with_its_coordinators_step(b: Backend) {
    use roost_protocol::{GroupRecord, GroupStatus, GroupStrategy, GroupTask};
    let (_d, s) = store_on(b);
    let coordinator = new_task(&s);
    let other = new_task(&s);
    let mut group = GroupRecord {
        id: "grp_1".into(),
        coordinator: coordinator.id.clone(),
        call_id: "call_1".into(),
        strategy: GroupStrategy::All,
        status: GroupStatus::Running,
        max_concurrency: 2,
        timeout_s: None,
        tasks: vec![
            GroupTask {
                mode: "code".into(),
                message: "one".into(),
                scope: vec!["a/**".into()],
            },
            GroupTask {
                mode: "ask".into(),
                message: "two".into(),
                scope: Vec::new(),
            },
        ],
        children: vec![None, None],
        results: Vec::new(),
        created_at: 7,
        finished_at: None,
    };
    let started = Step::new()
        .ui(UiRow::say(UiSubtype::Subtask), "grp_1 · 2 subtasks")
        .group(&group);
    let committed = s.commit_step(&coordinator.id, started).expect("started");
    assert_eq!(committed.ui.len(), 1);
    assert_eq!(
        s.group_of_call(&coordinator.id, "call_1").expect("read"),
        Some(group.clone())
    );
    group.children[0] = Some("child-1".into());
    s.commit_step(&coordinator.id, Step::new().group(&group))
        .expect("a child started");
    assert_eq!(
        s.groups_of(&coordinator.id).expect("read"),
        vec![group.clone()]
    );
    let mut forged = group.clone();
    forged.children[1] = Some("child-2".into());
    let err = s
        .commit_step(
            &other.id,
            Step::new()
                .ui(UiRow::say(UiSubtype::Text), "not mine")
                .group(&forged),
        )
        .expect_err("another task's group");
    assert!(
        matches!(&err, StoreError::Commit(m) if m.contains("grp_1")),
        "{err:?}"
    );
    assert!(s.load_ui(&other.id).expect("ui").is_empty());
    assert_eq!(
        s.groups_of(&coordinator.id).expect("read"),
        vec![group.clone()]
    );
    assert!(s.groups_of(&other.id).expect("read").is_empty());
    // A front-end's read, awaited, finds the same.
    assert_eq!(
        futures::executor::block_on(s.read_groups(&coordinator.id)).expect("read"),
        vec![group]
    );
}

/// Rows of the three logs whose task is gone.
fn orphan_rows(s: &Store) -> i64 {
    s.db.run(|c| -> Result<i64, StoreError> {
        c.one(
            "SELECT (SELECT COUNT(*) FROM api_messages WHERE task NOT IN (SELECT k FROM tasks)) \
             + (SELECT COUNT(*) FROM ui_messages WHERE task NOT IN (SELECT k FROM tasks)) \
             + (SELECT COUNT(*) FROM events WHERE task NOT IN (SELECT k FROM tasks))",
            params![],
        )?
        .get(0)
    })
    .expect("counted")
}

/// A deleted task takes its logs with it, and a step committed for it
/// after, alone or in a shared commit, or racing its deletion, writes
/// nothing: no log row is ever left without its task (on PostgreSQL the
/// logs have no foreign key; the task's row lock orders the two).
fn a_deleted_tasks_logs_go_with_it_and_nothing_lands_after(b: Backend) {
    let (_dir, s) = store_on(b);
    let said = Message::user_text("said");
    let step = |text: &str| {
        Step::new()
            .append(&said)
            .ui(UiRow::say(UiSubtype::Text), text.to_owned())
            .event(r#"{"type":"task_started","resumed":false}"#.to_owned())
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for round in 0..20 {
        let t = s.create_task(&spec()).expect("created");
        s.commit_step(&t.id, step("first")).expect("a step");
        let (late, deleted) = rt.block_on(async {
            let store = s.clone();
            let id = t.id.clone();
            let deleting = tokio::task::spawn_blocking(move || store.delete_task(&id));
            let prepared = step("racing").prepare(&t.id).expect("prepared");
            let late = s.commit(&t.id, prepared).await;
            (late, deleting.await.expect("joined"))
        });
        // Either the step landed first and went with the task, or the
        // task was gone when it came.
        deleted.unwrap_or_else(|e| panic!("round {round}: {e}"));
        if let Err(e) = late {
            assert!(matches!(e, StoreError::NotFound(_)), "round {round}: {e}");
        }
        assert!(matches!(
            s.commit_step(&t.id, step("after")),
            Err(StoreError::NotFound(_))
        ));
        assert_eq!(orphan_rows(&s), 0, "round {round}");
    }
}

/// What a task's run starts from, read in fewer round trips, is what the
/// single reads say: the record a creation returns is the stored one (a
/// subtask's, with its parent, owner and settings), the history and its
/// latest summary read together are `load_api` and `latest_summary`, and
/// the turn's start counts every reply, hidden ones too.
fn what_a_run_starts_from_reads_as_it_was_written(b: Backend) {
    let (_d, s) = store_on(b);
    let parent = new_task(&s);
    let child_spec = NewTask {
        parent_id: Some(parent.id.clone()),
        root_id: Some(parent.root_id.clone()),
        owner: Some("tenant-a".into()),
        settings: Some(TaskSettings {
            approval: roost_protocol::ApprovalPolicy::yes(),
            max_turns: 7,
            inherited: Default::default(),
            delegation: Default::default(),
            trace: None,
        }),
        ..spec()
    };
    let first = Message::user_text("<task>\nchild\n</task>");
    let crate::ClaimedTask {
        task: child, claim, ..
    } = s
        .create_claimed_task(&child_spec, Step::new().append(&first))
        .expect("created");
    assert_eq!(child, s.get_task(&child.id).expect("stored"));
    assert_eq!(child.parent_id.as_deref(), Some(parent.id.as_str()));
    assert_eq!(child.owner.as_deref(), Some("tenant-a"));
    drop(claim);
    let plain = s.create_task(&spec()).expect("created");
    assert_eq!(plain, s.get_task(&plain.id).expect("stored"));

    // Nothing condensed yet.
    let (api, summary) = s.load_history(&child.id).expect("history");
    assert_eq!(api, s.load_api(&child.id, false).expect("api"));
    assert_eq!((api.len(), summary), (1, None));
    assert_eq!(s.turn_start(&child.id).expect("turn"), (0, 0, 0));

    // Two replies, the first condensed away.
    for (i, text) in ["one", "two"].iter().enumerate() {
        s.commit_step(
            &child.id,
            Step::new()
                .ui(UiRow::say(UiSubtype::ApiReqStarted), format!("turn {i}"))
                .append(&tool_use(text)),
        )
        .expect("reply");
        s.commit_step(&child.id, Step::new().append(&Message::user_text(*text)))
            .expect("result");
    }
    // Messages after the first, up to 3, are condensed.
    s.condense(&child.id, 1, 3, "the first turn")
        .expect("condensed");
    let (api, summary) = s.load_history(&child.id).expect("history");
    assert_eq!(api, s.load_api(&child.id, false).expect("api"));
    assert_eq!(
        api.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![1, 4, 5],
        "hidden messages are left out"
    );
    assert_eq!(summary.as_deref(), Some("the first turn"));
    assert_eq!(summary, s.latest_summary(&child.id).expect("summary"));
    // The last reply is message 4 and UI row 2; two replies in all.
    assert_eq!(s.turn_start(&child.id).expect("turn"), (3, 1, 2));
    // Another task's history is its own.
    let (other, none) = s.load_history(&plain.id).expect("history");
    assert_eq!((other.len(), none), (0, None));
}

/// A statement sent later (with the next round trip, or the `COMMIT`)
/// that fails fails its whole step: nothing of it lands, and the next
/// step takes the positions the failed one would have.
fn a_step_whose_later_statement_fails_writes_nothing(b: Backend) {
    let (_d, s) = store_on(b);
    let t = new_task(&s);
    let ask = StoredAsk::open(&t.id, Some("c1"), "tool", "{}");
    let one = Message::user_text("one");
    s.commit_step(&t.id, Step::new().append(&one).ask(&ask))
        .expect("first");
    let two = Message::user_text("two");
    let refused = s.commit_step(
        &t.id,
        Step::new()
            .append(&two)
            .ui(UiRow::say(UiSubtype::Text), "two")
            .event("{\"event\":\"warning\",\"message\":\"two\"}".to_owned())
            .usage(
                &Usage {
                    input_tokens: 5,
                    output_tokens: 1,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                },
                0.5,
            )
            .ask(&ask),
    );
    assert!(refused.is_err(), "the same ask twice: {refused:?}");
    assert_eq!(s.load_api(&t.id, true).expect("api").len(), 1);
    assert!(s.load_ui(&t.id).expect("ui").is_empty());
    assert!(s.events_after(&t.id, 0, 10).expect("events").is_empty());
    assert_eq!(s.get_task(&t.id).expect("task").usage.input_tokens, 0);
    let next = s
        .commit_step(
            &t.id,
            Step::new()
                .append(&two)
                .event("{\"event\":\"warning\",\"message\":\"next\"}".to_owned()),
        )
        .expect("the next step");
    assert_eq!(next.message, Some(2));
    assert_eq!(next.events, vec![1]);
}

/// Wait until a shared store's listener is connected (its first notice).
#[cfg(feature = "postgres")]
async fn listening(notices: &mut tokio::sync::broadcast::Receiver<Notice>) {
    loop {
        match notices.recv().await {
            Ok(Notice::Reconnected) => break,
            Ok(_) => {}
            Err(e) => panic!("notices: {e}"),
        }
    }
}

/// On PostgreSQL a task's creation costs one round trip: its row (with a
/// key taken ahead), its first step's rows and its claim go with the
/// `BEGIN` and the `COMMIT`. What it wrote is all there, numbered from
/// one, and its record is the row as stored; its history and summary come
/// back in one more. It notifies no host; a task left for the work queue
/// (alone, or in a shared commit) wakes the queues.
#[cfg(feature = "postgres")]
#[test]
fn a_task_is_created_in_one_round_trip_on_postgres() {
    roost_testpg::skip_without_postgres!();
    let (dir, s) = store_on(Backend::Postgres);
    let mut notices = s.notices().expect("a shared store has notices");
    let cost = |before: StoreStats, after: StoreStats| trips_between(&before, &after);
    let first = Message::user_text("<task>\ndo it\n</task>");
    let todos = [TodoItem {
        text: "first".into(),
        state: TodoState::Pending,
    }];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        // The listener is connected before anything is committed.
        listening(&mut notices).await;
        // Twice: the first also registers this host, prepares the
        // statements and takes keys for the tasks to come; the second is
        // counted.
        for round in 0..2 {
            let before = s.stats();
            let crate::ClaimedTask { task: t, claim, .. } = s
                .create_claimed_task(
                    &spec(),
                    Step::new()
                        .ui(UiRow::say(UiSubtype::Text), "do it")
                        .append(&first)
                        .todos(&todos)
                        .event(r#"{"type":"task_started","resumed":false}"#.to_owned()),
                )
                .expect("created");
            if round == 1 {
                assert_eq!(cost(before, s.stats()), 1, "created");
                let before = s.stats();
                let (api, summary) = s.load_history(&t.id).expect("history");
                assert_eq!(cost(before, s.stats()), 1, "its history in one");
                assert_eq!((api.len(), summary), (1, None));
            }
            assert_eq!(t, s.get_task(&t.id).expect("stored"));
            let api = s.load_api(&t.id, false).expect("api");
            assert_eq!(api.len(), 1);
            assert_eq!((api[0].seq, &api[0].message), (1, &first));
            let ui = s.load_ui(&t.id).expect("ui");
            assert_eq!((ui.len(), ui[0].seq, ui[0].text.as_str()), (1, 1, "do it"));
            assert_eq!(s.get_todos(&t.id).expect("todos"), todos);
            let other = dir.reopen();
            assert!(other.is_live(&t.id), "claimed in the creating transaction");
            assert!(other.claim(&t.id).is_err());
            drop(claim);
        }
        // A task created claimed is for no work queue, and no one follows
        // it before its id is known: its creation notifies no host.
        // Notices come in the order of the commits, so one of theirs would
        // come before a request left in a host's inbox after them.
        let me = s.host_id().expect("id").expect("shared");
        s.send_to_host(
            &me,
            "no-task",
            &HostRequest::Message {
                text: "after the creations".into(),
            },
        )
        .await
        .expect("a request");
        // A task left for the queue wakes the hosts' work queues, created
        // alone or in a shared commit (a tenant's request to a server):
        // in its creating transaction, one round trip.
        let mut marked = false;
        let mut woken = 0;
        loop {
            match tokio::time::timeout(std::time::Duration::from_secs(60), notices.recv()).await {
                Ok(Ok(Notice::Inbox { .. })) if !marked => {
                    marked = true;
                    s.create_task(&spec()).expect("left for the queue");
                }
                Ok(Ok(Notice::Queue)) if marked && woken == 0 => {
                    woken += 1;
                    let before = s.stats();
                    let queued = s
                        .create_task_shared(&spec(), Step::new().event("{}".to_owned()))
                        .await
                        .expect("left for the queue in a shared commit");
                    assert_eq!(cost(before, s.stats()), 1, "created");
                    assert_eq!(queued, s.get_task(&queued.id).expect("stored"));
                    assert!(!s.is_live(&queued.id), "no one holds it");
                    assert_eq!(s.last_event_seq(&queued.id).expect("its step"), 1);
                }
                Ok(Ok(Notice::Queue)) if marked => break,
                Ok(Ok(notice @ (Notice::Queue | Notice::Events { .. }))) => {
                    panic!("a task created claimed notified the hosts: {notice:?}")
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => panic!("notices: {e}"),
                Err(_) => panic!("no notice after a request and a task left for the queue"),
            }
        }
    });
}

/// Where a [`CuttingProxy`] cuts the next transaction it sees begin.
#[cfg(feature = "postgres")]
#[derive(Clone, Copy, PartialEq, Debug)]
enum Cut {
    /// Nothing: every byte passes.
    Never,
    /// The transaction reaches the database whole, `COMMIT` included, and
    /// the client hears nothing back (its connection is cut).
    AfterCommitSent,
    /// Nothing of the transaction reaches the database; the connection is
    /// cut.
    BeforeSent,
}

/// A TCP proxy in front of the test database that cuts one transaction's
/// connection as it is told ([`Cut`]): what a network or a database
/// failing mid-commit looks like to the store.
#[cfg(feature = "postgres")]
struct CuttingProxy {
    next: Arc<std::sync::Mutex<Cut>>,
    port: u16,
    _rt: tokio::runtime::Runtime,
}

#[cfg(feature = "postgres")]
impl CuttingProxy {
    fn start(upstream: std::net::SocketAddr) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let next = Arc::new(std::sync::Mutex::new(Cut::Never));
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("binds");
        let port = listener.local_addr().expect("addr").port();
        let plan = Arc::clone(&next);
        rt.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    continue;
                };
                let plan = Arc::clone(&plan);
                tokio::spawn(async move {
                    let (mut cr, mut cw) = client.into_split();
                    let (mut sr, mut sw) = server.into_split();
                    let mute = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let muted = Arc::clone(&mute);
                    let down = tokio::spawn(async move {
                        let mut buf = vec![0u8; 65536];
                        while let Ok(n) = sr.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            if muted.load(std::sync::atomic::Ordering::SeqCst) {
                                continue;
                            }
                            if cw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                        // The client's side closes with this half.
                        drop(cw);
                    });
                    let mut buf = vec![0u8; 65536];
                    let mut cutting = Cut::Never;
                    while let Ok(n) = cr.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let chunk = &buf[..n];
                        let has = |needle: &[u8]| chunk.windows(needle.len()).any(|w| w == needle);
                        if cutting == Cut::Never && has(b"txid_current") {
                            let mut p = plan.lock().expect("plan");
                            cutting = std::mem::replace(&mut *p, Cut::Never);
                            if cutting != Cut::Never {
                                // From here the client hears nothing.
                                mute.store(true, std::sync::atomic::Ordering::SeqCst);
                            }
                        }
                        match cutting {
                            Cut::Never => {}
                            Cut::BeforeSent => break,
                            Cut::AfterCommitSent if has(b"COMMIT") => {
                                let _ = sw.write_all(chunk).await;
                                // The database answers into the void; the
                                // client's connection is cut now.
                                down.abort();
                                return;
                            }
                            Cut::AfterCommitSent => {}
                        }
                        if sw.write_all(chunk).await.is_err() {
                            break;
                        }
                    }
                    down.abort();
                });
            }
        });
        Self {
            next,
            port,
            _rt: rt,
        }
    }

    /// Cut the next transaction as `cut` says.
    fn cut_next(&self, cut: Cut) {
        *self.next.lock().expect("plan") = cut;
    }
}

/// A task's creation is one round trip on PostgreSQL, so a cut connection
/// can leave no transaction id to ask about: the store then asks whether
/// the task's row is there (waiting out a creation still running). Cut
/// after the database had all of it, or before it had any, the creation
/// lands exactly once and the caller gets its record.
#[cfg(feature = "postgres")]
#[test]
fn a_creation_cut_off_in_its_one_round_trip_lands_once() {
    roost_testpg::skip_without_postgres!();
    let url = roost_testpg::shared()
        .and_then(|pg| pg.fresh_database())
        .unwrap_or_else(|e| panic!("{e}"));
    let upstream: std::net::SocketAddr = url
        .split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("an address in {url}"));
    let proxy = CuttingProxy::start(upstream);
    let through = url.replace(&upstream.to_string(), &format!("127.0.0.1:{}", proxy.port));
    let s = Store::open_at(&StoreLocation::Postgres(through)).expect("opens");
    let direct = Store::open_at(&StoreLocation::Postgres(url)).expect("opens");
    // Registers this host, prepares the statements, takes task keys.
    let crate::ClaimedTask { claim: warm, .. } = s
        .create_claimed_task(&spec(), Step::new())
        .expect("created");
    drop(warm);
    for cut in [Cut::AfterCommitSent, Cut::BeforeSent] {
        proxy.cut_next(cut);
        let first = Message::user_text(format!("cut {cut:?}"));
        let crate::ClaimedTask { task: t, claim, .. } = s
            .create_claimed_task(&spec(), Step::new().append(&first))
            .unwrap_or_else(|e| panic!("created despite the cut ({cut:?}): {e}"));
        assert_eq!(
            *proxy.next.lock().expect("plan"),
            Cut::Never,
            "{cut:?} happened"
        );
        assert_eq!(t, direct.get_task(&t.id).expect("stored"), "{cut:?}");
        let api = direct.load_api(&t.id, false).expect("api");
        assert_eq!(api.len(), 1, "its first step written once ({cut:?})");
        assert_eq!(api[0].message, first);
        assert!(direct.is_live(&t.id), "claimed ({cut:?})");
        drop(claim);
    }
    let all = direct.list_tasks(100).expect("tasks");
    assert_eq!(all.len(), 3, "no task twice: {all:?}");
}

/// On PostgreSQL a step costs two round trips however much it writes:
/// `BEGIN` with the task's row lock, its log positions, its claim and the
/// message it replaces; then its rows, the task's totals and the
/// notification, with the `COMMIT`. A shared commit of many tasks' steps
/// costs the same two, and one notification announces every task's
/// events.
#[cfg(feature = "postgres")]
#[test]
fn a_step_is_two_round_trips_on_postgres() {
    roost_testpg::skip_without_postgres!();
    let (_d, s) = store_on(Backend::Postgres);
    let t = new_task(&s);
    let call = tool_use("c1");
    let result = Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Text {
            text: "replaced".into(),
        }],
    };
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 2,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    };
    let cost = |before: StoreStats, after: StoreStats| trips_between(&before, &after);
    // Twice each: the first prepares the statements (counted apart).
    for round in 0..2 {
        let before = s.stats();
        let c = s
            .commit_step(
                &t.id,
                Step::new()
                    .append(&call)
                    .usage(&usage, 0.01)
                    .status(TaskStatus::WaitingForApproval)
                    .ui(UiRow::ask(UiSubtype::Tool), "may I?")
                    .event("{\"event\":\"warning\",\"message\":\"ask\"}".to_owned())
                    .ask(&ask_for(&t.id, round)),
            )
            .expect("a reply");
        assert_eq!(cost(before, s.stats()), 2, "a reply, round {round}");
        let before = s.stats();
        s.commit_step(
            &t.id,
            Step::new()
                .put(c.message, &result)
                .ui(UiRow::say(UiSubtype::Text), "done")
                .event("{\"event\":\"warning\",\"message\":\"done\"}".to_owned()),
        )
        .expect("its result");
        assert_eq!(cost(before, s.stats()), 2, "a result, round {round}");
    }
    let api = s.load_api(&t.id, true).expect("api");
    assert_eq!(api.len(), 2, "each reply replaced in place by its result");
    assert!(
        api.iter().all(|m| m.message.content == result.content),
        "{api:?}"
    );
    assert_eq!(s.get_task(&t.id).expect("task").usage.input_tokens, 20);

    // Many tasks' steps through shared commits: two round trips a
    // transaction, and every task's events announced.
    let mut notices = s.notices().expect("a shared store has notices");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tasks: Vec<String> = (0..20).map(|_| new_task(&s).id).collect();
    rt.block_on(async {
        // The listener is connected before anything is committed.
        listening(&mut notices).await;
        // Warm every connection a commit may take.
        for id in &tasks {
            s.commit_step(id, Step::new().ui(UiRow::say(UiSubtype::Text), "warm"))
                .expect("warm");
        }
        let before = s.stats();
        let mut joins = Vec::new();
        for id in tasks.clone() {
            let s = s.clone();
            joins.push(tokio::spawn(async move {
                // Each step opens an ask and answers the one before.
                let asks: Vec<StoredAsk> = (0..5).map(|i| ask_for(&id, 10 + i)).collect();
                for i in 0..5 {
                    let m = Message::user_text(format!("{i}"));
                    let mut step = Step::new()
                        .append(&m)
                        .event(format!("{{\"event\":\"warning\",\"message\":\"{i}\"}}"))
                        .ask(&asks[i]);
                    if let Some(before) = i.checked_sub(1) {
                        step = step.answer(&asks[before].ask_id, "\"yes\"");
                    }
                    let step = step.prepare(&id).expect("prepared");
                    s.commit(&id, step).await.expect("committed");
                }
            }));
        }
        for j in joins {
            j.await.expect("joined");
        }
        let after = s.stats();
        assert_eq!(after.steps - before.steps, 100);
        assert_eq!(
            cost(before, after),
            2 * (after.transactions - before.transactions),
            "answers cost no round trip of their own: {before:?} {after:?}"
        );
        for id in &tasks {
            let open: Vec<Option<String>> = s
                .open_asks(id)
                .expect("open asks")
                .into_iter()
                .map(|a| a.call_id)
                .collect();
            assert_eq!(open, [Some("c14".to_owned())], "every answer landed");
        }
        let mut last: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        while tasks.iter().any(|t| last.get(t) != Some(&5)) {
            match tokio::time::timeout(std::time::Duration::from_secs(60), notices.recv()).await {
                Ok(Ok(Notice::Events { task, seq })) => {
                    let e = last.entry(task).or_default();
                    *e = (*e).max(seq);
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => panic!("notices: {e}"),
                Err(_) => panic!("not every task's events were announced: {last:?}"),
            }
        }
    });
}

/// An open ask of `task`, one a round.
#[cfg(feature = "postgres")]
fn ask_for(task: &str, round: usize) -> StoredAsk {
    StoredAsk::open(task, Some(&format!("c{round}")), "tool", "{}")
}

/// A PostgreSQL store at schema 1 (before hosts were recorded) is migrated
/// in place and keeps its tasks; one written by a newer Roost is refused
/// with a clear message, and nothing of it is touched.
#[cfg(feature = "postgres")]
#[test]
fn postgres_schema_1_is_migrated_and_a_newer_one_refused() {
    roost_testpg::skip_without_postgres!();
    let url = roost_testpg::shared()
        .and_then(|pg| pg.fresh_database())
        .unwrap_or_else(|e| panic!("{e}"));
    let pool = pg::Pool::new(&url).expect("pool");
    {
        let c = pool.get().expect("connects");
        c.batch(pg::MIGRATIONS[0]).expect("v1");
        c.batch(
            "CREATE TABLE roost_schema (version BIGINT NOT NULL);
             INSERT INTO roost_schema VALUES (1);
             INSERT INTO tasks (id, root_id, mode, workspace, status, prompt, created_at, updated_at)
               VALUES ('old-1', 'old-1', 'code', '/ws', 'paused', 'p', 1, 1);",
        )
        .expect("v1 rows");
    }
    let location = StoreLocation::Postgres(url.clone());
    assert_eq!(
        Store::migrate(&location).expect("migrates"),
        (1, pg::SCHEMA_VERSION)
    );
    let s = Store::open_at(&location).expect("opens");
    assert_eq!(
        s.get_task("old-1").expect("kept").status,
        TaskStatus::Paused
    );
    assert!(
        s.host_id().expect("registers").is_some(),
        "hosts exists now"
    );
    // The logs' large values are compressed with LZ4 (this server has it).
    let compression = pool
        .get()
        .expect("connects")
        .query(
            "SELECT attrelid::regclass::text || '.' || attname, attcompression::text FROM pg_attribute \
             WHERE (attrelid, attname) IN (('api_messages'::regclass, 'content'), \
             ('ui_messages'::regclass, 'text'), ('events'::regclass, 'event')) ORDER BY 1",
            &[],
        )
        .expect("columns")
        .iter()
        .map(|r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)))
        .collect::<Result<Vec<_>, StoreError>>()
        .expect("decoded");
    assert_eq!(
        compression,
        [
            ("api_messages.content".to_owned(), "l".to_owned()),
            ("events.event".to_owned(), "l".to_owned()),
            ("ui_messages.text".to_owned(), "l".to_owned()),
        ]
    );
    // The logs reference their task by no foreign key (version 7); the
    // other tables still do.
    let referencing = pool
        .get()
        .expect("connects")
        .query(
            "SELECT conrelid::regclass::text FROM pg_constraint WHERE contype = 'f' \
             AND confrelid = 'tasks'::regclass ORDER BY 1",
            &[],
        )
        .expect("constraints")
        .iter()
        .map(|r| r.get::<String>(0))
        .collect::<Result<Vec<_>, StoreError>>()
        .expect("decoded");
    assert_eq!(
        referencing,
        [
            "asks",
            "checkpoints",
            "claims",
            "condensations",
            "pending_trace",
            "task_groups",
            "todos"
        ]
    );
    assert_eq!(
        Store::migrate(&location).expect("again"),
        (pg::SCHEMA_VERSION, pg::SCHEMA_VERSION)
    );
    pool.get()
        .expect("connects")
        .batch("UPDATE roost_schema SET version = 999")
        .expect("newer");
    let Err(e) = Store::open_at(&location) else {
        panic!("a shared store opened without PostgreSQL")
    };
    let msg = e.to_string();
    assert!(msg.contains("newer Roost") && msg.contains("999"), "{msg}");
    assert!(!msg.contains("password"), "{msg}");
}

/// A database nobody answers at is a clear error naming it (without a
/// Roost's sessions plan each statement once (`plan_cache_mode`) and have
/// an idle transaction ended, unless the store's address sets either.
#[cfg(feature = "postgres")]
#[test]
fn postgres_sessions_are_set_up_for_roosts_statements_unless_the_url_says() {
    roost_testpg::skip_without_postgres!();
    let url = roost_testpg::shared()
        .and_then(|pg| pg.fresh_database())
        .unwrap_or_else(|e| panic!("{e}"));
    let settings = |url: &str| -> Vec<String> {
        let pool = pg::Pool::new(url).expect("pool");
        let c = pool.get().expect("connects");
        let mut rows = c
            .query(
                "SELECT current_setting('plan_cache_mode'), \
                 current_setting('idle_in_transaction_session_timeout')",
                &[],
            )
            .expect("settings");
        let mut row = rows.pop().expect("a row");
        vec![
            row.take_text(0).expect("text"),
            row.take_text(1).expect("text"),
        ]
    };
    let ours = settings(&url);
    assert_eq!(ours[0], "force_generic_plan");
    assert_ne!(ours[1], "0", "an idle transaction is ended");
    let theirs = settings(&format!(
        "{url}?options=-c%20plan_cache_mode%3Dauto%20-c%20idle_in_transaction_session_timeout%3D7s"
    ));
    assert_eq!(theirs, vec!["auto".to_owned(), "7s".to_owned()]);
}

/// password), not a hang or a panic.
#[cfg(feature = "postgres")]
#[test]
fn an_unreachable_postgres_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let url = format!("postgres://roost:s3cret@127.0.0.1:{port}/none");
    let e = Store::open_at(&StoreLocation::parse(&url))
        .err()
        .expect("refused");
    let msg = e.to_string();
    assert!(!msg.contains("s3cret"), "{msg}");
    assert!(
        matches!(e, StoreError::Postgres(_) | StoreError::Unavailable(_)),
        "{msg}"
    );
}

/// On a shared store a claim is alive while its host renews its lease; once
/// the lease has run out (the host died) another host takes the task.
#[cfg(feature = "postgres")]
#[test]
fn a_dead_hosts_claims_are_taken_after_its_lease() {
    let (place, a) = store_on(Backend::Postgres);
    a.set_lease(std::time::Duration::from_secs(3600));
    let t = new_task(&a);
    let claim = a.claim(&t.id).expect("claimed");
    let b = place.reopen();
    assert!(b.is_live(&t.id));
    let err = b.claim(&t.id).expect_err("held by a live host");
    assert!(err.to_string().contains("another process"), "{err}");
    // Host a stops renewing (as a killed host does): its lease runs out.
    let host = a.host_id().expect("id").expect("shared");
    b.db.run(|c| c.exec("UPDATE hosts SET seen_at = 0 WHERE id = ?1", params![&host]))
        .expect("expire");
    assert!(!b.is_live(&t.id));
    let taken = b.claim(&t.id).expect("taken over");
    assert!(a.is_live(&t.id), "b's claim is live to a too");
    drop(taken);
    std::mem::forget(claim);
}

/// A host whose lease lapsed (paused, or cut off from the database) while
/// it ran a task finds, when it writes again, that another host took the
/// task over: none of its writes lands — steps alone or in a shared commit
/// beside another task's (which lands), status changes, replaced messages,
/// closed questions — and the new owner's history stays as it wrote it.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_claim_was_taken_over_writes_nothing_more() {
    let (place, a) = store_on(Backend::Postgres);
    a.set_lease(std::time::Duration::from_secs(3600));
    let t = new_task(&a);
    let kept = new_task(&a);
    let claim = a.claim(&t.id).expect("claimed");
    let _kept_claim = a.claim(&kept.id).expect("claimed");
    let seq = a
        .append_api(&t.id, &Message::user_text("a's step"))
        .expect("a writes");
    // Host a stops renewing (its process is paused): b takes the task over
    // once a's lease has run out, and writes its own step.
    let b = place.reopen();
    let host = a.host_id().expect("id").expect("shared");
    b.db.run(|c| c.exec("UPDATE hosts SET seen_at = 0 WHERE id = ?1", params![&host]))
        .expect("expire");
    let taken = b.claim(&t.id).expect("taken over");
    b.append_api(&t.id, &Message::user_text("b's step"))
        .expect("b writes");
    let ask = StoredAsk::open(&t.id, None, "followup", "{}");
    b.commit_step(&t.id, Step::new().ask(&ask)).expect("b asks");

    // Host a wakes up and goes on as if nothing happened.
    let lost =
        |r: Result<_, StoreError>| matches!(r, Err(StoreError::ClaimLost(ref id)) if *id == t.id);
    assert!(lost(
        a.append_api(&t.id, &Message::user_text("a again"))
            .map(|_| ())
    ));
    assert!(lost(
        a.append_ui(&t.id, UiRow::say(UiSubtype::Text), "a again")
            .map(|_| ())
    ));
    assert!(lost(a.set_status(&t.id, TaskStatus::Failed)));
    assert!(lost(a.update_api(
        &t.id,
        seq,
        &Message::user_text("rewritten")
    )));
    assert!(lost(a.close_asks(&t.id, "a gave up").map(|_| ())));
    let step = |id: &str, text: &str| {
        Step::new()
            .ui(UiRow::say(UiSubtype::Text), text.to_owned())
            .prepare(id)
            .expect("prepares")
    };
    let (stale, fine) = tokio::join!(
        a.commit(&t.id, step(&t.id, "a in a batch")),
        a.commit(&kept.id, step(&kept.id, "kept in a batch"))
    );
    assert!(
        lost(stale.map(|_| ())),
        "a's step of the lost task is refused"
    );
    fine.expect("a's other task commits beside it");
    // A shared commit checks all its tasks' claims in one statement.
    let me = a.host_id().expect("id").expect("shared");
    let both = [t.id.as_str(), kept.id.as_str()];
    assert!(lost(a.db.write(|c| claims::check_fences(c, &both, &me))));
    a.db.write(|c| claims::check_fences(c, &[kept.id.as_str()], &me))
        .expect("a still holds its other task");
    // The refusal is an engine conflict, and says what happened.
    let e = a
        .set_status(&t.id, TaskStatus::Failed)
        .expect_err("refused");
    assert!(e.to_string().contains("another process or host"), "{e}");

    let texts: Vec<String> = b
        .load_api(&t.id, true)
        .expect("history")
        .iter()
        .flat_map(|m| m.message.content.iter())
        .filter_map(|c| match c {
            ContentBlock::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts.ends_with(&["a's step".to_owned(), "b's step".to_owned()]),
        "{texts:?}"
    );
    assert!(
        b.load_ui(&t.id)
            .expect("ui")
            .iter()
            .all(|r| r.text != "a again" && r.text != "a in a batch")
    );
    assert_eq!(b.get_task(&t.id).expect("task").status, TaskStatus::Running);
    assert_eq!(
        b.open_asks(&t.id).expect("open").len(),
        1,
        "b's question stays open"
    );
    assert_eq!(
        b.load_ui(&kept.id)
            .expect("ui")
            .last()
            .map(|r| r.text.clone()),
        Some("kept in a batch".to_owned())
    );
    drop(taken);
    std::mem::forget(claim);
}

/// TLS to the database: `sslmode=require` with the database's CA
/// (`sslrootcert`) encrypts (the server says so) and the store works over
/// it; with another CA, or the system's roots, the server's certificate is
/// not trusted and nothing is sent; without `sslmode` the connection stays
/// plain, as before.
#[cfg(feature = "postgres")]
#[test]
fn tls_to_postgres_is_verified() {
    roost_testpg::skip_without_postgres!();
    let pg = roost_testpg::Postgres::start().unwrap_or_else(|e| panic!("{e}"));
    let ca = pg.enable_tls().unwrap_or_else(|e| panic!("{e}"));
    let url = pg.fresh_database().unwrap_or_else(|e| panic!("{e}"));
    let open = |u: String| Store::open_at(&StoreLocation::Postgres(u));
    let encrypted = |s: &Store| -> String {
        s.db.run(|c| {
            c.one(
                "SELECT CASE WHEN ssl THEN 'yes' ELSE 'no' END FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                params![],
            )?
            .get::<String>(0)
        })
        .expect("reads")
    };
    let tls = open(format!(
        "{url}?sslmode=require&sslrootcert={}",
        ca.display()
    ))
    .expect("opens over TLS");
    assert_eq!(encrypted(&tls), "yes");
    let t = new_task(&tls);
    tls.append_api(&t.id, &Message::user_text("over TLS"))
        .expect("writes");
    assert_eq!(tls.load_api(&t.id, false).expect("reads").len(), 1);
    let verified = open(format!(
        "{url}?application_name=roost-test&sslmode=verify-full&sslrootcert={}",
        ca.display()
    ))
    .expect("opens over TLS");
    assert_eq!(encrypted(&verified), "yes");
    let plain = open(url.clone()).expect("opens");
    assert_eq!(encrypted(&plain), "no");

    let dir = tempfile::tempdir().expect("dir");
    let other = roost_testpg::certificate_authority(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    for refused in [
        format!("{url}?sslmode=require&sslrootcert={}", other.display()),
        format!("{url}?sslmode=verify-full&sslrootcert=system"),
    ] {
        let e = open(refused.clone()).err().expect("refused").to_string();
        assert!(
            e.contains("TLS: ") && e.contains("certificate"),
            "{refused}: {e}"
        );
        assert!(
            !e.contains("sslrootcert="),
            "the URL is shown without its query: {e}"
        );
    }
}

/// While the database is down a ping fails at once (a server's readiness)
/// and a write waits for it; once it is back, the write lands and nothing
/// is lost.
#[cfg(feature = "postgres")]
#[test]
fn a_postgres_outage_is_waited_out() {
    roost_testpg::skip_without_postgres!();
    let pg = roost_testpg::Postgres::start().unwrap_or_else(|e| panic!("{e}"));
    let url = pg.fresh_database().unwrap_or_else(|e| panic!("{e}"));
    let s = Store::open_at(&StoreLocation::Postgres(url)).expect("opens");
    let t = new_task(&s);
    s.append_api(&t.id, &Message::user_text("before"))
        .expect("append");
    pg.stop().unwrap_or_else(|e| panic!("{e}"));
    assert!(s.ping().is_err(), "the database is down");
    std::thread::scope(|sc| {
        let writer = sc.spawn(|| s.append_api(&t.id, &Message::user_text("during")));
        std::thread::sleep(std::time::Duration::from_millis(700));
        pg.restart().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(writer.join().expect("joins").expect("lands"), 2);
    });
    assert!(s.ping().is_ok());
    assert_eq!(s.load_api(&t.id, false).expect("load").len(), 2);
}

/// What another host can put in the database is checked, never trusted:
/// an inbox row of an unknown kind is dropped (and logged), only this
/// host's rows are taken, and notices with malformed payloads are ignored.
#[cfg(feature = "postgres")]
#[test]
fn hostile_rows_and_notices_from_other_hosts_are_ignored() {
    let (place, s) = store_on(Backend::Postgres);
    let other = place.reopen();
    let t = new_task(&s);
    let me = s.host_id().expect("id").expect("shared");
    let them = other.host_id().expect("id").expect("shared");
    s.db.run(|c| {
        c.exec(
            "INSERT INTO host_inbox (host, task_id, kind, body, created_at) VALUES (?1, ?2, 'rm -rf', 'x', 0)",
            params![&me, &t.id],
        )
    })
    .expect("hostile row");
    futures::executor::block_on(s.send_to_host(
        &them,
        &t.id,
        &HostRequest::Cancel {
            reason: "theirs".into(),
        },
    ))
    .expect("theirs");
    futures::executor::block_on(s.send_to_host(
        &me,
        &t.id,
        &HostRequest::Message {
            text: "mine".into(),
        },
    ))
    .expect("mine");
    assert_eq!(
        futures::executor::block_on(s.take_inbox()).expect("inbox"),
        vec![(
            t.id.clone(),
            HostRequest::Message {
                text: "mine".into()
            }
        )]
    );
    assert!(
        futures::executor::block_on(s.take_inbox())
            .expect("taken once")
            .is_empty()
    );
    assert_eq!(
        futures::executor::block_on(other.take_inbox())
            .expect("theirs")
            .len(),
        1
    );
    for (channel, payload) in [
        ("roost_events", "no-colon"),
        ("roost_events", "task:notanumber"),
        ("roost_other", "x"),
    ] {
        assert_eq!(
            listen::Notice::parse(channel, payload),
            Vec::new(),
            "{channel} {payload}"
        );
    }
    assert_eq!(
        listen::Notice::parse("roost_events", "a:b:7"),
        vec![Notice::Events {
            task: "a:b".into(),
            seq: 7
        }]
    );
    // A shared commit's one notification for several tasks; an entry that
    // does not read is skipped, the others kept.
    assert_eq!(
        listen::Notice::parse("roost_events", "a:3\nbroken\nb:9"),
        vec![
            Notice::Events {
                task: "a".into(),
                seq: 3
            },
            Notice::Events {
                task: "b".into(),
                seq: 9
            }
        ]
    );
}

/// Two hosts taking from the work queue at once never take the same task,
/// and between them take every one.
#[cfg(feature = "postgres")]
#[test]
fn the_work_queue_gives_each_task_to_one_host() {
    let (place, a) = store_on(Backend::Postgres);
    let b = place.reopen();
    let mut spec = spec();
    spec.owner = Some("ada".into());
    let all: Vec<String> = (0..200)
        .map(|_| a.create_task(&spec).expect("creates").id)
        .collect();
    let roots = vec!["/ws".to_owned()];
    fn take(s: &Store, roots: &[String]) -> Vec<String> {
        let mut mine = Vec::new();
        loop {
            let batch = s.claim_next(roots, 3).expect("claims");
            if batch.is_empty() {
                return mine;
            }
            mine.extend(batch);
        }
    }
    let (mut got_a, mut got_b) = std::thread::scope(|sc| {
        let ta = sc.spawn(|| take(&a, &roots));
        let tb = sc.spawn(|| take(&b, &roots));
        (ta.join().expect("a"), tb.join().expect("b"))
    });
    let mut both: Vec<String> = got_a
        .iter()
        .filter(|id| got_b.contains(id))
        .cloned()
        .collect();
    both.sort();
    assert!(both.is_empty(), "taken twice: {both:?}");
    got_a.append(&mut got_b);
    got_a.sort();
    let mut want = all;
    want.sort();
    assert_eq!(got_a, want);
    // Outside its roots a host takes nothing.
    let c = place.reopen();
    let mut other = spec.clone();
    other.workspace = "/elsewhere".into();
    c.create_task(&other).expect("creates");
    assert!(c.claim_next(&roots, 10).expect("claims").is_empty());
}

/// The tables and columns of a fresh store, as the database itself lists
/// them (types are each engine's own; their names must agree).
#[cfg(feature = "postgres")]
fn schema_of(b: Backend) -> std::collections::BTreeSet<(String, String)> {
    let (_d, s) = store_on(b);
    s.db.run(|c| {
        let sql = match c.dialect() {
            db::Dialect::Sqlite => {
                "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p \
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'"
            }
            db::Dialect::Postgres => {
                "SELECT table_name::text, column_name::text FROM information_schema.columns \
                 WHERE table_schema = current_schema()"
            }
        };
        c.query(sql, &[])?
            .into_iter()
            .map(|r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)))
            .collect()
    })
    .expect("schema")
}

/// One schema, two engines: a table or column added to one and forgotten
/// in the other fails here, not on a team's shared database.
#[cfg(feature = "postgres")]
#[test]
fn the_sqlite_and_postgres_schemas_agree() {
    roost_testpg::skip_without_postgres!();
    // Only PostgreSQL has several hosts (their leases and the messages
    // between them) and a version table (SQLite keeps its version in
    // `PRAGMA user_version`).
    const PG_ONLY: [&str; 3] = ["hosts", "host_inbox", "roost_schema"];
    let lite = schema_of(Backend::Sqlite);
    let mut pg = schema_of(Backend::Postgres);
    for table in PG_ONLY {
        assert!(pg.iter().any(|(t, _)| t == table), "{table} is gone");
    }
    pg.retain(|(t, _)| !PG_ONLY.contains(&t.as_str()));
    assert!(lite.len() > 20, "{lite:?}");
    let only_lite: Vec<_> = lite.difference(&pg).collect();
    let only_pg: Vec<_> = pg.difference(&lite).collect();
    assert!(
        only_lite.is_empty() && only_pg.is_empty(),
        "only in SQLite: {only_lite:?}\nonly in PostgreSQL: {only_pg:?}"
    );
}

/// A build without the `postgres` feature refuses a shared store with the
/// reason (and never pretends to have opened it).
#[cfg(not(feature = "postgres"))]
#[test]
fn a_build_without_postgres_says_so() {
    let location = StoreLocation::Postgres("postgres://roost:secret@127.0.0.1:1/roost".into());
    let Err(e) = Store::open_at(&location) else {
        panic!("a shared store opened without PostgreSQL")
    };
    assert!(e.to_string().contains("built without PostgreSQL"), "{e}");
    assert!(!location.to_string().contains("secret"), "{location}");
    let e = Store::migrate(&location).expect_err("refused");
    assert!(e.to_string().contains("built without PostgreSQL"), "{e}");
}

/// Steps of tasks ready to run together share one transaction even with
/// one runtime worker, where nothing else runs while a commit is written.
async fn steps_ready_together_share_a_transaction_on_one_worker(b: Backend) {
    let (_place, s) = store_on(b);
    let tasks: Vec<TaskRecord> = (0..10).map(|_| new_task(&s)).collect();
    let before = s.stats().transactions;
    let mut handles = Vec::new();
    for t in &tasks {
        let (s, id) = (s.clone(), t.id.clone());
        handles.push(tokio::spawn(async move {
            let step = Step::new()
                .ui(UiRow::say(UiSubtype::Text), "ready")
                .prepare(&id)
                .expect("prepared");
            s.commit(&id, step).await.expect("committed")
        }));
    }
    for h in handles {
        assert_eq!(h.await.expect("joined").ui.len(), 1);
    }
    assert_eq!(
        s.stats().transactions - before,
        1,
        "ten steps ready together, one transaction"
    );
}

/// A creation whose caller is gone while it waits for the shared commit
/// (a request cancelled) still lands whole, and is left resumable: no
/// process holds its claim, so another may take it, as after a crash.
async fn a_creation_whose_caller_is_gone_is_left_resumable(b: Backend) {
    use futures::FutureExt;
    let (place, s) = store_on(b);
    let new = spec();
    let first = Message::user_text("<task>\ndo it\n</task>");
    let known: std::collections::HashSet<String> = s
        .list_tasks(100)
        .expect("tasks")
        .into_iter()
        .map(|t| t.id)
        .collect();
    // A creation in flight (polled once, it yields before going alone),
    // so the next one shares a commit.
    let mut alone = Box::pin(s.create_claimed_task_shared(&new, Step::new().append(&first)));
    assert!((&mut alone).now_or_never().is_none());
    // Polled once: it queues, leads the shared commit and yields; then its
    // caller is gone.
    assert!(
        s.create_claimed_task_shared(&new, Step::new().append(&first))
            .now_or_never()
            .is_none(),
        "it waits for the shared commit"
    );
    let kept = alone.await.expect("created alone");
    // The lead was handed over: its commit lands.
    let gone = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let landed = s
                .list_tasks(100)
                .expect("tasks")
                .into_iter()
                .map(|t| t.id)
                .find(|id| !known.contains(id) && *id != kept.task.id);
            if let Some(id) = landed {
                return id;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the orphaned creation was committed");
    assert_eq!(s.load_api(&gone, false).expect("api").len(), 1, "whole");
    assert!(!s.is_live(&gone), "no process holds it");
    place
        .reopen()
        .claim(&gone)
        .expect("another process may resume it");
    assert!(s.is_live(&kept.task.id), "the one awaited is held");
}

/// A task cancelled while it leads the shared commit (letting others queue
/// their steps) hands the lead over: its own step and the steps queued
/// behind it are committed, in order.
async fn a_leader_cancelled_while_others_queue_hands_over(b: Backend) {
    use futures::FutureExt;
    let (_place, s) = store_on(b);
    let t = new_task(&s);
    let say = |text: &'static str| {
        Step::new()
            .ui(UiRow::say(UiSubtype::Text), text)
            .prepare(&t.id)
            .expect("prepared")
    };
    let start = s.load_ui(&t.id).expect("ui").len();
    // Polled once: it leads and yields; then it is dropped.
    assert!(
        s.commit(&t.id, say("cancelled")).now_or_never().is_none(),
        "the leader lets others queue first"
    );
    // A lead nobody took over would hold this step forever: the bound
    // turns that hang into a failure, it times nothing.
    let next = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        s.commit(&t.id, say("next")),
    )
    .await
    .expect("the lead was handed over, not left held")
    .expect("committed");
    let texts: Vec<String> = s
        .load_ui(&t.id)
        .expect("ui")
        .into_iter()
        .skip(start)
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["cancelled", "next"], "both committed, in order");
    assert_eq!(next.ui, vec![i64::try_from(start + 2).expect("small")]);
}

/// Run each named async test of the suite on SQLite and on PostgreSQL,
/// on one runtime worker (a shared commit's waiters and its leader take
/// turns on the same thread).
macro_rules! on_both_one_worker {
    ($($name:ident),+ $(,)?) => {
        mod one_worker_on_sqlite {
            $(#[tokio::test(flavor = "current_thread")]
            async fn $name() {
                super::$name(super::Backend::Sqlite).await
            })+
        }
        #[cfg(feature = "postgres")]
        mod one_worker_on_postgres {
            $(#[tokio::test(flavor = "current_thread")]
            async fn $name() {
                roost_testpg::skip_without_postgres!();
                super::$name(super::Backend::Postgres).await
            })+
        }
    };
}

/// What a front-end reads on every request is awaited on its runtime,
/// here on its one worker: a token by its hash, and a task with whether a
/// live process runs it (on PostgreSQL both in one round trip: the claim's
/// host and its lease in one statement). A task claimed by another store
/// handle is live, and stops being live when its claim is let go or (on
/// PostgreSQL) its host's lease runs out; an unknown task is not found.
async fn a_front_ends_reads_are_awaited(b: Backend) {
    fn awaited<F: std::future::Future + Send>(f: F) -> F {
        f
    }
    let (place, s) = store_on(b);
    s.put_token("tok1", "h1", "acme", "/ws", Some(i64::MAX))
        .expect("token");
    let found = awaited(s.token_by_hash("h1")).await.expect("by hash");
    assert_eq!(found.expect("found").tenant, "acme");
    assert!(s.token_by_hash("nope").await.expect("by hash").is_none());

    let t = new_task(&s);
    // A task's UI history and todo list, as the engine's reads find them.
    s.append_ui(&t.id, UiRow::say(UiSubtype::Text), "hello")
        .expect("ui");
    let todos = vec![TodoItem {
        text: "a".into(),
        state: TodoState::InProgress,
    }];
    s.commit_step(&t.id, Step::new().todos(&todos))
        .expect("todos");
    let ui = awaited(s.read_ui(&t.id)).await.expect("ui");
    assert_eq!((ui.len(), ui[0].text.as_str()), (1, "hello"));
    assert_eq!(
        format!("{ui:?}"),
        format!("{:?}", s.load_ui(&t.id).expect("ui"))
    );
    assert_eq!(awaited(s.read_todos(&t.id)).await.expect("todos"), todos);
    s.append_api(&t.id, &Message::user_text("go")).expect("api");
    let api = awaited(s.read_api(&t.id, true)).await.expect("api");
    assert_eq!(
        format!("{api:?}"),
        format!("{:?}", s.load_api(&t.id, true).expect("api"))
    );
    assert_eq!(api.len(), 1);
    assert!(s.read_todos("no-such-task").await.expect("none").is_empty());
    // Its checkpoints, oldest first.
    for turn in [1, 2] {
        s.add_checkpoint(&t.id, turn, "c0ffee", "tree", 1, 0)
            .expect("checkpoint");
    }
    let before = s.stats();
    let cps = awaited(s.read_checkpoints(&t.id))
        .await
        .expect("checkpoints");
    if s.is_shared() {
        assert_eq!(trips_between(&before, &s.stats()), 1);
    }
    assert_eq!(
        format!("{cps:?}"),
        format!("{:?}", s.checkpoints(&t.id).expect("checkpoints"))
    );
    assert_eq!(cps.iter().map(|c| c.view.turn).collect::<Vec<_>>(), [1, 2]);
    assert!(
        s.read_checkpoints("no-such-task")
            .await
            .expect("none")
            .is_empty()
    );
    // A stream's events after a position, a page at a time.
    for i in 0..3 {
        s.append_event(&t.id, &format!("{{\"n\":{i}}}"))
            .expect("event");
    }
    let before = s.stats();
    let page = awaited(s.read_events_after(&t.id, 1, 10))
        .await
        .expect("events");
    if s.is_shared() {
        assert_eq!(trips_between(&before, &s.stats()), 1);
    }
    assert_eq!(page, s.events_after(&t.id, 1, 10).expect("events"));
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(
        s.read_events_after(&t.id, 0, 1)
            .await
            .expect("events")
            .len(),
        1
    );
    assert!(
        s.read_events_after("no-such-task", 0, 10)
            .await
            .expect("none")
            .is_empty()
    );
    let before = s.stats();
    let (read, live) = awaited(s.read_task(&t.id)).await.expect("read");
    let after = s.stats();
    if s.is_shared() {
        // Besides preparing its statements, the first time a connection
        // makes them.
        let trips = trips_between(&before, &after);
        assert_eq!(trips, 1, "one round trip: {before:?} {after:?}");
    }
    assert_eq!(read, s.get_task(&t.id).expect("get"));
    assert!(!live, "no one runs it");
    let other = place.reopen();
    let claim = other.claim(&t.id).expect("claimed");
    assert!(s.read_task(&t.id).await.expect("read").1, "claimed");
    assert!(s.is_live(&t.id));
    // Who runs it, for a front-end that follows it: the other handle, in
    // one round trip, as the engine's synchronous lookup says.
    let before = s.stats();
    let runner = awaited(s.read_runner_elsewhere(&t.id))
        .await
        .expect("runner");
    if s.is_shared() {
        assert_eq!(trips_between(&before, &s.stats()), 1);
    }
    assert!(runner.is_some(), "another runs it");
    assert_eq!(runner, s.runner_elsewhere(&t.id).expect("runner"));
    assert_eq!(
        other.read_runner_elsewhere(&t.id).await.expect("runner"),
        None,
        "not elsewhere for the handle that runs it"
    );
    if s.is_shared() {
        let them = other.host_id().expect("id").expect("shared");
        s.db.run(|c| c.exec("UPDATE hosts SET seen_at = 0 WHERE id = ?1", params![&them]))
            .expect("lease run out");
        assert!(
            !s.read_task(&t.id).await.expect("read").1,
            "its host is gone"
        );
        assert!(!s.is_live(&t.id));
        assert_eq!(s.read_runner_elsewhere(&t.id).await.expect("runner"), None);
    }
    // A listing says which of its tasks run, in the same round trip.
    let mut theirs = spec();
    theirs.owner = Some("acme".into());
    let acme = s.create_task(&theirs).expect("acme's");
    let acme_running = s.claim(&acme.id).expect("claimed");
    s.set_status(&acme.id, TaskStatus::WaitingForInput)
        .expect("waiting");
    let listed = |f: TaskFilter<'static>| {
        let s = s.clone();
        async move {
            let before = s.stats();
            let page = awaited(s.list_filtered(&f, 10)).await.expect("listed");
            let after = s.stats();
            if s.is_shared() {
                let trips = trips_between(&before, &after);
                assert_eq!(trips, 1, "one round trip: {before:?} {after:?}");
            }
            let mut page: Vec<(String, bool)> =
                page.into_iter().map(|(t, live)| (t.id, live)).collect();
            page.sort();
            page
        }
    };
    // `t`'s claim is the other handle's: on PostgreSQL its host's lease
    // ran out above.
    let mut all = vec![(acme.id.clone(), true), (t.id.clone(), !s.is_shared())];
    all.sort();
    assert_eq!(
        listed(TaskFilter::default()).await,
        all,
        "each with its liveness"
    );
    let mine = TaskFilter {
        owner: Some("acme"),
        ..TaskFilter::default()
    };
    assert_eq!(listed(mine).await, vec![(acme.id.clone(), true)]);
    let waiting = TaskFilter {
        status: Some(TaskStatus::WaitingForInput),
        ..TaskFilter::default()
    };
    assert_eq!(listed(waiting).await, vec![(acme.id.clone(), true)]);
    // So does a task's list of its subtasks.
    let mut kid = spec();
    kid.parent_id = Some(acme.id.clone());
    kid.root_id = Some(acme.id.clone());
    let running_kid = s.create_task(&kid).expect("a subtask");
    let idle_kid = s.create_task(&kid).expect("another");
    let kid_running = s.claim(&running_kid.id).expect("claimed");
    let before = s.stats();
    let kids = awaited(s.read_children(&acme.id)).await.expect("children");
    let after = s.stats();
    if s.is_shared() {
        let trips = trips_between(&before, &after);
        assert_eq!(trips, 1, "one round trip: {before:?} {after:?}");
    }
    let mut kids: Vec<(String, bool)> = kids.into_iter().map(|(t, live)| (t.id, live)).collect();
    kids.sort();
    let mut want = vec![(running_kid.id.clone(), true), (idle_kid.id.clone(), false)];
    want.sort();
    assert_eq!(kids, want);
    assert!(
        s.read_children(&idle_kid.id)
            .await
            .expect("none")
            .is_empty()
    );
    drop(kid_running);
    drop(acme_running);
    drop(claim);
    assert!(!s.read_task(&t.id).await.expect("read").1, "let go");
    assert_eq!(s.read_runner_elsewhere(&t.id).await.expect("runner"), None);
    assert_eq!(
        s.read_runner_elsewhere("no-such-task")
            .await
            .expect("runner"),
        None
    );
    assert_eq!(s.read_last_event_seq(&t.id).await.expect("last"), 3);
    assert_eq!(
        s.read_last_event_seq("no-such-task").await.expect("last"),
        0
    );
    match s.read_task("no-such-task").await {
        Err(StoreError::NotFound(id)) => assert_eq!(id, "no-such-task"),
        other => panic!("{other:?}"),
    }
}

/// A front-end's read made while the database is down waits the outage
/// out, asleep on the runtime, and answers once the database is back.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "current_thread")]
async fn a_front_ends_read_waits_an_outage_out() {
    roost_testpg::skip_without_postgres!();
    let pg = std::sync::Arc::new(roost_testpg::Postgres::start().unwrap_or_else(|e| panic!("{e}")));
    let url = pg.fresh_database().unwrap_or_else(|e| panic!("{e}"));
    let s = Store::open_at(&StoreLocation::Postgres(url)).expect("opens");
    let t = new_task(&s);
    pg.stop().unwrap_or_else(|e| panic!("{e}"));
    let reading = {
        let s = s.clone();
        let id = t.id.clone();
        tokio::spawn(async move { s.read_task(&id).await })
    };
    // The read has met the outage (and is waiting it out) before the
    // database comes back.
    while s.reachable() {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let restarted = std::sync::Arc::clone(&pg);
    tokio::task::spawn_blocking(move || restarted.restart())
        .await
        .expect("joins")
        .unwrap_or_else(|e| panic!("{e}"));
    let (read, live) = reading.await.expect("joins").expect("answered");
    assert_eq!((read.id.as_str(), live), (t.id.as_str(), false));
}

on_both_one_worker!(
    a_front_ends_reads_are_awaited,
    a_trees_open_asks_are_one_lookup,
    steps_ready_together_share_a_transaction_on_one_worker,
    a_creation_whose_caller_is_gone_is_left_resumable,
    a_leader_cancelled_while_others_queue_hands_over
);
