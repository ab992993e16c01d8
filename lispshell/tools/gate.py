"""The eval gate, in one place: every `eval` a model asks for is decided here.

Modes: "ask" (the person confirms each call), "yolo" (run without asking), "off" (no eval at
all). Only the person changes the mode (REPL command, flag, config); no tool can reach it.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable

MODES = ("ask", "yolo", "off")


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


@dataclass(frozen=True)
class Decision:
    approved: bool
    code: str              # what will run: the person may have edited it
    reason: str = ""       # why it was refused, passed on to the model
    edited: bool = False
    by_person: bool = True  # False when no person was asked (gate off, nobody there to ask)
    refusal: str = "NOT_ALLOWED"  # the error code of a refusal not made by a person


# confirm(code, index, total) -> Decision; the REPL asks on the terminal, MCP may elicit.
Confirm = Callable[[str, int, int], Decision]
# confirm_edit(edit) -> Decision: the same question about a change to a file that runs at start.
ConfirmEdit = Callable[["Edit"], Decision]


@dataclass(frozen=True)
class Edit:
    """A change the model asks to make to a file that runs without being loaded (lispshell.
    writes): the person approves it as they approve an eval, seeing the whole diff."""
    path: str              # as the person knows it (absolute)
    why: str               # why the file runs at start
    diff: str              # unified diff of the whole change

    def question_text(self) -> str:
        """One text that names the change, for keys and digests (MCP asks by it)."""
        return f"edit {self.path}\n{self.diff}"


def unified_diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"{path} (now)", tofile=f"{path} (after the edit)")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)


class EvalGate:
    def __init__(self, mode: str = "ask", confirm: Confirm | None = None,
                 confirm_edit: ConfirmEdit | None = None):
        if mode not in MODES:
            raise ValueError(f"gate mode must be one of {', '.join(MODES)}, not {mode!r}")
        self._mode = mode
        self._confirm = confirm
        self._confirm_edit = confirm_edit

    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str) -> None:
        """Called by the person's own commands only."""
        if mode not in MODES:
            raise ValueError(f"gate mode must be one of {', '.join(MODES)}, not {mode!r}")
        self._mode = mode

    def decide(self, code: str, index: int = 1, total: int = 1) -> Decision:
        if self._mode == "off":
            return Decision(False, code, "Evaluation is turned off in this session.", by_person=False)
        if self._mode == "yolo":
            return Decision(True, code)
        if self._confirm is None:
            return Decision(False, code, "No one is here to confirm this evaluation.", by_person=False)
        return self._confirm(code, index, total)

    def decide_edit(self, edit: Edit) -> Decision:
        """A change to a file that runs at start is code that will run: it passes the gate as
        an eval does (off refuses, YOLO lets it through, ask shows the diff)."""
        text = edit.question_text()
        if self._mode == "off":
            return Decision(False, text, "Evaluation is turned off in this session, and this "
                            "file runs code at start.", by_person=False)
        if self._mode == "yolo":
            return Decision(True, text)
        if self._confirm_edit is None:
            return Decision(False, text, "No one is here to confirm a change to a file that "
                            "runs at start.", by_person=False)
        return self._confirm_edit(edit)
