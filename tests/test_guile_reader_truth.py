"""Scheme text is read as Guile 3 reads it by default: a table of cases, each run through real
Guile's `read` as the ground truth, must get the same verdict from lispshell's reader (whether
it reads, and how many top-level data)."""
from __future__ import annotations

import json
import subprocess

from lispshell.syntax.validate import validate

CASES = [
    "(|x 1)",                      # | is an ordinary symbol character in Guile
    "(a|b c)",
    "|",
    "(|foo bar|)",                 # two symbols there, not one R7RS |symbol|
    "(f | g)",
    "'|x|",
    "(display \"|\")",
    "#| block |# 1",
    "(x #| nested #| comment |# |# y)",
    "(| (+ 1 2))",
    "a| |b",
    "(list #\\| 1)",
    "(unclosed |",
    "(extra |))",
    "#{a b}# |c",
    "(x) |#",
]

READER = r"""
(use-modules (ice-9 textual-ports))
(define (count-data text)
  (catch #t
    (lambda ()
      (call-with-input-string text
        (lambda (port)
          (let loop ((n 0))
            (let ((x (read port)))
              (if (eof-object? x) n (loop (+ n 1))))))))
    (lambda _ -1)))
(let loop ()
  (let ((line (get-line (current-input-port))))
    (unless (eof-object? line)
      (display (count-data (call-with-input-string line read)))
      (newline)
      (loop))))
"""


def guile_counts(cases: list[str]) -> list[int]:
    lines = "".join(json.dumps(c) + "\n" for c in cases)   # a JSON string is a Scheme string here
    r = subprocess.run(["guile", "--no-auto-compile", "-q", "-c", READER], input=lines,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [int(x) for x in r.stdout.split()]


def test_scheme_validation_agrees_with_guiles_reader():
    truth = guile_counts(CASES)
    assert len(truth) == len(CASES)
    ours = []
    for text in CASES:
        v = validate(text, "scheme")
        ours.append(v.forms if v.ok else -1)
    disagree = [(c, t, o) for c, t, o in zip(CASES, truth, ours) if t != o]
    assert disagree == [], disagree
    assert truth[0] == 1 and truth[3] == 1 and truth[12] == -1     # the table really tests
