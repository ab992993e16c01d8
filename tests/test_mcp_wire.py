"""`lispshell mcp` over stdio answers every line, malformed ones included, and never stalls:
raw bytes written to the real server, answers read back line by line (issue 16)."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import LISPSHELL

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "wire-test", "version": "1"}}}
BAD = [   # (raw line, expected error code, expected id)
    (b"{not json", -32700, None),
    (b"5", -32600, None),
    (b"[]", -32600, None),
    (b'"hello"', -32600, None),
    (b"\xff\xfe{}", -32700, None),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":"x"}', -32602, 7),
    (b"[" * 100_000 + b"]" * 100_000, -32700, None),
    (b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"validate_syntax",'
     b'"arguments":{"code":"\\ud800"}}}', -32602, 8),
    (b'{"jsonrpc":"1.0","id":9,"method":"ping"}', -32600, 9),
    (b'{"jsonrpc":"2.0","id":10}', -32600, 10),
]


@pytest.fixture
def server(tmp_path):
    proc = subprocess.Popen([LISPSHELL, "mcp", "--lisp", "none", "--root", str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path)
    yield proc
    proc.kill()
    proc.wait(timeout=30)


def send(proc, raw: bytes) -> dict:
    proc.stdin.write(raw + b"\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, proc.stderr.read().decode(errors="replace")[-2000:]
    return json.loads(line)


def test_every_malformed_line_gets_its_error_and_the_stream_goes_on(server):
    first = send(server, json.dumps(INIT).encode())
    assert first["id"] == 1 and "result" in first
    server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    for raw, code, id_ in BAD:
        answer = send(server, raw)
        assert answer["error"]["code"] == code, (raw[:80], answer)
        assert answer["id"] == id_, (raw[:80], answer)
    # ... and a good request after all that still works
    listed = send(server, b'{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{}}')
    assert listed["id"] == 99 and len(listed["result"]["tools"]) > 10
