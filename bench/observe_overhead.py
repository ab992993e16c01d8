#!/usr/bin/env python3
"""What watching costs: profiling and tracing overhead, against the same work unwatched, in one
run, on real SBCL, Guile and Clojure children.

    .venv/bin/python bench/observe_overhead.py [--lisp sbcl guile clojure] [--rounds 3]

Per Lisp, `(work)` (20 calls of a loop of 20,000 modular multiply-adds, `burn`) is run:
  plain     in a loop for about 2 s, timed in the image (runs per second)
  profiled  the same under the profiler lispshell's ,profile uses (`profile` with seconds 2)
  traced    `(burn 1)` called 100,000 times with burn traced: the log must keep the last 10,000
Prints runs per second plain and profiled and their ratio (target: profiled at most 10%
slower on SBCL and Guile), and the seconds 100,000 traced calls took. Fails (exit 1) when the
profile does not list burn first among the person's functions or the log does not hold what
it must (what is measured did not happen). Each figure is the best of --rounds.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lispshell.lisp.session import LispSession  # noqa: E402
from lispshell.tools.gate import EvalGate  # noqa: E402
from lispshell.tools.registry import ToolContext, call_tool  # noqa: E402

DEFINE = {
    "sbcl": "(defun burn (n) (let ((s 0)) (dotimes (i n) (setf s (mod (+ s (* i i)) 1000003))) s))"
            "\n(defun work () (loop repeat 20 sum (burn 20000)))"
            "\n(defun runs (seconds) (let ((end (+ (get-internal-real-time) (* seconds "
            "internal-time-units-per-second))) (n 0)) (loop do (work) (incf n) while "
            "(< (get-internal-real-time) end)) n))",
    "guile": "(define (burn n) (let lp ((i 0) (s 0)) (if (< i n) (lp (1+ i) (modulo (+ s (* i i)) "
             "1000003)) s)))\n(define (work) (let lp ((k 0) (t 0)) (if (< k 20) (lp (1+ k) "
             "(+ t (burn 20000))) t)))\n(define (runs seconds) (let ((end (+ (get-internal-real-time) "
             "(* seconds internal-time-units-per-second)))) (let lp ((n 1)) (work) (if (< "
             "(get-internal-real-time) end) (lp (1+ n)) n))))",
    "clojure": "(defn burn [n] (loop [i 0 s 0] (if (< i n) (recur (inc i) (mod (+ s (* i i)) "
               "1000003)) s)))\n(defn work [] (reduce + (repeatedly 20 #(burn 20000))))\n"
               "(defn runs [seconds] (let [end (+ (System/nanoTime) (* seconds 1000000000))] "
               "(loop [n 1] (work) (if (< (System/nanoTime) end) (recur (inc n)) n))))",
}
TRACE_LOOP = {"sbcl": "(progn (loop repeat 100000 do (burn 1)) :done)",
              "guile": "(begin (let lp ((k 0)) (when (< k 100000) (burn 1) (lp (1+ k)))) 'done)",
              "clojure": "(do (dotimes [_ 100000] (burn 1)) :done)"}
TARGET = {"sbcl": 1.10, "guile": 1.10}
RUNS = re.compile(r"(\d+) runs?")


def measure(lisp: str, rounds: int) -> tuple[float, float, float, list[str]]:
    session = LispSession(lisp)
    session.start()
    problems: list[str] = []
    try:
        ctx = ToolContext(session=lambda: session, gate=EvalGate("yolo"), eval_timeout=600,
                          output_cap=1 << 16)
        call_tool("eval", {"code": DEFINE[lisp]}, ctx)
        session.eval("(work)", timeout=120)             # compiled and warm
        plain = profiled = 0.0
        for _ in range(rounds):
            res = session.eval("(runs 2)", timeout=120)
            plain = max(plain, int(res.values[0]) / 2)
            out = call_tool("profile", {"code": "(work)", "seconds": 2}, ctx)
            table = out.get("profile", "")
            m = RUNS.search(table)
            if not m:
                problems.append(f"{lisp}: the profile said no run count: {out}")
                continue
            profiled = max(profiled, int(m.group(1)) / 2)
            own = [line for line in table.splitlines() if line.startswith("*")]
            if not own or "burn" not in own[0].lower():
                problems.append(f"{lisp}: burn is not the first of your functions:\n{table}")
        call_tool("trace", {"add": ["burn"]}, ctx)
        best = float("inf")
        for _ in range(rounds):
            started = time.monotonic()
            res = session.eval(TRACE_LOOP[lisp], timeout=600, output_cap=1 << 12)
            best = min(best, time.monotonic() - started)
            if res.error is not None:
                problems.append(f"{lisp}: 100,000 traced calls failed: {res.error}")
        log = call_tool("trace_log", {"limit": 1}, ctx)
        if log.get("total_calls", 0) < 100_000 or "10,000" not in log.get("note", ""):
            problems.append(f"{lisp}: the log does not keep the last 10,000 calls: {log}")
        call_tool("trace", {"remove": []}, ctx)
        return plain, profiled, best, problems
    finally:
        session.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lisp", nargs="+", default=["sbcl", "guile", "clojure"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    problems: list[str] = []
    print(f"{'lisp':8} {'plain/s':>9} {'profiled/s':>11} {'ratio':>6} {'target':>7} "
          f"{'100k traced calls':>18}")
    for lisp in args.lisp:
        plain, profiled, traced, found = measure(lisp, args.rounds)
        problems += found
        ratio = plain / profiled if profiled else float("inf")
        target = TARGET.get(lisp)
        print(f"{lisp:8} {plain:9.1f} {profiled:11.1f} {ratio:6.2f} "
              f"{(f'{target:.2f}' if target else '-'):>7} {traced:17.1f}s")
        if target and ratio > target:
            problems.append(f"{lisp}: profiling slows the work {ratio:.2f}x (target {target})")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
