#!/usr/bin/env python3
"""A minimal dpuaudit webhook receiver (docs/webhooks.md), standard library only.

Verifies each delivery's X-Dpuaudit-Signature (HMAC-SHA256 over "<t>.<raw body>",
t within 5 minutes, constant-time compare), de-duplicates by event_id, prints one
line per new event and appends it to --log as JSON. Answers 204 to a good
delivery (also to a duplicate), 401 to a bad signature, 400 to a stale one.

    scripts/webhook-receiver.py --listen 127.0.0.1:0 --port-file port \
        --secret-file hook.secret [--cert server.pem --key server.key] [--log events.jsonl]
"""
import argparse
import hashlib
import hmac
import http.server
import json
import os
import ssl
import stat
import sys
import time


def verify(secret: bytes, header: str, body: bytes, now: float) -> str:
    """'' if the signature is good, else why not."""
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        t, v1 = parts["t"], parts["v1"]
    except (KeyError, ValueError):
        return "no signature"
    if not t.isdigit() or abs(now - int(t)) > 300:
        return "timestamp outside 5 minutes"
    mac = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return "" if hmac.compare_digest(mac, v1) else "bad signature"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--secret-file", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log")
    args = ap.parse_args()
    st = os.stat(args.secret_file)
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        print(f"{args.secret_file} is readable by group or others; chmod 600 it", file=sys.stderr)
        return 2
    with open(args.secret_file, "rb") as f:
        secret = f.read().rstrip(b"\n")
    seen = set()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            why = verify(secret, self.headers.get("X-Dpuaudit-Signature", ""), body, time.time())
            if why:
                print(f"refused a delivery: {why}", flush=True)
                self.send_response(401 if why != "timestamp outside 5 minutes" else 400)
                self.end_headers()
                return
            event = json.loads(body)
            if event["event_id"] not in seen:
                seen.add(event["event_id"])
                print(f"event {event['type']:18} node {event['node_id']:16} "
                      f"{event['from'] or '-'} -> {event['to']:10} decision {event['decision']} "
                      f"(signature verified, id {event['event_id'][:12]}...)", flush=True)
                if args.log:
                    with open(args.log, "a") as log:
                        log.write(json.dumps(event) + "\n")
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a):
            pass

    host, port = args.listen.rsplit(":", 1)
    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
