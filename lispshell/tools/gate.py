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


def has_hidden(text: str) -> bool:
    """Whether `visible` changes `text`: the question then says how the hidden bytes are shown."""
    return visible(text) != text


HIDDEN_NOTE = ("(control and invisible characters in it are shown as ^X and <U+XXXX>; they are "
               "part of what runs)")


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


class EvalGate:
    def __init__(self, mode: str = "ask", confirm: Confirm | None = None):
        if mode not in MODES:
            raise ValueError(f"gate mode must be one of {', '.join(MODES)}, not {mode!r}")
        self._mode = mode
        self._confirm = confirm

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
