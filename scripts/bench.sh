#!/usr/bin/env bash
# Runs Roost's benchmarks (release build). Installs the MCP reference server
# used as P2's baseline into target/mcp-bench first.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f target/mcp-bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js ]; then
  mkdir -p target/mcp-bench
  npm install --silent --prefix target/mcp-bench @modelcontextprotocol/server-filesystem@2026.8.31
fi
cargo bench -p roost-core --bench sandbox "$@"
