r"""One live child Lisp (SBCL, Guile or Clojure) behind one small interface.

How it works
- The child is started with pexpect on a pty put in raw mode before the Lisp runs (no echo,
  no line editing, so no 4096-byte line limit and no CR/LF translation). Each dialect record
  (`dialects.py`) names a bootstrap: a small read-eval-print loop that we
  type into the stock REPL once. From then on the stock REPL is never seen again.
- Requests are length-prefixed: `<kind><length> <id>\n<text>` (kind E = eval, N = eval
  without touching the REPL variables, C = completions, Y = ASDF system names), so forms of
  any size and content
  arrive whole.
- Answers are framed with a per-session random nonce. The marker is RS (\x1e) + nonce; each
  marker is followed by a one-letter tag that says what the next bytes are:
      (output)  V<value> V<value>  E<type> M<message> B<frame> B<frame>  P<package> D<id>\n
  Output is whatever comes before the first marker; D, the request's id and a newline end
  the answer. The id means a stray answer (one that raced with a timeout, say) is dropped
  rather than taken for the next one; the newline puts the Lisp's output column back to 0
  (for FRESH-LINE and the pretty printer). Nothing in the frame
  needs escaping, and the Lisp prints values straight to its stdout, so nothing is held in
  memory on either side: we scan for the marker with a window of a few bytes and apply the
  output cap while reading (a form printing forever costs CPU, not memory).
- Standard input is part of eval. Code that reads the program's standard input (`read-line`,
  `y-or-n-p`, Guile's `read-char`, Clojure's `read-line`) makes the loop flush the person's
  output and send `marker I`, then wait. lispshell answers with a reply that uses the request
  header: `i<length> <id>\n<text>` (a line, newline included; length 0 is end of file) or
  `x0 <id>\n` (the person pressed Ctrl-C at the input line: the reading code is interrupted as
  by SIGINT; on SBCL a debug level whose CONTINUE asks again). Whoever evaluates decides the
  answer (`eval(on_input=...)`): the REPL asks the person on an input line, a batch run
  reads its own standard input, and without a reader (the model, MCP, look-ups) the read gets
  end of file at once and the result counts it (`input_refused`), so the caller can say why.
  The loops ignore a reply that arrives when no read waits (it raced with an interrupt).
- Interrupts: the child is a session leader, so Ctrl-C in our terminal does not reach it; we
  send SIGINT ourselves. Each bootstrap turns SIGINT into an unwind of the running eval, or
  on SBCL into a debug level with a CONTINUE restart (and ignores it between evals). An image
  is never killed on a timer: an interrupt that has not landed within `interrupt_grace`
  seconds is sent again; only the person's word (a Ctrl-C after that, or `,restart`) kills it
  (`interrupt` says which). An eval with a deadline that the interrupt does not end returns a
  timeout and leaves the image running; its late answer is dropped by its request id. Where
  the image handles a signal late on a thread of its own (the JVM), each SIGINT names its
  request in a file first (`Dialect.interrupt_names_request`): a late one never stops
  the next eval, and one that comes before the request is read stops it when it starts.
- Debug levels (SBCL, Guile; lispshell/lisp/levels.py): an error (an interrupt, a breakpoint,
  a step) waits inside the loop with its stack; the answer's L field says how many levels are
  open.
- Death (EOF on the pty, or the process gone) ends the eval with an error saying so,
  `restarted=True`, and a fresh child.
"""
from __future__ import annotations

import atexit
import codecs
import os
import re
import secrets
import select
import shutil
import signal
import tempfile
import threading
import time
import tty
import weakref
from dataclasses import dataclass, field
from typing import Callable

import pexpect

from lispshell.lisp.breakpoints import ImageBreakpoints, ParkedHits
from lispshell.lisp.dialects import NAMES as LISPS, get_dialect  # noqa: F401 (LISPS: API)
from lispshell.lisp.channel import READ_SIZE, PtyChannel, SocketChannel, read_some
from lispshell.lisp.contract import Capabilities, EvalClock, Session
from lispshell.lisp.levels import LevelStack, parse_frames, parse_locals, step_by_restarts
from lispshell.lisp import stepping

MARK = "\x1e"
# The person's own values are shown whole up to this many characters each (a value that prints
# forever is stopped by Ctrl-C); what the model and MCP keep is `output_cap`.
PERSON_VALUE_CAP = 64 * 1024 * 1024


@dataclass(frozen=True)
class LispError:
    """An error the Lisp (or the session) reports: condition/exception type, message, frames."""

    type: str
    message: str
    backtrace: list[str] = field(default_factory=list)
    # SBCL: the condition's restarts, innermost first, "NAME\tdescription"; while they are
    # on offer the failed form's stack is kept (see LispSession.invoke_restart).
    restarts: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


@dataclass
class EvalResult:
    output: str = ""                 # what the code printed (first `output_cap` characters)
    values: list[str] = field(default_factory=list)  # printed representation of each value
    error: LispError | None = None
    output_dropped: int = 0          # characters of output beyond the cap, counted not kept
    timed_out: bool = False
    interrupted: bool = False
    restarted: bool = False          # the child died during the eval; a fresh one now runs
    package: str = ""                # current package / module / namespace after the eval
    elapsed: float = 0.0             # seconds
    exit_code: int | None = None     # the code made the Lisp exit, with this status
    level: int = 0                   # debug levels open after it (an error that waits: SBCL)
    # Reads of standard input answered with end of file because nobody could type (the eval
    # had no `on_input`: the model, MCP, a look-up): said to the caller, never a hang.
    input_refused: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and not self.interrupted


