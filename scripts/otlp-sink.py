#!/usr/bin/env python3
"""A local OTLP/HTTP receiver for the telemetry benchmarks: it accepts
every POST (`/v1/traces`, `/v1/metrics`), reads the body, counts it and
answers 200 with an empty protobuf response (a valid Export*Response).
Usage: scripts/otlp-sink.py [PORT]  (default 4318); Ctrl-C prints counts."""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {}


class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        self.rfile.read(n)
        counts[self.path] = counts.get(self.path, 0) + n
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


port = int(sys.argv[1]) if len(sys.argv) > 1 else 4318
server = ThreadingHTTPServer(("127.0.0.1", port), Sink)
try:
    server.serve_forever()
except KeyboardInterrupt:
    print(counts)
