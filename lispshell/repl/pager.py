"""Showing something taller than the screen: in a pager (`less -R` unless `$PAGER` or
`[repl] pager` says otherwise), the way `git log` does, so a 1 MB value never scrolls the
prompt and its context away. The text is rendered by rich first, so colours survive (`-R`).

Ctrl-C belongs to the pager while it runs: lispshell ignores SIGINT meanwhile, so the key
cannot also cancel what the REPL is doing.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess

DEFAULT_PAGER = "less -R"


def pager_command(config: dict) -> list[str] | None:
    """The pager to run, or None when paging is off (`pager = "off"`)."""
    from lispshell.config import ReplSettings, settings

    chosen = settings(config, ReplSettings).pager.strip()
    if chosen.lower() == "off":
        return None
    chosen = chosen or os.environ.get("PAGER", "").strip() or DEFAULT_PAGER
    try:
        return shlex.split(chosen) or None
    except ValueError:
        return shlex.split(DEFAULT_PAGER)


def screen_lines(text: str, width: int) -> int:
    """How many terminal rows `text` takes once long lines wrap (characters ~ cells)."""
    width = max(1, width)
    return sum(max(1, -(-len(line) // width)) for line in text.split("\n"))


def run_pager(command: list[str], text: str) -> str | None:
    """Show `text` in the pager; None when done, or why it could not be shown."""
    env = dict(os.environ)
    env.setdefault("LESS", "-R")        # colours through, even for a bare `less`
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, env=env,
                                   restore_signals=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    except OSError as exc:
        signal.signal(signal.SIGINT, previous)
        return f"cannot run the pager {' '.join(command)!r}: {exc.strerror or exc}"
    try:
        try:
            process.stdin.write(text.encode("utf-8", errors="replace"))
        except (BrokenPipeError, OSError):
            pass                             # the person quit before reading it all
        try:
            process.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        process.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return None
