"""Values that never end: circular and self-referencing structures, infinite lazy sequences and
deep nesting get a bounded answer within seconds, and the image lives on with its definitions
(issue 16). Through `-e`, through the model's eval, and in the REPL."""
from __future__ import annotations

import subprocess

import pytest

from conftest import LISPSHELL, started_sessions
from lispshell.tools.gate import EvalGate
from lispshell.tools.registry import ToolContext, call_tool

CIRCULAR = {   # (code, what its value prints as)
    "sbcl list": ("sbcl", "(let ((c (list 1 2 3))) (setf (cdddr c) c) c)", "#1=(1 2 3 . #1#)"),
    "sbcl vector": ("sbcl", "(let ((v (vector 1 2))) (setf (aref v 0) v) v)", "#1=#(#1# 2)"),
    "sbcl struct": ("sbcl", "(progn (defstruct zz-node next) (let ((n (make-zz-node))) "
                            "(setf (zz-node-next n) n) n))", "#1=#S(ZZ-NODE :NEXT #1#)"),
    "guile list": ("guile", "(let ((c (list 1 2 3))) (set-cdr! (cddr c) c) c)", "(1 2 3 . #-2#)"),
}
ENDLESS = {   # (code, how its value must start and end)
    "clojure range": ("clojure", "(range)", "(0 1 2 3", "...)"),
    "clojure atom": ("clojure", "(let [a (atom nil)] (reset! a a) a)", "#object[clojure.lang.Atom",
                     "]"),
}
DEEP = {
    "sbcl": "(let ((x nil)) (dotimes (i 100000) (setf x (list x))) x)",
    "guile": "(let loop ((i 0) (x '())) (if (= i 100000) x (loop (+ i 1) (list x))))",
    "clojure": "(reduce (fn [x _] (list x)) nil (range 100000))",
}
DEFINE = {"sbcl": ("(defvar *kept* 41)", "(1+ *kept*)"), "guile": ("(define kept 41)", "(+ kept 1)"),
          "clojure": ("(def kept 41)", "(inc kept)")}


def run(lisp: str, *forms: str) -> subprocess.CompletedProcess:
    args = [a for f in forms for a in ("-e", f)]
    return subprocess.run([LISPSHELL, "--lisp", lisp, "--no-project", *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("case", list(CIRCULAR))
def test_circular_values_print_with_labels(case):
    lisp, code, shown = CIRCULAR[case]
    define, use = DEFINE[lisp]
    r = run(lisp, define, code, use)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-2:] == [shown, "42"]


@pytest.mark.parametrize("case", list(ENDLESS))
def test_endless_values_are_bounded(case):
    lisp, code, start, end = ENDLESS[case]
    define, use = DEFINE[lisp]
    r = run(lisp, define, code, use)
    assert r.returncode == 0, r.stderr
    *_, value, after = r.stdout.splitlines()
    assert value.startswith(start) and value.endswith(end) and after == "42"


@pytest.mark.parametrize("lisp", list(DEEP))
def test_deep_nesting_never_kills_the_image(lisp):
    define, use = DEFINE[lisp]
    r = run(lisp, define, DEEP[lisp], use)
    assert "died" not in r.stderr, r.stderr
    assert r.stdout.splitlines()[-1] == "42"      # the same image, its definition kept


@pytest.fixture(scope="module")
def lisps():
    yield from started_sessions()


@pytest.mark.parametrize("case", ["sbcl list", "sbcl struct", "clojure range", "clojure atom"])
def test_the_models_eval_gets_a_bounded_answer(case, lisps):
    lisp, code, *_ = {**CIRCULAR, **ENDLESS}[case]
    session = lisps(lisp)
    ctx = ToolContext(session=lambda: session, gate=EvalGate("yolo"), eval_timeout=60.0,
                      output_cap=65536)
    result = call_tool("eval", {"code": code}, ctx)
    assert result["ok"] is True, result
    [value] = result["values"]
    assert 0 < len(value) <= 8000 + 100
    assert session.eval("(+ 1 2)").values == ["3"]


def test_the_repl_shows_circular_and_endless_values(tmp_path):
    from pty_shell import Shell

    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-project")
    try:
        sh.expect("CL-USER>")
        sh.submit(CIRCULAR["sbcl list"][1])
        sh.expect("#1=(1 2 3 . #1#)")
        sh.submit("(+ 40 2)")
        sh.expect("42")
    finally:
        sh.close()
    sh = Shell(tmp_path, "--lisp", "clojure", "--no-project")
    try:
        sh.expect("user>")
        sh.submit("(range)")
        sh.expect("99999 ...)", timeout=120)
        sh.submit("(+ 40 2)")
        sh.expect("42")
    finally:
        sh.close()
