"""How deep text may nest before the tools refuse it.

Real code nests a few dozen levels; machine-written data a few hundred. Text nested thousands
deep is an attack or an accident, and some of the structural work (recovering the forms of a
file that does not parse) grows with depth times length. So the tools refuse text nested deeper
than MAX_NESTING at once, with TOO_DEEP, instead of working on it for minutes. The check costs
three `str.count` calls for ordinary text; only text with that many openers is lexed to measure.
"""
from __future__ import annotations

from itertools import accumulate

from lispshell.syntax.errors import StructureError
from lispshell.syntax.lexer import tokenize

MAX_NESTING = 2000
_DELTA = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_KEEP = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in "()[]{}"))


def max_depth(text: str, dialect: str) -> int:
    """The deepest nesting of `text` (unclosed openers count), strings and comments skipped."""
    if text.count("(") + text.count("[") + text.count("{") < MAX_NESTING:
        return 0                                      # cannot be that deep: not worth lexing
    tokens, _ = tokenize(text, dialect)
    delims = tokens.codes.translate(_KEEP)
    return max(accumulate(map(_DELTA.__getitem__, delims)), default=0)


def check_nesting(text: str, dialect: str, what: str = "the text") -> None:
    depth = max_depth(text, dialect)
    if depth > MAX_NESTING:
        raise StructureError("TOO_DEEP", f"{what} nests {depth} levels deep, over the limit of "
                             f"{MAX_NESTING} (no code nests that deep); nothing was done",
                             limit=MAX_NESTING)
