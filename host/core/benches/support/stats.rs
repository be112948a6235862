//! Percentiles of timed samples and the table row the benches print,
//! shared by the bench binaries of several crates (each includes this
//! file with `#[path]`).

use std::time::Duration;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// p50, p90 and p99 of a run.
pub struct Stats {
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
}

/// The percentiles of `samples`.
pub fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    Stats {
        p50: percentile(&samples, 0.5),
        p90: percentile(&samples, 0.9),
        p99: percentile(&samples, 0.99),
    }
}

/// Microseconds.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A markdown table row: name, p50, p90, p99 in µs.
pub fn row(name: &str, s: &Stats) {
    println!(
        "| {name} | {:.1} µs | {:.1} µs | {:.1} µs |",
        us(s.p50),
        us(s.p90),
        us(s.p99)
    );
}
