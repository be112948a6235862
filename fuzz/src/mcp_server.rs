//! `roost mcp serve` as another agent talks to it: JSON-RPC lines on its
//! input, through rmcp's framing into Roost's handler and the sandboxed
//! tools (a real engine; a workspace where `src/` may be written). Unless
//! the first byte says otherwise, a valid `initialize` handshake comes
//! first, so the fuzzer spends its time on what follows.
//!
//! Must hold: every line the server writes is one JSON-RPC message; the
//! files outside the write grant are as they were.

use std::sync::OnceLock;

use rmcp::ServiceExt;
use roost_core::call::grant::DirectGrant;
use roost_core::config::Config;
use roost_core::engine::EngineBuilder;
use roost_server::mcp::RoostMcp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::input::Input;

const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n"
);

struct World {
    server: RoostMcp,
    canary: std::path::PathBuf,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = crate::scratch::fresh("mcp-serve");
        let ws = dir.join("ws");
        for d in ["src", "docs"] {
            if let Err(e) = std::fs::create_dir_all(ws.join(d)) {
                panic!("cannot make the workspace: {e}");
            }
        }
        let canary = ws.join("docs/canary.md");
        if let Err(e) = std::fs::write(&canary, "canary\n") {
            panic!("cannot plant the canary: {e}");
        }
        let grant = match DirectGrant::new(&ws, true, &[ws.join("src")]) {
            Ok(g) => g,
            Err(e) => panic!("no grant: {e}"),
        };
        let agent =
            match EngineBuilder::from_config(&dir.join("data"), &Config::default()).build_agent() {
                Ok(a) => a,
                Err(e) => panic!("no agent: {e}"),
            };
        World {
            server: RoostMcp::new(agent, grant),
            canary,
        }
    })
}

/// The target.
pub fn run(data: &[u8]) {
    let w = world();
    let mut input = Input::new(data);
    let raw = input.byte().is_multiple_of(8);
    let mut lines = Vec::new();
    if !raw {
        lines.extend_from_slice(HANDSHAKE.as_bytes());
    }
    lines.extend_from_slice(input.rest());
    let server = w.server.clone();
    let out = crate::scratch::runtime().block_on(async move {
        let (client, theirs) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(theirs);
        let serving = tokio::spawn(async move {
            if let Ok(running) = server.serve((read, write)).await {
                let _ = running.waiting().await;
            }
        });
        let (mut from, mut to) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            let _ = to.write_all(&lines).await;
            let _ = to.shutdown().await;
        });
        let mut out = Vec::new();
        let _ = from.read_to_end(&mut out).await;
        let _ = writer.await;
        let _ = serving.await;
        out
    });
    crate::peer::assert_json_rpc(out.split(|b| *b == b'\n'));
    crate::peer::assert_canary(&w.canary);
}
