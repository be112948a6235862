//! P4: assembling 1 MiB of tool arguments streamed in 10,000 deltas, against
//! a naive assembler that re-parses the whole buffer on every delta.
//! Run: `cargo bench -p roost-llm --bench llm`.

// Benchmark code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The allocator the `roost` binary runs with (see the workspace
/// `Cargo.toml`), so the host is measured as it ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use roost_llm::{ToolCallAssembler, partial_json};

fn main() {
    let content: String = "fn main() { println!(\"hello\"); }\n"
        .chars()
        .cycle()
        .take(1 << 20)
        .collect();
    let args = serde_json::json!({"path": "src/big.rs", "content": content}).to_string();
    let n = 10_000;
    let step = args.len().div_ceil(n);
    let mut deltas = Vec::with_capacity(n);
    let mut i = 0;
    while i < args.len() {
        let mut j = (i + step).min(args.len());
        while !args.is_char_boundary(j) {
            j += 1;
        }
        deltas.push(&args[i..j]);
        i = j;
    }

    let mut best = f64::MAX;
    let mut partials = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let mut asm = ToolCallAssembler::new();
        asm.start(0, Some("call_1"), Some("write_to_file"));
        partials = 0;
        for d in &deltas {
            if asm.push_args(0, d).is_some() {
                partials += 1;
            }
        }
        let calls = asm.finish(|| "x".into());
        std::hint::black_box(&calls);
        assert!(calls[0].args.is_ok());
        best = best.min(t.elapsed().as_secs_f64());
    }

    let t = Instant::now();
    let mut buf = String::new();
    let mut parsed = 0usize;
    for d in &deltas {
        buf.push_str(d);
        if partial_json(&buf).is_some() {
            parsed += 1;
        }
    }
    std::hint::black_box(parsed);
    let final_ok = serde_json::from_str::<serde_json::Value>(&buf).is_ok();
    let naive = t.elapsed().as_secs_f64();
    assert!(final_ok);

    println!(
        "P4: {} bytes of arguments in {} deltas",
        args.len(),
        deltas.len()
    );
    println!("| assembler | time | partial parses |\n|---|---|---|");
    println!(
        "| Roost (amortised partial parse + strict final parse), best of 5 | {:.2} ms | {partials} |",
        best * 1e3
    );
    println!(
        "| naive full re-parse per delta | {:.1} ms | {} |",
        naive * 1e3,
        deltas.len()
    );
    println!(
        "ratio: {:.0}x faster (target ≤ 20 ms and ≥ 50x)",
        naive / best
    );
}
