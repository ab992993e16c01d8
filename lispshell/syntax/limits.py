"""How deep text may nest before the tools refuse it.

Real code nests a few dozen levels; machine-written data a few hundred. Text nested thousands
deep is an attack or an accident, and some of the structural work (recovering the forms of a
file that does not parse) grows with depth times length. So the tools refuse text nested deeper
than MAX_NESTING at once, with TOO_DEEP, instead of working on it for minutes, and text with more
than MAX_UNMATCHED unmatched delimiters (a million stray closers) with TOO_LARGE: repair weighs
each one. For ordinary text the check picks out its delimiter characters (one `bytes.translate`
of its UTF-8); only text with that many delimiters is lexed to measure.

The tools check a file before they read it, and read it next: so that check reads it (the
reading is cached, the call reuses it) and looks only at the sizes of its top-level lists,
which bound their depth; only a text whose sizes do not prove it shallow is measured exactly.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from itertools import accumulate
from threading import Lock

from lispshell.syntax.errors import StructureError
from lispshell.syntax.reading import lex, read

MAX_NESTING = 2000
# Text with more unmatched delimiters than this is refused (a million stray closers is not
# code), and repair() called directly gives up on more stray closers than this.
MAX_UNMATCHED = 2000
_DELTA = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_LEXICAL = '";#|\\[]{}'
_KEEP = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in "()[]{}"))


def measure(text: str, dialect: str) -> tuple[int, int]:
    """(the deepest nesting of `text`, unclosed openers counting; how many delimiters are
    unmatched: closers that close nothing plus openers never closed, kinds not compared),
    strings and comments skipped. Text with too few delimiters for either limit is not lexed."""
    delimiters = _delimiters(text)
    if _few(delimiters):
        return 0, 0                                   # cannot be over either: not worth lexing
    if not any(c in text for c in _LEXICAL):
        # Nothing that could hide a parenthesis (no string, comment, character, |symbol|, or
        # bracket whose meaning depends on the dialect): the characters are the tokens.
        return _measure(delimiters)
    tokens, _ = lex(text, dialect)      # the text's reading lexes it once for both
    return _measure(tokens.codes)


def max_depth(text: str, dialect: str) -> int:
    """The deepest nesting of `text` (unclosed openers count), strings and comments skipped."""
    return measure(text, dialect)[0]


# The last texts that passed: a file read again unchanged by the next tool call is not lexed
# again for this (keyed by the text itself, so never stale).
_PASSED: OrderedDict = OrderedDict()
_PASSED_LOCK = Lock()


def check_nesting(text: str, dialect: str, what: str = "the text") -> None:
    key = (text, dialect)
    with _PASSED_LOCK:
        if key in _PASSED:
            _PASSED.move_to_end(key)
            return
    _check_nesting(text, dialect, what)
    if len(text) > 65536:     # below that, measuring costs less than keeping
        with _PASSED_LOCK:
            _PASSED[key] = True
            while len(_PASSED) > 4:
                _PASSED.popitem(last=False)


def _check_nesting(text: str, dialect: str, what: str) -> None:
    if _surely_within(text, dialect):
        return
    depth, unmatched_ = measure(text, dialect)
    if depth > MAX_NESTING:
        raise StructureError("TOO_DEEP", f"{what} nests {depth} levels deep, over the limit of "
                             f"{MAX_NESTING} (no code nests that deep); nothing was done",
                             limit=MAX_NESTING)
    if unmatched_ > MAX_UNMATCHED:
        raise StructureError("TOO_LARGE", f"{what} has {unmatched_:,} unmatched delimiters, over "
                             f"the limit of {MAX_UNMATCHED:,} (this is not code to check or "
                             "repair); nothing was done", limit=MAX_UNMATCHED)


def _surely_within(text: str, dialect: str) -> bool:
    """True when `text` is provably within both limits, from its reading's pairs: with every
    delimiter paired (nothing unmatched), a top-level list of k delimiters nests at most k/2
    deep. False says nothing (measure it). Reads the text (with too few delimiters for either
    limit, nothing to read)."""
    delimiters = _delimiters(text)
    if _few(delimiters):
        return True
    closers = delimiters.count(")") + delimiters.count("]") + delimiters.count("}")
    if abs(len(delimiters) - 2 * closers) > MAX_UNMATCHED:
        return False        # likely over: measured without being read (a million closers)
    r = read(text, dialect)
    if r.unclosed or any(p[2] == "UNMATCHED_CLOSE" for p in r.delimiter_problems):
        return False
    delimiters, partner = r.delimiters, r.partner
    i, n = 0, len(delimiters)
    while i < n:        # delimiters[i] opens a top-level list; k: the index of its closer
        k = bisect_left(delimiters, partner[delimiters[i]], i)
        if k - i + 1 > 2 * MAX_NESTING:
            return False
        i = k + 1
    return True


# Every byte but the delimiters' (the UTF-8 of other characters is bytes >= 0x80): deleting
# them from a text's bytes is the fastest way to its delimiter characters.
_NOT_DELIMITERS = bytes(c for c in range(256) if chr(c) not in "()[]{}")


def _delimiters(text: str) -> str:
    """The delimiter characters of `text`, in order, strings and comments not skipped."""
    return text.encode("utf-8", "surrogatepass").translate(None, _NOT_DELIMITERS).decode()


def _few(delimiters: str) -> bool:
    """True when so few delimiters can be over neither limit, however they nest."""
    openers = len(delimiters) - delimiters.count(")") - delimiters.count("]") \
        - delimiters.count("}")
    return openers < MAX_NESTING and len(delimiters) <= MAX_UNMATCHED


def _measure(codes: str) -> tuple[int, int]:
    delims = codes.translate(_KEEP)
    levels = list(accumulate(map(_DELTA.__getitem__, delims)))     # at C speed
    low = min(levels, default=0)
    if low >= 0:        # no stray closer: the deepest level is the depth
        return max(levels, default=0), levels[-1] if levels else 0
    depth = low = last = 0
    for last in accumulate(map(_DELTA.__getitem__, delims)):
        # Depth counts from the lowest point so far: after stray closers an opener is one
        # level deep (`)))` then 3,000 `(` is 3,000 deep, not 0).
        if last < low:
            low = last
        elif last - low > depth:
            depth = last - low
    return depth, -low + (last - low)


def stray_closers(tokens) -> int:
    """How many closers close nothing (kinds not compared): each is an edit a repair weighs."""
    return -min(0, min(accumulate(map(_DELTA.__getitem__, tokens.codes.translate(_KEEP))),
                       default=0))
