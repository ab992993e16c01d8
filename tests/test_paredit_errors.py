"""Structural impossibilities answer a clear error with a suggestion, per tool; and the form
tools in Scheme and Clojure."""
from __future__ import annotations

import pytest

from lispshell.tools.registry import ToolContext, call_tool


def fail(tool, code, dialect="cl", **args):
    r = call_tool(tool, {"code": code, "dialect": dialect, **args}, ToolContext())
    assert r["ok"] is False, r
    return r["error"]


@pytest.mark.parametrize("tool,code,args,error_code,message_part", [
    ("sexp_raise", "(defun f () 1)", dict(form_name="f", path=[]), "TOP_LEVEL",
     "top-level form"),
    ("sexp_raise", "(defun f () 1)", dict(form_name="f"), "BAD_INPUT", "give target"),
    ("sexp_slurp_forward", "(f (a) (b))", dict(target="(b)"), "NO_SIBLING", "no sibling after"),
    ("sexp_slurp_forward", "(f (a) b)", dict(target="(a)", count=0), "BAD_INPUT", "non-zero"),
    ("sexp_slurp_backward", "(f a (\"b\"))", dict(target="(\"b\")", keep_head=True),
     "BAD_INPUT", "no head symbol"),
    ("sexp_slurp_forward", "(f a b)", dict(target="a"), "NOT_A_LIST", "is a symbol"),
    ("sexp_slurp_backward", "(f (a) (b))", dict(target="(f (a) (b))"), "NO_SIBLING",
     "no sibling before"),
    ("sexp_barf_forward", "(f ())", dict(target="()"), "EMPTY", "is empty"),
    ("sexp_barf_forward", "(f (a b))", dict(target="(a b)", count=3), "BAD_INPUT", "only 2"),
    ("sexp_barf_backward", "(f (g))", dict(target="(g)"), "EMPTY", "after its head"),
    ("sexp_unwrap", "(f a)", dict(target="a"), "NOT_A_LIST", "not a list"),
    ("sexp_unwrap", "(f '(a b))", dict(target="(a b)"), "PREFIXED", "reader prefix"),
    ("sexp_unwrap", "(f ())", dict(target="()", keep="body"), "EMPTY", "empty"),
    ("sexp_kill", "(f a b)", dict(target="a", count=5), "NO_SIBLING", "only 2"),
    ("sexp_transpose", "(f a b)", dict(target="b"), "NO_SIBLING", "no sibling after"),
    ("sexp_split", "(f a b)", dict(target="f"), "BAD_SPLIT", "nothing would stay"),
    ("sexp_split", "(defun f () 1)", dict(form_name="f", path=[]), "TOP_LEVEL", "top-level"),
    ("sexp_split", "(list [a b])", dict(target="(list [a b])"), "TOP_LEVEL", "top-level"),
    ("sexp_join", "(f (a) b)", dict(target="(a)"), "NOT_A_LIST", "not a plain list"),
    ("sexp_join", "(f (a))", dict(target="(a)"), "NO_SIBLING", "nothing after"),
    ("sexp_raise", "(f a b)", dict(target="a", count=3), "NO_SIBLING", "only 2"),
    ("sexp_convolute", "(f (g x))", dict(target="g"), "EMPTY", "nothing before it"),
    ("sexp_splice_killing", "(f a)", dict(target="(f a)"), "TOP_LEVEL", "top-level"),
    ("sexp_splice_killing", "(f (a))", dict(target="a", direction="up"), "BAD_INPUT",
     "direction"),
    ("sexp_wrap", "(f a)", dict(target="a", head='"oops'), "BAD_INPUT", "not balanced"),
    ("sexp_wrap", "(f a)", dict(target="a", count=0), "BAD_INPUT", "positive"),
    ("sexp_get_enclosing", "(f a)", dict(target="(f a)"), "TOP_LEVEL", "top-level"),
    ("sexp_show_structure", "(f a)", dict(depth=0), "BAD_INPUT", "positive"),
    ("sexp_kill", "(f a)", dict(), "BAD_INPUT", "needs the node it acts on"),
    ("sexp_kill", "(f a)", dict(path=[0, 5]), "NOT_FOUND", "out of range"),
    ("sexp_kill", "(f a)", dict(path=[0, 0, 1]), "NOT_FOUND", "not a list"),
])
def test_impossible_operations_explain_themselves(tool, code, args, error_code, message_part):
    err = fail(tool, code, **args)
    assert err["code"] == error_code, err
    assert message_part in err["message"], err
    if error_code in ("TOP_LEVEL", "NO_SIBLING", "EMPTY", "NOT_A_LIST", "BAD_SPLIT", "PREFIXED"):
        assert err.get("suggestion"), err


def test_join_mismatched_kinds_in_clojure():
    err = fail("sexp_join", "(f (a) [b])", "clojure", target="(a)")
    assert err["code"] == "MISMATCH" and "'(' list with a '[' list" in err["message"]


