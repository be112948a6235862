//! `roost serve`'s HTTP API: any method, path, query, headers and body,
//! through the real router (Host check, rate limit, auth, body limit,
//! every route) in process, over a real engine with a real SQLite store
//! and two tenants. Paths are the API's own (from its OpenAPI document),
//! their `{id}`s filled from the input or with a real task's id.
//!
//! Must hold: no request gets a 500; every error under `/v1` is a JSON
//! body with a code; a request without a valid token succeeds on no
//! route of `/v1` but the public three (health, ready, the document).

use std::sync::OnceLock;

use axum::body::Body;
use http_body_util::BodyExt;
use roost_server::{ServerConfig, ServerState};
use tower::ServiceExt;

use crate::input::Input;

struct World {
    router: axum::Router,
    paths: Vec<String>,
    token: String,
    other: String,
    task: String,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| crate::scratch::runtime().block_on(build()))
}

async fn build() -> World {
    let dir = crate::scratch::fresh("http");
    let turns = r#"{"model":"m","turns":[{"text":"done","tool_calls":[{"name":"attempt_completion","args":{"result":"ok"}}]}]}"#;
    let (cfg, engine) = crate::peer::scripted_engine(&dir, turns);
    let mut tokens = Vec::new();
    for name in ["alice", "bob"] {
        let root = dir.join(format!("root-{name}"));
        if let Err(e) = std::fs::create_dir_all(root.join("ws")) {
            panic!("cannot make a root: {e}");
        }
        match engine.tokens().create(name, &root, None) {
            Ok(t) => tokens.push(t.token),
            Err(e) => panic!("no token: {e}"),
        }
    }
    let config = ServerConfig {
        local_root: dir.clone(),
        profiles: roost_server::profiles_of(&cfg),
        ..ServerConfig::default()
    };
    let state = ServerState::new(engine, config);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 7777));
    let hosts = match roost_server::allowed_hosts(addr, &state) {
        Ok(h) => h,
        Err(e) => panic!("hosts: {e}"),
    };
    let router = roost_server::router(state, hosts);
    let paths = paths_of(&roost_server::openapi());
    let mut w = World {
        router,
        paths,
        token: tokens.first().cloned().unwrap_or_default(),
        other: tokens.get(1).cloned().unwrap_or_default(),
        task: String::new(),
    };
    let body = r#"{"workspace":"ws","prompt":"hello"}"#;
    let (status, text) = send(&w, "POST", "/v1/tasks", Some(&w.token), body).await;
    let v: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
    w.task = v
        .get("id")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("the seed task was not made ({status}): {v}"));
    w
}

fn paths_of(doc: &serde_json::Value) -> Vec<String> {
    doc.get("paths")
        .and_then(serde_json::Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

async fn send(
    w: &World,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, Vec<u8>) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:7777")
        .header("content-type", "application/json");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let Ok(req) = req.body(Body::from(body.to_owned())) else {
        return (0, Vec::new());
    };
    let resp = match w.router.clone().oneshot(req).await {
        Ok(r) => r,
        Err(e) => match e {},
    };
    let status = resp.status().as_u16();
    let streaming = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if streaming {
        return (status, Vec::new());
    }
    let bytes = match resp.into_body().collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(e) => panic!("the body broke: {e}"),
    };
    (status, bytes)
}

const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// The target.
pub fn run(data: &[u8]) {
    let w = world();
    let mut input = Input::new(data);
    let method = METHODS
        .get(usize::from(input.byte()) % METHODS.len())
        .copied()
        .unwrap_or("GET");
    let pick = usize::from(input.byte());
    let who = input.byte() % 4;
    let fill = input.text();
    let query = input.text();
    let body = String::from_utf8_lossy(input.rest()).into_owned();
    let template = w
        .paths
        .get(pick % w.paths.len().max(1))
        .cloned()
        .unwrap_or_default();
    let id = if fill.is_empty() {
        w.task.clone()
    } else {
        fill
    };
    let path = template
        .split('/')
        .map(|seg| {
            if seg.starts_with('{') {
                percent(&id)
            } else {
                seg.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/");
    let uri = if query.is_empty() {
        path.clone()
    } else {
        format!("{path}?{}", query.replace(['#', ' '], "%20"))
    };
    if uri.parse::<http::Uri>().is_err() {
        return;
    }
    let token = match who {
        0 => Some(w.token.as_str()),
        1 => Some(w.other.as_str()),
        2 => Some("not-a-token"),
        _ => None,
    };
    let (status, bytes) = crate::scratch::runtime().block_on(send(w, method, &uri, token, &body));
    assert_ne!(
        status,
        500,
        "{method} {uri}: {}",
        String::from_utf8_lossy(&bytes)
    );
    if path.starts_with("/v1") && status >= 400 && method != "HEAD" {
        let v: serde_json::Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(_) => panic!(
                "{method} {uri} → {status}, not JSON: {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        };
        assert!(v.get("code").is_some(), "{method} {uri} → {status}: {v}");
    }
    let public = ["/v1/health", "/v1/ready", "/v1/openapi.json"].contains(&path.as_str());
    if path.starts_with("/v1/") && matches!(who, 2 | 3) && !public {
        assert!(
            !(200..300).contains(&status),
            "{method} {uri} without a valid token → {status}"
        );
    }
}

/// `s` percent-encoded as one path segment.
fn percent(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
