"""Showing text from outside (code the model sent, file names, paths, values) as what it is.

`visible` writes out every character a terminal or a client's dialog would not show as itself;
`visible_code` also the lookalikes, outside strings and comments, of code that is about to run
(the gate's question, the YOLO display, the tool lines, MCP's question). Every line lispshell's
commands print (`check`, `trust`, `undo`, `hook`, notices) goes through `say`, so a file named
`notes\\e]52;c;...\\e\\\\.lisp` in a cloned repository cannot write the clipboard, and an
`.asd` named to erase lines cannot hide the line above it.
"""
from __future__ import annotations

import sys
import unicodedata


def say(*parts, sep: str = " ", end: str = "\n", file=None, flush: bool = False) -> None:
    """`print`, with every part rendered visible."""
    out = file if file is not None else sys.stdout
    out.write(visible(sep.join(str(p) for p in parts)) + end)
    if flush:
        out.flush()


def visible(text: str) -> str:
    """`text` with every character that a terminal or a client's dialog would not show as
    itself written out: C0 controls and DEL in caret notation (ESC is `^[`, as `cat -v` shows
    it), everything else invisible or reordering (C1 controls, bidirectional overrides,
    zero-width and other format characters, line separators, lone surrogates) as `<U+XXXX>`.
    Newlines and tabs stay. What the person approves is the code shown: an escape sequence
    that erases a line or moves the cursor cannot hide part of it (docs/security.md)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t":
            out.append(ch)
        elif code < 0x20 or code == 0x7F:
            out.append("^" + chr(code ^ 0x40))
        elif code >= 0x80 and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(f"<U+{code:04X}>")
        else:
            out.append(ch)
    return "".join(out)


# Characters Lisp readers give meaning to: a lookalike of one of them changes what a form is.
SYNTAX_CHARACTERS = frozenset("()[]{};'`,\"#|\\")
# Letters that draw as blank space (Unicode calls them letters or symbols, not spaces).
FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5")


def _confusables() -> frozenset[str]:
    """The non-ASCII characters that Unicode's confusables table (through the
    confusable_homoglyphs package) gives as looking like a syntax character or a run of them
    (“ is listed as '')."""
    global _CONFUSABLES
    if _CONFUSABLES is None:
        try:
            from confusable_homoglyphs.confusables import confusables_data as data
        except Exception:  # noqa: BLE001 - without the table, NFKC and the fillers still hold
            data = {}
        found = set()
        for key, glyphs in data.items():
            for glyph in glyphs:
                other = glyph.get("c", "")
                pair = [(key, other), (other, key)]
                for ch, looks in pair:
                    if len(ch) == 1 and not ch.isascii() and looks \
                            and all(c in SYNTAX_CHARACTERS for c in looks):
                        found.add(ch)
        _CONFUSABLES = frozenset(found)
    return _CONFUSABLES


_CONFUSABLES: frozenset[str] | None = None


def lookalike(ch: str) -> bool:
    """Whether a non-ASCII character passes for something it is not in code: a space other
    than ASCII's (any Zs, the fillers), or a character that looks like, or normalises to, a
    syntax character (fullwidth （, Greek ; U+037E, “). Letters of other scripts (λ) are not."""
    if ch.isascii():
        return False
    if unicodedata.category(ch) == "Zs" or ch in FILLERS:
        return True
    folded = unicodedata.normalize("NFKC", ch)
    if folded != ch and any(c in SYNTAX_CHARACTERS or c.isspace() for c in folded):
        return True
    return ch in _confusables()


def visible_pieces(code: str, dialect: str | None = None) -> list[tuple[str, bool]]:
    """`code` as (shown text, whether it was written out) pieces, one per character: control
    and invisible characters as `visible` writes them, and every lookalike (`lookalike`)
    outside strings and comments as `<U+XXXX>`: `(when<U+00A0>nil ...)` is one symbol to
    SBCL, never two words to the person. With no dialect (a diff, text whose strings cannot be
    told) lookalikes are written out everywhere."""
    quiet: list[tuple[int, int]] = []
    if dialect is not None and not code.isascii():
        try:
            from lispshell.syntax.lexer import tokenize

            tokens, _ = tokenize(code, dialect)
            quiet = [(t.start, t.end) for t in tokens
                     if t.kind in ("string", "comment", "block_comment")]
        except Exception:  # noqa: BLE001 - unlexable: show every lookalike
            quiet = []
    out = []
    at = 0
    for i, ch in enumerate(code):
        while at < len(quiet) and quiet[at][1] <= i:
            at += 1
        inside = at < len(quiet) and quiet[at][0] <= i
        shown = f"<U+{ord(ch):04X}>" if not inside and lookalike(ch) else visible(ch)
        out.append((shown, shown != ch))
    return out


def visible_code(code: str, dialect: str | None = None) -> str:
    """`code` as the person must see it before it runs (`visible_pieces`)."""
    if code.isascii() and visible(code) == code:
        return code
    return "".join(shown for shown, _ in visible_pieces(code, dialect))


def has_hidden(text: str, dialect: str | None = None) -> bool:
    """Whether `visible_code` changes `text`: the question then says how the hidden bytes are
    shown."""
    return visible_code(text, dialect) != text


HIDDEN_NOTE = ("(control, invisible and lookalike characters in it are shown as ^X and "
               "<U+XXXX>; they are part of what runs)")
