//! Many hosts on one PostgreSQL (a real server from Debian's `postgresql`,
//! started by `roost-testpg`): `roost serve` processes share its task
//! store, work queue and notices. Tasks created through one host run on
//! both; a question of a task on one host is answered through the other; an
//! event stream on one host follows a task on the other and resumes with
//! `Last-Event-ID`; a host killed with SIGKILL loses no task; a database
//! restart pauses tasks, which then go on.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::{roost, text};
use crate::server::{Sse, is_ask, read_events};
use roost_core::store::{Store, StoreLocation};

/// One `roost serve` process.
struct Host {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Host {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Tasks this host took from the work queue (its log says so).
    fn taken(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("taken from the work queue")
            .count()
    }

    /// Wait (a minute at most) until this host has taken `n` tasks.
    async fn wait_taken(&self, n: usize) {
        for _ in 0..1200 {
            if self.taken() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

/// Start a host on `url` with its own data dir under `dir`.
async fn start_host(
    dir: &Path,
    name: &str,
    url: &str,
    root: &Path,
    script: &Path,
    max_running: usize,
) -> Host {
    start_host_with(dir, name, url, root, script, max_running, "3s").await
}

/// [`start_host`] with a lease of `lease`.
async fn start_host_with(
    dir: &Path,
    name: &str,
    url: &str,
    root: &Path,
    script: &Path,
    max_running: usize,
    lease: &str,
) -> Host {
    let data = dir.join(name);
    let log = dir.join(format!("{name}-{}.log", free_port()));
    let port = free_port();
    let child = roost(&data)
        .args(["--store", url, "serve", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--root")
        .arg(root)
        .arg("--script")
        .arg(script)
        .args(["--lease", lease, "--max-running"])
        .arg(max_running.to_string())
        .env("ROOST_LOG", "roost_server=info,roost_core=warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("serve starts");
    let host = Host { child, port, log };
    let client = reqwest::Client::new();
    for _ in 0..600 {
        if client
            .get(format!("{}/health", host.base()))
            .send()
            .await
            .is_ok()
        {
            return host;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{name} did not start: {}",
        std::fs::read_to_string(&host.log).unwrap_or_default()
    );
}

/// An HTTP client of the hosts with the tenant's token.
#[derive(Clone)]
struct Api {
    client: reqwest::Client,
    token: String,
}

impl Api {
    async fn get(&self, url: String) -> (u16, Value) {
        let r = self
            .client
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .expect("get");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn post(&self, url: String, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("post");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn create(&self, host: &Host, body: Value) -> String {
        let (status, v) = self.post(format!("{}/tasks", host.base()), body).await;
        assert_eq!(status, 201, "{v}");
        // In the work queue until a host takes it: never "interrupted".
        assert_eq!(v["interrupted"], false, "{v}");
        v["id"].as_str().expect("id").to_owned()
    }

    async fn events(&self, host: &Host, id: &str, last: Option<i64>) -> reqwest::Response {
        let mut req = self
            .client
            .get(format!("{}/tasks/{id}/events", host.base()))
            .bearer_auth(&self.token);
        if let Some(n) = last {
            req = req.header("last-event-id", n.to_string());
        }
        req.send().await.expect("events")
    }

    /// Answer task `id`'s first open question through `host` with
    /// `decision`, once it is asked (a 409 while no host runs the task yet
    /// is tried again).
    async fn answer(&self, host: &Host, id: &str, decision: &str) {
        for _ in 0..1200 {
            let (_, asks) = self.get(format!("{}/tasks/{id}/asks", host.base())).await;
            if let Some(ask_id) = asks
                .as_array()
                .and_then(|a| a.first())
                .and_then(|a| a["ask_id"].as_str())
            {
                let (status, v) = self
                    .post(
                        format!("{}/tasks/{id}/asks/{ask_id}", host.base()),
                        json!({ "decision": decision }),
                    )
                    .await;
                match status {
                    200 => return,
                    409 => {}
                    other => panic!("answer {id}: {other} {v}"),
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("task {id} never asked");
    }

    /// Accept every question task `id` asks through `host` until it has
    /// completed.
    async fn complete(&self, host: &Host, id: &str) {
        for _ in 0..1200 {
            let (_, t) = self.get(format!("{}/tasks/{id}", host.base())).await;
            if t["status"] == "completed" {
                return;
            }
            let (_, asks) = self.get(format!("{}/tasks/{id}/asks", host.base())).await;
            if let Some(ask_id) = asks
                .as_array()
                .and_then(|a| a.first())
                .and_then(|a| a["ask_id"].as_str())
            {
                let (status, v) = self
                    .post(
                        format!("{}/tasks/{id}/asks/{ask_id}", host.base()),
                        json!({ "decision": "accept" }),
                    )
                    .await;
                assert!(status == 200 || status == 409, "answer {id}: {status} {v}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.wait_status(host, id, "completed").await;
    }

    /// Wait until task `id` has `status`.
    async fn wait_status(&self, host: &Host, id: &str, status: &str) -> Value {
        let mut last = Value::Null;
        for _ in 0..1200 {
            let (_, t) = self.get(format!("{}/tasks/{id}", host.base())).await;
            if t["status"] == status {
                return t;
            }
            if t["status"] == "failed" {
                let mut r = self.events(host, id, None).await;
                let mut buf = String::new();
                let all = read_events(&mut r, &mut buf, |e| e.data["event"] == "failed").await;
                let why: Vec<&Value> = all
                    .iter()
                    .map(|e| &e.data)
                    .filter(|d| d["event"] == "failed")
                    .collect();
                panic!("task {id} failed: {why:?}");
            }
            last = t;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("task {id} never became {status}: {last}");
    }
}

/// A fresh database on the shared test server, migrated with `roost store
/// migrate`, and a tenant whose token both hosts know.
fn setup(dir: &Path) -> (String, PathBuf, String) {
    let url = roost_testpg::shared()
        .and_then(|pg| pg.fresh_database())
        .unwrap_or_else(|e| panic!("{e}"));
    let admin = dir.join("admin");
    let o = roost(&admin)
        .args(["--store", &url, "store", "migrate"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("schema 0 → 8"), "{}", text(&o));
    let o = roost(&admin)
        .args(["--store", &url, "store", "migrate"])
        .output()
        .expect("runs");
    assert!(text(&o).contains("up to date"), "{}", text(&o));
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("ws")).expect("root");
    let o = roost(&admin)
        .args([
            "--store", &url, "token", "create", "--tenant", "ada", "--root",
        ])
        .arg(&root)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let token = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    (url, root, token)
}

fn write_script(dir: &Path, turns: Value) -> PathBuf {
    let script = dir.join("script.json");
    std::fs::write(&script, json!({"model": "m", "turns": turns}).to_string()).expect("script");
    script
}

fn done(result: &str) -> Value {
    json!({"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": result}}]})
}

/// Read task `id`'s events through `host` until `stop`, reconnecting with
/// `Last-Event-ID` whenever a stream ends (the task ran nowhere yet, or a
/// deliberate drop): every position is seen once, in order.
async fn follow(
    api: &Api,
    host: &Host,
    id: &str,
    seqs: &mut Vec<i64>,
    stop: impl Fn(&Sse) -> bool,
) {
    for _ in 0..1200 {
        let mut r = api.events(host, id, seqs.last().copied()).await;
        let mut buf = String::new();
        let got = read_events(&mut r, &mut buf, &stop).await;
        let hit = got.iter().any(&stop);
        seqs.extend(got.iter().filter_map(|e| e.id));
        if hit {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id}: the awaited event never came");
}

/// Fifty tasks created through host A run on both hosts; each question is
/// answered through host B, whichever host asked it; B's event streams
/// follow every task, reconnecting with `Last-Event-ID`, and see each
/// position exactly once, in order, as the store has them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_share_one_postgres() {
    roost_testpg::skip_without_postgres!();
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, root, token) = setup(dir.path());
    let script = write_script(dir.path(), json!([done("ok")]));
    let a = start_host(dir.path(), "a", &url, &root, &script, 4).await;
    let b = start_host(dir.path(), "b", &url, &root, &script, 4).await;
    let api = Api {
        client: reqwest::Client::new(),
        token,
    };
    // Host B takes the token created on neither host: the store is shared.
    let (status, _) = api.get(format!("{}/tasks", b.base())).await;
    assert_eq!(status, 200);

    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(
            api.create(
                &a,
                json!({"prompt": format!("task {i}"), "workspace": "ws"}),
            )
            .await,
        );
    }
    for id in &ids {
        let mut seqs = Vec::new();
        follow(&api, &b, id, &mut seqs, is_ask).await;
        api.answer(&b, id, "accept").await;
        follow(&api, &b, id, &mut seqs, |e| e.data["event"] == "completed").await;
        let want: Vec<i64> = (1..=i64::try_from(seqs.len()).expect("len")).collect();
        assert_eq!(seqs, want, "task {id}: positions seen through host B");
        // The log as host A reads it holds the same positions.
        let mut r = api.events(&a, id, None).await;
        let mut buf = String::new();
        let all = read_events(&mut r, &mut buf, |e| e.data["event"] == "completed").await;
        let from_a: Vec<i64> = all.iter().filter_map(|e| e.id).collect();
        assert_eq!(from_a, seqs, "task {id}");
        api.wait_status(&a, id, "completed").await;
    }
    let (ta, tb) = (a.taken(), b.taken());
    assert!(ta > 0 && tb > 0, "both hosts ran tasks: a {ta}, b {tb}");
    assert_eq!(ta + tb, 50, "each task was taken once: a {ta}, b {tb}");
}

/// Host A is killed with SIGKILL at a random point of its tasks' work, ten
/// times; host B resumes each of A's tasks once A's lease has run out.
/// Every task completes with a history whose calls are all answered, and
/// none was run twice (one reply per turn of the transcript at most).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_host_loses_no_task() {
    roost_testpg::skip_without_postgres!();
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, root, token) = setup(dir.path());
    let turns = json!([
        {"text": "Looking.", "tool_calls": [{"name": "list_files", "args": {"path": "."}}]},
        {"text": "Writing.", "tool_calls": [{"name": "write_to_file", "args": {"path": "out.txt", "content": "hi\n"}}]},
        {"text": "Looking again.", "tool_calls": [{"name": "list_files", "args": {"path": "."}}]},
        // A completion cut off by the kill is answered "interrupted" on
        // resume, and the model tries again.
        done("written"),
        done("written"),
        done("written")
    ]);
    let script = write_script(dir.path(), turns);
    let b = start_host(dir.path(), "b", &url, &root, &script, 8).await;
    let api = Api {
        client: reqwest::Client::new(),
        token,
    };
    let mut all = Vec::new();
    let mut on_a = 0;
    for round in 0..10 {
        let mut a = start_host(dir.path(), &format!("a{round}"), &url, &root, &script, 8).await;
        let mut ids = Vec::new();
        for i in 0..3 {
            std::fs::create_dir_all(root.join(format!("ws{round}-{i}"))).expect("ws");
            ids.push(
                api.create(
                    &a,
                    json!({"prompt": "go", "workspace": format!("ws{round}-{i}"), "approve": ["read", "edit"]}),
                )
                .await,
            );
        }
        // A random point of the work: up to 400 ms in.
        let wait = u64::from(uuid_byte()) * 400 / 255;
        tokio::time::sleep(Duration::from_millis(wait)).await;
        a.kill();
        on_a += a.taken();
        for id in &ids {
            api.complete(&b, id).await;
        }
        all.extend(ids);
    }
    assert!(on_a > 0, "host A never had a task when it was killed");
    let store = Store::open_at(&StoreLocation::Postgres(url)).expect("store");
    for id in &all {
        assert_ran_once(&store, id, 6);
    }
}

/// Task `id` completed with every call answered exactly once (none ran
/// twice) and at most `turns` replies of the model.
fn assert_ran_once(store: &Store, id: &str, turns: usize) {
    let history = store.load_api(id, true).expect("history");
    assert!(
        store.dangling_tool_uses(id).expect("calls").is_empty(),
        "task {id}: a call without its result"
    );
    let replies = history
        .iter()
        .filter(|m| m.message.role == roost_core::llm::Role::Assistant)
        .count();
    assert!(
        replies <= turns,
        "task {id}: {replies} replies for {turns} turns"
    );
    let mut results: Vec<String> = history
        .iter()
        .flat_map(|m| m.message.content.iter())
        .filter_map(|b| match b {
            roost_core::llm::ContentBlock::ToolResult { tool_use_id, .. } => {
                Some(tool_use_id.clone())
            }
            _ => None,
        })
        .collect();
    let n = results.len();
    results.sort();
    results.dedup();
    assert_eq!(results.len(), n, "task {id}: a call answered twice");
    assert_eq!(
        store.get_task(id).expect("task").status,
        roost_core::store::TaskStatus::Completed
    );
}

/// Send `signal` (`-STOP`, `-CONT`, `-TERM`) to `host`'s process.
fn signal(host: &Host, signal: &str) {
    let pid = host.child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill")
            .success()
    );
}

/// A host paused in the middle of a task (a stalled VM, a stopped
/// process) outlives its lease: host B takes the task over and runs it.
/// When A wakes up it goes on where it was, but nothing it writes to the
/// task lands (its claim is B's now): it lets the task go, and the task's
/// history is B's alone, each turn once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_host_cannot_write_to_a_task_taken_over() {
    roost_testpg::skip_without_postgres!();
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, root, token) = setup(dir.path());
    let turns = json!([
        {"text": "Looking.", "delay_ms": 1500,
         "tool_calls": [{"name": "list_files", "args": {"path": "."}}]},
        done("listed")
    ]);
    let script = write_script(dir.path(), turns);
    let a = start_host(dir.path(), "a", &url, &root, &script, 4).await;
    let api = Api {
        client: reqwest::Client::new(),
        token,
    };
    let id = api
        .create(
            &a,
            json!({"prompt": "go", "workspace": "ws", "approve": ["read"]}),
        )
        .await;
    a.wait_taken(1).await;
    assert_eq!(a.taken(), 1, "host a took the task");
    // A is paused while its model call is under way.
    signal(&a, "-STOP");
    let b = start_host(dir.path(), "b", &url, &root, &script, 4).await;
    b.wait_taken(1).await;
    assert_eq!(b.taken(), 1, "host b took the task over after a's lease");
    signal(&a, "-CONT");
    let gave_up = "another process or host runs the task now";
    for _ in 0..1200 {
        if std::fs::read_to_string(&a.log)
            .unwrap_or_default()
            .contains(gave_up)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = std::fs::read_to_string(&a.log).unwrap_or_default();
    assert!(log.contains(gave_up), "host a let the task go: {log}");
    assert!(!log.contains("could not go on"), "{log}");
    api.complete(&b, &id).await;
    let store = Store::open_at(&StoreLocation::Postgres(url)).expect("store");
    assert_ran_once(&store, &id, 2);
    // Host a is still serving, and reads the task as b left it.
    let t = api.wait_status(&a, &id, "completed").await;
    assert_eq!(t["status"], "completed");
}

/// A byte of randomness from the OS.
fn uuid_byte() -> u8 {
    use std::io::Read;
    let mut b = [0u8; 1];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .expect("random");
    b[0]
}

/// The database stops under load and starts again: `/v1/ready` says 503
/// meanwhile and so, at once, does a request that needs the store; the
/// tasks pause (their steps wait for the database) and then go on; none
/// fails, none loses a step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_restarted_under_load_pauses_tasks() {
    roost_testpg::skip_without_postgres!();
    let dir = tempfile::tempdir().expect("tempdir");
    let pg = roost_testpg::Postgres::start().unwrap_or_else(|e| panic!("{e}"));
    let url = pg.fresh_database().unwrap_or_else(|e| panic!("{e}"));
    let admin = dir.path().join("admin");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("root");
    let o = roost(&admin)
        .args([
            "--store", &url, "token", "create", "--tenant", "ada", "--root",
        ])
        .arg(&root)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let token = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let mut turns = Vec::new();
    for n in 0..6 {
        turns.push(json!({"text": "Reading.", "tool_calls": [{"name": "read_file", "args": {"path": format!("f{n}.txt")}}]}));
    }
    turns.push(done("looked"));
    let script = write_script(dir.path(), Value::Array(turns));
    let a = start_host(dir.path(), "a", &url, &root, &script, 8).await;
    let api = Api {
        client: reqwest::Client::new(),
        token,
    };
    let (status, _) = api.get(format!("{}/ready", a.base())).await;
    assert_eq!(status, 200);
    let mut ids = Vec::new();
    for i in 0..8 {
        std::fs::create_dir_all(root.join(format!("w{i}"))).expect("ws");
        for n in 0..6 {
            std::fs::write(root.join(format!("w{i}/f{n}.txt")), format!("{n}\n")).expect("file");
        }
        ids.push(
            api.create(
                &a,
                json!({"prompt": "look", "workspace": format!("w{i}"), "approve": ["read"]}),
            )
            .await,
        );
    }
    // Under load: tasks are between their steps when the database stops.
    let watch = Store::open_at(&StoreLocation::Postgres(url.clone())).expect("store");
    let replies = |id: &str| {
        watch
            .load_api(id, true)
            .map(|h| {
                h.iter()
                    .filter(|m| m.message.role == roost_core::llm::Role::Assistant)
                    .count()
            })
            .unwrap_or(0)
    };
    for _ in 0..1200 {
        if ids.iter().any(|id| replies(id) >= 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        ids.iter().any(|id| replies(id) < 7),
        "some task was still at work"
    );
    drop(watch);
    pg.stop().unwrap_or_else(|e| panic!("{e}"));
    // Readiness needs no token (a load balancer asks it).
    let ready = || async {
        let r = reqwest::get(format!("{}/ready", a.base()))
            .await
            .expect("ready");
        let status = r.status().as_u16();
        let v: Value =
            serde_json::from_str(&r.text().await.unwrap_or_default()).unwrap_or(Value::Null);
        (status, v)
    };
    let (status, v) = ready().await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["code"], "storage", "{v}");
    // A request that needs the store is answered at once meanwhile (the
    // database is still down when the answer comes), not held for the
    // outage: retry later, or at another host.
    let r = api
        .client
        .get(format!("{}/tasks", a.base()))
        .bearer_auth(&api.token)
        .send()
        .await
        .expect("answered");
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let v: Value = serde_json::from_str(&r.text().await.unwrap_or_default()).unwrap_or(Value::Null);
    assert_eq!(v["code"], "storage", "{v}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    pg.restart().unwrap_or_else(|e| panic!("{e}"));
    let (status, _) = ready().await;
    assert_eq!(status, 200);
    // And once it is back, so are they.
    let (status, v) = api.get(format!("{}/tasks", a.base())).await;
    assert_eq!(status, 200, "{v}");
    for id in &ids {
        api.complete(&a, id).await;
    }
    let store = Store::open_at(&StoreLocation::Postgres(url)).expect("store");
    for id in &ids {
        assert!(store.dangling_tool_uses(id).expect("calls").is_empty());
        let results = store
            .load_api(id, true)
            .expect("history")
            .iter()
            .filter(|m| m.message.role == roost_core::llm::Role::Assistant)
            .count();
        assert_eq!(results, 7, "task {id}: every turn once");
    }
    let log = std::fs::read_to_string(&a.log).unwrap_or_default();
    assert!(!log.contains("could not go on"), "{log}");
}

/// A host stopped with SIGTERM hands its tasks over at once: with a lease
/// of ten minutes, the other host still resumes the task it left waiting
/// for an answer, and the task completes there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_host_hands_its_tasks_over_at_once() {
    roost_testpg::skip_without_postgres!();
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, root, token) = setup(dir.path());
    let script = write_script(dir.path(), json!([done("ok")]));
    let a = start_host_with(dir.path(), "a", &url, &root, &script, 4, "10m").await;
    let api = Api {
        client: reqwest::Client::new(),
        token,
    };
    let id = api
        .create(&a, json!({"prompt": "go", "workspace": "ws"}))
        .await;
    let mut seqs = Vec::new();
    follow(&api, &a, &id, &mut seqs, is_ask).await;
    assert_eq!(a.taken(), 1);
    let b = start_host_with(dir.path(), "b", &url, &root, &script, 4, "10m").await;
    signal(&a, "-TERM");
    let mut a = a;
    let status = tokio::task::spawn_blocking(move || {
        let s = a.child.wait().expect("exits");
        (s, a)
    })
    .await
    .expect("join");
    assert!(status.0.success(), "{:?}", status.0);
    api.complete(&b, &id).await;
    assert_eq!(b.taken(), 1, "host b resumed it");
}

/// Host `a` running a task of the scripted `turns` that waits on its
/// first question, and host `b` started beside it on the same database;
/// the task's id and the event positions read so far.
async fn asking_on_a_with_b_beside(
    dir: &Path,
    turns: Value,
) -> (Api, Host, Host, String, Vec<i64>) {
    let (url, root, token) = setup(dir);
    let script = write_script(dir, turns);
    let a = start_host(dir, "a", &url, &root, &script, 4).await;
    let api = Api {
        client: reqwest::Client::new(),
        token,
    };
    let id = api
        .create(&a, json!({"prompt": "go", "workspace": "ws"}))
        .await;
    let mut seqs = Vec::new();
    follow(&api, &a, &id, &mut seqs, is_ask).await;
    let b = start_host(dir, "b", &url, &root, &script, 4).await;
    (api, a, b, id, seqs)
}

/// A cancel sent to the host that does not run the task reaches the one
/// that does: the task stops there, aborted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_through_another_host_stops_the_task() {
    roost_testpg::skip_without_postgres!();
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, a, b, id, mut seqs) =
        asking_on_a_with_b_beside(dir.path(), json!([done("ok")])).await;
    let (status, v) = api
        .post(format!("{}/tasks/{id}/cancel", b.base()), json!({}))
        .await;
    assert_eq!(status, 202, "{v}");
    follow(&api, &b, &id, &mut seqs, |e| e.data["event"] == "aborted").await;
    let t = api.wait_status(&a, &id, "aborted").await;
    assert_eq!(t["status"], "aborted");
    assert_eq!((a.taken(), b.taken()), (1, 0), "it ran on a only");
}

/// A message sent to the host that does not run the task reaches the one
/// that does, before the answer sent after it: the task's next turn, on
/// the host that runs it, has it in its conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_through_another_host_reaches_the_next_turn() {
    roost_testpg::skip_without_postgres!();
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, a, b, id, _) =
        asking_on_a_with_b_beside(dir.path(), json!([done("first"), done("second")])).await;
    let (status, v) = api
        .post(
            format!("{}/tasks/{id}/messages", b.base()),
            json!({"text": "also check b.txt"}),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    // Feedback on the first result: the task takes another turn.
    let (_, asks) = api.get(format!("{}/tasks/{id}/asks", b.base())).await;
    let ask_id = asks[0]["ask_id"].as_str().expect("the completion's ask");
    let (status, v) = api
        .post(
            format!("{}/tasks/{id}/asks/{ask_id}", b.base()),
            json!({"decision": "answer", "text": "not yet"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    api.complete(&b, &id).await;
    let (_, ui) = api.get(format!("{}/tasks/{id}/messages", b.base())).await;
    let rows = ui.as_array().expect("rows");
    let at = |subtype: &str, text: &str| {
        rows.iter()
            .position(|r| r["subtype"] == subtype && r["text"] == text)
            .unwrap_or_else(|| panic!("no {subtype} row {text:?}: {ui}"))
    };
    assert!(
        at("user_feedback", "not yet") < at("user_message", "also check b.txt"),
        "{ui}"
    );
    let (_, history) = api
        .get(format!("{}/tasks/{id}/api-messages", b.base()))
        .await;
    assert!(
        history.to_string().contains("also check b.txt"),
        "the model never saw it: {history}"
    );
    assert_eq!((a.taken(), b.taken()), (1, 0), "it ran on a only");
}
