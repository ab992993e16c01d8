"""The session contract: what every way of reaching a Lisp offers, declared once.

Six transports fill it: a child lispshell started (SBCL, Guile, Clojure: `session.LispSession`
over a pty), and a connection to the person's own image (Swank `swank.py`, nREPL `nrepl.py`,
Guile's REPL server `guile_server.py`). The REPL, the model's tools, MCP and batch runs use
only what is declared here, and ask `capabilities` what a transport can do: never which
transport they hold. As SLIME's swank/backend.lisp `definterface`, every operation is
documented here, and one a transport does not fill refuses plainly (`NotOverThisTransport`,
whose message names the operation and the transport); the operations every transport must
fill are listed in `REQUIRED` and checked by tests/test_session_contract.py.

Operations, in groups:

  lifecycle   start(wait), close(), restart(), reconnect(), kill_now()
  state       lisp, dialect, transport, is_connection, package, ready, busy, alive, generation,
              pid, init_report, capabilities, interrupt_grace, interrupt_pending
  evaluation  eval(code, ...) -> EvalResult        the person's and the model's evals
              try_eval(code, ...) -> EvalResult | None   look-ups that never wait on the image
              interrupt() -> InterruptOutcome      Ctrl-C, from any thread
              completions(prefix, kind) -> names
              idle_output() -> text printed while nothing ran
  input       eval(on_input=...): the code's reads of standard input are asked of `on_input`
              (a line, None for end of file, KeyboardInterrupt for Ctrl-C); without it they get
              end of file, counted in EvalResult.input_refused
  debugger    level, waiting, restarts, backtrace(), frame_locals(n), frame_source(n),
              eval_in_frame(n, code), restart_frame(n), invoke_restart(n, arg), leave_level(),
              top(), other_debuggers, enter_thread(n)   (lispshell/lisp/levels.py: the data)
  stepping    step_form(code), step(how), continue_level(), return_value(form)
  breakpoints set_breakpoint(name, condition, by_model), set_source_breakpoint(file, line, ...),
              breakpoints(), clear_breakpoint(which)
              (lispshell/lisp/breakpoints.py: kept in the image)
  observing   trace, time and profile are evaluations of the dialect's own forms
              (`Dialect.timed_form`, image/*-observe.*): every transport that evaluates has them

Interrupts are the same everywhere (`InterruptOutcome`): the first Ctrl-C is sent (SENT); while
it has not landed the eval goes on waiting, and the REPL says so after `interrupt_grace`; a
Ctrl-C after that is the person's word to stop waiting (GAVE_UP): a child lispshell started is
killed and started afresh, a connection is closed and the image left running (`,reconnect`).
Never a timer's: only an eval with a deadline (the model's, MCP's) stops waiting by itself,
`interrupt_grace` twice after its deadline's interrupt (`EvalClock`).
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from lispshell.lisp.levels import (CONTINUE, RETURN_VALUE, STEP_RESTARTS, Breakpoint, Frame,
                                   LevelStack, Local)


class NotOverThisTransport(Exception):
    """What this Lisp or transport cannot do; the message says what and why."""


class InterruptOutcome(str, enum.Enum):
    """What `interrupt()` did. A str, so that it prints and compares as its word."""

    NOTHING_RUNNING = ""     # no eval of the person's or the model's was running
    SENT = "interrupted"     # sent; the eval answers interrupted, or opens a level (SBCL)
    GAVE_UP = "killed"       # asked again after the grace: the child killed, the connection closed

    def __bool__(self) -> bool:
        return self is not InterruptOutcome.NOTHING_RUNNING


@dataclass(frozen=True)
class Capabilities:
    """What a transport can do beyond evaluating: read instead of asking which transport it is.
    docs/debugging.md's table is this, per transport (tests/test_session_contract.py checks)."""

    levels: bool = False         # an error waits in a level: restarts, eval in frame, ,abort
    frames: bool = False         # backtrace() and frame_locals() (of a waiting error, or the last)
    threads: bool = False        # other threads' debuggers are listed and can be entered
    systems: bool = False        # completions(kind="system"): ASDF systems for ,load-system
    restart_image: bool = False  # restart(): only an image lispshell started itself
    reconnect: bool = False      # reconnect(): a connection to the person's image
    breakpoints: bool = False    # set_breakpoint(): a call stops in a level with its arguments
    stepping: bool = False       # step_form() and step(): a level per step (SBCL's stepper;
                                 # Clojure: the function instrumented, lisp/stepping.py)


