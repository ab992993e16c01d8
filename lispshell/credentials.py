"""lispshell's own credentials, kept from everything it starts.

Apart from config.py because every entry point seals them first, the Claude Code hook
included, which runs after each of the agent's edits and must cost next to nothing: this
module imports only sys (and ctypes when it seals): config's TOML, platformdirs and
importlib.resources imports were most of the hook's time (bench/hook_latency.py).
"""
from __future__ import annotations

import sys

# The credentials lispshell itself uses never reach a Lisp nor anything else it starts (a
# project's build tool): code that runs there, the model's evals included, must not read them.
SECRET_PREFIXES = ("ANTHROPIC_", "LISPSHELL_MCP_TOKEN")


def seal_credentials() -> None:
    """Keep lispshell's credentials out of reach of the code its children run.

    A child never inherits them (`child_environment`), but the same user can read its parent's
    original environment in /proc/PID/environ, and its memory through /proc/PID/mem. So, before
    the first child starts: the credentials' values are overwritten in the original environment
    block (Python already holds its own copy in `os.environ`, which the SDK reads), and the
    process is made non-dumpable, as ssh-agent does, which puts its /proc entries and memory
    out of reach of the person's other processes. Root (or CAP_SYS_PTRACE) can still read any
    process's memory: docs/security.md. Linux only; elsewhere this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        fields = open("/proc/self/stat", "rb").read().rpartition(b")")[2].split()
        start, end = int(fields[47]), int(fields[48])     # env_start, env_end (fields 50, 51)
        block = ctypes.string_at(start, end - start)
    except (OSError, ValueError, IndexError):
        block, start = b"", 0
    offset = 0
    for entry in block.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and name.decode("latin-1").startswith(SECRET_PREFIXES) and value:
            ctypes.memset(start + offset + len(name) + 1, ord("x"), len(value))
        offset += len(entry) + 1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)                           # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass
