"""A local Anthropic Messages API for the tests: real sockets, real SSE, real validation.

The `anthropic` SDK 2.x talks through httpx2, which HTTP mocking libraries cannot intercept,
so the tests point `ANTHROPIC_BASE_URL` (or `base_url=`) at this server instead. It:

- answers `POST /v1/messages` as JSON or, with `"stream": true`, as server-sent events
  (message_start, content_block_start/delta/stop for text and tool_use with input_json_delta,
  message_delta with stop_reason and usage, message_stop, pings), `POST
  /v1/messages/count_tokens`, and `HEAD /` (Claude Code's reachability check);
- validates every request the way the real API does and answers 400 `invalid_request_error`
  on a violation (see `validate_request`), recording it in `server.invalid`;
- plays a queue of scripted replies: text, tool calls, HTTP errors (529/429 with retry
  headers), an `error` event in the middle of a stream, a stall (the connection stays open,
  silent, until the client gives up), or a callable that builds the reply from the request;
- simulates prompt caching well enough to test it: the prefix up to the last explicit
  `cache_control` in tools/system is hashed; a second request with the same prefix reports
  `cache_read_input_tokens`, a new one `cache_creation_input_tokens`.

Usage:
    with FakeAnthropic() as api:
        api.script(Reply.text("Hello"), Reply.tool("eval", {"code": "(+ 1 2)"}))
        client = anthropic.Anthropic(api_key=api.key, base_url=api.url)
        ...
        api.requests[-1].body["messages"]
"""
from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
API_VERSIONS = ("2023-06-01", "2026-10-21")
MAX_CACHE_BREAKPOINTS = 4
_ids = itertools.count(1)


def new_tool_id() -> str:
    return f"toolu_fake{next(_ids):06d}"


# ---------------------------------------------------------------- scripted replies
@dataclass
class Reply:
    """One scripted answer. Build with the class methods; combine blocks with `Reply.of`."""

    blocks: list[dict] = field(default_factory=list)  # {"type": "text"|"tool_use", ...}
    stop_reason: str | None = None     # default: tool_use if a tool_use block, else end_turn
    status: int = 200                  # an HTTP error when not 200
    error_type: str = ""               # error.type for an HTTP error or a stream error event
    error_message: str = ""
    headers: dict = field(default_factory=dict)  # extra response headers (retry-after-ms...)
    error_after: int | None = None     # send an `error` event after this many blocks
    stall_after: int | None = None     # go silent after this many blocks (the last one may be partial)
    stall_partial: bool = True         # when stalling, first send half of the next block's deltas
    cut_last_tool: bool = False        # max_tokens: the last tool_use's JSON is cut half way
    chunk: int = 12                    # characters per text/json delta
    delay: float = 0.0                 # seconds between events (lets a test interrupt a stream)
    usage_output: int | None = None

    @classmethod
    def text(cls, text: str, **kw) -> "Reply":
        return cls(blocks=[{"type": "text", "text": text}], **kw)

    @classmethod
    def tool(cls, name: str, input: dict, id: str | None = None, text: str | None = None,
             **kw) -> "Reply":
        blocks = [{"type": "text", "text": text}] if text else []
        blocks.append(tool_block(name, input, id))
        return cls(blocks=blocks, **kw)

    @classmethod
    def of(cls, *blocks: dict | str, **kw) -> "Reply":
        """Several blocks: strings are text blocks, dicts are taken as they are."""
        return cls(blocks=[{"type": "text", "text": b} if isinstance(b, str) else b
                           for b in blocks], **kw)

    @classmethod
    def error(cls, status: int, error_type: str, message: str = "", **kw) -> "Reply":
        return cls(status=status, error_type=error_type, error_message=message or error_type, **kw)

    @classmethod
    def overloaded(cls, **kw) -> "Reply":
        kw.setdefault("headers", {"retry-after-ms": "5"})
        return cls.error(529, "overloaded_error", "Overloaded", **kw)

    @classmethod
    def rate_limited(cls, **kw) -> "Reply":
        kw.setdefault("headers", {"retry-after-ms": "5"})
        return cls.error(429, "rate_limit_error", "Number of requests has exceeded your rate limit", **kw)

    @classmethod
    def stream_error(cls, *blocks: dict | str, error_type: str = "overloaded_error",
                     after: int | None = None, **kw) -> "Reply":
        r = cls.of(*blocks, **kw)
        r.error_type, r.error_message = error_type, error_type.replace("_", " ")
        r.error_after = len(r.blocks) if after is None else after
        return r

    @classmethod
    def stall(cls, *blocks: dict | str, after: int | None = None, **kw) -> "Reply":
        r = cls.of(*blocks, **kw)
        r.stall_after = len(r.blocks) if after is None else after
        return r


