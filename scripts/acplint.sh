#!/usr/bin/env bash
# acplint (PyPI, 0.1.0) against `roost acp` with a scripted model, twice:
# as it is, and through tests/acp/acplint_shim.py, which rewrites only
# acplint's string `protocolVersion` (the schema's is an integer; without
# the rewrite every later check fails at `initialize`). Writes both reports
# to docs/acplint/; docs/acplint.md explains every failure left.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
cargo build --quiet -p roost
VENV="$ROOT/target/acplint-venv"
[ -x "$VENV/bin/acplint" ] || { python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet acplint==0.1.0; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ws" "$ROOT/docs/acplint"
: > "$WORK/config.toml"
cat > "$WORK/script.json" <<'JSON'
{"turns": [{"text": "hello", "tool_calls": [{"name": "attempt_completion", "args": {"result": "hello"}}]}]}
JSON
run() { # $1: report name, $2…: the agent command's wrapper (if any)
  local name="$1"; shift
  rm -rf "$WORK/data"
  cat > "$WORK/agent.sh" <<SH
#!/bin/sh
ROOST_CONFIG="$WORK/config.toml" exec $* "$ROOT/target/debug/roost" --data-dir "$WORK/data" acp --script "$WORK/script.json" --workspace "$WORK" --ask-timeout 20
SH
  chmod +x "$WORK/agent.sh"
  COLUMNS=100 "$VENV/bin/acplint" --agent "$WORK/agent.sh" --cwd "$WORK/ws" --timeout 20 \
    --output text > "$ROOT/docs/acplint/$name.txt" 2>&1 || true
  # Paths and ids of this run are not part of the report.
  sed -i -e "s#$WORK#\$WORK#g" -e 's/roost-[0-9a-f-]\{36\}/roost-<id>/g' "$ROOT/docs/acplint/$name.txt"
  sed -n '/^Total:/p' "$ROOT/docs/acplint/$name.txt"
}
run as-is
run shimmed python3 "$ROOT/tests/acp/acplint_shim.py"
