"""What `lispshell mcp` says about itself: its name, the tool definitions and the instructions.
One source for the fast first answers (handshake.py) and for the SDK's server (server.py)."""
from __future__ import annotations

from lispshell.mcp.runtime import Runtime
from lispshell.tools.registry import Tool

SERVER_NAME = "lispshell"


def tool_definition(tool: Tool) -> dict:
    """The registry's tool as MCP lists it (wire names). Annotations are hints for clients;
    the server enforces its own gate whatever they say."""
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": {
            "readOnlyHint": tool.read_only,
            "destructiveHint": tool.destructive,
            # Only evaluated code can reach beyond the root and the image (files, network).
            "openWorldHint": tool.evaluates,
        },
    }


def instructions(runtime: Runtime) -> str:
    lisp = runtime.options.lisp
    image = (f"The live-image tools (eval, describe, ...) talk to the person's own running {lisp} "
             f"image at {runtime.options.connect}, which lispshell did not start: it is their "
             "program, live; never exit or restart it. "
             if getattr(runtime.options, "connect", None) else
             f"The live-image tools (eval, describe, ...) talk to one {lisp} image that starts on "
             "first use and keeps its state between calls. ")
    # The server cannot know whether a person sees the client's questions (Claude Code in
    # print mode answers them itself, unseen): say only what it enforces.
    live = (image
            + ("eval runs without confirmation (the server was started with --allow-eval)."
               if runtime.options.allow_eval else
               "eval runs only when the MCP client confirms that call (it asks the person, or "
               "whatever answers for them); an eval nobody answered fails with NO_ONE_TO_ASK: "
               "then ask the person rather than retrying.")
            if lisp else "No Lisp image is attached (--lisp none): only text and file tools.")
    if lisp and runtime.options.untrusted_project:
        live += (" The image is a bare Lisp, without the project in the root: "
                 + runtime.options.untrusted_project)
    return ("lispshell: tools for Lisp code (Common Lisp, Scheme, Clojure): delimiter checks, "
            "syntax validation and repair, structural edits. File paths are relative to "
            f"{runtime.root} and must stay inside it. {live}")