def tool_block(name: str, input: dict, id: str | None = None) -> dict:
    return {"type": "tool_use", "id": id or new_tool_id(), "name": name, "input": input}


@dataclass
class Recorded:
    path: str
    headers: dict
    body: Any
    raw: bytes
    error: str | None = None  # the validation error when the request was refused
    reply: Reply | None = None

    @property
    def size(self) -> int:
        return len(self.raw)


# ---------------------------------------------------------------- validation
class Invalid(Exception):
    pass


def _text_ok(text: Any, where: str) -> None:
    if not isinstance(text, str):
        raise Invalid(f"{where}: text must be a string")
    if not text:
        raise Invalid(f"{where}: text content blocks must be non-empty")
    if not text.strip():
        raise Invalid(f"{where}: text content blocks must contain non-whitespace text")


def count_cache_breakpoints(body: dict) -> int:
    n = 1 if body.get("cache_control") else 0
    for tool in body.get("tools") or []:
        n += bool(tool.get("cache_control"))
    system = body.get("system")
    if isinstance(system, list):
        n += sum(bool(b.get("cache_control")) for b in system if isinstance(b, dict))
    for m in body.get("messages") or []:
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict):
                    n += bool(b.get("cache_control"))
                    if b.get("type") == "tool_result" and isinstance(b.get("content"), list):
                        n += sum(bool(c.get("cache_control")) for c in b["content"]
                                 if isinstance(c, dict))
    return n


def validate_headers(headers: dict, key: str | None) -> tuple[int, str, str] | None:
    """(status, error_type, message) when the headers would be refused, else None."""
    h = {k.lower(): v for k, v in headers.items()}
    given = None
    if "authorization" in h and h["authorization"].startswith("Bearer "):
        given = h["authorization"][len("Bearer "):]
    elif "x-api-key" in h:
        given = h["x-api-key"]
    if not given:
        return 401, "authentication_error", "x-api-key header or Authorization: Bearer is required"
    if key is not None and given != key:
        return 401, "authentication_error", "invalid x-api-key"
    if h.get("anthropic-version") not in API_VERSIONS:
        return 400, "invalid_request_error", "anthropic-version: header is required and must be a known version"
    if "json" not in h.get("content-type", ""):
        return 400, "invalid_request_error", "content-type must be application/json"
    return None


MID_CONVERSATION_SYSTEM = "mid-conversation-system-2026-04-07"


