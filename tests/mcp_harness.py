"""Helpers for the `lispshell mcp` tests: the SDK's own client against the real command.

Each test starts `lispshell mcp` as a subprocess (stdio) and talks to it with `mcp.Client`;
`mode="legacy"` speaks the 2025 handshake era, `mode="auto"` the 2026-07-28 era.
"""
from __future__ import annotations

import json
import os
import signal
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from conftest import LISPSHELL

# Everything the server needs from the test environment (conftest isolated it); the SDK's
# stdio client passes only a minimal environment on its own.
_PASS_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM")


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k in _PASS_ENV or k.startswith(("LISPSHELL_", "ANTHROPIC_"))}
    env.update(extra or {})
    return env


def server_params(root: Path, *flags: str) -> StdioServerParameters:
    return StdioServerParameters(command=LISPSHELL, args=["mcp", "--root", str(root), *flags],
                                 cwd=str(root), env=server_env())


@asynccontextmanager
async def connect(root: Path, *flags: str, mode: str = "legacy", elicit=None):
    """A connected `mcp.Client`; `elicit(message) -> "accept"|"decline"|"cancel"` answers
    elicitations (the client declares elicitation only when it is given)."""
    async def callback(ctx, params):
        return types.ElicitResult(action=elicit(params.message))

    async with Client(server_params(root, *flags), mode=mode,
                      elicitation_callback=callback if elicit is not None else None,
                      read_timeout_seconds=60) as client:
        yield client


def run(async_fn, *args):
    """Run one async scenario to the end (each test owns its server process)."""
    return anyio.run(async_fn, *args)


def answer(result: types.CallToolResult) -> dict:
    """The structured answer, checked against the text content (they must say the same)."""
    assert result.content and result.content[0].type == "text"
    text = json.loads(result.content[0].text)
    assert text == result.structured_content
    assert result.is_error is (not text["ok"])
    return text


# -- processes -------------------------------------------------------------------------------
def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def server_pids(root: Path) -> list[int]:
    """`lispshell mcp` processes serving `root` (the test's unique tmp dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            cmd = _cmdline(int(entry.name))
            if "mcp" in cmd and str(root) in cmd and any(c.endswith("lispshell") for c in cmd):
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _ppid(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def lisp_pids(root: Path, program: str = "sbcl") -> list[int]:
    """The child Lisp processes of the server serving `root`."""
    return [p for s in server_pids(root) for p in descendants(s)
            if any(Path(c).name == program for c in _cmdline(p)[:1])]


def _state(stat_path: Path) -> str:
    try:
        return stat_path.read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "gone"


def alive(pid: int) -> bool:
    """True while any thread of `pid` still runs. A multithreaded Lisp's main thread turns
    zombie before its other threads have exited; only then can its parent reap it."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    return any(_state(task / "stat") not in ("Z", "X", "gone") for task in tasks)


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid)
