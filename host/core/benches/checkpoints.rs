//! What a checkpoint costs: the workspace snapshotted into its shadow
//! repository (Roost walks it by handle and applies `.gitignore` and its
//! own exclusions, `git ls-files`, `git update-index --stdin` of exactly
//! those paths, `git write-tree`) on
//! a 10,000-file workspace, when nothing changed since the last one and
//! when one file did. Targets: at most 50 ms when nothing changed.
//!
//! `cargo bench -p roost-core --bench checkpoints`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use roost_core::checkpoints::Checkpoints;
use roost_sandbox::capability::Workspace;

const FILES: usize = 10_000;
const RUNS: usize = 30;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    for i in 0..FILES {
        let sub = root.join(format!("src/m{:03}", i / 100));
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::write(
            sub.join(format!("f{i:05}.rs")),
            format!("// file {i}\npub fn f{i}() -> usize {{ {i} }}\n").repeat(20),
        )
        .expect("write");
    }
    let ws = Workspace::open(&root).expect("ws");
    let cps = Checkpoints::new(&dir.path().join("data"));
    let t = Instant::now();
    let (_, first) = cps.snapshot("bench", &ws).expect("first");
    println!(
        "{FILES} files, first snapshot (everything hashed): {:.0} ms",
        ms(t.elapsed())
    );
    let mut same = Vec::new();
    let mut one = Vec::new();
    for i in 0..RUNS {
        let t = Instant::now();
        let (_, tree) = cps.snapshot("bench", &ws).expect("unchanged");
        same.push(t.elapsed());
        if i == 0 {
            assert_eq!(tree, first, "nothing changed: the same tree");
        }
        std::fs::write(root.join("src/m000/f00000.rs"), format!("changed {i}\n")).expect("write");
        let t = Instant::now();
        let (_, tree) = cps.snapshot("bench", &ws).expect("one changed");
        one.push(t.elapsed());
        assert_ne!(tree, first);
    }
    same.sort();
    one.sort();
    let p = |v: &[Duration], q: f64| ms(v[((v.len() - 1) as f64 * q) as usize]);
    println!(
        "  nothing changed: p50 {:.1} ms  p90 {:.1} ms  (target 50 ms)",
        p(&same, 0.5),
        p(&same, 0.9)
    );
    println!(
        "  one file changed: p50 {:.1} ms  p90 {:.1} ms",
        p(&one, 0.5),
        p(&one, 0.9)
    );
}
