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
    # A loop through a car or a vector looked endlessly deep to the depth check and went to
    # the truncated printer, which does not label cycles: it printed until stopped.
    "guile car": ("guile", "(let ((c (list 1 2 3))) (set-car! c c) c)", "(#0# 2 3)"),
    "guile vector": ("guile", "(let ((v (vector 1 2))) (vector-set! v 0 v) v)", "#(#0# 2)"),
}
ENDLESS = {   # (code, how its value must start and end)
    "clojure range": ("clojure", "(range)", "(0 1 2 3", "...)"),
    "clojure atom": ("clojure", "(let [a (atom nil)] (reset! a a) a)", "#object[clojure.lang.Atom",
                     "]"),
    # Endless inside endless: within *print-length* still 10^10 elements, built in the heap
    # (OutOfMemoryError after a minute); printing now stops at 16 Mi characters.
    "clojure nested": ("clojure", "(repeat (range))", "((0 1 2 3",
                       "... [printing stopped at 16777216 characters]"),
}
DEEP = {
    "sbcl": "(let ((x nil)) (dotimes (i 100000) (setf x (list x))) x)",
    "guile": "(let loop ((i 0) (x '())) (if (= i 100000) x (loop (+ i 1) (list x))))",
    "clojure": "(reduce (fn [x _] (list x)) nil (range 100000))",
}
# Deep and looping at the bottom: neither printer may run away with it.
DEEP_LOOP = "(let ((c (list 1 2 3))) (set-car! c c) (let loop ((i 0) (x c)) (if (= i 100000) x " \
            "(loop (+ i 1) (list x)))))"
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


def test_a_value_too_deep_for_the_jvms_stack_is_printed_shallower():
    """Printing a self-referencing atom costs about 2 KiB of stack a level: at the default
    *print-level* it overflowed the 1 MiB stack once the JIT had compiled the printer (465
    levels fit), and the model's eval answered StackOverflowError. A level the person set that
    no stack holds is printed again to 50 levels."""
    define, use = DEFINE["clojure"]
    r = run("clojure", "(set! *print-level* 100000)", define, ENDLESS["clojure atom"][1], use)
    assert r.returncode == 0, r.stderr
    *_, value, after = r.stdout.splitlines()
    assert value.startswith("#object[clojure.lang.Atom") and value.endswith("]"), value[-200:]
    assert value.count("#object") == 51 and after == "42"   # printed to 50 levels


@pytest.mark.parametrize("lisp", list(DEEP))
def test_deep_nesting_never_kills_the_image(lisp):
    define, use = DEFINE[lisp]
    r = run(lisp, define, DEEP[lisp], use)
    assert r.returncode == 0 and "died" not in r.stderr, r.stderr
    *_, value, after = r.stdout.splitlines()
    # A value, bounded (SBCL printed nothing: its printer exhausted the control stack).
    assert value.startswith("((((((((((") and len(value) < 2_100_000, value[-200:]
    assert after == "42"      # the same image, its definition kept


def test_a_deep_value_that_loops_at_the_bottom_is_bounded_in_guile():
    define, use = DEFINE["guile"]
    r = run("guile", define, DEEP_LOOP, use)
    assert r.returncode == 0, r.stderr
    *_, value, after = r.stdout.splitlines()
    assert value.startswith("((((((((((") and after == "42"


@pytest.fixture(scope="module")
def lisps():
    yield from started_sessions()


MODEL_CASES = {**{k: v[:2] for k, v in {**CIRCULAR, **ENDLESS}.items()},
               **{f"{lisp} deep": (lisp, code) for lisp, code in DEEP.items()},
               "guile deep loop": ("guile", DEEP_LOOP)}


@pytest.mark.parametrize("case", list(MODEL_CASES))
def test_the_models_eval_gets_a_bounded_answer(case, lisps):
    lisp, code = MODEL_CASES[case]
    session = lisps(lisp)
    ctx = ToolContext(session=lambda: session, gate=EvalGate("yolo"), eval_timeout=60.0,
                      output_cap=65536)
    result = call_tool("eval", {"code": code}, ctx)
    assert result["ok"] is True, result
    [value] = result["values"]
    assert 0 < len(value) <= 8000 + 100
    assert session.eval("(+ 1 2)").values == ["3"]


LOOK_UP = {   # (define the value as a variable, its name): the look-ups print it too
    "sbcl": ("(defparameter *zz-val* {})", "*zz-val*"),
    "guile": ("(define zz-val {})", "zz-val"),
    "clojure": ("(def zz-val {})", "zz-val"),
}


@pytest.mark.parametrize("case", list(MODEL_CASES))
def test_look_ups_print_such_values_bounded(case, lisps):
    """symbol_value and describe print the variable's value: a deep one killed Guile (its C
    `write` overflowed the stack), a long one was built whole before it was cut."""
    lisp, code = MODEL_CASES[case]
    session = lisps(lisp)
    define, name = LOOK_UP[lisp]
    assert session.eval(define.format(code), history=False).error is None
    ctx = ToolContext(session=lambda: session, gate=EvalGate("off"), eval_timeout=60.0)
    for tool in ("symbol_value", "describe"):
        result = call_tool(tool, {"symbol": name}, ctx)
        assert result["ok"] is True, (tool, result)
        assert len(str(result)) < 30_000
    assert session.eval("(+ 1 2)").values == ["3"] and not session.eval("1").restarted


def test_the_repl_shows_circular_and_endless_values(tmp_path):
    from pty_shell import Shell

    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-project")
    try:
        sh.expect("CL-USER>")
        sh.submit("(defvar *kept* 41)")
        for case in ("sbcl list", "sbcl vector", "sbcl struct"):
            sh.submit(CIRCULAR[case][1])
            sh.expect(CIRCULAR[case][2])
        sh.submit(DEEP["sbcl"])
        sh.expect("((((((((((")
        sh.submit("(1+ *kept*)")
        sh.expect("42")
    finally:
        sh.close()
    sh = Shell(tmp_path, "--lisp", "guile", "--no-project")
    try:
        sh.expect("(guile-user)>")
        sh.submit("(define kept 41)")
        for case in ("guile list", "guile car", "guile vector"):
            sh.submit(CIRCULAR[case][1])
            sh.expect(CIRCULAR[case][2])
        sh.submit(DEEP_LOOP)
        sh.expect("((((((((((")
        sh.submit("(+ kept 1)")
        sh.expect("42")
    finally:
        sh.close()
    sh = Shell(tmp_path, "--lisp", "clojure", "--no-project")
    try:
        sh.expect("user>")
        sh.submit("(def kept 41)")
        sh.submit("(range)")
        sh.expect("99999 ...)", timeout=120)
        sh.submit("(let [a (atom nil)] (reset! a a) a)")
        sh.expect("#object[clojure.lang.Atom")
        sh.submit(DEEP["clojure"])
        sh.expect("((((((((((")
        sh.submit("(inc kept)")
        sh.expect("42")
    finally:
        sh.close()
