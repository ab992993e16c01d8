"""`lispshell mcp`'s first answers, sent before the MCP SDK is loaded (lispshell/mcp/handshake.py),
and its exit on SIGINT/SIGTERM. Speed is measured by bench/mcp_startup.py, never here: these
tests check that the fast answers are the SDK's own, that the SDK then takes over knowing the
client (its elicitation capability), and that a signal ends the server and its Lisp.
"""
from __future__ import annotations

import json
import select
import signal
import subprocess
import time

import anyio
import mcp_types as types
import pytest
from mcp import Client

from conftest import LISPSHELL
from mcp_harness import lisp_pids, server_env, wait_gone

from lispshell.mcp import handshake
from lispshell.mcp.runtime import Options, Runtime
from lispshell.tools.registry import all_tools

# What Claude Code 2.1.197 sends first (captured from the real CLI).
CLAUDE_CODE_INITIALIZE = {
    "method": "initialize", "jsonrpc": "2.0", "id": 0, "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"roots": {}, "elicitation": {}},
        "clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.197"}}}
INITIALIZED = {"method": "notifications/initialized", "jsonrpc": "2.0"}


class Wire:
    """`lispshell mcp` on a pipe, spoken to line by line as Claude Code does."""

    def __init__(self, root, *flags: str):
        self.proc = subprocess.Popen(
            [LISPSHELL, "mcp", "--root", str(root), "--no-project", *flags],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(root), env=server_env(), bufsize=0)  # unbuffered: select() sees every line
        self.lines: list[dict] = []   # every line the server sent, in order

    def send(self, message: dict) -> None:
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def next(self) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline() if ready else b""
        assert line, f"no line from the server: {self.proc.stderr.read().decode()[-2000:]}"
        self.lines.append(json.loads(line))
        return self.lines[-1]

    def answer(self, id_) -> dict:
        while True:
            message = self.next()
            if message.get("id") == id_ and "method" not in message:
                return message

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()


@pytest.fixture
def wire(tmp_path):
    opened = []

    def open_(*flags: str) -> Wire:
        opened.append(Wire(tmp_path, *flags))
        return opened[-1]

    yield open_
    for w in opened:
        w.close()


def sdk_view(root, *, lisp="sbcl", allow_eval=False) -> tuple[dict, list]:
    """What the SDK itself answers (in memory, no fast path): initialize and tools/list."""
    from lispshell.mcp.server import build_server

    runtime = Runtime(Options(lisp=lisp, root=root, allow_eval=allow_eval), {})

    async def ask():
        async with Client(build_server(runtime), mode="legacy") as client:
            return ({"serverInfo": client.server_info, "capabilities": client.server_capabilities,
                     "instructions": client.instructions},
                    (await client.list_tools()).tools)
    return anyio.run(ask)


@pytest.mark.parametrize("allow_eval", [False, True])
def test_the_fast_answers_are_the_sdks(tmp_path, wire, allow_eval):
    sdk_init, sdk_tools = sdk_view(tmp_path.resolve(), allow_eval=allow_eval)
    server = wire("--lisp", "sbcl", *(["--allow-eval"] if allow_eval else []))
    server.send(CLAUDE_CODE_INITIALIZE)
    init = server.answer(0)["result"]
    server.send(INITIALIZED)
    server.send({"method": "tools/list", "jsonrpc": "2.0", "id": 1})
    tools = server.answer(1)["result"]["tools"]

    parsed = types.InitializeResult.model_validate(init)
    assert parsed.server_info == sdk_init["serverInfo"]
    assert parsed.capabilities == sdk_init["capabilities"]
    assert parsed.instructions == sdk_init["instructions"]
    assert init["protocolVersion"] == "2025-11-25"
    assert [types.Tool.model_validate(t) for t in tools] == sdk_tools
    assert [t["name"] for t in tools] == [t.name for t in all_tools()]
    assert not lisp_pids(tmp_path), "a Lisp was started for initialize or tools/list"


def test_an_unknown_protocol_version_gets_the_sdks_newest(tmp_path, wire):
    versions, latest = handshake._sdk_versions()
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
    assert (versions, latest) == (HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION)
    server = wire("--lisp", "none")
    server.send(dict(CLAUDE_CODE_INITIALIZE, params=dict(CLAUDE_CODE_INITIALIZE["params"],
                                                          protocolVersion="1999-01-01")))
    assert server.answer(0)["result"]["protocolVersion"] == latest


def test_the_sdk_takes_over_knowing_the_client(tmp_path, wire):
    """Calls pipelined right after the fast answers reach the SDK in order, and the SDK knows
    the client declared elicitation: it asks, and a cancel is nobody's answer."""
    marker = tmp_path / "ran.txt"
    server = wire("--lisp", "sbcl")
    server.send(CLAUDE_CODE_INITIALIZE)
    server.send(INITIALIZED)
    server.send({"method": "tools/list", "jsonrpc": "2.0", "id": 1})
    server.send({"method": "ping", "jsonrpc": "2.0", "id": 2})
    server.send({"method": "tools/call", "jsonrpc": "2.0", "id": 3, "params": {
        "name": "eval", "arguments": {"code": f'(with-open-file (s "{marker}" :direction '
                                              ':output) (write-line "ran" s))'}}})
    asked = server.next()
    while asked.get("method") != "elicitation/create":
        asked = server.next()
    assert str(marker) in asked["params"]["message"]
    server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "cancel"}})
    refused = server.answer(3)["result"]["structuredContent"]
    assert refused["error"]["code"] == "NO_ONE_TO_ASK"
    assert not marker.exists()

    answers = [m for m in server.lines if "method" not in m]
    assert [m["id"] for m in answers] == [0, 1, 2, 3]   # the replayed initialize stays unseen
    assert answers[2]["result"] == {}


