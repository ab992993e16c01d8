"""Standard indentation per dialect, applied to a line range only."""
from __future__ import annotations

import pytest

from lispshell.syntax.indent import reindent


def flush_left(text: str) -> str:
    return "\n".join(line.lstrip(" ") for line in text.split("\n"))


CASES = {
    "cl": [
        "(defun f (x)\n  (let ((y (g x))\n        (z 2))\n    (when y\n      (print y))\n    z))",
        "(foo a\n     b\n     c)",
        "(foo\n b\n c)",
        "(if (p x)\n    (a)\n    (b))",
        "(cond ((a) 1)\n      (t 2))",
        "(loop for x in xs\n      collect x)",
        "'(a b\n  c)",
        "(list #(1 2\n        3))",
        "(flet ((h (x)\n         (1+ x)))\n  (h 1))",
        "(defmethod area :around ((s square))\n  (call-next-method))",
        "(with-open-file (s \"f\")\n  (read s))",
        "(multiple-value-bind (a b)\n    (floor 7 2)\n  (list a b))",
        "(handler-case (risky)\n  (error (e)\n    (print e)))",
        "((lambda (x) x)\n 1)",
        "(defun f ()\n  ;; a comment\n  (g))",
    ],
    "scheme": [
        "(define (f x)\n  (let loop ((i 0))\n    (when (< i x)\n      (loop (+ i 1)))))",
        "(define-module (demo)\n  #:export (f))",
        "(let ([a 1]\n      [b 2])\n  (+ a b))",
        "(lambda (x)\n  (* x x))",
        "(define-record-type point\n  (make-point x y)\n  point?)",
        "(syntax-rules ()\n  ((_ a) a))",
    ],
    "clojure": [
        "(defn f\n  \"doc\"\n  [x]\n  (let [y (inc x)\n        z 2]\n    (+ y z)))",
        "{:a 1\n :b 2}",
        "[1 2\n 3]",
        "(-> x\n    (assoc :a 1)\n    (dissoc :b))",
        "#?(:clj (inc x)\n   :cljs (dec x))",
        "(ns demo.core\n  (:require [a.b :as b]\n            [c.d :as d]))",
        "(fn [x]\n  (inc x))",
        "(letfn [(h [x]\n          (inc x))]\n  (h 1))",
        "(reify Object\n  (toString [this]\n    \"x\"))",
        "(try (f)\n  (catch Exception e\n    (g e)))",
        "#{1 2\n  3}",
        "(cond\n  (pos? x) 1\n  :else 2)",
        "(defn f\n  ([x]\n   (f x 1))\n  ([x y]\n   (+ x y)))",
    ],
}


@pytest.mark.parametrize("dialect,expected",
                         [(d, c) for d, cs in CASES.items() for c in cs])
def test_indents_like_the_dialect_convention(dialect, expected):
    assert reindent(flush_left(expected), dialect, 1, expected.count("\n") + 1) == expected


def test_only_the_given_lines_change():
    text = "(defun f ()\n(a)\n(b)\n(c))"
    assert reindent(text, "cl", 3, 3) == "(defun f ()\n(a)\n  (b)\n(c))"


def test_strings_and_section_comments_are_left_alone():
    text = "(defun f ()\n  \"Doc line one\n   line two stays\"\n;;; section stays\n   (g))"
    assert reindent(text, "cl", 1, 5) == \
        "(defun f ()\n  \"Doc line one\n   line two stays\"\n;;; section stays\n  (g))"


def test_a_tab_indented_line_in_the_right_column_is_kept():
    text = "(defun f ()\n\t(g)\n  (h))"
    assert reindent(text, "cl", 1, 3) == "(defun f ()\n  (g)\n  (h))"     # tab = col 8: wrong
    text = "(defun long-function-name (a b c)\n\t\t\t\t\t\t\t\t\t(g))"
    out = reindent(text, "cl", 1, 2)
    assert out.endswith("\n  (g))")
    text = "(foo barbazqu\n\tx)"   # `x` belongs under `barbazqu`: column 5, the tab is column 8
    assert reindent(text, "cl", 1, 2) == "(foo barbazqu\n     x)"
    text = "(foobar x\n\ty)"        # the tab puts `y` in column 8, under `x`: untouched
    assert reindent(text, "cl", 1, 2) == text
