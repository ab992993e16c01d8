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

Errors: nREPL would print them to `*err*` (`clojure.main/repl-caught`). We name our own hook
instead (`lispshell.nrepl/caught`, lispshell/lisp/image/clojure-nrepl.clj, loaded once per
image) that keeps type, message and frames by request id; after `eval-error` the quiet session
asks for them. Values are printed by nREPL with a quota (the value cap), through our
`pr-bounded` (the child loop's default *print-length* and *print-level*), so `(range)` ends.
"""
from __future__ import annotations

import secrets
import socket
import time

from lispshell.lisp.bencode import DecodeError, Decoder, encode
from lispshell.lisp.channel import Lost, recv
from lispshell.lisp.connection import ConnectError, Connection, open_socket
from lispshell.lisp.contract import EvalClock
from lispshell.lisp.dialects import string_literal
from lispshell.lisp.image import code as image_code
from lispshell.lisp.session import EvalResult, LispError

READ_SIZE = 1 << 16
CLOSE_WAIT = 3.0      # seconds to wait for nREPL to confirm the sessions it was asked to close
CAUGHT = "lispshell.nrepl/caught"
PRINT = "lispshell.nrepl/pr-bounded"
HISTORY = "lispshell.nrepl/history"
NEWEST = "lispshell.nrepl/wrap-input"    # the newest helper: its absence means load them


class Session(Connection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
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
                     + string_literal(image_code("clojure-nrepl.clj")) + ")) (str *ns*))")
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
        sock = getattr(self, "_sock", None)
        self._sock = None
        if self.ready:     # the sessions outlive the socket on the server: close them later
            self._stale += [s for s in (self._sid, self._quiet) if s and s not in self._stale]
        self._sid = self._quiet = None
        self.ready = False
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def close(self) -> None:
        """Disconnect, closing our nREPL sessions (never the server, never the image). A
        running eval is ended first: its socket is shut, so it reports the lost connection,
        and closing its session makes nREPL stop the eval's thread."""
        self._closed = True
        sock = getattr(self, "_sock", None)
        if self.busy and sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
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
            sock, self._sock = self._sock, None
            try:
                sock.close()
            except OSError:
                pass

    # -- the wire ----------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        sock = self._sock
        if sock is None:
            raise Lost("not connected")
        data = encode(message)
        with self._send_lock:
            try:
                sock.sendall(data)
            except OSError as exc:
                raise Lost(exc.strerror or str(exc)) from None

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
                continue
            yield m
            if "done" in (m.get("status") or []):
                return

    # -- eval ---------------------------------------------------------------------------------
    def _eval_ended(self) -> None:
        self._current = None

    def _eval_locked(self, code, timeout, answer, history, value_cap, started) -> EvalResult:
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
        self._current = (sid, rid)
        clock = EvalClock(self, timeout, started)
        value, failed, interrupted, truncated, gave_up = None, False, False, False, False
        problem = None
        while True:
            m = self._next(clock.wake_at())
            if m is None:
                step = clock.tick()
                if step == "give-up":     # a deadline's eval ignored the interrupt
                    gave_up = True
                    break
                if step:                  # the deadline passed, or the interrupt is late
                    self._send_interrupt()
                continue
            if not isinstance(m, dict) or m.get("id") != rid:
                continue               # a late reply to a request given up on earlier
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
        values = [] if value is None else [value + ("... [truncated: the value was longer than "
                                                    f"{value_cap} characters]" if truncated else "")]
        return EvalResult(output=answer.text_output(), values=values, error=error,
                          output_dropped=answer.dropped, timed_out=timed_out,
                          interrupted=interrupted and not timed_out,
                          package=self.package, elapsed=time.monotonic() - started,
                          input_refused=answer.input_refused)

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
