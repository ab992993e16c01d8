"""The eval gate, in one place: every `eval` a model asks for is decided here.

Modes: "ask" (the person confirms each call), "yolo" (run without asking), "off" (no eval at
all). Only the person changes the mode (REPL command, flag, config); no tool can reach it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

MODES = ("ask", "yolo", "off")


@dataclass(frozen=True)
class Decision:
    approved: bool
    code: str              # what will run: the person may have edited it
    reason: str = ""       # why it was refused, passed on to the model
    edited: bool = False
    by_person: bool = True  # False when no person was asked (gate off, nobody there to ask)


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
