"""Is this text readable Lisp? Delimiters, strings, comments and reader errors, without a Lisp.

Stable API (others build on it; keep it):

    v = validate(text, dialect)
    v.ok          True when every form reads
    v.complete    False only when the text merely stops early (an opener still open, an
                  unterminated string / block comment / |symbol|, a trailing ' or #_): the
                  REPL keeps the editor open for more. Invalid text is complete and not ok.
    v.forms       number of complete top-level forms (before the first error)
    v.errors      list of `Problem` (message, line, col, offset, code, and for delimiter
                  problems opener_line/opener_col/opener_offset, expected/found, and
                  suggest_line/suggest_col/suggest_offset: where a missing closer most likely
                  belongs, judged from the indentation)
    v.unclosed    openers still open at the end (innermost last), as `Problem`-free dicts
    v.text        the report the validate_syntax tool answers ("✓ Syntax valid: N top-level
                  form(s)" or "✗ Syntax invalid" and the details)

    top_level_forms(text, dialect) -> list[(start, end)]   spans of complete top-level forms

Lines and columns are 1-based; columns count characters; offsets are 0-based string indexes.
Nothing is evaluated and no Lisp is needed: it is the problems of the text's one reading
(`reading.read`), which the REPL and the other tools share.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lispshell.syntax.dialects import CLOSE_CHAR, OPEN_CHAR
from lispshell.syntax.reading import (  # noqa: F401 (re-exported: validate's stable names)
    CLOSER_OF, DATUM_CODES, DELIM_OF, MAX_ERRORS, NAME_OF, OPENER_OF, Problem, Reading,
    closer_hint, read)
from lispshell.syntax.reading import LineIndex as Lines  # noqa: F401


@dataclass
class Validation:
    dialect: str
    forms: int
    errors: list = field(default_factory=list)
    unclosed: list = field(default_factory=list)   # [{"delim", "offset", "line", "col"}]
    source: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def complete(self) -> bool:
        return not self.errors or not all(p.incomplete for p in self.errors)

    @property
    def text(self) -> str:
        return report(self)

    def to_dict(self) -> dict:
        return {"valid": self.ok, "complete": self.complete, "forms": self.forms,
                "errors": [p.to_dict() for p in self.errors],
                **({"unclosed": self.unclosed} if self.unclosed else {})}


# ---------------------------------------------------------------------------------------------

def validate(text: str, dialect: str) -> Validation:
    """Check that `text` reads in `dialect`. Never evaluates; never raises for any text."""
    return validation(read(text, dialect))


def validation(r: Reading) -> Validation:
    """The `Validation` of a reading."""
    result = Validation(r.dialect, len(r.form_tokens), list(r.problems), source=r.text)
    if r.unclosed and r.first_problem is None:
        result.unclosed = [r.opener_info(o) for o in r.unclosed]
    return result


def top_level_forms(text: str, dialect: str) -> list[tuple[int, int]]:
    """Spans (start, end) of the complete top-level forms of `text`, in order.

    A prefix belongs to its form (`'x`, `#'f`, `#+sbcl (f)`, `^:m x`); comments and datums
    discarded by `#;` / `#_` are not forms. Scanning stops at the first error.
    """
    return read(text, dialect).spans


# --- the report text -----------------------------------------------------------------------------

def report(v: Validation) -> str:
    """The validate_syntax report: the spec's text, plus line/column details."""
    if v.ok:
        return f"✓ Syntax valid: {v.forms} top-level form(s)"
    out = ["✗ Syntax invalid", ""]
    first = v.errors[0]
    lines = Lines(v.source)
    if first.code == "UNCLOSED":
        out.append(f"Error: {first.message}")
        n = len(v.unclosed)
        all_parens = all(u["delim"] == "paren" for u in v.unclosed)
        out.append(f"Unclosed {'parentheses' if all_parens else 'delimiters'}: {n}")
        out.append(f"Approximate location: line {first.opener_line}")
        for u in reversed(v.unclosed[-5:]):
            out.append(f"  open {OPEN_CHAR[u['delim']]!r} at line {u['line']}, column "
                       f"{u['col']}: {_snippet(v.source, u['offset'])}")
        if n > 5:
            out.append(f"  ... and {n - 5} more")
        out.append(f"Missing {CLOSE_CHAR[first.expected]!r} most likely belongs at line "
                   f"{first.suggest_line}, column {first.suggest_col} (from the indentation)")
    else:
        out.append(f"Error: {first.message}")
        where = f"  Stream: line {first.line}, column {first.col}: "
        out.append(where + lines.line_text(first.line))
        out.append(" " * (len(where) + first.col - 1) + "^")
        for other in v.errors[1:]:
            out.append(f"Also: line {other.line}, column {other.col}: {other.message}")
    return "\n".join(out)


def _snippet(text: str, start: int, limit: int = 40) -> str:
    end = text.find("\n", start)
    piece = text[start:] if end < 0 else text[start:end]
    return piece if len(piece) <= limit else piece[:limit] + "..."
