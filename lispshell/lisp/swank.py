"""Swank: a Common Lisp (SBCL) image reached over SLIME's Swank server (`swank://host:port`).

The protocol (SLIME 2.x): each message is six hex digits giving the UTF-8 length, then an
s-expression. We send `(:emacs-rex FORM PACKAGE THREAD ID)`; Swank evaluates FORM in a worker
thread and answers `(:return (:ok VALUE) ID)` or `(:return (:abort CONDITION) ID)`. While it
runs it may send `(:write-string TEXT)`, `(:debug THREAD LEVEL CONDITION RESTARTS FRAMES ...)`
when something entered the debugger, `(:ping THREAD TAG)` (answered with `:emacs-pong`), and
events for Emacs we have no use for. `(:emacs-interrupt THREAD)` interrupts a thread: Swank
then opens its debugger in it.

On connecting, lispshell loads its SBCL loop's functions (image/sbcl-loop.lisp, never started
here) and image/sbcl-swank.lisp into the image's %LISPSHELL package. Every eval is then one
`(%lispshell::swank-eval CODE PACKAGE HISTORY CAP DEBUG REQUEST)`: the forms are read and
evaluated as by the child's loop, output goes out as :write-string a line at a time.

Debug levels (lispshell/lisp/levels.py): in the REPL (`keep_levels`) an error, a `break` or
Ctrl-C's interrupt enters Swank's own debugger (SLDB), and lispshell keeps it as a level: the
`:debug` event's restarts and frames, `swank:backtrace`, `frame-locals-and-catch-tags`,
`eval-string-in-frame`, restarts invoked in that thread, `sldb-abort`, `throw-to-toplevel`.
Forms typed at the level are sent to that thread, which evaluates them inside the error. A
debugger another thread enters is listed for the person (`,threads`, `,thread N`), never left
without their word. Batch runs and `lispshell mcp` (no `keep_levels`) keep today's rule: an
error comes back as type, message and frames without entering the debugger, and what does
reach it is left at once through its abort restart, which the answer says.

Whether a debugger is this eval's own is asked of its thread: `swank-eval` binds the request's
id there (`%lispshell::*swank-request*`), which another thread does not have.

If ~/.slime-secret exists, its first line is sent first, as SLIME does.
"""
from __future__ import annotations

import re
import secrets
import threading
import time
from pathlib import Path

from lispshell.lisp.breakpoints import ImageBreakpoints
from lispshell.lisp.channel import Lost, recv
from lispshell.lisp.connection import ConnectError, Connection, open_socket
from lispshell.lisp.contract import Capabilities, EvalClock
from lispshell.lisp.dialects import string_literal
from lispshell.lisp.image import code as image_code
from lispshell.lisp.levels import LevelStack, parse_frames, step_by_restarts
from lispshell.lisp.session import EvalResult, LispError, _Answer

READ_SIZE = 1 << 16
# One Swank message holds at most 2^24 - 1 bytes; a value is cut well below that (UTF-8 and
# escapes can triple its size).
VALUE_LIMIT = 4 * 1024 * 1024


def _machinery(frame: str) -> bool:
    """Where the person's frames end: the evaluator lispshell's loop called them through."""
    return any(m in frame for m in ("(EVAL ", "%LISPSHELL::", "SIMPLE-EVAL-IN-LEXENV"))


class _Debugged(Exception):
    """A `:debug` event while levels are kept: (thread, level, condition, restarts, frames)."""

    def __init__(self, event):
        super().__init__("debugger entered")
        self.event = event


class Symbol(str):
    """A symbol or keyword in a Swank message (strings are plain `str`)."""


def read_sexp(text: str):
    """The s-expression Swank printed: lists, strings, integers, symbols (as Symbol)."""
    value, pos = _read(text, 0)
    return value


_ATOM_END = re.compile(r"[\s()\"]")


