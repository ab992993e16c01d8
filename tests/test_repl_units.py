"""Pure parts of the REPL: splitting forms, positioned errors, the command table, indentation."""
from __future__ import annotations

import asyncio

from lispshell.repl.commands import QUIT, CommandTable
from lispshell.repl.completion import symbol_prefix
from lispshell.repl.forms import position, split_forms
from lispshell.repl.indent import newline_indent


def test_split_forms_in_order_and_without_comments():
    forms, problem = split_forms("(defun f () 1) ; hi\n(f)\n'x", "sbcl")
    assert forms == ["(defun f () 1)", "(f)", "'x"]
    assert problem is None


def test_split_forms_stops_at_an_extra_paren_with_its_position():
    text = "(+ 1 2)\n(list 3))\n(print 4)"
    forms, problem = split_forms(text, "sbcl")
    assert forms == ["(+ 1 2)", "(list 3)"]
    assert (problem.line, problem.col) == (2, 9)
    shown = problem.describe(text, "<stdin>")
    assert shown.startswith("<stdin>:2:9: ")
    assert shown.splitlines()[1:] == ["  (list 3))", "          ^"]


def test_split_forms_reports_an_unclosed_form():
    forms, problem = split_forms("(+ 1 2) (list 3", "guile")
    assert forms == ["(+ 1 2)"]
    assert problem is not None and problem.line == 1


def test_position_is_one_based():
    assert position("ab\ncd", 0) == (1, 1)
    assert position("ab\ncd", 4) == (2, 2)


class FakeRepl:
    def __init__(self):
        self.seen = []


def test_commands_prefixes_ambiguity_and_llm_extras():
    calls = []
    table = CommandTable(lambda: {"yolo": ("toggle YOLO", lambda arg: calls.append(arg))})
    assert table.find("q")[0].name == "quit"
    assert table.find("res")[0].name == "restart"
    assert table.find("h")[0] is None and "ambiguous" in table.find("h")[1]   # help, history
    assert "Unknown command" in table.find("nope")[1]
    names = [c.name for c in table.all()]
    assert names[:5] == ["help", "quit", "restart", "lisp", "history"] and "yolo" in names
    assert asyncio.run(table.run(FakeRepl(), ",yolo on")) is None and calls == ["on"]
    assert asyncio.run(table.run(FakeRepl(), ",quit")) is QUIT


def test_llm_commands_cannot_shadow_builtins():
    table = CommandTable(lambda: {"quit": ("nope", lambda arg: None)})
    assert table.find("quit")[0].help.startswith("leave")


def test_symbol_prefix():
    assert symbol_prefix("(mapc") == "mapc"
    assert symbol_prefix("(cl:def") == "cl:def"
    assert symbol_prefix("(foo '") == ""
    assert symbol_prefix("@at") == "at"


def test_newline_indent_lisp_style():
    assert newline_indent("(defun f (x)", "cl") == 2
    assert newline_indent("(foo a", "cl") == 5
    assert newline_indent("(foo", "cl") == 1
    assert newline_indent("(let ((a 1)", "cl") == 6
    assert newline_indent("(+ 1 2)", "cl") == 0
    assert newline_indent('(list "abc', "cl") == 0          # inside a string: add nothing
    assert newline_indent("(defn f [x]", "clojure") == 2
    assert newline_indent("[1 2", "clojure") == 1
    assert newline_indent("{:a 1", "clojure") == 1
    assert newline_indent("(define (f x)", "scheme") == 2
    assert newline_indent("  (when x\n    (foo a", "cl") == 9
