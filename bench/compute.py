#!/usr/bin/env python3
"""Real work at lispshell's prompt, against the same code in the Lisp's own REPL, in one run.

    .venv/bin/python bench/compute.py [--lisp sbcl guile clojure] [--rounds 3]
                                      [--lispshell DIR]

Per Lisp, one program (below) defines four workloads and times each in the Lisp itself (the
best of 10 runs, so start-up and the transport's round trips are not counted, only how the
code runs once it is there; SBCL's clock is CLOCK_MONOTONIC, its
internal real time moving in 4 ms steps here):
  fib       recursive arithmetic: (fib 30)
  strings   building a string of the numbers 0..199,999 through a string port / builder
  hash      200,000 inserts into a hash table, then 200,000 look-ups
  dispatch  1,000,000 calls of a generic function (CLOS, GOOPS) or a multimethod (Clojure)
          on two classes of shapes
The program is fed, per path and round, to:
  own REPL   the Lisp's stock REPL reading it from standard input (`sbcl`, `guile -q`,
             `clojure.main`): the baseline
  prompt     `lispshell --lisp X < program` (forms read as at the prompt, one eval each)
  -e         `lispshell --lisp X -e FORM -e FORM ...`
  transport  `lispshell --connect URL < program` to a real Swank (SBCL), Guile REPL server or
             nREPL (Clojure) server, started as tests/lisp_servers.py starts them
Each workload prints `@@ NAME MS CHECK`; the run fails (exit 1) when a path printed a wrong or
missing CHECK (what it measures did not really happen) or when a ratio to the own REPL is over
the target (SBCL and Clojure 1.1x, Guile 1.5x). With several rounds, each figure is the best
of its rounds; the paths of a round run one after the other, so a burst of load hits them all.
--lispshell DIR runs lispshell from another checkout (a `git worktree` of an older commit) to
measure before and after in the same run.
"""
from __future__ import annotations

import argparse
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from lisp_servers import Server  # noqa: E402
from lispshell.lisp.dialects import DIALECTS  # noqa: E402
from lispshell.syntax.validate import top_level_forms  # noqa: E402

TARGET = {"sbcl": 1.1, "clojure": 1.1, "guile": 1.5}
TRANSPORT = {"sbcl": "swank", "guile": "guile", "clojure": "nrepl"}
N_STRINGS, N_HASH, N_DISPATCH = 200_000, 200_000, 1_000_000
CHECK = {
    "fib": 832040,
    "strings": sum(len(str(i)) + 1 for i in range(N_STRINGS)),
    "hash": N_HASH * (N_HASH - 1),
    "dispatch": N_DISPATCH // 2 * 12 + N_DISPATCH // 2 * 15,   # circles r=2: 12; rects 3x5
}

PROGRAM = {
    "sbcl": f"""
;; Not get-internal-real-time: SBCL 2.2.9 reads the coarse clock (4 ms steps here).
(defun now-ms ()
  (multiple-value-bind (s ns) (sb-unix::clock-gettime 1)   ; CLOCK_MONOTONIC
    (+ (* s 1000d0) (/ ns 1d6))))
(defun best-of (name thunk)
  (let (best val)
    (dotimes (i 10)
      (let ((t0 (now-ms)))
        (setf val (funcall thunk))
        (let ((ms (- (now-ms) t0)))
          (setf best (if best (min best ms) ms)))))
    (format t "@@ ~a ~,3f ~a~%" name best val)
    (finish-output)))
(defun fib (n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(defun build-string* (n)
  (length (with-output-to-string (s) (dotimes (i n) (princ i s) (write-char #\\space s)))))
(defun hash-work (n)
  (let ((h (make-hash-table)) (sum 0))
    (dotimes (i n) (setf (gethash i h) (* 2 i)))
    (dotimes (i n sum) (incf sum (gethash i h 0)))))
(defclass circle () ((r :initarg :r :reader r)))
(defclass rect () ((w :initarg :w :reader w) (h :initarg :h :reader h)))
(defgeneric area (s))
(defmethod area ((c circle)) (* 3 (r c) (r c)))
(defmethod area ((x rect)) (* (w x) (h x)))
(defun dispatch (n)
  (let ((shapes (vector (make-instance 'circle :r 2) (make-instance 'rect :w 3 :h 5))) (sum 0))
    (dotimes (i n sum) (incf sum (area (svref shapes (logand i 1)))))))
(best-of "fib" (lambda () (fib 30)))
(best-of "strings" (lambda () (build-string* {N_STRINGS})))
(best-of "hash" (lambda () (hash-work {N_HASH})))
(best-of "dispatch" (lambda () (dispatch {N_DISPATCH})))
""",
    "guile": f"""
(use-modules (oop goops))
(define (best-of name thunk)
  (let loop ((i 0) (best #f) (val #f))
    (if (= i 10)
        (begin (format #t "@@ ~a ~a ~a~%" name best val) (force-output (current-output-port)))
        (let* ((t0 (get-internal-real-time))
               (v (thunk))
               (ms (/ (* 1000.0 (- (get-internal-real-time) t0)) internal-time-units-per-second)))
          (loop (+ i 1) (if best (min best ms) ms) v)))))
(define (fib n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(define (build-string n)
  (string-length
   (call-with-output-string
    (lambda (p) (let loop ((i 0)) (when (< i n) (display i p) (write-char #\\space p) (loop (+ i 1))))))))
(define (hash-work n)
  (let ((h (make-hash-table)))
    (let loop ((i 0)) (when (< i n) (hash-set! h i (* 2 i)) (loop (+ i 1))))
    (let loop ((i 0) (sum 0)) (if (< i n) (loop (+ i 1) (+ sum (hash-ref h i 0))) sum))))
(define-class <circle> () (r #:init-keyword #:r #:getter r))
(define-class <rect> () (w #:init-keyword #:w #:getter w) (h #:init-keyword #:h #:getter h))
(define-generic area)
(define-method (area (c <circle>)) (* 3 (r c) (r c)))
(define-method (area (x <rect>)) (* (w x) (h x)))
(define (dispatch n)
  (let ((shapes (vector (make <circle> #:r 2) (make <rect> #:w 3 #:h 5))))
    (let loop ((i 0) (sum 0))
      (if (< i n) (loop (+ i 1) (+ sum (area (vector-ref shapes (logand i 1))))) sum))))
(best-of "fib" (lambda () (fib 30)))
(best-of "strings" (lambda () (build-string {N_STRINGS})))
(best-of "hash" (lambda () (hash-work {N_HASH})))
(best-of "dispatch" (lambda () (dispatch {N_DISPATCH})))
""",
    "clojure": f"""
(defn best-of [name thunk]
  (loop [i 0 best nil val nil]
    (if (= i 10)
      (do (println "@@" name (format "%.3f" best) val) (flush))
      (let [t0 (System/nanoTime) v (thunk) ms (/ (- (System/nanoTime) t0) 1e6)]
        (recur (inc i) (if best (min best ms) ms) v)))))
(defn fib [n] (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))
(defn build-string [n]
  (let [^StringBuilder sb (StringBuilder.)]
    (dotimes [i n] (.append sb (long i)) (.append sb \\space))
    (.length sb)))
(defn hash-work [n]
  (let [m (persistent! (reduce (fn [m i] (assoc! m i (* 2 i))) (transient {{}}) (range n)))]
    (reduce (fn [s i] (+ s (get m i 0))) 0 (range n))))
(defmulti area :kind)
(defmethod area :circle [s] (* 3 (:r s) (:r s)))
(defmethod area :rect [s] (* (:w s) (:h s)))
(defn dispatch [n]
  (let [shapes [{{:kind :circle :r 2}} {{:kind :rect :w 3 :h 5}}]]
    (loop [i 0 sum 0]
      (if (< i n) (recur (inc i) (+ sum (area (shapes (bit-and i 1))))) sum))))
(best-of "fib" (fn [] (fib 30)))
(best-of "strings" (fn [] (build-string {N_STRINGS})))
(best-of "hash" (fn [] (hash-work {N_HASH})))
(best-of "dispatch" (fn [] (dispatch {N_DISPATCH})))
""",
}
RESULT = re.compile(r"@@ (\w+) ([0-9.]+) (\d+)\s*$", re.M)   # after a stock REPL's prompt, too


