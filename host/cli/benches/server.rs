//! `roost serve` under load (issue 28; see BENCHMARKS.md).
//!
//! P15: 200 tasks at once, created over HTTP, each followed by its own SSE
//!     client that accepts its completion when asked. The model is the
//!     scripted provider (100 ms a turn, four turns: list, read, write,
//!     complete) behind a server built the way `roost serve` builds it,
//!     in this process. Measured: the time from an event's commit (the
//!     store's trace `roost::store::commit`, right after the transaction
//!     commits) to its arrival at the client, p50/p99 over every event
//!     the clients got live; and this process's peak RSS (server, 200
//!     clients and the scripted model together: an upper bound on the
//!     server's own).
//! P16: authenticated `GET /v1/tasks/{id}` requests per second against
//!     the release `roost serve` (a process of its own, SQLite store), 16
//!     keep-alive connections from one client thread for 10 s; and the
//!     same client against `opencode serve` (npm `opencode-ai`, password
//!     auth on) reading one of its sessions, in the same run. The
//!     opencode binary is `$ROOST_BENCH_OPENCODE`, else
//!     `target/opencode-bench/node_modules/.bin/opencode`
//!     (`scripts/bench-server.sh` installs it there); without it P16 runs
//!     for Roost alone.
//!
//!     With `ROOST_BENCH_STORE=postgres` the server keeps its tasks in a
//!     PostgreSQL started for the run (Debian's `postgresql`): each GET is
//!     then a round trip that blocks its runtime worker.
//!
//! P30: the same server and load on two more of a front-end's reads of
//!     that task: its open questions and its subtasks' (`GET
//!     /v1/tasks/{id}/asks?tree=true`) and its event log replayed (`GET
//!     /v1/tasks/{id}/events`, an SSE stream that ends with the log, the
//!     task having ended).
//!
//! Run: `scripts/bench-server.sh` (= `cargo bench -p roost --bench server`
//! after installing opencode). `-- p15`, `-- p16` or `-- p30` runs one of
//! them.

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use roost_core::config::Config;
use roost_core::engine::{ConfigEndpoints, EngineBuilder};
use roost_server::{ServerConfig, ServerState};
use serde_json::{Value, json};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

const ROOST: &str = env!("CARGO_BIN_EXE_roost");
const TASKS: usize = 200;
const CONNECTIONS: usize = 16;
const LOAD_FOR: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------- P15

/// When each `(task, seq)` was committed (the store's trace) and
/// published (the event bus's), by task and position.
#[derive(Default, Clone)]
struct Commits {
    committed: Arc<Mutex<HashMap<(String, i64), Instant>>>,
    published: Arc<Mutex<HashMap<(String, i64), Instant>>>,
}

#[derive(Default)]
struct TraceFields {
    task: String,
    first: i64,
    last: i64,
}

