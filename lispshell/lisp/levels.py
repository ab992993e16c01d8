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
  step_form(code)           the code that evaluates CODE stepping (`,step FORM`; Clojure
                            instruments the function: lispshell/lisp/stepping.py)
  step(how)                 at a step: into | next | out | continue (`,s ,n ,o ,c`); at another
                            level that can continue, stepping starts from there
  continue_level()          run on from a level (a step, a breakpoint, a CONTINUE restart)
  return_value(form)        leave a breakpoint's call with FORM's value, its body not run
  set_breakpoint(name, condition), breakpoints(), clear_breakpoint(which)
                            a call of the function NAME (when CONDITION, a form over its
                            arguments, is true) stops in a level showing its arguments by name,
                            where forms evaluate with them bound; `Breakpoint` records

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


@dataclass(frozen=True)
class Breakpoint:
    number: int        # as `,breaks` lists it and `,unbreak N` takes it
    name: str          # the function, as the Lisp prints its name
    condition: str = ""
    hits: int = 0
    by_model: bool = False   # set by the model's `set_breakpoint` (the toolbar says so)


# The restarts SBCL's stepper offers at a step (sb-impl::step-form), by what `,s ,n ,o ,c` ask.
STEP_RESTARTS = {"into": "STEP-INTO", "next": "STEP-NEXT", "out": "STEP-OUT",
                 "continue": "STEP-CONTINUE"}
# The level a breakpoint hit opens offers these two (and an abort), on every Lisp.
CONTINUE, RETURN_VALUE = "CONTINUE", "RETURN-VALUE"


def level_kind(restarts) -> str:
    """What a hit's level is, read from its restarts (another thread's hit is listed with its
    restarts alone): a step (LISPSHELL-STEP) offers the step restarts, a breakpoint's does not."""
    names = {r.split("\t", 1)[0] for r in restarts}
    return "LISPSHELL-STEP" if STEP_RESTARTS["next"] in names else "LISPSHELL-BREAK"


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


# Answers of lispshell's loops that carry a level's restarts again without opening a level.
OWN_NOTES = ("LISPSHELL-RESTART-DID-NOT-RUN", "LISPSHELL-NO-SUCH-RESTART", "LISPSHELL-ABORTED")


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
            # A level left and another opened at the same depth (a restart that ran into a new
            # error, the next step, a breakpoint's ,s into a step): the new one waits now. An
            # answer with restarts opened it; lispshell's own notes (ABORTED...) did not.
            if (reported and error is not None and getattr(error, "restarts", None)
                    and error.type not in OWN_NOTES):
                self.errors[reported - 1] = error

    def clear(self) -> None:
        self.errors = []


def step_by_restarts(session, how: str, **kw):
    """`step` where the stepper's restarts are the level's (SBCL, child and Swank; Guile's
    loop): at a step, the restart `how` names; at another level, stepping starts from there:
    through the level's own STEP-INTO restart where it offers one (Guile's breakpoint and
    interrupt levels), else SBCL's way, stepping switched on and the code run on from its
    CONTINUE restart, as SBCL's debugger's START and SLDB's `s` do."""
    if how not in STEP_RESTARTS:
        raise ValueError(f"step how? one of {', '.join(STEP_RESTARTS)}")
    index = session._restart_named(STEP_RESTARTS[how])
    if index is not None:
        return session.invoke_restart(index, **kw)
    if not session.level:
        raise ValueError("nothing is being stepped: ,step FORM steps a form")
    if how == "continue":
        return session.continue_level(**kw)
    index = session._restart_named(STEP_RESTARTS["into"])
    if index is not None:
        return session.invoke_restart(index, **kw)
    index = session._restart_named(CONTINUE)
    if index is None:
        raise ValueError("this level is not a step and has no CONTINUE restart to step from")
    # Stepping is a flag of the level's thread, switched on where the level waits; the code
    # that runs on from it stops at its next step point (in code compiled with (debug 3)).
    on = session.eval("(sb-impl::enable-stepping)", timeout=None, history=False,
                      keep_levels=True)
    if on.error is not None:
        raise ValueError(f"stepping could not be switched on: {on.error}")
    return session.invoke_restart(index, **kw)
