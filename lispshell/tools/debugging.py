"""The waiting error, for the model: `backtrace`, `eval_in_frame`, `invoke_restart`.

An error in the REPL waits in a debug level (lispshell/lisp/levels.py). `backtrace` reads it
without evaluating anything (the condition, its restarts, the frames with their bounded locals
and source positions); `eval_in_frame` and `invoke_restart` run code, so they go through the
gate exactly as `eval` does, showing the person what runs and where. The loop they serve is
the Lisp programmer's: read the frames, propose the missing definition, let the person retry.
"""
from __future__ import annotations

from lispshell.lisp.contract import NotOverThisTransport
from lispshell.tools.live import DECLINED, EVAL_CODE_CAP, _check_complete, eval_result
from lispshell.tools.gate import require
from lispshell.tools.registry import ToolContext, ToolError, register

FRAMES_CAP = 40        # frames listed
LOCALS_FRAMES = 8      # the innermost frames whose locals are sent with them


def _level(ctx: ToolContext, last_error: bool = False):
    """The session, with an error waiting in a level (or, `last_error`, whose last error's
    frames the Lisp kept: Guile's errors unwind at once)."""
    session = ctx.lisp()
    if not session.level and not (last_error and session.dialect.last_error_frames):
        raise ToolError("NO_LEVEL", "No error is waiting: no debug level is open. An error "
                        "the person or you evaluate in the REPL opens one (over MCP and in "
                        "batch runs errors unwind at once).")
    return session


def _asked(ctx: ToolContext, call):
    try:
        return call()
    except NotOverThisTransport as exc:
        raise ToolError("NOT_SUPPORTED", str(exc)) from None
    except ValueError as exc:
        raise ToolError("BAD_INPUT", str(exc)) from None


@register(
    "backtrace",
    "The error waiting in the REPL's debug level: condition, restarts (numbered for "
    "invoke_restart), and frames innermost first with their locals and source file:line. "
    "Evaluates nothing.",
    {"type": "object", "properties": {}},
    group="debug", read_only=True)
def backtrace_tool(args: dict, ctx: ToolContext) -> dict:
    session = _level(ctx, last_error=True)
    frames = _asked(ctx, session.backtrace)
    err = session.waiting
    out_frames = []
    for f in frames[:FRAMES_CAP]:
        frame = {"index": f.index, "call": f.call}
        if f.source:
            frame["source"] = f.source
        if f.index < LOCALS_FRAMES:
            try:
                frame["locals"] = {loc.name: loc.value for loc in session.frame_locals(f.index)}
            except (NotOverThisTransport, ValueError):
                pass
        out_frames.append(frame)
    result = {"level": session.level, "frames": out_frames}
    if not session.level:
        result["note"] = (f"{session.dialect.display} errors unwind at once: these are the last "
                          "error's frames; nothing waits, so there are no restarts to invoke")
    if err is not None:
        result["condition"] = {"type": err.type, "message": err.message}
        result["restarts"] = [f"{n}: [{r.partition(chr(9))[0]}] {r.partition(chr(9))[2]}"
                              for n, r in enumerate(err.restarts)]
    if len(frames) > FRAMES_CAP:
        result["frames_cut"] = f"{len(frames) - FRAMES_CAP} outer frames not listed"
    if len(frames) > LOCALS_FRAMES:
        result["locals_note"] = (f"locals are sent for the {LOCALS_FRAMES} innermost frames; "
                                 "values are printed bounded (length 20, depth 4)")
    return result


def _gated(ctx: ToolContext, shown: str) -> str:
    return require(ctx, shown, "Not run", DECLINED)


@register(
    "eval_in_frame",
    "Evaluate code with a frame's local variables in scope, in the error waiting in the REPL's "
    "debug level (frame numbers from backtrace). Needs the person's approval, as eval does.",
    {"type": "object",
     "properties": {"frame": {"type": "integer", "minimum": 0},
                    "code": {"type": "string", "description": "one form"}},
     "required": ["frame", "code"]},
    group="debug", read_only=False, destructive=True, evaluates=True)
def eval_in_frame_tool(args: dict, ctx: ToolContext) -> dict:
    code, index = args["code"], args["frame"]
    if not code.strip():
        raise ToolError("BAD_INPUT", "code is empty")
    if len(code) > EVAL_CODE_CAP:
        raise ToolError("TOO_LARGE", f"the code is over {EVAL_CODE_CAP:,} characters")
    session = _level(ctx)
    _check_complete(code, session.dialect.syntax)
    frames = _asked(ctx, session.backtrace)
    if not 0 <= index < len(frames):
        raise ToolError("BAD_INPUT", f"no frame {index}: choose 0 to {len(frames) - 1}")
    header = f";; in frame {index}: {frames[index].call}\n"
    ran = _gated(ctx, header + code)
    ran = ran[len(header):] if ran.startswith(header) else ran
    res = _asked(ctx, lambda: session.eval_in_frame(index, ran, output_cap=ctx.output_cap))
    result = eval_result(res)
    if ran != code:
        result["edited"] = "The person edited the code before it ran: `ran` is what ran."
        result["ran"] = ran
    return result


@register(
    "invoke_restart",
    "Invoke a restart of the error waiting in the REPL's debug level (numbers from backtrace), "
    "e.g. CONTINUE after the missing function was defined; value: a form for a restart that "
    "asks for one (USE-VALUE). Needs the person's approval, as eval does.",
    {"type": "object",
     "properties": {"restart": {"type": "integer", "minimum": 0},
                    "value": {"type": "string", "description": "a form, if the restart asks"}},
     "required": ["restart"]},
    group="debug", read_only=False, destructive=True, evaluates=True)
def invoke_restart_tool(args: dict, ctx: ToolContext) -> dict:
    index, value = args["restart"], (args.get("value") or "").strip()
    session = _level(ctx)
    restarts = session.restarts
    if not 0 <= index < len(restarts):
        raise ToolError("BAD_INPUT", f"no restart {index}: choose 0 to {len(restarts) - 1}"
                        if restarts else "the waiting error offers no restarts")
    if value:
        _check_complete(value, session.dialect.syntax)
    name, _, report = restarts[index].partition("\t")
    shown = f";; invoke restart {index}: [{name}] {report}\n" + (value or ";; (no value)")
    ran = _gated(ctx, shown)
    if ran != shown:        # the person edited the value form
        value = ran.split("\n", 1)[1] if "\n" in ran else ""
        value = "" if value.strip() == ";; (no value)" else value
    res = _asked(ctx, lambda: session.invoke_restart(index, value))
    return eval_result(res)
