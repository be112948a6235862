//! `roost serve` end to end over real HTTP on 127.0.0.1: a task created,
//! followed over SSE, approved by `ask_id` and completed; a dropped SSE
//! connection resumed with `Last-Event-ID` (nothing lost or repeated);
//! twenty tasks at once on different profiles and policies; tenancy and
//! hostile requests.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use roost_core::config::Config;
use roost_core::engine::{ConfigEndpoints, EngineBuilder};
use roost_server::{ServerConfig, ServerState};
use roost_tests::identity::{Identity, NOBODY, chown_tree, identities, runnable_by_anyone};
use serde_json::{Value, json};

/// A running server with a scripted model, and its data.
pub(crate) struct TestServer {
    pub(crate) base: String,
    state: Arc<ServerState>,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

fn done(result: &str) -> Value {
    json!({"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": result}}]})
}

pub(crate) fn write_then_done(path: &str) -> Value {
    json!([
        {"text": "Writing.", "chunk_size": 3, "tool_calls": [{"name": "write_to_file", "args": {"path": path, "content": "hi\n"}}]},
        done("written")
    ])
}

/// A server whose default profile replays `turns` (and profile `quick`
/// replays one completion), with `config`'s settings.
pub(crate) async fn server_with(turns: Value, config: ServerConfig) -> TestServer {
    server_with_script(json!({ "turns": turns }), config).await
}

/// A server whose default profile replays the whole `script` (turns and
/// other transcripts), with `config`'s settings.
pub(crate) async fn server_with_script(script_body: Value, config: ServerConfig) -> TestServer {
    server_with_toml(script_body, "", config).await
}

/// [`server_with_script`] with `extra` appended to the server's config
/// file (`[commands]`, say).
pub(crate) async fn server_with_toml(
    mut script_body: Value,
    extra: &str,
    mut config: ServerConfig,
) -> TestServer {
    script_body["model"] = json!("m");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.json");
    std::fs::write(&script, script_body.to_string()).expect("script");
    let quick = dir.path().join("quick.json");
    std::fs::write(
        &quick,
        json!({"model": "q", "turns": [done("quick")]}).to_string(),
    )
    .expect("script");
    let cfg: Config = toml_config(&format!(
        "default_profile = \"replay\"\n[profiles.replay]\nprovider = \"scripted\"\nscript = \"{}\"\n[profiles.quick]\nprovider = \"scripted\"\nscript = \"{}\"\n{extra}",
        script.display(),
        quick.display()
    ));
    if config.profiles.is_empty() {
        config.profiles = roost_server::profiles_of(&cfg);
    }
    let data = dir.path().join("data");
    let engine = EngineBuilder::from_config(&data, &cfg)
        .endpoints(Arc::new(ConfigEndpoints::new(cfg.clone(), None)))
        .plugin_engine(roost_tests::engine())
        .build()
        .expect("engine");
    let state = ServerState::new(engine, config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(roost_server::serve(
        listener,
        Arc::clone(&state),
        std::future::pending(),
    ));
    TestServer {
        base,
        state,
        dir,
        client: reqwest::Client::new(),
    }
}

fn toml_config(text: &str) -> Config {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).expect("config");
    roost_core::config::load(Some(&path)).expect("config parses")
}

impl TestServer {
    /// A tenant's root (made) and a token for it.
    pub(crate) fn tenant(&self, name: &str) -> (PathBuf, String) {
        let root = self.dir.path().join(format!("root-{name}"));
        std::fs::create_dir_all(root.join("ws")).expect("root");
        let t = self
            .state
            .engine
            .tokens()
            .create(name, &root, None)
            .expect("token");
        (root, t.token)
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&str>,
    ) -> (u16, Value) {
        let mut req = self.client.request(
            method.parse().expect("method"),
            format!("{}{path}", self.base),
        );
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_owned());
        }
        let r = req.send().await.expect("the server answers");
        let status = r.status().as_u16();
        let text = r.text().await.expect("body");
        let v = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {text}"))
        };
        (status, v)
    }

    /// `GET path` as `token`'s tenant.
    pub(crate) async fn get(&self, path: &str, token: &str) -> (u16, Value) {
        self.call("GET", path, Some(token), None).await
    }

    async fn create(&self, token: &str, body: Value) -> String {
        let (status, v) = self
            .call("POST", "/v1/tasks", Some(token), Some(&body.to_string()))
            .await;
        assert_eq!(status, 201, "{v}");
        v["id"].as_str().expect("id").to_owned()
    }

    /// Open `/v1/tasks/{id}/events` (after `last`).
    async fn events(&self, token: &str, id: &str, last: Option<i64>) -> reqwest::Response {
        let mut req = self
            .client
            .get(format!("{}/v1/tasks/{id}/events", self.base))
            .header("authorization", format!("Bearer {token}"));
        if let Some(n) = last {
            req = req.header("last-event-id", n.to_string());
        }
        let r = req.send().await.expect("events");
        assert_eq!(r.status().as_u16(), 200);
        r
    }
}

/// One SSE event: its id (if any) and its JSON.
#[derive(Debug, Clone)]
pub(crate) struct Sse {
    pub(crate) id: Option<i64>,
    pub(crate) data: Value,
}

/// Read SSE events from `r` until `stop` says so (or the stream ends).
pub(crate) async fn read_events(
    r: &mut reqwest::Response,
    buf: &mut String,
    mut stop: impl FnMut(&Sse) -> bool,
) -> Vec<Sse> {
    let mut out = Vec::new();
    loop {
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let mut id = None;
            let mut data = String::new();
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if data.is_empty() {
                continue;
            }
            let ev = Sse {
                id,
                data: serde_json::from_str(&data).expect("event JSON"),
            };
            let done = stop(&ev);
            out.push(ev);
            if done {
                return out;
            }
        }
        match tokio::time::timeout(Duration::from_secs(60), r.chunk()).await {
            Ok(Ok(Some(bytes))) => buf.push_str(&String::from_utf8_lossy(&bytes)),
            _ => return out,
        }
    }
}

pub(crate) fn is_ask(e: &Sse) -> bool {
    e.data["event"] == "ask_required"
}

