"""The structural tools keep each text's tree (cst.parse_shared): a file read again unchanged is
not parsed again, by any context (the REPL's, MCP's); a file changed by anyone is; an edit reads
again only the top-level forms it touched."""
from __future__ import annotations

import os

import pytest

import lispshell.tools.structure  # noqa: F401  (registers the tools)
from lispshell.syntax import cst
from lispshell.syntax.validate import validate
from lispshell.tools.registry import ToolContext, call_tool

FORMS = "".join(f"(defn f{i}\n  [x]\n  (+ x {i}))\n\n" for i in range(200))


@pytest.fixture
def parsed(monkeypatch):
    """The texts a tree is built of (cst.parse, or cst.parse_lazy for a shared tree), in order.
    An earlier test's background parse of what it wrote (cst.parse_later) lands first: it would
    be counted as this test's otherwise (it was, once, in a loaded run)."""
    cst.settle()
    texts = []
    for name in ("parse", "parse_lazy"):
        real = getattr(cst, name)

        def counting(text, dialect, real=real):
            texts.append(text)
            return real(text, dialect)

        monkeypatch.setattr(cst, name, counting)
    return texts


def test_an_unchanged_file_is_parsed_once_for_every_context(tmp_path, parsed):
    path = tmp_path / "many.clj"
    path.write_text(FORMS + ";; unique to this test\n")
    repl, mcp = ToolContext(root=tmp_path), ToolContext(root=tmp_path)
    for ctx in (repl, mcp, repl):
        r = call_tool("read_form", {"file_path": str(path), "form_type": "defn",
                                    "form_name": "f7"}, ctx)
        assert r["ok"] and r["text"] == "(defn f7\n  [x]\n  (+ x 7))"
    assert len(parsed) == 1


def test_a_file_changed_outside_is_read_again_even_with_the_same_size_and_time(tmp_path,
                                                                                 parsed):
    path = tmp_path / "one.clj"
    path.write_text("(defn g [] :old)\n")
    ctx = ToolContext(root=tmp_path)
    before = os.stat(path)
    assert call_tool("read_form", {"file_path": str(path), "form_name": "g"}, ctx)["text"] \
        == "(defn g [] :old)"
    path.write_text("(defn g [] :new)\n")                     # another editor, same length
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert call_tool("read_form", {"file_path": str(path), "form_name": "g"}, ctx)["text"] \
        == "(defn g [] :new)"
    assert len(parsed) == 2


def test_an_edit_reads_again_only_the_forms_it_touched(tmp_path, parsed):
    path = tmp_path / "edit.clj"
    path.write_text(FORMS)
    ctx = ToolContext(root=tmp_path)
    r = call_tool("read_form", {"file_path": str(path), "form_name": "f100"}, ctx)
    parsed.clear()
    r = call_tool("replace_form", {"file_path": str(path), "form_name": "f100",
                                   "expected_hash": r["hash"],
                                   "new_source": "(defn f100\n[x]\n(let [y (* x 2)]\n(+ y 100)))"},
                  ctx)
    assert r["ok"], r
    text = path.read_text()
    assert "(defn f100\n  [x]\n  (let [y (* x 2)]\n    (+ y 100)))\n\n(defn f101" in text
    assert validate(text, "clojure").ok
    # The call itself parsed the new form; the whole new text is parsed once, in the
    # background, for the next call.
    assert sum(len(t) for t in parsed if t != text) < len(FORMS) // 10, [len(t) for t in parsed]


def test_an_edit_whose_form_shares_its_line_reads_the_whole_text(tmp_path):
    path = tmp_path / "shared.clj"
    path.write_text("(def a 1) (def b 2)\n(def c 3)\n")
    ctx = ToolContext(root=tmp_path)
    r = call_tool("replace_form", {"file_path": str(path), "form_type": "def",
                                   "form_name": "b", "new_source": "(def b\n(inc\n2))"}, ctx)
    assert r["ok"], r
    # Indented from where the form starts on its line (column 11), not from column 1: as the
    # whole text read again indents it.
    assert path.read_text() == "(def a 1) (def b\n            (inc\n             2))\n(def c 3)\n"


def test_after_an_edit_the_next_call_finds_the_new_tree(tmp_path, parsed):
    """The tools parse the text they wrote in the background: the next call, which comes after
    the model's turn, does not parse it again (one that comes sooner waits for that parse)."""
    path = tmp_path / "next.clj"
    path.write_text(FORMS)
    ctx = ToolContext(root=tmp_path)
    r = call_tool("sexp_wrap", {"file_path": str(path), "form_name": "f3", "target": "(+ x 3)",
                                "head": "inc"}, ctx)
    assert r["ok"], r
    written = path.read_text()
    r = call_tool("read_form", {"file_path": str(path), "form_name": "f3"}, ctx)
    assert r["text"] == "(defn f3\n  [x]\n  (inc (+ x 3)))"
    assert parsed.count(written) == 1


LAZY_CASES = {
    "clojure": ["(ns a (:require [b :as c]))\n(defn ^:private f\n  \"doc\" [x] #_(y) ; c\n  `(g ~x ~@[1 2]))\n",
                "^{:a 1} (def x #{1 2}) #(+ % 1) @a 'b #_ #_ c d e #'f ^g ^h i",
                "(a ' ; note\n b) (c #_d) (e ^f)", "(a ')", "(^a)", "(#_ #_ a)", "'#_a b", "[)",
                "(a \"b", "a)", "(a"],
    "cl": ["(defun f (x) #+sbcl (g x) #-sbcl x #| block |# ; line\n (h 'y `(,z ,@w)))",
           "#+ (or a b) (c) #.(d) #'e", "(a #+b)", "(a #+b c"],
    "scheme": ["(define (f x) #;(g x) [let ((y 1)) y] #(1 2) #\\a \"s\")", "(a #;)", "[)"],
}


def _fields(node):
    return (node.kind, node.start, node.end, node.open_end, node.close_start, node.delim,
            [(_fields(c), c.parent is node) for c in node.children])


@pytest.mark.parametrize("dialect,text", [(d, t) for d, ts in LAZY_CASES.items() for t in ts])
def test_a_tree_built_as_it_is_visited_is_the_whole_tree(dialect, text):
    """The shared tree builds each list's children on first visit (cst.parse_lazy): node for
    node the tree cst.parse builds, and the same error for text that does not parse."""
    try:
        whole = _fields(cst.parse(text, dialect))
    except cst.StructureError as exc:
        with pytest.raises(cst.StructureError) as lazy:
            cst.parse_lazy(text, dialect)
        assert (lazy.value.code, lazy.value.message) == (exc.code, exc.message)
    else:
        assert _fields(cst.parse_lazy(text, dialect)) == whole
