#!/bin/sh
# Roost's MCP client under the MCP conformance suite
# (`conformance client --command "sh tests/mcp/conformance-client.sh"`):
# the scenario's server URL comes last, the scenario's name in
# MCP_CONFORMANCE_SCENARIO, the `roost` binary in ROOST. The server is
# configured as a global one in a scratch config directory, as a user
# would; `roost mcp list` initializes and lists, `roost mcp call` calls.
set -eu
url="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/xdg/roost" "$dir/ws"
printf '{"mcpServers":{"conf":{"type":"streamable-http","url":"%s","timeout":20}}}' "$url" \
  > "$dir/xdg/roost/mcp_settings.json"
export XDG_CONFIG_HOME="$dir/xdg"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  tools_call)
    "$ROOST" --data-dir "$dir/data" mcp call conf add_numbers --args '{"a":2,"b":3}' --workspace "$dir/ws" ;;
  sse-retry)
    "$ROOST" --data-dir "$dir/data" mcp call conf test_reconnection --workspace "$dir/ws" ;;
  *)
    "$ROOST" --data-dir "$dir/data" mcp list --workspace "$dir/ws" ;;
esac
