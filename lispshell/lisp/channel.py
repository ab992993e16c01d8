"""Channels: the bytes' way to a Lisp, apart from what the bytes say (the protocol).

A channel is a file descriptor to read and write, and what ends it. The framed loop protocol
(session.py: requests `<kind><length> <id>`, answers framed by the session's marker) runs over
either of two:

  PtyChannel      a child process lispshell started, on a pseudo-terminal (pexpect)
  SocketChannel   a client connection to Guile's REPL server, where the loop was typed in

nREPL and Swank speak their own protocols over a plain socket; they share `recv` (one read
with a deadline) with nothing else. As pexpect's replwrap keeps the REPL's prompt apart from
the spawn, and nREPL its transports apart from its messages: what differs between a child and
a connection is here, and only here.
"""
from __future__ import annotations

import errno
import math
import os
import select
import signal
import socket
import time

import pexpect

READ_SIZE = 1 << 16   # per read: big enough for throughput, small enough not to mmap each time


class Lost(Exception):
    """The connection broke, or the peer spoke something other than its protocol."""


class PtyChannel:
    """A child process on a pty, in raw mode, leading its own process group."""

    is_process = True

    def __init__(self, child: pexpect.spawn):
        self.child = child
        self.fd = child.child_fd
        self.pid = child.pid
        os.set_blocking(self.fd, False)

    @classmethod
    def spawn(cls, command: list[str], env: dict[str, str], preexec_fn) -> "PtyChannel":
        """Raises pexpect.ExceptionPexpect or OSError when the command cannot start."""
        child = pexpect.spawn(command[0], command[1:], env=env, echo=False, encoding=None,
                              maxread=1 << 20, timeout=None, preexec_fn=preexec_fn)
        child.delaybeforesend = None
        child.delayafterread = None
        child.delayafterclose = 0
        child.delayafterterminate = 0
        child.ptyproc.delayafterclose = 0
        child.ptyproc.delayafterterminate = 0
        return cls(child)

    @property
    def ended(self) -> bool:
        """Already seen to have ended (no system call)."""
        return self.child.ptyproc.terminated

    @property
    def exitstatus(self) -> int | None:
        return self.child.exitstatus

    def alive(self) -> bool:
        return not self._reap(block=False)

    def interrupt(self) -> None:
        try:
            os.kill(self.pid, signal.SIGINT)
        except OSError:
            pass

    def kill(self, reap: bool = True) -> None:
        """SIGKILL to its process group; with `reap`, wait for it and free the pty."""
        if not self.pid or self.pid <= 1:   # never signal init or our own group by mistake
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        if not reap:
            return
        self._reap(block=True)   # SIGKILL cannot be refused, so this is quick
        try:
            self.child.close(force=True)
        except Exception:
            pass

    def _reap(self, block: bool) -> bool:
        """True once the child has exited (reaping it). A bare waitpid: pexpect's isalive()
        costs more than the rest of a small eval."""
        child = self.child
        if child.ptyproc.terminated:
            return True
        try:
            pid, status = os.waitpid(child.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            pid, status = child.pid, None
        if pid == 0:
            return False
        # Tell pexpect, so that its close() does not wait for the process again.
        proc = child.ptyproc
        proc.terminated = child.terminated = True
        proc.status = child.status = status
        if status is not None and os.WIFSIGNALED(status):
            proc.signalstatus = child.signalstatus = os.WTERMSIG(status)
        elif status is not None:
            proc.exitstatus = child.exitstatus = os.waitstatus_to_exitcode(status)
        return True

    def exit_status(self) -> str:
        """How the child ended, waiting up to a second for it to finish dying."""
        for _ in range(100):
            if self._reap(block=False):
                break
            time.sleep(0.01)
        if self.child.signalstatus is not None:
            return f"killed by signal {self.child.signalstatus}"
        if self.child.exitstatus is not None:
            return f"exit status {self.child.exitstatus}"
        return "still running, unresponsive"


class SocketChannel:
    """A client connection to a REPL server: the process is the person's, never signalled."""

    is_process = False
    pid = None
    exitstatus = None
    ended = False        # a closed socket reads end of file: noticed there

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.fd = sock.fileno()

    def alive(self) -> bool:
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return not readable or self.sock.recv(1, socket.MSG_PEEK) != b""
        except OSError:
            return False

    def interrupt(self) -> None:
        """A socket carries no signal: the session interrupts through the server."""

    def shutdown(self) -> None:
        """End both directions now: a read waiting on it returns end of file."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def kill(self, reap: bool = True) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def exit_status(self) -> str:
        return "the connection closed"


def read_some(fd: int, poller, deadline: float | None) -> bytes | None:
    """Bytes from a channel's (non-blocking) fd; b"" at end of file; None once `deadline`
    passes."""
    while True:
        wait = None
        if deadline is not None:
            wait = max(0, math.ceil((deadline - time.monotonic()) * 1000))
        events = poller.poll(wait)
        if events:
            try:
                return os.read(fd, READ_SIZE)
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.ECONNRESET):  # the pty's (or socket's) other
                    return b""                                     # side is gone
                raise
        if deadline is not None and time.monotonic() >= deadline:
            return None


def recv(sock: socket.socket | None, deadline: float | None) -> bytes | None:
    """One read from a protocol's socket (nREPL, Swank): bytes, or None once `deadline`
    passes. Raises Lost when the peer closed or the socket failed."""
    if sock is None:
        raise Lost("not connected")
    wait = None if deadline is None else max(0.0, deadline - time.monotonic())
    try:
        readable, _, _ = select.select([sock], [], [], wait)
    except (OSError, ValueError) as exc:
        raise Lost(str(exc)) from None
    if not readable:
        return None
    quick_ack(sock)
    try:
        data = sock.recv(READ_SIZE)
    except OSError as exc:
        raise Lost(exc.strerror or str(exc)) from None
    if not data:
        raise Lost("the server closed the connection")
    return data


def quick_ack(sock: socket.socket) -> None:
    """Acknowledge at once what arrives next (Linux). Servers that answer in several small
    writes (nREPL's value then `done`, a REPL's result then its prompt) without TCP_NODELAY
    otherwise wait for our delayed ACK, 40 ms per eval. The kernel resets it, so it is set
    before each read."""
    if sock.family != socket.AF_UNIX and hasattr(socket, "TCP_QUICKACK"):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        except OSError:
            pass
