#!/usr/bin/env python3
"""Eval latency and 10 MiB output: lispshell's session against the floor, per dialect.

    .venv/bin/python bench/eval_latency.py [--lisp sbcl guile clojure] [--evals 2000]

For each Lisp, in one run:
  floor-pipe  a minimal read-eval-print loop in the Lisp (`(loop (prin1 (eval (read))))`),
              driven over plain pipes with bare os.write/os.read
  floor-pty   the same loop over a raw pty (what the session uses)
  session     lispshell.lisp.session.LispSession.eval
  lispshell   `lispshell --lisp X` reading forms from standard input (batch mode): it reads all
              of stdin first, so only the mean per eval is known: (time for N forms - time for
              one form) / (N - 1)
Per-eval p50 and p99 over N evals of `(+ 1 2)`; the samples of the floors and the session are
taken in interleaved rounds, so a burst of load on this shared machine hits all of them alike.
Then one form printing 10 MiB (10,240 lines of 1,023 characters): wall time, and the peak
Python heap while reading it (tracemalloc, in a second run) or the peak RSS of the lispshell
process. Ratios are to floor-pty. Targets (issue 2): session p50 within 2x of floor-pty for
SBCL and Guile, 1.3x for Clojure; 10 MiB within 2x of floor-pty.
"""
from __future__ import annotations

import argparse
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import tty
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lispshell.lisp.dialects import get_dialect  # noqa: E402
from lispshell.lisp.session import LispSession  # noqa: E402

ADD = "(+ 1 2)"
LOOPS = {  # the floor: the smallest read-eval-print loop each Lisp has
    "sbcl": "(loop (prin1 (eval (read))) (terpri) (finish-output))",
    "guile": "(let loop () (write (primitive-eval (read))) (newline) (force-output) (loop))",
    "clojure": "(loop [] (prn (eval (read))) (flush) (recur))",
}
SYNC = {"sbcl": ":sync", "guile": "'sync", "clojure": ":sync"}
SYNC_REPLY = {"sbcl": b":SYNC\n", "guile": b"sync\n", "clojure": b":sync\n"}
TEN_MIB = {
    "sbcl": '(let ((line (make-string 1023 :initial-element #\\x))) '
            '(dotimes (i 10240) (write-line line)) :done)',
    "guile": "(let ((line (make-string 1023 #\\x))) "
             "(do ((i 0 (+ i 1))) ((= i 10240) 'done) (display line) (newline)))",
    "clojure": '(let [line (apply str (repeat 1023 \\x))] (dotimes [i 10240] (println line)) :done)',
}
DONE_REPLY = {"sbcl": b"\n:DONE\n", "guile": b"\ndone\n", "clojure": b"\n:done\n"}
TEN_MIB_CHARS = 10240 * 1024      # what each TEN_MIB form prints: the run fails if less arrived
BOOT_WAIT = {"sbcl": 5, "guile": 10, "clojure": 30}


class Floor:
    """The Lisp's own minimal loop, over pipes or a raw pty, driven with bare os calls."""

    def __init__(self, lisp: str, pty: bool):
        command = list(get_dialect(lisp).command)
        env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8", TERM="dumb")
        if pty:
            self.proc = pexpect.spawn(command[0], command[1:], env=env, echo=False,
                                      preexec_fn=lambda: tty.setraw(0))
            self.rfd = self.wfd = self.proc.child_fd
        else:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, env=env, bufsize=0)
            self.rfd, self.wfd = self.proc.stdout.fileno(), self.proc.stdin.fileno()
        self.lisp = lisp
        os.write(self.wfd, (LOOPS[lisp] + "\n").encode())
        os.write(self.wfd, (SYNC[lisp] + "\n").encode())
        self.read_until(SYNC_REPLY[lisp], BOOT_WAIT[lisp])

    def read_until(self, end: bytes, timeout: float = 600) -> int:
        """Read (and drop) until the stream ends with `end`; keep only a short tail."""
        tail, total, deadline = b"", 0, time.monotonic() + timeout
        while not tail.endswith(end):
            r, _, _ = select.select([self.rfd], [], [], max(0, deadline - time.monotonic()))
            if not r:
                raise TimeoutError(f"{self.lisp} floor: no {end!r} (last: {tail[-200:]!r})")
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                raise EOFError(f"{self.lisp} floor exited")
            total += len(chunk)
            tail = (tail + chunk)[-64:]
        return total

    def eval_add(self) -> None:
        os.write(self.wfd, b"(+ 1 2)\n")
        self.read_until(b"3\n")

    def eval_ten_mib(self) -> None:
        os.write(self.wfd, (TEN_MIB[self.lisp] + "\n").encode())
        self.read_until(DONE_REPLY[self.lisp])

    def close(self) -> None:
        if isinstance(self.proc, subprocess.Popen):
            self.proc.kill()
            self.proc.wait()
        else:
            self.proc.close(force=True)


class Session:
    def __init__(self, lisp: str):
        self.s = LispSession(lisp)
        t = time.perf_counter()
        self.s.start()
        self.boot_s = time.perf_counter() - t

    def eval_add(self) -> None:
        r = self.s.eval(ADD)
        assert r.values == ["3"], r

    def eval_ten_mib(self) -> None:
        # As the person's evals run: every character streamed to a callback (which counts
        # them), only the cap kept.
        received = 0

        def count(chunk: str) -> None:
            nonlocal received
            received += len(chunk)
        r = self.s.eval(TEN_MIB[self.s.lisp], on_output=count)
        assert r.ok, r
        if received < TEN_MIB_CHARS:
            raise SystemExit(f"{self.s.lisp}: only {received} of {TEN_MIB_CHARS} characters of "
                             "output arrived: the 10 MiB figure would be meaningless")

    def close(self) -> None:
        self.s.close()


