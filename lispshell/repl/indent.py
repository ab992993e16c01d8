"""How far to indent a new line typed inside an open form (the Enter / Ctrl-J newline).

The project's re-indenter (`lispshell/syntax/indent.py`, also behind the LLM's tools) decides,
so the REPL and the tools agree. If it cannot (it wants balanced text, which we give it by
closing the open lists after a placeholder), these simpler local rules apply, Lisp style, from
the innermost list still open before the cursor:
  (defun f (x)          body forms (def..., let, lambda, when, fn...): opener column + 2
    ...
  (foo a                calls with an argument on the operator's line: under that argument
       b)
  (foo                  operator alone on its line: one column after the opener
   a)
  [1 2                  vectors, maps, data lists: one column after the opener
   3]
Inside an unterminated string nothing is added (spaces would change the string).
"""
from __future__ import annotations

from lispshell.repl.forms import syntax_dialect
from lispshell.repl.route import is_bare_symbol

# Operators whose remaining arguments are a body, indented by 2 rather than aligned.
_BODY = {
    "cl": {"lambda", "let", "let*", "flet", "labels", "macrolet", "symbol-macrolet", "when",
           "unless", "dolist", "dotimes", "do", "do*", "progn", "prog1", "block", "case",
           "ecase", "typecase", "etypecase", "handler-case", "handler-bind", "restart-case",
           "unwind-protect", "destructuring-bind", "multiple-value-bind", "eval-when", "loop",
           "in-package", "catch", "tagbody", "ignore-errors"},
    "scheme": {"lambda", "let", "let*", "letrec", "letrec*", "let-values", "let*-values",
               "when", "unless", "do", "case", "syntax-rules", "syntax-case", "parameterize",
               "guard", "receive", "begin", "match", "lambda*", "case-lambda"},
    "clojure": {"fn", "let", "loop", "when", "when-not", "when-let", "when-some", "when-first",
                "if-let", "if-some", "binding", "doseq", "dotimes", "for", "ns", "try", "catch",
                "finally", "case", "letfn", "future", "do", "comment", "reify", "proxy",
                "locking", "with-open", "condp", "go", "go-loop", "testing", "deftest"},
}
_BODY_PREFIXES = ("def", "with-", "call-with-", "define")


def is_body_operator(name: str, dialect: str) -> bool:
    name = name.rsplit(":", 1)[-1].rsplit("/", 1)[-1].lower()   # cl:defun, clojure.core/let
    return name in _BODY.get(dialect, ()) or name.startswith(_BODY_PREFIXES)


def _column(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1)


def newline_indent(before: str, dialect: str) -> int:
    """Spaces to put at the start of a new line typed after `before` (the text before the cursor)."""
    from lispshell.syntax.lexer import tokenize

    dialect = syntax_dialect(dialect)
    try:
        tokens, state = tokenize(before, dialect)
    except (ValueError, IndexError):
        return 0
    if state.unterminated:
        return 0            # inside a string or block comment: spaces would become content
    stack: list[int] = []          # indexes of open tokens not yet closed
    for i, tok in enumerate(tokens):
        if tok.kind == "open":
            stack.append(i)
        elif tok.kind == "close" and stack:
            stack.pop()
    if not stack:
        return 0
    shared = _shared_indent(before, dialect, [tokens[i] for i in stack])
    return shared if shared is not None else _fallback_indent(before, dialect, tokens, stack[-1])


def _shared_indent(before: str, dialect: str, open_tokens) -> int | None:
    """The column the project's re-indenter (syntax/indent.py) gives a new line here.

    It wants balanced text, so the new line gets a placeholder atom and the open lists are
    closed after it; None if it cannot say (then the local rules below decide).
    """
    try:
        from lispshell.syntax.dialects import CLOSE_CHAR
        from lispshell.syntax.indent import reindent
    except ImportError:
        return None
    closers = "".join(CLOSE_CHAR.get(tok.delim or "paren", ")") for tok in reversed(open_tokens))
    line = before.count("\n") + 2
    try:
        text = reindent(before + "\nx" + closers, dialect, line, line)
    except Exception:      # the re-indenter is strict about what it accepts; fall back
        return None
    last = text.rsplit("\n", 1)[-1]
    return len(last) - len(last.lstrip(" "))


def _fallback_indent(before: str, dialect: str, tokens, at: int) -> int:
    opener = tokens[at]
    inside = _column(before, opener.end)               # one column after the opener
    children = _direct_children(tokens, at)
    if getattr(opener, "delim", "paren") != "paren" or not children:
        return inside
    first = children[0]
    first_text = before[first.start:first.end]
    if first.kind != "atom" or not is_bare_symbol(first_text):
        return _column(before, first.start)             # a data list: align with its first item
    if is_body_operator(first_text, dialect):
        return _column(before, opener.start) + 2
    if len(children) > 1 and "\n" not in before[first.end:children[1].start]:
        return _column(before, children[1].start)       # align with the first argument
    return inside


def _direct_children(tokens, at: int) -> list:
    """The first tokens of the list opened at tokens[at] that sit directly inside it (up to 2)."""
    out = []
    depth = 0
    for tok in tokens[at + 1:]:
        if tok.kind in ("comment", "block_comment", "datum_comment"):
            continue
        if depth == 0:
            if tok.kind == "close":
                break
            out.append(tok)
            if len(out) == 2:
                break
        if tok.kind == "open":
            depth += 1
        elif tok.kind == "close":
            depth -= 1
    return out
