"""Real network REPL servers for the connection tests, started the way a person starts them:
nREPL (Debian's libnrepl-clojure), Swank (cl-swank, in SBCL) and Guile's `--listen`. Each runs
in its own process group, on loopback, and is killed by the test that started it."""
from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

NREPL = ("(require 'nrepl.server) "
         "(let [s (nrepl.server/start-server :port 0 :bind \"127.0.0.1\")] "
         "(println \"LISTENING\" (:port s)) (flush) @(promise))")
SWANK_LOADER = "/usr/share/common-lisp/source/slime/swank-loader.lisp"


# The servers running now: a failing test's report shows what each printed last
# (conftest.py), a debugger banner or a load error being the usual why.
LIVE: set["Server"] = set()


class Server:
    def __init__(self, kind: str, tmp: Path, port: int | None = None):
        self.kind = kind
        self.tmp = tmp
        self.fixed_port = port      # guile only: listen on this port (a server started again)
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.printed: collections.deque[str] = collections.deque(maxlen=500)

    def start(self, timeout: float = 180) -> "Server":
        env = dict(os.environ, LC_ALL="C.UTF-8")
        cache = None
        if self.kind == "nrepl":
            cmd = ["java", "-cp", "/usr/share/java/clojure.jar:/usr/share/java/nrepl.jar",
                   "clojure.main", "-e", NREPL]
        elif self.kind == "swank":
            # swank-loader compiles into its cache on first use: keep it in the test's folder
            cache = Path(os.environ.get("LISPSHELL_TEST_CACHE", "/tmp/lispshell-test-cache"))
            env["XDG_CACHE_HOME"] = str(cache)
            cmd = ["sbcl", "--noinform", "--no-userinit", "--no-sysinit",
                   "--eval", f'(load "{SWANK_LOADER}")', "--eval", "(swank-loader:init)",
                   "--eval", "(progn (setf swank::*log-events* nil) "
                             "(format t \"LISTENING ~d~%\" (swank:create-server :port 0 "
                             ":dont-close t)) (finish-output))"]
        elif self.kind == "guile":
            port = self.fixed_port or free_port()
            cmd = ["guile", f"--listen={port}"]
            self.url = f"guile://127.0.0.1:{port}"
        elif self.kind == "guile-socket":
            path = self.tmp / "guile.sock"
            cmd = ["guile", f"--listen={path}"]
            self.url = f"guile://{path}"
        else:
            raise ValueError(self.kind)
        with _swank_cache_lock(cache):
            try:
                self._launch(cmd, env, time.monotonic() + timeout)
            except BaseException:
                self.kill()
                if cache is not None:
                    # a start killed while compiling leaves a cut fasl newer than its source,
                    # which every later start would load: the next one compiles afresh
                    shutil.rmtree(cache / "common-lisp", ignore_errors=True)
                raise
        # What the server prints from now on (a debugger banner in a thread with no client,
        # a warning) is read and kept, as a terminal would take it: a pipe nobody reads fills
        # at 64 KiB and then blocks the thread that prints.
        threading.Thread(target=self._drain, daemon=True, name=f"{self.kind}-stdout").start()
        LIVE.add(self)
        return self

    def _launch(self, cmd: list[str], env: dict, deadline: float) -> None:
        # stdin stays open (a pipe we hold): the stock REPLs end at end of input.
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                     text=True)
        if self.kind in ("nrepl", "swank"):
            seen = []
            while True:
                line = self.proc.stdout.readline()   # these print a line per step, then ours
                if not line:
                    raise AssertionError(f"{self.kind} server exited:\n{''.join(seen)}")
                seen.append(line)
                m = re.search(r"LISTENING (\d+)", line)
                if m:
                    self.url = f"{self.kind}://127.0.0.1:{m[1]}"
                    break
                # SBCL's debugger waits on the stdin we hold: it would never print again
                if "debugger invoked on" in line or time.monotonic() > deadline:
                    raise AssertionError(f"{self.kind} server did not start:\n{''.join(seen)}")
        else:
            wait_listening(self.url, deadline)

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.printed.append(line)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        LIVE.discard(self)
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@contextlib.contextmanager
def _swank_cache_lock(cache: Path | None):
    """Held while a Swank server loads: two SBCLs compiling swank into one cache at once (the
    two test workers' first servers, on a clean machine) write the same fasls under each
    other, and one loads a file the other has only begun (an empty fasl, or a cut one that
    leaves part of Swank undefined). The second waits, then loads what the first compiled."""
    if cache is None:
        yield
        return
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".swank-compile.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(url: str, deadline: float) -> None:
    path = url.removeprefix("guile://")
    while time.monotonic() < deadline:
        try:
            if path.startswith("/"):
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(path)
            else:
                host, port = path.rsplit(":", 1)
                socket.create_connection((host, int(port)), timeout=5).close()
            return
        except OSError:
            time.sleep(0.1)   # polling a socket that is not there yet, with a deadline
    raise AssertionError(f"nothing listens at {url}")