def test_scheme_form_tools():
    code = ("(define-module (demo) #:export (area))\n\n"
            ";; Area of a square.\n(define (area s)\n  (* s s))\n\n(define (helper) 1)\n")
    ctx = ToolContext()
    r = call_tool("replace_form", {"code": code, "dialect": "scheme", "form_type": "define",
                                   "form_name": "area",
                                   "new_source": "(define (area s)\n(let ((x s))\n(* x x)))"}, ctx)
    assert r["ok"], r
    assert "(define (area s)\n  (let ((x s))\n    (* x x)))\n" in r["code"]
    r = call_tool("delete_form", {"code": code, "dialect": "scheme", "form_name": "area"}, ctx)
    assert r["code"] == "(define-module (demo) #:export (area))\n\n(define (helper) 1)\n"
    r = call_tool("insert_form", {"code": code, "dialect": "scheme", "form_name": "helper",
                                  "position": "before", "new_source": "(define x 1)"}, ctx)
    assert "  (* s s))\n\n(define x 1)\n\n(define (helper) 1)\n" in r["code"]
    r = call_tool("read_module", {"code": code, "dialect": "scheme"}, ctx)
    assert r["text"].splitlines()[1] == "L4-5 (define (area s)"


def test_clojure_form_tools():
    code = "(ns demo.core)\n\n(defn area\n  [s]\n  (* s s))\n\n(defmethod draw :circle [c] 1)\n"
    ctx = ToolContext()
    r = call_tool("replace_form", {"code": code, "dialect": "clojure", "form_type": "defmethod",
                                   "form_name": "draw :circle",
                                   "new_source": "(defmethod draw :circle [c]\n(circle c))"}, ctx)
    assert r["code"].endswith("(defmethod draw :circle [c]\n  (circle c))\n")
    r = call_tool("read_form", {"code": code, "dialect": "clojure", "form_type": "ns"}, ctx)
    assert r["text"] == "(ns demo.core)"
    r = call_tool("find_references", {"code": code, "dialect": "clojure", "symbol": "s"}, ctx)
    assert [h["line"] for h in r["references"]] == [4, 5, 5]


@pytest.mark.parametrize("dialect,tool,before,args,after", [
    ("scheme", "sexp_barf_backward", "(define (f) (list (a) b))", dict(target="(list (a) b)"),
     "(define (f) (a) (list b))"),
    ("clojure", "sexp_barf_backward", "(defn f [] [a b c])", dict(target="[a b c]", count=2),
     "(defn f [] a b [c])"),
    ("scheme", "sexp_kill", "(define (f) (a) (b))", dict(target="(a)"), "(define (f) (b))"),
    ("clojure", "sexp_kill", "(defn f [] {:a 1 :b 2})", dict(target=":b", count=2),
     "(defn f [] {:a 1})"),
    ("clojure", "sexp_slurp_backward", "(defn f [] a [b])", dict(target="[b]"),
     "(defn f [] [a b])"),
    ("scheme", "sexp_unwrap", "(define (f) (g [a b]))", dict(target="[a b]"),
     "(define (f) (g a b))"),
])
def test_more_operations_per_dialect(dialect, tool, before, args, after):
    r = call_tool(tool, {"code": before, "dialect": dialect, **args}, ToolContext())
    assert r["ok"], r
    assert r["code"] == after


def test_queries_in_scheme_and_clojure():
    ctx = ToolContext()
    tree = call_tool("sexp_show_structure", {"code": "(define (f x) (let ([y x]) y))",
                                             "dialect": "scheme", "form_name": "f"}, ctx)["tree"]
    assert "[1,1,0] [y x]  vector" in tree or "[1,1,0] [y x]" in tree
    r = call_tool("sexp_get_enclosing", {"code": "(defn f [x] {:a (inc x)})", "dialect": "clojure",
                                         "form_name": "f", "target": "(inc x)"}, ctx)
    assert r["enclosing_kind"] == "map" and r["head"] is None and r["child_index"] == 1
    exports = call_tool("list_module_exports", {
        "code": "(define-module (a b) #:export (x y) #:re-export (z))\n(export w)\n"
                "(define-public (v) 1)", "dialect": "scheme"}, ctx)
    assert exports["module"] == "(a b)"
    assert [(e["name"], e["via"]) for e in exports["exports"]] == [
        ("x", "#:export"), ("y", "#:export"), ("z", "#:re-export"), ("w", "export"),
        ("v", "define-public")]


@pytest.mark.parametrize("dialect,code,valid", [
    ("scheme", "(define (f) [a b])", True), ("scheme", "(define (f) [a b)", False),
    ("clojure", "(defn f [] {:a #{1}})", True), ("clojure", "(defn f [] {:a 1)", False),
    ("cl", "(defun f () #| open", False),
])
def test_check_syntax_per_dialect(dialect, code, valid):
    r = call_tool("check_syntax", {"code": code, "dialect": dialect}, ToolContext())
    assert r["ok"] and r["valid"] is valid
    if not valid:
        assert r["errors"][0]["line"] == 1 and "repaired_source" in r
