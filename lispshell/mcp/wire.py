"""The stdio wire of `lispshell mcp`: every line a client sends gets an answer.

The SDK's stdio transport drops a line it cannot parse without a reply, so a client that sent
malformed JSON, a bare `5`, invalid UTF-8, `"params": "x"` or a lone surrogate waits forever
for its answer. Each line is checked here first; a bad one is answered with the JSON-RPC error
it deserves (-32700 parse error, -32600 invalid request, -32602 invalid params), with its id
when one can be known, and only good lines go on to the SDK.

Like the SDK, this takes the process's standard input and output for the wire and points fd 0
at /dev/null and fd 1 at stderr while serving, so a stray print can never corrupt the stream.
"""
from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager

import anyio

_SURROGATE = re.compile("[\ud800-\udfff]")


def _error(code: int, message: str, id_=None) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _has_surrogate(value, depth: int = 0) -> bool:
    if isinstance(value, str):
        return bool(_SURROGATE.search(value))
    if depth > 100:
        return False
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v, depth + 1) for v in value)
    return False


def check(raw: bytes) -> dict | None:
    """The error answer for one line of input, or None when the SDK may have it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(-32700, f"Parse error: the line is not UTF-8 (byte {exc.start})")
    if not text.strip():
        return None
    try:
        message = json.loads(text)
    except RecursionError:
        return _error(-32700, "Parse error: the JSON is nested too deeply")
    except ValueError as exc:
        return _error(-32700, f"Parse error: {exc}")
    if not isinstance(message, dict):
        what = "an empty batch" if message == [] else f"a JSON {type(message).__name__}"
        return _error(-32600, f"Invalid Request: a message must be a JSON object, not {what}")
    id_ = message.get("id")
    if not (id_ is None or isinstance(id_, (str, int)) and not isinstance(id_, bool)):
        return _error(-32600, "Invalid Request: id must be a string or a number")
    if isinstance(id_, str) and _SURROGATE.search(id_):
        return _error(-32600, "Invalid Request: the id holds a lone surrogate")
    if message.get("jsonrpc") != "2.0":
        return _error(-32600, 'Invalid Request: "jsonrpc" must be "2.0"', id_)
    if not any(k in message for k in ("method", "result", "error")):
        return _error(-32600, "Invalid Request: no method, result or error", id_)
    if "method" in message and not isinstance(message["method"], str):
        return _error(-32600, "Invalid Request: method must be a string", id_)
    if "params" in message and not isinstance(message["params"], (dict, list)):
        return _error(-32602, "Invalid params: params must be an object or an array", id_)
    if _has_surrogate(message):
        return _error(-32602, "Invalid params: the message holds a lone surrogate (\\ud800-"
                              "\\udfff), which is not Unicode text", id_)
    return None


class _Out:
    """The wire's writer, shared by the SDK's answers and ours: one whole line at a time."""

    def __init__(self, fd: int):
        self.fd = fd
        self.lock = anyio.Lock()
        self.swallow: str | None = None  # an id whose answer was already sent (handshake.py)

    async def write(self, text: str) -> None:
        if self.swallow is not None and f'"id":"{self.swallow}"' in text:
            self.swallow = None
            return
        data = memoryview(text.encode("utf-8", errors="replace"))
        async with self.lock:
            while data:
                data = data[await anyio.to_thread.run_sync(os.write, self.fd, data):]

    async def flush(self) -> None:
        return None

    def write_now(self, line: str) -> None:
        """One whole line, from the only thread writing: the fast start, before the SDK."""
        data = memoryview((line + "\n").encode("utf-8", errors="replace"))
        while data:
            data = data[os.write(self.fd, data):]


class _In:
    """The lines the SDK reads: the good ones; the bad ones are answered on the spot."""

    def __init__(self, fd: int, out: _Out):
        self.file = os.fdopen(fd, "rb", buffering=1 << 16)
        self.out = out
        self.replay: list[bytes] = []  # lines read before the SDK took over, read first

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        while True:
            if self.replay:
                raw = self.replay.pop(0)
            else:
                # Abandoned on cancel: a read cannot be interrupted, and a server told to stop
                # must not wait for the client's next line.
                raw = await anyio.to_thread.run_sync(self.file.readline, abandon_on_cancel=True)
            if not raw:
                return
            problem = check(raw)
            if problem is not None:
                await self.out.write(json.dumps(problem, ensure_ascii=True) + "\n")
                continue
            yield raw.decode("utf-8")


@contextmanager
def claimed_stdio():
    """(stdin, stdout) for `mcp.server.stdio.stdio_server`, with fd 0 and 1 diverted."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    out = _Out(wire_out)
    try:
        yield _In(wire_in, out), out
    finally:
        os.dup2(wire_out, 1)
        os.close(wire_out)