# What every transport must fill itself (no default would do).
REQUIRED = ("start", "close", "eval", "try_eval", "completions", "_interruptible",
            "_send_interrupt", "_give_up")


class Session:
    """The interface every transport offers. The defaults below are what a transport that does
    not override an operation gives: a plain refusal, or nothing."""

    is_connection = False      # the image is the person's: never killed or restarted by us
    lisp = ""
    transport = "this transport"
    capabilities = Capabilities()
    # Kept up to date by every transport; the prompt, the toolbar and the completer read them.
    package = ""               # the current package, module or namespace after the last answer
    ready = False              # started or connected, and answering
    busy = False               # an eval (the person's or the model's) runs now
    generation = 0             # images started or connections opened: a restart bumps it
    interrupt_grace = 2.0      # seconds an interrupt may take before the person is told more
    init_report = None         # EvalResult of loading the person's init files (a child)
    pid = None                 # the child's process id; None for a connection
    _interrupt_at: float | None = None   # when an interrupt that has not landed was sent

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, wait: bool = True) -> None:
        """Start the child or connect; `wait=False` may boot in the background (eval waits)."""
        self._refuse("starting")

    def close(self) -> None:
        """End the child, or disconnect (the image runs on). Never raises."""

    def restart(self) -> None:
        """Kill the child and start afresh (`,restart`): only an image lispshell started."""
        self._refuse("restarting the image")

    def reconnect(self) -> None:
        """Open a new connection to the same image (`,reconnect`)."""
        self._refuse("reconnecting")

    def kill_now(self) -> None:
        """From a signal handler: end what lispshell started, at once, without waiting. A
        connection has nothing of lispshell's to end (the process leaving closes its socket),
        and must not wait on a server there."""

    @property
    def alive(self) -> bool:
        return self.ready

    # -- evaluation ------------------------------------------------------------------------
    def eval(self, code: str, *, timeout: float | None = None, output_cap: int | None = None,
             on_output=None, history: bool = True, value_cap: int | None = None,
             keep_levels: bool = False, on_input=None):
        """Evaluate `code` (forms in order); an EvalResult. `timeout` None waits as long as it
        takes (Ctrl-C interrupts); a number interrupts the form when exceeded. `on_output`
        gets all output as it comes; the result keeps `output_cap` characters of it and each
        value up to `value_cap`. `history=False` leaves the REPL variables alone (look-ups).
        `keep_levels`: an error waits in a level (the REPL) where the Lisp has levels."""
        self._refuse("evaluation")

    def try_eval(self, code: str, timeout: float = 2.0, output_cap: int = 1 << 16,
                 wait: float = 0.0):
        """As eval with history=False, but None at once if the image is busy or starting."""
        return None

    def completions(self, prefix: str, kind: str = "symbol") -> list[str]:
        """Names from the live image that start with `prefix`; [] at once when busy."""
        return []

    def idle_output(self) -> str:
        """What the image printed since the last answer while nothing ran (a thread the
        person started), taken without waiting; "" when nothing, or while an eval runs."""
        return ""

    # -- interrupts: the same escalation on every transport ----------------------------------
    def interrupt(self) -> InterruptOutcome:
        """Ctrl-C (safe from any thread). The first is sent; one after an interrupt that has
        not landed within `interrupt_grace` seconds gives up waiting (the person's word)."""
        if not self._interruptible():
            return InterruptOutcome.NOTHING_RUNNING
        at = self._interrupt_at
        if at is not None and time.monotonic() - at >= self.interrupt_grace:
            self._give_up()
            return InterruptOutcome.GAVE_UP
        self._send_interrupt()
        return InterruptOutcome.SENT

    @property
    def interrupt_pending(self) -> float:
        """Seconds since an interrupt was sent that has not landed yet (0: none)."""
        at = self._interrupt_at
        return time.monotonic() - at if at is not None and self.busy else 0.0

    def _interruptible(self) -> bool:
        """An eval of the person's or the model's runs, and can be reached."""
        return False

    def _send_interrupt(self) -> None:
        """Send the interrupt (again), noting in `_interrupt_at` when the first was sent."""
        self._refuse("interrupting")

    def _give_up(self) -> None:
        """Stop waiting for the running eval: kill the child, or close the connection so that
        the eval's read ends; the eval's result says it was at the person's word."""
        self._refuse("giving up on an evaluation")

    # -- the debugger (lispshell/lisp/levels.py) ---------------------------------------------
    # Debuggers other threads of the image entered, waiting for the person (Swank):
    # (thread, level, condition, restarts); `enter_thread(n)` makes one the current level.
    other_debuggers: tuple | list = ()
    _levels: LevelStack | None = None   # a transport with levels keeps its errors here

    @property
    def level(self) -> int:
        """How many debug levels are open."""
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

    def _refuse(self, what: str):
        raise NotOverThisTransport(f"{what} is not available over {self.transport}")

    def backtrace(self) -> list[Frame]:
        """The waiting (or last) error's frames, innermost first, numbered, with source."""
        self._refuse("a backtrace")

    def frame_locals(self, index: int) -> list[Local]:
        """A frame's local variables and their (bounded) printed values."""
        self._refuse("a frame's locals")

    def frame_source(self, index: int) -> str:
        """"path:line" of the definition a frame runs ("" when unknown)."""
        self._refuse("a frame's source")

    def eval_in_frame(self, index: int, code: str, **kw):
        """Evaluate `code` with frame `index`'s locals in scope; an EvalResult."""
        self._refuse("evaluation in a frame")

    def restart_frame(self, index: int, **kw):
        """Run frame `index` again from its start."""
        self._refuse("restarting a frame")

    def invoke_restart(self, index: int, argument: str = "", **kw):
        """Invoke restart `index` of the waiting error; `argument` answers what it asks."""
        self._refuse("invoking a restart")

    def leave_level(self, **kw):
        """Leave the innermost level (`,abort`)."""
        self._refuse("leaving a debug level")

    def top(self, **kw):
        """Leave every level (`,top`)."""
        self._refuse("leaving the debug levels")

    def enter_thread(self, index: int):
        """Make another thread's waiting debugger (`other_debuggers[index]`) the level."""
        self._refuse("another thread's debugger")

    # -- stepping and breakpoints (levels too: lispshell/lisp/levels.py) ----------------------
    def _restart_named(self, *names: str) -> int | None:
        """The index of the first waiting restart called one of `names`, or None."""
        listed = [r.split("\t", 1)[0].upper() for r in self.restarts]
        for name in names:
            if name in listed:
                return listed.index(name)
        return None

    def step_form(self, code: str) -> str:
        """The code that evaluates `code` stepping (`,step FORM`): each step a level. It may
        prepare the image first (Clojure arms the function), and raises ValueError saying why
        `code` cannot be stepped."""
        self._refuse("stepping")

    def step(self, how: str, **kw):
        """At a step: into | next | out | continue (`,s ,n ,o ,c`); at another level that can
        continue, stepping starts from there (levels.step_by_restarts)."""
        self._refuse("stepping")

    def continue_level(self, **kw):
        """Run on from the waiting level: its step goes on unstepped, its breakpoint's call
        runs, or its CONTINUE restart (an interrupt's, a BREAK's) is invoked."""
        if not self.level:
            raise ValueError("no level is open: nothing waits to continue")
        index = self._restart_named(STEP_RESTARTS["continue"], CONTINUE)
        if index is None:
            raise ValueError("this level has no CONTINUE restart: ,invoke N picks another, "
                             ",abort leaves it")
        return self.invoke_restart(index, **kw)

    def return_value(self, form: str, **kw):
        """Leave the waiting breakpoint's call with FORM's value, without running its body."""
        if not self.level:
            raise ValueError("no level is open: ,return leaves a breakpoint's call")
        index = self._restart_named(RETURN_VALUE)
        if index is None and getattr(self.waiting, "type", "") == "LISPSHELL-BREAK":
            raise ValueError(f"{self.transport} cannot return from this call without running "
                             "it: its breakpoint is a trap inside the call, which has begun "
                             "(,continue runs it on, ,abort leaves the evaluation)")
        if index is None:
            raise ValueError("this level is not a breakpoint's: there is no call to return "
                             "from (,invoke N picks a restart)")
        return self.invoke_restart(index, form, **kw)

    def set_breakpoint(self, name: str, condition: str = "", by_model: bool = False) -> Breakpoint:
        """Stop every call of the function `name` (when `condition`, a form over its arguments,
        holds) in a level showing its arguments by name, where forms see them bound."""
        self._refuse("a breakpoint")

    def set_source_breakpoint(self, file: str, line: int, condition: str = "",
                              by_model: bool = False) -> Breakpoint:
        """Stop where control reaches line `line` of `file` (Guile's ,break-at-source), in a
        level showing the frame's variables; as `set_breakpoint` otherwise."""
        self._refuse("a breakpoint at a source line")

    def breakpoints(self) -> list[Breakpoint]:
        """The breakpoints set in the image, by whoever set them."""
        self._refuse("a breakpoint")

    def clear_breakpoint(self, which: str = "") -> list[Breakpoint]:
        """Remove breakpoint number `which`, or the one on the function `which`, or all ("");
        the ones removed."""
        self._refuse("a breakpoint")

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()