def validate_request(body: Any, count_only: bool = False, betas: frozenset = frozenset()) -> None:
    """Raise Invalid with the real API's kind of message when `body` would be refused.
    `betas`: the request's `anthropic-beta` names; Claude Code's mid-conversation-system beta
    lets `system` messages stand between the others, outside the alternation of roles."""
    if not isinstance(body, dict):
        raise Invalid("request body must be a JSON object")
    if MID_CONVERSATION_SYSTEM in betas and isinstance(body.get("messages"), list):
        kept = []
        for i, m in enumerate(body["messages"]):
            if isinstance(m, dict) and m.get("role") == "system" and i > 0:
                content = m.get("content")
                for j, b in enumerate(content if isinstance(content, list) else [content]):
                    _text_ok(b.get("text") if isinstance(b, dict) else b,
                             f"messages.{i}.content.{j}")
            else:
                kept.append(m)
        body = dict(body, messages=kept)
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise Invalid("model: Field required")
    if not count_only:
        mt = body.get("max_tokens")
        if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
            raise Invalid("max_tokens: Field required (a positive integer)")
    for gone in ("temperature", "top_p", "top_k"):
        if gone in body:
            raise Invalid(f"{gone}: Extra inputs are not permitted")

    tools = body.get("tools")
    tool_names: set[str] = set()
    if tools is not None:
        if not isinstance(tools, list):
            raise Invalid("tools: Input should be a valid list")
        for i, t in enumerate(tools):
            if not isinstance(t, dict):
                raise Invalid(f"tools.{i}: Input should be an object")
            name = t.get("name")
            if not isinstance(name, str) or not TOOL_NAME.match(name):
                raise Invalid(f"tools.{i}.custom.name: String should match pattern "
                              f"'^[a-zA-Z0-9_-]{{1,64}}$'")
            if name in tool_names:
                raise Invalid(f"tools: Tool names must be unique ({name!r})")
            tool_names.add(name)
            schema = t.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                raise Invalid(f"tools.{i}.custom.input_schema.type: Input should be 'object'")
            # The API takes JSON Schema draft 2020-12: a schema that is not one is refused.
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError
            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise Invalid(f"tools.{i}.custom.input_schema: JSON schema is invalid: "
                              f"{exc.message}") from None

    system = body.get("system")
    if system is not None:
        if isinstance(system, str):
            pass
        elif isinstance(system, list):
            for i, b in enumerate(system):
                if not isinstance(b, dict) or b.get("type") != "text":
                    raise Invalid(f"system.{i}: system blocks must be text blocks")
                _text_ok(b.get("text"), f"system.{i}")
        else:
            raise Invalid("system: Input should be a string or a list of text blocks")

    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Invalid("messages: at least one message is required")
    if not isinstance(messages[0], dict) or messages[0].get("role") != "user":
        raise Invalid("messages: first message must use the \"user\" role")

    seen_ids: set[str] = set()
    pending: list[str] = []  # tool_use ids of the previous assistant message
    uses_tools = False
    last = len(messages) - 1
    for i, m in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise Invalid(f"{where}.role: Input should be 'user' or 'assistant'")
        role = m["role"]
        if i > 0 and messages[i - 1].get("role") == role:
            raise Invalid(f"messages: roles must alternate between \"user\" and \"assistant\", "
                          f"but found multiple \"{role}\" roles in a row (at {i})")
        content = m.get("content")
        if isinstance(content, str):
            if role == "assistant" and i == last and content == "":
                pass
            else:
                _text_ok(content, f"{where}.content")
            blocks = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = content
        else:
            raise Invalid(f"{where}.content: Input should be a string or a list of blocks")
        if not blocks and not (role == "assistant" and i == last):
            raise Invalid(f"{where}: all messages must have non-empty content except for the "
                          f"optional final assistant message")

        if role == "user":
            results = []
            for j, b in enumerate(blocks):
                if not isinstance(b, dict):
                    raise Invalid(f"{where}.content.{j}: Input should be an object")
                if b.get("type") == "tool_result":
                    if j != len(results):
                        raise Invalid(f"{where}.content.{j}: tool_result blocks must come first "
                                      f"in a user message, before any other content")
                    results.append(b.get("tool_use_id"))
                    rc = b.get("content")
                    if isinstance(rc, list):
                        for k, c in enumerate(rc):
                            if not isinstance(c, dict):
                                raise Invalid(f"{where}.content.{j}.content.{k}: bad block")
                            if c.get("type") == "text":
                                _text_ok(c.get("text"), f"{where}.content.{j}.content.{k}")
                    elif rc is not None and not isinstance(rc, str):
                        raise Invalid(f"{where}.content.{j}.content: string or list of blocks")
                    if "is_error" in b and not isinstance(b["is_error"], bool):
                        raise Invalid(f"{where}.content.{j}.is_error: Input should be a boolean")
                elif b.get("type") == "text":
                    _text_ok(b.get("text"), f"{where}.content.{j}")
                elif b.get("type") in ("image", "document"):
                    pass
                else:
                    raise Invalid(f"{where}.content.{j}.type: unexpected block type "
                                  f"{b.get('type')!r} in a user message")
            if pending:
                missing = [p for p in pending if p not in results]
                if missing:
                    raise Invalid(f"messages.{i}: `tool_use` ids were found without `tool_result` "
                                  f"blocks immediately after: {', '.join(missing)}. Each "
                                  f"`tool_use` block must have a corresponding `tool_result` "
                                  f"block in the next message.")
            extra = [r for r in results if r not in pending]
            if extra:
                raise Invalid(f"{where}.content.0: unexpected `tool_use_id` found in "
                              f"`tool_result` blocks: {extra[0]}. Each `tool_result` block must "
                              f"have a corresponding `tool_use` block in the previous message.")
            if len(set(results)) != len(results):
                raise Invalid(f"{where}: duplicate tool_result for one tool_use id")
            uses_tools |= bool(results)
            pending = []
        else:
            pending = []
            for j, b in enumerate(blocks):
                if not isinstance(b, dict):
                    raise Invalid(f"{where}.content.{j}: Input should be an object")
                t = b.get("type")
                if t == "text":
                    _text_ok(b.get("text"), f"{where}.content.{j}")
                    if i == last and j == len(blocks) - 1 and b["text"] != b["text"].rstrip():
                        raise Invalid("final assistant content cannot end with trailing whitespace")
                elif t == "tool_use":
                    tid, name = b.get("id"), b.get("name")
                    if not isinstance(tid, str) or not TOOL_ID.match(tid):
                        raise Invalid(f"{where}.content.{j}.id: String should match pattern "
                                      f"'^[a-zA-Z0-9_-]+$'")
                    if tid in seen_ids:
                        raise Invalid(f"{where}.content.{j}: `tool_use` ids must be unique "
                                      f"(found {tid} twice)")
                    seen_ids.add(tid)
                    if not isinstance(name, str) or not TOOL_NAME.match(name):
                        raise Invalid(f"{where}.content.{j}.name: String should match pattern "
                                      f"'^[a-zA-Z0-9_-]{{1,64}}$'")
                    if not isinstance(b.get("input"), dict):
                        raise Invalid(f"{where}.content.{j}.input: Input should be an object")
                    if name not in tool_names:
                        raise Invalid(f"{where}.content.{j}: tool_use of {name!r}, which is not "
                                      f"among the request's tools")
                    pending.append(tid)
                    uses_tools = True
                elif t in ("thinking", "redacted_thinking"):
                    pass
                else:
                    raise Invalid(f"{where}.content.{j}.type: unexpected block type {t!r} in an "
                                  f"assistant message")
            if pending and i == last:
                raise Invalid(f"messages.{i}: the final assistant message has `tool_use` blocks "
                              f"that were never answered with `tool_result` blocks")
    if uses_tools and not tool_names:
        raise Invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    n = count_cache_breakpoints(body)
    if n > MAX_CACHE_BREAKPOINTS:
        raise Invalid(f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
                      f"provided. Found {n}.")


