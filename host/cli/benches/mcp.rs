//! MCP both ways (issue 31; see BENCHMARKS.md).
//!
//! hub: a tool call through Roost's MCP hub (`McpServer::call`: the
//!      server's state check, the request under its timeout, the result
//!      as JSON) to a stdio server the hub started under bubblewrap,
//!      against the same call made directly with an `rmcp` client to the
//!      same server run unconfined. The server is the tests' own
//!      `tests/mcp/hostile.mjs tools`, tool `echo` with
//!      `{"message":"hi"}`. Both servers run at once and the two calls
//!      alternate in one loop. Target: the hub adds ≤ 50 µs at p50.
//! serve: `roost mcp serve --read` answering `read_file` for a 4 KiB file
//!      over stdio (every call in Roost's sandbox), against npm
//!      `@modelcontextprotocol/server-filesystem`'s `read_text_file` for
//!      the same file, from the same `rmcp` client, alternating in one
//!      loop. Target: Roost faster.
//!
//! Run: `cargo bench -p roost --bench mcp` (one of them: `-- hub`,
//! `-- serve`; `ROOST_BENCH_ITERS` sets the timed calls, default 2000,
//! after 200 warm-up ones). Needs `node`, bubblewrap (hub) and the npm
//! packages in `tests/mcp/node_modules` (`npm ci --prefix tests/mcp`);
//! a part whose prerequisites are missing is skipped with a message.

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The allocator the `roost` binary runs with, so the hub is measured as
/// it ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use roost_core::commands::{CommandHost, CommandsConfig};
use roost_core::config::SecretStore;
use roost_core::mcp::{McpHub, ServerState};
use serde_json::{Map, Value, json};

type Error = Box<dyn std::error::Error>;

const ROOST: &str = env!("CARGO_BIN_EXE_roost");
const WARM_UP: usize = 200;

#[path = "../../core/benches/support/stats.rs"]
#[allow(dead_code)]
mod stats;
use stats::{row, stats, us};

fn iters() -> usize {
    std::env::var("ROOST_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(2000)
}

/// The tests' MCP directory (`tests/mcp`).
fn mcp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp")
}

/// Whether `node` runs here.
fn has_node() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A directory outside `/tmp` (bubblewrap gives servers a private `/tmp`).
fn outside_tmp() -> Result<tempfile::TempDir, Error> {
    Ok(tempfile::tempdir_in("/var/tmp")?)
}

/// An `rmcp` client of `cmd` over stdio; the server's stderr is read and
/// dropped (the hub reads it too).
async fn client(cmd: tokio::process::Command) -> Result<RunningService<RoleClient, ()>, Error> {
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stderr) = stderr {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
        });
    }
    Ok(().serve(transport).await?)
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A result that is not an error, or why it is one.
fn check(r: &CallToolResult, what: &str) -> Result<(), Error> {
    if r.is_error == Some(true) {
        return Err(format!("{what} answered with an error: {:?}", r.content).into());
    }
    Ok(())
}

// ---------------------------------------------------------------- hub

