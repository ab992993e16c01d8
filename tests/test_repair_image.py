"""Repair asks a running image for the arglists of the functions it calls (real SBCL and
Guile), and never starts one for it."""
from __future__ import annotations

import pytest

from lispshell import config as config_mod
from lispshell.lisp.session import make_session
from lispshell.syntax.shapes import lambda_list_arity
from lispshell.tools.registry import ToolContext, call_tool

# `area` takes two arguments in the image; the form below calls it with three at the line
# end: the closer was dropped mid-line, `(area a b) c`.
CASES = {
    "sbcl": ("(defun area (w h) (* w h))", "cl",
             "(defun total (a b c)\n  (list (area a b c))",
             "(defun total (a b c)\n  (list (area a b) c))"),
    "guile": ("(define (area w h) (* w h))", "scheme",
              "(define (total a b c)\n  (list (area a b c))",
              "(define (total a b c)\n  (list (area a b) c))"),
}


@pytest.fixture(scope="module")
def sessions():
    cfg = config_mod.load()
    started = {lisp: make_session(lisp, cfg) for lisp in CASES}
    for s in started.values():
        s.start()
    yield started
    for s in started.values():
        s.close()


@pytest.mark.parametrize("lisp", list(CASES))
def test_an_image_arglist_decides_where_a_closer_dropped_mid_line_goes(sessions, lisp):
    define, dialect, damaged, original = CASES[lisp]
    session = sessions[lisp]
    assert session.eval(define).error is None
    # Without the image the line end fits everything repair knows, and so does the place
    # mid-line (L06): offered, not written with no one asked (its rule is under the bar).
    alone = call_tool("replace_form", {"code": "(foo)\n", "dialect": dialect, "line": 1,
                                       "new_source": damaged}, ToolContext())
    assert alone["ok"] is False and alone["error"]["code"] == "INVALID_SOURCE", alone
    assert alone["error"]["best_candidate"] == damaged + ")"
    assert "rule L06" in alone["error"]["message"]
    # With it, `area` takes 2 arguments, and the one other place on the line keeps every
    # shape: the shapes decide, and the candidate offered is the original.
    ctx = ToolContext(session=lambda: session)
    r = call_tool("replace_form", {"code": "(foo)\n", "dialect": dialect, "line": 1,
                                   "new_source": damaged}, ctx)
    assert r["ok"] is False and r["error"]["best_candidate"] == original, r
    assert "the running image's arglist" in r["error"]["message"]
    check = call_tool("check_syntax", {"code": damaged, "dialect": dialect}, ctx)
    assert check["repair_level"] == "likely" and check["repaired_source"] == original
    assert session.eval("(+ 1 2)").values == ["3"]       # the look-ups left it as it was


def test_no_image_is_started_for_it():
    started = []

    def session():
        started.append(1)
        raise AssertionError("repair must not start an image")
    ctx = ToolContext(session=session, running=lambda: None)
    r = call_tool("check_syntax", {"code": "(defun f (x)\n  (g x)", "dialect": "cl"}, ctx)
    assert r["repair_level"] == "likely" and not started


@pytest.mark.parametrize("arglist,dialect,arity", [
    ("(mapcar function list &rest more-lists)", "cl", (2, None)),
    ("(foo a &optional b c)", "cl", (1, 3)),
    ("(bar &whole w a b &aux x)", "cl", (2, 2)),
    ("(f a b #:optional c . rest)", "scheme", (2, None)),
    ("(f a #:optional c)", "scheme", (1, 2)),
    ("(when ...)", "scheme", None),
    ("(map [f] [f coll] [f c1 c2 & colls])", "clojure", (1, None)),
    ("(inc [x])", "clojure", (1, 1)),
])
def test_lambda_list_arity(arglist, dialect, arity):
    assert lambda_list_arity(arglist, dialect) == arity
