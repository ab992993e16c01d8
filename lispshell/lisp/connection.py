"""Connections to a Lisp image someone else started: the transports beside the pty child.

A transport is how lispshell reaches a Lisp; the dialect (`dialects.py`) is what the Lisp is.
Each transport is a few lines of data in `TRANSPORTS` plus one module:

    nrepl://host:port            Clojure's nREPL (bencode over TCP)           nrepl.py
    swank://host:port            SLIME's Swank, Common Lisp                   swank.py
    guile://host:port            Guile's REPL server (`guile --listen`)       guile_server.py
    guile:///path/to/socket      the same over a Unix socket

A connection offers the same interface as `session.LispSession` (eval, interrupt, completions,
start, close, alive, ready, busy, package, lisp), so the REPL, the tools and MCP need not ask
which they have. What differs is what lispshell may do to the image: nothing beyond sending it
code. It never kills or restarts a connected image: a lost connection ends the eval with a
`connection-lost` error, `alive` turns false, and `reconnect()` (`,reconnect`) opens a new one
to the same address. `close()` (`,disconnect`) leaves the image running.
"""
from __future__ import annotations

import os
import re
import socket
import threading
from dataclasses import dataclass

import time

from lispshell.lisp.dialects import get_dialect
from lispshell.config import session_settings
from lispshell.lisp.channel import Lost
from lispshell.lisp.contract import Capabilities, Session
from lispshell.lisp.session import EvalResult, LispError, LispStartError, _Answer


@dataclass(frozen=True)
class Transport:
    scheme: str          # the URL scheme
    lisp: str            # the dialect it speaks
    module: str          # lispshell.lisp.<module>.Session is its session class
    interrupt: str       # how Ctrl-C reaches the running eval (for ,help and the docs)


TRANSPORTS = {t.scheme: t for t in (
    Transport("nrepl", "clojure", "nrepl", "nREPL's interrupt op"),
    Transport("swank", "sbcl", "swank", "Swank's :emacs-interrupt; the debugger it opens is "
                                        "answered with the abort restart"),
    Transport("guile", "guile", "guile_server", "a second connection that interrupts the "
                                                "first one's thread"),
)}

# Said with every lost connection. The same message reaches the REPL, a batch run and the
# model over MCP, where `,reconnect` alone would be an instruction it cannot follow.
RECONNECT = ",reconnect in the REPL connects again (lispshell mcp does so on its next call)"
GIVEN_UP = ("closed at your word: the interrupt had not landed, and the evaluation runs on in "
            "the image")


class ConnectError(LispStartError):
    """No connection could be made (a bad URL, nothing listening, not the expected protocol)."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str = ""
    port: int = 0
    path: str = ""       # a Unix socket (guile:///path)

    @property
    def url(self) -> str:
        if self.path:
            return f"{self.scheme}://{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def transport(self) -> Transport:
        return TRANSPORTS[self.scheme]

    @property
    def lisp(self) -> str:
        return self.transport.lisp


def parse_target(text: str) -> Target:
    """A Target from `--connect`'s argument: a URL or a bare port (nREPL on this machine). No
    argument at all means the project's port file: `workspace.project.connect_target`.
    Raises ConnectError."""
    text = (text or "").strip()
    if not text:
        raise ConnectError("no address given; give one, e.g. --connect nrepl://localhost:7888")
    if text.isdigit():
        return Target("nrepl", "127.0.0.1", _port(text, text))
    m = re.fullmatch(r"([a-z]+)://(.*)", text)
    if not m or m[1] not in TRANSPORTS:
        known = ", ".join(f"{s}://" for s in TRANSPORTS)
        raise ConnectError(f"cannot connect to {text!r}: expected a URL starting with {known} "
                           "or a port number")
    scheme, rest = m[1], m[2]
    if rest.startswith("/"):
        if scheme != "guile":
            raise ConnectError(f"{scheme}:// takes host:port, not a socket path")
        return Target(scheme, path=rest)
    hm = re.fullmatch(r"\[([0-9a-fA-F:.]+)\]:(\d+)/?|([^:/\[\]]+):(\d+)/?", rest)
    if not hm:
        raise ConnectError(f"cannot connect to {text!r}: expected {scheme}://HOST:PORT")
    host = hm[1] or hm[3]
    return Target(scheme, host, _port(hm[2] or hm[4], text))


def _port(digits: str, text: str) -> int:
    port = int(digits)
    if not 0 < port < 65536:
        raise ConnectError(f"cannot connect to {text!r}: {port} is not a port number")
    return port




def _listeners(port: int) -> set[int]:
    """The uids owning a socket that listens on `port` on this machine (/proc/net/tcp and
    tcp6: state 0A is LISTEN; the eighth column is the owner's uid)."""
    owners: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii", errors="replace") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8 or fields[3] != "0A":
                continue
            try:
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    owners.add(int(fields[7]))
            except ValueError:
                continue
    return owners


def check_listener(target: Target) -> None:
    """Refuse a port on this machine that another user listens on, before anything is sent:
    the person's own stale `.nrepl-port` may name a port someone else took since, and their
    code (and what they type) would go to that someone. Remote hosts are the person's choice
    of address; a Unix socket is checked by its owner."""
    import ipaddress
    import pwd

    if target.path:
        try:
            st = os.stat(target.path)
        except OSError:
            return                        # the connect says what is wrong
        owners = {st.st_uid}
    else:
        try:
            infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
            loopback = all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)
        except (OSError, ValueError):
            return
        if not loopback:
            return
        owners = _listeners(target.port)
    others = sorted(uid for uid in owners if uid != os.geteuid())
    if not others:
        return
    names = []
    for uid in others:
        try:
            names.append(pwd.getpwuid(uid).pw_name)
        except KeyError:
            names.append(f"uid {uid}")
    raise ConnectError(f"not connecting to {target.url}: it is another user's "
                       f"({', '.join(names)}), not yours, so your code and what you type would "
                       "go to them. A stale .nrepl-port names a port someone else may hold "
                       "now: start your server again, or give your own address.")