class LispStartError(RuntimeError):
    """The Lisp could not be started at all (command not found, bootstrap failed)."""


class _Answer:
    """Collects one framed answer as its chunks arrive, keeping at most `cap` characters of
    output and of each value."""

    SMALL_CAP = 4096  # error type, message line and backtrace frames

    def __init__(self, cap: int, on_output: Callable[[str], None] | None,
                 value_cap: int | None = None, on_input: Callable[[], str | None] | None = None):
        self.cap = cap
        self.value_cap = cap if value_cap is None else value_cap
        self.on_output = on_output
        self.on_input = on_input         # see `read_input`
        self.input_refused = 0           # reads answered with end of file: nobody to type
        self.input_interrupted = False   # Ctrl-C at the input line interrupted the code
        self.reset()

    def reset(self) -> None:
        self.output: list[str] = []
        self.kept = 0
        self.dropped = 0
        self.fields: dict[str, list[list]] = {}  # tag -> [[parts, kept, dropped], ...]
        self.tag = "O"
        self.current: list | None = None

    def begin(self, tag: str) -> None:
        self.tag = tag
        self.current = [[], 0, 0]
        fields = self.fields.get(tag)
        if fields is None:
            self.fields[tag] = [self.current]
        else:
            fields.append(self.current)

    def add(self, text: str) -> None:
        if not text:
            return
        if self.tag == "O":
            # Streamed whole to the person; kept only up to the cap (for the model).
            if self.on_output is not None:
                self.on_output(text)
            room = self.cap - self.kept
            if room <= 0:
                self.dropped += len(text)
                return
            if len(text) > room:
                self.dropped += len(text) - room
                text = text[:room]
            self.kept += len(text)
            self.output.append(text)
            return
        cur = self.current
        room = (self.value_cap if self.tag == "V" else self.SMALL_CAP) - cur[1]
        if len(text) > room:
            cur[2] += len(text) - max(room, 0)
            text = text[:max(room, 0)]
        if text:
            cur[0].append(text)
            cur[1] += len(text)

    @staticmethod
    def _text(cur: list) -> str:
        s = cur[0][0] if len(cur[0]) == 1 else "".join(cur[0])
        if cur[2]:
            s += f"... [truncated: {cur[2]} more characters]"
        return s

    def values(self) -> list[str]:
        # SBCL starts each value on a fresh line (for its pretty printer): drop that newline.
        out = []
        for c in self.fields.get("V", ()):
            v = self._text(c)
            out.append(v[1:] if v.startswith("\n") else v)
        return out

    def one(self, tag: str) -> str | None:
        fields = self.fields.get(tag)
        return self._text(fields[0]) if fields else None

    def error(self) -> LispError | None:
        if "E" not in self.fields:
            return None
        frames = [self._text(c) for c in self.fields.get("B", ())]
        restarts = [self._text(c) for c in self.fields.get("R", ())]
        return LispError(self.one("E"), self.one("M") or "", frames, restarts)

    def text_output(self) -> str:
        return "".join(self.output)

    def read_input(self) -> tuple[str, str]:
        """What the reading code gets: ("i", line), ("i", "") for end of file, or ("x", "")
        for an interrupt. `on_input` returns a line (newline included), None for end of file,
        or raises KeyboardInterrupt (Ctrl-C: interrupt the reading code). Without it the read
        gets end of file, counted in `input_refused`."""
        if self.on_input is None:
            self.input_refused += 1
            return "i", ""
        try:
            line = self.on_input()
        except KeyboardInterrupt:
            self.input_interrupted = True
            return "x", ""
        return "i", line or ""


class _Died(Exception):
    """The child went away (EOF on the pty, or the process is gone)."""


_live_sessions: "weakref.WeakSet[LispSession]" = weakref.WeakSet()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


@atexit.register
def _close_all() -> None:
    for s in list(_live_sessions):
        try:
            s.close()
        except Exception:
            pass


