"""The waiting error, for the model: `backtrace`, `eval_in_frame`, `invoke_restart`; and
breakpoints: `set_breakpoint`, `clear_breakpoint`.

An error in the REPL waits in a debug level (lispshell/lisp/levels.py). `backtrace` reads it
without evaluating anything (the condition, its restarts, the frames with their bounded locals
and source positions); `eval_in_frame` and `invoke_restart` run code, so they go through the
gate exactly as `eval` does, showing the person what runs and where. The loop they serve is
the Lisp programmer's: read the frames, propose the missing definition, let the person retry.

A breakpoint (lispshell/lisp/levels.py: `set_breakpoint`) changes the image (its function is
wrapped, its condition runs at each call), so setting one passes the gate as an eval does,
shown as `;; break on NAME when CONDITION`; clearing one changes nothing the person would
refuse, and is not asked. At a breakpoint's level, `backtrace` shows the call and its
arguments by name (frame 0's locals), `eval` runs with them bound, and `invoke_restart` runs
the call (CONTINUE) or returns a value instead (RETURN-VALUE).
"""
from __future__ import annotations

import re

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


BREAK_SHOWN = re.compile(r"\A;; break on (\S+)(?: when (.+))?\Z", re.S)


def _point(p) -> dict:
    out = {"number": p.number, "name": p.name, "hits": p.hits,
           "set_by": "you" if p.by_model else "the person"}
    if p.condition:
        out["condition"] = p.condition
    return out


@register(
    "set_breakpoint",
    "Stop every call of a function (when condition, a form over its arguments, is true) in a "
    "debug level of the REPL showing the arguments by name: backtrace reads them, eval runs "
    "with them bound, invoke_restart CONTINUE runs the call, RETURN-VALUE returns a value "
    "instead. SBCL and Clojure. Needs the person's approval, as eval does.",
    {"type": "object",
     "properties": {"name": {"type": "string", "description": "the function's name, e.g. "
                             "parse-line or my.ns/parse-line"},
                    "condition": {"type": "string", "description": "a form over the "
                                  "arguments, e.g. (> n 3); the call stops only when true"}},
     "required": ["name"]},
    group="debug", read_only=False, destructive=True, evaluates=True)
def set_breakpoint_tool(args: dict, ctx: ToolContext) -> dict:
    name, condition = args["name"].strip(), (args.get("condition") or "").strip()
    if not name or len(name) > 300 or any(c.isspace() for c in name):
        raise ToolError("BAD_INPUT", "name must be one function name, without blanks")
    session = ctx.lisp()
    if condition:
        _check_complete(condition, session.lisp)
    shown = f";; break on {name}" + (f" when {condition}" if condition else "")
    ran = _gated(ctx, shown)
    if ran != shown:                 # the person edited it: what they left is what is set
        m = BREAK_SHOWN.match(ran.strip())
        if m is None:
            raise ToolError("BAD_INPUT", "the person changed the breakpoint into something that "
                            "is not `;; break on NAME [when CONDITION]`; nothing was set")
        name, condition = m[1], (m[2] or "").strip()
    point = _asked(ctx, lambda: session.set_breakpoint(name, condition, by_model=True))
    result = {"breakpoint": _point(point),
              "note": "A call now stops in a debug level in the person's REPL (not over MCP or "
                      "in a batch run, where the call is left at once and the result says so)."}
    if ran != shown:
        result["edited"] = f"The person edited it before it was set: {ran.strip()}"
    return result


@register(
    "clear_breakpoint",
    "Remove a breakpoint: by number (from set_breakpoint or list_breakpoints) or by the "
    "function's name; all: true removes every one. Lists what was removed.",
    {"type": "object",
     "properties": {"number": {"type": "integer", "minimum": 1},
                    "name": {"type": "string"},
                    "all": {"type": "boolean"}}},
    group="debug", read_only=False)
def clear_breakpoint_tool(args: dict, ctx: ToolContext) -> dict:
    which = (str(args["number"]) if args.get("number") is not None
             else (args.get("name") or "").strip())
    if not which and not args.get("all"):
        raise ToolError("BAD_INPUT", "say which: number, name, or all: true")
    session = ctx.lisp()
    removed = _asked(ctx, lambda: session.clear_breakpoint(which))
    left = _asked(ctx, session.breakpoints)
    return {"removed": [_point(p) for p in removed], "left": [_point(p) for p in left]}


@register(
    "list_breakpoints",
    "The breakpoints set in the image (by the person or by you), with how often each stopped.",
    {"type": "object", "properties": {}},
    group="debug", read_only=True)
def list_breakpoints_tool(args: dict, ctx: ToolContext) -> dict:
    session = ctx.lisp()
    return {"breakpoints": [_point(p) for p in _asked(ctx, session.breakpoints)]}