def _read(text: str, pos: int):
    n = len(text)
    while pos < n and text[pos].isspace():
        pos += 1
    if pos >= n:
        raise ValueError("unexpected end of message")
    c = text[pos]
    if c == "(":
        items = []
        pos += 1
        while True:
            while pos < n and text[pos].isspace():
                pos += 1
            if pos >= n:
                raise ValueError("unclosed list")
            if text[pos] == ")":
                return items, pos + 1
            if text[pos] == "." and pos + 1 < n and text[pos + 1].isspace():
                pos += 1        # a dotted pair: keep the tail as the last item
                continue
            item, pos = _read(text, pos)
            items.append(item)
    if c == '"':
        out = []
        pos += 1
        while True:
            j = text.find('"', pos)
            k = text.find("\\", pos)
            if j < 0:
                raise ValueError("unclosed string")
            if 0 <= k < j:
                out.append(text[pos:k])
                out.append(text[k + 1:k + 2])
                pos = k + 2
                continue
            out.append(text[pos:j])
            return "".join(out), j + 1
    if c == "'":
        return _read(text, pos + 1)
    m = _ATOM_END.search(text, pos)
    end = m.start() if m else n
    atom = text[pos:end]
    if re.fullmatch(r"[-+]?\d+", atom):
        return int(atom), end
    return Symbol(atom.lower()), end


def _is(value, name: str) -> bool:
    return isinstance(value, Symbol) and value == name


def _nil(value) -> bool:
    return value == [] or _is(value, "nil")


