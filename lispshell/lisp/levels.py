"""Debug levels: an error that waits, with its frames, as SLDB and SBCL's own REPL have it.

When the person's code (or the model's, in the REPL) fails, the Lisp does not unwind: the loop
in the image waits inside the error's handler, so its stack, restarts and frames stay alive.
That is a *level*; an error while at a level opens the next one. What a level offers is part
of the session contract (lispshell/lisp/contract.py), each transport filling in what its Lisp
can do, as SLIME's swank/backend.lisp declares what every Lisp implements:

  level, waiting            how many levels are open, and the error the innermost one holds
  backtrace()               its frames, innermost first, numbered, with their source
  frame_locals(n)           a frame's local variables and their (bounded) values
  eval_in_frame(n, code)    evaluate with a frame's locals in scope
  frame_source(n)           "path:line" of the definition a frame runs
  restart_frame(n)          run a frame again from its start
  invoke_restart(n, arg)    one of the waiting error's restarts
  leave_level(), top()      back one level (`,abort`), back to the top (`,top`)

What a transport cannot do it answers with `contract.NotOverThisTransport`, whose message says
so; callers read `capabilities`, never which transport they have. Batch runs and
`lispshell mcp` never leave a level open: they `top()` after an error (`keep_levels=False`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Frame:
    index: int
    call: str          # the frame as its Lisp prints a call: (G 5)
    source: str = ""   # "path:line" of the definition it runs, "" when unknown


@dataclass(frozen=True)
class Local:
    name: str
    value: str         # printed, bounded (length and depth) and circle-safe


def parse_frames(values: list[str]) -> list[Frame]:
    frames = []
    for v in values:
        index, _, rest = v.partition("\t")
        call, _, source = rest.partition("\t")
        if index.isdigit():
            frames.append(Frame(int(index), call, source))
    return frames


def parse_locals(values: list[str]) -> list[Local]:
    return [Local(*v.split("\t", 1)) for v in values if "\t" in v]


class LevelStack:
    """The errors of the open levels, innermost last, kept in step with the level each answer
    reports (an answer from level 2 after level 3 was left drops the third)."""

    def __init__(self):
        self.errors: list = []

    @property
    def depth(self) -> int:
        return len(self.errors)

    @property
    def waiting(self):
        return self.errors[-1] if self.errors else None

    def after(self, reported: int, error) -> None:
        if reported > len(self.errors):
            self.errors.extend([error] * (reported - len(self.errors)))
        else:
            del self.errors[reported:]

    def clear(self) -> None:
        self.errors = []