class LispSession(ImageBreakpoints, ParkedHits, Session):
    """One child Lisp. Thread-safe: evals run one at a time (a second caller waits);
    `interrupt`, `busy`, `ready`, `package` and `completions` may be used from any thread.
    `eval_timeout` is only remembered here, for programmatic callers to pass as `timeout`."""

    error_class = LispError     # what breakpoints.ParkedHits makes a level's error of

    def __init__(self, lisp: str, command: list[str] | None = None, *,
                 eval_timeout: float = 30.0, output_cap: int = 65536,
                 interrupt_grace: float = 2.0, boot_timeout: float = 60.0,
                 env: dict[str, str] | None = None, init_files: bool = False):
        self.dialect = get_dialect(lisp)
        self.lisp = lisp
        self.command = list(command or self.dialect.command)
        self.eval_timeout = eval_timeout    # the default programmatic callers pass as `timeout`
        self.output_cap = output_cap
        self.interrupt_grace = interrupt_grace
        self.boot_timeout = boot_timeout
        self.env = env          # the child's environment (config.child_environment), None: default
        self.init_files = init_files         # load the person's ~/.sbclrc, ~/.guile at start
        self.init_report: EvalResult | None = None   # what loading them did (values: names)
        self.package = ""
        self._levels = LevelStack()          # the errors of the open debug levels
        self.transport = f"a {self.dialect.display} child"
        self.busy = False
        self.ready = False
        self.generation = 0                  # counts children started; a restart bumps it
        self._channel: PtyChannel | SocketChannel | None = None
        self._fd = -1
        self._decoder = None
        self._pending = ""                   # text read but not yet consumed (a partial marker)
        self._marker = ""
        self._lock = threading.Lock()        # one exchange with the child at a time
        self._boot_thread: threading.Thread | None = None
        self._boot_error: BaseException | None = None
        self._interrupt_at: float | None = None
        self._closed = False
        self._answered_at = 0.0              # when the last eval ended
        self._killed_by_person = False       # interrupt() killed it: said as such
        self._interrupt_path: str | None = None   # where a SIGINT names its request
        self._code_length = self.dialect.code_length
        _live_sessions.add(self)

    # ------------------------------------------------------------------ lifecycle
    @property
    def capabilities(self) -> Capabilities:
        d = self.dialect
        from lispshell.lisp.breakpoints import FORMS, PARKED
        return Capabilities(levels=d.levels, frames=d.levels or bool(d.last_error_frames),
                            systems=d.systems, restart_image=not self.is_connection,
                            reconnect=self.is_connection,
                            breakpoints=self.lisp in FORMS,
                            stepping=bool(d.stepping) or self.lisp in stepping.FORMS,
                            threads=self.lisp in PARKED)

    @property
    def alive(self) -> bool:
        return self._channel_alive()

    @property
    def pid(self) -> int | None:
        return self._channel.pid if self._channel is not None else None

    def start(self, wait: bool = True) -> None:
        """Start the child. wait=False boots it in a background thread (Clojure's JVM takes
        a second); `eval` waits for it. Raises LispStartError (wait=True) if it cannot start."""
        self._closed = False
        if self._channel is not None or (self._boot_thread and self._boot_thread.is_alive()):
            if wait:
                self._wait_booted()
            return
        if wait:
            with self._lock:
                self._boot()
            return
        self._boot_error = None
        self._boot_thread = threading.Thread(target=self._boot_in_background,
                                             name=f"lispshell-boot-{self.lisp}", daemon=True)
        self._boot_thread.start()

    def _boot_in_background(self) -> None:
        with self._lock:
            try:
                self._boot()
            except BaseException as exc:  # reported by the next eval
                self._boot_error = exc

    def _wait_booted(self) -> None:
        t = self._boot_thread
        if t is not None and t is not threading.current_thread():
            t.join()
            self._boot_thread = None
        if self._boot_error is not None:
            exc, self._boot_error = self._boot_error, None
            raise LispStartError(str(exc)) from exc

    def _boot(self) -> None:
        """Spawn the child and type the bootstrap into its stock REPL; wait for the first
        frame. Called with the lock held."""
        self._kill_child()
        nonce = secrets.token_hex(12)
        from lispshell.config import child_environment
        base = self.env if self.env is not None else child_environment()
        env = dict(base, LC_ALL="C.UTF-8", LANG="C.UTF-8", TERM="dumb")
        if self.dialect.interrupt_names_request:
            env["LISPSHELL_INTERRUPT_FILE"] = self._interrupt_file()
        try:
            channel = PtyChannel.spawn(self.command, env, _raw_stdin)
        except (pexpect.ExceptionPexpect, OSError) as exc:
            raise LispStartError(f"cannot start {self.lisp} with {' '.join(self.command)!r}: "
                                 f"{exc}") from None
        self._attach(channel, nonce)
        answer = _Answer(8192, None)
        try:
            self._write(self.dialect.bootstrap(nonce))
            self._read_answer(answer, deadline=time.monotonic() + self.boot_timeout)
        except (_Died, TimeoutError) as exc:
            out = answer.text_output()
            status = self._exit_status()
            self._kill_child()
            why = "timed out" if isinstance(exc, TimeoutError) else f"exited ({status})"
            raise LispStartError(f"{self.lisp} ({' '.join(self.command)}) {why} before it was "
                                 f"ready. It printed:\n{out[-2000:]}") from None
        self.package = answer.one("P") or ""
        self._levels.clear()
        self.known_breakpoints = {}          # a fresh image has none
        self._remote = []                    # nor another thread's breakpoint
        if self.init_files and self.dialect.init_form:
            # After the loop, as an N request: an error in the file is an answer, and the
            # Lisp starts anyway (with --disable-debugger, SBCL would have exited).
            self.init_report = self._eval_locked(self.dialect.init_form, None, 65536, None,
                                                 time.monotonic(), "N")
            self.package = self.init_report.package or self.package
        self.ready = True

    def _attach(self, channel, nonce: str) -> None:
        """Speak the framed loop protocol over `channel` from now on (a new loop: `nonce`)."""
        self._channel = channel
        self._fd = channel.fd
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._marker = MARK + nonce
        self._seq = 0
        self._request_id = "0"      # the id the loop's first (ready) answer carries
        self.generation += 1

    def restart(self) -> None:
        """Kill the child (even mid-eval: that eval returns restarted=True) and start afresh."""
        gen = self.generation
        if self.busy:
            self._kill_child(reap=False)
        with self._lock:
            if self.generation == gen or self._channel is None:
                self._boot()

    def close(self) -> None:
        """End the child; no process is left behind."""
        self._closed = True
        self._kill_child(reap=False)
        t = self._boot_thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5)
        with self._lock:
            self._kill_child()
        _live_sessions.discard(self)
        if self._interrupt_path is not None:
            self._forget_interrupt_file()

    def kill_now(self) -> None:
        """End the child at once, from a signal handler: SIGKILL to its process group, no
        wait (no lock, no reaping: the process that started it is leaving)."""
        self._closed = True
        self._kill_child(reap=False)
        if self._interrupt_path is not None:
            self._forget_interrupt_file()

    def _kill_child(self, reap: bool = True) -> None:
        """End the channel: a child is killed (reaped too with `reap`), a connection closed."""
        channel = self._channel
        if channel is None:
            return
        self.ready = False
        channel.kill(reap)
        if reap:
            self._channel = None

    def _channel_alive(self) -> bool:
        channel = self._channel
        return channel is not None and channel.alive()

    def _exit_status(self) -> str:
        return self._channel.exit_status() if self._channel is not None else "unknown"

    # ------------------------------------------------------------------ eval
    def eval(self, code: str, *, timeout: float | None = None, output_cap: int | None = None,
             on_output: Callable[[str], None] | None = None, history: bool = True,
             value_cap: int | None = None, keep_levels: bool = False,
             on_input: Callable[[], str | None] | None = None,
             _kind: str | None = None, _remote_ok: bool = False) -> EvalResult:
        """Evaluate `code` (one or more forms, in order) and return what happened.
        Values are those of the last form. timeout=None waits as long as it takes (a person's
        own eval, which Ctrl-C can interrupt); a number interrupts the form when exceeded.
        on_output gets ALL printed output as it arrives, however much (the person sees it
        whole); the result keeps the first `output_cap` characters and counts the rest in
        `output_dropped` (for the model and MCP, which are told). Each value is kept up to
        `value_cap` characters (default: `output_cap`; the person's evals pass PERSON_VALUE_CAP).
        history=False leaves the REPL variables (* ** *** + / in CL, *1 *2 *3 *e in Clojure)
        alone: for look-ups the person did not type. keep_levels: an error opens a debug level
        that waits (the REPL); otherwise a level the eval opened is left before returning
        (batch runs, MCP, programmatic callers), and so is one a timeout's interrupt opened.
        on_input answers the code's reads of standard input (see `_Answer.read_input`); None:
        they get end of file, counted in `input_refused`.
        Raises LispStartError only if the Lisp cannot be started at all."""
        if self._remote and history and not _remote_ok and _kind is None:
            # at another thread's breakpoint (breakpoints.py): with its arguments bound
            return self._remote_eval(code, timeout=timeout, output_cap=output_cap,
                                     on_output=on_output, value_cap=value_cap,
                                     on_input=on_input)
        if self._boot_thread is not None or self._boot_error is not None:
            self._wait_booted()
        with self._lock:
            if self._closed:
                raise LispStartError("this session was closed")
            restarted = False
            # Did it die while idle? Then start afresh and evaluate there. (Not checked in a
            # burst of evals, where a waitpid per eval is a tenth of the cost: a death there
            # is still noticed, as a death during the eval.)
            # A death already seen (the REPL's toolbar asks `alive`) is always acted on.
            if self._channel is not None and (
                    self._channel.ended
                    or (time.monotonic() - self._answered_at > 0.5 and not self._channel_alive())):
                self._kill_child()
                restarted = True
            if self._channel is None:
                self._boot()
            self.busy = True
            self._interrupt_at = None
            self._killed_by_person = False
            started = time.monotonic()
            kind = _kind or ("E" if history else "N")
            before = self._levels.depth
            evaluated_in = self.package
            try:
                result = self._eval_locked(code, timeout, output_cap, on_output, started,
                                           kind, value_cap, on_input)
                result.restarted = result.restarted or restarted
                if kind == "E" and result.error is None:
                    # the person's defns, for ,step of a function defined at the prompt
                    stepping.remember(self, code, evaluated_in)
                self._track_levels(result)
                if self._levels.depth > before and (not keep_levels or result.timed_out):
                    self._leave_to(before)
                    result.level = self._levels.depth
                return result
            finally:
                self.busy = False
                self._interrupt_at = None
                self._answered_at = time.monotonic()

    def idle_output(self) -> str:
        if self.busy or not self.ready or self._channel is None \
                or not self._lock.acquire(blocking=False):
            return ""
        try:
            if self._channel is None or self.busy:
                return ""
            data = read_some(self._fd, self._poller, time.monotonic())
            if data == b"":       # the end: the next eval says so
                return ""
            # (what came in the same read as the last answer, after it, waits in _pending:
            # a thread's line printed as the answer was written)
            text = self._pending + (self._decoder.decode(data) if data else "")
            if not text:
                return ""
            # A frame marker (a late answer) stays for the eval that reads answers.
            cut = text.find(MARK)
            kept, self._pending = (text, "") if cut < 0 else (text[:cut], text[cut:])
            return kept
        except OSError:
            return ""
        finally:
            self._lock.release()

    # ------------------------------------------------------------------ debug levels
    def _track_levels(self, result: EvalResult) -> None:
        if result.restarted:
            self._levels.clear()
        else:
            self._levels.after(result.level, result.error)

    def _leave_to(self, depth: int) -> None:
        """Leave levels until `depth` are open (called with the lock held)."""
        while self._levels.depth > depth and self._channel is not None:
            r = self._eval_locked("", None, 4096, None, time.monotonic(), "A", None)
            stuck = r.level >= self._levels.depth
            self._track_levels(r)
            if stuck:
                break

    def _supports_levels(self) -> None:
        # (a Lisp without error levels may have one open: a Clojure breakpoint's hit)
        if not self.dialect.levels and not self._levels.depth:
            self._refuse("a debug level")

    def invoke_restart(self, index: int, argument: str = "", *, on_output=None,
                       value_cap: int | None = None, keep_levels: bool = True,
                       on_input=None) -> EvalResult:
        """Invoke restart `index` of the error the innermost level waits in (SBCL): the
        failed form carries on from there (its values, or a new error, are the result).
        `argument` is a form for a restart that asks for a value (USE-VALUE, STORE-VALUE);
        without one, what the restart reads is asked through `on_input`, as any read."""
        if self._remote:
            return self._remote_resume(int(index), argument, on_output=on_output,
                                       value_cap=value_cap, on_input=on_input)
        self._supports_levels()
        return self.eval(f"{int(index)} {argument}", timeout=None, on_output=on_output,
                         value_cap=value_cap, keep_levels=keep_levels, on_input=on_input,
                         _kind="I")

    def _frame_request(self, text: str, **kw) -> EvalResult:
        if text.split(" ", 1)[0] not in self.dialect.last_error_frames:
            self._supports_levels()
        result = self.eval(text, timeout=kw.pop("timeout", None), keep_levels=True, _kind="F",
                           **kw)
        if result.error is not None and result.error.type in ("LISPSHELL-NO-SUCH-FRAME",
                                                              "LISPSHELL-NO-LEVEL"):
            raise ValueError(result.error.message)
        return result

    def backtrace(self):
        if self._remote:
            return parse_frames(self._remote_frames("bt", None).splitlines())
        return parse_frames(self._frame_request("bt").values)

    def frame_locals(self, index: int):
        if self._remote:
            return parse_locals(self._remote_frames("locals", int(index)).splitlines())
        return parse_locals(self._frame_request(f"locals {int(index)}").values)

    def frame_source(self, index: int) -> str:
        if self._remote:
            return self._remote_frames("source", int(index)).strip()
        values = self._frame_request(f"source {int(index)}").values
        return values[0] if values else ""

    def eval_in_frame(self, index: int, code: str, **kw) -> EvalResult:
        if self._remote:
            if int(index) != 0:
                raise ValueError("only frame 0, the call, is known on another thread")
            return self._remote_eval(code, **kw)
        return self._frame_request(f"eval {int(index)} {code}", **kw)

    def restart_frame(self, index: int, **kw) -> EvalResult:
        return self._frame_request(f"restart {int(index)}", **kw)

    def step_form(self, code: str) -> str:
        if self.lisp in stepping.FORMS:        # by instrumenting the function (Clojure)
            return stepping.step_form(self, code)
        if not self.dialect.stepping:
            self._refuse("stepping")
        return self.dialect.stepping.format(code=code)

    def step(self, how: str, **kw) -> EvalResult:
        if self.lisp in stepping.FORMS:
            return stepping.step(self, how, **kw)
        if not self.dialect.stepping:
            self._refuse("stepping")
        return step_by_restarts(self, how, **kw)

    def leave_level(self, **kw) -> EvalResult:
        if self._remote:
            return self._remote_resume(self._remote_abort(), **kw)
        self._supports_levels()
        return self.eval("", timeout=None, keep_levels=True, _kind="A", **kw)

    def top(self, **kw) -> EvalResult:
        result = None
        while self._remote:
            result = self._remote_resume(self._remote_abort(), **kw)
            if result.error is not None:
                return result
        if result is not None and not self._levels.depth:
            return result
        self._supports_levels()
        return self.eval("", timeout=None, keep_levels=True, _kind="T", **kw)

    def _eval_locked(self, code, timeout, output_cap, on_output, started, kind,
                     value_cap=None, on_input=None) -> EvalResult:
        cap = self.output_cap if output_cap is None else output_cap
        answer = _Answer(cap, on_output, cap if value_cap is None else value_cap, on_input)
        timed_out = False
        deadline = None if timeout is None else started + timeout
        try:
            self._send(kind, code)
            if not self._pending:
                # Most answers are small and come in one read: take them apart at once.
                limit = started + 0.25 if deadline is None else min(started + 0.25, deadline)
                data = read_some(self._fd, self._poller, limit)
                if data == b"":
                    raise _Died("end of file")
                if data:
                    text = self._decoder.decode(data)
                    quick = self._quick(text, cap, on_output, started, answer.value_cap)
                    if quick is not None:
                        return quick
                    self._pending = text
            clock = EvalClock(self, timeout, started)
            while True:
                try:
                    self._read_answer(answer, clock.wake_at())
                    break
                except TimeoutError:
                    pass
                step = clock.tick()
                if step == "interrupt":        # the form's own deadline
                    self._send_interrupt()
                elif step == "resend":
                    # Not landed yet (a busy machine, a JVM at a safepoint): send it again,
                    # never kill. `_interrupt_at` keeps the first: how long it has waited.
                    self._resend_interrupt()
                elif step == "give-up":
                    raise _Unresponsive()
                timed_out = clock.timed_out
                if not self._channel_alive():
                    raise _Died("process gone")
        except (_Died, _Unresponsive) as exc:
            return self._after_death(answer, exc, timed_out, timeout, started)
        error = answer.error()
        interrupted = error is not None and (answer.input_interrupted or (
            error.type == self.dialect.interrupt_type
            and (timed_out or self._interrupt_at is not None)))
        if timed_out and error is not None and interrupted:
            error = LispError("timeout", f"Evaluation timed out after {timeout:g} s and was "
                              "interrupted; the Lisp is still running with its definitions.",
                              error.backtrace)
        elif timed_out:
            timed_out = False  # the answer won the race with the interrupt
        self.package = answer.one("P") or self.package
        level = answer.one("L")
        return EvalResult(output=answer.text_output(), values=[] if error else answer.values(),
                          error=error, output_dropped=answer.dropped, timed_out=timed_out,
                          interrupted=interrupted and not timed_out, restarted=False,
                          package=self.package, elapsed=time.monotonic() - started,
                          level=int(level) if level and level.isdigit() else 0,
                          input_refused=answer.input_refused)

    def _quick(self, text: str, cap: int, on_output, started: float,
               value_cap: int) -> EvalResult | None:
        """The result of a whole, ordinary answer (output and values within the cap, no
        error); None for anything else, which the general path then reads."""
        finish = f"{self._marker}D{self._request_id}\n"
        if not text.endswith(finish):
            return None
        parts = text[:-len(finish)].split(self._marker)
        output = parts[0]
        if len(output) > cap:
            return None
        values = []
        package = None
        for p in parts[1:]:
            tag = p[:1]
            if tag == "V" and len(p) <= value_cap:
                values.append(p[2:] if p[1:2] == "\n" else p[1:])
            elif tag == "P" and package is None:
                package = p[1:]
            else:
                return None  # an error, a stray earlier answer...: the general path
        if output and on_output is not None:
            on_output(output)
        if package:
            self.package = package
        return EvalResult(output, values, None, 0, False, False, False, self.package,
                          time.monotonic() - started)

    def _after_death(self, answer, exc, timed_out, timeout, started) -> EvalResult:
        exit_code = None
        if isinstance(exc, _Unresponsive):
            # The image is left running, its definitions kept: lispshell never kills it on a
            # timer. Its late answer will carry this request's id, and be dropped.
            return EvalResult(
                output=answer.text_output(), values=[], output_dropped=answer.dropped,
                error=LispError("timeout", f"Evaluation timed out after {timeout:g} s and did "
                                "not answer the interrupt; it is still running in the image, "
                                "which lispshell never kills on a timer. Later evals wait for "
                                "it; `,restart` in the REPL kills and restarts the Lisp."),
                timed_out=True, package=self.package, elapsed=time.monotonic() - started,
                level=self._levels.depth)
        if self._killed_by_person:
            msg = ("You asked for the Lisp to be killed (Ctrl-C again after the interrupt did "
                   "not land): a fresh one was started. Definitions from before are gone.")
            etype = "killed"
        else:
            status = self._exit_status()
            exit_code = self._channel.exitstatus if self._channel is not None else None
            if exit_code is not None:   # it exited by itself: (exit), (sb-ext:exit), System/exit
                msg = (f"The {self.lisp} process exited with status {exit_code} during the "
                       "evaluation; a fresh one was started. Definitions from before are gone.")
                etype = "lisp-exited"
            else:
                msg = (f"The {self.lisp} process died ({status}) during the evaluation; "
                       "a fresh one was started. Definitions from before are gone.")
                etype = "lisp-died"
        self._kill_child()
        restarted = False
        if not self._closed:
            try:
                self._boot()
                restarted = True
            except LispStartError as err:
                msg += f" Restarting failed: {err}"
        return EvalResult(output=answer.text_output(), values=[], error=LispError(etype, msg),
                          output_dropped=answer.dropped, timed_out=timed_out,
                          interrupted=self._interrupt_at is not None and not timed_out,
                          restarted=restarted, package=self.package,
                          elapsed=time.monotonic() - started,
                          exit_code=exit_code if etype == "lisp-exited" else None)

    # interrupt() is the contract's: the running eval returns interrupted=True, or on SBCL
    # opens a debug level whose CONTINUE restart resumes it; the person's Ctrl-C after the
    # grace kills the Lisp and starts a fresh one.
    def _interruptible(self) -> bool:
        return self.busy and self._channel is not None

    def _give_up(self) -> None:
        self._killed_by_person = True
        self._kill_child(reap=False)

    def _send_interrupt(self) -> None:
        if self._interrupt_at is None:
            self._interrupt_at = time.monotonic()
        self._send_sigint()

    def _resend_interrupt(self) -> None:
        self._send_sigint()

    def _send_sigint(self) -> None:
        channel = self._channel
        if channel is None:
            return
        if self.dialect.interrupt_names_request:
            path = self._interrupt_file()
            try:
                with open(path + ".new", "w", encoding="ascii") as f:
                    f.write(self._request_id)
                os.replace(path + ".new", path)      # the handler reads a whole id or none
            except OSError:
                _unlink(path)      # unnamed: the loop stops whatever runs, as before
        channel.interrupt()

    def _interrupt_file(self) -> str:
        """Where a SIGINT's request id is written (interrupt_names_request), in lispshell's
        state directory: written at the first interrupt, removed when the session closes (or
        is dropped unclosed, or the program exits)."""
        if self._interrupt_path is None:
            from lispshell.config import state_dir
            name = f"{os.getpid()}-{secrets.token_hex(6)}"
            try:
                folder = state_dir() / "interrupts"
                folder.mkdir(exist_ok=True)
                self._interrupt_path = str(folder / name)
                self._forget_interrupt_file = weakref.finalize(self, _unlink,
                                                               self._interrupt_path)
            except OSError:          # a state directory we cannot write: a private one
                folder = tempfile.mkdtemp(prefix="lispshell-")
                self._interrupt_path = os.path.join(folder, name)
                self._forget_interrupt_file = weakref.finalize(self, shutil.rmtree, folder,
                                                               ignore_errors=True)
        return self._interrupt_path

    def try_eval(self, code: str, timeout: float = 2.0, output_cap: int = 1 << 16,
                 wait: float = 0.0):
        """Evaluate `code` now if the Lisp is idle; None at once if it is busy with an eval or
        starting, or after `wait` seconds if another look-up holds it: for the editor's
        look-ups (the toolbar's arglist, doc at point), which must never wait on the image.
        The REPL variables are left alone."""
        if not self.ready or self.busy or self._closed or not self._lock.acquire(timeout=wait):
            return None
        try:
            if self._channel is None or self._closed or not self.ready:
                return None
            self._interrupt_at = None
            try:
                return self._eval_locked(code, timeout, output_cap, None, time.monotonic(), "N")
            finally:
                self._interrupt_at = None
                self._answered_at = time.monotonic()
        finally:
            self._lock.release()

    # ------------------------------------------------------------------ completions
    def _lock_for_lookup(self) -> bool:
        """Take the lock for a completion once another look-up (the toolbar's arglist) has
        let it go; False as soon as the Lisp is busy with an eval, starting or closed. A
        look-up holding it always ends (it has its own deadline); an eval may not, and a
        completion is not worth waiting for it."""
        while True:
            if not self.ready or self.busy or self._closed:
                return False
            if self._lock.acquire(timeout=0.05):
                return True

    def completions(self, prefix: str, kind: str = "symbol") -> list[str]:
        """Names from the live image that match `prefix`: symbols, or with kind "system" the
        systems `,load-system` loads (a dialect that has them); [] at once if busy/not ready."""
        if kind == "system" and not self.dialect.systems:
            return []
        if not self._lock_for_lookup():
            return []
        try:
            if self._channel is None or self._closed:
                return []
            answer = _Answer(1 << 16, None)
            try:
                self._send("Y" if kind == "system" else "C", prefix)
                # Generous: on a loaded machine or a huge image the answer is late, not lost,
                # and the editor asks from a thread. A later one is given up, never the
                # image: its answer carries this request's id, and the next reader drops it.
                self._read_answer(answer, deadline=time.monotonic() + 30.0)
            except TimeoutError:
                return []
            except _Died:
                self._kill_child()
                return []
            return answer.values()
        finally:
            self._lock.release()

    # ------------------------------------------------------------------ the wire
    def _send(self, kind: str, text: str) -> None:
        # Random, not sequential: code left running in the image cannot guess the id that
        # ends the next answer (the marker itself is the session's secret).
        self._seq += 1
        self._request_id = secrets.token_hex(4)
        self._write(f"{kind}{self._code_length(text)} {self._request_id}\n{text}")

    def _write(self, text: str) -> None:
        # "replace": a lone surrogate becomes one "?", so the length we sent stays right.
        raw = text.encode("utf-8", errors="replace")
        fd = self._fd
        try:
            n = os.write(fd, raw)
        except BlockingIOError:
            n = 0
        except OSError as exc:
            raise _Died(str(exc)) from None
        if n == len(raw):
            return                       # the usual case: it all went at once
        data = memoryview(raw)[n:]       # a big request or a full pty: the rest, piece by piece
        while data:
            try:
                n = os.write(fd, data)
                data = data[n:]
            except BlockingIOError:
                # The pty is full until the Lisp reads. It may itself be stuck writing (a
                # banner, an init file, a background thread), so keep its output flowing
                # into what the next read will parse.
                readable, writable, _ = select.select([fd], [fd], [], 1.0)
                if readable:
                    try:
                        more = os.read(fd, READ_SIZE)
                    except OSError:
                        more = b""
                    if not more:
                        raise _Died("end of file") from None
                    self._pending = (self._pending + self._decoder.decode(more))[-(1 << 20):]
                elif not writable and not self._channel_alive():
                    raise _Died("process gone") from None
            except OSError as exc:
                raise _Died(str(exc)) from None

    def _read_answer(self, answer: _Answer, deadline: float | None) -> None:
        """Read until the answer's D marker, feeding `answer`. Raises TimeoutError at
        `deadline` (the caller decides what to do), _Died on EOF."""
        marker = self._marker
        mlen = len(marker)
        text = self._pending
        self._pending = ""
        fd = self._fd
        decode = self._decoder.decode
        poller = self._poller
        finish = f"{marker}D{self._request_id}\n"
        while True:
            pos = 0
            while text:
                # Look for the marker's first character (a memchr, fast even over megabytes
                # of output), then check the rest of the marker there.
                i = text.find(MARK, pos)
                while i >= 0 and not text.startswith(marker, i):
                    if len(text) - i < mlen and marker.startswith(text[i:]):
                        break  # a marker may be arriving: hold it back
                    i = text.find(MARK, i + 1)
                if i < 0 or len(text) - i < mlen:
                    end = len(text) if i < 0 else i
                    answer.add(text[pos:end])
                    text = text[end:]
                    break
                answer.add(text[pos:i])
                if i + mlen >= len(text):  # the tag letter has not arrived yet
                    text = text[i:]
                    break
                tag = text[i + mlen]
                if tag == "I":  # the code reads standard input: answer, then read on
                    pos = i + mlen + 1
                    self._reply_input(answer)
                    continue
                if tag == "D":  # the end: D, the request's id, a newline
                    nl = text.find("\n", i + mlen + 1)
                    if nl < 0:
                        text = text[i:]
                        break
                    if text[i + mlen + 1:nl] == self._request_id:
                        self._pending = text[nl + 1:]
                        return
                    # A stray answer (to an earlier request): drop it and read on.
                    answer.reset()
                    pos = nl + 1
                    continue
                answer.begin(tag)
                pos = i + mlen + 1
            # Need more bytes.
            data = read_some(fd, poller, deadline)
            if data is None:
                self._pending = text
                raise TimeoutError
            if not data:
                raise _Died("end of file")
            text += decode(data)
            if not answer.fields and text.endswith(finish) and self._whole(answer, text, finish):
                return

    def _reply_input(self, answer: _Answer) -> None:
        kind, text = answer.read_input()
        self._write(f"{kind}{self._code_length(text)} {self._request_id}\n{text}")

    def _whole(self, answer: _Answer, text: str, finish: str) -> bool:
        """The usual case, a whole answer in one read: split it in one go. False (nothing
        consumed) if it holds anything unusual, such as a stray earlier answer."""
        parts = text[:-len(finish)].split(self._marker)
        small = _Answer.SMALL_CAP
        for p in parts[1:]:
            if p[:1] in ("D", "I") or not p or len(p) > small:
                return False
        if parts[0]:
            answer.add(parts[0])
        fields = answer.fields
        for p in parts[1:]:
            body = p[1:]
            field = [[body], len(body), 0]
            if p[0] in fields:
                fields[p[0]].append(field)
            else:
                fields[p[0]] = [field]
        return True

    # ------------------------------------------------------------------ misc
    def __repr__(self) -> str:
        state = "busy" if self.busy else ("ready" if self.ready else "stopped")
        return f"<LispSession {self.lisp} pid={self.pid} {state} package={self.package!r}>"

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()


