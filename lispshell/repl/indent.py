"""How far to indent a new line typed inside an open form (the Enter / Ctrl-J newline).

The project's re-indenter (`lispshell/syntax/indent.py`, also behind the LLM's structural
tools) decides, so the REPL and the tools agree on one set of rules. It wants balanced text,
so the new line gets a placeholder atom and the open lists are closed after it. Inside an
unterminated string or block comment nothing is added (spaces would become content).
"""
from __future__ import annotations

from lispshell.syntax.dialects import resolve_dialect
from lispshell.syntax.indent import reindent
from lispshell.syntax.reading import CLOSER_OF, read


def _column(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1)


def newline_indent(before: str, dialect: str) -> int:
    """Spaces to put at the start of a new line typed after `before` (the text before the cursor)."""
    dialect = resolve_dialect(dialect)
    try:
        r = read(before, dialect)
    except (ValueError, IndexError):
        return 0
    if r.state.unterminated or not r.unclosed:
        return 0
    closers = "".join(CLOSER_OF[r.codes[o]] for o in reversed(r.unclosed))
    line = before.count("\n") + 2
    try:
        text = reindent(before + "\nx" + closers, dialect, line, line)
    except Exception:  # text the re-indenter will not take (a stray closer earlier on)
        return _column(before, r.tokens.ends[r.unclosed[-1]])   # one column after the innermost opener
    last = text.rsplit("\n", 1)[-1]
    return len(last) - len(last.lstrip(" "))
