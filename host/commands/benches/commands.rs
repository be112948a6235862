//! What bubblewrap adds to a command: `true` run through the command
//! runner (spawn, both pipes read, exit awaited, process group reaped)
//! unconfined and under bubblewrap with a workspace profile, on the same
//! machine in the same sitting. Target: at most 3 ms added.
//!
//! `cargo bench -p roost-commands --bench commands`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use roost_commands::{CommandHost, CommandsConfig, Confinement, Plan, run};
use roost_sandbox::secrets::SecretStore;

const N: usize = 300;

fn host(sandbox: &str, data: &std::path::Path) -> CommandHost {
    CommandHost::new(
        &CommandsConfig {
            enabled: true,
            command_sandbox: Some(sandbox.into()),
            ..CommandsConfig::default()
        },
        &BTreeMap::new(),
        data,
        Vec::new(),
        SecretStore::isolated(),
    )
    .expect("host")
}

async fn time(host: &CommandHost, ws: &std::path::Path) -> Vec<Duration> {
    let profile = host.profiles.get("workspace").expect("profile").clone();
    let env = host.environment(&profile);
    let writable = vec![ws.to_path_buf()];
    let mut out = Vec::with_capacity(N);
    for i in 0..N + 20 {
        let plan = Plan {
            visible: &[],
            line: "true",
            cwd: ws,
            workspace: ws,
            writable: &writable,
            profile: &profile,
            hidden: &host.hidden,
            env: &env,
            proxy: None,
            held: &[],
            binds: &[],
        };
        let mut capture = host
            .outputs
            .start("bench", &format!("c{i}"), host.limits)
            .expect("capture");
        let t = Instant::now();
        let ended = run(
            host.confinement.command(&plan, 30).expect("command"),
            Duration::from_secs(30),
            &mut capture,
            |_| async {},
            std::future::pending(),
        )
        .await
        .expect("runs");
        let took = t.elapsed();
        assert_eq!(ended.code(), Some(0));
        if i >= 20 {
            out.push(took);
        }
    }
    out.sort();
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws: PathBuf = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    let plain = host("none", &dir.path().join("data"));
    let bwrap = host("bubblewrap", &dir.path().join("data"));
    if let Err(e) = bwrap.confinement.check() {
        eprintln!("bubblewrap cannot run here: {e}");
        return;
    }
    assert_eq!(plain.confinement, Confinement::None);
    let p = time(&plain, &ws).await;
    let b = time(&bwrap, &ws).await;
    let pct = |v: &[Duration], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    println!("execute_command(\"true\"), {N} runs each (after 20 warm-up runs):");
    for (name, v) in [("plain spawn", &p), ("bubblewrap", &b)] {
        println!(
            "  {name:12} p50 {:6.2} ms  p90 {:6.2} ms  p99 {:6.2} ms",
            ms(pct(v, 0.5)),
            ms(pct(v, 0.9)),
            ms(pct(v, 0.99))
        );
    }
    println!(
        "  added by bubblewrap: p50 {:+.2} ms ({:.2}x)",
        ms(pct(&b, 0.5)) - ms(pct(&p, 0.5)),
        ms(pct(&b, 0.5)) / ms(pct(&p, 0.5))
    );
}