class _Unresponsive(Exception):
    """The child did not answer within the grace period after SIGINT."""


def _raw_stdin() -> None:
    """Runs in the child before exec: raw mode, so no echo, no 4096-byte line limit, no
    signals from control characters, no CR/LF translation on either side. SIGINT is how the
    child is interrupted: lispshell started as a shell script's background job inherits it
    ignored, and a JVM then never installs its handler (Ctrl-C left a Clojure loop running)."""
    tty.setraw(0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def init_failure(session) -> str:
    """What went wrong loading the person's init files at start, or "" (nothing, or none)."""
    report = session.init_report
    if report is None or report.error is None:
        return ""
    name = session.dialect.init_files_shown or "an init file"
    # SBCL's LOAD says where the failing form starts, on *ERROR-OUTPUT* (kept as output).
    m = re.search(r'While evaluating the form\s+starting at line (\d+), column (\d+)\s+of\s+'
                  r'#?P?"([^"]+)"', report.output or "")
    where = f" (at {m[3]}:{m[1]}:{int(m[2]) + 1})" if m else ""
    return (f"loading {name} failed: {report.error}{where}; the Lisp started without the rest "
            "of it (--no-init skips init files)")


def make_session(lisp: str, config: dict) -> LispSession:
    """A session for `lisp` built from the effective configuration (see config/default.toml)."""
    from lispshell.config import child_environment, session_settings

    dialect = get_dialect(lisp)
    settings = session_settings(config)
    command = ((config.get("lisp") or {}).get(lisp) or {}).get("command") or dialect.command
    if isinstance(command, str):
        import shlex
        command = shlex.split(command)
    return LispSession(lisp, list(command), eval_timeout=settings.eval_timeout,
                       output_cap=settings.output_cap, interrupt_grace=settings.interrupt_grace,
                       boot_timeout=settings.boot_timeout, env=child_environment(config),
                       init_files=settings.init_files)
