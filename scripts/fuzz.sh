#!/usr/bin/env bash
# Run every fuzz target (fuzz/fuzz_targets/) for SECONDS each (default 10)
# on its corpus: fuzz/corpus/<target> (grown, not committed) over the
# committed seeds in fuzz/seeds/<target> and what earlier campaigns kept,
# fuzz/kept/<target> (committed, minimised: every input that reached new
# coverage; refresh with `scripts/fuzz.sh --keep`). Stops with the crash's input in
# fuzz/artifacts/<target>/ and its log in fuzz/logs/<target>.log.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# cargo fuzz (libFuzzer) on the project's own stable toolchain: without a
# sanitizer (`-s none`: the code under test is safe Rust; no nightly to
# fetch), with coverage instrumentation and debug assertions. A `--dev`
# build by default (what CI builds, quickest to compile); ROOST_FUZZ_RELEASE=1
# builds optimised for long campaigns (16 codegen units: cargo fuzz's one
# unit would make the optimised build of wasmtime and Cranelift take most of
# an hour on two cores). ROOST_FUZZ_RUNS bounds each target's executions
# as well as its seconds. ROOST_FUZZ_SEED fixes libFuzzer's random seed (CI
# sets it, so a smoke run mutates the same way each time). command_policy_bash
# needs bubblewrap and strace (it runs bash as its oracle).
# ROOST_FUZZ_SMOKE_KEPT=N replays only N of each target's kept inputs (CI).
set -euo pipefail
cd "$(dirname "$0")/.."
KEEP=0
if [ "${1:-}" = "--keep" ]; then KEEP=1; shift; fi
SECONDS_EACH="${1:-10}"
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --version 0.13.2 --locked
fi
if [ "${ROOST_FUZZ_RELEASE:-0}" = 1 ]; then
  BUILD=(--release --debug-assertions --codegen-units 16); PROFILE=release
else
  BUILD=(--dev); PROFILE=debug
fi
# Into the main target directory: the host side of the build (build
# scripts, proc macros, the precompiling wasmtime) is the tests' own.
cargo fuzz build "${BUILD[@]}" -s none --fuzz-dir fuzz --target-dir target
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(cargo fuzz list --fuzz-dir fuzz)
fi
mkdir -p fuzz/logs
SEED=()
if [ -n "${ROOST_FUZZ_SEED:-}" ]; then SEED=(-seed="$ROOST_FUZZ_SEED"); fi
# A campaign's bound on executions too (whichever comes first; the issue's
# is 10 million or an hour).
if [ -n "${ROOST_FUZZ_RUNS:-}" ]; then SEED+=(-runs="$ROOST_FUZZ_RUNS"); fi
failed=0
if [ "$KEEP" = 1 ]; then
  # Merge what the campaigns grew into fuzz/kept: the smallest set of
  # inputs that reaches the same coverage.
  for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/kept/$t.new"
    "target/x86_64-unknown-linux-gnu/$PROFILE/$t" -merge=1 -timeout=60 -rss_limit_mb=4096 \
      "fuzz/kept/$t.new" "fuzz/kept/$t" "fuzz/corpus/$t" "fuzz/seeds/$t" >"fuzz/logs/$t.merge.log" 2>&1
    rm -rf "fuzz/kept/$t" && mv "fuzz/kept/$t.new" "fuzz/kept/$t"
    echo "kept $t: $(find "fuzz/kept/$t" -type f | wc -l) inputs"
  done
  exit 0
fi
for t in "${TARGETS[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t" "fuzz/seeds/$t" "fuzz/kept/$t"
  log="fuzz/logs/$t.log"
  kept="fuzz/kept/$t"
  if [ -n "${ROOST_FUZZ_SMOKE_KEPT:-}" ]; then
    # A smoke run (CI) replays the seeds and a fixed sample of the kept
    # inputs (the first N by name: their names are hashes, so a spread):
    # the whole kept corpus, some 30,000 inputs in a debug build, is a
    # campaign's start, not a smoke's.
    kept="target/fuzz-smoke/$t"
    rm -rf "$kept" && mkdir -p "$kept"
    mapfile -t inputs < <(find "fuzz/kept/$t" -type f | sort)
    for f in "${inputs[@]:0:$ROOST_FUZZ_SMOKE_KEPT}"; do cp "$f" "$kept/"; done
  fi
  if ROOST_FUZZ_STATS="fuzz/logs/$t.stats" \
    "target/x86_64-unknown-linux-gnu/$PROFILE/$t" "fuzz/corpus/$t" "$kept" "fuzz/seeds/$t" \
    -max_total_time="$SECONDS_EACH" -timeout=60 -rss_limit_mb=4096 \
    -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 "${SEED[@]}" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    echo "fuzz $t: ${runs:-?} runs in ${took:-$SECONDS_EACH}s, ${cov:-cov: ?}, no crash"
  else
    echo "fuzz $t: FAILED (input in fuzz/artifacts/$t/, log $log):"
    grep -A12 -m1 -E 'panicked at|ERROR: libFuzzer' "$log" || tail -20 "$log"
    failed=1
  fi
done
exit "$failed"
