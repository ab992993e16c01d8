"""The agent loop: our own loop on `AsyncAnthropic.messages.stream()` (not the beta tool runner).

One `ask(text)` streams the model's answer, runs the tools it asks for (several per turn, in
order, off the event loop), feeds the results back, and stops when the model stops, when the
tool-round limit is reached, on an error (one clear line) or when cancelled (Ctrl-C). The
conversation is repaired on every way out, so the next question always sends a valid history.

Caching: the system prompt is one text block carrying the only explicit breakpoint, so tools +
system (byte-identical from request to request: nothing volatile goes into them) are one cached
prefix; the top-level `cache_control` lets the API place the moving breakpoint on the history.

`anthropic` is imported lazily (about 1.8 s), on the first question, never at REPL start-up.
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Callable

from lispshell.config import LlmSettings
from lispshell.llm.conversation import Conversation
from lispshell.tools.registry import ToolContext, all_tools, call_tool, get_tool, result_text

NO_KEY_MESSAGE = ("The LLM is not enabled: no API key found. Set ANTHROPIC_API_KEY (or "
                  "ANTHROPIC_BASE_URL and a key for a local Anthropic-compatible server) and "
                  "restart lispshell. Lisp works as usual.")
CUT_TOOL_NOTE = ("[Your last tool call was cut off by the max_tokens limit and was not run. "
                 "Ask for less at once.]")


@dataclass
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    requests: int = 0

    def add(self, u: Any) -> None:
        self.input += getattr(u, "input_tokens", 0) or 0
        self.output += getattr(u, "output_tokens", 0) or 0
        self.cache_read += getattr(u, "cache_read_input_tokens", 0) or 0
        self.cache_write += getattr(u, "cache_creation_input_tokens", 0) or 0
        self.requests += 1

    def plus(self, other: "Usage") -> "Usage":
        return Usage(self.input + other.input, self.output + other.output,
                     self.cache_read + other.cache_read, self.cache_write + other.cache_write,
                     self.requests + other.requests)

    def line(self) -> str:
        return (f"in {self.input:,}  out {self.output:,}  cache read {self.cache_read:,}  "
                f"cache write {self.cache_write:,}  ({self.requests} request"
                f"{'s' if self.requests != 1 else ''})")


# The [llm] settings, typed, their defaults in config/default.toml (lispshell/config.py).
LLMSettings = LlmSettings


class Display:
    """What the agent shows. This base records everything (the tests read it); the REPL uses
    `lispshell.llm.render.RichDisplay`."""

    def __init__(self, record: bool = True):
        self.events: list[tuple] = []
        self.record = record
        self.show_tools = False

    def _rec(self, *event) -> None:
        if self.record:
            self.events.append(event)

    def text(self, delta: str) -> None:
        self._rec("text", delta)

    def end_text(self) -> None:
        self._rec("end")

    def tool(self, name: str, args: dict, result: dict) -> None:
        self._rec("tool", name, args, result)

    def notice(self, message: str) -> None:
        self._rec("notice", message)

    # Progress, for a display that shows the person the turn is alive (a spinner).
    def turn(self, running: bool) -> None:
        """A question's turn starts (True) or has ended, however it ended (False)."""

    def waiting(self, what: str) -> None:
        """A request is on its way (`what`: "thinking")."""

    def tokens(self, output: int) -> None:
        """Output tokens of the turn's finished requests so far."""

    def tool_start(self, name: str, args: dict, asks: bool) -> None:
        """A tool call starts; `asks`: the eval gate will ask the person first."""
        self._rec("tool_start", name, args)

    def error(self, message: str) -> None:
        self._rec("error", message)

    @property
    def all_text(self) -> str:
        return "".join(e[1] for e in self.events if e[0] == "text")

    def messages(self, kind: str) -> list[str]:
        return [e[1] for e in self.events if e[0] == kind]


RETRY_NAMES = {408: "request timeout", 409: "conflict", 429: "rate limited", 500: "server error",
               502: "bad gateway", 503: "unavailable", 504: "gateway timeout", 529: "overloaded"}