class Session(ImageBreakpoints, Connection):
    capabilities = Capabilities(levels=True, frames=True, threads=True, systems=True,
                                reconnect=True, breakpoints=True,
                                stepping=True)

    def _connect(self) -> None:
        self._sock = open_socket(self.target, self.connect_timeout)
        self._buf = bytearray()
        self._current_thread: object = Symbol("t")
        self._interrupt_at: float | None = None
        self._running = False
        self._request: str | None = None   # the id of the eval running at the top level
        self._threaded = True
        self._next_id = 0
        self._unwanted: set[int] = set()    # requests whose answers nobody waits for
        self._id_lock = threading.Lock()
        self._notes: list[str] = []      # other threads' debuggers, not yet told
        self._returns: dict = {}         # answers to requests not waited for yet (a level's)
        self._sldb: list[dict] = []      # the levels kept: thread, Swank's level, pending rid
        self._levels = LevelStack()
        self.other_debuggers: list[tuple] = []   # (thread, level, condition, restarts)
        deadline = time.monotonic() + max(self.connect_timeout, 60.0)
        try:
            secret = self._secret()
            if secret is not None:
                self._send_raw(secret)
            # A quick question first, with the connect timeout: a server that wants a secret
            # we lack (or that is not Swank) never answers, and loading the helpers below may
            # legitimately take a minute on a busy machine.
            try:
                self._wait_return(self._rex("(cl:values)", "COMMON-LISP-USER"),
                                  time.monotonic() + self.connect_timeout)
            except TimeoutError:
                raise ConnectError(
                    f"{self.url} did not answer within {self.connect_timeout:g} s. A Swank "
                    "server with a ~/.slime-secret answers only clients that send that secret "
                    "first; lispshell sends the first line of its own ~/.slime-secret"
                    + (" (there is none here)." if secret is None else
                       " (it did: check that the two files match).")) from None
            # One compilation unit: the loop's functions call ones defined further down, and
            # SBCL would print "undefined function" warnings on the person's terminal.
            setup = ('(cl:progn (cl:unless (cl:and (cl:find-package "%LISPSHELL") '
                     '(cl:find-symbol "SWANK-EVAL" "%LISPSHELL")) (cl:with-compilation-unit () '
                     f'(cl:load (cl:make-string-input-stream {string_literal(image_code("sbcl-loop.lisp"))})) '
                     f'(cl:load (cl:make-string-input-stream {string_literal(image_code("sbcl-debug.lisp"))})) '
                     f'(cl:load (cl:make-string-input-stream {string_literal(image_code("sbcl-swank.lisp"))})))) '
                     '(cl:list (cl:funcall (cl:find-symbol "PACKAGE-LABEL" "%LISPSHELL") '
                     'cl:*package*) (cl:typep (cl:symbol-value (cl:find-symbol '
                     '"*EMACS-CONNECTION*" "SWANK")) (cl:find-symbol "MULTITHREADED-CONNECTION" '
                     '"SWANK"))))')
            rid = self._rex(setup, "COMMON-LISP-USER")
            ok, value = self._wait_return(rid, deadline)
            if not ok or not isinstance(value, list) or not isinstance(value[0], str):
                raise ConnectError(f"{self.url}: the Swank server could not load lispshell's "
                                   f"helpers: {value}")
            self.package = value[0]
            # One thread serving everything (:fd-handler, :sigio): no thread is free to run
            # interrupt-request while an eval runs, so Ctrl-C goes as Swank's own interrupt.
            self._threaded = not _nil(value[1])
        except ConnectError:
            self._drop()
            raise
        except (Lost, TimeoutError) as exc:
            self._drop()
            raise ConnectError(f"{self.url} did not answer as a Swank server: "
                               f"{str(exc) or 'no answer'}") from None

    @staticmethod
    def _secret() -> str | None:
        try:
            return (Path.home() / ".slime-secret").read_text(encoding="utf-8").splitlines()[0]
        except (OSError, IndexError, UnicodeDecodeError):
            return None

    def close(self) -> None:
        self.leave_all()
        super().close()

    def _drop(self) -> None:
        self._close_socket()
        self.ready = False
        self._sldb, self._returns = [], {}
        self._levels.clear()

    # -- the wire ----------------------------------------------------------------------------
    def _send_raw(self, text: str) -> None:
        payload = text.encode("utf-8", errors="replace")
        self._write(b"%06x" % len(payload) + payload)

    def _rex(self, form: str, package: str, thread: object = None) -> int:
        thread = self._thread_text(Symbol("t") if thread is None else thread)
        with self._id_lock:          # Ctrl-C's interrupt is sent from another thread
            self._next_id += 1
            rid = self._next_id
        self._send_raw(f"(:emacs-rex {form} {string_literal(package)} {thread} {rid})")
        return rid

    @staticmethod
    def _thread_text(thread) -> str:
        return str(thread) if isinstance(thread, (int, Symbol)) else "t"

    def _next(self, deadline: float | None):
        """The next message (parsed), or None once `deadline` passes. Raises Lost."""
        while True:
            buf = self._buf
            if len(buf) >= 6:
                try:
                    length = int(buf[:6], 16)
                except ValueError:
                    raise Lost("not Swank: bad message header") from None
                if len(buf) >= 6 + length:
                    text = bytes(buf[6:6 + length]).decode("utf-8", errors="replace")
                    del buf[:6 + length]
                    try:
                        return read_sexp(text)
                    except ValueError as exc:
                        raise Lost(f"not Swank: {exc}") from None
            data = recv(self._sock, deadline)
            if data is None:
                return None
            buf += data

    def _handle_event(self, message, answer: _Answer | None, debug: list) -> None:
        """Events that are not the answer: output, pings, and debuggers (answered with abort)."""
        if not isinstance(message, list) or not message:
            return
        head = message[0]
        if _is(head, ":write-string") and len(message) > 1 and answer is not None:
            answer.add(str(message[1]))
        elif _is(head, ":ping") and len(message) >= 3:
            self._send_raw(f"(:emacs-pong {self._thread_text(message[1])} {message[2]})")
        elif _is(head, ":debug") and len(message) >= 6:
            thread, level, condition, restarts, frames = message[1:6]
            if self._keep_levels:
                raise _Debugged((thread, level, condition, restarts, frames))
            debug.append((condition, frames))
            self._abort(thread, level, restarts)
        elif _is(head, ":read-string") and len(message) >= 3:
            # The person's code reads standard input (sbcl-swank.lisp): whoever evaluates
            # answers (session.py's read_input); "" is end of file, and Ctrl-C at the input
            # line interrupts the reading code (a level whose CONTINUE asks again).
            kind, text = answer.read_input() if answer is not None else ("i", "")
            value = ":lispshell-interrupt" if kind == "x" else string_literal(text)
            self._send_raw(f"(:emacs-return-string {self._thread_text(message[1])} "
                           f"{message[2]} {value})")
        elif _is(head, ":read-aborted"):
            pass          # its level was left: nothing waits for an answer any more
        elif (_is(head, ":eval") or _is(head, ":y-or-n-p") or _is(head, ":read-from-minibuffer")
              ) and len(message) >= 3:
            # Requests meant for Emacs: refused, so the thread asking is not left waiting.
            self._send_raw(f"(:emacs-return {self._thread_text(message[1])} {message[2]} "
                           '(:abort "lispshell is not Emacs"))')

    def _abort(self, thread, level, restarts) -> None:
        """Leave the debugger through its abort restart (Swank's own "Return to SLIME's top
        level" first), which ends the request that entered it."""
        names = [str(r[0]) if isinstance(r, list) and r else "" for r in restarts or []]
        index = next((i for i, n in enumerate(names) if n.startswith("*")), None)
        if index is None:
            index = next((i for i, n in enumerate(names) if n.upper() == "ABORT"), None)
        form = ("(swank:throw-to-toplevel)" if index is None else
                f"(swank:invoke-nth-restart-for-emacs {int(level)} {index})")
        self._rex(form, "COMMON-LISP-USER", thread)

    def _wait_return(self, rid: int, deadline: float | None, answer: _Answer | None = None,
                     debug: list | None = None):
        """(ok, value) of request `rid`, handling events meanwhile. Raises TimeoutError."""
        debug = [] if debug is None else debug
        while True:
            if rid in self._returns:
                return self._returns.pop(rid)
            m = self._next(deadline)
            if m is None:
                raise TimeoutError
            if self._is_return(m):
                if m[-1] == rid:
                    return self._outcome(m)
                self._keep_return(m)
                continue
            self._handle_event(m, answer, debug)

    @staticmethod
    def _is_return(m) -> bool:
        return isinstance(m, list) and len(m) >= 3 and _is(m[0], ":return")

    @staticmethod
    def _outcome(m) -> tuple[bool, object]:
        outcome = m[1] if isinstance(m[1], list) and m[1] else [Symbol(":abort")]
        return _is(outcome[0], ":ok"), (outcome[1] if len(outcome) > 1 else None)

    def _keep_return(self, m) -> None:
        """An answer to a request nobody waits for now: a level's pending eval, read while
        something else was asked, is taken from here when its level ends."""
        if m[-1] in self._unwanted:
            self._unwanted.discard(m[-1])
            return
        pending = {lv["rid"] for lv in self._sldb}
        if m[-1] in pending or len(self._returns) < 64:
            self._returns[m[-1]] = self._outcome(m)

    # -- eval ---------------------------------------------------------------------------------
    def _eval_ended(self) -> None:
        self._running = False
        self._request = None

    def _eval_locked(self, code, timeout, answer, history, value_cap, started) -> EvalResult:
        keep = self._keep_levels and history
        request = secrets.token_hex(6)
        form = (f"(%lispshell::swank-eval {string_literal(code)} {string_literal(self.package)} "
                f"{'t' if history else 'nil'} {max(1, min(value_cap, VALUE_LIMIT))} "
                f"{'t' if keep else 'nil'} {string_literal(request)})")
        # At a level, the form goes to the thread waiting in it: it runs inside the error.
        thread = self._sldb[-1]["thread"] if self._sldb else None
        self._request = request
        rid = self._rex(form, self.package or "COMMON-LISP-USER", thread)
        self._running = True
        # Never resent: a second interrupt queued in the thread would open a second level.
        clock = EvalClock(self, timeout, started, resend=False)
        debug: list = []
        gave_up = False
        while True:
            try:
                ok, value = self._wait_return(rid, clock.wake_at(), answer, debug)
                break
            except TimeoutError:
                pass
            except _Debugged as entered:
                opened = self._entered(entered.event, rid, request, answer)
                if opened is not None:
                    return self._level_result(opened, answer, started)
                continue
            step = clock.tick()
            if step == "give-up":        # a deadline's eval ignored the interrupt
                gave_up, ok, value = True, False, None
                break
            if step == "interrupt":
                self._send_interrupt()
        timed_out = clock.timed_out
        interrupted = self._interrupt_at is not None and not timed_out
        # Debuggers other threads entered meanwhile (left through abort like any) are said in
        # the output of the person's next eval, or of this one if it is theirs: no value or
        # error carries them, and a look-up's answer must end its output. When the eval itself
        # failed, the last debugger was its own.
        for condition, _ in (debug if ok else debug[:-1]):
            kind, text = self._condition_text(condition)
            self._notes.append(f"; another thread entered the debugger: {text} [{kind}]; "
                               "lispshell left it through its abort restart\n")
        if history and self._notes:
            last = answer.output[-1] if answer.output else ""
            notes, self._notes = self._notes, []
            answer.add(("" if not last or last.endswith("\n") else "\n") + "".join(notes[-10:]))
        error = None
        values: list[str] = []
        if ok and isinstance(value, list) and len(value) >= 2:
            self.package = str(value[0])
            if _is(value[1], ":values"):
                values = [str(v) for v in value[2:]]
            else:
                error = LispError(str(value[2]) if len(value) > 2 else "error",
                                  str(value[3]) if len(value) > 3 else "",
                                  [str(f) for f in value[4:]])
        elif gave_up:
            error = LispError("timeout", f"Evaluation timed out after {timeout:g} s and did not "
                              "answer the interrupt; it may still be running in the image "
                              "(lispshell never kills an image it did not start).")
        elif timed_out:
            error = LispError("timeout", f"Evaluation timed out after {timeout:g} s and was "
                              "interrupted; the image is still running with its definitions.")
        elif interrupted:
            error = LispError(self.dialect.interrupt_type, "Interrupted")
        else:
            error = self._debugger_error(debug, value)
        return EvalResult(output=answer.text_output(), values=[] if error else values,
                          error=error, output_dropped=answer.dropped, timed_out=timed_out,
                          interrupted=interrupted and not timed_out,
                          package=self.package, elapsed=time.monotonic() - started,
                          level=self.level, input_refused=answer.input_refused)

    def idle_output(self) -> str:
        """Output Swank sent while no eval runs (another thread's :write-string), and
        debuggers other threads entered meanwhile (listed, never left: only the REPL asks)."""
        if self.busy or not self.ready or not self._lock.acquire(blocking=False):
            return ""
        answer = _Answer(1 << 20, None)
        try:
            self._keep_levels = True
            while True:
                try:
                    m = self._next(time.monotonic())
                except Lost as exc:
                    self._lost(str(exc))
                    break
                if m is None:
                    break
                if self._is_return(m):
                    self._keep_return(m)
                    continue
                try:
                    self._handle_event(m, answer, [])
                except _Debugged as entered:
                    self._entered(entered.event, None, None, answer)
        finally:
            self._keep_levels = False
            self._lock.release()
        return answer.text_output()

    # -- debug levels ------------------------------------------------------------------------
    def _entered(self, event, rid, request, answer) -> LispError | None:
        """A debugger was entered while request `rid` ran: its level's error if it is that
        request's own (kept), else None (another thread's: listed for the person, said).
        `request` None: none of ours runs, so the debugger is another thread's."""
        thread, level, condition, restarts, frames = event
        ours = request is not None and bool(self._sldb) and thread == self._sldb[-1]["thread"]
        if not ours and request is not None:
            try:
                ok, value = self._wait_return(
                    self._rex("(%lispshell::swank-request)", "COMMON-LISP-USER", thread),
                    time.monotonic() + max(self.connect_timeout, 30.0))
                ours = ok and str(value) == request
            except (TimeoutError, _Debugged):
                ours = False
        kind, text = self._condition_text(condition)
        if not ours:
            self.other_debuggers.append((thread, level, condition, restarts))
            answer.add(f"; another thread ({thread}) entered the debugger: {text} [{kind}]; "
                       f",threads lists it, ,thread {len(self.other_debuggers) - 1} enters it\n")
            return None
        error = LispError(kind, text, self._frame_lines(frames), self._restart_lines(restarts))
        while self._sldb and self._sldb[-1]["thread"] == thread \
                and self._sldb[-1]["level"] >= int(level):
            self._sldb.pop()          # re-entered after a restart left the old level
        self._sldb.append({"thread": thread, "level": int(level), "rid": rid})
        self._levels.errors = self._levels.errors[:len(self._sldb) - 1] + [error]
        return error

    def _level_result(self, error, answer, started) -> EvalResult:
        return EvalResult(output=answer.text_output(), error=error,
                          output_dropped=answer.dropped, package=self.package,
                          elapsed=time.monotonic() - started, level=self.level,
                          interrupted=answer.input_interrupted)

    @staticmethod
    def _restart_lines(restarts) -> list[str]:
        return [f"{r[0]}\t{r[1]}" if isinstance(r, list) and len(r) > 1 else str(r)
                for r in restarts or []]

    @staticmethod
    def _frame_lines(frames) -> list[str]:
        lines = []
        for f in frames or []:
            line = str(f[1]) if isinstance(f, list) and len(f) > 1 else ""
            if _machinery(line) or len(lines) == 12:
                break     # the rest is lispshell's and Swank's own machinery
            lines.append(line)
        return lines

    def _ask_level(self, form: str):
        """Evaluate a Swank function in the innermost level's thread; its value."""
        if not self._sldb:
            raise ValueError("no error is waiting: no debug level is open")
        with self._lock:
            try:
                ok, value = self._wait_return(
                    self._rex(form, self.package or "COMMON-LISP-USER", self._sldb[-1]["thread"]),
                    time.monotonic() + max(self.eval_timeout, 30.0))
            except TimeoutError:
                raise ValueError("the image did not answer") from None
            except Lost as exc:
                self._lost(str(exc))
                raise ValueError(f"the connection was lost: {exc}") from None
        if not ok:
            raise ValueError(f"Swank could not answer: {value}")
        return value

    def backtrace(self):
        value = self._ask_level("(swank:backtrace 0 200)")
        lines = []
        for f in value or []:
            if not (isinstance(f, list) and len(f) > 1):
                continue
            text = str(f[1])
            if _machinery(text):
                break
            lines.append(f"{f[0]}\t{text}\t")
        return parse_frames(lines)

    def frame_locals(self, index: int):
        from lispshell.lisp.levels import Local
        value = self._ask_level(f"(swank:frame-locals-and-catch-tags {int(index)})")
        found = []
        for plist in (value[0] if isinstance(value, list) and value else []) or []:
            fields = dict(zip(plist[::2], plist[1::2])) if isinstance(plist, list) else {}
            name = next((v for k, v in fields.items() if _is(k, ":name")), "")
            shown = next((v for k, v in fields.items() if _is(k, ":value")), "")
            found.append(Local(str(name).lower(), str(shown)))
        return found

    def eval_in_frame(self, index: int, code: str, **kw) -> EvalResult:
        # Swank's backend evaluates in the frame; the values are printed as the REPL prints
        # them (eval-string-in-frame would give the echo area's "=> 15 (4 bits, #xF...)").
        value = self._ask_level(
            '(cl:mapcar (cl:function cl:prin1-to-string) (cl:multiple-value-list (cl:funcall '
            '(cl:find-symbol "EVAL-IN-FRAME" "SWANK/BACKEND") '
            f"(cl:read-from-string {string_literal(code)}) {int(index)})))")
        return EvalResult(values=[str(v) for v in value or []], package=self.package,
                          level=self.level)

    def frame_source(self, index: int) -> str:
        value = self._ask_level('(cl:funcall (cl:find-symbol "FRAME-SOURCE-LOCATION" '
                                f'"SWANK/BACKEND") {int(index)})')
        parts = {str(p[0]).lower(): p[1:] for p in value[1:] if isinstance(p, list) and p} \
            if isinstance(value, list) and value and _is(value[0], ":location") else {}
        path = str(parts.get(":file", [""])[0]) if ":file" in parts else ""
        position = parts.get(":position", [None])[0]
        if not path:
            return ""
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                line = f.read(int(position) if isinstance(position, int) else 0).count("\n") + 1
        except OSError:
            return ""
        return f"{path}:{line}"

    def _control(self, form: str, **kw) -> EvalResult:
        """Send `form` to the innermost level's thread and wait for what it leads to: a level's
        pending eval answering (that level and those inside it are over), a new level, or the
        form's own answer (it did not leave the level)."""
        if not self._sldb:
            raise ValueError("no error is waiting: no debug level is open")
        answer = _Answer(self.output_cap, kw.get("on_output"), on_input=kw.get("on_input"))
        started = time.monotonic()
        with self._lock:
            self._keep_levels = True
            self.busy = True
            # What the level's thread runs now (a form resumed by CONTINUE) can be interrupted.
            self._running = True
            self._interrupt_at = None
            try:
                rid = self._rex(form, self.package or "COMMON-LISP-USER",
                                self._sldb[-1]["thread"])
                own = None
                while True:
                    pending = [lv["rid"] for lv in self._sldb]
                    done = next((i for i, r in enumerate(pending) if r in self._returns), None)
                    if done is not None:
                        ok, value = self._returns.pop(pending[done])
                        del self._sldb[done:]
                        del self._levels.errors[done:]
                        self._returns.pop(rid, None)
                        return self._ended_level(ok, value, answer, started)
                    if own is not None and not self._sldb:
                        break
                    if rid in self._returns:
                        own = self._returns.pop(rid)
                        if self._sldb[-1]["rid"] is None and not own[0]:
                            # Another thread's debugger, entered with ,thread: nothing of
                            # ours is pending there; the restart unwound our request.
                            self._sldb.pop()
                            del self._levels.errors[len(self._sldb):]
                            return self._ended_level(False, None, answer, started)
                        if own[0]:      # answered without leaving: said, the level stays
                            break
                        continue        # unwound by the restart: its level answers next
                    m = self._next(None)
                    if self._is_return(m):
                        self._keep_return(m)
                        continue
                    try:
                        self._handle_event(m, answer, [])
                    except _Debugged as entered:
                        thread = entered.event[0]
                        if thread == self._sldb[-1]["thread"]:
                            error = self._entered(entered.event, self._sldb[-1]["rid"], "", answer)
                            return self._level_result(error, answer, started)
                        self._entered(entered.event, rid, "", answer)
            except Lost as exc:
                self._lost(str(exc))
                return self.lost_result(answer, started, time.monotonic() - started)
            finally:
                self._keep_levels = False
                self.busy = False
                self._running = False
                self._interrupt_at = None
        note = str(own[1]) if own is not None else "done"
        return EvalResult(output=answer.text_output(), package=self.package, level=self.level,
                          error=LispError("LISPSHELL-RESTART-DID-NOT-RUN", note))

    def _ended_level(self, ok, value, answer, started) -> EvalResult:
        if ok and isinstance(value, list) and len(value) >= 2:
            self.package = str(value[0])
            if _is(value[1], ":values"):
                return EvalResult(output=answer.text_output(), values=[str(v) for v in value[2:]],
                                  package=self.package, level=self.level,
                                  elapsed=time.monotonic() - started)
            return EvalResult(output=answer.text_output(), package=self.package, level=self.level,
                              error=LispError(str(value[2]) if len(value) > 2 else "error",
                                              str(value[3]) if len(value) > 3 else "",
                                              [str(f) for f in value[4:]]))
        where = f"debug level {self.level}" if self.level else "the top level"
        return EvalResult(output=answer.text_output(), package=self.package, level=self.level,
                          error=LispError("LISPSHELL-ABORTED", f"Back at {where}."))

    def invoke_restart(self, index: int, argument: str = "", **kw) -> EvalResult:
        return self._control(f"(%lispshell::swank-invoke {int(index)} "
                             f"{string_literal(argument)})", **kw)

    def restart_frame(self, index: int, **kw) -> EvalResult:
        return self._control('(cl:funcall (cl:find-symbol "RESTART-FRAME" "SWANK/BACKEND") '
                             f"{int(index)})", **kw)

    def step_form(self, code: str) -> str:
        return f"(step {code}\n)"

    def step(self, how: str, **kw) -> EvalResult:
        return step_by_restarts(self, how, **kw)

    def leave_level(self, **kw) -> EvalResult:
        return self._control("(swank:sldb-abort)", **kw)

    def top(self, **kw) -> EvalResult:
        if not self._sldb:
            raise ValueError("no error is waiting: no debug level is open")
        result = None
        while self._sldb:
            result = self._control("(swank:throw-to-toplevel)", **kw)
        return result

    def enter_thread(self, index: int) -> LispError:
        """Make another thread's waiting debugger (`other_debuggers[index]`) the current level."""
        if not 0 <= index < len(self.other_debuggers):
            raise ValueError(f"no other thread's debugger {index}" + (
                f": choose 0 to {len(self.other_debuggers) - 1}" if self.other_debuggers else
                ": none is waiting"))
        thread, level, condition, restarts = self.other_debuggers.pop(index)
        kind, text = self._condition_text(condition)
        error = LispError(kind, text, [], self._restart_lines(restarts))
        self._sldb.append({"thread": thread, "level": int(level), "rid": None})
        self._levels.errors.append(error)
        return error

    def leave_all(self) -> None:
        """Before disconnecting: the person's image is never left in a debugger of ours."""
        try:
            if self._sldb and self.ready:
                self.top()
        except (ValueError, Lost, TimeoutError):
            pass

    @staticmethod
    def _debugger_error(debug: list, aborted) -> LispError:
        """What entered the debugger (now left through abort), as type, message, frames."""
        if not debug:
            return LispError("abort", f"Swank aborted the evaluation: {aborted}")
        condition, frames = debug[-1]
        kind, text = Session._condition_text(condition)
        lines = []
        for f in frames or []:
            line = str(f[1]) if isinstance(f, list) and len(f) > 1 else ""
            if _machinery(line) or len(lines) == 12:
                break     # the rest is lispshell's and Swank's own machinery
            lines.append(line)
        return LispError(kind, text + " (the debugger was left through its abort restart)",
                         lines)

    @staticmethod
    def _condition_text(condition) -> tuple[str, str]:
        """(type, message) of the condition in a :debug message."""
        text = str(condition[0]) if isinstance(condition, list) and condition else str(condition)
        kind = str(condition[1]) if isinstance(condition, list) and len(condition) > 1 else ""
        m = re.search(r"\[Condition of type ([^\]]+)\]", kind)
        kind = m[1] if m else "debugger"
        if kind.endswith("::INPUT-INTERRUPTED"):      # Ctrl-C at the input line: an interrupt
            kind = "SB-SYS:INTERACTIVE-INTERRUPT"
        elif kind.endswith("::BREAKPOINT-HIT"):      # sbcl-debug.lisp: the call, its arguments
            kind = "LISPSHELL-BREAK"
        elif kind.endswith("STEP-FORM-CONDITION"):
            # A step (sbcl-debug.lisp's hook), said in one line as on a child: SBCL's report
            # is "Evaluating call: FORM With arguments: ARGS" over several lines.
            m = re.match(r"\s*Evaluating call:\s*(.*?)\s*(?:With arguments:\s*(.*?)|With unknown "
                         r"arguments)?\s*\Z", text, re.S)
            kind = "LISPSHELL-STEP"
            if m:
                text = " ".join(m[1].split()) + (f"  [arguments: {' '.join(m[2].split())}]"
                                                   if m[2] else "")
        return kind, text

    # -- interrupt, completions -----------------------------------------------------------------
    def _interruptible(self) -> bool:
        return self.busy and self._running

    def _send_interrupt(self) -> None:
        if self._interrupt_at is None:
            self._interrupt_at = time.monotonic()
        try:
            if self._sldb:       # at a level, the thread waiting in it runs what is sent
                self._send_raw(f"(:emacs-interrupt {self._thread_text(self._sldb[-1]['thread'])})")
            elif self._threaded and self._request is not None:
                # Never Swank's `t` ("the newest worker thread"): before the request's thread
                # begins, or beside another eval's, that is someone else's thread.
                self._unwanted.add(self._rex(
                    f"(%lispshell::interrupt-request {string_literal(self._request)})",
                    "COMMON-LISP-USER"))
            else:
                self._send_raw("(:emacs-interrupt t)")
        except Lost:
            pass

    def completions(self, prefix: str, kind: str = "symbol") -> list[str]:
        if not self.ready or self.busy or not self._lock.acquire(blocking=False):
            return []
        helper = "system-names" if kind == "system" else "completions"
        try:
            rid = self._rex(f"(%lispshell::{helper} {string_literal(prefix)})",
                            self.package or "COMMON-LISP-USER")
            ok, value = self._wait_return(rid, time.monotonic() + 2.0)
            return [str(v) for v in value] if ok and isinstance(value, list) else []
        except TimeoutError:
            return []
        except Lost as exc:
            self._lost(str(exc))
            return []
        finally:
            self._lock.release()
