//! `roost acp` over stdio (issue 46; see BENCHMARKS.md), driven by the ACP
//! SDK's client role from this process, with a scripted zero-latency
//! model: `session/new` (round trip), prompt → first `agent_message_chunk`
//! and prompt → `end_turn` for a 1-turn task (the reply and
//! `attempt_completion`) and a 10-turn one (nine `read_file` turns, then
//! the completion). Every prompt is a new session's first, so a task is
//! created, run and recorded each time. Targets: `session/new` ≤ 20 ms,
//! a 1-turn prompt ≤ 50 ms (the published anchor: Claude Code 333 ms to
//! create a session, 2,109 ms to complete a prompt, with a mocked model).
//!
//! Run: `cargo bench -p roost --bench acp` (`ROOST_BENCH_ITERS` sets the
//! timed rounds, default 100, after 10 warm-up ones).

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
    SessionUpdate, StopReason, TextContent,
};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client};
use serde_json::json;

#[path = "../../core/benches/support/stats.rs"]
#[allow(dead_code)]
mod stats;
use stats::{row, stats};

const ROOST: &str = env!("CARGO_BIN_EXE_roost");
const WARM_UP: usize = 10;

fn iters() -> usize {
    std::env::var("ROOST_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(100)
}

/// A script of `turns` replies: `turns - 1` reads, then the completion.
fn script(dir: &Path, name: &str, turns: usize) -> std::path::PathBuf {
    let mut all: Vec<serde_json::Value> = (0..turns - 1)
        .map(|i| json!({"text": "Reading.", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt", "start_line": 1 + i % 3}}]}))
        .collect();
    all.push(json!({"text": "Done reading.", "tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}));
    let path = dir.join(name);
    std::fs::write(&path, json!({ "turns": all }).to_string()).unwrap();
    path
}

/// Time `rounds` rounds against one `roost acp` replaying `script`:
/// `session/new`, prompt → first chunk, prompt → end of turn.
async fn measure(
    dir: &Path,
    script: &Path,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>, Vec<Duration>) {
    let ws = dir.join("ws");
    let config = dir.join("none.toml");
    std::fs::write(&config, "").unwrap();
    let agent = AcpAgent::new(
        AcpAgentConfig::new(ROOST)
            .args([
                "--data-dir".to_owned(),
                dir.join("data").display().to_string(),
                "acp".to_owned(),
                "--script".to_owned(),
                script.display().to_string(),
                "--approve".to_owned(),
                "read".to_owned(),
                "--workspace".to_owned(),
                dir.display().to_string(),
            ])
            .env("ROOST_CONFIG", config.display().to_string()),
    );
    let first_chunk: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&first_chunk);
    Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                if matches!(n.update, SessionUpdate::AgentMessageChunk(_)) {
                    let mut at = seen.lock().unwrap();
                    if at.is_none() {
                        *at = Some(Instant::now());
                    }
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(agent, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let (mut new, mut chunk, mut done) = (Vec::new(), Vec::new(), Vec::new());
            for round in 0..WARM_UP + rounds {
                let started = Instant::now();
                let session = cx
                    .send_request(NewSessionRequest::new(ws.clone()))
                    .block_task()
                    .await?;
                let created = started.elapsed();
                *first_chunk.lock().unwrap() = None;
                let asked = Instant::now();
                let r = cx
                    .send_request(PromptRequest::new(
                        session.session_id,
                        vec![ContentBlock::Text(TextContent::new("read a.txt"))],
                    ))
                    .block_task()
                    .await?;
                let ended = asked.elapsed();
                assert_eq!(r.stop_reason, StopReason::EndTurn);
                let first = first_chunk
                    .lock()
                    .unwrap()
                    .map(|t| t.duration_since(asked))
                    .unwrap();
                if round >= WARM_UP {
                    new.push(created);
                    chunk.push(first);
                    done.push(ended);
                }
            }
            Ok((new, chunk, done))
        })
        .await
        .unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds = iters();
    println!("| ACP over stdio, scripted zero-latency model | p50 | p90 | p99 |");
    println!("|---|---|---|---|");
    for (turns, rounds) in [(1, rounds), (10, (rounds / 3).max(10))] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("ws/a.txt"), "one\ntwo\nthree\n").unwrap();
        let script = script(dir.path(), "script.json", turns);
        let (new, chunk, done) = measure(dir.path(), &script, rounds).await;
        if turns == 1 {
            row("`session/new`", &stats(new));
        }
        row(
            &format!("prompt → first chunk, {turns}-turn task"),
            &stats(chunk),
        );
        row(
            &format!("prompt → `end_turn`, {turns}-turn task"),
            &stats(done),
        );
    }
}