def make_client(settings: LLMSettings, on_retry: Callable[[int], None] | None = None):
    """An AsyncAnthropic from the SDK's usual sources (ANTHROPIC_API_KEY / AUTH_TOKEN / profile,
    ANTHROPIC_BASE_URL), or None when no credential is found. Never prints the key.
    `on_retry(status)` is called when the SDK is about to retry an answer (429, 529...), so the
    person sees why nothing is happening."""
    import logging

    import anthropic
    import httpx2

    # The SDK logs credential warnings through `logging`; in a REPL they would land in the
    # middle of the screen. (It never logs the key itself; we never enable its debug log.)
    logging.getLogger("anthropic").addHandler(logging.NullHandler())
    kwargs: dict[str, Any] = {
        "timeout": httpx2.Timeout(settings.timeout, connect=settings.connect_timeout),
        "max_retries": settings.max_retries,
    }
    if settings.base_url:
        kwargs["base_url"] = settings.base_url
    if on_retry is not None:
        async def watch_retries(request, call_next):
            response = await call_next(request)
            status = response.status_code
            if (status in (408, 409, 429) or status >= 500) and \
                    request.retries_taken < settings.max_retries:
                on_retry(status)
            return response

        kwargs["middleware"] = [watch_retries]
    try:
        client = anthropic.AsyncAnthropic(**kwargs)
    except anthropic.CredentialsError:
        return None
    if client.api_key is None and client.auth_token is None and client.credentials is None:
        return None
    return client


def describe_error(exc: BaseException, settings: LLMSettings) -> str:
    """One line per error class; never a traceback, never the key."""
    import anthropic
    import httpx2

    status = getattr(exc, "status_code", None)
    etype = getattr(exc, "type", None) or ""
    detail = getattr(exc, "api_message", None) or ""
    if isinstance(exc, anthropic.CredentialsError) or (
            isinstance(exc, TypeError) and "authentication" in str(exc)):
        return NO_KEY_MESSAGE
    if isinstance(exc, anthropic.AuthenticationError) or etype == "authentication_error":
        return "Authentication failed (401): the API key was refused. Check ANTHROPIC_API_KEY."
    if isinstance(exc, anthropic.PermissionDeniedError) or etype == "permission_error":
        return f"Permission denied (403): {detail or 'this key may not use this model or feature'}."
    if isinstance(exc, anthropic.NotFoundError) or etype == "not_found_error":
        return f"Not found (404): check the model name ({settings.model}) and ANTHROPIC_BASE_URL."
    if isinstance(exc, anthropic.RateLimitError) or etype == "rate_limit_error":
        return "Rate limited (429): too many requests for now. Wait a moment and ask again."
    if isinstance(exc, anthropic.OverloadedError) or etype == "overloaded_error":
        return "The API is overloaded (529). Wait a moment and ask again; the conversation is kept."
    if isinstance(exc, (anthropic.APITimeoutError, httpx2.TimeoutException, TimeoutError)):
        return (f"Timed out: no answer from the API within {settings.timeout:g} s "
                f"([llm] timeout). Ask again to retry.")
    if isinstance(exc, anthropic.APIConnectionError) or isinstance(exc, httpx2.TransportError):
        return "Cannot reach the API (connection error). Check the network or ANTHROPIC_BASE_URL."
    if isinstance(exc, anthropic.BadRequestError) or etype == "invalid_request_error":
        return f"The API refused the request (400): {detail or exc}"
    if isinstance(exc, anthropic.APIStatusError):
        return f"API error ({status or etype}): {detail or etype or 'unknown'}. Ask again to retry."
    return f"LLM error: {type(exc).__name__}: {str(exc)[:200]}"


