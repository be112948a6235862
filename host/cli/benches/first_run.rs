//! The first run against the hundredth (issue 26; see BENCHMARKS.md).
//!
//! P0: a 1-turn task (the model answers with `attempt_completion` at once)
//!     through the release `roost` binary against a local
//!     OpenAI-compatible server on 127.0.0.1, wall time: on a fresh data
//!     dir each run, and warm (the same data dir again). With
//!     `ROOST_BENCH_CODEX=/path/to/codex` (npm `@openai/codex`), the same
//!     1-turn task through `codex exec` against the same server (its
//!     Responses API), on a fresh `CODEX_HOME` and warm, in the same
//!     sitting.
//!
//! Run: `cargo bench -p roost --bench first_run`.

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use roost_tests::http::{Seen, Server, reply};

const ROOST: &str = env!("CARGO_BIN_EXE_roost");
const RUNS: usize = 11;

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn sse(events: &[serde_json::Value], named: bool) -> Vec<u8> {
    let mut body = String::new();
    for e in events {
        if named {
            body.push_str(&format!("event: {}\n", e["type"].as_str().unwrap()));
        }
        body.push_str(&format!("data: {e}\n\n"));
    }
    if !named {
        body.push_str("data: [DONE]\n\n");
    }
    reply(200, &[("Content-Type", "text/event-stream")], &body)
}

/// The model: one answer, in both wire formats.
fn answer(seen: &Seen) -> Vec<u8> {
    use serde_json::json;
    if seen.path.ends_with("/responses") {
        let item = json!({"type": "message", "id": "msg_1", "role": "assistant",
            "content": [{"type": "output_text", "text": "Done."}]});
        return sse(
            &[
                json!({"type": "response.created", "response": {"id": "resp_1"}}),
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                    "output_index": 0, "content_index": 0, "delta": "Done."}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
                json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
                    "input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0}}}}),
            ],
            true,
        );
    }
    sse(
        &[
            json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0,
                "delta": {"role": "assistant", "content": "Done.", "tool_calls": [{"index": 0,
                    "id": "call_1", "type": "function", "function": {
                        "name": "attempt_completion", "arguments": "{\"result\":\"Done.\"}"}}]},
                "finish_reason": null}]}),
            json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0,
                "delta": {}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}),
        ],
        false,
    )
}

fn timed(mut cmd: Command) -> Duration {
    let t = Instant::now();
    let o = cmd.output().unwrap();
    let took = t.elapsed();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    took
}

fn roost(server: &Server, data: &Path, ws: &Path) -> Command {
    let config = data.with_extension("toml");
    std::fs::write(&config, "").unwrap();
    let mut c = Command::new(ROOST);
    c.arg("--data-dir")
        .arg(data)
        .env("ROOST_CONFIG", &config)
        .env_remove("OPENAI_API_KEY")
        .args(["run", "Say done.", "--yes", "--model", "m", "--base-url"])
        .arg(server.url("/v1"))
        .arg("--workspace")
        .arg(ws);
    c
}

fn codex(bin: &Path, server: &Server, home: &Path, ws: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("CODEX_HOME", home)
        .env("OPENAI_API_KEY", "unused")
        .current_dir(ws)
        .args(["exec", "--skip-git-repo-check", "-m", "gpt-5", "-c"])
        .arg("model_provider=\"local\"")
        .arg("-c")
        .arg(format!(
            "model_providers.local={{name=\"local\",base_url=\"{}\",wire_api=\"responses\"}}",
            server.url("/v1")
        ))
        .arg("Say done.");
    c
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "# A workspace\n").unwrap();
    let server = Server::start(answer);
    let fresh = |i: usize, what: &str| root.path().join(format!("{what}-{i}"));

    let first: Vec<_> = (0..RUNS)
        .map(|i| timed(roost(&server, &fresh(i, "data"), &ws)))
        .collect();
    let warm_dir = fresh(0, "data");
    let warm: Vec<_> = (0..RUNS)
        .map(|_| timed(roost(&server, &warm_dir, &ws)))
        .collect();
    let (first, warm) = (p50(first), p50(warm));
    println!("\nP0: a 1-turn task, wall time, p50 of {RUNS} runs\n");
    println!("| agent | first run (fresh data dir) | warm | first / warm |\n|---|---|---|---|");
    println!(
        "| roost (release) | {:.0} ms | {:.0} ms | {:.2}× |",
        ms(first),
        ms(warm),
        first.as_secs_f64() / warm.as_secs_f64()
    );
    match std::env::var_os("ROOST_BENCH_CODEX") {
        Some(bin) => {
            let bin = Path::new(&bin);
            let cfirst: Vec<_> = (0..RUNS)
                .map(|i| {
                    let home = fresh(i, "codex-home");
                    std::fs::create_dir(&home).unwrap();
                    timed(codex(bin, &server, &home, &ws))
                })
                .collect();
            let home = fresh(0, "codex-home");
            let cwarm: Vec<_> = (0..RUNS)
                .map(|_| timed(codex(bin, &server, &home, &ws)))
                .collect();
            let (cfirst, cwarm) = (p50(cfirst), p50(cwarm));
            println!(
                "| codex exec | {:.0} ms | {:.0} ms | {:.2}× |",
                ms(cfirst),
                ms(cwarm),
                cfirst.as_secs_f64() / cwarm.as_secs_f64()
            );
            println!(
                "\nroost's first run against codex's: {:.1}× faster",
                cfirst.as_secs_f64() / first.as_secs_f64()
            );
        }
        None => println!("\n(set ROOST_BENCH_CODEX to the `codex` binary to compare)"),
    }
}
