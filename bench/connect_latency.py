#!/usr/bin/env python3
"""Eval round trip over each connection transport, against a bare client of the same protocol.

    .venv/bin/python bench/connect_latency.py [--transport nrepl swank guile] [--evals 500]

For each transport, one real server is started (as tests/lisp_servers.py starts them) and, in
the same run, two clients evaluate `(+ 1 2)` N times each, in interleaved rounds of 50 (so a
burst of load on this shared machine hits both alike):
  bare       the least a client of that protocol does:
               nREPL  clone once, then per eval: one bencoded `eval`, read until status `done`
               Swank  per eval: one `(:emacs-rex (cl:+ 1 2) ...)`, read until its `:return`
               Guile  per eval: one line to the server's REPL, read until its next prompt
  lispshell  `connect_session(url).eval(...)`, what the REPL, the tools and MCP use
All clients ask for immediate ACKs (TCP_QUICKACK, as lispshell does: see
connection.quick_ack), so neither waits on the servers' Nagle delay.
Prints p50 and p99 per eval and the ratio of the p50s; fails (exit 1) when a ratio is above
1.5 (issue 11's target) or when a client's answers are not `3`.
"""
from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from lisp_servers import Server  # noqa: E402
from lispshell.lisp.bencode import Decoder, encode  # noqa: E402
from lispshell.lisp.channel import quick_ack  # noqa: E402
from lispshell.lisp.connection import connect_session, open_socket, parse_target  # noqa: E402

TARGET = 1.5


class BareNrepl:
    def __init__(self, url):
        self.sock = open_socket(parse_target(url), 10)
        self.decoder = Decoder()
        self.inbox = []
        self.session = self.request({"op": "clone"})[0]["new-session"]

    def request(self, message):
        rid = secrets.token_hex(4)
        self.sock.sendall(encode(dict(message, id=rid)))
        replies = []
        while True:
            while not self.inbox:
                quick_ack(self.sock)
                self.inbox.extend(self.decoder.feed(self.sock.recv(65536)))
            m = self.inbox.pop(0)
            if m.get("id") == rid:
                replies.append(m)
                if "done" in m.get("status", []):
                    return replies

    def eval(self, code):
        return [m["value"] for m in self.request({"op": "eval", "code": code,
                                                  "session": self.session}) if "value" in m][-1]


class BareSwank:
    def __init__(self, url):
        self.sock = open_socket(parse_target(url), 10)
        self.buf = b""
        self.n = 0

    def eval(self, code):
        self.n += 1
        payload = f'(:emacs-rex {code} "COMMON-LISP-USER" t {self.n})'.encode()
        self.sock.sendall(b"%06x" % len(payload) + payload)
        while True:
            while len(self.buf) < 6 or len(self.buf) < 6 + int(self.buf[:6], 16):
                quick_ack(self.sock)
                self.buf += self.sock.recv(65536)
            n = int(self.buf[:6], 16)
            text, self.buf = self.buf[6:6 + n].decode(), self.buf[6 + n:]
            if text.startswith("(:return") and text.endswith(f" {self.n})"):
                return text.split("(:ok ", 1)[1].split(")", 1)[0]


class BareGuile:
    PROMPT = b"scheme@(guile-user)> "

    def __init__(self, url):
        self.sock = open_socket(parse_target(url), 10)
        self.buf = b""
        self.read_to_prompt()

    def read_to_prompt(self):
        while not self.buf.endswith(self.PROMPT):
            quick_ack(self.sock)
            self.buf += self.sock.recv(65536)
        text, self.buf = self.buf[:-len(self.PROMPT)], b""
        return text.decode()

    def eval(self, code):
        self.sock.sendall(code.encode() + b"\n")
        return self.read_to_prompt().split("= ", 1)[-1].strip()


BARE = {"nrepl": (BareNrepl, "(+ 1 2)"), "swank": (BareSwank, "(cl:+ 1 2)"),
        "guile": (BareGuile, "(+ 1 2)")}


def timed(fn, n):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        value = fn()
        samples.append(time.perf_counter() - t)
        if value != "3":
            raise SystemExit(f"wrong answer: {value!r}")
    return samples


def p(samples, q):
    return sorted(samples)[min(len(samples) - 1, int(q * len(samples)))] * 1e6


def run(kind: str, evals: int, tmp: Path) -> float:
    server = Server(kind, tmp).start()
    try:
        bare_cls, bare_code = BARE[kind]
        bare = bare_cls(server.url)
        ours = connect_session(server.url, {})
        for _ in range(20):     # warm both (JIT, first compilations)
            bare.eval(bare_code)
            ours.eval("(+ 1 2)")
        a, b = [], []
        for _ in range(max(1, evals // 50)):
            a += timed(lambda: bare.eval(bare_code), 50)
            b += timed(lambda: (ours.eval("(+ 1 2)").values or ["?"])[-1], 50)
        ours.close()
        ratio = statistics.median(b) / statistics.median(a)
        print(f"{kind:6s} bare       p50 {p(a, .5):8.0f} µs  p99 {p(a, .99):8.0f} µs")
        print(f"{kind:6s} lispshell  p50 {p(b, .5):8.0f} µs  p99 {p(b, .99):8.0f} µs   "
              f"ratio {ratio:.2f}x (target <= {TARGET}x)")
        return ratio
    finally:
        server.kill()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", nargs="+", default=list(BARE), choices=list(BARE))
    ap.add_argument("--evals", type=int, default=500)
    args = ap.parse_args()
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.transport:
            if run(kind, args.evals, Path(tmp)) > TARGET:
                failed.append(kind)
    if failed:
        print("over target: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