def percentile(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * p))]


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def heap_peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_lispshell(lisp: str, text: str) -> tuple[float, int, int]:
    """Wall time, peak RSS (bytes) and exit status of `lispshell --lisp X < text`."""
    exe = shutil.which("lispshell", path=str(ROOT / ".venv" / "bin")) or shutil.which("lispshell")
    if exe is None:
        raise FileNotFoundError("lispshell is not installed (./dev test installs it)")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "forms.lisp"
        src.write_text(text)
        env = dict(os.environ, LISPSHELL_STATE_DIR=tmp, LISPSHELL_CONFIG_DIR=tmp)
        with open(src) as stdin:
            t = time.perf_counter()
            proc = subprocess.Popen([exe, "--lisp", lisp, "--no-project"], stdin=stdin,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            received = 0       # count what really arrived, the way a pipe reader would
            while chunk := os.read(proc.stdout.fileno(), 1 << 20):
                received += len(chunk)
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - t
            proc.returncode = os.waitstatus_to_exitcode(status)
            err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"lispshell exited {proc.returncode}: {err[-500:]}")
    expected = text.count("10240") * TEN_MIB_CHARS     # one per TEN_MIB form in the text
    if received < expected:
        raise SystemExit(f"lispshell --lisp {lisp}: only {received} of {expected} bytes of output "
                         "arrived: the figure would be meaningless")
    return elapsed, usage.ru_maxrss * 1024, proc.returncode


def bench_lisp(lisp: str, n: int, rounds: int = 4) -> dict:
    print(f"\n== {lisp}", flush=True)
    runners = {"floor-pipe": Floor(lisp, pty=False), "floor-pty": Floor(lisp, pty=True),
               "session": Session(lisp)}
    results: dict[str, dict] = {name: {"samples": []} for name in runners}
    try:
        for r in runners.values():          # warm up (JIT, caches) before measuring
            for _ in range(min(200, n)):
                r.eval_add()
        per_round = max(1, n // rounds)
        for _ in range(rounds):
            for name, r in runners.items():
                results[name]["samples"].extend(timed(r.eval_add) for _ in range(per_round))
        for _ in range(3):                  # best of three, interleaved
            for name, r in runners.items():
                t = timed(r.eval_ten_mib)
                results[name]["ten_mib_s"] = min(t, results[name].get("ten_mib_s", t))
        for name, r in runners.items():
            results[name]["ten_mib_heap"] = heap_peak(r.eval_ten_mib)
    finally:
        for r in runners.values():
            r.close()
    results["session"]["boot_s"] = runners["session"].boot_s
    for res in results.values():
        res["p50"] = percentile(res["samples"], 0.50)
        res["p99"] = percentile(res["samples"], 0.99)
    try:   # best of a few runs: each one starts a Lisp, which is the noisy part
        one = min(run_lispshell(lisp, ADD + "\n")[0] for _ in range(3))
        many = min(run_lispshell(lisp, (ADD + "\n") * n)[0] for _ in range(2))
        # Five 10 MiB forms in one run, so that the start-up's jitter is spread over five.
        big, rss = min(run_lispshell(lisp, (TEN_MIB[lisp] + "\n") * 5)[:2] for _ in range(2))
        results["lispshell"] = {"mean": (many - one) / (n - 1), "ten_mib_s": (big - one) / 5,
                                "ten_mib_rss": rss, "startup_s": one}
    except (FileNotFoundError, RuntimeError) as exc:
        results["lispshell"] = {"skipped": str(exc)}
    return results


def report(lisp: str, res: dict) -> None:
    base = res["floor-pty"]
    target = 1.3 if lisp == "clojure" else 2.0
    print(f"{'':12} {'p50 µs':>9} {'p99 µs':>9} {'x p50':>6}   {'10 MiB s':>9} {'x':>5}  {'peak heap':>10}")
    for name in ("floor-pipe", "floor-pty", "session"):
        r = res[name]
        print(f"{name:12} {r['p50'] * 1e6:9.1f} {r['p99'] * 1e6:9.1f} {r['p50'] / base['p50']:6.2f}"
              f"   {r['ten_mib_s']:9.3f} {r['ten_mib_s'] / base['ten_mib_s']:5.2f}"
              f"  {r['ten_mib_heap'] / 2**20:8.2f} MiB")
    print(f"session start() to ready: {res['session']['boot_s']:.2f} s")
    ls = res["lispshell"]
    if "skipped" in ls:
        print(f"lispshell    skipped: {ls['skipped']}")
    else:
        print(f"lispshell    mean {ls['mean'] * 1e6:7.1f} µs/eval ({ls['mean'] / base['p50']:.2f}x floor-pty p50); "
              f"10 MiB {ls['ten_mib_s']:.3f} s ({ls['ten_mib_s'] / base['ten_mib_s']:.2f}x) "
              f"peak RSS {ls['ten_mib_rss'] / 2**20:.0f} MiB; one-form run {ls['startup_s']:.2f} s")
    ok_p50 = res["session"]["p50"] / base["p50"] <= target
    ok_big = res["session"]["ten_mib_s"] / base["ten_mib_s"] <= 2.0
    print(f"targets: session p50 <= {target}x floor-pty: {'met' if ok_p50 else 'MISSED'}; "
          f"10 MiB <= 2x: {'met' if ok_big else 'MISSED'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lisp", nargs="+", default=["sbcl", "guile", "clojure"])
    ap.add_argument("--evals", type=int, default=2000)
    args = ap.parse_args(argv)
    print(f"{args.evals} evals of {ADD} per method; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    for lisp in args.lisp:
        report(lisp, bench_lisp(lisp, args.evals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