def run(argv: list[str], program: str | None, env: dict, cwd: Path) -> dict[str, tuple[float, int]]:
    # Not from the checkout: `python -m` would import the lispshell of the current directory.
    out = subprocess.run(argv, input=program, capture_output=True, text=True, env=env, cwd=cwd,
                         timeout=900).stdout
    return {m[1]: (float(m[2]), int(m[3])) for m in RESULT.finditer(out)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lisp", nargs="+", default=["sbcl", "guile", "clojure"],
                    choices=sorted(PROGRAM))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lispshell", type=Path, default=ROOT,
                    help="the checkout to run lispshell from (default: this one)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lispshell-compute-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(LISPSHELL_STATE_DIR=str(tmp / "state"), LISPSHELL_CONFIG_DIR=str(tmp / "config"),
               ANTHROPIC_CONFIG_DIR=str(tmp / "anthropic"), LC_ALL="C.UTF-8",
               PYTHONPATH=str(args.lispshell.resolve()))
    lispshell = [sys.executable, "-m", "lispshell", "--no-llm", "--no-project"]
    failed = False
    for lisp in args.lisp:
        program = PROGRAM[lisp]
        forms = [program[a:b] for a, b in top_level_forms(program, DIALECTS[lisp].syntax)]
        server = Server(TRANSPORT[lisp], tmp).start()
        paths = {
            "own REPL": (list(DIALECTS[lisp].command), program),
            "prompt": (lispshell + ["--lisp", lisp], program),
            "-e": (lispshell + ["--lisp", lisp] + [a for f in forms for a in ("-e", f)], None),
            f"{TRANSPORT[lisp]} server": (lispshell + ["--connect", server.url], program),
        }
        best: dict[str, dict[str, float]] = {p: {} for p in paths}
        try:
            for _ in range(args.rounds):
                for path, (argv, stdin) in paths.items():
                    got = run(argv, stdin, env, tmp)
                    for work, want in CHECK.items():
                        ms, check = got.get(work, (None, None))
                        if check != want:
                            print(f"FAIL {lisp} {path} {work}: printed {check}, want {want}")
                            failed = True
                            continue
                        best[path][work] = min(ms, best[path].get(work, ms))
        finally:
            server.kill()
        base = best["own REPL"]
        print(f"\n{lisp} (best of 10 runs in the Lisp, best of {args.rounds} rounds; ms, and "
              f"the ratio to the own REPL; target {TARGET[lisp]}x)")
        print(f"  {'':<14}" + "".join(f"{w:>18}" for w in CHECK))
        for path in paths:
            cells = []
            for work in CHECK:
                ms = best[path].get(work)
                if ms is None or work not in base:
                    cells.append(f"{'-':>18}")
                    continue
                ratio = ms / base[work] if base[work] else float("inf")
                miss = path != "own REPL" and ratio > TARGET[lisp]
                failed |= miss
                cells.append(f"{ms:9.1f} {ratio:5.2f}x{'!' if miss else ' '} ")
            print(f"  {path:<14}" + "".join(cells))
    print("\n! = over the target" if failed else "\nall paths ran every workload, within target")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