impl tracing::field::Visit for TraceFields {
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        match field.name() {
            "first" | "seq" => self.first = value,
            "last" => self.last = value,
            _ => {}
        }
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "task" {
            value.clone_into(&mut self.task);
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "task" {
            self.task = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Commits {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let at = Instant::now();
        let map = match event.metadata().target() {
            "roost::store::commit" => &self.committed,
            "roost::events::publish" => &self.published,
            _ => return,
        };
        let mut f = TraceFields::default();
        event.record(&mut f);
        let last = f.last.max(f.first);
        let mut map = map.lock().unwrap();
        for seq in f.first..=last {
            map.insert((f.task.clone(), seq), at);
        }
    }
}

/// Peak and current resident set of this process, KiB.
fn rss_kib(pid: Option<u32>) -> (u64, u64) {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(path).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// A config whose profiles replay these scripts (the first is the
/// default).
fn write_config(dir: &Path, profiles: &[(String, Value)]) -> PathBuf {
    let mut toml = format!("default_profile = \"{}\"\n", profiles[0].0);
    for (name, turns) in profiles {
        let script = dir.join(format!("{name}.json"));
        std::fs::write(&script, json!({"model": "m", "turns": turns}).to_string()).unwrap();
        toml.push_str(&format!(
            "[profiles.{name}]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display()
        ));
    }
    let config = dir.join("config.toml");
    std::fs::write(&config, toml).unwrap();
    config
}

/// One task's model: four turns (list, read, write, complete), each
/// answered after its delay.
fn workload(delays: [u64; 4]) -> Value {
    let turn = |delay: u64, text: &str, name: &str, args: Value| {
        json!({"text": text, "chunk_size": 8, "delay_ms": delay,
            "tool_calls": [{"name": name, "args": args}]})
    };
    json!([
        turn(
            delays[0],
            "Let me look around the workspace.",
            "list_files",
            json!({"path": "."})
        ),
        turn(
            delays[1],
            "Reading the notes.",
            "read_file",
            json!({"path": "notes.txt"})
        ),
        turn(
            delays[2],
            "Writing the answer.",
            "write_to_file",
            json!({"path": "out.txt", "content": "answer\n"})
        ),
        turn(
            delays[3],
            "All done.",
            "attempt_completion",
            json!({"result": "Wrote out.txt."})
        ),
    ])
}

/// Send a JSON request; the status and the body.
async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client
        .request(method, url)
        .header("authorization", format!("Bearer {token}"));
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Follow one task's events until it completes, accepting its completion;
/// each recorded event's arrival time.
async fn follow(client: reqwest::Client, base: String, token: String, id: String) -> Follow {
    let mut r = client
        .get(format!("{base}/v1/tasks/{id}/events"))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let connected = Instant::now();
    let mut arrived = Vec::new();
    let mut buf = String::new();
    while let Some(chunk) = r.chunk().await.unwrap() {
        let at = Instant::now();
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let mut seq = None;
            let mut data = String::new();
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    seq = v.trim().parse::<i64>().ok();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if data.is_empty() {
                continue;
            }
            let event: Value = serde_json::from_str(&data).unwrap();
            if let Some(seq) = seq {
                arrived.push((seq, at));
            }
            match event["event"].as_str() {
                Some("ask_required") => {
                    let ask = event["ask_id"].as_str().unwrap();
                    let (status, body) = call(
                        &client,
                        reqwest::Method::POST,
                        &format!("{base}/v1/tasks/{id}/asks/{ask}"),
                        &token,
                        Some(json!({"decision": "accept"})),
                    )
                    .await;
                    assert_eq!(status, 200, "the answered ask: {body}");
                }
                Some("completed") => {
                    return Follow {
                        id,
                        connected,
                        arrived,
                    };
                }
                _ => {}
            }
        }
    }
    panic!("task {id}: the event stream ended before the task completed");
}

struct Follow {
    id: String,
    connected: Instant,
    arrived: Vec<(i64, Instant)>,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn p15() {
    let commits = Commits::default();
    let subscriber = tracing_subscriber::registry().with(
        commits.clone().with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target("roost::store::commit", tracing::Level::TRACE)
                .with_target("roost::events::publish", tracing::Level::TRACE),
        ),
    );
    tracing::subscriber::set_global_default(subscriber).unwrap();
    // Models answer in 0.25–1.96 s a turn, ten different paces (what 200
    // tasks on real models look like)…
    let paced: Vec<(String, Value)> = (0..10u64)
        .map(|k| {
            let d = |t: u64| 250 + ((k * 7 + t * 13) % 20) * 90;
            (format!("p{k}"), workload([d(0), d(1), d(2), d(3)]))
        })
        .collect();
    p15_run(&commits, "models answering in 0.25–1.96 s a turn", &paced);
    // …and all of them in 100 ms, in step: every task's turn lands in the
    // same instant, two cores saturated.
    p15_run(
        &commits,
        "every model answering in 100 ms, all in step (saturation)",
        &[("burst".to_owned(), workload([100; 4]))],
    );
}

/// One P15 run: `TASKS` tasks spread over `profiles`.
fn p15_run(commits: &Commits, name: &str, profiles: &[(String, Value)]) {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), profiles);
    let cfg: Config = roost_core::config::load(Some(&config)).unwrap();
    let root = dir.path().join("root");
    for i in 0..TASKS {
        let ws = root.join(format!("w{i}"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("notes.txt"), "Some notes.\n").unwrap();
    }
    // The server as `roost serve` runs it (two workers); the clients on a
    // runtime of their own, as if in another process.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (state, token, base) = rt.block_on(async {
        let data = dir.path().join("data");
        let engine = EngineBuilder::from_config(&data, &cfg)
            .endpoints(Arc::new(ConfigEndpoints::new(cfg.clone(), None)))
            .build()
            .unwrap();
        let state = ServerState::new(
            engine,
            ServerConfig {
                max_running: TASKS,
                max_queued: TASKS,
                requests_per_second: 100_000.try_into().unwrap(),
                burst: 100_000.try_into().unwrap(),
                ..ServerConfig::default()
            },
        );
        let token = state
            .engine
            .tokens()
            .create("bench", &root, None)
            .unwrap()
            .token;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(roost_server::serve(
            listener,
            Arc::clone(&state),
            std::future::pending(),
        ));
        (state, token, base)
    });
    let (_, before) = rss_kib(None);
    let started = Instant::now();
    let follows = clients.block_on(async {
        let client = reqwest::Client::new();
        let mut followers = Vec::new();
        for i in 0..TASKS {
            let (status, task) = call(
                &client,
                reqwest::Method::POST,
                &format!("{base}/v1/tasks"),
                &token,
                Some(
                    json!({"prompt": "Answer in out.txt.", "workspace": format!("w{i}"),
                    "approve": ["read", "edit"],
                    "profile": profiles[i % profiles.len()].0}),
                ),
            )
            .await;
            assert_eq!(status, 201, "{task}");
            let id = task["id"].as_str().unwrap().to_owned();
            followers.push(tokio::spawn(follow(
                client.clone(),
                base.clone(),
                token.clone(),
                id,
            )));
        }
        let mut follows = Vec::new();
        for f in followers {
            follows.push(f.await.unwrap());
        }
        follows
    });
    let wall = started.elapsed();
    let (peak, _) = rss_kib(None);
    drop(state);
    let committed = commits.committed.lock().unwrap();
    let published = commits.published.lock().unwrap();
    let (mut total, mut to_publish, mut to_client) = (Vec::new(), Vec::new(), Vec::new());
    let mut replayed = 0usize;
    for f in &follows {
        for (seq, at) in &f.arrived {
            let key = (f.id.clone(), *seq);
            let c = committed.get(&key).unwrap_or_else(|| {
                let mut traced: Vec<i64> = committed
                    .keys()
                    .filter(|(t, _)| *t == f.id)
                    .map(|(_, s)| *s)
                    .collect();
                traced.sort_unstable();
                panic!(
                    "task {} event {seq}: no commit traced (its traced positions: {traced:?})",
                    f.id
                )
            });
            let p = published.get(&key).unwrap_or(c);
            if *c < f.connected {
                // Committed before the client connected: read back from
                // the store, not delivered live.
                replayed += 1;
                continue;
            }
            total.push(at.saturating_duration_since(*c));
            to_publish.push(p.saturating_duration_since(*c));
            to_client.push(at.saturating_duration_since(*p));
        }
    }
    for v in [&mut total, &mut to_publish, &mut to_client] {
        v.sort();
    }
    println!("## P15: {TASKS} tasks at once over HTTP, one SSE client each; {name}");
    println!();
    println!(
        "{} tasks completed in {:.2} s; {} events delivered live ({} replayed from the store, not counted)",
        follows.len(),
        wall.as_secs_f64(),
        total.len(),
        replayed
    );
    println!();
    println!("| span | p50 | p90 | p99 | max |");
    println!("|---|---|---|---|---|");
    for (name, v) in [
        ("commit → delivery to the client", &total),
        ("commit → published on the task's bus", &to_publish),
        ("published → delivery to the client", &to_client),
    ] {
        println!(
            "| {name} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms |",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.9)),
            ms(percentile(v, 0.99)),
            ms(*v.last().unwrap())
        );
    }
    println!();
    println!(
        "RSS with the engine and server up: {:.1} MiB; peak RSS (server, clients and model): {:.1} MiB",
        before as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    println!();
}

