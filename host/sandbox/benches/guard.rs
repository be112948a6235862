//! The write guard's cleanup against `rm -rf` (BENCHMARKS.md, issue 23):
//! a call creates 100,000 files outside its scope; the guard's check
//! removes them all. The same tree removed by `rm -rf` is the baseline
//! (target: the guard within 2×). Two shapes: 100 directories of 1,000
//! files (what a plugin looping `create_dir` + `write` makes) and one flat
//! directory of 100,000 files.
//!
//! `cargo bench -p roost-sandbox --bench guard` (`ROOST_BENCH_FILES`,
//! `ROOST_BENCH_RUNS` to change the size and the number of runs).

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use roost_sandbox::capability::{GuardBudget, GuardRule, Workspace, WriteGuard};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `files` files under `dir`, `per_dir` to a subdirectory (all in `dir`
/// itself when `per_dir` is 0).
fn make_tree(dir: &Path, files: usize, per_dir: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut sub = dir.to_path_buf();
    for i in 0..files {
        if per_dir > 0 && i % per_dir == 0 {
            sub = dir.join(format!("d{}", i / per_dir));
            std::fs::create_dir(&sub).expect("mkdir");
        }
        std::fs::write(sub.join(format!("f{i}")), b"x").expect("write");
    }
}

/// Drop the page cache's dirty state between runs so each starts alike.
fn settle() {
    let _ = std::process::Command::new("sync").status();
}

fn guard_run(files: usize, per_dir: usize) -> Duration {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws_path = tmp.path().join("ws");
    std::fs::create_dir_all(ws_path.join("out")).expect("mkdir");
    std::fs::write(ws_path.join("out/notes.md"), "notes").expect("write");
    let ws = Workspace::open(&ws_path).expect("workspace");
    // Scope `out/*.md`: everything else under `out/` is outside it.
    let allows = |rel: &str| {
        rel == "out" || (rel.starts_with("out/") && rel.ends_with(".md") && !rel[4..].contains('/'))
    };
    let watch = |_: &str| true;
    let rule = GuardRule {
        allows: &allows,
        watch_dir: &watch,
    };
    let guard =
        WriteGuard::arm(&ws, &[PathBuf::from("out")], &rule, GuardBudget::default()).expect("arm");
    make_tree(&ws_path.join("out/flood"), files, per_dir);
    settle();
    let started = Instant::now();
    let report = guard.check(&rule);
    let took = started.elapsed();
    assert!(report.failed.is_empty(), "{:?}", report.failed.first());
    assert!(!ws_path.join("out/flood").exists());
    assert!(ws_path.join("out/notes.md").exists());
    took
}

fn rm_run(files: usize, per_dir: usize) -> Duration {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("flood");
    make_tree(&dir, files, per_dir);
    settle();
    let started = Instant::now();
    let status = std::process::Command::new("rm")
        .arg("-rf")
        .arg(&dir)
        .status()
        .expect("rm");
    let took = started.elapsed();
    assert!(status.success() && !dir.exists());
    took
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let files = env("ROOST_BENCH_FILES", 100_000);
    let runs = env("ROOST_BENCH_RUNS", 3);
    println!(
        "machine: {} cores; {files} files, median of {runs} runs each, alternating",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("\n| shape | guard cleanup | `rm -rf` | guard / rm |\n|---|---|---|---|");
    for (shape, per_dir) in [("100 dirs × 1,000 files", 1000), ("one flat directory", 0)] {
        let mut guard = Vec::new();
        let mut rm = Vec::new();
        for _ in 0..runs {
            guard.push(guard_run(files, per_dir));
            rm.push(rm_run(files, per_dir));
        }
        let (g, r) = (median(guard), median(rm));
        println!(
            "| {shape} | {:.0} ms | {:.0} ms | {:.2}× |",
            ms(g),
            ms(r),
            g.as_secs_f64() / r.as_secs_f64()
        );
    }
}
