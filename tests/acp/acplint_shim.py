#!/usr/bin/env python3
"""Runs `roost acp` (the command line given) for acplint 0.1.0, rewriting
only acplint's one deviation from the ACP v1 schema that stops everything
after it: acplint sends and expects `protocolVersion` as the string "1",
where the schema's `ProtocolVersion` is an integer (uint16), which the
official SDKs send and the Rust SDK requires. Every other frame passes
unchanged, so the rest of acplint's report is about Roost as it is.
"""
import json
import subprocess
import sys
import threading


def main() -> int:
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    init_ids = set()

    def down() -> None:
        for line in sys.stdin.buffer:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("method") == "initialize":
                params = msg.get("params") or {}
                if params.get("protocolVersion") == "1":
                    params["protocolVersion"] = 1
                init_ids.add(json.dumps(msg.get("id")))
                line = (json.dumps(msg) + "\n").encode()
            child.stdin.write(line)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=down, daemon=True).start()
    for line in child.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if (
            isinstance(msg, dict)
            and "method" not in msg
            and json.dumps(msg.get("id")) in init_ids
            and isinstance(msg.get("result"), dict)
            and msg["result"].get("protocolVersion") == 1
        ):
            msg["result"]["protocolVersion"] = "1"
            line = (json.dumps(msg) + "\n").encode()
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
