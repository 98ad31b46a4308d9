#!/usr/bin/env python3
"""Spread viewers over the Janus servers (edges) one `share send` feeds.

    share send --janus URL1 --janus URL2 ... 2>&1 | tee send.log
    spread.py send.log [--listen 0.0.0.0:8000]

Reads the "watch:" lines `share send` prints (one per edge: its API
address, mountpoint and pin) from a file, or from standard input with `-`,
and serves the viewer page over HTTP. Each viewer who opens
http://HOST:8000/ is sent (302) to the next edge in turn, round robin, on
the page this script serves; /edges shows how many went to each. The
redirect carries the pin: whoever can reach this address can watch, so
listen where only the audience can.
"""
import argparse
import http.server
import itertools
import json
import os
import sys
import threading
import urllib.parse

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "viewer.html")


def edges_in(lines):
    """Each watch line's viewer query (janus=...&id=...&pin=...), in order, once each."""
    found = []
    for line in lines:
        if "watch:" not in line or "?" not in line:
            continue
        query = line.split("watch:", 1)[1].strip().split("?", 1)[1].split(" ", 1)[0]
        fields = urllib.parse.parse_qs(query)
        if {"janus", "id", "pin"} <= fields.keys() and query not in found:
            found.append(query)
    return found


def serve(edges, listen):
    host, port = listen.rsplit(":", 1)
    turn = itertools.cycle(range(len(edges)))
    counts = [0] * len(edges)
    lock = threading.Lock()
    with open(PAGE, "rb") as f:
        page = f.read()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            if path == "/":
                with lock:
                    index = next(turn)
                    counts[index] += 1
                target = "/viewer.html?" + edges[index]
                self.answer(302, target.encode() + b"\n", "text/plain", {"Location": target})
            elif path == "/viewer.html":
                self.answer(200, page, "text/html; charset=utf-8")
            elif path == "/edges":
                with lock:
                    body = [{"janus": urllib.parse.parse_qs(e)["janus"][0], "viewers": c} for e, c in zip(edges, counts)]
                self.answer(200, json.dumps(body).encode() + b"\n", "application/json")
            else:
                self.answer(404, b"not found\n", "text/plain")

        def answer(self, status, body, kind, headers=None):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    print(f"spreading viewers over {len(edges)} edges at http://{host}:{server.server_port}/", flush=True)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", help="share send's output (its watch: lines), or - for standard input")
    parser.add_argument("--listen", default="127.0.0.1:8000", help="address:port to serve on (port 0: any free one)")
    args = parser.parse_args()
    source = sys.stdin if args.log == "-" else open(args.log, encoding="utf-8")
    edges = edges_in(source)
    if not edges:
        sys.exit(f"spread.py: no watch: lines from share send --janus in {args.log}")
    serve(edges, args.listen)


if __name__ == "__main__":
    main()