// ---------------------------------------------------------------- P16

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Wait until `addr` answers `path` (any status).
fn wait_until_up(child: &mut Child, addr: SocketAddr, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the server exited at start: {status}");
        }
        if let Ok(mut s) = std::net::TcpStream::connect(addr) {
            use std::io::{Read, Write};
            let _ = write!(
                s,
                "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            );
            // Some servers keep the connection open anyway: the status
            // line is enough.
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut head = [0u8; 8];
            if s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") {
                return;
            }
        }
        assert!(Instant::now() < deadline, "the server did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the load gave: requests answered 200, and per-request latency.
struct Load {
    ok: u64,
    failed: u64,
    latencies: Vec<Duration>,
    elapsed: Duration,
}

/// `GET path` with `authorization` over `CONNECTIONS` keep-alive
/// connections from one client thread, for `LOAD_FOR`.
fn hammer(addr: SocketAddr, path: &str, authorization: &str) -> Load {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Warm up (connections, caches) for a second, then measure.
        let _ = run_load(addr, path, authorization, Duration::from_secs(1)).await;
        run_load(addr, path, authorization, LOAD_FOR).await
    })
}

async fn run_load(addr: SocketAddr, path: &str, authorization: &str, time: Duration) -> Load {
    let started = Instant::now();
    let deadline = started + time;
    let mut workers = Vec::new();
    for _ in 0..CONNECTIONS {
        let path = path.to_owned();
        let authorization = authorization.to_owned();
        workers.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut send, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(conn);
            let (mut ok, mut failed) = (0u64, 0u64);
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let req = hyper::Request::get(&path)
                    .header("host", addr.to_string())
                    .header("authorization", &authorization)
                    .body(Empty::<Bytes>::new())
                    .unwrap();
                let t = Instant::now();
                send.ready().await.unwrap();
                let res = send.send_request(req).await.unwrap();
                let status = res.status();
                let body = res.into_body().collect().await.unwrap().to_bytes();
                latencies.push(t.elapsed());
                if status == 200 && !body.is_empty() {
                    ok += 1;
                } else {
                    failed += 1;
                }
            }
            (ok, failed, latencies)
        }));
    }
    let mut load = Load {
        ok: 0,
        failed: 0,
        latencies: Vec::new(),
        elapsed: Duration::ZERO,
    };
    for w in workers {
        let (ok, failed, lat) = w.await.unwrap();
        load.ok += ok;
        load.failed += failed;
        load.latencies.extend(lat);
    }
    load.elapsed = started.elapsed();
    load.latencies.sort();
    load
}

