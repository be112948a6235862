//! P6 as a series of runs, each in a process of its own: one run's CPU per
//! turn spreads ±8% on these VMs (254–298 µs in twenty identical runs),
//! more than any one change still left to make, so a figure is the median
//! of many, and a before/after is measured alternating two builds in the
//! same sitting (`ROOST_BENCH_AGAINST` names the build to alternate with:
//! any build of this bench, older ones included, since each run's figures
//! are read from the table it prints).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one P6 run printed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub wall_s: f64,
    pub cpu_s: f64,
    pub per_turn_us: f64,
    pub ratio_pct: f64,
}

/// The figures of P6's table row (`| 1.30 s | 1.35 s | 270 µs | 52% … |`),
/// the first row after its header.
pub fn parse(out: &str) -> Option<Run> {
    let mut lines = out
        .lines()
        .skip_while(|l| !l.starts_with("| wall | CPU time"));
    let row = lines.find(|l| {
        l.strip_prefix("| ")
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })?;
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let number = |i: usize| -> Option<f64> {
        let cell = cells.get(i)?;
        let end = cell
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(cell.len());
        cell[..end].parse().ok()
    };
    Some(Run {
        wall_s: number(1)?,
        cpu_s: number(2)?,
        per_turn_us: number(3)?,
        ratio_pct: number(4)?,
    })
}

/// One P6 run of the bench at `exe`, in a process of its own.
fn run_once(exe: &Path) -> Run {
    let out = Command::new(exe)
        .arg("p6")
        .env("ROOST_BENCH_RUNS", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} p6 failed: {}\n{text}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&text).unwrap_or_else(|| panic!("no P6 row in the output of {}:\n{text}", exe.display()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median, least and most of `f` over `runs`.
fn spread(runs: &[Run], f: impl Fn(&Run) -> f64) -> (f64, f64, f64) {
    let v: Vec<f64> = runs.iter().map(f).collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (median(v), lo, hi)
}

fn row(label: &str, runs: &[Run]) {
    let (pt, pt_lo, pt_hi) = spread(runs, |r| r.per_turn_us);
    let (ra, ra_lo, ra_hi) = spread(runs, |r| r.ratio_pct);
    let (wa, wa_lo, wa_hi) = spread(runs, |r| r.wall_s);
    println!(
        "| {label} | {} | {pt:.0} µs ({pt_lo:.0}–{pt_hi:.0}) | {ra:.1}% ({ra_lo:.0}–{ra_hi:.0}%) | {wa:.2} s ({wa_lo:.2}–{wa_hi:.2}) |",
        runs.len()
    );
}

/// `runs` P6 runs of this build, alternating with the build at `against`
/// when one is named; prints every run, then the medians.
pub fn p6_series(runs: usize, against: Option<PathBuf>) {
    let this = std::env::current_exe().expect("this bench's path");
    let mut ours = Vec::with_capacity(runs);
    let mut theirs = Vec::with_capacity(runs);
    println!(
        "| run | build | wall | CPU | CPU per turn | CPU / (wall × cores) |\n|---|---|---|---|---|---|"
    );
    for i in 1..=runs {
        if let Some(other) = &against {
            let r = run_once(other);
            println!(
                "| {i} | against | {:.2} s | {:.2} s | {:.0} µs | {:.0}% |",
                r.wall_s, r.cpu_s, r.per_turn_us, r.ratio_pct
            );
            theirs.push(r);
        }
        let r = run_once(&this);
        println!(
            "| {i} | this | {:.2} s | {:.2} s | {:.0} µs | {:.0}% |",
            r.wall_s, r.cpu_s, r.per_turn_us, r.ratio_pct
        );
        ours.push(r);
    }
    println!(
        "\nP6 over {runs} runs, medians (least–most):\n| build | runs | CPU per turn | CPU / (wall × cores) | wall |\n|---|---|---|---|---|"
    );
    row("this", &ours);
    if let Some(other) = &against {
        row(&format!("against {}", other.display()), &theirs);
        let ratio = median(ours.iter().map(|r| r.per_turn_us).collect())
            / median(theirs.iter().map(|r| r.per_turn_us).collect());
        println!("\nCPU per turn, this ÷ against (medians): {ratio:.3}×");
    }
}
