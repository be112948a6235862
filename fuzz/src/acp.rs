//! `roost acp` as an editor talks to it: JSON-RPC lines on its input,
//! through the ACP library's framing into Roost's handlers (v1, or the
//! draft v2 router), over a real engine whose model is a scripted one and
//! whose sessions must lie in one root. Unless the first byte says
//! otherwise, `initialize` and `session/new` come first, and every `$S` in
//! the rest is that session's id, so the fuzzer spends its time on prompts,
//! modes, loads, cancels and answers to the agent's requests.
//!
//! Must hold: every line the agent writes is one JSON-RPC 2.0 message; the
//! connection ends when the editor's side does (no hang); the file outside
//! the root is as it was.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::ByteStreams;
use roost_core::engine::Engine;
use roost_protocol::Endpoint;
use roost_server::acp::{Settings, serve_on};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::input::Input;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}"#;

struct World {
    engine: Arc<Engine>,
    root: PathBuf,
    ws: PathBuf,
    canary: PathBuf,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = crate::scratch::fresh("acp");
        let root = dir.join("root");
        let ws = root.join("ws");
        if let Err(e) = std::fs::create_dir_all(ws.join("src")) {
            panic!("cannot make the workspace: {e}");
        }
        let canary = dir.join("canary.md");
        if let Err(e) = std::fs::write(&canary, "canary\n") {
            panic!("cannot plant the canary: {e}");
        }
        let turns = r#"{"model":"m","turns":[{"text":"reading","tool_calls":[{"name":"read_file","args":{"path":"../../canary.md"}}]},{"text":"done","tool_calls":[{"name":"attempt_completion","args":{"result":"ok"}}]}]}"#;
        let (_, engine) = crate::peer::scripted_engine(&dir, turns);
        World {
            engine,
            root,
            ws,
            canary,
        }
    })
}

/// The target.
pub fn run(data: &[u8]) {
    let w = world();
    let mut input = Input::new(data);
    let flags = input.byte();
    let raw = flags.is_multiple_of(8);
    let settings = Settings {
        root: Some(w.root.clone()),
        mode: "code".to_owned(),
        endpoint: Endpoint::default(),
        ask_timeout: Duration::from_millis(50),
        modes_dir: None,
        approval: None,
        max_turns: Some(3),
        draft_v2: flags & 0x10 != 0,
    };
    let rest = input.rest().to_vec();
    let engine = Arc::clone(&w.engine);
    let ws = w.ws.to_string_lossy().into_owned();
    // Every request the editor's lines make, by id: the editor stays
    // until each is answered (or a while has passed), so prompts run.
    let mut pending: HashSet<String> = rest
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .filter(|v| v.get("method").is_some_and(serde_json::Value::is_string))
        .filter_map(|v| {
            v.get("id")
                .filter(|id| id.is_number() || id.is_string())
                .map(ToString::to_string)
        })
        .collect();
    let out = crate::scratch::runtime().block_on(async move {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(theirs);
        let transport = ByteStreams::new(write.compat_write(), read.compat());
        let serving = tokio::spawn(serve_on(engine, settings, transport));
        let (from, mut to) = tokio::io::split(ours);
        // The library answers `session/new` only once `initialize` is
        // answered: the writer waits for each answer the reader sees. The
        // reader also hands the writer the editor's answers to the agent's
        // requests, and says when every request has its answer.
        let (init_tx, init_rx) = oneshot::channel::<String>();
        let (session_tx, session_rx) = oneshot::channel::<String>();
        let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(async move {
            let mut body = rest;
            if !raw {
                let _ = to.write_all(format!("{INITIALIZE}\n").as_bytes()).await;
                let _ = init_rx.await;
                let new = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                    "params": {"cwd": ws, "mcpServers": []}});
                let _ = to.write_all(format!("{new}\n").as_bytes()).await;
                let id = session_rx.await.unwrap_or_default();
                body = replace(&body, b"$S", id.as_bytes());
            }
            let _ = to.write_all(&body).await;
            // Answers until the reader is satisfied; a bound on the wait,
            // should the agent leave a request unanswered (the hang-up
            // that follows must still end everything).
            while let Ok(Some(reply)) = tokio::time::timeout(PATIENCE, reply_rx.recv()).await {
                let _ = to.write_all(&reply).await;
            }
            let _ = to.shutdown().await;
        });
        let mut lines = tokio::io::BufReader::new(from).split(b'\n');
        let mut out = Vec::new();
        let mut handshake = [Some(init_tx), Some(session_tx)];
        let mut reply_tx = Some(reply_tx);
        if pending.is_empty() && raw {
            reply_tx = None;
        }
        while let Ok(Some(line)) = lines.next_segment().await {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
                let id = v.get("id").map(ToString::to_string);
                if v.get("method").is_some() {
                    if let (Some(id), Some(tx)) = (id, &reply_tx) {
                        let _ = tx.send(answer(&id, &v));
                    }
                } else if let Some(id) = id {
                    if !raw && let Some(tx) = handshake_slot(&mut handshake, &id) {
                        let session = v["result"]["sessionId"].as_str().unwrap_or_default();
                        let _ = tx.send(session.to_owned());
                        if id == "2" && pending.is_empty() {
                            reply_tx = None;
                        }
                    } else if pending.remove(&id) && pending.is_empty() {
                        reply_tx = None;
                    }
                }
            }
            out.push(line);
        }
        drop(handshake);
        drop(reply_tx);
        let _ = writer.await;
        let _ = serving.await;
        out
    });
    if std::env::var_os("ROOST_FUZZ_SHOW").is_some() {
        for line in &out {
            eprintln!("agent: {}", String::from_utf8_lossy(line));
        }
    }
    crate::peer::assert_json_rpc(out.iter().map(Vec::as_slice));
    crate::peer::assert_canary(&w.canary);
}

/// How long the editor waits for the agent's next line once its own are
/// written.
const PATIENCE: Duration = Duration::from_secs(5);

/// The sender waiting for the answer to handshake request `id` (1 or 2).
fn handshake_slot(
    slots: &mut [Option<oneshot::Sender<String>>; 2],
    id: &str,
) -> Option<oneshot::Sender<String>> {
    match id {
        "1" => slots[0].take(),
        "2" => slots[1].take(),
        _ => None,
    }
}

/// The editor's answer to the agent's request `v`: a permission request
/// is declined, anything else is not offered.
fn answer(id: &str, v: &serde_json::Value) -> Vec<u8> {
    let body = if v["method"] == "session/request_permission" {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"outcome":{{"outcome":"cancelled"}}}}}}"#)
    } else {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"not offered"}}}}"#
        )
    };
    format!("{body}\n").into_bytes()
}

fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack.get(i..).is_some_and(|h| h.starts_with(from)) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.extend(haystack.get(i).copied());
            i += 1;
        }
    }
    out
}