async fn hub() -> Result<(), Error> {
    if !has_node() {
        println!("hub: skipped (node is not installed)");
        return Ok(());
    }
    let script = mcp_dir().join("hostile.mjs").canonicalize()?;
    let dir = outside_tmp()?;
    let ws = dir.path().join("ws");
    let data = dir.path().join("data");
    let config = dir.path().join("config");
    for d in [&ws, &data, &config] {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(
        config.join("mcp_settings.json"),
        json!({"mcpServers": {"h": {"command": "node", "args": [script, "tools"]}}}).to_string(),
    )?;
    let sandbox = CommandHost::new(
        &CommandsConfig::default(),
        &BTreeMap::new(),
        &data,
        vec![],
        SecretStore::isolated(),
    )?;
    if let Err(why) = sandbox.confinement.check() {
        println!("hub: skipped (bubblewrap cannot run here: {why})");
        return Ok(());
    }
    let hub = McpHub::new(Some(config), &data, Arc::new(sandbox));
    let servers = hub.servers(&ws);
    servers.start().await;
    let server = servers
        .servers
        .get("h")
        .ok_or("the hub did not configure server `h`")?
        .clone();
    if server.state() != ServerState::Ready {
        let status = server.status();
        return Err(format!(
            "the hub's server is not ready: {:?}; errors: {:?}",
            status.state, status.errors
        )
        .into());
    }

    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(&script).arg("tools").current_dir(&ws);
    let direct = client(cmd).await?;

    let message = args(json!({"message": "hi"}));
    let n = iters();
    let (mut d, mut h) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..WARM_UP + n {
        let t = Instant::now();
        let r = direct
            .call_tool(CallToolRequestParams::new("echo").with_arguments(message.clone()))
            .await?;
        let took = t.elapsed();
        check(&r, "direct `echo`")?;
        std::hint::black_box(r);
        if i >= WARM_UP {
            d.push(took);
        }

        let t = Instant::now();
        let r = server.call("echo", message.clone()).await?;
        let took = t.elapsed();
        if r["isError"] == json!(true) {
            return Err(format!("hub `echo` answered with an error: {r}").into());
        }
        std::hint::black_box(r);
        if i >= WARM_UP {
            h.push(took);
        }
    }
    direct.cancel().await?;
    hub.shutdown();

    let (d, h) = (stats(d), stats(h));
    println!(
        "\nhub: `echo` on `hostile.mjs tools`, {n} calls each after {WARM_UP} warm-up ones, alternating"
    );
    println!("\n| call | p50 | p90 | p99 |\n|---|---|---|---|");
    row("direct rmcp client, server unconfined", &d);
    row("through the hub, server under bubblewrap", &h);
    let added = us(h.p50) - us(d.p50);
    println!(
        "\nadded by the hub (p50): {added:+.1} µs ({:.2}x); target ≤ 50 µs: {}",
        us(h.p50) / us(d.p50),
        if added <= 50.0 { "met" } else { "NOT met" }
    );
    Ok(())
}

// ---------------------------------------------------------------- serve

async fn serve() -> Result<(), Error> {
    if !has_node() {
        println!("serve: skipped (node is not installed)");
        return Ok(());
    }
    let fs_server = mcp_dir().join("node_modules/.bin/mcp-server-filesystem");
    if !fs_server.exists() {
        println!(
            "serve: skipped ({} is missing: run `npm ci --prefix tests/mcp`)",
            fs_server.display()
        );
        return Ok(());
    }
    let dir = outside_tmp()?;
    let ws = dir.path().join("ws");
    let data = dir.path().join("data");
    let home = dir.path().join("home");
    for d in [&ws, &data, &home] {
        std::fs::create_dir_all(d)?;
    }
    let ws = ws.canonicalize()?;
    let empty_config = dir.path().join("config.toml");
    std::fs::write(&empty_config, "")?;
    let line = "the quick brown fox jumps over the lazy dog 0123456789 abcdefghij\n";
    let content: String = line.repeat(4096 / line.len() + 1)[..4096].to_owned();
    let file = ws.join("file.txt");
    std::fs::write(&file, &content)?;

    let mut cmd = tokio::process::Command::new(ROOST);
    cmd.arg("--data-dir")
        .arg(&data)
        .args(["mcp", "serve", "--workspace"])
        .arg(&ws)
        .arg("--read")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("ROOST_CONFIG", &empty_config)
        .env_remove("ROOST_MCP_TOKEN");
    let roost = client(cmd).await?;
    let mut cmd = tokio::process::Command::new(&fs_server);
    cmd.arg(&ws);
    let fs = client(cmd).await?;

    let roost_args = args(json!({"path": "file.txt"}));
    let fs_args = args(json!({"path": file}));
    let n = iters();
    let (mut r, mut f) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..WARM_UP + n {
        let t = Instant::now();
        let res = roost
            .call_tool(CallToolRequestParams::new("read_file").with_arguments(roost_args.clone()))
            .await?;
        let took = t.elapsed();
        check(&res, "roost `read_file`")?;
        std::hint::black_box(res);
        if i >= WARM_UP {
            r.push(took);
        }

        let t = Instant::now();
        let res = fs
            .call_tool(CallToolRequestParams::new("read_text_file").with_arguments(fs_args.clone()))
            .await?;
        let took = t.elapsed();
        check(&res, "server-filesystem `read_text_file`")?;
        std::hint::black_box(res);
        if i >= WARM_UP {
            f.push(took);
        }
    }
    roost.cancel().await?;
    fs.cancel().await?;

    let (r, f) = (stats(r), stats(f));
    println!(
        "\nserve: a 4 KiB file over stdio, {n} calls each after {WARM_UP} warm-up ones, alternating"
    );
    println!("\n| server | p50 | p90 | p99 |\n|---|---|---|---|");
    row("roost mcp serve `read_file` (sandboxed)", &r);
    row("server-filesystem `read_text_file`", &f);
    let ratio = us(f.p50) / us(r.p50);
    println!(
        "\nserver-filesystem / roost (p50): {ratio:.2}x; target roost faster: {}",
        if ratio > 1.0 { "met" } else { "NOT met" }
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wants = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    println!(
        "machine: {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if wants("hub") {
        rt.block_on(hub())?;
    }
    if wants("serve") {
        rt.block_on(serve())?;
    }
    Ok(())
}
