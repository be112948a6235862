//! Sandboxed tool-call benchmarks P1–P3 (see BENCHMARKS.md).
//!
//! P1: `read_file` of a 4 KiB file through fs-tools, the whole per-call cycle
//!     (grant → store → instantiate → call → drop) on a grant holding the
//!     workspace open, as a task's does, against the same read as a native
//!     Rust function; and the same read in a workspace with a `.rooignore`.
//! P2: the same read through npm's `@modelcontextprotocol/server-filesystem`
//!     over MCP stdio (server started once, warmed up).
//! P3: loading fs-tools from the precompiled cache against a cold compile.
//!
//! Run with `scripts/bench.sh` (installs the MCP server) or
//! `cargo bench -p roost --bench sandbox`; P2 is skipped when the server is
//! not installed. `-- p1` runs P1 alone (for profiling);
//! `ROOST_BENCH_FS_TOOLS=<fs_tools.wasm>` measures another build of fs-tools
//! than the embedded one (a variant's opt-level, or one with its name
//! section kept so `ROOST_WASM_PERF_MAP=1` names its functions).

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The allocator the `roost` binary runs with (see the workspace
/// `Cargo.toml`), so the host is measured as it ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use roost_core::first_party;
use roost_sandbox::capability::{Grant, Workspace};
use roost_sandbox::plugins::{EngineConfig, PluginEngine};
use wasmtime::component::Component;

#[path = "support/stats.rs"]
#[allow(dead_code)]
mod stats;
use stats::{Stats, row, stats, us};

/// What `read_file` does, natively, step for step: parse the arguments,
/// open, stat, read, sniff for binary content, decode, count and number the
/// lines, and build the same JSON output.
fn native_read(root: &Path, args: &str) -> (String, String) {
    use std::io::Read as _;
    let a: serde_json::Value = serde_json::from_str(args).unwrap_or_default();
    let rel = a["path"].as_str().unwrap_or_default();
    let mut file = std::fs::File::open(root.join(rel)).expect("open");
    let meta = file.metadata().expect("stat");
    assert!(!meta.is_dir());
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes).expect("read");
    let head = &bytes[..bytes.len().min(8192)];
    assert!(!head.contains(&0) && std::str::from_utf8(head).is_ok());
    let text = String::from_utf8_lossy(&bytes);
    let total = text.lines().count();
    let mut out = String::with_capacity(text.len() + total * 6);
    for (i, line) in text.lines().enumerate() {
        let _ = writeln!(out, "{} | {line}", i + 1);
    }
    let data =
        serde_json::json!({"path": rel, "total_lines": total, "start_line": 1, "end_line": total});
    (out, data.to_string())
}

