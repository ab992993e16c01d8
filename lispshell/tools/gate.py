"""The eval gate, in one place: every `eval` a model asks for is decided here.

Modes: "ask" (the person confirms each call), "yolo" (run without asking), "off" (no eval at
all). Only the person changes the mode (REPL command, flag, config); no tool can reach it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# What the person is shown is rendered in one place (lispshell/show.py); the gate's callers
# take it from here too.
from lispshell.show import (HIDDEN_NOTE, has_hidden, lookalike, visible,  # noqa: F401
                            visible_code, visible_pieces)

MODES = ("ask", "yolo", "off")


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


def require(ctx, shown: str, refused: str, declined: str) -> str:
    """The code the person approved for `shown` (`ctx.gate` decides), or the ToolError that
    says who refused and why. `refused` opens a refusal nobody made ("The code was not
    evaluated"), `declined` is what the model is told when the person said no. Every tool that
    runs code in the image comes through here."""
    from lispshell.tools.registry import ToolError

    if ctx.gate is None:
        raise ToolError("NOT_ALLOWED", f"{refused}: no one is here to confirm evaluations.")
    decision = ctx.gate.decide(shown, ctx.extra.get("eval_index", 1),
                               ctx.extra.get("eval_total", 1))
    if decision.approved:
        return decision.code
    if ctx.gate.mode == "off":
        raise ToolError("EVAL_OFF", decision.reason or "Evaluation is turned off.")
    if not decision.by_person:       # nobody said no: never claim the person did
        raise ToolError(decision.refusal, f"{refused}: {decision.reason}")
    raise ToolError("DECLINED", declined + (f" Reason: {decision.reason}" if decision.reason
                                            else ""))
