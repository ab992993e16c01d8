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

from lispshell.syntax.dialects import resolve_dialect
from lispshell.syntax.lexer import tokenize
from lispshell.syntax.validate import CLOSER_OF, DELIM_OF, OPENER_OF, Lines, Problem, closer_hint

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
    tokens, _state = tokenize(text, resolve_dialect(dialect))
    codes, starts = tokens.codes, tokens.starts
    lines = Lines(text)
    problems: list[Problem] = []
    stack: list[int] = []
    inside: tuple[int, list[int]] | None = None   # (the column-0 form, the openers open there)
    for j, c in enumerate(codes):
        if c in "([{":
            at = starts[j]
            if stack and inside is None and (at == 0 or text[at - 1] == "\n") \
                    and _starts_top_level(tokens, j) and _holds_definitions(tokens, stack):
                inside = (j, list(stack))
            stack.append(j)
        elif c in ")]}":
            if not stack or codes[stack[-1]] != OPENER_OF[c]:
                break                       # a structural error: validate's to report
            stack.pop()
            if not stack and inside is not None:
                problems.extend(_pair(text, tokens, lines, *inside, j))
                inside = None
    return problems


def _pair(text, tokens, lines: Lines, form: int, open_before: list[int], last: int) -> list:
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
