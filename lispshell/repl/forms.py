"""Split submitted text into top-level forms, and describe a syntax problem with a caret.

Shared by the REPL and the non-interactive path so both read text the same way: the project's
own reader (never the Lisp's, so nothing is evaluated while reading), complete forms in order,
and the first syntax problem with its position. Like a Lisp reader, we stop at the problem:
forms after it are not evaluated.
"""
from __future__ import annotations

from dataclasses import dataclass

@dataclass
class SyntaxProblem:
    message: str
    offset: int          # into the text
    line: int            # 1-based
    col: int             # 1-based

    def describe(self, text: str, source: str | None = None) -> str:
        """`<source>:LINE:COL: message`, then the offending line and a caret under the spot."""
        where = f"{source}:{self.line}:{self.col}" if source else f"line {self.line}, column {self.col}"
        lines = text.split("\n")
        shown = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        caret = " " * (self.col - 1) + "^"
        return f"{where}: {self.message}\n  {shown}\n  {caret}"


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of `offset` in `text`."""
    from lispshell.syntax.reading import LineIndex

    return LineIndex(text).line_col(max(0, min(offset, len(text))))


def problem_at(text: str, message: str, offset: int) -> SyntaxProblem:
    line, col = position(text, offset)
    return SyntaxProblem(message, offset, line, col)


def split_forms(text: str, dialect: str) -> tuple[list[str], SyntaxProblem | None]:
    """The complete top-level forms of `text` before its first syntax problem, and that problem.

    `dialect` is a Lisp name (sbcl, guile, clojure) or a syntax dialect (cl, scheme, clojure).
    Comments between forms are dropped; a text of only comments and blanks gives no forms.
    """
    from lispshell.syntax.reading import read

    r = read(text, dialect)
    problem = None
    limit = len(text)
    if r.problems:
        err = r.problems[0]
        problem = problem_at(text, err.message, err.offset)
        limit = problem.offset
    forms = [text[start:end] for start, end in r.spans if end <= limit]
    return forms, problem