/// Create, follow, approve by `ask_id`, accept, complete; the histories
/// and the todo list read back; a dropped stream resumes with
/// `Last-Event-ID` without a gap or a repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_over_http_followed_approved_and_resumed_without_gaps() {
    let s = server_with(write_then_done("out.txt"), ServerConfig::default()).await;
    let (root, token) = s.tenant("team-a");
    let id = s
        .create(
            &token,
            json!({"prompt": "write out.txt", "workspace": "ws"}),
        )
        .await;

    // Follow until the edit's approval is asked, then drop the stream.
    let mut r = s.events(&token, &id, None).await;
    let mut buf = String::new();
    let first = read_events(&mut r, &mut buf, is_ask).await;
    drop(r);
    assert!(first.last().is_some_and(is_ask), "{first:?}");
    let last_seen = first.iter().filter_map(|e| e.id).max().expect("ids");

    let (status, asks) = s.get(&format!("/v1/tasks/{id}/asks"), &token).await;
    assert_eq!(status, 200);
    let ask = &asks[0];
    assert_eq!(ask["kind"], "tool");
    assert!(
        ask["ask"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains("+hi")),
        "{ask}"
    );
    let ask_id = ask["ask_id"].as_str().expect("ask id").to_owned();
    // A decision that does not fit the question is refused.
    let (status, v) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/asks/{ask_id}"),
            Some(&token),
            Some(r#"{"decision":"accept"}"#),
        )
        .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("invalid_request")),
        "{v}"
    );
    let (status, _) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/asks/{ask_id}"),
            Some(&token),
            Some(r#"{"decision":"approve"}"#),
        )
        .await;
    assert_eq!(status, 200);
    // Answered already: 409.
    let (status, v) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/asks/{ask_id}"),
            Some(&token),
            Some(r#"{"decision":"approve"}"#),
        )
        .await;
    assert_eq!((status, v["code"].as_str()), (409, Some("conflict")), "{v}");

    // Reconnect after the last seen id: the rest, from the next one on.
    let mut r = s.events(&token, &id, Some(last_seen)).await;
    let mut buf = String::new();
    let rest = read_events(&mut r, &mut buf, |e| {
        e.data["event"] == "ask_required" && e.data["ask"]["kind"] == "completion"
    })
    .await;
    let ids: Vec<i64> = rest.iter().filter_map(|e| e.id).collect();
    assert!(ids.first().is_some_and(|f| *f == last_seen + 1), "{ids:?}");
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "a gap or a repeat: {ids:?}"
    );
    let (_, asks) = s.get(&format!("/v1/tasks/{id}/asks"), &token).await;
    let completion = asks[0]["ask_id"].as_str().expect("ask").to_owned();
    let (status, _) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/asks/{completion}"),
            Some(&token),
            Some(r#"{"decision":"accept"}"#),
        )
        .await;
    assert_eq!(status, 200);
    let tail = read_events(&mut r, &mut buf, |_| false).await;
    assert!(
        tail.iter().any(|e| e.data["event"] == "completed"),
        "{tail:?}"
    );

    let (_, task) = s.get(&format!("/v1/tasks/{id}"), &token).await;
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(
        std::fs::read_to_string(root.join("ws/out.txt")).expect("written"),
        "hi\n"
    );
    let (_, ui) = s.get(&format!("/v1/tasks/{id}/messages"), &token).await;
    assert!(
        ui.as_array()
            .is_some_and(|m| m.iter().any(|m| m["subtype"] == "completion_result")),
        "{ui}"
    );
    let (_, api) = s.get(&format!("/v1/tasks/{id}/api-messages"), &token).await;
    assert!(
        api.as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "assistant")),
        "{api}"
    );
    let (status, _) = s.get(&format!("/v1/tasks/{id}/todos"), &token).await;
    assert_eq!(status, 200);

    // The whole log again from the start: every id once, in order.
    let mut r = s.events(&token, &id, None).await;
    let mut buf = String::new();
    let all = read_events(&mut r, &mut buf, |_| false).await;
    let ids: Vec<i64> = all.iter().filter_map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert_eq!(ids.first(), Some(&1));
}

