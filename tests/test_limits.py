"""The nesting check of lispshell.syntax.limits: the shortcut from a text's reading (the sizes
of its top-level lists) never lets through what the exact measure refuses."""
from __future__ import annotations

import random

import pytest

from lispshell.syntax import limits
from lispshell.syntax.errors import StructureError
from lispshell.syntax.limits import MAX_NESTING, MAX_UNMATCHED, check_nesting, measure


def _over(text: str, dialect: str) -> bool:
    depth, unmatched = measure(text, dialect)
    return depth > MAX_NESTING or unmatched > MAX_UNMATCHED


def _random_text(rnd: random.Random, dialect: str) -> str:
    """Big texts near the limits: deep runs, wide flat lists, strays, strings and comments
    that hide delimiters."""
    pieces = []
    for _ in range(rnd.randint(1, 6)):
        kind = rnd.choice(["deep", "flat", "strays", "unclosed", "hidden"])
        n = rnd.choice([10, 1000, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 2500])
        if kind == "deep":
            pieces.append("(a " * n + "b" + ")" * n)
        elif kind == "flat":
            pieces.append("(" + "(x) [y] " * n + ")" if dialect != "cl" else "(" + "(x) " * n + ")")
        elif kind == "strays":
            pieces.append(")" * min(n, 700))
        elif kind == "unclosed":
            pieces.append("(" * min(n, 700))
        else:
            pieces.append('"' + "(" * n + '" ; ' + ")" * n + "\n")
    return "\n".join(pieces)


@pytest.mark.parametrize("dialect", ["cl", "scheme", "clojure"])
def test_the_shortcut_agrees_with_the_exact_measure(dialect):
    rnd = random.Random(24)
    for _ in range(40):
        text = _random_text(rnd, dialect)
        if limits._surely_within(text, dialect):
            assert not _over(text, dialect), text[:200]
        try:
            check_nesting(text + " ", dialect)      # (a text not passed before)
            refused = False
        except StructureError:
            refused = True
        assert refused == _over(text, dialect)


def test_a_wide_shallow_file_passes_and_a_deep_one_inside_strings_too():
    many = "(f (g x))\n" * 5000           # small top-level forms: shallow by their sizes
    assert limits._surely_within(many, "cl")
    check_nesting(many, "cl")
    wide = "(" + "(f x) " * 5000 + ")"      # one big form: measured, and shallow
    assert not limits._surely_within(wide, "cl")
    check_nesting(wide, "cl")
    hidden = '"' + "(" * 5000 + '"'
    check_nesting(hidden, "cl")
    with pytest.raises(StructureError) as err:
        check_nesting("(" * 3000 + ")" * 3000, "cl")
    assert err.value.code == "TOO_DEEP"


def test_text_with_characters_beyond_ascii_is_measured():
    """No string, comment or character in it: its characters are its tokens, and a λ among
    them is no delimiter (it once failed with a KeyError)."""
    assert measure("(λ)" * 3000, "cl") == (1, 0)
    assert measure("(λ " * 3000 + ")" * 3000, "scheme") == (3000, 0)
