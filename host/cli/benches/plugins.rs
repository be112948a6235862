//! Third-party plugin benchmarks (issue 11; see BENCHMARKS.md).
//!
//! P9: `roost plugin install --yes` into a data directory with nothing
//!     installed (the first-party set already compiled), compile included: an fs-tools-sized plugin (fs-tools itself, its tool names
//!     changed in place so it installs as a third party's), and the
//!     conformance plugin in Rust, Python and JavaScript.
//! P10: `roost tool list` startup with 20 installed plugins, against the
//!     first-party set alone, with the plugins' tool lists kept in the
//!     component cache and with every list asked of an instance.
//! P11: an allowed HTTP GET from a plugin (the conformance plugin's
//!     `fetch`, through wasi:http and the host's checks) to a server on
//!     127.0.0.1, against the same GET made natively (reqwest, a new
//!     connection each time, as the plugin's is).
//!
//! Run: `cargo bench -p roost --bench plugins` (one of them: `-- p9`,
//! `-- p10`, `-- p11`). Uses the release `roost` binary and the test
//! fixtures (the Python and JavaScript ones need componentize-py and npm).

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use roost_core::first_party;
use roost_sandbox::capability::{Grant, NetworkGrant};
use roost_sandbox::plugins::PluginEngine;
use roost_tests::http::Server;
use roost_tests::{fixture_wasm, js_plugin_wasm, python_plugin_wasm};

const ROOST: &str = env!("CARGO_BIN_EXE_roost");

fn roost(data: &Path) -> Command {
    let mut c = Command::new(ROOST);
    c.arg("--data-dir").arg(data);
    c
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A plugin folder: `bytes` as `plugin.wasm`, a manifest asking for `caps`.
fn plugin_folder(root: &Path, name: &str, bytes: &[u8], caps: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plugin.wasm"), bytes).unwrap();
    std::fs::write(
        dir.join("plugin.toml"),
        format!(
            "[plugin]\nname = \"{name}\"\nversion = \"1.0.0\"\nworld = \"tool-plugin\"\nwit_version = \"0.2.0\"\ncomponent = \"plugin.wasm\"\n\n[capabilities]\n{caps}\n"
        ),
    )
    .unwrap();
    dir
}

/// Replace every `from` in `bytes` by `to` (same length: strings in a data
/// segment, so the component stays valid).
fn patch(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut n = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            i += from.len();
            n += 1;
        } else {
            i += 1;
        }
    }
    assert!(n > 0, "{} not found", String::from_utf8_lossy(from));
    out
}

/// Install `folder` into a fresh data dir whose first-party set is already
/// compiled (as after any first run); the wall time.
fn install(root: &Path, folder: &Path) -> Duration {
    let data = tempfile::tempdir_in(root).unwrap();
    let warm = roost(data.path()).args(["tool", "list"]).output().unwrap();
    assert!(warm.status.success());
    let t = Instant::now();
    let o = roost(data.path())
        .args(["plugin", "install", "--yes"])
        .arg(folder)
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    took
}

fn p9(root: &Path) {
    println!(
        "\nP9: `roost plugin install --yes`, nothing installed yet (first-party set compiled), compile included\n"
    );
    println!("| plugin | component | install (runs) |\n|---|---|---|");
    // fs-tools, each of its tools renamed (first letter upper-cased) so
    // none collides with the first-party set.
    let fs = first_party::ALL
        .iter()
        .find(|c| c.name == "fs-tools")
        .expect("fs-tools")
        .bytes;
    let engine = PluginEngine::new(first_party::engine_config(root.join("p9-cache"))).unwrap();
    let mut bytes = fs.to_vec();
    for tool in engine.load_bytes("fs-tools", fs).unwrap().tools() {
        let mut to = tool.name.as_bytes().to_vec();
        to[0] = to[0].to_ascii_uppercase();
        bytes = patch(&bytes, tool.name.as_bytes(), &to);
    }
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("fs-tools-sized (Rust, fs-tools renamed)", bytes, 3),
        (
            "conformance (Rust SDK)",
            std::fs::read(fixture_wasm("conformance-rs")).unwrap(),
            3,
        ),
        (
            "conformance (Python, componentize-py)",
            std::fs::read(python_plugin_wasm()).unwrap(),
            1,
        ),
        (
            "conformance (JavaScript, componentize-js)",
            std::fs::read(js_plugin_wasm()).unwrap(),
            1,
        ),
    ];
    for (i, (label, bytes, runs)) in cases.iter().enumerate() {
        let folder = plugin_folder(
            root,
            &format!("p9-{i}"),
            bytes,
            "read = \"workspace\"\nwrite = true",
        );
        let times: Vec<String> = (0..*runs)
            .map(|_| format!("{:.0} ms", ms(install(root, &folder))))
            .collect();
        println!(
            "| {label} | {:.1} MB | {} |",
            bytes.len() as f64 / 1e6,
            times.join(" / ")
        );
    }
}

