"""nREPL: a Clojure image reached over its nREPL server (`lispshell --connect nrepl://host:port`).

The protocol (nREPL 1.0, as CIDER and Calva speak it): bencoded maps over TCP. `clone` makes a
session (its own `*ns*`, `*1`, `*e`); `eval` answers with any number of `out`/`err` messages as
the code prints, a `value` (and `ns`) per top-level form, `ex`/`root-ex` and status
`eval-error` when it throws, and finally status `done`; `interrupt` stops the eval that
carries the given id (status `interrupted`); `completions` lists candidates.

Two sessions per connection: the person's (their evals, the model's `eval`: `*1` and `*e` move
as at any REPL) and a quiet one for look-ups and completions (history=False), evaluated in the
person's current namespace, so a `describe` never shifts `*1`; its evals run with the person's
`*1` `*2` `*3` `*e` bound (`history`), so `,inspect` with no form and the model's
`symbol_value *1` see the person's values. nREPL keeps a session (and its
thread) until someone sends `close`: lispshell closes its two when it disconnects, and the two of
a connection that was lost (or replaced by `,reconnect`) as soon as it reaches the server again,
so a long-running image does not gather orphaned sessions. Only sessions lispshell cloned are
ever closed.

Breakpoints (lispshell/lisp/breakpoints.py, image/clojure-debug.clj): a call that hits one
parks its thread (nREPL's eval thread is not ours to serve requests on) and prints a marker
line on *out*; the eval that shows it is answered as a debug level (LISPSHELL-BREAK: the call,
its arguments by name) while its request stays pending. At the level, the person's forms are
evaluated on the quiet session with the hit's arguments bound (`eval-at`), frames and locals
are asked of the hit, and a restart (`resume`: run the call, return a value, leave it) lets
the thread go on, after which the pending eval is waited for again (its answer, or the next
hit). Replies to a pending eval that arrive meanwhile are held, never dropped. A step of a
function `,step` instrumented (lispshell/lisp/stepping.py) is such a hit too (LISPSHELL-STEP:
the form, the locals in scope there, the step restarts).

Errors: nREPL would print them to `*err*` (`clojure.main/repl-caught`). We name our own hook
instead (`lispshell.nrepl/caught`, lispshell/lisp/image/clojure-nrepl.clj, loaded once per
image) that keeps type, message and frames by request id; after `eval-error` the quiet session
asks for them. Values are printed by nREPL with a quota (the value cap), through our
`pr-bounded` (the child loop's default *print-length* and *print-level*), so `(range)` ends.
"""
from __future__ import annotations

import secrets
import time

from lispshell.lisp.bencode import DecodeError, Decoder, encode
from lispshell.lisp.breakpoints import ImageBreakpoints, parse_parked
from lispshell.lisp.channel import Lost, recv
from lispshell.lisp.connection import ConnectError, Connection, open_socket
from lispshell.lisp.contract import Capabilities, EvalClock, NotOverThisTransport
from lispshell.lisp.dialects import string_literal
from lispshell.lisp.image import code as image_code
from lispshell.lisp import stepping
from lispshell.lisp.levels import LevelStack, level_kind, parse_frames, parse_locals
from lispshell.lisp.session import EvalResult, LispError

READ_SIZE = 1 << 16
CLOSE_WAIT = 3.0      # seconds to wait for nREPL to confirm the sessions it was asked to close
CAUGHT = "lispshell.nrepl/caught"
PRINT = "lispshell.nrepl/pr-bounded"
HISTORY = "lispshell.nrepl/history"
NEWEST = "lispshell.debug/marker?"    # the newest helper: its absence means load them
HIT = "\x1elispshell-hit "              # clojure-debug.clj: a parked hit's note starts so
ABORTED = "lispshell: the breakpoint's call was left"


class _Hit:
    """A breakpoint hit kept as a level: the parked hit's id in the image, and the person's
    eval that ran into it (its session and request id, still pending; None: entered from
    another thread's, `enter_thread`)."""

    def __init__(self, hit_id: str, pending: tuple[str, str] | None):
        self.id = hit_id
        self.pending = pending


