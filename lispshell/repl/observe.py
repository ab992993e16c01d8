"""Watching code run, for the person (docs/observing.md): the model's observing tools run for
the person, on every Lisp and transport.

  ,trace [NAME...]          trace functions (each call shown, and kept in the trace log);
                            alone, list what is traced
  ,untrace [NAME...]        stop tracing them (all, with no name)
  ,trace-log [NAME|clear]   the logged calls as a tree (NAME: its calls and what they called)
  ,time FORM                FORM's values, after its real, run and GC time and bytes allocated
  ,profile [SECONDS] FORM   FORM run under the statistical profiler (again and again until
                            SECONDS), then the top 20 functions; SBCL: ,profile :alloc FORM

No gate: the person typed it. What they learn goes into the model's context as the model's
own call of the same tool (trace, trace_log, time, profile), bounded as evals are, so "why is
this slow?" after ,profile is answered from the table.
"""
from __future__ import annotations

import asyncio
import re

from rich.text import Text

from lispshell.lisp.dialects import get_dialect
from lispshell.repl.command import Command

TREE_CALLS = 2000          # calls a ,trace-log prints (the newest); the log keeps 10,000


async def _call(repl, tool: str, args: dict) -> dict | None:
    """Run an observing tool for the person (no gate: they typed it); None (said) when it
    failed."""
    from lispshell.repl.navigation import _look
    from lispshell.tools.gate import EvalGate

    return await _look(repl, tool, args, gate=EvalGate("yolo"))


async def _record(repl, code: str, result: dict, tool: str, tool_input: dict) -> None:
    await repl.record_eval(code, result, (code, tool, tool_input))


def _names(arg: str) -> list[str]:
    return [n for n in arg.split() if n]


async def _trace(repl, arg: str):
    names = _names(arg)
    if not names:
        result = await _call(repl, "trace", {})
        if result is not None:
            traced = result.get("traced") or []
            repl.renderer.notice("Traced: " + ", ".join(traced) + "." if traced else
                                 "Nothing is traced. ,trace NAME... traces functions.")
        return
    result = await _call(repl, "trace", {"add": names, "package": repl.package})
    if result is None:
        return
    if result.get("added"):
        repl.renderer.notice("Tracing " + ", ".join(result["added"]) + ": each call is shown "
                             "and kept in the trace log (,trace-log); ,untrace stops.")
    for refused in result.get("refused") or []:
        repl.renderer.notice(f"Not traced: {refused.get('why') or refused.get('name')}.")
    await _record(repl, f",trace {arg}", result, "trace", {"add": names})


async def _untrace(repl, arg: str):
    names = _names(arg)
    result = await _call(repl, "trace", {"remove": names, "package": repl.package})
    if result is None:
        return
    gone = result.get("untraced") or []
    repl.renderer.notice(("Untraced " + ", ".join(gone) + "." if gone else "Nothing was traced.")
                         + (" Not traced: " + ", ".join(result["not_traced"]) + "."
                            if result.get("not_traced") else ""))
    await _record(repl, f",untrace {arg}".rstrip(), result, "trace", {"remove": names})


def tree_lines(calls: list[dict]) -> list[str]:
    """The logged calls as the tree they were: each call indented by its depth (relative to
    the shallowest shown), with its values or its error on the same line."""
    if not calls:
        return []
    base = min(c.get("depth", 0) for c in calls)
    lines = []
    for c in calls:
        depth = c.get("depth", 0) - base
        pad = "  " * depth if depth < 40 else "  " * 40 + f"[{depth}] "
        call = "(" + " ".join([c.get("name", "?"), *c.get("args", [])]) + ")"
        outcome = c.get("outcome")
        if outcome == "values":
            end = " => " + ", ".join(c.get("result") or []) if c.get("result") else " => (no values)"
        elif outcome == "error":
            end = f" !! {c.get('result')}"
        elif outcome == "unwound":
            end = " << unwound (a non-local exit)"
        else:
            end = " ... (still running)"
        thread = f"  [thread {c['thread']}]" if c.get("thread") else ""
        lines.append(f"{pad}{call}{end}{thread}")
    return lines


