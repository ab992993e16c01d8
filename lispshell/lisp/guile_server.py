"""Guile's REPL server: a Guile image reached over `guile --listen` or `(spawn-server)`
(`guile://host:port`, or `guile:///path/to/socket` for a Unix socket).

The server gives each client Guile's ordinary REPL on the socket. lispshell does not scrape its
prompt: it drives the client as it drives a pty child (session.py), typing its own framed loop
(image/guile-loop.scm) into that REPL once, with the session's nonce and a token. From then on
requests and framed answers travel over the socket exactly as over the child's pty; only what
the process is differs. It is the person's, so:

- the loop installs no SIGINT handler, and when it ends (disconnect, `(exit)`) it quits only
  its own REPL client, never the process;
- Ctrl-C (and a timeout) cannot signal the process. Instead a second, short-lived client calls
  the interrupt procedure the loop registered under its token (module `(lispshell server)`),
  which marks an async on the loop's thread: the eval stops with "Interrupted" at its next safe
  point. Code blocked in a system call (a `sleep`, a read) stops when that call returns;
- a lost connection, or an eval that ignores the interrupt for `interrupt_grace` seconds, ends
  with a `connection-lost` error and the connection closed; nothing is killed or restarted.
"""
from __future__ import annotations

import secrets
import socket
import threading
import time

from lispshell.lisp.channel import SocketChannel
from lispshell.lisp.connection import RECONNECT, ConnectError, Target, open_socket
from lispshell.lisp.dialects import guile_loop_applied, string_literal
from lispshell.lisp.image import code as image_code
from lispshell.lisp.session import EvalResult, LispError, LispSession, LispStartError, \
    _Answer, _Died