/// Twenty tasks at once, on two profiles and two policies, all complete;
/// listing pages through them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tasks_at_once_with_their_own_profiles_and_policies() {
    let s = server_with(
        write_then_done("f.txt"),
        ServerConfig {
            max_running: 4,
            ..ServerConfig::default()
        },
    )
    .await;
    let (_root, token) = s.tenant("team-a");
    let mut ids = Vec::new();
    for i in 0..20 {
        std::fs::create_dir_all(s.dir.path().join(format!("root-team-a/w{i}"))).expect("ws");
        let body = if i % 2 == 0 {
            json!({"prompt": "write", "workspace": format!("w{i}"), "approve": ["edit"]})
        } else {
            json!({"prompt": "quick", "workspace": format!("w{i}"), "profile": "quick"})
        };
        ids.push(s.create(&token, body).await);
    }
    for id in &ids {
        let mut r = s.events(&token, id, None).await;
        let mut buf = String::new();
        // Accept each completion as it is asked.
        loop {
            let got = read_events(&mut r, &mut buf, |e| {
                is_ask(e) || e.data["event"] == "completed"
            })
            .await;
            let Some(last) = got.last() else { break };
            if last.data["event"] == "completed" {
                break;
            }
            let ask_id = last.data["ask_id"].as_str().expect("ask id").to_owned();
            let (status, v) = s
                .call(
                    "POST",
                    &format!("/v1/tasks/{id}/asks/{ask_id}"),
                    Some(&token),
                    Some(r#"{"decision":"accept"}"#),
                )
                .await;
            assert_eq!(status, 200, "{v}");
        }
        let (_, task) = s.get(&format!("/v1/tasks/{id}"), &token).await;
        assert_eq!(task["status"], "completed", "{task}");
    }
    let (_, page) = s.get("/v1/tasks?limit=15", &token).await;
    let cursor = page["next_cursor"].as_str().expect("more").to_owned();
    let (_, rest) = s
        .get(&format!("/v1/tasks?limit=15&cursor={cursor}"), &token)
        .await;
    let mut seen: Vec<String> = page["tasks"]
        .as_array()
        .into_iter()
        .chain(rest["tasks"].as_array())
        .flatten()
        .map(|t| t["id"].as_str().expect("id").to_owned())
        .collect();
    seen.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(seen, want);
    let (_, quick) = s.get("/v1/tasks?status=completed&limit=500", &token).await;
    assert_eq!(quick["tasks"].as_array().map(Vec::len), Some(20));
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

/// No token, a bad one, an expired one, a revoked one → 401 everywhere;
/// another tenant's task → 404 with nothing of it in the body; workspaces
/// outside the root (absolute, `..`, a symlink) → 403; oversized,
/// malformed and mistyped bodies → 4xx with a code; a cross-site request
/// → 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_are_apart_and_hostile_requests_get_4xx_with_a_code() {
    let s = server_with(
        json!([done("a"), done("b")]),
        ServerConfig {
            max_body_bytes: 4096,
            ..ServerConfig::default()
        },
    )
    .await;
    let (root_a, a) = s.tenant("team-a");
    let (_root_b, b) = s.tenant("team-b");
    let id = s
        .create(&a, json!({"prompt": "secret plans", "workspace": "ws"}))
        .await;
    let expired = s
        .state
        .engine
        .tokens()
        .create("team-a", &root_a, Some(Duration::ZERO))
        .expect("token")
        .token;
    let revoked = s
        .state
        .engine
        .tokens()
        .create("team-a", &root_a, None)
        .expect("token");
    s.state
        .engine
        .tokens()
        .revoke(&revoked.record.id)
        .expect("revoke");
    let routes: Vec<(&str, String)> = vec![
        ("GET", "/v1/tasks".into()),
        ("POST", "/v1/tasks".into()),
        ("GET", format!("/v1/tasks/{id}")),
        ("GET", format!("/v1/tasks/{id}/messages")),
        ("POST", format!("/v1/tasks/{id}/messages")),
        ("GET", format!("/v1/tasks/{id}/api-messages")),
        ("GET", format!("/v1/tasks/{id}/todos")),
        ("POST", format!("/v1/tasks/{id}/cancel")),
        ("POST", format!("/v1/tasks/{id}/resume")),
        ("GET", format!("/v1/tasks/{id}/asks")),
        ("POST", format!("/v1/tasks/{id}/asks/x")),
        ("GET", format!("/v1/tasks/{id}/events")),
        ("GET", "/v1/modes?workspace=ws".into()),
        ("GET", "/v1/intents?workspace=ws".into()),
        ("GET", "/v1/trace?workspace=ws".into()),
        ("GET", "/v1/tools".into()),
        ("GET", "/v1/plugins".into()),
        ("GET", "/v1/events".into()),
    ];
    let bogus = "roost_000000000000_0000";
    for (method, path) in &routes {
        // A body each route takes, so only the caller decides the answer.
        let body = (*method == "POST").then_some(if path.ends_with("/messages") {
            r#"{"text":"hi"}"#
        } else if path == "/v1/tasks" {
            r#"{"prompt":"p","workspace":"ws"}"#
        } else {
            r#"{"decision":"approve"}"#
        });
        for token in [
            None,
            Some(bogus),
            Some(expired.as_str()),
            Some(revoked.token.as_str()),
        ] {
            let (status, v) = s.call(method, path, token, body).await;
            assert_eq!(status, 401, "{method} {path} with {token:?}: {v}");
            assert_eq!(v["code"], "unauthorized", "{v}");
        }
        if path.contains(&id) {
            let (status, v) = s.call(method, path, Some(&b), body).await;
            assert_eq!(status, 404, "{method} {path} as another tenant: {v}");
            assert_eq!(v["code"], "not_found");
            assert!(
                !v.to_string().contains("secret plans") && !v.to_string().contains(&id),
                "{v}"
            );
        }
    }
    // Health and readiness need no token.
    assert_eq!(s.call("GET", "/v1/health", None, None).await.0, 200);
    assert_eq!(s.call("GET", "/v1/ready", None, None).await.0, 200);
    // Another tenant's list does not show it.
    let (_, list) = s.call("GET", "/v1/tasks", Some(&b), None).await;
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(0), "{list}");

    // Workspaces outside the root.
    let outside = s.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    symlink(&outside, &root_a.join("escape"));
    for ws in [
        outside.display().to_string(),
        "../root-team-b/ws".to_owned(),
        "ws/../../outside".to_owned(),
        "escape".to_owned(),
        "/etc".to_owned(),
        "/nonexistent/place".to_owned(),
    ] {
        let (status, v) = s
            .call(
                "POST",
                "/v1/tasks",
                Some(&a),
                Some(&json!({"prompt": "p", "workspace": ws}).to_string()),
            )
            .await;
        assert_eq!(
            (status, v["code"].as_str()),
            (403, Some("forbidden")),
            "{ws}: {v}"
        );
    }
    let (status, v) = s
        .call("GET", "/v1/modes?workspace=/etc", Some(&a), None)
        .await;
    assert_eq!(status, 403, "{v}");

    // Bodies.
    let big = json!({"prompt": "x".repeat(10_000), "workspace": "ws"}).to_string();
    for (body, want, code) in [
        (big.as_str(), 413, "too_large"),
        ("{not json", 400, "invalid_request"),
        (
            r#"{"prompt": 3, "workspace": "ws"}"#,
            400,
            "invalid_request",
        ),
        (
            r#"{"prompt": "p", "workspace": "ws", "owner": "team-b"}"#,
            400,
            "invalid_request",
        ),
        (
            r#"{"prompt": "  ", "workspace": "ws"}"#,
            400,
            "invalid_request",
        ),
        ("[]", 400, "invalid_request"),
        (
            r#"{"prompt": "p", "workspace": "ws", "delegation": {"max_depth": "deep"}}"#,
            400,
            "invalid_request",
        ),
        (
            r#"{"prompt": "p", "workspace": "ws", "delegation": {"max_depth": -1}}"#,
            400,
            "invalid_request",
        ),
        (
            r#"{"prompt": "p", "workspace": "ws", "delegation": {"unbounded": true}}"#,
            400,
            "invalid_request",
        ),
    ] {
        let (status, v) = s.call("POST", "/v1/tasks", Some(&a), Some(body)).await;
        assert_eq!(
            (status, v["code"].as_str()),
            (want, Some(code)),
            "{body:.60}: {v}"
        );
    }
    let r = s
        .client
        .post(format!("{}/v1/tasks", s.base))
        .header("authorization", format!("Bearer {a}"))
        .header("content-type", "text/plain")
        .body("prompt")
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 415);
    let (status, v) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/asks/nope"),
            Some(&a),
            Some(r#"{"decision":"launch"}"#),
        )
        .await;
    assert_eq!(status, 400, "{v}");
    let (status, v) = s.call("GET", "/v1/tasks?limit=abc", Some(&a), None).await;
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("invalid_request")),
        "{v}"
    );
    let (status, v) = s.call("GET", "/v1/tasks?cursor=zzz", Some(&a), None).await;
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("invalid_request")),
        "{v}"
    );
    let (status, v) = s.call("GET", "/v1/nothing/here", Some(&a), None).await;
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("not_found")),
        "{v}"
    );
    // A route called with a method it does not take: an error body like
    // every other, and the methods it takes (the http_api fuzz target
    // found a bare 405 with no body).
    let r = s
        .client
        .patch(format!("{}/v1/tasks", s.base))
        .header("authorization", format!("Bearer {a}"))
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 405);
    let allow = r
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    let v: Value = r.json().await.expect("a JSON error body");
    assert_eq!(v["code"], "invalid_request", "{v}");
    // Path parameters that do not decode: the same (the fuzz target
    // found axum's plain-text 400 for a checkpoint that is not a number).
    for path in [
        format!("/v1/tasks/{id}/checkpoints/x/diff"),
        "/v1/tasks/%FF".to_owned(),
    ] {
        let (status, v) = s.call("GET", &path, Some(&a), None).await;
        assert_eq!(
            (status, v["code"].as_str()),
            (400, Some("invalid_request")),
            "{path}: {v}"
        );
    }
    let r = s
        .client
        .get(format!("{}/v1/tasks/{id}/events", s.base))
        .header("authorization", format!("Bearer {a}"))
        .header("last-event-id", "-5")
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 400);

    // A page on another site cannot change state; no CORS headers.
    let r = s
        .client
        .post(format!("{}/v1/tasks/{id}/cancel", s.base))
        .header("authorization", format!("Bearer {a}"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 403);
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

/// The queue: a task waiting for a slot says `queued`; at the queue's
/// bound, a new task is refused with a retryable 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_503_with_retry_after() {
    // The model takes its time, so the first task holds the only slot.
    let s = server_with(
        json!([{"text": "", "delay_ms": 60000, "tool_calls": []}]),
        ServerConfig {
            max_running: 1,
            max_queued: 1,
            ..ServerConfig::default()
        },
    )
    .await;
    let (_root, token) = s.tenant("team-a");
    let first = s
        .create(&token, json!({"prompt": "slow", "workspace": "ws"}))
        .await;
    // The first takes the slot (and waits for the model there)…
    loop {
        let (_, t) = s.get(&format!("/v1/tasks/{first}"), &token).await;
        if t["queued"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // …the next waits in the queue, and says so…
    let (status, next) = s
        .call(
            "POST",
            "/v1/tasks",
            Some(&token),
            Some(&json!({"prompt": "next", "workspace": "ws"}).to_string()),
        )
        .await;
    assert_eq!(status, 201, "{next}");
    assert_eq!(next["queued"], true, "{next}");
    let (_, listed) = s.get("/v1/tasks", &token).await;
    let queued: Vec<&Value> = listed["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["queued"] == true)
        .collect();
    assert_eq!(queued.len(), 1, "{listed}");
    assert_eq!(queued[0]["id"], next["id"]);
    // …and one more is refused.
    let r = s
        .client
        .post(format!("{}/v1/tasks", s.base))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(json!({"prompt": "more", "workspace": "ws"}).to_string())
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().get("retry-after").is_some());
    let v: Value = serde_json::from_str(&r.text().await.expect("body")).expect("json");
    assert_eq!(v["code"], "overloaded", "{v}");
}

/// `roost token create` prints the token alone; `roost serve --no-auth`
/// refuses a non-loopback address; SIGTERM with a question open stops the
/// task resumably, and the restarted server asks it again by the same
/// `ask_id`, takes the answer and completes the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_resumes_its_tasks_with_their_questions_open() {
    use crate::cli::{roost, text};
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("ws")).expect("root");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!({"model": "m", "turns": write_then_done("out.txt")}).to_string(),
    )
    .expect("script");

    let o = roost(&data)
        .args(["token", "create", "--tenant", "ada", "--root"])
        .arg(&root)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let token = stdout.trim().to_owned();
    assert!(token.starts_with("roost_"), "{token}");

    let o = roost(&data)
        .args(["serve", "--no-auth", "--listen", "0.0.0.0:0"])
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(
        text(&o).contains("--no-auth is only for loopback"),
        "{}",
        text(&o)
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let start = || {
        roost(&data)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--script",
            ])
            .arg(&script)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("serve starts")
    };
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}/v1");
    let get = |path: String| {
        let (client, token) = (client.clone(), token.clone());
        async move {
            let r = client
                .get(format!("http://127.0.0.1:{port}/v1{path}"))
                .header("authorization", format!("Bearer {token}"))
                .send()
                .await
                .ok()?;
            serde_json::from_str::<Value>(&r.text().await.ok()?).ok()
        }
    };
    let open_ask = |id: String| async move {
        for _ in 0..600 {
            if let Some(v) = get(format!("/tasks/{id}/asks")).await
                && let Some(a) = v.as_array().and_then(|a| a.first())
            {
                return a.clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no question was asked");
    };
    let mut server = start();
    // Up once it answers.
    for _ in 0..600 {
        if get("/tasks".into()).await.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = client
        .post(format!("{base}/tasks"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(json!({"prompt": "write out.txt", "workspace": "ws"}).to_string())
        .send()
        .await
        .expect("create");
    assert_eq!(r.status().as_u16(), 201);
    let task: Value = serde_json::from_str(&r.text().await.expect("body")).expect("json");
    let id = task["id"].as_str().expect("id").to_owned();
    let ask = open_ask(id.clone()).await;
    assert_eq!(ask["kind"], "tool");

    // SIGTERM: the server stops; the task is resumable, its question open.
    let pid = i32::try_from(server.id()).expect("pid");
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill")
            .success()
    );
    let status = tokio::task::spawn_blocking(move || server.wait().expect("exits"))
        .await
        .expect("join");
    assert!(status.success(), "{status:?}");
    // It waited for a person: left as it was, interrupted, its question
    // on record.
    let listed = crate::cli::listed_tasks(&data).swap_remove(0);
    assert_eq!(listed["status"], "waiting_for_approval", "{listed}");
    assert_eq!(listed["interrupted"], true, "{listed}");

    // Restarted: the same question, by the same id, answered; the task
    // completes.
    let mut server = start();
    let again = open_ask(id.clone()).await;
    assert_eq!(again["ask_id"], ask["ask_id"], "{again}");
    for decision in ["approve", "accept"] {
        // Until the resumed loop has the question again, an answer is
        // refused with 409 (never lost): try again.
        let mut answered = false;
        for _ in 0..600 {
            let a = if decision == "approve" {
                again.clone()
            } else {
                open_ask(id.clone()).await
            };
            let r = client
                .post(format!(
                    "{base}/tasks/{id}/asks/{}",
                    a["ask_id"].as_str().expect("ask id")
                ))
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .body(json!({"decision": decision}).to_string())
                .send()
                .await
                .expect("answer");
            match r.status().as_u16() {
                200 => {
                    answered = true;
                    break;
                }
                409 => tokio::time::sleep(Duration::from_millis(100)).await,
                other => panic!("{decision}: {other}"),
            }
        }
        assert!(answered, "{decision} was never taken");
    }
    let mut done = false;
    for _ in 0..600 {
        if get(format!("/tasks/{id}"))
            .await
            .is_some_and(|t| t["status"] == "completed")
        {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(done, "the resumed task did not complete");
    assert_eq!(
        std::fs::read_to_string(root.join("ws/out.txt")).expect("written"),
        "hi\n"
    );
}

/// Property-based testing from the served OpenAPI document (schemathesis
/// from PyPI, installed by `.ci/run`): generated requests to every
/// operation never get a 5xx, and every documented response matches its
/// schema. (The event streams are left out: they stay open.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_holds_up_to_property_based_testing_from_its_document() {
    let s = server_with(json!([done("x")]), ServerConfig::default()).await;
    let (_root, token) = s.tenant("team-a");
    // Some state for the generated requests to meet.
    s.create(&token, json!({"prompt": "p", "workspace": "ws"}))
        .await;
    let st = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/bin")))
        .map(|d| d.join("st"))
        .find(|p| p.is_file())
        .expect("schemathesis's `st` (pip install --user schemathesis)");
    let mut cmd = std::process::Command::new(st);
    cmd.args(["run", &format!("{}/v1/openapi.json", s.base)])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["--checks", "not_a_server_error,response_schema_conformance"])
        .args(["--exclude-path-regex", "events$"])
        .args(["-n", "30", "--request-timeout", "20"])
        .env("NO_COLOR", "1")
        // Its cache stays out of the repository.
        .current_dir(s.dir.path());
    let o = tokio::task::spawn_blocking(move || cmd.output().expect("st runs"))
        .await
        .expect("join");
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Delegation over HTTP: an orchestrator's parallel group writes through
/// a child whose question is answerable from the root's tree
/// (`asks?tree=true`); the child is a task of the same tenant, with its
/// own routes; the root lists its children and groups; another tenant
/// sees none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subtasks_over_http_are_the_tenants_and_answerable_from_the_root() {
    let s = server_with_script(
        json!({
            "turns": [
                {"text": "", "tool_calls": [{"name": "new_parallel_tasks", "args": {"tasks": [
                    {"mode": "code", "message": "Write out/a.txt.", "scope": ["out/**"]}
                ]}}]},
                done("root done"),
            ],
            "tasks": [{"message": "Write out/a.txt.", "turns": [
                {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "out/a.txt", "content": "hi\n"}}]},
                done("child wrote"),
            ]}]
        }),
        ServerConfig::default(),
    )
    .await;
    let (root_dir, token) = s.tenant("team-a");
    let (_, other) = s.tenant("team-b");
    let id = s
        .create(
            &token,
            json!({"prompt": "fan out", "workspace": "ws", "mode": "orchestrator", "approve": ["read", "modes"],
                   "delegation": {"max_depth": 1, "max_concurrent_children": 2}}),
        )
        .await;
    // One approver for the tree: answer whatever the tree asks, from the
    // root's list, until the root has completed.
    let mut answered_child = false;
    for _ in 0..600 {
        let (status, task) = s.get(&format!("/v1/tasks/{id}"), &token).await;
        assert_eq!(status, 200);
        if task["status"] == "completed" {
            break;
        }
        let (status, asks) = s
            .get(&format!("/v1/tasks/{id}/asks?tree=true"), &token)
            .await;
        assert_eq!(status, 200, "{asks}");
        for a in asks.as_array().cloned().unwrap_or_default() {
            let owner = a["task_id"].as_str().expect("task id").to_owned();
            let ask_id = a["ask_id"].as_str().expect("ask id");
            let decision = if a["kind"] == "tool" {
                "approve"
            } else {
                "accept"
            };
            if owner != id {
                answered_child = true;
            }
            let (st, v) = s
                .call(
                    "POST",
                    &format!("/v1/tasks/{owner}/asks/{ask_id}"),
                    Some(&token),
                    Some(&json!({"decision": decision}).to_string()),
                )
                .await;
            assert!(matches!(st, 200 | 409), "{st} {v}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, task) = s.get(&format!("/v1/tasks/{id}"), &token).await;
    assert_eq!(task["status"], "completed", "{task}");
    assert!(
        answered_child,
        "the child's question was answered from the root's list"
    );
    assert_eq!(
        std::fs::read_to_string(root_dir.join("ws/out/a.txt")).expect("written"),
        "hi\n"
    );
    let (status, kids) = s.get(&format!("/v1/tasks/{id}/children"), &token).await;
    assert_eq!(status, 200);
    let kids = kids.as_array().cloned().unwrap_or_default();
    assert_eq!(kids.len(), 1, "{kids:?}");
    let child = kids[0]["id"].as_str().expect("child id").to_owned();
    assert_eq!(kids[0]["parent_id"], json!(id));
    // The bounds the client set hold for the child too.
    let settings = s
        .state
        .engine
        .records()
        .find(&child)
        .expect("child stored")
        .settings
        .expect("settings recorded");
    assert_eq!(settings.delegation.max_depth, Some(1));
    assert_eq!(settings.delegation.max_concurrent_children, Some(2));
    let (status, groups) = s.get(&format!("/v1/tasks/{id}/groups"), &token).await;
    assert_eq!(status, 200);
    assert_eq!(groups[0]["status"], "completed", "{groups}");
    assert_eq!(groups[0]["children"][0], json!(child));
    // Every task route works for the child.
    for route in ["", "/messages", "/api-messages", "/todos", "/asks"] {
        let (status, v) = s.get(&format!("/v1/tasks/{child}{route}"), &token).await;
        assert_eq!(status, 200, "{route}: {v}");
    }
    // Another tenant sees nothing of the tree.
    for path in [
        format!("/v1/tasks/{id}/children"),
        format!("/v1/tasks/{id}/groups"),
        format!("/v1/tasks/{id}/asks?tree=true"),
        format!("/v1/tasks/{child}"),
    ] {
        let (status, v) = s.get(&path, &other).await;
        assert_eq!(status, 404, "{path}: {v}");
        assert_eq!(v["code"], "not_found", "{v}");
    }
}

/// Checkpoints over HTTP: a task's list, the diff since one, and a
/// restore (409 while it runs, the report after); garbage bodies and
/// unknown checkpoints get coded 4xx; another tenant sees nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_over_http_list_diff_and_restore() {
    let s = server_with(write_then_done("out.txt"), ServerConfig::default()).await;
    let (root, token) = s.tenant("team-a");
    let (_, other) = s.tenant("team-b");
    std::fs::create_dir_all(root.join("ws")).expect("mkdir");
    std::fs::write(root.join("ws/out.txt"), "before\n").expect("write");
    let id = s
        .create(
            &token,
            json!({"prompt": "write out.txt", "workspace": "ws", "approve": ["edit"]}),
        )
        .await;
    for _ in 0..600 {
        let (_, task) = s.get(&format!("/v1/tasks/{id}"), &token).await;
        if task["status"] == "completed" {
            break;
        }
        let (_, asks) = s.get(&format!("/v1/tasks/{id}/asks"), &token).await;
        for a in asks.as_array().cloned().unwrap_or_default() {
            let ask_id = a["ask_id"].as_str().expect("ask id");
            let _ = s
                .call(
                    "POST",
                    &format!("/v1/tasks/{id}/asks/{ask_id}"),
                    Some(&token),
                    Some(r#"{"decision":"accept"}"#),
                )
                .await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        std::fs::read_to_string(root.join("ws/out.txt")).expect("read"),
        "hi\n"
    );
    let (status, list) = s.get(&format!("/v1/tasks/{id}/checkpoints"), &token).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list[0]["id"], 1, "{list}");
    let (status, diff) = s
        .get(&format!("/v1/tasks/{id}/checkpoints/1/diff"), &token)
        .await;
    assert_eq!(status, 200, "{diff}");
    assert!(
        diff["diff"]
            .as_str()
            .is_some_and(|d| d.contains("-before") && d.contains("+hi")),
        "{diff}"
    );
    for (body, want) in [
        (r#"{"mode": "sideways"}"#, 400),
        (r#"{"force": "yes"}"#, 400),
        (r#"{"mode": "files_only", "extra": 1}"#, 400),
        ("not json", 400),
    ] {
        let (status, v) = s
            .call(
                "POST",
                &format!("/v1/tasks/{id}/checkpoints/1/restore"),
                Some(&token),
                Some(body),
            )
            .await;
        assert_eq!(status, want, "{body}: {v}");
        assert_eq!(v["code"], "invalid_request", "{v}");
    }
    let (status, v) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/checkpoints/9/restore"),
            Some(&token),
            Some("{}"),
        )
        .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("not_found")),
        "{v}"
    );
    for path in [
        format!("/v1/tasks/{id}/checkpoints"),
        format!("/v1/tasks/{id}/checkpoints/1/diff"),
    ] {
        let (status, _) = s.get(&path, &other).await;
        assert_eq!(status, 404, "{path}");
    }
    let (status, report) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/checkpoints/1/restore"),
            Some(&token),
            Some(r#"{"mode": "files_only"}"#),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["restored"], json!(["out.txt"]), "{report}");
    assert_eq!(
        std::fs::read_to_string(root.join("ws/out.txt")).expect("read"),
        "before\n"
    );
}

/// A command over HTTP: a server started with commands on runs one for a
/// tenant's task once its approval is given, and the SSE stream carries
/// its output as it comes (`command_output`), then its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_over_http_streams_its_output_over_sse() {
    let s = server_with_toml(
        json!({"turns": [
            {"text": "", "tool_calls": [{"name": "execute_command", "args": {"command": "seq 1 3; echo over-sse"}}]},
            done("ran")
        ]}),
        "[commands]\nenabled = true\nallowed_commands = [\"seq\", \"echo\"]\n",
        ServerConfig::default(),
    )
    .await;
    let (_, token) = s.tenant("team-a");
    let id = s
        .create(&token, json!({"prompt": "count", "workspace": "ws"}))
        .await;
    let mut r = s.events(&token, &id, None).await;
    let mut buf = String::new();
    let asked = read_events(&mut r, &mut buf, is_ask).await;
    let ask = asked.last().expect("the command's approval is asked");
    assert_eq!(ask.data["ask"]["tool"], "execute_command", "{:?}", ask.data);
    let ask_id = ask.data["ask_id"].as_str().expect("ask id").to_owned();
    let (status, v) = s
        .call(
            "POST",
            &format!("/v1/tasks/{id}/asks/{ask_id}"),
            Some(&token),
            Some(r#"{"decision":"approve"}"#),
        )
        .await;
    assert!(matches!(status, 200), "{status} {v}");
    let rest = read_events(&mut r, &mut buf, |e| {
        e.data["event"] == "tool_call_result" && e.data["tool"] == "execute_command"
    })
    .await;
    let live: String = rest
        .iter()
        .filter(|e| e.data["event"] == "command_output")
        .filter_map(|e| e.data["chunk"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(live, "1\n2\n3\nover-sse\n", "{rest:?}");
    assert!(
        rest.iter()
            .filter(|e| e.data["event"] == "command_output")
            .all(|e| e.id.is_none()),
        "live output is not in the durable log"
    );
    let result = rest.last().expect("result");
    assert!(
        result.data["result"]["ok"]
            .as_str()
            .is_some_and(|t| t.contains("exit code 0")),
        "{:?}",
        result.data
    );
}

/// `roost serve` (the real binary) on a free port of 127.0.0.1 with
/// `args`, its log in `log`; killed when dropped.
struct Served {
    child: std::process::Child,
    port: u16,
    log: PathBuf,
    client: reqwest::Client,
}

impl Served {
    /// `roost serve` as `who`. For `nobody`, everything the test made so
    /// far in the folder holding `data` (its data, tokens, roots, script)
    /// is handed to it first, and it gets a home of its own there.
    async fn start_as(who: Identity, data: &Path, args: &[&std::ffi::OsStr]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let log = data.with_extension(format!("{port}.log"));
        let child = roost_as(who, data)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("serve starts");
        let s = Self {
            child,
            port,
            log,
            client: reqwest::Client::new(),
        };
        for _ in 0..600 {
            if s.client.get(s.url("/v1/health")).send().await.is_ok() {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("roost serve did not start: {}", s.log_text());
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `method path` with `token` (if any), `host` as the `Host` (the
    /// server's own address when `None`) and `body` (JSON) if any.
    async fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        host: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .client
            .request(method.parse().expect("method"), self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(h) = host {
            // What a page on another site sends once its name resolves
            // to 127.0.0.1: its own name, and its own origin.
            req = req
                .header("host", h)
                .header("origin", format!("http://{h}"));
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let r = req.send().await.expect("the server answers");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// SIGTERM, and wait until it has stopped.
    async fn stop(mut self) {
        let pid = self.child.id().to_string();
        assert!(
            std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .expect("kill")
                .success()
        );
        let mut child = std::mem::replace(
            &mut self.child,
            std::process::Command::new("true").spawn().expect("true"),
        );
        let status = tokio::task::spawn_blocking(move || child.wait().expect("exits"))
            .await
            .expect("join");
        assert!(status.success(), "{status:?}: {}", self.log_text());
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `roost` with the data `data` as `who`: the same arguments and
/// environment as [`crate::cli::roost`]; for `nobody`, a copy of the binary
/// it can run, in the folder holding `data` (given to it, with a home of
/// its own there).
fn roost_as(who: Identity, data: &Path) -> std::process::Command {
    let base = crate::cli::roost(data);
    if who == Identity::Caller {
        return base;
    }
    let dir = data.parent().expect("data lies in the test's folder");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    chown_tree(dir, NOBODY);
    let mut c = who.command(&runnable_by_anyone(Path::new(base.get_program())));
    c.args(base.get_args()).current_dir(dir).env("HOME", &home);
    for (key, value) in base.get_envs() {
        match value {
            Some(v) => c.env(key, v),
            None => c.env_remove(key),
        };
    }
    c
}

/// A token for `tenant` with `root`, made by `roost token create`.
fn cli_token(data: &Path, tenant: &str, root: &Path) -> String {
    let o = crate::cli::roost(data)
        .args(["token", "create", "--tenant", tenant, "--root"])
        .arg(root)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", crate::cli::text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

/// Ada's root: a project with a secret, for Bob to aim at.
fn ada_root(dir: &Path) -> PathBuf {
    let root = dir.join("root-ada");
    std::fs::create_dir_all(root.join("proj/src")).expect("root");
    std::fs::write(root.join("proj/secret.txt"), "ada's secret\n").expect("write");
    std::fs::write(root.join("proj/src/main.rs"), "fn main() {}\n").expect("write");
    std::fs::write(root.join("notes.md"), "# notes\n").expect("write");
    root
}

/// Swap the directory `ws` for a symbolic link to `target` (the old
/// directory kept beside it).
fn swap_for_link(ws: &Path, target: &Path) {
    std::fs::rename(ws, ws.with_extension("old")).expect("rename");
    symlink(target, ws);
}

/// Poll task `id` (a minute at most) until it has ended or waits for a
/// person; as a person who approves everything, answer at most `answers`
/// questions on the way. Its last view.
async fn settle(s: &Served, token: &str, id: &str, mut answers: usize) -> Value {
    for _ in 0..1200 {
        let (_, task) = s
            .send("GET", &format!("/v1/tasks/{id}"), Some(token), None, None)
            .await;
        if matches!(
            task["status"].as_str(),
            Some("failed" | "completed" | "aborted")
        ) {
            return task;
        }
        let (_, asks) = s
            .send(
                "GET",
                &format!("/v1/tasks/{id}/asks"),
                Some(token),
                None,
                None,
            )
            .await;
        if let Some(ask) = asks.as_array().and_then(|a| a.first()) {
            // The ask is recorded a moment before the status says so: a
            // view read before it is polled again.
            if answers == 0 {
                if task["status"]
                    .as_str()
                    .is_some_and(|st| st.starts_with("waiting"))
                {
                    return task;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let decision = if ask["kind"] == "completion" {
                "accept"
            } else {
                "approve"
            };
            let (status, _) = s
                .send(
                    "POST",
                    &format!(
                        "/v1/tasks/{id}/asks/{}",
                        ask["ask_id"].as_str().unwrap_or("")
                    ),
                    Some(token),
                    None,
                    Some(json!({ "decision": decision })),
                )
                .await;
            if status == 200 {
                answers -= 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not settle: {}", s.log_text());
}

/// What a refused task says: failed, with the reason in its history.
async fn assert_refused(s: &Served, token: &str, id: &str, task: &Value) {
    assert_eq!(task["status"], "failed", "{task}");
    let (_, ui) = s
        .send(
            "GET",
            &format!("/v1/tasks/{id}/messages"),
            Some(token),
            None,
            None,
        )
        .await;
    let said = ui.to_string();
    assert!(
        said.contains("is refused") && said.contains("symbolic link"),
        "{said}"
    );
}

/// Ada's root (see [`ada_root`]) and Bob's, `root-bob` with the
/// workspaces `wss`, under `dir`, each with a token of its own: Ada's
/// root and Bob's, and Bob's token.
fn ada_and_bob(dir: &Path, data: &Path, wss: &[&str]) -> (PathBuf, PathBuf, String) {
    let ada = ada_root(dir);
    let bob = dir.join("root-bob");
    for ws in wss {
        std::fs::create_dir_all(bob.join(ws)).expect("ws");
    }
    let _ada_token = cli_token(data, "ada", &ada);
    let token = cli_token(data, "bob", &bob);
    (ada, bob, token)
}

/// A task of `token`'s in its workspace `ws`, its first `answers`
/// questions approved, now waiting for a person: its id.
async fn waiting_in_ws(s: &Served, token: &str, answers: usize) -> String {
    let (status, v) = create_task(s, token, json!({"prompt": "write", "workspace": "ws"})).await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_owned();
    let task = settle(s, token, &id, answers).await;
    assert_eq!(task["status"], "waiting_for_approval", "{task}");
    id
}

/// `POST /v1/tasks` with `body`, as `token`.
async fn create_task(s: &Served, token: &str, body: Value) -> (u16, Value) {
    s.send("POST", "/v1/tasks", Some(token), None, Some(body))
        .await
}

/// Two tenants; Bob's workspace is checked at `POST /v1/tasks`, then
/// swapped for a symbolic link to Ada's root before his task starts —
/// while it waits for a slot, and before a finished task of his is
/// continued with a new message. At each start the workspace is opened
/// beneath Bob's root again, finds the link and refuses: the task fails
/// with the reason, and Ada's root is exactly as it was.
///
/// Served as each of [`identities`]: root and `nobody` on CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_workspace_swapped_for_a_link_is_refused_when_its_task_starts_or_continues() {
    for who in identities() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path().canonicalize().expect("canonical");
        let data = dir.join("data");
        let (ada, bob, token) = ada_and_bob(&dir, &data, &["hold", "queued", "done"]);
        let script = dir.join("script.json");
        std::fs::write(
            &script,
            json!({"model": "m", "turns": [
                {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "out.txt", "content": "bob was here\n"}}]},
                done("written"),
                {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "more.txt", "content": "and here\n"}}]},
                done("more")
            ]})
            .to_string(),
        )
        .expect("script");
        let s = Served::start_as(
            who,
            &data,
            &[
                "--script".as_ref(),
                script.as_os_str(),
                "--max-running".as_ref(),
                "1".as_ref(),
            ],
        )
        .await;
        let before = roost_tests::tree_hash(&ada);
        let create = |ws: &str, approve: bool| {
            let mut body = json!({"prompt": "write", "workspace": ws});
            if approve {
                body["approve"] = json!(["edit"]);
            }
            body
        };

        // A task of Bob's that finishes in his own workspace.
        let (status, v) = create_task(&s, &token, create("done", true)).await;
        assert_eq!(status, 201, "{v}");
        let done_id = v["id"].as_str().expect("id").to_owned();
        let task = settle(&s, &token, &done_id, 1).await;
        assert_eq!(task["status"], "completed", "{task}");
        assert!(bob.join("done/out.txt").is_file());

        // One that holds the only slot (it waits for a person)…
        let (_, v) = create_task(&s, &token, create("hold", false)).await;
        let hold = v["id"].as_str().expect("id").to_owned();
        let task = settle(&s, &token, &hold, 0).await;
        assert_eq!(task["status"], "waiting_for_approval", "{task}");
        // …so the next waits for it, checked and queued.
        let (status, v) = create_task(&s, &token, create("queued", true)).await;
        assert_eq!((status, v["queued"].as_bool()), (201, Some(true)), "{v}");
        let queued = v["id"].as_str().expect("id").to_owned();

        // Bob swaps both workspaces for links to Ada's root.
        swap_for_link(&bob.join("queued"), &ada);
        swap_for_link(&bob.join("done"), &ada);
        let (status, v) = s
            .send(
                "POST",
                &format!("/v1/tasks/{done_id}/messages"),
                Some(&token),
                None,
                Some(json!({"text": "write more"})),
            )
            .await;
        assert_eq!(status, 202, "{v}");
        // The slot frees: the queued task starts, then the continued one.
        let (status, _) = s
            .send(
                "POST",
                &format!("/v1/tasks/{hold}/cancel"),
                Some(&token),
                None,
                None,
            )
            .await;
        assert_eq!(status, 202);
        for id in [&queued, &done_id] {
            let task = settle(&s, &token, id, 2).await;
            assert_refused(&s, &token, id, &task).await;
        }
        assert_eq!(roost_tests::tree_hash(&ada), before, "Ada's root changed");
        assert!(!ada.join("out.txt").exists() && !ada.join("more.txt").exists());
    }
}

/// A task of Bob's waits for a person when the server stops; Bob swaps
/// its workspace for a link to Ada's root; the restarted server resumes
/// the task, which opens its workspace beneath Bob's root again and is
/// refused — even when Bob approves the write it was waiting for.
///
/// Served as each of [`identities`]: root and `nobody` on CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_workspace_swapped_while_the_server_was_down_is_refused_on_resume() {
    for who in identities() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path().canonicalize().expect("canonical");
        let data = dir.join("data");
        let (ada, bob, token) = ada_and_bob(&dir, &data, &["ws"]);
        let script = dir.join("script.json");
        std::fs::write(
            &script,
            json!({"model": "m", "turns": write_then_done("out.txt")}).to_string(),
        )
        .expect("script");
        let args = ["--script".as_ref(), script.as_os_str()];
        let s = Served::start_as(who, &data, &args).await;
        let before = roost_tests::tree_hash(&ada);
        let id = waiting_in_ws(&s, &token, 0).await;
        s.stop().await;

        swap_for_link(&bob.join("ws"), &ada);
        let s = Served::start_as(who, &data, &args).await;
        let task = settle(&s, &token, &id, 2).await;
        assert_refused(&s, &token, &id, &task).await;
        assert_eq!(roost_tests::tree_hash(&ada), before, "Ada's root changed");
        assert!(!ada.join("out.txt").exists());
    }
}

/// DNS rebinding: a page on `evil.example` whose name now resolves to
/// 127.0.0.1 sends its own name as `Host` (and its own origin). Every
/// route — each one the OpenAPI document lists, the event streams, the
/// document itself, the web UI, an unknown path — answers it `403` with
/// a JSON error, with and without `--no-auth`; the server's own names
/// (and an `--allowed-host`) still work.
///
/// Served as each of [`identities`]: root and `nobody` on CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn every_route_refuses_a_host_that_is_not_the_servers() {
    for who in identities() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path().canonicalize().expect("canonical");
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("ws")).expect("ws");
        let script = dir.join("script.json");
        std::fs::write(
            &script,
            json!({"model": "m", "turns": [done("ok")]}).to_string(),
        )
        .expect("script");
        for no_auth in [true, false] {
            let data = dir.join(if no_auth { "data-open" } else { "data-auth" });
            let token = (!no_auth).then(|| cli_token(&data, "ada", &root));
            let token = token.as_deref();
            let mut args: Vec<&std::ffi::OsStr> = vec![
                "--script".as_ref(),
                script.as_os_str(),
                "--allowed-host".as_ref(),
                "roost.example".as_ref(),
            ];
            if no_auth {
                args.extend(["--no-auth".as_ref(), "--root".as_ref(), root.as_os_str()]);
            }
            let s = Served::start_as(who, &data, &args).await;
            let port = s.port;
            let task = json!({"prompt": "p", "workspace": "ws"});

            // The server's own names work.
            let (status, v) = s
                .send("POST", "/v1/tasks", token, None, Some(task.clone()))
                .await;
            assert_eq!(status, 201, "{v}");
            let id = v["id"].as_str().expect("id").to_owned();
            for host in [
                None,
                Some(format!("localhost:{port}")),
                Some(format!("[::1]:{port}")),
                Some("roost.example".to_owned()),
                Some(format!("ROOST.example:{port}")),
            ] {
                let (status, v) = s
                    .send("GET", "/v1/tasks", token, host.as_deref(), None)
                    .await;
                assert_eq!(status, 200, "{host:?}: {v}");
                assert_eq!(v["tasks"][0]["id"], id.as_str(), "{v}");
            }
            let (status, doc) = s.send("GET", "/v1/openapi.json", None, None, None).await;
            assert_eq!(status, 200);
            let r = s.client.get(s.url("/")).send().await.expect("ui");
            assert_eq!(r.status().as_u16(), 200);

            // Every route, as the rebound page would call it.
            let mut routes: Vec<(String, String)> = vec![
                ("GET".into(), "/".into()),
                ("GET".into(), "/app.js".into()),
                ("GET".into(), "/app.css".into()),
                ("GET".into(), "/favicon.svg".into()),
                ("GET".into(), "/favicon.ico".into()),
                ("GET".into(), "/no/such/page".into()),
                ("GET".into(), "/v1/no/such/route".into()),
            ];
            for (path, ops) in doc["paths"].as_object().expect("paths") {
                for method in ops.as_object().expect("operations").keys() {
                    let path = path
                        .replace("{id}", &id)
                        .replace("{cp}", "1")
                        .replace("{ask_id}", "x");
                    let path = if path.starts_with("/v1/modes")
                        || path.starts_with("/v1/intents")
                        || path.starts_with("/v1/trace")
                    {
                        format!("{path}?workspace=ws")
                    } else {
                        path
                    };
                    routes.push((method.to_uppercase(), path));
                }
            }
            assert!(routes.len() > 25, "{routes:?}");
            for host in [
                format!("evil.example:{port}"),
                "evil.example".to_owned(),
                format!("127.0.0.1.evil.example:{port}"),
                format!("localhost:{}", port.wrapping_add(1)),
            ] {
                for (method, path) in &routes {
                    // A body each route would take.
                    let body = (method == "POST").then(|| {
                        if path == "/v1/tasks" {
                            task.clone()
                        } else if path.ends_with("/messages") {
                            json!({"text": "hi"})
                        } else if path.ends_with("/restore") {
                            json!({})
                        } else {
                            json!({"decision": "approve"})
                        }
                    });
                    let (status, v) = s.send(method, path, token, Some(&host), body).await;
                    assert_eq!(
                        (status, v["code"].as_str()),
                        (403, Some("forbidden")),
                        "{method} {path} as Host {host} (no_auth {no_auth}): {v}"
                    );
                    assert!(
                        v["message"].as_str().is_some_and(|m| m.contains("Host")),
                        "{v}"
                    );
                }
            }
            // Nothing the refused requests asked for was done.
            let (_, list) = s.send("GET", "/v1/tasks", token, None, None).await;
            assert_eq!(list["tasks"].as_array().map(Vec::len), Some(1), "{list}");
        }
    }
}

/// Bob's task has taken its first checkpoint and waits for a person; Bob
/// swaps his workspace for a link to Ada's root, laid out like hers
/// (`proj/secret.txt`), then approves. The task goes on in the directory
/// it holds: the next checkpoint is taken there too (git starts in the
/// held directory, not at the path), so nothing of Ada's enters Bob's
/// shadow repository, and Ada's root is exactly as it was.
///
/// Served as each of [`identities`]: root and `nobody` on CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_workspace_swapped_mid_task_never_enters_its_checkpoints() {
    for who in identities() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path().canonicalize().expect("canonical");
        let data = dir.join("data");
        let (ada, bob, token) = ada_and_bob(&dir, &data, &["ws/proj"]);
        std::fs::write(bob.join("ws/proj/secret.txt"), "bob's decoy\n").expect("decoy");
        let script = dir.join("script.json");
        std::fs::write(
            &script,
            json!({"model": "m", "turns": [
                {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "a.txt", "content": "one\n"}}]},
                {"text": "", "tool_calls": [{"name": "write_to_file", "args": {"path": "proj/secret.txt", "content": "bob's own\n"}}]},
                done("written")
            ]})
            .to_string(),
        )
        .expect("script");
        let args = ["--script".as_ref(), script.as_os_str()];
        let s = Served::start_as(who, &data, &args).await;
        let before = roost_tests::tree_hash(&ada);
        // The first write approved (its checkpoint taken); the second waits.
        let id = waiting_in_ws(&s, &token, 1).await;
        swap_for_link(&bob.join("ws"), &ada);
        let task = settle(&s, &token, &id, 2).await;
        s.stop().await;
        assert_eq!(
            roost_tests::tree_hash(&ada),
            before,
            "Ada's root changed: {task}"
        );
        // Every object of every shadow repository: none holds Ada's secret.
        let shadows = data.join("checkpoints");
        let mut seen = 0;
        for repo in std::fs::read_dir(&shadows)
            .expect("shadow repositories")
            .flatten()
        {
            let out = std::process::Command::new("git")
                .arg("--git-dir")
                .arg(repo.path())
                .args(["cat-file", "--batch-all-objects", "--batch"])
                .output()
                .expect("git cat-file");
            let objects = String::from_utf8_lossy(&out.stdout);
            seen += objects.matches("bob's decoy").count();
            assert!(
                !objects.contains("ada's secret"),
                "Ada's file entered Bob's checkpoint: {task}"
            );
        }
        assert!(seen > 0, "no checkpoint was taken at all: {task}");
    }
}

/// The open questions of task `id` (a minute at most), once it has one.
async fn asked(s: &TestServer, token: &str, id: &str) -> Value {
    for _ in 0..1200 {
        let (_, asks) = s.get(&format!("/v1/tasks/{id}/asks"), token).await;
        if let Some(first) = asks.as_array().and_then(|a| a.first()) {
            return first.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never asked");
}

/// A task just created is not interrupted — neither the one that starts at
/// once nor one that waits for a slot (its loop has not taken the store's
/// claim yet: the server holds it) — in the answer to its creation, in
/// its own view and in the listing. Answering a question returns what
/// was answered (200): the question, the decision recorded, and the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_task_is_not_interrupted_and_an_answer_says_what_it_answered() {
    let s = server_with(
        write_then_done("out.txt"),
        ServerConfig {
            max_running: 1,
            ..ServerConfig::default()
        },
    )
    .await;
    let (_root, token) = s.tenant("team-a");
    let create = |prompt: &'static str| {
        let body = json!({"prompt": prompt, "workspace": "ws"}).to_string();
        let s = &s;
        let token = &token;
        async move { s.call("POST", "/v1/tasks", Some(token), Some(&body)).await }
    };
    let (status, first) = create("write out.txt").await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["interrupted"], false, "{first}");
    let first_id = first["id"].as_str().expect("id").to_owned();

    // The first holds the only slot, waiting for a person; the next waits
    // for the slot. Neither was interrupted.
    let ask = asked(&s, &token, &first_id).await;
    let (status, next) = create("next").await;
    assert_eq!(status, 201, "{next}");
    assert_eq!(
        (&next["queued"], &next["interrupted"]),
        (&json!(true), &json!(false)),
        "{next}"
    );
    let next_id = next["id"].as_str().expect("id");
    let (_, shown) = s.get(&format!("/v1/tasks/{next_id}"), &token).await;
    assert_eq!(
        (&shown["queued"], &shown["interrupted"]),
        (&json!(true), &json!(false)),
        "{shown}"
    );
    let (_, listed) = s.get("/v1/tasks", &token).await;
    let tasks = listed["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 2, "{listed}");
    assert!(tasks.iter().all(|t| t["interrupted"] == false), "{listed}");

    // The edit's approval: what was answered comes back.
    let ask_id = ask["ask_id"].as_str().expect("ask id");
    let (status, answered) = s
        .call(
            "POST",
            &format!("/v1/tasks/{first_id}/asks/{ask_id}"),
            Some(&token),
            Some(r#"{"decision":"approve"}"#),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["ask_id"], ask_id, "{answered}");
    assert_eq!(answered["task_id"], first_id.as_str(), "{answered}");
    assert_eq!(answered["kind"], "tool", "{answered}");
    assert_eq!(answered["question"], ask["question"], "{answered}");
    assert_eq!(
        answered["decision"],
        json!({"decision": "approve"}),
        "{answered}"
    );
    assert_eq!(answered["task"]["id"], first_id.as_str(), "{answered}");
    assert_eq!(answered["task"]["interrupted"], false, "{answered}");

    // The result: accepted, with the words of a denial kept as sent.
    let ask = asked(&s, &token, &first_id).await;
    assert_eq!(ask["kind"], "completion", "{ask}");
    let ask_id = ask["ask_id"].as_str().expect("ask id");
    let (status, answered) = s
        .call(
            "POST",
            &format!("/v1/tasks/{first_id}/asks/{ask_id}"),
            Some(&token),
            Some(r#"{"decision":"accept"}"#),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(
        (
            &answered["kind"],
            &answered["question"],
            &answered["decision"]
        ),
        (
            &json!("completion"),
            &json!("written"),
            &json!({"decision": "accept"})
        ),
        "{answered}"
    );
}

/// `GET /v1/me` names the token's tenant and root; `GET /v1/profiles`
/// lists the server's profiles by name with the default marked, and
/// nothing of the host's (no script or key files, no URLs). Both need a
/// token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn me_and_profiles_say_who_is_signed_in_and_what_a_task_may_name() {
    let s = server_with(json!([done("x")]), ServerConfig::default()).await;
    let (root, token) = s.tenant("team-a");
    let (_, other) = s.tenant("team-b");
    let (status, me) = s.get("/v1/me", &token).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        me,
        json!({
            "tenant": "team-a",
            "root": root.canonicalize().expect("root").display().to_string(),
            "auth": true
        })
    );
    let (_, me) = s.get("/v1/me", &other).await;
    assert_eq!(me["tenant"], "team-b", "{me}");

    let (status, profiles) = s.get("/v1/profiles", &token).await;
    assert_eq!(status, 200, "{profiles}");
    assert_eq!(
        profiles,
        json!([
            {"name": "quick", "provider": "scripted", "default": false},
            {"name": "replay", "provider": "scripted", "default": true}
        ])
    );
    assert!(
        !profiles.to_string().contains(".json"),
        "no host file: {profiles}"
    );
    for path in ["/v1/me", "/v1/profiles"] {
        let (status, v) = s.call("GET", path, None, None).await;
        assert_eq!(
            (status, v["code"].as_str()),
            (401, Some("unauthorized")),
            "{path}: {v}"
        );
    }
}

/// What `roost serve` says at start: where it listens, where its web UI
/// and API are (the web UI's address answers with the page, which knows
/// whether to ask for a token, and its icon is served), with and without
/// tokens.
///
/// Served as each of [`identities`]: root and `nobody` on CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_says_where_its_web_ui_is() {
    for who in identities() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path().canonicalize().expect("canonical");
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("ws")).expect("ws");
        let mut said = Vec::new();
        for no_auth in [false, true] {
            let data = dir.join(if no_auth { "data-open" } else { "data-auth" });
            let mut args: Vec<&std::ffi::OsStr> = Vec::new();
            if no_auth {
                args.extend(["--no-auth".as_ref(), "--root".as_ref(), root.as_os_str()]);
            }
            let s = Served::start_as(who, &data, &args).await;
            let mut log = String::new();
            for _ in 0..600 {
                log = s.log_text();
                if log.contains("API:") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let port = s.port.to_string();
            // Everything it says up to the API's address.
            let mut lines = Vec::new();
            for l in log.lines() {
                lines.push(
                    l.replace(&port, "PORT")
                        .replace(&*root.to_string_lossy(), "ROOT"),
                );
                if l.contains("API:") {
                    break;
                }
            }
            said.push(format!("--no-auth {no_auth}:\n{}", lines.join("\n")));

            // The address it gives is the web UI's page; its icon is there.
            let ui = log
                .lines()
                .find_map(|l| l.trim().strip_prefix("web UI: "))
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or_else(|| panic!("no web UI line: {log}"))
                .to_owned();
            let r = s.client.get(&ui).send().await.expect("the page");
            assert_eq!(r.status().as_u16(), 200, "{ui}");
            let page = r.text().await.expect("page");
            assert!(page.contains("<title>Roost</title>"), "{page}");
            assert!(page.contains(r#"rel="icon" href="/favicon.svg""#), "{page}");
            // Without tokens, the page knows not to ask for one.
            let auth = if no_auth { "none" } else { "token" };
            assert!(
                page.contains(&format!(r#"<meta name="roost-auth" content="{auth}">"#)),
                "{page}"
            );
            for icon in ["/favicon.svg", "/favicon.ico"] {
                let r = s.client.get(s.url(icon)).send().await.expect("icon");
                assert_eq!(r.status().as_u16(), 200, "{icon}");
                assert_eq!(
                    r.headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok()),
                    Some("image/svg+xml"),
                    "{icon}"
                );
                assert!(r.text().await.expect("svg").starts_with("<svg"), "{icon}");
            }
            s.stop().await;
        }
        insta::assert_snapshot!("serve_start_up", said.join("\n\n"));
    }
}
