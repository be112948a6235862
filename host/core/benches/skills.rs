//! Skills: discovery and validation of 1,000 skill folders (the target is
//! 50 ms), resolving them for a mode, and building the prompt's section
//! within its budget. Run: `cargo bench -p roost-core --bench skills`.
//! (`run_skill` against a component tool call is in `--bench task -- p9`.)

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::{Duration, Instant};

use roost_core::skills::{Catalog, Sources, prompt};

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = tmp.path().canonicalize().expect("canonical").join("ws");
    let dir = ws.join(".roo/skills");
    for i in 0..1000 {
        let name = format!("skill-{i:04}");
        std::fs::create_dir_all(dir.join(&name)).expect("mkdir");
        std::fs::write(
            dir.join(&name).join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: Skill {i}, which does one particular thing well when the user asks for it.\nlicense: MIT\nmetadata:\n  author: bench\n---\n\n# {name}\n\n{}",
                "Step by step instructions for the model.\n".repeat(40)
            ),
        )
        .expect("write");
    }
    let sources = Sources::default();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let first = Instant::now();
    let catalog = Catalog::scan(&sources, &ws);
    let first = first.elapsed();
    assert_eq!(catalog.skills().len(), 1000);
    assert!(catalog.issues().is_empty());
    let mut scans = Vec::new();
    let mut resolves = Vec::new();
    let mut sections = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let c = Catalog::scan(&sources, &ws);
        scans.push(t.elapsed());
        let t = Instant::now();
        let seen = c.for_mode("code");
        resolves.push(t.elapsed());
        let t = Instant::now();
        let s = prompt::section(&seen.available, prompt::budget(128_000, 4)).expect("section");
        sections.push(t.elapsed());
        assert!(s.len() <= 10_240);
    }
    for v in [&mut scans, &mut resolves, &mut sections] {
        v.sort();
    }
    println!("| 1,000 skills | p50 | p90 | max |\n|---|---|---|---|");
    println!(
        "| discovery + validation (first scan: {:.1} ms) | {:.1} ms | {:.1} ms | {:.1} ms |",
        ms(first),
        ms(pct(&scans, 0.5)),
        ms(pct(&scans, 0.9)),
        ms(pct(&scans, 1.0))
    );
    println!(
        "| resolve for a mode | {:.2} ms | {:.2} ms | {:.2} ms |",
        ms(pct(&resolves, 0.5)),
        ms(pct(&resolves, 0.9)),
        ms(pct(&resolves, 1.0))
    );
    println!(
        "| prompt section within 2% of 128k tokens | {:.2} ms | {:.2} ms | {:.2} ms |",
        ms(pct(&sections, 0.5)),
        ms(pct(&sections, 0.9)),
        ms(pct(&sections, 1.0))
    );
}
