#!/usr/bin/env bash
# Runs the server benchmarks P15 and P16 (release build). Installs
# `opencode serve` (npm opencode-ai), P16's baseline, into
# target/opencode-bench first.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x target/opencode-bench/node_modules/.bin/opencode ]; then
  mkdir -p target/opencode-bench
  npm install --silent --prefix target/opencode-bench opencode-ai@1.18.33
fi
cargo bench -p roost --bench server -- "$@"