fn report(name: &str, load: &Load) -> f64 {
    let rps = load.ok as f64 / load.elapsed.as_secs_f64();
    println!(
        "| {name} | {rps:.0} | {:.2} ms | {:.2} ms | {} |",
        percentile(&load.latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&load.latencies, 0.99).as_secs_f64() * 1e3,
        load.failed
    );
    rps
}

/// The roost serve process, with one completed task; its address, the
/// task's id and a token.
struct RoostServer {
    child: Child,
    addr: SocketAddr,
    token: String,
    task: String,
    _dir: tempfile::TempDir,
}

impl Drop for RoostServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether P16's server keeps its tasks in PostgreSQL
/// (`ROOST_BENCH_STORE=postgres`) rather than its data directory's SQLite
/// file.
fn on_postgres() -> bool {
    std::env::var("ROOST_BENCH_STORE").as_deref() == Ok("postgres")
}

/// `--store`'s value for P16's server: a fresh database of a PostgreSQL
/// started for the run, when [`on_postgres`].
fn bench_store() -> Option<String> {
    on_postgres().then(|| {
        let pg = roost_testpg::shared().expect("a PostgreSQL for the bench");
        pg.fresh_database().expect("database")
    })
}

fn roost_server() -> RoostServer {
    let dir = tempfile::tempdir().unwrap();
    let store = bench_store();
    let with_store = |c: &mut Command| {
        if let Some(url) = &store {
            c.args(["--store", url]);
        }
    };
    let config = write_config(
        dir.path(),
        &[(
            "replay".to_owned(),
            json!([{"text": "Done.", "tool_calls": [{"name": "attempt_completion", "args": {"result": "Done."}}]}]),
        )],
    );
    let data = dir.path().join("data");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let mut create = Command::new(ROOST);
    with_store(&mut create);
    let out = create
        .arg("--data-dir")
        .arg(&data)
        .args(["token", "create", "--tenant", "bench", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut serve = Command::new(ROOST);
    with_store(&mut serve);
    let mut child = serve
        .arg("--data-dir")
        .arg(&data)
        .args(["serve", "--listen", &addr.to_string(), "--config"])
        .arg(&config)
        .args(["--requests-per-second", "1000000", "--burst", "1000000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_up(&mut child, addr, "/v1/health");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let task = rt.block_on(async {
        let client = reqwest::Client::new();
        let base = format!("http://{addr}");
        let (status, task) = call(
            &client,
            reqwest::Method::POST,
            &format!("{base}/v1/tasks"),
            &token,
            Some(json!({"prompt": "Say done.", "workspace": "ws"})),
        )
        .await;
        assert_eq!(status, 201, "{task}");
        let id = task["id"].as_str().unwrap().to_owned();
        // Accept the completion; the task ends `completed`.
        loop {
            let (_, asks) = call(
                &client,
                reqwest::Method::GET,
                &format!("{base}/v1/tasks/{id}/asks"),
                &token,
                None,
            )
            .await;
            if let Some(ask) = asks.as_array().and_then(|a| a.first()) {
                let ask_id = ask["ask_id"].as_str().unwrap();
                let (status, body) = call(
                    &client,
                    reqwest::Method::POST,
                    &format!("{base}/v1/tasks/{id}/asks/{ask_id}"),
                    &token,
                    Some(json!({"decision": "accept"})),
                )
                .await;
                assert_eq!(status, 200, "the answered ask: {body}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        loop {
            let (_, t) = call(
                &client,
                reqwest::Method::GET,
                &format!("{base}/v1/tasks/{id}"),
                &token,
                None,
            )
            .await;
            if t["status"] == "completed" {
                break id;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    RoostServer {
        child,
        addr,
        token,
        task,
        _dir: dir,
    }
}

fn opencode_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ROOST_BENCH_OPENCODE") {
        return Some(PathBuf::from(p));
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/opencode-bench/node_modules/.bin/opencode");
    p.exists().then_some(p)
}

/// `opencode serve` with password auth on, and one session; its
/// address, the session's path and the `authorization` value.
struct OpencodeServer {
    child: Child,
    addr: SocketAddr,
    path: String,
    authorization: String,
    _dir: tempfile::TempDir,
}

impl Drop for OpencodeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn opencode_server(bin: &Path) -> OpencodeServer {
    use base64_like::basic;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut child = Command::new(bin)
        .args(["serve", "--pure", "--port", &port.to_string()])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("OPENCODE_SERVER_PASSWORD", "bench-secret")
        .current_dir(&project)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_up(&mut child, addr, "/session");
    let authorization = basic("opencode", "bench-secret");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let id = rt.block_on(async {
        let r = reqwest::Client::new()
            .post(format!(
                "http://{addr}/session?directory={}",
                project.display()
            ))
            .header("authorization", &authorization)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        v["id"].as_str().unwrap().to_owned()
    });
    OpencodeServer {
        child,
        addr,
        path: format!("/session/{id}"),
        authorization,
        _dir: dir,
    }
}

/// HTTP basic credentials, without a base64 crate for one header.
mod base64_like {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    pub fn basic(user: &str, password: &str) -> String {
        let raw = format!("{user}:{password}");
        let mut out = String::new();
        for chunk in raw.as_bytes().chunks(3) {
            let b = [
                chunk[0],
                chunk.get(1).copied().unwrap_or(0),
                chunk.get(2).copied().unwrap_or(0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        format!("Basic {out}")
    }
}

fn p16() {
    println!(
        "## P16: authenticated GET of one task, {CONNECTIONS} keep-alive connections, {} s",
        LOAD_FOR.as_secs()
    );
    println!();
    println!("| server | requests/s | p50 | p99 | failed |");
    println!("|---|---|---|---|---|");
    let roost = roost_server();
    let load = hammer(
        roost.addr,
        &format!("/v1/tasks/{}", roost.task),
        &format!("Bearer {}", roost.token),
    );
    let store = if on_postgres() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let ours = report(&format!("roost serve (release, {store})"), &load);
    let (peak, rss) = rss_kib(Some(roost.child.id()));
    drop(roost);
    let theirs = opencode_binary().map(|bin| {
        let version = Command::new(&bin)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        let oc = opencode_server(&bin);
        let load = hammer(oc.addr, &oc.path, &oc.authorization);
        report(&format!("opencode serve {version}"), &load)
    });
    println!();
    println!(
        "roost serve RSS after the load: {:.1} MiB (peak {:.1} MiB)",
        rss as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    match theirs {
        Some(t) => println!("Roost / opencode: {:.1}x", ours / t),
        None => println!(
            "opencode not found (set ROOST_BENCH_OPENCODE or run scripts/bench-server.sh): no baseline"
        ),
    }
    println!();
}

fn p30() {
    println!(
        "## P30: a front-end's reads of one task, authenticated GETs, {CONNECTIONS} keep-alive connections, {} s each",
        LOAD_FOR.as_secs()
    );
    println!();
    println!("| request | requests/s | p50 | p99 | failed |");
    println!("|---|---|---|---|---|");
    let roost = roost_server();
    let store = if on_postgres() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let authorization = format!("Bearer {}", roost.token);
    for (what, path) in [
        (
            "open questions, tree",
            format!("/v1/tasks/{}/asks?tree=true", roost.task),
        ),
        (
            "event log replayed",
            format!("/v1/tasks/{}/events", roost.task),
        ),
    ] {
        let load = hammer(roost.addr, &path, &authorization);
        report(&format!("{what} ({store})"), &load);
    }
    println!();
}

fn main() {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wants = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if wants("p16") {
        p16();
    }
    if wants("p15") {
        p15();
    }
    if wants("p30") {
        p30();
    }
}
