"""Watching code run, for the model: `trace`, `trace_log`, `time`, `profile`.

The trace state (what is traced, the log of the last 10,000 calls) lives in the image, in the
observing helpers each Lisp loads with its project helpers (lispshell/lisp/image/*-observe.*),
so the person's `,trace` and `,trace-log`, the model's tools and MCP all see one set and one
log, on a child and over a connection alike (the helpers are loaded by evaluation).

`trace` changes the image (it wraps functions), `time` and `profile` run code: all three pass
the gate exactly as `eval` does, the gate showing what they do (`;; trace user/fact`, or the
code under a `;; time` header). `trace_log` only reads the log, and evaluates nothing the
model sent (its name is a string the helper compares as text). Answers are bounded for the
model: the log's newest calls up to `limit`, values already cut in the image (200 characters
each), and the counts of what was left out.
"""
from __future__ import annotations

import re

from lispshell.lisp.dialects import get_dialect
from lispshell.syntax.validate import validate
from lispshell.tools.live import EVAL_CODE_CAP, eval_result
from lispshell.tools.project_tools import call_helper
from lispshell.tools.gate import require
from lispshell.tools.registry import ToolContext, ToolError, register

LOG_LIMIT = 200            # calls sent by default
LOG_LIMIT_MAX = 2000
MAX_SECONDS = 60.0
TIMING = re.compile(r"^; real .*$", re.MULTILINE)
PROFILE_HEADER = re.compile(r"^; profiled .*$", re.MULTILINE)


def whole_forms(code: str, lisp: str) -> None:
    """Refuse code that does not read as whole forms (an unclosed list, a stray closer): it
    is wrapped in a function for timing and profiling, and a stray closer would end that
    function early and run what follows on its own."""
    if not code.strip():
        raise ToolError("BAD_INPUT", "code is empty")
    if len(code) > EVAL_CODE_CAP:
        raise ToolError("TOO_LARGE", f"the code is {len(code):,} characters long, over the limit "
                        f"of {EVAL_CODE_CAP:,}; nothing was run", limit=EVAL_CODE_CAP)
    checked = validate(code, lisp)
    if not checked.ok:
        first = checked.errors[0]
        raise ToolError("UNBALANCED", f"The code does not read as whole forms (line {first.line}, "
                        f"column {first.col}: {first.message}); nothing was run. Fix it "
                        "(validate_syntax helps) and try again.")


def wrapped(lisp: str, code: str) -> str:
    """`code` (whole forms) as one form, for the helper's thunk."""
    return get_dialect(lisp).sequence.format(code)