/// Remove the tool lists the component cache keeps, so the next start asks
/// every plugin again (as every start did before they were kept).
fn forget_tool_lists(data: &Path) {
    // The engine keeps each plugin's checked tool list as
    // `<hash>-<engine>.plugin-<version>` (`TOOLS_ANSWER`).
    let cache = data.join("cache").join("components");
    let mut forgotten = 0;
    for e in std::fs::read_dir(cache).unwrap().flatten() {
        if e.file_name().to_string_lossy().contains(".plugin-") {
            std::fs::remove_file(e.path()).unwrap();
            forgotten += 1;
        }
    }
    assert!(forgotten > 0, "no kept tool list found to forget");
}

fn tool_list(data: &Path, runs: usize, kept: bool) -> Duration {
    // Once untimed: the first run may compile the first-party set.
    let warm = roost(data).args(["tool", "list"]).output().unwrap();
    assert!(warm.status.success());
    let samples = (0..runs)
        .map(|_| {
            if !kept {
                forget_tool_lists(data);
            }
            let t = Instant::now();
            let o = roost(data).args(["tool", "list"]).output().unwrap();
            let took = t.elapsed();
            assert!(o.status.success());
            took
        })
        .collect();
    p50(samples)
}

fn p10(root: &Path) {
    let bytes = std::fs::read(fixture_wasm("bench-marker")).unwrap();
    let first_party = tempfile::tempdir_in(root).unwrap();
    let twenty = tempfile::tempdir_in(root).unwrap();
    for i in 0..20 {
        let marked = patch(&bytes, b"MARKERxx", format!("m{i:07}").as_bytes());
        let folder = plugin_folder(root, &format!("bench-{i}"), &marked, "read = \"none\"");
        let o = roost(twenty.path())
            .args(["plugin", "install", "--yes"])
            .arg(&folder)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let runs = 21;
    let base = tool_list(first_party.path(), runs, true);
    let asked = tool_list(twenty.path(), runs, false);
    let with = tool_list(twenty.path(), runs, true);
    println!("\nP10: `roost tool list` wall time, p50 of {runs} runs\n");
    println!("| installed | p50 |\n|---|---|");
    println!("| first-party set only | {:.1} ms |", ms(base));
    println!(
        "| + 20 installed plugins ({:.0} KB each), every tool list asked of an instance | {:.1} ms |",
        bytes.len() as f64 / 1e3,
        ms(asked)
    );
    println!(
        "| + 20 installed plugins, tool lists kept in the cache | {:.1} ms (target ≤ 20 ms) |",
        ms(with)
    );
}

async fn p11(root: &Path) {
    let body = "x".repeat(1024);
    let server = Server::ok(Box::leak(body.into_boxed_str()));
    let engine =
        Arc::new(PluginEngine::new(first_party::engine_config(root.join("cache"))).unwrap());
    let plugin = engine
        .load_file("conformance", &fixture_wasm("conformance-rs"))
        .unwrap();
    let grant = Grant::new(root).network(NetworkGrant::allow([server.origin()]));
    let args = serde_json::json!({"url": server.url("/bench")}).to_string();
    let n = 300;
    let mut plugin_times = Vec::with_capacity(n);
    let mut native_times = Vec::with_capacity(n);
    let native = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for i in 0..n + 30 {
        let t = Instant::now();
        let out = engine.call(&plugin, "fetch", &args, &grant).await.unwrap();
        let tp = t.elapsed();
        assert_eq!(out.text.len(), 1024);
        let t = Instant::now();
        let text = native
            .get(server.url("/bench"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let tn = t.elapsed();
        assert_eq!(text.len(), 1024);
        if i >= 30 {
            plugin_times.push(tp);
            native_times.push(tn);
        }
    }
    let (p, nat) = (p50(plugin_times), p50(native_times));
    println!("\nP11: GET of 1 KiB from 127.0.0.1, p50 of {n} (after 30 warm-ups)\n");
    println!("| request | p50 |\n|---|---|");
    println!(
        "| from a plugin (fresh sandbox, wasi:http, host checks, new connection) | {:.0} µs |",
        p.as_secs_f64() * 1e6
    );
    println!(
        "| native (reqwest, new connection) | {:.0} µs |",
        nat.as_secs_f64() * 1e6
    );
    println!(
        "\nplugin / native = {:.2}×",
        p.as_secs_f64() / nat.as_secs_f64()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let only = |p: &str| args.iter().any(|a| a == p);
    let all = !only("p9") && !only("p10") && !only("p11");
    let root = tempfile::tempdir().unwrap();
    if all || only("p9") {
        p9(root.path());
    }
    if all || only("p10") {
        p10(root.path());
    }
    if all || only("p11") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(p11(root.path()));
    }
}
