"""The real Claude Code CLI, driven headless against the local Messages API (fake_anthropic.py).

`./dev test` installs the version pinned in tests/claude-code.version into .cache/claude-code.
What the tests rely on that a new version may change is in PINNED below: a new Claude Code is
one pin to change, then this table to check.

Each run gets its own HOME (no login, settings or history of yours), telemetry and every other
non-essential request off, and the fake API's key; a debug file that the tests read for what
Claude Code did with the server (it logs MCP events there, not on stdout).
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parent.parent
VERSION = (ROOT / "tests" / "claude-code.version").read_text().strip()
CLAUDE = ROOT / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
VENV_BIN = Path(sys.executable).parent

# What the pinned version does, as observed (and as docs/mcp.md says).
PINNED = {
    "mcp_tool_prefix": "mcp__lispshell__",
    # debug-file lines
    "connected": 'MCP server "lispshell": Successfully connected',
    "print_mode_elicitation": 'MCP server "lispshell": Elicitation request received in print mode',
    "hook_answered_elicitation": 'MCP server "lispshell": Elicitation resolved by hook',
    "stopping": 'MCP server "lispshell": Sending SIGINT to MCP server process',
    "stopped": 'MCP server "lispshell": MCP server process exited cleanly',
    "sigint_failed": 'MCP server "lispshell": SIGINT failed',
    # `claude mcp list` / `claude mcp get` output
    "pending_approval": "Pending approval",
    "tools_fetch_failed": "Connected · tools fetch failed",
}

QUIET = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
}


def installed_version() -> str:
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed in {CLAUDE.parent}: ./dev test installs "
                    f"the pinned {VERSION}", pytrace=False)
    out = subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.split()[0] if out.stdout else out.stderr


@dataclass
class Claude:
    """One project and one HOME for Claude Code, talking to `api` (a FakeAnthropic)."""

    tmp: Path
    api: object
    runs: list[subprocess.CompletedProcess] = field(default_factory=list)

    def __post_init__(self):
        self.home = self.tmp / "home"
        self.project = self.tmp / "project"
        self.debug_file = self.tmp / "claude-debug.txt"
        for d in (self.home, self.project):
            d.mkdir(parents=True, exist_ok=True)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k in ("LANG", "LC_ALL", "TERM") or k.startswith("LISPSHELL_")}
        env.update(QUIET, PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
                   HOME=str(self.home), ANTHROPIC_BASE_URL=self.api.url,
                   ANTHROPIC_API_KEY=self.api.key)
        return env

    # -- the project -----------------------------------------------------------------------
    def mcp_json(self, config: dict) -> None:
        (self.project / ".mcp.json").write_text(json.dumps(config))

    def settings(self, settings: dict, user: bool = False) -> None:
        """The project's `.claude/settings.json`, or with `user` your `~/.claude/settings.json`."""
        folder = (self.home if user else self.project) / ".claude"
        folder.mkdir(exist_ok=True)
        (folder / "settings.json").write_text(json.dumps(settings))

    # -- runs ------------------------------------------------------------------------------
    def command(self, *flags: str) -> list[str]:
        return [str(CLAUDE), "-p", *flags, "--debug-file", str(self.debug_file)]

    def cli(self, *args: str) -> str:
        """`claude ARGS` (`mcp list`, `mcp get NAME`): what it prints."""
        done = subprocess.run([str(CLAUDE), *args], cwd=self.project, env=self.env,
                              capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def print(self, prompt: str, *flags: str) -> dict:
        """`claude -p PROMPT --output-format json`: its result."""
        done = subprocess.run(self.command(prompt, "--output-format", "json", *flags),
                              cwd=self.project, env=self.env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
        self.runs.append(done)
        assert done.stdout, f"claude -p printed nothing (exit {done.returncode}): {done.stderr}"
        return json.loads(done.stdout)

    def drive(self, prompt: str, answer: Callable[[dict], dict], *flags: str) -> list[dict]:
        """`claude -p --input-format stream-json`, as a program driving it does: sends the
        prompt, answers each `control_request` with `answer(request)` (the response body),
        and returns every event up to the result."""
        proc = subprocess.Popen(
            self.command("--input-format", "stream-json", "--output-format", "stream-json",
                         "--verbose", *flags),
            cwd=self.project, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str] = queue.Queue()
        # A thread reads: select() on a buffered pipe misses lines already in the buffer.
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put("")],
                         daemon=True).start()
        events: list[dict] = []
        try:
            proc.stdin.write(json.dumps({"type": "user", "message": {
                "role": "user", "content": prompt}}) + "\n")
            proc.stdin.flush()
            while True:
                line = lines.get(timeout=300)
                assert line, f"claude stopped before its result: {proc.stderr.read()[-3000:]}"
                event = json.loads(line)
                events.append(event)
                if event.get("type") == "control_request":
                    proc.stdin.write(json.dumps({"type": "control_response", "response": {
                        "subtype": "success", "request_id": event["request_id"],
                        "response": answer(event["request"])}}) + "\n")
                    proc.stdin.flush()
                elif event.get("type") == "result":
                    proc.stdin.close()
                    break
            assert proc.wait(timeout=120) == 0, proc.stderr.read()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()
        return events

    def debug(self) -> str:
        return self.debug_file.read_text(errors="replace") if self.debug_file.exists() else ""

    def project_processes(self) -> list[int]:
        """Processes still running in the project (the server, its Lisp): none after a run."""
        found = []
        for entry in Path("/proc").iterdir():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if entry.name.isdigit() and Path(cwd).is_relative_to(self.project):
                found.append(int(entry.name))
        return found


def tool_results(request) -> dict[str, str]:
    """tool_use_id -> the text of its tool_result, in one recorded API request."""
    found = {}
    for message in request.body["messages"]:
        if message["role"] != "user" or not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result":
                content = block.get("content")
                found[block["tool_use_id"]] = (content if isinstance(content, str) else
                                               "\n".join(c.get("text", "") for c in content or []))
    return found


def after(api, tool_use_id: str):
    """The first API request that carries the result of `tool_use_id`."""
    for request in api.message_requests:
        if tool_use_id in tool_results(request):
            return request
    raise AssertionError(f"no request carried the result of {tool_use_id}")
