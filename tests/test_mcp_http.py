"""`lispshell mcp --http`: streamable HTTP on loopback, refused without the bearer token,
protected against DNS rebinding, and a real MCP session with the token."""
from __future__ import annotations

import re
import signal
import subprocess
import time

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from conftest import LISPSHELL
from mcp_harness import answer, server_env

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def http_server(tmp_path_factory):
    """A server on a port the OS picks; yields (url, token)."""
    root = tmp_path_factory.mktemp("http-root")
    proc = subprocess.Popen([LISPSHELL, "mcp", "--http", "127.0.0.1:0", "--lisp", "sbcl",
                             "--root", str(root)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=server_env())
    url = token = None
    deadline = time.monotonic() + 30
    while (url is None or token is None) and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if m := re.search(r"serving (http://\S+)", line):
            url = m.group(1)
        if m := re.search(r"token (\S+)$", line.strip()):
            token = m.group(1)
    try:
        assert url and token, "lispshell mcp --http did not print its URL and token"
        assert url.startswith("http://127.0.0.1:")
        yield url, token
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(timeout=15) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            proc.stderr.close()


def test_requests_without_the_token_are_refused(http_server):
    url, token = http_server
    with httpx2.Client(timeout=10) as http:
        for headers in [{}, {"Authorization": "Bearer wrong-token-0123456789"},
                        {"Authorization": token}, {"Authorization": f"Basic {token}"},
                        {"Authorization": f"Bearer {token}x"}]:
            response = http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
            assert response.status_code == 401, headers
            assert "bearer" in response.headers.get("www-authenticate", "").lower()
            assert "jsonrpc" not in response.text  # nothing of MCP answered
        assert http.get(url).status_code == 401


def test_dns_rebinding_protection_is_on(http_server):
    url, token = http_server
    auth = {"Authorization": f"Bearer {token}"}
    with httpx2.Client(timeout=10) as http:
        rebound = http.post(url, json=INITIALIZE,
                            headers={**MCP_HEADERS, **auth, "Host": "evil.example:80"})
        assert rebound.status_code == 421
        foreign = http.post(url, json=INITIALIZE,
                            headers={**MCP_HEADERS, **auth, "Origin": "http://evil.example"})
        assert foreign.status_code == 403
        welcome = http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **auth})
        assert welcome.status_code == 200
        assert "lispshell" in welcome.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_mcp_client_with_the_token(http_server, mode):
    """A whole session over HTTP, in both protocol eras, including an eval the person accepts
    (the elicitation travels on the call's SSE stream, or in an InputRequiredResult)."""
    url, token = http_server
    asked = []

    async def person(ctx, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept")

    async def scenario():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode,
                              elicitation_callback=person) as client:
                assert client.server_info.name == "lispshell"
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"validate_syntax", "read_module", "eval"} <= names
                result = answer(await client.call_tool(
                    "validate_syntax", {"code": "(+ 1 (* 2 3))", "dialect": "cl"}))
                assert result["ok"] is True and result["valid"] is True
                evaluated = answer(await client.call_tool("eval", {"code": "(* 6 7)"}))
                assert evaluated["ok"] is True and evaluated["values"] == ["42"]
    anyio.run(scenario)
    assert len(asked) == 1 and "(* 6 7)" in asked[0]


def test_mcp_client_without_the_token_fails(http_server):
    url, _ = http_server

    async def scenario():
        async with Client(url, mode="legacy"):
            pass

    with pytest.raises(BaseException) as info:
        anyio.run(scenario)
    assert any(isinstance(e, MCPError) and "error response" in str(e) for e in _leaves(info.value))


def _leaves(exc: BaseException):
    for sub in getattr(exc, "exceptions", None) or [exc]:
        yield from (_leaves(sub) if sub is not exc else [sub])
