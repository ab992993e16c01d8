"""The first answers of `lispshell mcp` over stdio, sent before the MCP SDK is loaded.

Importing the SDK costs about a second here (`python -X importtime -c "import mcp.server"`:
nearly all of it building the pydantic models of `mcp_types`), and Claude Code waits only
2 s for its servers before it starts the conversation without their tools. So the server
answers what a client asks first (`initialize`, `tools/list`, `ping`) from this module, which
needs only the standard library and the tool registry, while the SDK loads in a thread. The
first message this path does not answer (a `tools/call`, anything unusual) waits for the SDK,
which then takes over the wire for good: it is handed the client's `initialize` again (its
answer, already sent, is swallowed) so that it knows the client's capabilities and protocol
version, then `notifications/initialized` and every line not answered here, in order.

What the answers say has one source each: the tool definitions and the instructions
(`describe.py`) serve the SDK too (`server.py`), and the protocol versions are read from the SDK's own
`mcp_types/version.py` without importing its package. `tests/test_mcp_startup.py` checks that
every answer here is the one the SDK gives.
"""
from __future__ import annotations

import importlib.util
import json
import secrets
import threading
from pathlib import Path
from typing import Any

from lispshell import __version__
from lispshell.mcp.describe import SERVER_NAME, instructions, tool_definition
from lispshell.mcp.runtime import Runtime

LOAD_SDK_AFTER = 0.2   # seconds after the initialize answer (see FastStart._answer)


def _sdk_versions() -> tuple[tuple[str, ...], str]:
    """(the handshake-era protocol versions, the newest of them), from the SDK's own table.
    Executing only that file: importing `mcp_types` first builds every model (0.4 s)."""
    package = importlib.util.find_spec("mcp_types")
    path = Path(next(iter(package.submodule_search_locations))) / "version.py"
    table: dict[str, Any] = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), table)
    return tuple(table["HANDSHAKE_PROTOCOL_VERSIONS"]), table["LATEST_HANDSHAKE_VERSION"]


def initialize_result(requested: str, instructions_text: str) -> dict:
    versions, latest = _sdk_versions()
    return {
        "protocolVersion": requested if requested in versions else latest,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
        "instructions": instructions_text,
    }


def _answerable_initialize(message: dict) -> str | None:
    """The protocol version a handshake-era `initialize` asks for, when its params are
    plainly valid; None sends it to the SDK, which knows how to refuse the rest."""
    params = message.get("params")
    if not isinstance(params, dict) or "_meta" in params:
        return None
    info, capabilities = params.get("clientInfo"), params.get("capabilities")
    if not (isinstance(params.get("protocolVersion"), str) and isinstance(capabilities, dict)
            and isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str)):
        return None
    return params["protocolVersion"]


class FastStart:
    """Answers the first messages on the wire until the SDK is loaded; see the module's doc."""

    def __init__(self, runtime: Runtime, wire_in, write, build_server):
        self.runtime = runtime
        self.build_server = build_server   # (runtime) -> the SDK's server: imports the SDK
        self.wire_in = wire_in       # the buffered wire the SDK goes on reading
        self.write = write           # write(line: str), one whole line
        self.replay: list[bytes] = []  # what the SDK must read first, in order
        # The SDK's answer to the replayed `initialize` carries this id and is not sent.
        self.swallow_id = f"lispshell-replayed-initialize-{secrets.token_hex(8)}"
        self.initialized = False
        self.ended = False           # the client closed the wire before the SDK took over
        self._loaded = threading.Event()
        self._loader: threading.Thread | None = None
        self._loader_lock = threading.Lock()
        self.server = None
        self._error: BaseException | None = None

    # -- the SDK, loaded beside the first answers ---------------------------------------------
    def start_loading(self) -> None:
        with self._loader_lock:
            if self._loader is None:
                self._loader = threading.Thread(target=self._load, name="mcp-sdk-import",
                                                daemon=True)
                self._loader.start()

    def _load(self) -> None:
        try:
            self.server = self.build_server(self.runtime)
        except BaseException as exc:  # re-raised in the main thread by `wait_for_sdk`
            self._error = exc
        finally:
            self._loaded.set()

    def wait_for_sdk(self):
        self.start_loading()
        self._loaded.wait()
        if self._error is not None:
            raise self._error
        return self.server

    # -- the wire ------------------------------------------------------------------------------
    def run(self) -> None:
        """Answer lines until one needs the SDK (or the SDK is loaded, or the wire closed)."""
        from lispshell.mcp.wire import check

        while not self._loaded.is_set():
            raw = self.wire_in.readline()
            if not raw:
                self.ended = True
                return
            problem = check(raw)
            if problem is not None:
                self.write(json.dumps(problem, ensure_ascii=True))
                continue
            if not raw.strip():
                continue                      # a blank line asks nothing
            if not self._answer(json.loads(raw), raw):
                self.replay.append(raw)
                return

    def _answer(self, message: dict, raw: bytes) -> bool:
        """True when `message` was dealt with here (answered, or queued for the SDK in its
        place); False hands it, and everything after it, to the SDK."""
        method, id_ = message.get("method"), message.get("id")
        if self._loaded.is_set():
            return False
        if method == "initialize" and "id" in message and not self.initialized:
            requested = _answerable_initialize(message)
            if requested is None:
                return False
            self._result(id_, initialize_result(requested, instructions(self.runtime)))
            self.initialized = True
            # The import holds the interpreter for long stretches: begun now, it would delay
            # the tools/list that follows by as much again. It begins after that answer, or
            # at the latest after this pause, for a client that asks something else first.
            timer = threading.Timer(LOAD_SDK_AFTER, self.start_loading)
            timer.daemon = True
            timer.start()
            self.replay.append((json.dumps(dict(message, id=self.swallow_id)) + "\n").encode())
            return True
        if not self.initialized:
            return False
        if method == "notifications/initialized" and "id" not in message:
            self.replay.append(raw)
            return True
        if method == "ping" and "id" in message:
            self._result(id_, {})
            return True
        params = message.get("params")
        if (method == "tools/list" and "id" in message
                and not (isinstance(params, dict) and params.get("cursor"))):
            self._result(id_, {"tools": [tool_definition(t) for t in self.runtime.tools()]})
            self.start_loading()
            return True
        return False

    def _result(self, id_, result: dict) -> None:
        self.write(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result},
                              ensure_ascii=False))


def serve_refusal(reason: str, wire_in, write) -> None:
    """A server that cannot serve (a bad `--tools`, `--root`, config) still answers its client
    until the client leaves, so that the reason reaches the person: Claude Code shows nothing
    of a server that exits at once but `failed` (the reason only in its debug log), while a
    failed `tools/list` is shown by its `/mcp` as the server's "Issue", with this message."""
    from lispshell.mcp.wire import check

    error = {"code": -32603, "message": reason}
    while raw := wire_in.readline():
        problem = check(raw)
        message = json.loads(raw) if problem is None and raw.strip() else {}
        if problem is not None:
            write(json.dumps(problem, ensure_ascii=True))
        elif "id" not in message or "method" not in message:
            continue                          # notifications and answers need no reply
        elif message["method"] == "initialize" and _answerable_initialize(message):
            result = initialize_result(_answerable_initialize(message), reason)
            write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        else:
            write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))
