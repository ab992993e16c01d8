"""The MCP server: the one tool registry as `tools/list` and `tools/call`.

The SDK's low-level `Server` is used because the registry already has exact JSON schemas; a
decorator framework would only rebuild them from Python signatures.
"""
from __future__ import annotations

import functools

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp_types.version import is_version_at_least

from lispshell import __version__
from lispshell.mcp import describe
from lispshell.mcp.consent import (CONFIRM_SCHEMA, EvalConsent, Ledger, call_digest,
                                   client_can_elicit)
from lispshell.mcp.runtime import Runtime
from lispshell.tools.registry import Tool, result_text

# From this protocol revision on, elicitation rides an `InputRequiredResult` (see consent.py).
ROUND_TRIP_VERSION = "2026-07-28"


def tool_definition(tool: Tool) -> types.Tool:
    """The registry's tool as MCP lists it: the same definition the fast start sends."""
    return types.Tool.model_validate(describe.tool_definition(tool))


def tool_result(result: dict) -> types.CallToolResult:
    """Text for clients that show text, the same dict as structured content, and `isError`
    for `ok: false`: a failure is an answer the model reads, never a protocol error."""
    return types.CallToolResult(
        content=[types.TextContent(text=result_text(result))],
        structured_content=result,
        is_error=not result.get("ok", False),
    )


def build_server(runtime: Runtime) -> Server:
    ledger = Ledger()

    async def list_tools(ctx: ServerRequestContext, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool_definition(t) for t in runtime.tools()])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams):
        session = ctx.session
        modern = is_version_at_least(ctx.protocol_version, ROUND_TRIP_VERSION)

        async def elicit(message: str) -> types.ElicitResult:
            return await session.elicit_form(message, CONFIRM_SCHEMA,
                                             related_request_id=ctx.request_id)

        consent = EvalConsent(
            lisp=runtime.options.lisp or "Lisp",
            can_elicit=client_can_elicit(session.client_capabilities),
            modern=modern, ledger=ledger, call=call_digest(params.name, params.arguments),
            elicit=elicit, timeout=runtime.confirm_timeout,
            input_responses=params.input_responses, request_state=params.request_state)
        run = functools.partial(runtime.call, params.name, params.arguments,
                                runtime.context(consent.confirm, consent.confirm_edit))
        try:
            # Handlers block (a Lisp eval can take seconds): keep the event loop free.
            result = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            runtime.interrupt(params.name)  # the client gave up: don't leave the image busy
            raise
        if consent.pending:
            return consent.input_required()
        return tool_result(result)

    return Server(describe.SERVER_NAME, version=__version__,
                  instructions=describe.instructions(runtime),
                  on_list_tools=list_tools, on_call_tool=call_tool)