def open_socket(target: Target, timeout: float) -> socket.socket:
    """A connected socket to `target` (TCP or Unix), blocking, with no timeout once open;
    refused when another user listens there (`check_listener`)."""
    check_listener(target)
    try:
        if target.path:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(target.path)
        else:
            sock = socket.create_connection((target.host, target.port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError as exc:
        raise ConnectError(f"cannot connect to {target.url}: {exc.strerror or exc}") from None
    sock.settimeout(None)
    return sock


class Connection(Session):
    """What every transport shares: the address, the state the REPL shows, the locks, and
    the rule that a lost connection is reported and never 'restarted'."""

    is_connection = True
    pid = None            # not ours: there is no process lispshell could signal
    capabilities = Capabilities(reconnect=True)

    def __init__(self, target: Target, *, eval_timeout: float = 30.0, output_cap: int = 65536,
                 interrupt_grace: float = 2.0, connect_timeout: float = 10.0):
        self.target = target
        self.url = target.url
        self.transport = f"{target.scheme} ({target.url})"
        self.lisp = target.lisp
        self.dialect = get_dialect(self.lisp)
        self.eval_timeout = eval_timeout
        self.output_cap = output_cap
        self.interrupt_grace = interrupt_grace
        self.connect_timeout = connect_timeout
        self.package = ""
        self.busy = False
        self.ready = False
        self.generation = 0
        self.lost_reason = ""          # why the last connection ended, if it did
        self._lock = threading.Lock()          # one exchange at a time
        self._send_lock = threading.Lock()     # interrupts are sent from other threads
        self._closed = False
        self._given_up = False                 # the person's Ctrl-C closed the connection
        self._interrupt_at: float | None = None
        self._keep_levels = False          # set for the duration of one eval (see eval)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, wait: bool = True) -> None:
        """Connect (if not connected). `wait` is accepted for the LispSession interface:
        connecting is quick, so it always waits. Raises ConnectError."""
        with self._lock:
            if not self.ready:
                self._closed = False
                self._connect()
                self.generation += 1
                self.ready = True
                self.lost_reason = ""

    def reconnect(self) -> None:
        """Drop the connection (if any) and open a new one to the same address."""
        with self._lock:
            self._drop()
        self.start()

    def restart(self) -> None:
        raise LispStartError(f"lispshell does not restart an image it did not start "
                             f"({self.url}); ,reconnect opens a new connection to it")

    def close(self) -> None:
        """Disconnect; the image keeps running."""
        self._closed = True
        with self._lock:
            self._drop()

    def _lost(self, why: str) -> None:
        """The connection broke: forget it (the image itself is not touched)."""
        if self._given_up:
            why, self._given_up = GIVEN_UP, False
        self.lost_reason = why
        self._drop()

    # interrupt() is the contract's; the person's Ctrl-C after the grace closes the connection:
    # the eval's read ends at once, and the image runs on, that evaluation included.
    def _give_up(self) -> None:
        self._given_up = True
        self._shut_socket()

    # -- the socket (nREPL's and Swank's; Guile's server speaks through a channel) ----------
    def _write(self, data: bytes) -> None:
        """Send `data` whole. Interrupts and pongs are sent from other threads than the
        eval's: one writer at a time, so two messages never interleave. Raises Lost."""
        sock = getattr(self, "_sock", None)
        if sock is None:
            raise Lost("not connected")
        with self._send_lock:
            try:
                sock.sendall(data)
            except OSError as exc:
                raise Lost(exc.strerror or str(exc)) from None

    def _shut_socket(self) -> None:
        """End both directions now, from any thread: a read waiting on the socket returns
        at once and reports the connection lost."""
        sock = getattr(self, "_sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _close_socket(self) -> None:
        """Forget the socket and close it (a connection dropped or closed)."""
        sock, self._sock = getattr(self, "_sock", None), None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def lost_result(self, answer, started: float, elapsed: float) -> EvalResult:
        why = f" ({self.lost_reason})" if self.lost_reason else ""
        message = (f"The connection to {self.url} was lost{why}. lispshell did not touch the "
                   f"image; {RECONNECT}.")
        return EvalResult(output=answer.text_output() if answer else "", values=[],
                          error=LispError("connection-lost", message),
                          output_dropped=answer.dropped if answer else 0,
                          package=self.package, elapsed=elapsed)

    def not_connected(self) -> EvalResult:
        why = f" ({self.lost_reason})" if self.lost_reason else ""
        return EvalResult(error=LispError(
            "not-connected", f"Not connected to {self.url}{why}; {RECONNECT}."),
            package=self.package)

    # -- eval -------------------------------------------------------------------------------------
    def eval(self, code: str, *, timeout: float | None = None, output_cap: int | None = None,
             on_output=None, history: bool = True, value_cap: int | None = None,
             keep_levels: bool = False, on_input=None) -> EvalResult:
        """As `LispSession.eval`: one eval at a time; a lost connection is an error result.
        `keep_levels`: a transport with debug levels (Swank) keeps an error waiting.
        `on_input` answers the code's reads of standard input, as on a child."""
        with self._lock:
            self._keep_levels = keep_levels
            try:
                return self._eval_holding_lock(code, timeout, output_cap, on_output, history,
                                               value_cap, busy=True, on_input=on_input)
            finally:
                self._keep_levels = False

    def try_eval(self, code: str, timeout: float = 2.0, output_cap: int = 1 << 16,
                 wait: float = 0.0):
        """As `LispSession.try_eval`: None at once (or after `wait`) if the image is busy."""
        if not self.ready or self.busy or not self._lock.acquire(timeout=wait):
            return None
        try:
            if not self.ready:
                return None
            return self._eval_holding_lock(code, timeout, output_cap, None, False, None,
                                           busy=False)
        finally:
            self._lock.release()

    def _eval_holding_lock(self, code, timeout, output_cap, on_output, history, value_cap,
                           busy: bool, on_input=None) -> EvalResult:
        return self._run_holding_lock(
            lambda answer, started, cap: self._eval_locked(code, timeout, answer, history, cap,
                                                           started),
            output_cap, on_output, value_cap, busy, on_input)

    def _run_holding_lock(self, work, output_cap, on_output, value_cap, busy: bool,
                          on_input=None) -> EvalResult:
        """Run `work(answer, started, value_cap)`, which sends one request and waits for its
        result, as an eval: not at all when not connected, interruptible while `busy`, a lost
        connection said as such, and the eval's state forgotten however it ends. The lock is
        the caller's."""
        cap = self.output_cap if output_cap is None else output_cap
        answer = _Answer(cap, on_output, on_input=on_input)
        if not self.ready:
            return self.not_connected()
        started = time.monotonic()
        self.busy = busy            # only the person's and the model's evals can be interrupted
        self._interrupt_at = None
        try:
            return work(answer, started, cap if value_cap is None else value_cap)
        except Lost as exc:
            self._lost(str(exc))
            return self.lost_result(answer, started, time.monotonic() - started)
        finally:
            self.busy = False
            self._interrupt_at = None
            self._eval_ended()

    # -- what each transport provides -------------------------------------------------------
    def _connect(self) -> None:
        raise NotImplementedError

    def _eval_locked(self, code, timeout, answer, history, value_cap, started) -> EvalResult:
        raise NotImplementedError

    def _eval_ended(self) -> None:
        """Forget the eval that just ended (its id, its thread)."""

    def _drop(self) -> None:
        """Close the socket(s); called with the lock held. Must not raise."""
        raise NotImplementedError

    def __repr__(self) -> str:
        state = "busy" if self.busy else ("connected" if self.ready else "not connected")
        return f"<{type(self).__name__} {self.url} {state} package={self.package!r}>"

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()


def connect_session(target: Target | str | None, config: dict, start: bool = True):
    """A session on `target` (a Target, or `--connect`'s text), built from the configuration's
    [session] settings; connected unless start=False. Raises ConnectError."""
    import importlib

    if not isinstance(target, Target):
        target = parse_target(target)
    settings = session_settings(config)
    module = importlib.import_module(f"lispshell.lisp.{target.transport.module}")
    session = module.Session(target, eval_timeout=settings.eval_timeout,
                             output_cap=settings.output_cap,
                             interrupt_grace=settings.interrupt_grace,
                             connect_timeout=settings.connect_timeout)
    if start:
        session.start()
    return session
