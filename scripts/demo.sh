#!/usr/bin/env bash
# Roost's main job, offline: a scripted model adds a function to a copy of
# the example workspace through the sandboxed tools. Extra arguments go to
# `roost run` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)/workspace"
cp -r tests/fixtures/example/workspace "$work"
# cargo shows its build progress (the first build takes minutes).
cargo run -p roost -- run "Add a farewell function next to greet" \
  --workspace "$work" --script tests/fixtures/example/fix-greeting.json --yes "$@"
echo "workspace: $work"
