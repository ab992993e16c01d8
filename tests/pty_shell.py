"""`lispshell` under a real pty, read as a person reads it: escape codes stripped, in order.

Shared by the REPL tests and the LLM-in-the-REPL tests.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pexpect

from conftest import LISPSHELL

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")
ENTER, META_ENTER, CTRL_C, CTRL_D, UP = "\r", "\x1b\r", "\x03", "\x04", "\x1b[A"


class Shell:
    """A lispshell under a pty, with expectations over escape-free text, in order."""

    def __init__(self, tmp: Path, *args: str, env: dict | None = None, cpr: bool = False,
                 cwd: Path | None = None, command: list[str] | None = None):
        """`cpr`: answer the terminal's cursor position requests, as a real terminal does;
        prompt-toolkit draws the bottom toolbar only when it knows where the cursor is."""
        self.cpr = cpr
        full_env = dict(os.environ, TERM="xterm-256color",
                        PROMPT_TOOLKIT_NO_CPR="0" if cpr else "1",
                        NO_COLOR="1", EDITOR="true",
                        PAGER="cat",   # values taller than the screen stay on it, whole
                        LISPSHELL_STATE_DIR=str(tmp / "state"),
                        LISPSHELL_CONFIG_DIR=str(tmp / "config"))
        full_env.update(env or {})
        command = command or [LISPSHELL]          # (another lispshell: [python, -m, lispshell])
        self.child = pexpect.spawn(command[0], command[1:] + list(args), env=full_env,
                                   dimensions=(40, 160),
                                   cwd=str(cwd) if cwd is not None else None,
                                   encoding="utf-8", codec_errors="replace", timeout=20)
        self.raw = ""
        self.pos = 0

    def text(self) -> str:
        return ANSI.sub("", self.raw)

    def expect(self, wanted: str, timeout: float = 30) -> str:
        """Wait until `wanted` appears after the previous match; returns the text in between."""
        deadline = time.monotonic() + timeout
        while True:
            clean = self.text()
            at = clean.find(wanted, self.pos)
            if at >= 0:
                between = clean[self.pos:at]
                self.pos = at + len(wanted)
                return between
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.child.isalive() and not self._read(0.1):
                raise AssertionError(f"{wanted!r} never appeared; after the last match:\n"
                                     f"{clean[self.pos:][-3000:]}")
            self._read(min(remaining, 0.5))

    def _read(self, timeout: float) -> bool:
        try:
            got = self.child.read_nonblocking(65536, timeout=timeout)
            if self.cpr:
                for _ in range(got.count("\x1b[6n")):
                    self.child.send("\x1b[1;1R")     # row 1: the whole screen is below
            self.raw += got
            return True
        except (pexpect.TIMEOUT, pexpect.EOF):
            return False

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def submit(self, line: str) -> None:
        self.child.send(line + ENTER)

    def wait_exit(self, timeout: float = 20) -> int:
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


STEPPING = ("step", "s", "n", "o", "c", "next", "finish")


def steps(text: str, prompt: str) -> list[list[str]]:
    """A transcript cut at each stepping command typed after `prompt` (SBCL's `,s`, Guile's
    `,next`...): for each, the lines it printed, the prompts redrawn around them left out."""
    p = re.escape(prompt)
    parts = re.split(rf"{p} ,([a-z-]+)\b[^\n]*\n", text)
    return [[line for line in chunk.split("\n")
             if line.strip() and not re.fullmatch(rf"(\[\d+\] )?({p} ?)+(\[\d+\] )?",
                                                  line.strip())]
            for command, chunk in zip(parts[1::2], parts[2::2]) if command in STEPPING]
