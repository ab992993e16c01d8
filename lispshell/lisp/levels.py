"""Debug levels: an error that waits, with its frames, as SLDB and SBCL's own REPL have it.

When the person's code (or the model's, in the REPL) fails, the Lisp does not unwind: the loop
in the image waits inside the error's handler, so its stack, restarts and frames stay alive.
That is a *level*; an error while at a level opens the next one. What a level offers is one
declared interface (`Session`, below), each transport filling in what its Lisp can do, as
SLIME's swank/backend.lisp declares what every Lisp implements:

  level, waiting            how many levels are open, and the error the innermost one holds
  backtrace()               its frames, innermost first, numbered, with their source
  frame_locals(n)           a frame's local variables and their (bounded) values
  eval_in_frame(n, code)    evaluate with a frame's locals in scope
  frame_source(n)           "path:line" of the definition a frame runs
  restart_frame(n)          run a frame again from its start
  invoke_restart(n, arg)    one of the waiting error's restarts
  leave_level(), top()      back one level (`,abort`), back to the top (`,top`)

What a transport cannot do it answers with `NotOverThisTransport`, whose message says so;
callers never ask which transport they have. Batch runs and `lispshell mcp` never leave a level
open: they `top()` after an error (`keep_levels=False`).
"""
from __future__ import annotations

import time

from dataclasses import dataclass


class NotOverThisTransport(Exception):
    """What this Lisp or transport cannot do; the message says what and why."""


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


class Session:
    """The interface every transport offers (a child lispshell started, or a connection to
    the person's image). Debugging methods refuse by default; a transport overrides what its
    Lisp supports."""

    is_connection = False      # a connection's image is the person's: never restarted by us
    lisp = ""
    transport = "this transport"
    # Kept up to date by every transport; the prompt, the toolbar and the completer read them.
    package = ""               # the current package, module or namespace after the last answer
    ready = False              # started or connected, and answering
    busy = False               # an eval (the person's or the model's) runs now
    generation = 0             # images started or connections opened: a restart bumps it
    interrupt_grace = 2.0      # seconds an interrupt may take before the person is told more
    init_report = None         # EvalResult of loading the person's init files (a child)
    _interrupt_at: float | None = None   # when an interrupt that has not landed was sent

    @property
    def alive(self) -> bool:
        return self.ready

    @property
    def interrupt_pending(self) -> float:
        """Seconds since an interrupt was sent that has not landed yet (0: none)."""
        at = self._interrupt_at
        return time.monotonic() - at if at is not None and self.busy else 0.0
    # Debuggers other threads of the image entered, waiting for the person (Swank):
    # (thread, level, condition, restarts); `enter_thread(n)` makes one the current level.
    other_debuggers: tuple | list = ()

    _levels: LevelStack | None = None   # a transport with levels keeps its errors here

    @property
    def level(self) -> int:
        return self._levels.depth if self._levels is not None else 0

    @property
    def waiting(self):
        """The LispError the innermost level waits in (its restarts included), or None."""
        return self._levels.waiting if self._levels is not None else None

    @property
    def restarts(self) -> list[str]:
        """The restarts of the error the innermost level waits in ("NAME\tdescription")."""
        waiting = self.waiting
        return list(waiting.restarts) if waiting is not None else []

    def idle_output(self) -> str:
        """What the image printed since the last answer while nothing ran (a thread the
        person started), taken without waiting; "" when nothing, or while an eval runs."""
        return ""

    def _refuse(self, what: str):
        raise NotOverThisTransport(f"{what} is not available over {self.transport}")

    def backtrace(self) -> list[Frame]:
        self._refuse("a backtrace")

    def frame_locals(self, index: int) -> list[Local]:
        self._refuse("a frame's locals")

    def frame_source(self, index: int) -> str:
        self._refuse("a frame's source")

    def eval_in_frame(self, index: int, code: str, **kw):
        self._refuse("evaluation in a frame")

    def restart_frame(self, index: int, **kw):
        self._refuse("restarting a frame")

    def invoke_restart(self, index: int, argument: str = "", **kw):
        self._refuse("invoking a restart")

    def leave_level(self, **kw):
        self._refuse("leaving a debug level")

    def top(self, **kw):
        self._refuse("leaving the debug levels")

    def enter_thread(self, index: int):
        self._refuse("another thread's debugger")