def test_a_client_that_leaves_during_the_handshake_ends_the_server(tmp_path, wire):
    server = wire("--lisp", "sbcl")
    server.send(CLAUDE_CODE_INITIALIZE)
    server.answer(0)
    server.proc.stdin.close()
    assert server.proc.wait(timeout=60) == 0


# -- signals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_server_and_its_lisp_during_an_eval(tmp_path, wire, sig):
    started = tmp_path / "started.txt"
    server = wire("--lisp", "sbcl", "--allow-eval")
    server.send(CLAUDE_CODE_INITIALIZE)
    server.answer(0)
    server.send(INITIALIZED)
    server.send({"method": "tools/call", "jsonrpc": "2.0", "id": 1, "params": {
        "name": "eval", "arguments": {"code": f'(progn (with-open-file (s "{started}" :direction '
                                              ':output) (write-line "x" s)) (sleep 600))'}}})
    while not started.exists():          # the eval is running in the image
        assert server.proc.poll() is None
        time.sleep(0.02)
    children = lisp_pids(tmp_path)
    assert children
    server.proc.send_signal(sig)
    assert server.proc.wait(timeout=60) == 0
    assert all(wait_gone(pid) for pid in children)


def test_a_signal_while_the_lisp_starts_leaves_no_lisp(tmp_path, wire):
    server = wire("--lisp", "sbcl", "--allow-eval")
    server.send(CLAUDE_CODE_INITIALIZE)
    server.answer(0)
    server.send(INITIALIZED)
    server.send({"method": "tools/call", "jsonrpc": "2.0", "id": 1, "params": {
        "name": "eval", "arguments": {"code": "(+ 1 2)"}}})
    while not (children := lisp_pids(tmp_path)):    # the child exists, booting or not
        assert server.proc.poll() is None
        time.sleep(0.01)
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    assert all(wait_gone(pid) for pid in children)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_server_before_the_sdk_is_loaded(tmp_path, wire, sig):
    server = wire("--lisp", "sbcl")
    server.send(CLAUDE_CODE_INITIALIZE)
    server.answer(0)
    server.proc.send_signal(sig)
    assert server.proc.wait(timeout=60) == 0


def test_an_edit_made_before_the_signal_can_be_undone_after_it(tmp_path, wire):
    source = tmp_path / "a.lisp"
    source.write_text("(defun f (x) x)\n")
    server = wire("--lisp", "none")
    server.send(CLAUDE_CODE_INITIALIZE)
    server.answer(0)
    server.send(INITIALIZED)
    server.send({"method": "tools/call", "jsonrpc": "2.0", "id": 1, "params": {
        "name": "replace_form", "arguments": {"file_path": "a.lisp", "form_name": "f",
                                              "new_source": "(defun f (x) (1+ x))"}}})
    edited = server.answer(1)["result"]["structuredContent"]
    assert edited["ok"] is True, edited
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    undone = subprocess.run([LISPSHELL, "undo", str(source)], capture_output=True, text=True,
                            env=server_env(), cwd=tmp_path)
    assert undone.returncode == 0, undone.stderr
    assert source.read_text() == "(defun f (x) x)\n"


def test_a_server_that_cannot_serve_tells_the_client_why(tmp_path, wire):
    """Claude Code shows only `failed` for a server that exits at once; a failed tools/list
    it shows in /mcp with the message. So the reason goes there, and the exit code stays 2."""
    server = wire("--tools", "live,synatx")
    server.send(CLAUDE_CODE_INITIALIZE)
    assert "synatx" in server.answer(0)["result"]["instructions"]
    server.send(INITIALIZED)
    server.send({"method": "tools/list", "jsonrpc": "2.0", "id": 1})
    error = server.answer(1)["error"]
    assert "--tools" in error["message"] and "syntax" in error["message"]  # the closest name
    server.proc.stdin.close()
    assert server.proc.wait(timeout=60) == 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_http_server_with_a_client_stream_open(tmp_path, sig):
    """uvicorn's own shutdown would wait for the open event stream as long as the client
    keeps it; lispshell's handler ends the server and its Lisp at once."""
    import re
    import threading

    import httpx2

    proc = subprocess.Popen([LISPSHELL, "mcp", "--http", "127.0.0.1:0", "--lisp", "sbcl",
                             "--allow-eval", "--no-project", "--root", str(tmp_path)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=server_env())
    try:
        said = ""
        while not (m := re.search(r"serving (\S+)\n.*token (\S+)\n", said, re.S)):
            line = proc.stderr.readline()
            assert line, said
            said += line
        url, token = m.groups()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        with httpx2.Client(timeout=60) as http:
            opened = http.post(url, headers=headers, json=CLAUDE_CODE_INITIALIZE)
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = "2025-11-25"
            http.post(url, headers=headers, json=INITIALIZED)
            called = http.post(url, headers=headers, json={
                "method": "tools/call", "jsonrpc": "2.0", "id": 1,
                "params": {"name": "eval", "arguments": {"code": "(+ 1 2)"}}})
            assert '\\"values\\":[\\"3\\"]' in called.text.replace(" ", ""), called.text
            children = lisp_pids(tmp_path)
            assert children
            listening = threading.Event()

            def listen():     # the client's event stream, held open like a client holds it
                try:
                    with http.stream("GET", url, headers=headers) as stream:
                        listening.set()
                        for _ in stream.iter_bytes():
                            pass
                except httpx2.HTTPError:
                    pass

            threading.Thread(target=listen, daemon=True).start()
            assert listening.wait(60)
            proc.send_signal(sig)
            assert proc.wait(timeout=60) == 0
        assert all(wait_gone(pid) for pid in children)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
