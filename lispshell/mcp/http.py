"""`--http [HOST:]PORT`: the streamable HTTP transport, on loopback unless told otherwise.

Two locks on the door, both before any MCP code runs:
- a bearer token, random per start (or `LISPSHELL_MCP_TOKEN`), printed to stderr: a request
  without `Authorization: Bearer <token>` gets 401, so another local user or a web page cannot
  drive the tools (eval included) just by reaching the port;
- the SDK's DNS-rebinding protection (Host and Origin must name the address we listen on).
"""
from __future__ import annotations

import contextlib

import hmac
import os
import secrets
import socket
import sys

from mcp.server import Server
from mcp.server.transport_security import TransportSecuritySettings

TOKEN_ENV = "LISPSHELL_MCP_TOKEN"
MIN_TOKEN_LENGTH = 16
PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class TokenError(ValueError):
    pass


def make_token() -> str:
    """A fresh random token, or the one in LISPSHELL_MCP_TOKEN (so a client config can keep it)."""
    fixed = os.environ.get(TOKEN_ENV)
    if fixed is None:
        return secrets.token_urlsafe(32)
    if len(fixed) < MIN_TOKEN_LENGTH or not (fixed.isascii() and fixed.isprintable()) \
            or " " in fixed:
        raise TokenError(f"{TOKEN_ENV} must be at least {MIN_TOKEN_LENGTH} printable ASCII "
                         "characters without spaces")
    return fixed


def _host_in_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def security_settings(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection on for every host: loopback names always, plus the one given."""
    hosts = list(dict.fromkeys([*LOOPBACK, host]))
    names = [_host_in_url(h) for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names],
        allowed_origins=[f"http://{n}:*" for n in names],
    )


class BearerTokenGate:
    """ASGI middleware: 401 for any HTTP request without the right bearer token."""

    def __init__(self, app, token: str):
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"www-authenticate", b'Bearer realm="lispshell"')]})
                await send({"type": "http.response.body",
                            "body": b"401 Unauthorized: send 'Authorization: Bearer <token>' "
                                    b"(lispshell mcp printed the token when it started)\n"})
                return
        await self.app(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(server: Server, host: str, port: int) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM). Raises OSError if the address is taken."""
    import uvicorn

    token = make_token()
    sock = bind(host, port)  # bound first, so port 0 can be reported as the real port
    url = f"http://{_host_in_url(host)}:{sock.getsockname()[1]}{PATH}"
    app = server.streamable_http_app(streamable_http_path=PATH, host=host,
                                     transport_security=security_settings(host))
    print(f"lispshell mcp: serving {url}\n"
          f"lispshell mcp: token {token}\n"
          f"lispshell mcp: clients must send the header 'Authorization: Bearer {token}'",
          file=sys.stderr, flush=True)
    if host not in LOOPBACK:
        print(f"lispshell mcp: warning: listening on {host}, not loopback; the token is all that "
              "stands between the network and these tools (plain HTTP, no TLS)",
              file=sys.stderr, flush=True)
    config = uvicorn.Config(BearerTokenGate(app, token), log_level="warning", lifespan="on")

    class KeepSignals(uvicorn.Server):
        """uvicorn's own SIGINT/SIGTERM handling shuts down gracefully, waiting for open
        streams (a client's event stream stays open as long as the client): seconds, or
        forever. lispshell mcp's handler (main._end_on_signals) stays in place instead."""

        @contextlib.contextmanager
        def capture_signals(self):
            yield

    KeepSignals(config).run(sockets=[sock])

