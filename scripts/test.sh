#!/usr/bin/env bash
# Roost's test command (the README's second command). Installs the one tool
# cargo cannot: componentize-py, which the tests use to build the Python
# conformance plugin (a plain `cargo build` never needs it). pip puts it in
# ~/.local/bin, which is often not on PATH: look there too before installing.
# The wasm32-wasip2 target comes from rust-toolchain.toml via rustup.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$PATH:$HOME/.local/bin:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
export PATH
if ! command -v componentize-py >/dev/null 2>&1; then
  python3 -m pip install --quiet --user componentize-py==0.25.1 \
    || python3 -m pip install --quiet --break-system-packages --user componentize-py==0.25.1
fi
# The HTTP API's property-based test needs schemathesis; the web UI's test
# a headless Chromium and its WebDriver (Debian's packages).
if ! command -v st >/dev/null 2>&1; then
  python3 -m pip install --quiet --user schemathesis==4.32.5 \
    || python3 -m pip install --quiet --break-system-packages --user schemathesis==4.32.5
fi
# `roost acp`'s second client is the ACP Python SDK.
if ! python3 -c 'import acp' >/dev/null 2>&1; then
  python3 -m pip install --quiet --user agent-client-protocol==0.12.1 \
    || python3 -m pip install --quiet --break-system-packages --user agent-client-protocol==0.12.1
fi
# Commands run under bubblewrap; checkpoints keep a shadow git repository.
MISSING=""
command -v chromedriver >/dev/null 2>&1 || MISSING="$MISSING chromium chromium-driver"
command -v bwrap >/dev/null 2>&1 || MISSING="$MISSING bubblewrap"
command -v git >/dev/null 2>&1 || MISSING="$MISSING git"
# The store suite and the multi-host tests start a real PostgreSQL.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
  || MISSING="$MISSING postgresql"
# The TLS test makes its database's certificates with the openssl command.
command -v openssl >/dev/null 2>&1 || MISSING="$MISSING openssl"
if [ -n "$MISSING" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive \
    $SUDO apt-get install -y -q --no-install-recommends $MISSING
fi
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
# Real MCP servers and clients from npm (the MCP tests run them), pinned
# by tests/mcp/package-lock.json.
if [ ! -f tests/mcp/node_modules/.package-lock.json ] \
  || ! cmp -s tests/mcp/package-lock.json tests/mcp/node_modules/.package-lock.json.src 2>/dev/null; then
  npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error
  cp tests/mcp/package-lock.json tests/mcp/node_modules/.package-lock.json.src
fi
cargo test --manifest-path plugins/Cargo.toml --target-dir target/wasm-native
# Many end-to-end tests wait on child processes, servers and a model's
# latency: two tests a core keep the cores busy (on two cores the suite
# took 955 s at two threads, 619 s at four).
RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(( $(nproc) * 2 ))}"
export RUST_TEST_THREADS
cargo test --workspace "$@"
# The store without PostgreSQL (a CLI-only build): it still builds, and
# says why a shared store cannot be opened.
cargo test -p roost-store --no-default-features
