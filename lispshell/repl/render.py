"""How the interactive REPL shows things, with rich: output, values, errors and notices.

Printed output is shown as the Lisp wrote it, while it is produced; values are bold, one per
line (all of them: CL's multiple values, Guile's `values`); errors are red with their type, and
the backtrace is dimmed; notices from lispshell itself are italic and start with `;`.
Output that ends without a newline gets one before anything else is printed, so the prompt
always starts on a clean line.

While the shell waits (a form that runs long and prints nothing, the model thinking or a tool
running) a one-line status sits at the bottom: a spinner, what it waits for, the time so far,
and the key that stops it. It is drawn on a line of its own and erased before anything else is
written, so it never mixes with the output.

Values and errors taller than the screen go to a pager (see pager.py) instead of scrolling
everything else away; the last value or error is kept, whole, for `,last`.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text

STYLE_VALUE = "bold"
STYLE_ERROR = "bold red"
STYLE_BACKTRACE = "dim"
STYLE_NOTICE = "italic yellow"
STYLE_DIM = "dim"
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
STATUS_TICK = 0.1       # seconds between spinner frames
ERASE_LINE = "\r\x1b[2K"


class Renderer:
    """Owns the console and the 'is the cursor at the start of a line' bookkeeping."""

    def __init__(self, console: Console | None = None, backtrace_lines: int = 12,
                 pager: list[str] | None = None, value_style: str = STYLE_VALUE):
        self.console = console or Console(highlight=False, soft_wrap=True)
        self.backtrace_lines = backtrace_lines
        self.pager = pager              # the pager command; None: never page
        self.value_style = value_style  # from the theme (lispshell/repl/theme.py)
        self.last: list = []            # the last value(s) or error, whole, for `,last`
        self.at_line_start = True
        self._lock = threading.Lock()   # output arrives on the eval thread
        self._status = None             # (label() -> str, shown after this monotonic time)
        self._status_drawn = False
        self._status_held = 0           # > 0: something else owns the bottom line
        self._status_thread: threading.Thread | None = None
        self._last_output = 0.0

    # The status line ----------------------------------------------------------------------
    def status(self, label, delay: float = 0.0) -> None:
        """Show `label()` (called at each tick) with a spinner after `delay` seconds of
        silence, until status(None)."""
        with self._lock:
            self._erase_status()
            self._status = None if label is None else (label, time.monotonic() + delay)
        if label is not None and self.console.is_terminal and (
                self._status_thread is None or not self._status_thread.is_alive()):
            self._status_thread = threading.Thread(target=self._tick, daemon=True,
                                                   name="lispshell-status")
            self._status_thread.start()

    @contextmanager
    def status_held(self):
        """The bottom line belongs to someone else meanwhile (a question, a live tail)."""
        with self._lock:
            self._erase_status()
            self._status_held += 1
        try:
            yield
        finally:
            with self._lock:
                self._status_held -= 1

    def _tick(self) -> None:
        frame = 0
        while True:
            time.sleep(STATUS_TICK)
            with self._lock:
                status = self._status
                if status is None:
                    self._status_thread = None
                    return
                label, after = status
                now = time.monotonic()
                if (self._status_held or not self.at_line_start or now < after
                        or now - self._last_output < 0.5):
                    continue
                try:
                    text = f"{SPINNER[frame % len(SPINNER)]} {label()}"
                except Exception:
                    continue
                frame += 1
                width = max(10, self.console.width - 1)   # never wrap: \r must reach its start
                stream = self.console.file or sys.stdout
                stream.write(f"{ERASE_LINE}\x1b[2m{text[:width]}\x1b[0m")
                stream.flush()
                self._status_drawn = True

    def _erase_status(self) -> None:
        """Erase a drawn status line (the lock is held)."""
        if self._status_drawn:
            stream = self.console.file or sys.stdout
            stream.write(ERASE_LINE)
            stream.flush()
            self._status_drawn = False

    # Streaming output -------------------------------------------------------------------
    def output(self, chunk: str) -> None:
        """Raw printed output from the Lisp, written as it arrives (from any thread)."""
        if not chunk:
            return
        with self._lock:
            self._erase_status()
            self._last_output = time.monotonic()
            stream = self.console.file or sys.stdout
            stream.write(chunk)
            stream.flush()
            self.at_line_start = chunk.endswith("\n")

    def finish_line(self) -> None:
        """End a line left open by output without a trailing newline."""
        with self._lock:
            self._erase_status()
            if not self.at_line_start:
                stream = self.console.file or sys.stdout
                stream.write("\n")
                stream.flush()
                self.at_line_start = True

    # Results ----------------------------------------------------------------------------
    def result(self, result, streamed: bool, says_no_values: bool = True) -> None:
        """Show one EvalResult (its output too, unless it was already streamed).
        `says_no_values`: "; No values" for a form that returned none (the dialect's way)."""
        if not streamed and result.output:
            self.output(result.output)
        self.finish_line()
        err = result.error
        if result.output_dropped and not streamed:
            self.notice(f"{result.output_dropped} characters of output were not kept.")
        if result.restarted:
            # The Lisp had died; say so, then show what this eval did in the fresh one.
            died_now = err is not None and err.type in ("lisp-died", "lisp-exited", "timeout",
                                                         "interrupt")
            self.notice(err.message if died_now else
                        "The Lisp process had died; a fresh one was started "
                        "(earlier definitions are gone).")
            if died_now:
                return
        if result.interrupted and result.level and err is not None:
            if self.at_line_start:      # write over the terminal's own "^C" echo
                self.console.file.write("\r")
            self.error(err, result.level)   # a level waits where it stopped: CONTINUE resumes
        elif result.interrupted:
            if self.at_line_start:      # write over the terminal's own "^C" echo
                self.console.file.write("\r")
            self.notice("Interrupted.")
        elif result.timed_out:
            self.notice(err.message if err is not None else "Evaluation timed out.")
        elif err is not None and err.type == "LISPSHELL-ABORTED":
            self.notice(err.message)        # (abort) in the code: where it went, not an error
        elif err is not None:
            self.error(err, result.level)
        elif not result.values:
            if says_no_values:
                self.print(Text("; No values", style=STYLE_DIM))
        else:
            self.last = [Text(value, style=self.value_style) for value in result.values]
            if not self.page_if_tall(self.last, "\n".join(result.values)):
                self.print(*self.last, sep="\n")

    def error(self, err, level: int = 0) -> None:
        """An error: its type and message, its frames (numbered at a debug level, as ,frame N
        takes them) and, while a level waits in it, its restarts."""
        if err.type == "LISPSHELL-STEP" and level:
            # A step: the form it stops before, in one line (,s ,n ,o ,c: the toolbar says).
            head = Text("; step: ", style=STYLE_DIM)
            head.append(err.message or "")
            self.last = [head]
            self.print(head)
            return
        if err.type == "LISPSHELL-BREAK" and level:
            # A breakpoint: the call, then its arguments by name, one a line.
            call, *arguments = (err.message or "").split("\n")
            head = Text("; break: ", style=STYLE_ERROR)
            head.append(call)
            lines = [head] + [Text(f";   {a}") for a in arguments]
            self.last = lines
            for line in lines:
                self.print(line)
            return
        head = Text()
        if err.type:
            head.append(f"{err.type}: ", style=STYLE_ERROR)
        head.append(err.message or "", style="red")
        frames = err.backtrace or []
        trace = ([Text(f"Backtrace (level {level}; ,bt for all, ,frame N for locals):",
                       style=STYLE_DIM)] if level and frames else []) + [
            Text(f"  {n:>2}: {line}" if level else "  " + line, style=STYLE_BACKTRACE)
            for n, line in enumerate(frames)]
        restarts = self.restarts(getattr(err, "restarts", None) or [], level)
        self.last = [head, *trace, *restarts]
        if self.page_if_tall([head], head.plain):
            return
        self.print(head)
        shown = trace[: self.backtrace_lines]
        for line in shown:
            self.print(line)
        if len(trace) > len(shown):
            self.print(Text(f"  ... {len(trace) - len(shown)} more frames (,last shows them)",
                            style=STYLE_BACKTRACE))
        for line in restarts:
            self.print(line)

    @staticmethod
    def restarts(restarts: list[str], level: int = 1) -> list:
        """SBCL's restarts, numbered as SLDB numbers them (the last leaves the level); none
        once the error's level was left (a batch run)."""
        if not restarts or not level:
            return []
        lines = [Text(f"Restarts (,invoke N [FORM]; forms evaluate inside the error; ,abort "
                      f"leaves level {level}, ,top all):", style=STYLE_DIM)]
        for number, restart in enumerate(restarts):
            name, _, report = restart.partition("\t")
            line = Text(f"  {number}: ", style=STYLE_DIM)
            line.append(f"[{name}] " if name else "", style="bold")
            line.append(report)
            lines.append(line)
        return lines

    # Paging -----------------------------------------------------------------------------
    def page_if_tall(self, renderables: list, plain: str) -> bool:
        """Page `renderables` (whose text is `plain`) when taller than the screen; True if
        they were shown that way. A short note stays in the scrollback."""
        if self.pager is None or not self.console.is_terminal:
            return False
        from lispshell.repl.pager import screen_lines

        width, height = self.console.size
        lines = screen_lines(plain, width)
        if lines < height - 1:
            return False
        if not self.page(renderables):
            return False
        self.notice(f"{len(plain):,} characters ({lines:,} lines) shown in the pager; "
                    ",last shows them again.")
        return True

    def page(self, renderables: list) -> bool:
        """Show `renderables` in the pager (False, said, if it could not run)."""
        from lispshell.repl.pager import run_pager

        self.finish_line()
        with self.console.capture() as capture:
            self.console.print(*renderables, sep="\n", soft_wrap=True)
        why = run_pager(self.pager, capture.get()) if self.pager else "paging is off"
        if why:
            self.notice(why)
            return False
        return True

    def syntax_problem(self, text: str, problem) -> None:
        """A positioned reader error: where, the line, a caret under the spot."""
        self.finish_line()
        head, line, caret = problem.describe(text).split("\n")
        self.print(Text("Syntax error at ", style=STYLE_ERROR) + Text(head, style="red"))
        self.print(Text(line))
        self.print(Text(caret, style=STYLE_ERROR))

    def notice(self, message: str) -> None:
        self.finish_line()
        self.print(Text("; " + message, style=STYLE_NOTICE))

    def print(self, *renderables, **kwargs) -> None:
        self.finish_line()
        with self._lock:
            self._erase_status()
            self.console.print(*renderables, **kwargs)
