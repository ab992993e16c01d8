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

import codecs
import secrets
import select
import socket
import threading
import time
from types import SimpleNamespace

from lispshell.lisp.connection import RECONNECT, ConnectError, Target, open_socket
from lispshell.lisp.dialects import string_literal
from lispshell.lisp.image import code as image_code
from lispshell.lisp.session import MARK, EvalResult, LispError, LispSession, LispStartError, \
    _Answer, _Died


class _Socket:
    """Stands where session.py keeps its pexpect child: what the read and write paths use."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.child_fd = sock.fileno()
        self.ptyproc = SimpleNamespace(terminated=False)   # never: a closed socket reads EOF


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
        sock = open_socket(self.target, self.connect_timeout)
        self._child = _Socket(sock)
        self._fd = sock.fileno()
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        nonce = secrets.token_hex(12)
        self._token = secrets.token_hex(12)
        self._marker = MARK + nonce
        self._seq = 0
        self._request_id = "0"
        self.generation += 1
        answer = _Answer(8192, None)
        # The first answer within connect_timeout, and at once if the server's REPL could not
        # run the loop (it enters its own debugger: "Entering a new prompt"), rather than
        # waiting for an answer that never comes.
        deadline = time.monotonic() + self.connect_timeout
        try:
            self._write("(" + image_code(self.dialect.loop_file)
                        + f' "{nonce}" "{self._token}")\n')
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

    def _kill_child(self, reap: bool = True) -> None:
        """Close our connection. The process is not ours: it is never signalled."""
        child = self._child
        self.ready = False
        if child is None:
            return
        self._child = None
        try:
            child.sock.close()
        except OSError:
            pass

    def _child_alive(self) -> bool:
        child = self._child
        if child is None:
            return False
        try:
            readable, _, _ = select.select([child.sock], [], [], 0)
            return not readable or child.sock.recv(1, socket.MSG_PEEK) != b""
        except OSError:
            return False

    @property
    def alive(self) -> bool:
        return self.ready and self._child_alive()

    def _exit_status(self) -> str:
        return "the connection closed"

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
            if self._child is None:
                self._boot()

    def close(self) -> None:
        """Disconnect: the loop sees the end of input and ends its client thread; the image
        keeps running. Our side is closed only once the server closed its own: a socket
        closed with bytes unread resets the connection, and the server's REPL prints the
        failed read on the person's console."""
        self._closed = True
        with self._lock:
            child = self._child
            if child is not None:
                _close_gently(child.sock, self.interrupt_grace + 5)
            self._kill_child()

    # -- what differs from a child --------------------------------------------------------------
    def eval(self, code: str, **kwargs) -> EvalResult:
        if self._child is not None and not self.busy and not self._child_alive():
            self.lost_reason = "the server closed the connection"   # while we were idle
            self._kill_child()
            return EvalResult(error=LispError(
                "connection-lost", f"The connection to {self.url} was lost (the server closed "
                f"it). lispshell did not touch the image; {RECONNECT}."),
                package=self.package)
        if self._child is None:
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
        child = self._child
        if child is not None:
            try:
                child.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _send_interrupt(self) -> None:
        """Ask a second client of the server to interrupt our loop's thread (in the
        background: the caller may be the REPL's event loop)."""
        if self._interrupt_at is not None:
            return
        self._interrupt_at = time.monotonic()
        threading.Thread(target=self._interrupt_through_server, args=(self._token,),
                         daemon=True, name="lispshell-guile-interrupt").start()

    def _resend_interrupt(self) -> None:
        """Guile keeps the async it was sent until its next safe point: once is enough."""

    def _interrupt_through_server(self, token: str) -> None:
        form = ("(let* ((m (resolve-module '(lispshell server) #:ensure #f)) "
                "(table (and m (module-variable m 'interrupters) (module-ref m 'interrupters))) "
                f"(stop (and table (hash-ref table {string_literal(token)})))) "
                "(when stop (stop)) (display \"lispshell-interrupt-sent\") (newline) "
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