class Agent:
    def __init__(self, *, settings: LLMSettings, conversation: Conversation, ctx: ToolContext,
                 system: str, display: Display | None = None, client: Any = None):
        self.settings = settings
        self.conv = conversation
        self.ctx = ctx
        self.display = display or Display()
        self.system = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        self._client = client
        self._client_checked = client is not None
        self._tool_defs: dict[bool, list[dict]] = {}
        self._too_long = ""  # the error line kept while a too-long prompt is trimmed and retried
        self.turns: list[Usage] = []
        self.total = Usage()
        self._stop = False  # the person ended the turn at a question (Ctrl-C at the gate)

    # --------------------------------------------------------------- request parts
    @property
    def gate_mode(self) -> str:
        gate = self.ctx.gate
        return gate.mode if gate is not None else "off"

    def tool_definitions(self) -> list[dict]:
        """The tools sent: the configured groups, without `eval` when the gate is off. Built
        once per gate state, so the list is byte-identical from request to request."""
        with_eval = self.gate_mode != "off"
        if with_eval not in self._tool_defs:
            self._tool_defs[with_eval] = [
                t.definition() for t in all_tools(self.settings.tool_groups)
                if with_eval or not t.evaluates]
        return self._tool_defs[with_eval]

    def request_params(self) -> dict:
        tools = self.tool_definitions()
        return {
            "model": self.settings.model,
            "max_tokens": self.settings.max_tokens,
            "system": self.system,
            "tools": tools,
            "messages": self.conv.for_request([t["name"] for t in tools]),
            "cache_control": {"type": "ephemeral"},
        }

    def client(self):
        if not self._client_checked:
            self._client_checked = True
            self._client = make_client(self.settings, self._retrying)
        return self._client

    def _retrying(self, status: int) -> None:
        self.display.notice(f"The API answered {status} ({RETRY_NAMES.get(status, 'error')}); "
                            f"retrying...")

    @property
    def has_key(self) -> bool:
        return self.client() is not None

    # --------------------------------------------------------------- the loop
    async def ask(self, text: str) -> None:
        """One question, to the end of the model's turn. Cancel the task to stop (Ctrl-C)."""
        client = self.client()
        if client is None:
            self.display.error(NO_KEY_MESSAGE)
            return
        self._stop = False
        start = self.conv.checkpoint()
        self.conv.add_user_text(text)
        self._fit_context()
        turn = Usage()
        self.turns.append(turn)
        self.display.turn(True)
        try:
            for _round in range(self.settings.max_tool_rounds):
                content, stop = await self._one_request(client, turn)
                if content is None and stop == "too_long" and self._fit_context(force=True):
                    content, stop = await self._one_request(client, turn)  # once more, shorter
                if content is None:  # an error, already shown
                    if stop == "too_long":
                        self.display.error(self._too_long)
                    return
                if stop == "refusal":
                    self._refused(content, start)
                    return
                note = ""
                if stop == "max_tokens" and content and content[-1].get("type") == "tool_use":
                    # the last tool call's input was cut mid-way: it must not run
                    content = content[:-1]
                    note = CUT_TOOL_NOTE
                    self.display.notice("The answer was cut by the max_tokens limit; the cut tool "
                                        "call was not run.")
                elif stop == "max_tokens":
                    self.display.notice(f"(cut at max_tokens = {self.settings.max_tokens})")
                elif stop == "model_context_window_exceeded":
                    self.display.notice("The answer stopped at the end of the model's context; "
                                        "older turns will be dropped for the next question.")
                    self._fit_context(force=True)
                kept = self.conv.add_assistant(content)
                uses = [b for b in kept if b.get("type") == "tool_use"]
                if not uses:
                    if note:
                        self.conv.add_user_text(note)
                    return
                await self._run_tools(uses, note)
                if self._stop:
                    self.display.notice("Turn stopped: the model was told you declined; ask "
                                        "again to go on.")
                    return
            self.display.notice(f"Stopped after {self.settings.max_tool_rounds} tool rounds "
                                f"([llm] max_tool_rounds). Ask again to let it continue.")
        finally:
            self.display.turn(False)
            self.total = self.total.plus(turn) if turn.requests else self.total
            self.conv.repair()

    async def _one_request(self, client, turn: Usage) -> tuple[list[dict] | None, str | None]:
        """Stream one response. Returns (content blocks, stop_reason), or (None, None) after
        an error. On cancel, keeps the finished text (marked) and re-raises."""
        stream = None
        self.display.waiting("thinking")
        try:
            async with client.messages.stream(**self.request_params()) as stream:
                async for event in stream:
                    if event.type == "text":
                        self.display.text(event.text)
                final = await stream.get_final_message()
        except asyncio.CancelledError:  # the REPL says "Interrupted."
            self._keep_partial(stream)
            self.display.end_text()
            raise
        except Exception as exc:  # SDK, transport, or a malformed stream: one clear line
            self.display.end_text()
            message = describe_error(exc, self.settings)
            detail = (getattr(exc, "api_message", None) or "").lower()
            if getattr(exc, "status_code", None) == 400 and ("too long" in detail or "context" in detail):
                self._too_long = message  # the caller trims and tries once more
                return None, "too_long"
            self.display.error(message)
            return None, None
        self.display.end_text()
        turn.add(final.usage)
        self.display.tokens(turn.output)
        content = [_plain_block(b) for b in final.content]
        return [b for b in content if b], final.stop_reason

    def _keep_partial(self, stream) -> None:
        """Ctrl-C mid-stream: keep the text already shown, drop unfinished tool calls."""
        try:
            snapshot = stream.current_message_snapshot if stream is not None else None
        except Exception:
            snapshot = None
        if snapshot is None:
            return
        texts = [_plain_block(b) for b in snapshot.content if getattr(b, "type", "") == "text"]
        texts = [b for b in texts if b and b["text"].strip()]
        if texts:
            texts[-1] = {"type": "text", "text": texts[-1]["text"].rstrip() + " [interrupted]"}
            self.conv.add_assistant(texts)

    def _refused(self, content: list[dict], start: int) -> None:
        texts = [b for b in content if b.get("type") == "text" and b["text"].strip()]
        if texts:
            self.conv.add_assistant(texts)
        elif self.conv.checkpoint() == start + 1:
            # nothing came back and nothing else happened: take the question out, so that
            # the next one is not refused again for it
            self.conv.rollback(start)
        self.display.notice("The model declined to answer this (refusal).")

    async def _run_tools(self, uses: list[dict], note: str) -> None:
        """Run each tool call in order, off the event loop; always answer every call."""
        evals = [u for u in uses if _evaluates(u["name"])]   # asked one by one: "2 of 3"
        results: list[tuple[str, str, bool]] = []
        try:
            for use in uses:
                if use in evals:
                    self.ctx.extra["eval_index"] = evals.index(use) + 1
                    self.ctx.extra["eval_total"] = len(evals)
                if self._stop:    # the person stopped the turn at an earlier call's question
                    results.append((use["id"], "Not run: the person stopped this turn.", True))
                    continue
                self.display.tool_start(use["name"], use["input"],
                                        asks=use in evals and self.gate_mode == "ask")
                result = await asyncio.to_thread(call_tool, use["name"], use["input"], self.ctx)
                self.display.tool(use["name"], use["input"], result)
                results.append((use["id"], result_text(result), not result.get("ok", False)))
        except asyncio.CancelledError:
            self._interrupt_lisp()
            done = {r[0] for r in results}
            for use in uses:
                if use["id"] not in done:
                    results.append((use["id"], "Interrupted by the person (Ctrl-C) before it "
                                               "finished.", True))
            self.conv.add_tool_results(results)
            raise
        self.conv.add_tool_results(results, note)

    def stop_turn(self) -> None:
        """End the turn once the running tool call returns: its result and the other calls'
        (not run) are recorded, and no further request is sent. From any thread."""
        self._stop = True

    def _interrupt_lisp(self) -> None:
        try:
            session = self.ctx.session() if self.ctx.session else None
            if session is not None and session.busy:
                session.interrupt()
        except Exception:
            pass

    def _fit_context(self, force: bool = False) -> bool:
        """Drop the oldest turns when the history nears the context (or, with `force`, after
        the API said it is too long: drop down to half). True when something was dropped."""
        fixed = len(str(self.system)) // 3 + len(str(self.tool_definitions())) // 3
        room = self.settings.context_tokens - self.settings.max_tokens - fixed
        estimate = self.conv.estimate_tokens()
        if not force and estimate <= 0.8 * room:
            return False
        target = int(0.6 * room) if not force else min(int(0.6 * room), estimate // 2)
        dropped = self.conv.trim_to(target)
        if dropped:
            self.display.notice(f"The conversation was getting long: dropped the {dropped} "
                                f"oldest messages to fit the model's context.")
        return bool(dropped)

    # --------------------------------------------------------------- the person's evals
    def record_eval(self, code: str, result: dict, tool: str = "eval",
                    tool_input: dict | None = None) -> None:
        """The person's eval, seen by the model as its own `eval` call (`result` is the same
        dict the eval tool returns); what the person did with a REPL command the model has as
        a tool (,time, ,profile, ,trace, ,trace-log) as that tool's call, when it is sent, else
        as an eval of `code`."""
        sent = {d["name"] for d in self.tool_definitions()}
        if tool != "eval" and tool not in sent:
            tool, tool_input = "eval", None
        self.conv.record_eval(code, result_text(result), not result.get("ok", False),
                              tool=tool, tool_input=tool_input)

    def usage_report(self) -> str:
        lines = []
        for i, t in enumerate(self.turns[-10:], start=max(1, len(self.turns) - 9)):
            lines.append(f"turn {i}: {t.line()}")
        lines.append(f"session: {self.total.line()}")
        lines.append(f"history: about {self.conv.estimate_tokens():,} tokens in "
                     f"{len(self.conv.messages)} messages (context {self.settings.context_tokens:,}; "
                     f"the oldest turns are dropped near 80%)")
        return "\n".join(lines)


def _plain_block(block: Any) -> dict | None:
    """An SDK content block as the plain dict the API takes back (no SDK-only fields)."""
    t = getattr(block, "type", None)
    if t == "text":
        return {"type": "text", "text": block.text}
    if t == "tool_use":
        inp = block.input if isinstance(block.input, dict) else {}
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": inp}
    return None


def env_has_key() -> bool:
    """A cheap check without importing the SDK (for the REPL's first line)."""
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def _evaluates(name: str) -> bool:
    tool = get_tool(name) if isinstance(name, str) else None
    return bool(tool and tool.evaluates)