class Session(ImageBreakpoints, Connection):
    # levels only at a breakpoint's hit or a step (exceptions have no restarts): not `levels`
    capabilities = Capabilities(reconnect=True, breakpoints=True, threads=True, stepping=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._levels = LevelStack()
        self._hits: list[_Hit] = []      # the levels, innermost last (see the module's doc)
        self._held: dict[str, list] = {}  # replies to pending evals read while asking others
        self._sid = self._quiet = None
        self._stale: list[str] = []    # our sessions on a connection that ended: closed later

    def _connect(self) -> None:
        self._sock = open_socket(self.target, self.connect_timeout)
        self._decoder = Decoder()
        self._inbox: list[dict] = []
        self._interrupt_at: float | None = None
        self._current: tuple[str, str] | None = None   # (session, id) of the running eval
        deadline = time.monotonic() + max(self.connect_timeout, 30.0)
        try:
            self._sid = self._clone(deadline)
            self._quiet = self._clone(deadline)
            if self._stale:
                try:
                    self._close_sessions(list(self._stale), time.monotonic() + CLOSE_WAIT)
                except TimeoutError:
                    pass            # asked; the server may be slow to confirm: not our problem
            # The helper namespace, unless an earlier connection loaded it already.
            setup = ("(binding [*ns* *ns*] (when-not (resolve '" + NEWEST + ") "
                     "(load-string "
                     + string_literal(image_code("clojure-errors.clj")) + ") (load-string "
                     + string_literal(image_code("clojure-nrepl.clj")) + ") (load-string "
                     + string_literal(image_code("clojure-debug.clj")) + ") "
                     "(reset! @(resolve (quote lispshell.debug/marker?)) true)) (str *ns*))")
            rid = self._send_new({"op": "eval", "code": setup, "session": self._quiet})
            values, failed = [], False
            for m in self._replies(rid, deadline):
                values += [m["value"]] if "value" in m else []
                failed = failed or "eval-error" in (m.get("status") or [])
            if failed or not values:
                raise ConnectError(f"{self.url}: the nREPL server could not load lispshell's "
                                   "helper namespace")
            rid = self._send_new({"op": "eval", "session": self._quiet,
                                  "code": f"(lispshell.nrepl/wrap-input {string_literal(self._sid)})"})
            for _ in self._replies(rid, deadline):
                pass
            self.package = values[-1].strip('"') or "user"
        except (Lost, TimeoutError, ConnectError) as exc:
            self._stale += [s for s in (self._sid, self._quiet) if s and s not in self._stale]
            self._drop()
            if isinstance(exc, ConnectError):
                raise
            raise ConnectError(f"{self.url} did not answer as an nREPL server: "
                               f"{str(exc) or 'no answer'}") from None

    def _clone(self, deadline: float) -> str:
        rid = self._send_new({"op": "clone"})
        for m in self._replies(rid, deadline):
            if "new-session" in m:
                return m["new-session"]
        raise Lost("clone gave no session")

    def _drop(self) -> None:
        self._close_socket()
        if self.ready:     # the sessions outlive the socket on the server: close them later
            self._stale += [s for s in (self._sid, self._quiet) if s and s not in self._stale]
        self._sid = self._quiet = None
        self.ready = False
        self._hits, self._held = [], {}
        self._levels.clear()

    def close(self) -> None:
        """Disconnect, closing our nREPL sessions (never the server, never the image). A
        running eval is ended first: its socket is shut, so it reports the lost connection,
        and closing its session makes nREPL stop the eval's thread."""
        self._closed = True
        if self.busy:
            self._shut_socket()
        with self._lock:
            unanswered = False
            if self.ready:
                ids = [s for s in (self._sid, self._quiet) if s]
                try:
                    self._close_sessions(ids, time.monotonic() + CLOSE_WAIT)
                except Lost:
                    pass
                except TimeoutError:
                    unanswered = True   # a server this slow is not asked again on the way out
            self._drop()
            if self._stale and not unanswered:
                self._close_stale_elsewhere()

    def _close_sessions(self, ids: list[str], deadline: float) -> None:
        """Send `close` for each of `ids` on this connection and wait for each answer (closed,
        or unknown: gone already); answered ones leave `_stale`. Raises Lost, TimeoutError."""
        asked = {self._send_new({"op": "close", "session": sid}): sid for sid in ids}
        while asked:
            m = self._next(deadline)
            if m is None:
                raise TimeoutError
            if isinstance(m, dict) and m.get("id") in asked and \
                    "done" in (m.get("status") or []):
                sid = asked.pop(m["id"])
                if sid in self._stale:
                    self._stale.remove(sid)

    def _close_stale_elsewhere(self) -> None:
        """Sessions of a lost connection, closed through a short-lived one (we are leaving)."""
        try:
            self._sock = open_socket(self.target, min(self.connect_timeout, CLOSE_WAIT))
        except ConnectError:
            return                  # the server is gone, and its sessions with it
        self._decoder, self._inbox = Decoder(), []
        try:
            self._close_sessions(list(self._stale), time.monotonic() + CLOSE_WAIT)
        except (Lost, TimeoutError):
            pass
        finally:
            self._close_socket()

    # -- the wire ----------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        self._write(encode(message))

    def _send_new(self, message: dict) -> str:
        rid = secrets.token_hex(8)
        self._send(dict(message, id=rid))
        return rid

    def _next(self, deadline: float | None) -> dict | None:
        """The next message, or None once `deadline` passes. Raises Lost."""
        while not self._inbox:
            data = recv(self._sock, deadline)
            if data is None:
                return None
            try:
                self._inbox.extend(self._decoder.feed(data))
            except DecodeError as exc:
                raise Lost(f"not nREPL: {exc}") from None
        return self._inbox.pop(0)

    def _replies(self, rid: str, deadline: float | None):
        """The replies to request `rid` up to and including the one whose status holds
        `done`; others (late replies to a request given up on) are dropped."""
        while True:
            m = self._next(deadline)
            if m is None:
                raise TimeoutError
            if not isinstance(m, dict) or m.get("id") != rid:
                self._hold(m)
                continue
            yield m
            if "done" in (m.get("status") or []):
                return

    def _hold(self, m) -> None:
        """Keep a reply to an eval waiting at a breakpoint's level, read while asking others."""
        if isinstance(m, dict) and any(h.pending and h.pending[1] == m.get("id")
                                       for h in self._hits):
            self._held.setdefault(m["id"], []).append(m)

    # -- eval ---------------------------------------------------------------------------------
    def _eval_ended(self) -> None:
        self._current = None

    def _eval_locked(self, code, timeout, answer, history, value_cap, started) -> EvalResult:
        if history and self._hits:
            # At a breakpoint's level: with its arguments bound, on the quiet session (the
            # person's waits in the hit). The newline keeps a trailing comment from eating ")".
            code = (f"(lispshell.debug/eval-at {int(self._hits[-1].id)} "
                    f"{string_literal(code)}\n)")
            history = False
        sid = self._sid if history else self._quiet
        if not history:
            # The quiet session's code (always one form of lispshell's own) runs with the
            # person's *1 *2 *3 *e bound. A second, pipelined message could not do it: nREPL
            # handles each message in its own future, so two may reach the session's queue in
            # either order. The newline keeps a trailing comment from eating the paren.
            code = f"(clojure.core/with-bindings ({HISTORY} {string_literal(self._sid)}) {code}\n)"
        message = {"op": "eval", "code": code, "session": sid,
                   "nrepl.middleware.caught/caught": CAUGHT,
                   "nrepl.middleware.print/print": PRINT,
                   "nrepl.middleware.print/quota": max(1, value_cap)}
        if not history and self.package:
            message["ns"] = self.package
        rid = self._send_new(message)
        return self._wait_eval(sid, rid, timeout, answer, history, value_cap, started)

    def _wait_eval(self, sid, rid, timeout, answer, history, value_cap, started) -> EvalResult:
        """Read request `rid`'s replies until it is done (its result), or until it runs into a
        breakpoint (a level: the result says so, the request stays pending)."""
        self._current = (sid, rid)
        clock = EvalClock(self, timeout, started)
        value, failed, interrupted, truncated, gave_up = None, False, False, False, False
        problem = None
        while True:
            held = self._held.get(rid)
            m = held.pop(0) if held else self._next(clock.wake_at())
            if m is None:
                step = clock.tick()
                if step == "give-up":     # a deadline's eval ignored the interrupt
                    gave_up = True
                    break
                if step:                  # the deadline passed, or the interrupt is late
                    self._send_interrupt()
                continue
            if not isinstance(m, dict) or m.get("id") != rid:
                self._hold(m)          # a level's pending eval, or a late reply given up on
                continue
            if "out" in m and HIT in str(m["out"]):
                before, _, rest = str(m["out"]).partition(HIT)
                hit_id, _, rest = rest.partition(" ")
                answer.add(before)
                if hit_id.isdigit():
                    return self._entered_hit(hit_id, (sid, rid), answer, started)
                m = dict(m, out=rest)
            if "out" in m:
                answer.add(str(m["out"]))
            if "err" in m:
                answer.add(str(m["err"]))
            if "value" in m:
                value = str(m["value"])
            if history and "ns" in m:
                self.package = str(m["ns"])
            status = m.get("status") or []
            if "eval-error" in status:
                failed = True
            if "interrupted" in status:
                interrupted = True
            if "nrepl.middleware.print/truncated" in status:
                truncated = True
            if "need-input" in status:
                # The code reads *in*: whoever evaluates answers (session.py's read_input); an
                # empty stdin is end of file to nREPL, Ctrl-C its interrupt op.
                kind, text = answer.read_input()
                if kind == "x":
                    self._send_interrupt()
                else:
                    self._send({"op": "stdin", "stdin": text, "session": sid,
                                "id": secrets.token_hex(6)})
            if "namespace-not-found" in status:
                problem = LispError("namespace-not-found",
                                    f"No namespace {m.get('ns') or self.package!r} in the image.")
            if "done" in status:
                break
        error = problem
        timed_out = clock.timed_out
        if timed_out or interrupted:
            if gave_up:
                error = LispError("timeout", f"Evaluation timed out after {timeout:g} s and did "
                                  "not answer the interrupt; it may still be running in the "
                                  "image (lispshell never kills an image it did not start).")
            elif timed_out:
                error = LispError("timeout", f"Evaluation timed out after {timeout:g} s and was "
                                  "interrupted; the image is still running with its definitions.")
            else:
                error = LispError(self.dialect.interrupt_type, "Interrupted")
            value = None
        elif failed:
            error = self._error_report(rid)
            value = None
            if error.message.startswith(ABORTED):      # ,abort at a breakpoint's level
                where = f"debug level {self.level}" if self.level else "the top level"
                error = LispError("LISPSHELL-ABORTED", f"Back at {where}.")
        values = [] if value is None else [value + ("... [truncated: the value was longer than "
                                                    f"{value_cap} characters]" if truncated else "")]
        return EvalResult(output=answer.text_output(), values=values, error=error,
                          output_dropped=answer.dropped, timed_out=timed_out,
                          interrupted=interrupted and not timed_out,
                          package=self.package, elapsed=time.monotonic() - started,
                          input_refused=answer.input_refused, level=self.level)

    # -- breakpoint levels ---------------------------------------------------------------------
    def _ask(self, code: str) -> tuple[str, LispError | None]:
        """Output of lispshell's own `code` on the quiet session, and its error if it failed."""
        rid = self._send_new({"op": "eval", "code": code, "session": self._quiet,
                              "ns": self.package or "user",
                              "nrepl.middleware.caught/caught": CAUGHT})
        out, failed = [], False
        for m in self._replies(rid, time.monotonic() + 30.0):
            out.append(str(m.get("out", "")))
            failed = failed or "eval-error" in (m.get("status") or [])
        return "".join(out), self._error_report(rid) if failed else None

    def _parked(self) -> list[tuple[str, str, list[str], str]]:
        """(id, thread, restarts, message) of each hit waiting in the image."""
        out, _ = self._ask("(lispshell.debug/parked-lines)")
        return parse_parked(out)

    def _entered_hit(self, hit_id: str, pending, answer, started) -> EvalResult:
        hit = _Hit(hit_id, pending)
        self._hits.append(hit)          # first: the pending eval's replies read now are held
        parked = {h[0]: h for h in self._parked()}
        _, _, restarts, message = parked.get(hit_id, (hit_id, "", [], f"breakpoint hit {hit_id}"))
        outer = len(self._hits) - 1
        where = f"debug level {outer}" if outer else "the top level"
        if restarts and restarts[-1].startswith("ABORT\t"):
            restarts = restarts[:-1] + [f"ABORT\tReturn to {where}."]
        error = LispError(level_kind(restarts), message, [], restarts)
        self._levels.errors.append(error)
        self._current = None
        return EvalResult(output=answer.text_output(), error=error, package=self.package,
                          level=self.level, elapsed=time.monotonic() - started,
                          output_dropped=answer.dropped)

    def _abort_index(self) -> int:
        """The number of the innermost level's ABORT: its last restart (`_entered_hit`), or
        a breakpoint's (CONTINUE, RETURN-VALUE, ABORT) when the image said none."""
        return len(self.restarts) - 1 if self.restarts else 2

    def _at_hit(self):
        if not self._hits:
            # (nREPL has levels only at a breakpoint's hit: `capabilities.levels` is False)
            raise NotOverThisTransport(f"a debug level is not available over {self.transport} "
                                       "except at a breakpoint's hit (,break NAME)")
        return self._hits[-1]

    def _resume(self, n: int, argument: str = "", *, on_output=None, value_cap=None,
                on_input=None, **_) -> EvalResult:
        with self._lock:
            hit = self._at_hit()
            last = self._abort_index()          # the restarts end with ABORT
            if not 0 <= n <= last:
                raise ValueError(f"choose a restart from 0 to {last}")

            def resume(answer, started, cap):
                _, error = self._ask(f"(lispshell.debug/resume {int(hit.id)} {n} "
                                     f"{string_literal(argument)})")
                if error is not None:         # the value did not evaluate: still waiting
                    return EvalResult(error=error, package=self.package, level=self.level)
                self._hits.pop()
                del self._levels.errors[len(self._hits):]
                if hit.pending is None:
                    return EvalResult(output="; the thread goes on\n", package=self.package,
                                      level=self.level)
                sid, rid = hit.pending
                return self._wait_eval(sid, rid, None, answer, sid == self._sid, cap, started)
            return self._run_holding_lock(resume, None, on_output, value_cap, True, on_input)

    def eval(self, code: str, *, keep_levels: bool = False, **kw) -> EvalResult:
        before = len(self._hits)
        evaluated_in = self.package
        result = super().eval(code, keep_levels=keep_levels, **kw)
        if kw.get("history", True) and result.error is None:
            # the person's defns, for ,step of a function defined at the prompt
            stepping.remember(self, code, evaluated_in)
        if not keep_levels and len(self._hits) > before:
            # Batch runs and MCP keep no level: the call is left at once, as the answer says.
            while len(self._hits) > before:
                self._resume(self._abort_index())
            result.level = self.level
        return result

    @property
    def other_debuggers(self) -> list[tuple]:
        """Breakpoint hits parked in threads of the image that are not a level of ours."""
        if not self.ready or self.busy or not self._lock.acquire(timeout=1.0):
            return []
        try:
            parked = self._parked()
        except (Lost, TimeoutError):
            return []
        finally:
            self._lock.release()
        mine = {h.id for h in self._hits}
        others = [p for p in parked if p[0] not in mine]
        self._other_ids = [p[0] for p in others]
        return [(thread, 1, message.split("\n")[0], restarts)
                for _, thread, restarts, message in others]

    def enter_thread(self, index: int) -> LispError:
        others = self.other_debuggers
        if not 0 <= index < len(others):
            raise ValueError(f"no other thread's breakpoint {index}" + (
                f": choose 0 to {len(others) - 1}" if others else ": none is waiting"))
        hit_id = self._other_ids[index]
        message = next(p[3] for p in self._parked() if p[0] == hit_id)
        error = LispError(level_kind(others[index][3]), message, [], list(others[index][3]))
        self._hits.append(_Hit(hit_id, None))
        self._levels.errors.append(error)
        return error

    def invoke_restart(self, index: int, argument: str = "", **kw) -> EvalResult:
        return self._resume(int(index), argument, **kw)

    def step_form(self, code: str) -> str:
        return stepping.step_form(self, code)

    def step(self, how: str, **kw) -> EvalResult:
        return stepping.step(self, how, **kw)

    def leave_level(self, **kw) -> EvalResult:
        return self._resume(self._abort_index(), **kw)

    def top(self, **kw) -> EvalResult:
        self._at_hit()
        result = None
        while self._hits:
            result = self._resume(self._abort_index(), **kw)
        return result

    def _frames_of_hit(self, op: str, n: int | None) -> str:
        with self._lock:
            hit = self._at_hit()
            out, error = self._ask(f"(lispshell.debug/frames-at {int(hit.id)} {string_literal(op)} "
                                   f"{'nil' if n is None else int(n)})")
        if error is not None:
            raise ValueError(error.message.split(" {")[0])
        return out

    def backtrace(self):
        return parse_frames(self._frames_of_hit("bt", None).splitlines())

    def frame_locals(self, index: int):
        return parse_locals(self._frames_of_hit("locals", index).splitlines())

    def frame_source(self, index: int) -> str:
        return self._frames_of_hit("source", index).strip()

    def eval_in_frame(self, index: int, code: str, **kw) -> EvalResult:
        hit = self._at_hit()
        if int(index) != 0:
            raise ValueError("only frame 0, the call, has locals on Clojure")
        kw.pop("keep_levels", None)
        # an eval at the level is already evaluated with the hit's locals bound
        del hit
        return self.eval(code, keep_levels=True, **kw)

    def _error_report(self, rid: str) -> LispError:
        """The type, message and frames our `caught` hook kept for request `rid`."""
        ask = self._send_new({"op": "eval", "session": self._quiet,
                              "code": f"(lispshell.nrepl/take-error {string_literal(rid)})"})
        out = []
        try:
            for m in self._replies(ask, time.monotonic() + 10.0):
                out.append(str(m.get("out", "")))
        except TimeoutError:
            pass
        parts = "".join(out).split("\x1f")
        if len(parts) < 2:
            return LispError("error", "The evaluation failed (the image gave no details).")
        return LispError(parts[0], parts[1], parts[2:])

    # -- interrupt, completions -----------------------------------------------------------------
    def _interruptible(self) -> bool:
        return self.busy and self._current is not None

    def _send_interrupt(self) -> None:
        current = self._current
        if current is None:
            return
        if self._interrupt_at is None:
            self._interrupt_at = time.monotonic()
        try:
            self._send({"op": "interrupt", "session": current[0], "interrupt-id": current[1],
                        "id": secrets.token_hex(6)})
        except Lost:
            pass   # the eval's own read notices

    def completions(self, prefix: str, kind: str = "symbol") -> list[str]:
        if kind != "symbol" or not self.ready or self.busy \
                or not self._lock.acquire(blocking=False):
            return []
        try:
            rid = self._send_new({"op": "completions", "prefix": prefix, "session": self._quiet,
                                  "ns": self.package or "user"})
            names = []
            for m in self._replies(rid, time.monotonic() + 2.0):
                for c in m.get("completions") or []:
                    if isinstance(c, dict) and isinstance(c.get("candidate"), str):
                        names.append(c["candidate"])
            return names
        except TimeoutError:
            return []
        except Lost as exc:
            self._lost(str(exc))
            return []
        finally:
            self._lock.release()