# ---------------------------------------------------------------- the server
def _tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, separators=(",", ":"))) // 4)


class FakeAnthropic:
    def __init__(self, key: str | None = "test-key", model: str = "claude-test"):
        self.key = key if key is not None else "anything"
        self._check_key = key
        self.model = model
        self.requests: list[Recorded] = []
        self._queue: list[Reply | Callable[[dict], Reply]] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._cache: set[str] = set()
        self.default = Reply.text("(the fake server has no scripted reply left)")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    # -- test API
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply | Callable[[dict], Reply]) -> "FakeAnthropic":
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def invalid(self) -> list[Recorded]:
        return [r for r in self.requests if r.error]

    @property
    def message_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.split("?")[0].endswith("/v1/messages")]

    def release_stalls(self) -> None:
        self._release.set()

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- internals
    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            item = self._queue.pop(0) if self._queue else self.default
        return item(body) if callable(item) else item

    def _usage(self, body: dict) -> dict:
        """Input tokens, with a cache read when the cached prefix was seen before."""
        total = _tokens(body)
        prefix: list = []
        cached_upto = None
        for i, t in enumerate(body.get("tools") or []):
            prefix.append(t)
            if t.get("cache_control"):
                cached_upto = i + 1
        prefix = list((body.get("tools") or [])[:cached_upto or 0])
        system = body.get("system")
        if isinstance(system, list) and any(b.get("cache_control") for b in system):
            upto = max(i for i, b in enumerate(system) if b.get("cache_control")) + 1
            prefix = list(body.get("tools") or []) + system[:upto]
        usage = {"input_tokens": total, "output_tokens": 0,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if prefix:
            key = hashlib.sha256(json.dumps([body.get("model"), prefix], sort_keys=True)
                                 .encode()).hexdigest()
            n = _tokens(prefix)
            usage["input_tokens"] = max(1, total - n)
            if key in self._cache:
                usage["cache_read_input_tokens"] = n
            else:
                self._cache.add(key)
                usage["cache_creation_input_tokens"] = n
        return usage

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                # Claude Code checks that the API answers (`HEAD /`) before it starts.
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                rec = Recorded(self.path, dict(self.headers.items()), body, raw)
                fake.requests.append(rec)
                path = self.path.split("?")[0]
                bad = validate_headers(rec.headers, fake._check_key)
                if bad:
                    rec.error = bad[2]
                    return self._error(*bad)
                if path not in ("/v1/messages", "/v1/messages/count_tokens"):
                    rec.error = f"no route {path}"
                    return self._error(404, "not_found_error", f"Not found: {path}")
                betas = frozenset(b.strip() for b in
                                  (self.headers.get("anthropic-beta") or "").split(","))
                try:
                    validate_request(body, count_only=path.endswith("count_tokens"), betas=betas)
                except Invalid as exc:
                    rec.error = str(exc)
                    return self._error(400, "invalid_request_error", str(exc))
                if path.endswith("count_tokens"):
                    return self._json(200, {"input_tokens": _tokens(body)})
                reply = fake._next_reply(body)
                rec.reply = reply
                if reply.status != 200:
                    return self._error(reply.status, reply.error_type, reply.error_message,
                                       reply.headers)
                usage = fake._usage(body)
                if body.get("stream"):
                    self._stream(reply, body, usage)
                else:
                    self._json(200, fake_message(reply, body, usage, fake.model))

            def _json(self, status: int, obj: dict, headers: dict | None = None):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_fake{next(_ids)}")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status, etype, message, headers=None):
                self._json(status, {"type": "error", "error": {"type": etype, "message": message},
                                    "request_id": f"req_fake{next(_ids)}"}, headers)

            def _event(self, name: str, data: dict, delay: float = 0.0):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                if delay:
                    time.sleep(delay)

            def _stream(self, reply: Reply, body: dict, usage: dict):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.send_header("request-id", f"req_fake{next(_ids)}")
                self.end_headers()
                self.close_connection = True
                try:
                    self._stream_events(reply, body, usage)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up (Ctrl-C, timeout): fine

            def _stall(self):
                fake._release.wait(120)

            def _stream_events(self, reply: Reply, body: dict, usage: dict):
                d = reply.delay
                msg = fake_message(Reply(), body, {**usage, "output_tokens": 1}, fake.model)
                msg["stop_reason"] = None
                self._event("message_start", {"type": "message_start", "message": msg}, d)
                self._event("ping", {"type": "ping"})
                out_tokens = 1
                for index, block in enumerate(reply.blocks):
                    if reply.error_after == index:
                        return self._event("error", {"type": "error", "error": {
                            "type": reply.error_type, "message": reply.error_message}})
                    stalling = reply.stall_after == index
                    cut = reply.cut_last_tool and index == len(reply.blocks) - 1
                    if block["type"] == "text":
                        start = {"type": "text", "text": ""}
                        payload, kind, key = block["text"], "text_delta", "text"
                    else:
                        start = {"type": "tool_use", "id": block["id"], "name": block["name"],
                                 "input": {}}
                        payload = json.dumps(block["input"])
                        kind, key = "input_json_delta", "partial_json"
                    if stalling and not reply.stall_partial:
                        return self._stall()
                    self._event("content_block_start", {"type": "content_block_start",
                                                        "index": index, "content_block": start}, d)
                    if cut:
                        payload = payload[: max(1, len(payload) // 2)]
                    pieces = [payload[i:i + reply.chunk]
                              for i in range(0, len(payload), reply.chunk)] or [""]
                    if stalling:
                        pieces = pieces[: max(1, len(pieces) // 2)]
                    for piece in pieces:
                        if piece or kind == "input_json_delta":
                            self._event("content_block_delta", {
                                "type": "content_block_delta", "index": index,
                                "delta": {"type": kind, key: piece}}, d)
                        out_tokens += max(1, len(piece) // 4)
                    if stalling:
                        return self._stall()
                    self._event("content_block_stop", {"type": "content_block_stop",
                                                       "index": index}, d)
                n = len(reply.blocks)
                if reply.error_after is not None and reply.error_after >= n:
                    return self._event("error", {"type": "error", "error": {
                        "type": reply.error_type, "message": reply.error_message}})
                if reply.stall_after is not None and reply.stall_after >= n:
                    return self._stall()
                self._event("message_delta", {
                    "type": "message_delta",
                    "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
                    "usage": {"output_tokens": reply.usage_output or out_tokens}}, d)
                self._event("message_stop", {"type": "message_stop"})

        return Handler


def _stop_reason(reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    if reply.cut_last_tool:
        return "max_tokens"
    return "tool_use" if any(b["type"] == "tool_use" for b in reply.blocks) else "end_turn"


def fake_message(reply: Reply, body: dict, usage: dict, model: str) -> dict:
    content = []
    for b in reply.blocks:
        if b["type"] == "text":
            content.append({"type": "text", "text": b["text"], "citations": None})
        else:
            content.append(dict(b))
    out = sum(_tokens(b) for b in reply.blocks) if reply.blocks else 0
    return {"id": f"msg_fake{next(_ids)}", "type": "message", "role": "assistant",
            "content": content, "model": body.get("model") or model,
            "stop_reason": _stop_reason(reply) if reply.blocks else None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": usage.get("output_tokens") or out}}
