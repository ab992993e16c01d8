"""The CST: exact spans, byte-for-byte printing, node kinds, errors with positions; and the
addressing rules (names, name[N], defmethod specializers, target, path, line)."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from lispshell.syntax.address import find_form, find_target, navigate, path_of, resolve
from lispshell.syntax.cst import StructureError, parse, print_tree, walk

CL_SAMPLE = (
    "\ufeff;;;; sample.lisp\r\n"
    "(in-package #:demo)\r\n"
    "\r\n"
    "#| a block comment #| nested |# with (parens\r\n|#\r\n"
    "(defun greet (name)\r\n"
    "\t\"Say héllo ☃ to NAME (with a paren in the string.\"\r\n"
    "\t(format t \"~a~%\" name)   ; trailing comment\r\n"
    "  #+sbcl (sb-ext:gc) #-sbcl (gc)\r\n"
    "  (list #\\( #\\) #\\Space '|odd ) symbol| #'car `(a ,b ,@c) #.(+ 1 2) #p\"/tmp\"))\r\n"
)
SCHEME_SAMPLE = (
    "#!/usr/bin/guile \\\n-s\n!#\n"
    "(define-module (demo) #:export (greet))\n"
    "#| block |#\n"
    "(define (greet name) #;(ignored form) [list name #\\( #\\x41 \"λ\"])\n"
    "#;(commented (out))\n"
    "(define v #(1 2 3)) (define bv #vu8(1 2))\n"
)
CLOJURE_SAMPLE = (
    "(ns demo.core\n  (:require [clojure.string :as str]))\n\n"
    "(defn- ^:private helper [x] #_(debug x) #_#_ a b (inc x))\n"
    "(def ^{:doc \"m\"} m {:a 1, :b #{1 2} :c #\"re(gex\" :d \\( :e @(atom 1)})\n"
    "(defn f [xs] #?(:clj (map inc xs) :cljs (map dec xs)) #?@(:clj [1 2]) `(a ~b ~@c) #(+ % 1))\n"
)


@pytest.mark.parametrize("dialect,text", [("cl", CL_SAMPLE[1:]), ("scheme", SCHEME_SAMPLE),
                                          ("clojure", CLOJURE_SAMPLE)])
def test_untouched_tree_prints_back_byte_for_byte(dialect, text):
    root = parse(text, dialect)
    assert print_tree(root, text) == text
    # every node's span is its own text, and children lie inside their parent in order
    for node in walk(root, skip_datum_comments=False):
        last = node.start
        for child in node.children:
            assert node.start <= child.start <= child.end <= node.end
            assert child.start >= last
            last = child.end


def test_node_kinds():
    root = parse(CLOJURE_SAMPLE, "clojure")
    kinds = {n.kind for n in walk(root, skip_datum_comments=False)}
    assert {"list", "atom", "string", "char", "prefixed", "datum_comment"} <= kinds
    defn = root.code_children[1]
    # `#_#_ a b` comments out two datums: neither is code
    body = defn.code_children
    assert [n.text(CLOJURE_SAMPLE) for n in body] == ["defn-", "^:private helper", "[x]", "(inc x)"]


def test_reader_conditionals_and_metadata_are_one_element():
    text = "(list #+sbcl (a) #-sbcl (b) ^:dynamic x)"
    root = parse(text, "cl")
    assert [n.text(text) for n in root.code_children[0].code_children] == \
        ["list", "#+sbcl (a)", "#-sbcl (b)", "^:dynamic", "x"]   # ^ is a CL symbol char
    text = "[^:dynamic x ^{:a 1} y]"
    root = parse(text, "clojure")
    assert [n.text(text) for n in root.code_children[0].code_children] == \
        ["^:dynamic x", "^{:a 1} y"]


@pytest.mark.parametrize("dialect,text,message,line,col", [
    ("cl", "(defun f ()\n  (g)", "'(' is never closed", 1, 1),
    ("cl", "(a))\n", "unmatched closing ')'", 1, 4),
    ("clojure", "(let [x 1)\n", "')' closes '['", 1, 10),
    ("cl", "(a \"unterminated)\n", "unterminated string", 1, 4),
    ("cl", "(a #| open\n", "unterminated block comment", 1, 4),
    ("scheme", "(a ')", "\"'\" is followed by nothing", 1, 4),
])
def test_parse_errors_have_positions(dialect, text, message, line, col):
    with pytest.raises(StructureError) as info:
        parse(text, dialect)
    assert info.value.code == "UNBALANCED"
    assert message in info.value.message
    assert (info.value.extra["line"], info.value.extra["col"]) == (line, col)


def test_deep_nesting_does_not_recurse():
    text = "(" * 50_000 + ")" * 50_000
    root = parse(text, "cl")
    assert print_tree(root, text) == text


# ---- real sources installed with the Lisps ---------------------------------------------------

def _guile_sources() -> list[Path]:
    base = Path("/usr/share/guile/3.0")
    return sorted(base.rglob("*.scm"))


def test_guile_sources_round_trip():
    files = _guile_sources()
    assert len(files) > 100
    parsed = 0
    for path in files[::5]:   # every fifth file keeps this fast
        text = path.read_text(encoding="utf-8", errors="strict")
        try:
            root = parse(text, "scheme")
        except StructureError:
            continue   # a few modules use reader extensions
        assert print_tree(root, text) == text
        parsed += 1
    assert parsed > 0.9 * len(files[::5])


def test_clojure_sources_round_trip():
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        names = [n for n in jar.namelist() if n.endswith(".clj")]
        assert "clojure/core.clj" in names
        for name in names:
            text = jar.read(name).decode("utf-8")
            root = parse(text, "clojure")
            assert print_tree(root, text) == text


# ---- addressing -----------------------------------------------------------------------------

CL_FORMS = """(defpackage #:shapes (:use #:cl) (:export #:area))
(defgeneric area (shape))
(defmethod area ((c circle)) (* pi (r c) (r c)))
(defmethod area :around ((s square)) (call-next-method))
(defmethod area ((s square)) (* (side s) (side s)))
(defun (setf side) (v s) (setf (slot-value s 'side) v))
(defstruct (point (:conc-name p-)) x y)
(defvar *count* 0)
(defun resize (x) x)
(defun resize (x) (* 2 x))
"""


@pytest.mark.parametrize("form_type,form_name,line", [
    ("defpackage", "shapes", 1), ("defpackage", "#:shapes", 1), ("DEFGENERIC", "AREA", 2),
    ("defmethod", "area (circle)", 3), ("defmethod", "area :around", 4),
    ("defmethod", "area :around (square)", 4), ("defmethod", "area (square)", 5),
    ("defmethod", "area ((s square))", 5), ("defmethod", "area[2]", 5),
    ("defun", "(setf side)", 6), ("defstruct", "point", 7), ("defvar", "*count*", 8),
    ("defun", "resize[0]", 9), ("defun", "resize[1]", 10), (None, "*count*", 8),
])
def test_find_form_by_name(form_type, form_name, line):
    root = parse(CL_FORMS, "cl")
    fi = find_form(root, CL_FORMS, "cl", form_type, form_name)
    assert CL_FORMS.count("\n", 0, fi.node.start) + 1 == line


def test_ambiguous_form_lists_every_match():
    root = parse(CL_FORMS, "cl")
    with pytest.raises(StructureError) as info:
        find_form(root, CL_FORMS, "cl", "defmethod", "area")
    err = info.value
    assert err.code == "AMBIGUOUS"
    assert [m["form"] for m in err.extra["matches"]] == [
        "defmethod area (circle)", "defmethod area :around (square)", "defmethod area (square)"]
    assert [m["form_name"] for m in err.extra["matches"]] == ["area[0]", "area[1]", "area[2]"]
    assert [m["line"] for m in err.extra["matches"]] == [3, 4, 5]


def test_index_out_of_range_and_did_you_mean():
    root = parse(CL_FORMS, "cl")
    with pytest.raises(StructureError) as info:
        find_form(root, CL_FORMS, "cl", "defun", "resize[2]")
    assert "out of range" in info.value.message and len(info.value.extra["matches"]) == 2
    with pytest.raises(StructureError) as info:
        find_form(root, CL_FORMS, "cl", "defun", "resise")
    assert info.value.code == "NOT_FOUND"
    assert "defun resize" in info.value.extra["did_you_mean"]
    with pytest.raises(StructureError) as info:
        find_form(root, CL_FORMS, "cl", "defun", "*count*")   # right name, wrong type
    assert "defvar *count*" in info.value.extra["did_you_mean"]


SCHEME_FORMS = """(define-module (shapes core) #:export (area))
(define (area s) 1)
(define ((curried a) b) (+ a b))
(define-record-type <point> (make-point x y) point? (x point-x))
(define-syntax swap! (syntax-rules () ((_ a b) (let ((t a)) (set! a b) (set! b t)))))
(define pi 3.14)
"""
CLOJURE_FORMS = """(ns shapes.core (:require [clojure.string :as str]))
(defn area [s] 1)
(defn- helper [] 2)
(def ^:private secret 42)
(defmulti draw :kind)
(defmethod draw :circle [c] 3)
(defmethod draw :square [s] 4)
(defprotocol Shape (perimeter [s]))
"""


@pytest.mark.parametrize("dialect,text,form_type,form_name,line", [
    ("scheme", SCHEME_FORMS, "define-module", "(shapes core)", 1),
    ("scheme", SCHEME_FORMS, "define-module", "shapes core", 1),
    ("scheme", SCHEME_FORMS, "define", "area", 2),
    ("scheme", SCHEME_FORMS, "define", "curried", 3),
    ("scheme", SCHEME_FORMS, "define-record-type", "<point>", 4),
    ("scheme", SCHEME_FORMS, "define-syntax", "swap!", 5),
    ("scheme", SCHEME_FORMS, "define", "pi", 6),
    ("clojure", CLOJURE_FORMS, "ns", "shapes.core", 1),
    ("clojure", CLOJURE_FORMS, "ns", None, 1),           # the only ns: no name needed
    ("clojure", CLOJURE_FORMS, "defn", "area", 2),
    ("clojure", CLOJURE_FORMS, "defn-", "helper", 3),
    ("clojure", CLOJURE_FORMS, "def", "secret", 4),
    ("clojure", CLOJURE_FORMS, "defmethod", "draw :square", 7),
    ("clojure", CLOJURE_FORMS, "defprotocol", "Shape", 8),
])
def test_find_form_scheme_and_clojure(dialect, text, form_type, form_name, line):
    root = parse(text, dialect)
    fi = find_form(root, text, dialect, form_type, form_name)
    assert text.count("\n", 0, fi.node.start) + 1 == line


def test_target_exact_then_prefix_whitespace_normalised():
    text = "(defun f (x)\n  (let ((y  (g x)))\n    (h y)))"
    root = parse(text, "cl")
    node = find_target(root, text, "cl", "(let ((y (g x))) (h y))", None, None)
    assert node.text(text).startswith("(let")
    node = find_target(root, text, "cl", "( let ((y (g x)))", None, None)   # prefix
    assert node.text(text).startswith("(let")
    with pytest.raises(StructureError) as info:
        find_target(root, text, "cl", "(le", None, None)   # shorter than opener + first child
    assert info.value.code == "NOT_FOUND"
    with pytest.raises(StructureError) as info:
        find_target(root, text, "cl", "(h z)", None, None)
    assert info.value.extra["did_you_mean"][0]["text"] == "(h y)"


def test_path_round_trips_through_path_of():
    text = "(defun f (x)\n  (let ((y (g x)))\n    '(h y) #+sbcl (k)))\n(defvar *v* 1)"
    root = parse(text, "cl")
    scope = root.code_children[0]
    for node in walk(scope):
        if not node.is_code:
            continue
        p = path_of(node, scope, text)
        if p is None:
            assert node.text(text) == "defun"   # a top-level form's head has no path
            continue
        target = navigate(scope, p, text)
        from lispshell.syntax.cst import outer
        assert target is outer(node)
    r = resolve(root, text, "cl", {"path": [1, 0]})
    assert r.node.text(text) == "*v*"
    with pytest.raises(StructureError) as info:
        resolve(root, text, "cl", {"form_type": "defun", "form_name": "f", "path": [5]})
    assert "out of range" in info.value.message
