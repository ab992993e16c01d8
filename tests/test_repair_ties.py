"""repair(): ties the indentation cannot decide, decided by what the forms mean (issue 26).

Each case is a form whose last closers were dropped, some of them mid-line: the line end
and a place earlier on the line read and indent alike, and a shape rule tells them apart.
The best candidate must be the original; the level stays a guess where a rival is left."""
from __future__ import annotations

import pytest
from damage import drop_last_closers as _drop

from lispshell.syntax.repair import repair


@pytest.mark.parametrize("dialect,form,k", [
    # a rest parameter is a list (a seq or nil), never a number
    ("clojure", "(defn +'\n  ([x y & more]\n    (reduce1 +' (+' x y) more)))", 4),
    ("scheme", "(define (sum x . rest)\n  (fold + (+ x 1) rest))", 3),
    # the form defines the function it calls: its own parameter vector, left open by the
    # damage, says what the call takes
    ("clojure", "(defmethod do-copy [String Writer] [^String input ^Writer output opts]\n"
                "  (do-copy (StringReader. input) output opts))", 4),
    # `(. target member)`: a target and a member at least
    ("clojure", "(defn- pany\n  [coll]\n  (. (par coll) any))", 3),
    # a Java method that takes one argument in every class that has it
    ("clojure", "(defn- lub\n  [^Class a ^Class b]\n  (if (.isAssignableFrom a b) b a))", 4),
    # fn* has a parameter vector as fn does: never a call in it
    ("clojure", "(def\n ^{:macro true}\n loop (fn* loop [&form &env & decl] "
                "(cons 'loop* decl)))", 4),
])
def test_a_shape_decides_the_tie(dialect, form, k):
    assert repair(_drop(form, k), dialect).text == form


def test_a_rebound_rest_parameter_says_nothing():
    # `more` is a number again inside the let: the line end stays the best candidate
    damaged = "(defn f [x & more]\n  (let [more (count more)]\n    (g (+ x more"
    assert repair(damaged, "clojure").text == damaged + "))))"


def test_two_closers_moved_from_the_end_need_not_be_the_innermost():
    # `]` and the innermost `)` moved, the `)` of `when` left at the end
    form = '(defn not-empty\n  "doc"\n  {:added "1.0"}\n  [coll] (when (seq coll) coll))'
    r = repair(_drop(form, 4), "clojure")
    assert (r.text, r.level) == (form, "guess")


def test_a_placement_ranked_lower_that_keeps_every_shape_beats_one_that_breaks_one():
    # the clause under `(and` is indented left of it: the indentation's placement closes
    # the `and` after one argument; the shapes say the closers were all at the end
    form = ("(defn ns-refers\n  [ns]\n  (let [ns (the-ns ns)]\n"
            "    (filter-key val (fn [^clojure.lang.Var v] (and (instance? clojure.lang.Var v)\n"
            "                                 (not= ns (.ns v))))\n"
            "                (ns-map ns))))")
    r = repair(_drop(form, 4), "clojure")
    assert (r.text, r.level) == (form, "guess")
