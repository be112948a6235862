//! What an MCP server sends Roost's client: the bodies of its HTTP
//! answers (JSON or an SSE stream, the parts of the input, each led by a
//! byte choosing its status, content type and session header), served
//! from 127.0.0.1 to the real client (rmcp's streamable-HTTP transport,
//! Roost's handler, its limits on names, descriptions and schemas), which
//! connects, lists tools and resources, and calls the first tool offered.
//!
//! Must hold: the client ends connected or failed, never hung (the
//! entry's timeout, 50 ms here, bounds each request); every tool it offers has a
//! valid, bounded name; a call's text is what the model would be given.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use axum::http::{Response, StatusCode};
use roost_commands::{CommandHost, CommandsConfig};
use roost_mcp::config::{McpConfig, Source, parse};
use roost_mcp::{McpServer, ServerState};

use crate::input::Input;

/// The replies still to give: each a shape byte and a body.
type Replies = Arc<Mutex<VecDeque<(u8, Vec<u8>)>>>;

struct World {
    url: String,
    replies: Replies,
    host: Arc<CommandHost>,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| crate::scratch::runtime().block_on(build()))
}

async fn build() -> World {
    let replies: Replies = Arc::default();
    let queue = Arc::clone(&replies);
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::any(move |method: axum::http::Method| {
            let queue = Arc::clone(&queue);
            async move { answer(&method, &queue) }
        }),
    );
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(l) => l,
        Err(e) => panic!("cannot listen: {e}"),
    };
    let url = match listener.local_addr() {
        Ok(a) => format!("http://{a}/mcp"),
        Err(e) => panic!("no address: {e}"),
    };
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let data = crate::scratch::fresh("mcp-client");
    let host = match CommandHost::new(
        &CommandsConfig::default(),
        &Default::default(),
        &data,
        Vec::new(),
        Default::default(),
    ) {
        Ok(h) => Arc::new(h),
        Err(e) => panic!("no command host: {e}"),
    };
    World { url, replies, host }
}

/// The next reply: its first byte's bits choose the status (200, 202,
/// 400, 404, 500), an event stream or JSON, and a session id.
fn answer(method: &axum::http::Method, queue: &Mutex<VecDeque<(u8, Vec<u8>)>>) -> Response<Body> {
    let next = if method == axum::http::Method::POST {
        queue.lock().ok().and_then(|mut q| q.pop_front())
    } else {
        None
    };
    let Some((shape, body)) = next else {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        return r;
    };
    let status = match shape % 8 {
        5 => StatusCode::ACCEPTED,
        6 => StatusCode::BAD_REQUEST,
        7 => StatusCode::NOT_FOUND,
        _ if shape == 0xff => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::OK,
    };
    let sse = shape & 0x10 != 0;
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    let kind = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    if let Ok(v) = axum::http::HeaderValue::from_str(kind) {
        r.headers_mut().insert("content-type", v);
    }
    if shape & 0x20 != 0 {
        r.headers_mut().insert(
            "mcp-session-id",
            axum::http::HeaderValue::from_static("fuzz-session"),
        );
    }
    r
}

/// The target.
pub fn run(data: &[u8]) {
    let w = world();
    let mut input = Input::new(data);
    let mut replies = VecDeque::new();
    for _ in 0..8 {
        let part = input.part();
        if part.is_empty() {
            break;
        }
        let (shape, body) = part.split_first().map_or((0, &[][..]), |(s, b)| (*s, b));
        replies.push_back((shape, body.to_vec()));
    }
    if let Ok(mut q) = w.replies.lock() {
        *q = replies;
    }
    let text = format!(
        r#"{{"mcpServers":{{"fz":{{"type":"streamable-http","url":"{}","timeout":2}}}}}}"#,
        w.url
    );
    let mut config = McpConfig::default();
    parse(
        std::path::Path::new("/fuzz/mcp_settings.json"),
        &text,
        Source::Global,
        &mut config,
    );
    let Some(mut entry) = config.servers.remove("fz") else {
        panic!(
            "the fuzz server's entry does not parse: {:?}",
            config.issues
        );
    };
    // A reply that never comes (a wrong id) is waited for this long: the
    // bound is the point, not its length.
    entry.timeout = std::time::Duration::from_millis(50);
    let ws = crate::scratch::dir().to_path_buf();
    let server = McpServer::new(
        entry,
        ws.clone(),
        ws,
        Arc::clone(&w.host),
        ServerState::Idle,
    );
    crate::scratch::runtime().block_on(async {
        server.ensure_started().await;
        let tools = server.tools();
        for t in &tools {
            if t.refused.is_none() {
                assert!(!t.name.is_empty() && t.name.len() <= 128, "{:?}", t.name);
                assert!(
                    t.name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)),
                    "{:?}",
                    t.name
                );
            }
        }
        let _ = server.resources();
        let _ = server.status();
        if let Some(t) = tools.iter().find(|t| t.refused.is_none())
            && let Ok(v) = server.call(&t.name, serde_json::Map::new()).await
        {
            let _ = roost_core::tools::mcp::result_text(&v);
        }
        server.stop();
    });
}