def missing_operations(cls) -> list[str]:
    """The REQUIRED operations `cls` leaves to the refusing defaults: [] for a whole transport."""
    return [name for name in REQUIRED if getattr(cls, name) is getattr(Session, name)]


class EvalClock:
    """When a running eval's read wakes up, and what it does then; one state machine for every
    transport. The reader calls `wake_at()` for its read's deadline and `tick()` when it
    wakes with nothing: "interrupt" (the eval's own deadline passed), "resend" (an interrupt
    has not landed within the grace: send it again, where resending is harmless), "give-up"
    (a deadline's eval ignored its interrupt: stop waiting, leave the image running), or ""."""

    SLICE = 0.25   # seconds: how soon a read notices a deadline, an interrupt or a death

    def __init__(self, session: Session, timeout: float | None, started: float,
                 resend: bool = True):
        self.session = session
        self.timeout = timeout
        self.deadline = None if timeout is None else started + timeout
        self.resend = resend
        self.timed_out = False
        self._resent_at = 0.0

    def wake_at(self) -> float:
        limit = time.monotonic() + self.SLICE
        if self.deadline is not None and not self.timed_out:
            limit = min(limit, self.deadline)
        at = self.session._interrupt_at
        if at is not None:
            limit = min(limit, max(at, self._resent_at) + self.session.interrupt_grace)
        return limit

    def tick(self) -> str:
        now = time.monotonic()
        at = self.session._interrupt_at
        grace = self.session.interrupt_grace
        if at is not None:
            if now < max(at, self._resent_at) + grace:
                return ""
            if self.timed_out and now >= self.deadline + 2 * grace:
                return "give-up"
            self._resent_at = now
            return "resend" if self.resend else ""
        if self.deadline is not None and now >= self.deadline and not self.timed_out:
            self.timed_out = True
            return "interrupt"
        return ""