fn main() {
    let iters: usize = std::env::var("ROOST_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    let line = "the quick brown fox jumps over the lazy dog 0123456789 abcdefghij\n";
    let content: String = line.repeat(4096 / line.len() + 1)[..4096].to_owned();
    std::fs::write(ws.join("file.txt"), &content).expect("write");

    let engine =
        PluginEngine::new(EngineConfig::with_cache_dir(tmp.path().join("cache"))).expect("engine");
    let fs_tools = match std::env::var_os("ROOST_BENCH_FS_TOOLS") {
        Some(path) => std::fs::read(&path).expect("read ROOST_BENCH_FS_TOOLS"),
        None => first_party::FS_TOOLS.to_vec(),
    };
    let plugin = engine
        .load_bytes("fs-tools", &fs_tools)
        .expect("load fs-tools");
    // A task's grant holds the workspace it pinned when it started (see
    // `Grant::on_held`): a call mounts from that handle and never opens the
    // workspace by its path again.
    let held = Workspace::open(&ws).expect("open the workspace");
    let grant = Grant::on_held(&ws, &held).read();
    let args = r#"{"path":"file.txt"}"#;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    println!(
        "machine: {} cores, pooling allocator: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        engine.is_pooled()
    );
    println!("\n| benchmark | p50 | p90 | p99 |\n|---|---|---|---|");

    // P1: sandboxed call.
    for _ in 0..200 {
        rt.block_on(engine.call(&plugin, "read_file", args, &grant))
            .expect("warm-up call");
    }
    let mut wasm = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        let out = rt
            .block_on(engine.call(&plugin, "read_file", args, &grant))
            .expect("call");
        wasm.push(t.elapsed());
        std::hint::black_box(out);
    }
    let wasm = stats(wasm);
    row(
        "P1 fs-tools read_file 4 KiB, sandboxed (grant→store→instantiate→call→drop)",
        &wasm,
    );

    // The same read in a workspace with a `.rooignore` of the kind a
    // project keeps (a dozen patterns): a call reads it to hide what it
    // lists from the guest.
    let ignoring = tmp.path().join("ignoring");
    std::fs::create_dir(&ignoring).expect("mkdir");
    std::fs::write(ignoring.join("file.txt"), &content).expect("write");
    std::fs::write(
        ignoring.join(".rooignore"),
        "node_modules/\ndist/\nbuild/\ntarget/\n.env\n.env.*\n*.pem\n*.key\nsecrets/\n\
         coverage/\n*.log\n!keep.log\n",
    )
    .expect("write .rooignore");
    // As a project's `.rooignore` is: written more than two seconds before
    // (a file changed since is read again at each call).
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let ignoring_ws = Workspace::open(&ignoring).expect("open the workspace");
    let ignoring_grant = Grant::on_held(&ignoring, &ignoring_ws).read();
    let mut ignored = Vec::with_capacity(iters);
    for i in 0..iters + 200 {
        let t = Instant::now();
        let out = rt
            .block_on(engine.call(&plugin, "read_file", args, &ignoring_grant))
            .expect("call");
        if i >= 200 {
            ignored.push(t.elapsed());
        }
        std::hint::black_box(out);
    }
    row(
        "P1 the same read, the workspace with a 12-line .rooignore",
        &stats(ignored),
    );

    let mut native = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        std::hint::black_box(native_read(&ws, args));
        native.push(t.elapsed());
    }
    let native = stats(native);
    row(
        "P1 native Rust, the same steps (open, stat, read, sniff, number, JSON)",
        &native,
    );
    if std::env::args().any(|a| a == "p1") {
        // P1 only (for profiling).
        return;
    }

    // P2: MCP filesystem server over stdio.
    let mcp =
        mcp_server_path().and_then(|js| rt.block_on(mcp_bench(&js, &ws, iters.min(2000))).ok());
    if let Some(m) = &mcp {
        row("P2 MCP server-filesystem read_text_file over stdio", m);
    }

    // P3: cold compile vs cached load.
    let wasmtime = engine.wasmtime().expect("engine");
    let mut cold = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        std::hint::black_box(Component::new(wasmtime, first_party::FS_TOOLS).expect("compile"));
        cold.push(t.elapsed());
    }
    let cold = stats(cold);
    let cache = engine.cache().expect("cache configured");
    let mut warm = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let (c, outcome) = cache
            .load_or_compile(wasmtime, first_party::FS_TOOLS)
            .expect("load");
        warm.push(t.elapsed());
        assert_eq!(
            outcome,
            roost_sandbox::plugins::CacheOutcome::Hit,
            "cache miss in P3"
        );
        std::hint::black_box(c);
    }
    let warm = stats(warm);
    // The build's sealed artifact, as a first run loads it (issue 26).
    let shipped = PluginEngine::new(EngineConfig {
        pooling: false,
        ..first_party::engine_config(tmp.path().join("unused-cache"))
    })
    .expect("engine");
    let mut prebuilt = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let (c, outcome) = shipped
            .compile("fs-tools", first_party::FS_TOOLS)
            .expect("load");
        prebuilt.push(t.elapsed());
        assert_eq!(
            outcome,
            roost_sandbox::plugins::CacheOutcome::Prebuilt,
            "the build's artifact was not used in P3"
        );
        std::hint::black_box(c);
    }
    let prebuilt = stats(prebuilt);
    row("P3 fs-tools cold compile", &cold);
    row("P3 fs-tools cached load (verify MAC + deserialize)", &warm);
    row(
        "P3 fs-tools precompiled by the build (verify seal + deserialize from the binary)",
        &prebuilt,
    );

    println!("\nratios (p50):");
    println!(
        "  P1 sandboxed / native      = {:.1}x (target ≤ 10x, p50 ≤ 50 µs)",
        us(wasm.p50) / us(native.p50)
    );
    if let Some(m) = &mcp {
        println!(
            "  P2 MCP / sandboxed         = {:.1}x faster (target ≥ 20x)",
            us(m.p50) / us(wasm.p50)
        );
    } else {
        println!("  P2 skipped: MCP server not installed (run scripts/bench.sh)");
    }
    println!(
        "  P3 cold / cached           = {:.0}x faster (target ≥ 50x, cached ≤ 2 ms)",
        us(cold.p50) / us(warm.p50)
    );
    println!(
        "  fs-tools component size    = {} KiB",
        first_party::FS_TOOLS.len() / 1024
    );
}

fn mcp_server_path() -> Option<PathBuf> {
    let p = std::env::var_os("ROOST_MCP_FS_SERVER").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/mcp-bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    });
    p.exists().then_some(p)
}

async fn mcp_bench(
    js: &Path,
    ws: &Path,
    iters: usize,
) -> Result<Stats, Box<dyn std::error::Error>> {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

    let ws = ws.canonicalize()?;
    let transport =
        TokioChildProcess::new(tokio::process::Command::new("node").configure(|cmd| {
            cmd.arg(js).arg(&ws);
        }))?;
    let client = ().serve(transport).await?;
    let mut argsmap = serde_json::Map::new();
    argsmap.insert(
        "path".into(),
        serde_json::Value::String(ws.join("file.txt").display().to_string()),
    );
    let req = CallToolRequestParams::new("read_text_file").with_arguments(argsmap);
    for _ in 0..100 {
        client.call_tool(req.clone()).await?;
    }
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        std::hint::black_box(client.call_tool(req.clone()).await?);
        samples.push(t.elapsed());
    }
    client.cancel().await?;
    Ok(stats(samples))
}
