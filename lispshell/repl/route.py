"""Where a submitted line goes: a `,` command, the Lisp, the LLM, or back to the editor.

    route(text, dialect) -> "command" | "lisp" | "llm" | "incomplete"

The rules, in order:
  - blank text                          -> "incomplete" (nothing to do yet)
  - starts with `,`                     -> "command"  (`,help`, `,lisp guile`, ...)
  - starts with `?`                     -> "llm"      (forces the LLM: `? what is (car nil)`)
  - unmistakable prose: two plain words in a row among the top-level items, a plain word
    being letters only (an English word, perhaps ending in ? ! . , or :) of which one has
    three letters or more ("add seven to that", "what package am I in?",
    "why does (f 1) fail")                                                 -> "llm"
  - an unclosed list, string or block comment                             -> "incomplete"
  - anything else reads as Lisp, and is Lisp: one form of any kind, a lone symbol included,
    several forms ("(defparameter *x* 3) *x*", "*x* *threshold*", "x y", "1 2 3") -> "lisp"
Meta-Enter (Esc Enter) forces "lisp" for anything but a command or `?` (the REPL's doing).

Text with a syntax error that still looks like Lisp (an extra `)`) routes to "lisp": the REPL
then shows the positioned error instead of evaluating. Routing reads with the project's one
reading of the text (`syntax.reading.read`, shared with validation and indentation) and never
evaluates anything, so `#.(...)` typed at the prompt is not run here.
"""
from __future__ import annotations

import re

from lispshell.syntax.dialects import resolve_dialect
from lispshell.syntax.lexer import CODE_KIND
from lispshell.syntax.reading import read

COMMAND, LISP, LLM, INCOMPLETE = "command", "lisp", "llm", "incomplete"

# Numbers in any of the three dialects: 1, -2, +.5, 1/2, 1.5e3, 2r101, 0xFF, 1N, 1.5M...
_NUMBER = re.compile(r"[+-]?\.?\d")


_WORD = re.compile(r"[A-Za-z][a-z]*[?!.,:]?")


def plain_word(atom: str) -> bool:
    """A symbol that reads as an English word (`add`, `why?`, `I`), not as a Lisp name
    (`*x*`, `make-array`, `x1`, `pkg:name`)."""
    return bool(_WORD.fullmatch(atom))


def is_bare_symbol(atom: str) -> bool:
    """An atom that is a plain symbol: not a number, keyword or `#` literal (#t, #:k, #x1F)."""
    return bool(atom) and not _NUMBER.match(atom) and atom[0] not in ":#\\"


def top_level_items(r) -> list[str]:
    """One entry per top-level datum of a reading (`syntax.reading.read`): "word" for a bare
    symbol that is a plain word (`plain_word`), "symbol" for another bare symbol, else "datum".

    A reader prefix (`'`, `` ` ``, `#'`, `@`...) makes the datum not bare; a datum comment (`#;`,
    `#_`) drops the datum after it; an unclosed list at the end counts as a datum; a stray
    closer is skipped (it is an error for the validator, not an item).
    """
    codes, partner, tokens = r.codes, r.partner, r.tokens
    items: list[str] = []
    prefixed = False
    dropped = 0          # datum comments waiting for their datum
    j, n = 0, len(codes)
    while j < n:
        c = codes[j]
        kind = "datum"
        if c in ";b)]}":              # comments, and a stray closer
            j += 1
            continue
        if c == "d":
            dropped += 1
            j += 1
            continue
        if c == "p":
            prefixed = True
            j += 1
            continue
        if c in "([{":
            if partner[j] < 0:        # open to the end
                if not dropped:
                    items.append("datum")
                break
            j = partner[j]
        elif CODE_KIND[c] == "atom":
            atom = tokens.text_of(j)
            kind = ("datum" if not is_bare_symbol(atom)
                    else "word" if plain_word(atom) else "symbol")
        if dropped:
            dropped -= 1
        else:
            items.append("datum" if prefixed else kind)
        prefixed = False
        j += 1
    return items


def is_lone_symbol(text: str, dialect: str) -> bool:
    """Is `text` one bare symbol and nothing else (`thanks`, `why?`), as opposed to a form that
    merely fails on an unbound variable (`(+ 1 undefined-zz)`)?"""
    try:
        return top_level_items(read(text, resolve_dialect(dialect))) in (["symbol"], ["word"])
    except (ValueError, IndexError):
        return False


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
        r = read(text, dialect)
        if _prose(r, CONSTANTS.get(dialect, frozenset())):
            return LLM
        if r.problems and all(p.incomplete for p in r.problems):
            return INCOMPLETE
    except (ValueError, IndexError):
        # The reader gave up on this text; the Lisp side reports it properly.
        return LISP
    return LISP


# Words that are a dialect's constants: Lisp, never prose (`nil t` prints NIL and T, as `sbcl`
# does), however English they look.
CONSTANTS = {"cl": frozenset({"nil", "t"}), "clojure": frozenset({"nil", "true", "false"}),
             "scheme": frozenset()}

_CONTRACTION = re.compile(r"(?<![^\s(])[A-Za-z]+'(?:s|t|re|ve|ll|m|d)(?=[\s?!.,]|$)")


def _prose(r, constants=frozenset()) -> bool:
    """Two plain words in a row among the top-level items, one of three letters or more; or
    an English contraction (what's, don't) and another word. The dialect's `constants` are
    not words."""
    if _CONTRACTION.search(r.text) and any(_items_as_words(r, constants)):
        return True
    previous = None
    for word in _items_as_words(r, constants):
        if word and previous and max(len(word.rstrip("?!.,")),
                                     len(previous.rstrip("?!.,"))) >= 3:
            return True
        previous = word
    return False


def _items_as_words(r, constants=frozenset()):
    """Each top-level item of a reading: its text if it is a plain word, else None (a list, a
    quoted datum, a string, another symbol): words count as in a row only when nothing else
    stands between them."""
    codes, partner = r.codes, r.partner
    prefixed = False
    j, n = 0, len(codes)
    while j < n:
        c = codes[j]
        if c in ";b)]}":
            j += 1
            continue
        if c in "dp":                       # a datum comment or a reader prefix: not a word
            prefixed = True
            j += 1
            continue
        if c in "([{":
            if partner[j] < 0:
                return
            yield None
            j = partner[j] + 1
        else:
            atom = r.tokens.text_of(j) if CODE_KIND[c] == "atom" else ""
            yield (atom if atom and not prefixed and plain_word(atom) and atom not in constants
                   else None)
            j += 1
        prefixed = False
