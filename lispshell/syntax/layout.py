"""Text that reads, but whose indentation says a closer is missing and one is extra.

    (defun a (x)
      (+ x 1)                 <- its `)` is missing here...

    (defun b (y)
      (* y 2)))               <- ...and one too many here: the two cancel out

The delimiters balance, so the reader (and `validate`) takes `b` as part of `a`. The layout
gives it away: a definition starts in column 0 inside another definition. Both must look like
definitions (`(def...`, `(ns`, `(in-package`...): a data list written flush left is not a
mistake, and neither is a column-0 body of a wrapper such as `(progn`, `(eval-when` or an R6RS
`(library` (common in real code: SBCL's own sources do it over a hundred times).

    misplaced_forms(text, dialect) -> list[Problem]

gives two problems per such form: where the missing closers most likely belong (from the
indentation, as for an unclosed form) and the closer that is then one too many. Scanning
stops at the first structural error, which `validate` reports.
"""
from __future__ import annotations

import bisect
import re

from lispshell.syntax.reading import (CLOSER_OF, CLOSERS, DELIM_OF, OPENERS, LineIndex, Problem,
                                      closer_hint, read)

# Operators that only start top-level forms, besides the "def..." ones (defun, define, defn...).
_TOP_LEVEL = frozenset({"ns", "in-package", "in-ns", "use-modules"})


def _operator(tokens, j: int) -> str:
    """The operator of the list opened by token `j`, lower case, without package or
    namespace ("" when it is not a symbol)."""
    k = j + 1
    if k >= len(tokens.codes) or tokens.codes[k] not in "ax":
        return ""
    return tokens.text_of(k).lower().rsplit(":", 1)[-1].rsplit("/", 1)[-1]


def _starts_top_level(tokens, j: int) -> bool:
    name = _operator(tokens, j)
    return name.startswith("def") or name in _TOP_LEVEL


def _holds_definitions(tokens, stack: list[int]) -> bool:
    """Is one of the open lists a definition written as code (not a backquoted template,
    whose column-0 forms are the expansion's own top level)?"""
    if any(o > 0 and tokens.codes[o - 1] == "p" and tokens.text_of(o - 1) == "`"
           for o in stack):
        return False
    return any(_operator(tokens, o).startswith("def") for o in stack)


def misplaced_forms(text: str, dialect: str) -> list[Problem]:
    r = read(text, dialect)
    tokens, codes, partner = r.tokens, r.codes, r.partner
    # a wrong or extra closer: validate's to report, and nothing after it is known to pair
    stop = next((j for j, _, code, _ in r.delimiter_problems if code != "MISSING_DATUM"),
                len(codes))
    starts = tokens.starts
    # the openers that start a line (few: top-level forms, mostly), in order
    line_openers = []
    for m in _LINE_START.finditer(text):
        j = bisect.bisect_left(starts, m.start())
        if j < stop and starts[j] == m.start() and codes[j] in OPENERS:
            line_openers.append(j)
    problems: list[Problem] = []
    j = 0
    while j < stop:                     # the top-level lists that close before `stop`
        if codes[j] not in OPENERS:
            j += 1
            continue
        last = partner[j]
        if last < 0 or last >= stop:
            break
        k = bisect.bisect_right(line_openers, j)
        while k < len(line_openers) and line_openers[k] < last:
            form = line_openers[k]
            if _starts_top_level(tokens, form):
                open_before = _enclosing(codes, partner, j, form)
                if _holds_definitions(tokens, open_before):
                    problems.extend(_pair(text, tokens, r.lines, form, open_before, last))
                    break
            k += 1
        j = last + 1
    return problems


_LINE_START = re.compile(r"^[(\[{#]", re.M)


def _enclosing(codes: str, partner: list, top: int, j: int) -> list[int]:
    """The openers still open at token `j`, outermost (`top`) first."""
    out = []
    k = j - 1
    while k > top:
        if codes[k] in CLOSERS:
            k = partner[k]              # over a list closed before j
        elif codes[k] in OPENERS:
            out.append(k)
        k -= 1
    out.append(top)
    return out[::-1]


def _pair(text, tokens, lines: LineIndex, form: int, open_before: list[int], last: int) -> list:
    """The closers missing before the column-0 `form` (those of the openers `open_before`),
    and the one then extra at `last`, the closer that ends the outermost form."""
    innermost = open_before[-1]
    missing = "".join(CLOSER_OF[tokens.codes[o]] for o in reversed(open_before))
    where = closer_hint(text, tokens, lines, innermost)
    wl, wc = lines.line_col(where)
    ol, oc = lines.line_col(tokens.starts[open_before[0]])
    il, ic = lines.line_col(tokens.starts[innermost])
    fl, fc = lines.line_col(tokens.starts[form])
    head = tokens.text_of(form) + tokens.text_of(form + 1)
    first = Problem(
        "MISSING_CLOSER",
        f"{head!r} starts in column 0 inside the form opened at line {ol}, column {oc}: "
        f"{missing!r} is most likely missing at line {wl}, column {wc} (from the indentation)",
        tokens.starts[form], fl, fc, opener_offset=tokens.starts[innermost], opener_line=il,
        opener_col=ic, expected=DELIM_OF[tokens.codes[innermost]], suggest_offset=where,
        suggest_line=wl, suggest_col=wc)
    found = tokens.text_of(last)
    ll, lc = lines.line_col(tokens.starts[last])
    extra = (f"{found!r} is then one too many" if len(missing) == 1 else
             f"{found!r} and the {len(missing) - 1} closer(s) before it are then too many")
    second = Problem(
        "EXTRA_CLOSER",
        f"{extra}: it closes the form opened at line {ol}, column {oc}, whose indentation "
        f"ends at line {wl}",
        tokens.starts[last], ll, lc, opener_offset=tokens.starts[open_before[0]],
        opener_line=ol, opener_col=oc, found=DELIM_OF[found[-1]])
    return [first, second]
