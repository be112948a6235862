#!/usr/bin/env bash
# Roost's main job, offline: a scripted model adds a function to a copy of
# the example workspace through the sandboxed tools. Extra arguments go to
# `roost run` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
base="$(mktemp -d)"
work="$base/workspace"
# The demo's task store is its own, not the user's data dir.
export ROOST_DATA_DIR="${ROOST_DATA_DIR:-$base/roost-data}"
cp -r tests/fixtures/example/workspace "$work"
# The debug build: the one `scripts/test.sh` goes on with (it rebuilds the
# few crates whose test features differ), and the binary README's "Install"
# copies onto your PATH.
if [ ! -x "${CARGO_TARGET_DIR:-target}/debug/roost" ]; then
  echo "First build: cargo compiles Roost, wasmtime and the sandboxed plugins: about 10 minutes" >&2
  echo "on an idle 2-core machine, up to twice that on a busy one, mostly wasmtime and Cranelift;" >&2
  echo "cargo's progress bar follows. For a few of those minutes it shows roost-core(build): the first-party plugins" >&2
  echo "being built for wasm32-wasip2 and precompiled (cargo build -vv shows its lines)." >&2
  echo "The tests reuse most of this build; later runs start at once." >&2
fi
cargo run -p roost -- run "Add a farewell function next to greet" \
  --workspace "$work" --script tests/fixtures/example/fix-greeting.json --yes "$@"
echo "workspace: $work"
echo "data dir:  $ROOST_DATA_DIR (see it with: ROOST_DATA_DIR=$ROOST_DATA_DIR cargo run -p roost -- history list)"