async def _trace_log(repl, arg: str):
    name = arg.strip()
    if name == "clear":
        from lispshell.tools.project_tools import call_helper
        from lispshell.tools.registry import ToolContext

        session = repl.session
        if session is None:
            repl.renderer.notice("No Lisp is running: the trace log is empty.")
            return
        ctx = ToolContext(session=lambda: session, root=None, eval_timeout=60.0)
        try:
            answer, _ = await asyncio.to_thread(call_helper, ctx, "trace-clear")
        except Exception as exc:  # a ToolError: its message says what
            repl.renderer.notice(f"{getattr(exc, 'message', exc)}")
            return
        repl.renderer.notice(f"Cleared the trace log ({answer.get('cleared', 0)} calls).")
        return
    result = await _call(repl, "trace_log", {"name": name, "limit": TREE_CALLS})
    if result is None:
        return
    calls = result.get("calls") or []
    if not calls:
        repl.renderer.notice("No traced calls of " + name + " in the log." if name else
                             "The trace log is empty: ,trace NAME traces a function.")
        return
    lines = tree_lines(calls)
    total = result.get("total_calls", len(calls))
    head = f"; {len(calls)} call{'s' if len(calls) != 1 else ''} shown of {total} logged"
    if result.get("note"):
        head += f" ({result['note']})"
    texts = [Text(head, style="dim")] + [Text(line) for line in lines]
    if not repl.renderer.page_if_tall(texts, "\n".join([head, *lines])):
        repl.renderer.print(*texts, sep="\n")
    await _record(repl, f",trace-log {name}".rstrip(), result, "trace_log",
                  {"name": name} if name else {})


def _one_form(repl, arg: str, usage: str) -> bool:
    from lispshell.tools.observe import whole_forms
    from lispshell.tools.registry import ToolError

    if not arg.strip():
        repl.renderer.notice(f"Usage: {usage}")
        return False
    try:
        whole_forms(arg, repl.dialect)
    except ToolError as exc:
        repl.renderer.notice(exc.message)
        return False
    return True


async def _observed(repl, form: str, recorded) -> None:
    """Evaluate `form` (a helper call around the person's code) as their own eval: output
    streamed, values shown, an error kept in a level, Ctrl-C interrupting."""
    ready = await _call(repl, "trace", {})         # loads the helpers into this image
    if ready is None:
        return
    await repl.eval_form(form, recorded=recorded)


async def _time(repl, arg: str):
    from lispshell.tools.observe import wrapped

    if not _one_form(repl, arg, ",time FORM"):
        return
    session = repl.session or repl.start_session(repl.lisp)
    if session is None:
        return
    form = session.dialect.timed_form(wrapped(repl.lisp, arg))
    await _observed(repl, form, (arg, "time", {"code": arg}))


_PROFILE_ARGS = re.compile(r"\A\s*(?P<mode>:alloc|:cpu)?\s*(?P<seconds>\d+(?:\.\d+)?)?\s*(?=[(\[{'`#a-zA-Z*])")


async def _profile(repl, arg: str):
    from lispshell.tools.observe import MAX_SECONDS, wrapped

    m = _PROFILE_ARGS.match(arg)
    mode = (m.group("mode") or ":cpu")[1:] if m else "cpu"
    seconds = float(m.group("seconds") or 0) if m else 0.0
    code = arg[m.end():] if m else arg
    if not _one_form(repl, code, ",profile [:alloc] [SECONDS] FORM"):
        return
    if seconds > MAX_SECONDS:
        repl.renderer.notice(f"At most {MAX_SECONDS:g} seconds.")
        return
    if mode not in get_dialect(repl.lisp).profile_modes:
        repl.renderer.notice(":alloc is SBCL's (sb-sprof's allocation mode); this Lisp profiles "
                             "CPU time.")
        return
    session = repl.session or repl.start_session(repl.lisp)
    if session is None:
        return
    form = session.dialect.profiled_form(wrapped(repl.lisp, code), seconds, mode)
    tool_input = {"code": code, **({"seconds": seconds} if seconds else {}),
                  **({"mode": mode} if mode != "cpu" else {})}
    await _observed(repl, form, (code, "profile", tool_input))


COMMANDS = [
    Command("trace", "trace functions: each call and its values shown and logged; alone, list "
            "what is traced", _trace, "[NAME...]"),
    Command("untrace", "stop tracing NAME (every function, with no name)", _untrace, "[NAME...]"),
    Command("trace-log", "the traced calls as a tree (NAME: its calls only; clear empties it)",
            _trace_log, "[NAME|clear]"),
    Command("time", "evaluate FORM and show its real, run and GC time and bytes allocated",
            _time, "FORM"),
    Command("profile", "run FORM under the statistical profiler (again until SECONDS) and "
            "show the top 20 functions", _profile, "[:alloc] [SECONDS] FORM"),
]