def names_of(value, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ToolError("BAD_INPUT", f"{field} must be a list of function names, e.g. "
                        '["fact", "my.ns/helper"]', field=field)
    if any(any(c.isspace() for c in v.strip()) for v in value):
        raise ToolError("BAD_INPUT", f"{field}: one function name per item", field=field)
    return [v.strip() for v in value]


def helper(ctx: ToolContext, function: str, *args: str) -> dict:
    answer, _ = call_helper(ctx, function, *args)
    if isinstance(answer, dict) and "error" in answer:
        raise ToolError("LISP_ERROR", answer["error"])
    return answer


@register(
    "trace",
    "Trace functions in the live image: each call and its values (or the error it raised) are "
    "printed and kept in the trace log (read it with trace_log). add and remove take names; "
    "remove: [] untraces everything; with neither, lists what is traced. Adding or removing "
    "needs the person's approval, as eval does. Macros cannot be traced.",
    {"type": "object",
     "properties": {"add": {"type": "array", "items": {"type": "string"},
                            "description": "functions to trace (pkg:name, ns/name)"},
                    "remove": {"type": "array", "items": {"type": "string"},
                               "description": "functions to untrace; [] untraces all"},
                    "package": {"type": "string"}}},
    group="observe", read_only=False, destructive=True, evaluates=True)
def trace_tool(args: dict, ctx: ToolContext) -> dict:
    add = names_of(args.get("add"), "add")
    remove = names_of(args.get("remove"), "remove")
    package = (args.get("package") or "").strip()
    if not add and args.get("remove") is None:
        return {"traced": helper(ctx, "trace-list").get("all", [])}
    lines = []
    if add:
        lines.append(";; trace " + " ".join(add))
    if args.get("remove") is not None:
        lines.append(";; untrace " + (" ".join(remove) if remove else "everything"))
    where = f" (in {package})" if package else ""
    approved = require(ctx, "\n".join(lines) + where, "Nothing was traced or untraced",
                       "The person declined: nothing was traced or untraced.")
    if approved != "\n".join(lines) + where:
        raise ToolError("DECLINED", "The person edited the trace request instead of approving "
                        "it; nothing was traced. Ask what they want.")
    result: dict = {}
    if args.get("remove") is not None:
        answer = helper(ctx, "trace-remove", " ".join(remove), package)
        result.update(untraced=answer.get("untraced", []),
                      not_traced=answer.get("not_traced", []), traced=answer.get("all", []))
    if add:
        answer = helper(ctx, "trace-add", " ".join(add), package)
        result.update(added=answer.get("traced", []), traced=answer.get("all", []))
        if answer.get("refused"):
            result["refused"] = answer["refused"]
    return result


@register(
    "trace_log",
    "The trace log: the calls of traced functions, oldest first, each with its depth, "
    "arguments and values (or error), from the live image. Evaluates nothing. name keeps the "
    "calls of one function and the calls inside them; limit the newest N (default 200).",
    {"type": "object",
     "properties": {"name": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": LOG_LIMIT_MAX}}},
    group="observe", read_only=True)
def trace_log_tool(args: dict, ctx: ToolContext) -> dict:
    name = (args.get("name") or "").strip()
    if len(name) > 1000 or any(c.isspace() for c in name):
        raise ToolError("BAD_INPUT", "name must be one function name", field="name")
    limit = int(args.get("limit") or LOG_LIMIT)
    answer = helper(ctx, "trace-log", name, str(limit))
    calls = answer.get("calls", [])
    result = {"calls": calls, "total_calls": answer.get("total", 0)}
    notes = []
    matched = answer.get("matched", len(calls))
    if matched > len(calls):
        notes.append(f"showing the newest {len(calls)} of {matched} matching calls (limit)")
    if answer.get("dropped"):
        notes.append(f"{answer['dropped']} older calls were dropped from the log (it keeps "
                     "the last 10,000)")
    if notes:
        result["note"] = "; ".join(notes)
    return result


def _run_observed(ctx: ToolContext, args: dict, what: str, form_of) -> tuple[dict, str]:
    code = args.get("code")
    session = ctx.lisp()
    whole_forms(code, session.dialect.syntax)
    ran = require(ctx, f";; {what}\n{code}", "The code was not run",
                  "The person declined: the code was not run.")
    if ran != f";; {what}\n{code}":
        ran = ran.split("\n", 1)[1] if ran.startswith(f";; {what}\n") else ran
        whole_forms(ran, session.dialect.syntax)
    else:
        ran = code
    helper(ctx, "observe-ready")                 # the helpers are in this image
    before = session.level
    res = session.eval(form_of(session.dialect, wrapped(session.lisp, ran)),
                       timeout=ctx.eval_timeout, output_cap=ctx.output_cap,
                       keep_levels=ctx.keep_levels)
    while getattr(res, "interrupted", False) and session.level > before:
        session.leave_level()
        res.level = session.level
    result = eval_result(res, ctx.eval_timeout)
    if ran != code:
        result["edited"] = "The person edited the code before it ran: `ran` is what ran."
        result["ran"] = ran
    return result, getattr(res, "output", "") or ""


@register(
    "time",
    "Run code once in the live image and report its real time, run time, GC time and bytes "
    "allocated, with its output and values as eval gives them. Needs the person's approval, "
    "as eval does.",
    {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    group="observe", read_only=False, destructive=True, evaluates=True)
def time_tool(args: dict, ctx: ToolContext) -> dict:
    result, output = _run_observed(ctx, args, "time", lambda d, c: d.timed_form(c))
    found = TIMING.findall(output)
    if found:
        result["timing"] = found[-1].lstrip("; ")
    return result


@register(
    "profile",
    "Run code under the Lisp's statistical profiler (repeatedly until `seconds` when given) "
    "and report the top 20 functions by samples, the person's own marked *; output and values "
    "as eval gives them. SBCL also profiles allocation (mode alloc). Needs the person's "
    "approval, as eval does.",
    {"type": "object",
     "properties": {"code": {"type": "string"},
                    "seconds": {"type": "number", "minimum": 0, "maximum": MAX_SECONDS},
                    "mode": {"type": "string", "enum": ["cpu", "alloc"]}},
     "required": ["code"]},
    group="observe", read_only=False, destructive=True, evaluates=True)
def profile_tool(args: dict, ctx: ToolContext) -> dict:
    seconds = float(args.get("seconds") or 0)
    mode = args.get("mode") or "cpu"
    lisp = ctx.lisp().lisp
    if mode not in get_dialect(lisp).profile_modes:
        raise ToolError("NOT_SUPPORTED", "mode alloc is SBCL's (sb-sprof); this Lisp profiles "
                        "CPU time only. Nothing was run.")
    result, output = _run_observed(
        ctx, args, f"profile{f' for {seconds:g} s' if seconds else ''}",
        lambda d, c: d.profiled_form(c, seconds, mode))
    at = PROFILE_HEADER.search(output)
    if at:
        table = output[at.start():].rstrip()
        result["profile"] = table
        if isinstance(result.get("output"), str):     # said once, not twice
            result["output"] = result["output"].replace(table, "").rstrip()
    return result
