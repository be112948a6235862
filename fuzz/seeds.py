#!/usr/bin/env python3
"""Write fuzz/seeds/<target>/ from the project's own fixtures and docs.

Each seed is in its target's input shape (fuzz/src/<target>.rs: a few
choice bytes, then NUL-separated parts). Run from anywhere; the output is
committed, so the fuzzers start from real inputs:

    python3 fuzz/seeds.py
"""

import hashlib
import json
import pathlib
import re
import shutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "seeds"
NUL = b"\0"


def fenced(path, lang):
    """The fenced blocks of `lang` in a Markdown file."""
    text = path.read_text(encoding="utf-8")
    return re.findall(r"```" + lang + r"\n(.*?)```", text, flags=re.S)


def docs():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


seeds = {}


def seed(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    seeds.setdefault(target, {})[name] = data


# Model streams: the recorded SSE fixtures, whole and cut into small reads
# (the second byte list is the cut lengths).
for f in sorted((ROOT / "tests/fixtures/llm").glob("*.sse")):
    wire = b"\x01" if f.name.startswith("anthropic") else b"\x00"
    body = f.read_bytes()
    seed("sse_stream", f.stem, wire + b"\x3f" + NUL + body)
    seed("sse_stream", f.stem + "-cut", wire + b"\x00\x02\x07" + NUL + body)
    # The tool-call argument deltas of the same streams.
    for i, args in enumerate(re.findall(rb'"(?:arguments|partial_json)":"((?:[^"\\]|\\.)*)"', body)):
        if args:
            delta = json.loads(b'"' + args + b'"').encode()
            seed("tool_args", f"{f.stem}-{i}", b"\x00" + delta + NUL + b"\x00" + delta)

seed("tool_args", "interleaved", b"\x00" + b'{"path":"a' + NUL + b"\x01" + b'{"x":[1,' + NUL + b"\x00" + b'.rs"}' + NUL + b"\x01" + b"2]}")

# Providers' error bodies (as the transport's tests have them).
for name, html, retry, body in [
    ("openai", 0, "3", '{"error":{"message":"The model `x` does not exist","type":"invalid_request_error"}}'),
    ("ollama", 0, "Wed, 21 Oct 2015 07:28:00 GMT", '{"error":"model \\"x\\" not found, try pulling it first"}'),
    ("html", 1, "", "<!DOCTYPE html>\n<html><head><TITLE>Sign in</TITLE></head>\n<body>x</body></html>"),
    ("text", 0, "120", "upstream connect error\nreset reason: overflow"),
]:
    seed("error_body", name, bytes([html]) + retry.encode() + NUL + body.encode())

# Manifests and configs from the README and docs.
for path in docs():
    for i, block in enumerate(fenced(path, "toml")):
        tag = f"{path.stem}-{i}"
        if "[plugin]" in block:
            seed("plugin_manifest", tag, block)
        else:
            seed("config_toml", tag, block)
    for i, block in enumerate(fenced(path, "json")):
        if "mcpServers" in block:
            seed("mcp_config", f"{path.stem}-{i}-global", b"\x00" + block.encode())
            seed("mcp_config", f"{path.stem}-{i}-project", b"\x01" + block.encode())
    for i, block in enumerate(fenced(path, "yaml")):
        if "customModes" in block:
            seed("modes", f"{path.stem}-{i}", b"src/a.md" + NUL + block.encode() + NUL + block.encode())
        if "active_intents" in block:
            seed("intents", f"{path.stem}-{i}", b"docs/**" + NUL + b"src/auth/a.rs\nsrc/../x\n" + NUL + block.encode())

seed("mcp_config", "stdio", b"\x01" + json.dumps({"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": {"A": "${env:HOME}"}, "alwaysAllow": ["read_file"], "disabledTools": ["write_file"], "timeout": 30}}}).encode())
seed("mcp_config", "http", b"\x00" + json.dumps({"mcpServers": {"remote": {"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}}).encode())

# The fixtures' workspaces: intents and modes.
intents = ROOT / "tests/fixtures/intent-example/workspace/.orchestration/active_intents.yaml"
seed("intents", "intent-example", b"docs/**\n" + NUL + b"src/auth/login.rs\nsrc/auth/../../x\n/etc/passwd\n" + NUL + intents.read_bytes())
roomodes = ROOT / "tests/fixtures/intent-example/workspace/.roomodes"
seed("modes", "intent-example", b"src/a.rs" + NUL + NUL + roomodes.read_bytes())
seed("modes", "restricted", b"docs/x.md" + NUL + b"customModes:\n  - slug: docs\n    name: Docs\n    roleDefinition: Writes docs.\n    groups:\n      - read\n      - - edit\n        - fileRegex: \\.md$\n          description: Markdown only\n" + NUL + b'{"customModes":[{"slug":"code","name":"Read-only Code","roleDefinition":"x","groups":["read"]}]}')

# A registry's manifest answers: the artifact `roost plugin publish`
# writes (component, plugin.toml and signature layers), a wkg-style one
# (component only), pinned and not, with Docker configs.
def descriptor(media, body):
    return {"mediaType": media, "digest": "sha256:" + hashlib.sha256(body).hexdigest(), "size": len(body)}
layers = [descriptor("application/wasm", b"\0asm"), descriptor("application/vnd.roost.plugin.manifest.v1+toml", b"[plugin]"), descriptor("application/vnd.roost.plugin.signature.v1+minisign", b"sig")]
for i, ls in enumerate([layers, layers[:1]]):
    m = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": descriptor("application/vnd.wasm.config.v0+json", b"{}"), "layers": ls, "annotations": {"org.opencontainers.image.version": "1.0.0"}}).encode()
    d = "sha256:" + hashlib.sha256(m).hexdigest()
    docker = json.dumps({"auths": {"127.0.0.1:5000": {"auth": "YWRhOnB3"}, "https://index.docker.io/v1/": {"username": "a", "password": "b"}}}).encode()
    seed("registry", f"by-tag-{i}", b"oci://127.0.0.1:5000/roost/notes:1" + NUL + b"application/vnd.oci.image.manifest.v1+json" + NUL + d.encode() + NUL + docker + NUL + m)
    seed("registry", f"by-digest-{i}", b"oci://ghcr.io/ada/notes@" + d.encode() + NUL + NUL + NUL + b"{}" + NUL + m)
seed("registry", "index", b"oci://r.example/a:1" + NUL + b"application/vnd.oci.image.index.v1+json" + NUL + NUL + NUL + b'{"schemaVersion":2,"manifests":[]}')

# Skills.
for f in sorted((ROOT / "tests/fixtures/skills").glob("*/SKILL.md")):
    seed("skill_manifest", f.parent.name, f.parent.name.encode() + NUL + f.read_bytes())

# The command judge: rules and lines (allowed, denied, wrapped, opaque).
rules = b"npm test\ngit status\n=git log\necho\ncat\ntimeout\nxargs\nsh -c\n"
denied = b"rm\ngit push\nsh -c rm\n"
for i, line in enumerate([
    "npm test -- --watch", "git status && echo ok", "timeout 5 rm -rf /", "echo $(rm x)",
    "cat <<EOF\n$(rm x)\nEOF", "sh -c 'echo hi; rm x'", "xargs rm < list", "find . -delete",
    "FOO=1 npm test", "`rm x`", "echo hi > out.txt 2>&1 | cat", "eval \"$CMD\"", "(cd a && git status)",
    "git status; git push origin main", "for f in *.rs; do echo $f; done",
]):
    seed("command_policy", f"line-{i}", rules + NUL + denied + NUL + b"npm" + NUL + line.encode())

for i, line in enumerate([
    "echo hi", "echo hi; rm x", "cat x | grep y | sort | head -n 1", "timeout 1 echo a",
    "env A=1 echo a", "sh -c 'echo a; rm b'", "find . -name x -exec echo {} \\;", "echo $(printf x)",
    "ls && true || false", "xargs echo < /dev/null", "cd / && ls", "echo 'a;rm x'", "echo a\\\nrm x",
    "printf '%s\\n' a b | wc -l", "test -f x && cat x",
]):
    seed("command_policy_bash", f"line-{i}", b"\x00" + line.encode())

# What the judge's fuzzing found (each also a test in host/commands).
for i, line in enumerate(["echo " + "{" * 19, "a<<$(  x${", "echo 99999999999>x", "echo a; " + "((" * 16, "echo ~+99999999999999999999 {1..99999999999999999999}", "a<<<$(b<<  ", "a<<'' ", "cat <<<<<<<<in$((  x", "echo " + "${a[}" * 6, "$(g <<   h ", "echo a\0; rm x"]):
    seed("command_policy", f"found-{i}", rules + NUL + denied + NUL + b"npm" + NUL + line.encode())
    seed("command_policy_bash", f"found-{i}", b"\x00" + line.encode())

# `roost acp`: what an editor sends after the handshake (`$S` is the
# session's id); the first byte picks v1 (0x01) or the draft v2 router (0x11),
# 0x00 sends the handshake itself.
def rpc(i, method, params):
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


ACP = [
    [rpc(3, "session/prompt", {"sessionId": "$S", "prompt": [{"type": "text", "text": "read it"}]})],
    [rpc(3, "session/set_mode", {"sessionId": "$S", "modeId": "architect"}),
     rpc(4, "session/set_mode", {"sessionId": "$S", "modeId": "no-such-mode"})],
    [rpc(3, "session/set_config_option", {"sessionId": "$S", "configId": "profile", "value": "replay"})],
    [rpc(3, "session/list", {}), rpc(4, "session/list", {"cwd": "/"})],
    [rpc(3, "session/load", {"sessionId": "$S", "cwd": "/", "mcpServers": []})],
    [rpc(3, "session/close", {"sessionId": "$S"}), rpc(4, "session/prompt", {"sessionId": "$S", "prompt": []})],
    [json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "$S"}}),
     json.dumps({"jsonrpc": "2.0", "id": 999, "result": {"outcome": {"outcome": "cancelled"}}}), "[1, 2, 3]", "{"],
    [rpc(3, "session/new", {"cwd": "/tmp", "mcpServers": [{"name": "x", "command": "/bin/true", "args": [], "env": []}]})],
    [rpc(3, "session/prompt", {"sessionId": "$S", "prompt": [{"type": "resource_link", "uri": "file:///etc/passwd", "name": "p"}]})],
]
for i, lines in enumerate(ACP):
    body = ("\n".join(lines) + "\n").encode()
    seed("acp", f"v1-{i}", b"\x01" + body)
    seed("acp", f"v2-{i}", b"\x11" + body)
seed("acp", "raw", b"\x00" + (rpc(1, "initialize", {"protocolVersion": 1}) + "\n" + rpc(2, "session/new", {"cwd": "/", "mcpServers": []}) + "\n").encode())

# The HTTP API: a task made, read, listed, answered, cancelled.
for i, (method, pick, who, fill, query, body) in enumerate([
    (1, 0, 0, "", "", '{"workspace":"ws","prompt":"hi"}'),
    (0, 0, 0, "", "limit=2&status=running", ""),
    (0, 3, 0, "", "", ""),
    (1, 9, 0, "", "", '{"decision":"approve"}'),
    (0, 5, 1, "", "", ""),
    (0, 7, 3, "", "", ""),
    (1, 12, 0, "", "", '{"text":"more"}'),
]):
    seed("http_api", f"request-{i}", bytes([method, pick, who]) + fill.encode() + NUL + query.encode() + NUL + body.encode())


# MCP, as Roost's server reads it: requests after the handshake the target adds.
def rpc(i, method, params):
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


seed("mcp_server", "calls", b"\x01" + "\n".join([
    rpc(1, "tools/list", {}),
    rpc(2, "tools/call", {"name": "read_file", "arguments": {"path": "docs/canary.md"}}),
    rpc(3, "tools/call", {"name": "write_to_file", "arguments": {"path": "src/a.txt", "content": "x\n"}}),
    rpc(4, "tools/call", {"name": "write_to_file", "arguments": {"path": "docs/canary.md", "content": "y\n"}}),
    rpc(5, "resources/list", {}),
    rpc(6, "prompts/list", {}),
    rpc(7, "tools/call", {"name": "list_files", "arguments": {"path": ".", "recursive": True}}),
    rpc(8, "tools/call", {"name": "nope", "arguments": {}}),
]).encode() + b"\n")
seed("mcp_server", "raw-handshake", b"\x00" + rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}).encode() + b"\n")


# MCP, as Roost's client reads it: a server's HTTP answers.
def answer(shape, obj):
    return bytes([shape]) + (json.dumps(obj).encode() if obj is not None else b"")


init = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {}}, "serverInfo": {"name": "fz", "version": "1"}}}
tools = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}, {"name": "bad name!", "inputSchema": {"type": "object"}}]}}
result = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "hi"}, {"type": "image", "mimeType": "image/png", "data": "AAAA"}]}}
seed("mcp_client", "json", NUL.join([answer(0x20, init), answer(0x25, None), answer(0x20, tools), answer(0x20, result)]))
sse = lambda o: b"event: message\ndata: " + json.dumps(o).encode() + b"\n\n"
seed("mcp_client", "sse", NUL.join([b"\x30" + sse(init), answer(0x25, None), b"\x30" + sse(tools), b"\x30" + sse(result)]))

# Write them.
if OUT.exists():
    shutil.rmtree(OUT)
for target, files in sorted(seeds.items()):
    d = OUT / target
    d.mkdir(parents=True)
    for name, data in sorted(files.items()):
        (d / name).write_bytes(data)
print(", ".join(f"{t}: {len(f)}" for t, f in sorted(seeds.items())))
