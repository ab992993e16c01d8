"""Where a submitted line goes: a `,` command, the Lisp, the LLM, or back to the editor.

    route(text, dialect) -> "command" | "lisp" | "llm" | "incomplete"

The rules, in order:
  - blank text                          -> "incomplete" (nothing to do yet)
  - starts with `,`                     -> "command"  (`,help`, `,lisp guile`, ...)
  - starts with `?`                     -> "llm"      (forces the LLM: `? what is (car nil)`)
  - reads as several top-level items, at least one of them a bare symbol
    ("add seven to that", "what package am I in?", "why does (f 1) fail")   -> "llm"
  - an unclosed list, string or block comment                             -> "incomplete"
  - anything else: one form of any kind, a lone symbol included, or several
    forms none of which is a bare symbol ("(defun f () 1) (f)", "1 2 3")    -> "lisp"

Text with a syntax error that still looks like Lisp (an extra `)`) routes to "lisp": the REPL
then shows the positioned error instead of evaluating. Routing reads with the project's own
lexer and never evaluates anything, so `#.(...)` typed at the prompt is not run here.
"""
from __future__ import annotations

import re

from lispshell.syntax.dialects import resolve_dialect

COMMAND, LISP, LLM, INCOMPLETE = "command", "lisp", "llm", "incomplete"

# Numbers in any of the three dialects: 1, -2, +.5, 1/2, 1.5e3, 2r101, 0xFF, 1N, 1.5M...
_NUMBER = re.compile(r"[+-]?\.?\d")


def is_bare_symbol(atom: str) -> bool:
    """An atom that is a plain symbol: not a number, keyword or `#` literal (#t, #:k, #x1F)."""
    return bool(atom) and not _NUMBER.match(atom) and atom[0] not in ":#\\"


def top_level_items(text: str, tokens) -> list[str]:
    """One entry per top-level datum of a token stream: "symbol" for a bare symbol, else "datum".

    A reader prefix (`'`, `` ` ``, `#'`, `@`...) makes the datum not bare; a datum comment (`#;`,
    `#_`) drops the datum after it; an unclosed list at the end counts as a datum; a stray
    closer is skipped (it is an error for the validator, not an item).
    """
    items: list[str] = []
    depth = 0
    prefixed = False
    dropped = 0          # datum comments waiting for their datum

    def finish(kind: str) -> None:
        nonlocal prefixed, dropped
        if dropped:
            dropped -= 1
        else:
            items.append("datum" if prefixed else kind)
        prefixed = False

    for tok in tokens:
        kind = tok.kind
        if kind in ("comment", "block_comment"):
            continue
        if depth:
            if kind == "open":
                depth += 1
            elif kind == "close":
                depth -= 1
                if not depth:
                    finish("datum")
            continue
        if kind == "datum_comment":
            dropped += 1
        elif kind == "prefix":
            prefixed = True
        elif kind == "open":
            depth = 1
        elif kind == "close":
            continue
        elif kind == "atom":
            finish("symbol" if is_bare_symbol(text[tok.start:tok.end]) else "datum")
        else:  # string, char, and any other literal the lexer may know
            finish("datum")
    if depth and not dropped:
        items.append("datum")
    return items


def route(text: str, dialect: str) -> str:
    """"command", "lisp", "llm" or "incomplete" for `text` typed at the prompt (see module doc)."""
    stripped = text.strip()
    if not stripped:
        return INCOMPLETE
    if stripped.startswith(","):
        return COMMAND
    if stripped.startswith("?"):
        return LLM
    dialect = resolve_dialect(dialect)
    try:
        from lispshell.syntax.lexer import tokenize
        from lispshell.syntax.validate import validate

        tokens, _state = tokenize(text, dialect)
        items = top_level_items(text, tokens)
        if len(items) >= 2 and "symbol" in items:
            return LLM
        if not validate(text, dialect).complete:
            return INCOMPLETE
    except (ValueError, IndexError):
        # The reader gave up on this text; the Lisp side reports it properly.
        return LISP
    return LISP
