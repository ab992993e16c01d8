"""Routing of submitted text: `,` commands, Lisp, LLM prose, or keep editing.

The LLM side relies on these answers: prose must never be evaluated, and Lisp must never be
sent to the model by mistake.
"""
from __future__ import annotations

import pytest

from lispshell.repl.route import (COMMAND, INCOMPLETE, LISP, LLM, is_bare_symbol, is_lone_symbol,
                                  route)

ALL = ["cl", "scheme", "clojure"]


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize("text", [
    "(+ 1 2)", "foo", "42", '"a string"', ":keyword", "'quoted", "(defun f () 1) (f)",
    "1 2 3", "  (car '(1 2))  ", "(let ((x 1))\n  x)", "'(a b c)", "`(a ,b)", "nil",
    "(+ 1 2) ; a comment", "; only a comment",
])
def test_lisp_in_every_dialect(text, dialect):
    assert route(text, dialect) == LISP


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize("text", [
    "add seven to that", "what package am I in?", "why does (f 1) fail",
    "explain this: (mapcar #'1+ '(1 2))", "he said \"hi", "what is 2) the answer",
    "what's this", "don't do that", "make it recursive",
])
def test_prose_goes_to_the_llm(text, dialect):
    assert route(text, dialect) == LLM


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize("text", [
    # What reads as Lisp is Lisp (issue 23): forms then a lone symbol, several variables,
    # names that are not English words; prose has to be unmistakable (or start with `?`).
    "(defparameter *x* 3) *x*", "*x* *threshold*", "x y", "foo-bar baz", "3 apples",
    "'hello there", "(foo 'bar) baz",
])
def test_what_reads_as_lisp_is_never_sent_to_the_llm(text, dialect):
    assert route(text, dialect) == LISP


@pytest.mark.parametrize("text,dialect", [
    ("nil t", "cl"), ("t nil", "cl"), ("nil nil t", "cl"), ("nil true", "clojure"),
    ("true false nil", "clojure"), ("nil :key", "clojure"),
])
def test_constants_are_lisp_not_prose(text, dialect):
    """`nil t` prints NIL and T at `sbcl`: a dialect's constants are never words of prose."""
    assert route(text, dialect) == LISP
    assert route("is nil the same as false", dialect) == LLM    # prose around them still is


def test_an_open_list_after_one_word_keeps_editing():
    assert route("is (foo is unclosed", "cl") == INCOMPLETE


@pytest.mark.parametrize("text", ["?(+ 1 2)", "? what is car", "?foo", "  ?  explain"])
def test_question_mark_forces_the_llm(text):
    assert route(text, "cl") == LLM


@pytest.mark.parametrize("text", [",help", ",lisp guile", "  ,quit", ",q"])
def test_commands(text):
    assert route(text, "cl") == COMMAND


@pytest.mark.parametrize("dialect", ALL)
@pytest.mark.parametrize("text", ["(+ 1", "(defun f ()\n", '"unterminated', "(list \"a)\"",
                                  "'(1 2", "", "   \n  "])
def test_incomplete_keeps_editing(text, dialect):
    assert route(text, dialect) == INCOMPLETE


def test_block_comment_open_is_incomplete():
    assert route("#| still a comment", "cl") == INCOMPLETE
    assert route("#| a |# (+ 1 2)", "cl") == LISP


def test_extra_close_paren_goes_to_lisp_to_be_reported():
    # The REPL shows the positioned error; routing must not trap it in the editor.
    assert route("(+ 1 2))", "cl") == LISP
    assert route(")", "cl") == LISP


def test_character_literals_do_not_open_or_close():
    assert route(r"#\(", "cl") == LISP
    assert route(r"(list #\( #\))", "cl") == LISP
    assert route(r"(str \( \))", "clojure") == LISP
    assert route(r"(list #\()", "scheme") == LISP
    assert route(r"(list #\(", "scheme") == INCOMPLETE


def test_datum_comments():
    assert route("#_foo (bar)", "clojure") == LISP        # one form left
    assert route("#;foo (bar)", "scheme") == LISP
    assert route("#_(a b c) x", "clojure") == LISP        # a lone symbol


def test_clojure_literals():
    assert route("#{1 2} [3 4] {:a 1}", "clojure") == LISP
    assert route('#"a(b"', "clojure") == LISP
    assert route("@atom-x", "clojure") == LISP


def test_routing_never_evaluates_read_time_eval():
    # `#.` would run code in a Lisp reader; routing only lexes. A lone #.(...) is a form.
    assert route("#.(delete-file \"x\")", "cl") == LISP
    assert route("#.(launch) now please", "cl") == LLM


def test_lisp_implementation_names_are_accepted():
    assert route("(+ 1 2)", "sbcl") == LISP
    assert route("(+ 1", "guile") == INCOMPLETE
    assert route("add it", "clojure") == LLM


@pytest.mark.parametrize("atom,bare", [
    ("foo", True), ("in?", True), ("+", True), ("-", True), ("42", False),
    ("-3.5", False), ("1/2", False), (":key", False), ("#t", False), ("#:g", False),
    ("cl:car", True), ("|a b|", True), ("2r101", False),
])
def test_bare_symbols(atom, bare):
    assert is_bare_symbol(atom) is bare


@pytest.mark.parametrize("text,lone", [
    ("thanks", True), ("  why?\n", True), ("(+ 1 undefined-zz)", False), ("'x", False),
    ('"s"', False), ("42", False), ("a b", False), (":k", False),
])
def test_only_a_word_alone_is_a_lone_symbol(text, lone):
    # The REPL offers an unbound lone symbol to the model; a form must keep its restarts.
    assert is_lone_symbol(text, "sbcl") is lone
    assert is_lone_symbol(text, "clojure") is lone