class Session(LispSession):
    is_connection = True
    pid = None

    def __init__(self, target: Target, *, eval_timeout: float = 30.0, output_cap: int = 65536,
                 interrupt_grace: float = 2.0, connect_timeout: float = 10.0):
        super().__init__("guile", command=["guile"], eval_timeout=eval_timeout,
                         output_cap=output_cap, interrupt_grace=interrupt_grace,
                         boot_timeout=max(connect_timeout, 60.0))
        self.target = target
        self.url = target.url
        self.transport = f"Guile's REPL server ({target.url})"
        self.connect_timeout = connect_timeout
        self.lost_reason = ""
        self._token = ""

    # -- connecting ---------------------------------------------------------------------------
    def _boot(self) -> None:
        """Connect and type the loop into the server's REPL; wait for its first frame."""
        self._kill_child()
        nonce = secrets.token_hex(12)
        self._token = secrets.token_hex(12)
        self._attach(SocketChannel(open_socket(self.target, self.connect_timeout)), nonce)
        answer = _Answer(8192, None)
        # The first answer within connect_timeout, and at once if the server's REPL could not
        # run the loop (it enters its own debugger: "Entering a new prompt"), rather than
        # waiting for an answer that never comes.
        deadline = time.monotonic() + self.connect_timeout
        try:
            self._write(guile_loop_applied(image_code(self.dialect.loop_file),
                                           f'"{nonce}" "{self._token}"'))
            while True:
                try:
                    self._read_answer(answer, deadline=min(deadline, time.monotonic() + 0.25))
                    break
                except TimeoutError:
                    if "Entering a new prompt" in answer.text_output():
                        raise TimeoutError("its REPL could not run lispshell's loop") from None
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"no answer within {self.connect_timeout:g} s "
                                           "([session] connect_timeout)") from None
        except (_Died, TimeoutError, OSError) as exc:
            self._kill_child()
            raise ConnectError(f"{self.url} did not answer as a Guile REPL server "
                               f"({str(exc) or 'no answer'}). It printed:\n"
                               f"{answer.text_output()[-2000:]}") from None
        self.package = answer.one("P") or ""
        self.ready = True
        self.lost_reason = ""

    @property
    def alive(self) -> bool:
        return self.ready and self._channel_alive()

    def restart(self) -> None:
        raise LispStartError(f"lispshell does not restart an image it did not start "
                             f"({self.url}); ,reconnect opens a new connection to it")

    def reconnect(self) -> None:
        with self._lock:
            self._closed = False
            self._boot()

    def start(self, wait: bool = True) -> None:
        self._closed = False
        with self._lock:
            if self._channel is None:
                self._boot()

    def close(self) -> None:
        """Disconnect: the loop sees the end of input and ends its client thread; the image
        keeps running. Our side is closed only once the server closed its own: a socket
        closed with bytes unread resets the connection, and the server's REPL prints the
        failed read on the person's console."""
        self._closed = True
        with self._lock:
            channel = self._channel
            if channel is not None:
                _close_gently(channel.sock, self.interrupt_grace + 5)
            self._kill_child()

    # -- what differs from a child --------------------------------------------------------------
    def eval(self, code: str, **kwargs) -> EvalResult:
        if self._channel is not None and not self.busy and not self._channel_alive():
            self.lost_reason = "the server closed the connection"   # while we were idle
            self._kill_child()
            return EvalResult(error=LispError(
                "connection-lost", f"The connection to {self.url} was lost (the server closed "
                f"it). lispshell did not touch the image; {RECONNECT}."),
                package=self.package)
        if self._channel is None:
            why = f" ({self.lost_reason})" if self.lost_reason else ""
            return EvalResult(error=LispError(
                "not-connected", f"Not connected to {self.url}{why}; {RECONNECT}."),
                package=self.package)
        return super().eval(code, **kwargs)

    def _after_death(self, answer, exc, timed_out, timeout, started) -> EvalResult:
        """The connection closed, or the eval ignored the interrupt: report it; never restart."""
        if self._killed_by_person:
            self.lost_reason = "the evaluation did not stop when interrupted"
            message = (f"The evaluation did not stop when interrupted (Guile runs the "
                       "interrupt at its next safe point; a blocking call delays it), and at "
                       "your word lispshell closed its connection; the image runs on, that "
                       f"evaluation included; {RECONNECT}.")
        elif isinstance(exc, _Died):
            self.lost_reason = "the server closed the connection"
            message = (f"The connection to {self.url} was lost ({exc}). lispshell did not touch "
                       f"the image; {RECONNECT}. ((exit) in code ends only this "
                       "REPL client.)")
        else:
            self.lost_reason = "the evaluation did not stop when interrupted"
            what = (f"timed out after {timeout:g} s" if timed_out else "was interrupted")
            message = (f"The evaluation {what}, but did not stop within "
                       f"{self.interrupt_grace:g} s (Guile runs the interrupt at its next safe "
                       "point; a blocking call delays it). lispshell closed its connection and "
                       f"left the image running; {RECONNECT}.")
        self._kill_child()
        return EvalResult(output=answer.text_output(), values=[],
                          error=LispError("connection-lost", message),
                          output_dropped=answer.dropped, timed_out=timed_out,
                          interrupted=self._interrupt_at is not None and not timed_out,
                          package=self.package, elapsed=time.monotonic() - started)

    # interrupt() is the contract's; what it does here:
    def _give_up(self) -> None:
        """The person's Ctrl-C after the grace: close our connection (the eval's read ends at
        once); the image is never touched."""
        self._killed_by_person = True
        channel = self._channel
        if channel is not None:
            channel.shutdown()

    def _send_interrupt(self) -> None:
        """Ask a second client of the server to interrupt our loop's thread (in the
        background: the caller may be the REPL's event loop)."""
        if self._interrupt_at is not None:
            return
        self._interrupt_at = time.monotonic()
        threading.Thread(target=self._interrupt_through_server,
                         args=(self._token, self._request_id),
                         daemon=True, name="lispshell-guile-interrupt").start()

    def _resend_interrupt(self) -> None:
        """Guile keeps the async it was sent until its next safe point: once is enough."""

    def _interrupt_through_server(self, token: str, request_id: str) -> None:
        """Run the loop's interrupter for request `request_id` from a second client: that
        client may get there late, after the eval has ended, and the loop then ignores it."""
        form = ("(let* ((m (resolve-module '(lispshell server) #:ensure #f)) "
                "(table (and m (module-variable m 'interrupters) (module-ref m 'interrupters))) "
                f"(stop (and table (hash-ref table {string_literal(token)})))) "
                f"(when stop (stop {string_literal(request_id)})) "
                "(display \"lispshell-interrupt-sent\") (newline) "
                # This client ends as the loop's do (`end-client`, guile-loop.scm): a REPL
                # that quits makes Guile 3.0.8's server print an error on the console.
                "(when m ((module-ref m 'end-client) (current-output-port))))\n")
        try:
            sock = open_socket(self.target, self.connect_timeout)
        except ConnectError:
            return
        try:
            sock.settimeout(self.interrupt_grace + 5)
            sock.sendall(form.encode("utf-8"))
            # Until the server closes this client (see _close_gently): it has run the form.
            while sock.recv(4096):
                pass
        except OSError:
            pass
        finally:
            sock.close()


def _close_gently(sock, timeout: float) -> None:
    """End our side of a REPL-server connection the way the loop expects: no more input, then
    read what the server still sends until it closes (or `timeout` passes)."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(timeout)
        while sock.recv(65536):
            pass
    except OSError:
        pass
