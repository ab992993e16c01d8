"""The REPL at a debug level (lispshell/lisp/levels.py): the person's SLDB.

An error waits: the prompt says `[1] CL-USER>`, forms evaluate inside the error's dynamic
extent (define the missing function, then `,invoke 0` retries), and these commands look at it:

  ,bt                      the waiting error's frames, numbered, with their source
  ,frame N                 frame N's locals
  ,eval-in-frame N FORM    FORM with frame N's locals in scope
  ,source N                where frame N's function is defined (path:line)
  ,restart-frame N         run frame N again from its start (SBCL, where it can)
  ,abort                   leave this level (Ctrl-D on an empty line does the same)
  ,top                     leave every level
"""
from __future__ import annotations

import asyncio

from rich.text import Text

from lispshell.lisp.contract import NotOverThisTransport
from lispshell.repl.command import Command

STYLE_DIM = "dim"


async def _call(repl, method: str, *args, render: bool = False, needs_level: bool = False):
    """Run a level method of the session in a worker thread; say plainly what cannot be done.
    `render`: the method answers an EvalResult, shown as an eval's. `needs_level`: it acts on
    the waiting error (frames are asked even with no level open: a Lisp whose errors unwind,
    Guile, keeps the last error's frames, and the others answer that no error waits)."""
    session = repl.session
    if session is None:
        repl.renderer.notice("No Lisp is running.")
        return None
    if needs_level and not session.level:
        repl.renderer.notice("No error is waiting: no debug level is open (an error opens one).")
        return None
    try:
        with repl._on_sigint(session.interrupt):
            result = await asyncio.to_thread(getattr(session, method), *args)
    except NotOverThisTransport as exc:
        repl.renderer.notice(str(exc)[:1].upper() + str(exc)[1:] + ".")
        return None
    except ValueError as exc:
        repl.renderer.notice(str(exc)[:1].upper() + str(exc)[1:] + ".")
        return None
    if render:
        repl.renderer.result(result, False)
        repl._after_eval()
    return result


def _number(repl, arg: str, usage: str) -> tuple[int, str] | None:
    number, _, rest = arg.strip().partition(" ")
    if not number.isdigit():
        repl.renderer.notice(f"Usage: {usage}")
        return None
    return int(number), rest.strip()


async def _bt(repl, arg: str):
    frames = await _call(repl, "backtrace")
    if frames is None:
        return
    err = repl.session.waiting
    level = repl.session.level
    head = Text(f"Backtrace at level {level}" if level else "Backtrace of the last error",
                style="bold")
    if err is not None:
        message = " ".join((err.message or "").split())     # whole, on one line
        head.append(f" ({err.type}: {message[:300]}{'...' if len(message) > 300 else ''})",
                    style="red")
    lines = [head]
    for f in frames:
        line = Text(f"  {f.index:>2}: ")
        line.append(f.call)
        if f.source:
            line.append(f"  {f.source}", style=STYLE_DIM)
        lines.append(line)
    if not frames:
        lines.append(Text("  (no frames of yours)", style=STYLE_DIM))
    # What this Lisp offers: a level that waits has it all; the last error's frames of a
    # Lisp whose errors unwind (Guile) only their locals.
    lines.append(Text(",frame N: its locals · ,eval-in-frame N FORM · ,source N · "
                      ",invoke N: a restart · ,abort · ,top" if level else
                      ",frame N: its locals", style=STYLE_DIM))
    repl.renderer.last = lines
    if not repl.renderer.page_if_tall(lines, "\n".join(t.plain for t in lines)):
        repl.renderer.print(*lines, sep="\n")


async def _frame(repl, arg: str):
    parsed = _number(repl, arg, ",frame N (a frame number from ,bt)")
    if parsed is None:
        return
    locals_ = await _call(repl, "frame_locals", parsed[0])
    if locals_ is None:
        return
    frames = await _call(repl, "backtrace") or []
    frame = next((f for f in frames if f.index == parsed[0]), None)
    head = Text(f"Frame {parsed[0]}: ", style="bold")
    if frame is not None:
        head.append(frame.call)
        if frame.source:
            head.append(f"  {frame.source}", style=STYLE_DIM)
    lines = [head] + [Text(f"  {loc.name} = {loc.value}") for loc in locals_]
    if not locals_:
        lines.append(Text("  no locals (none here, or compiled without debug information)",
                          style=STYLE_DIM))
    repl.renderer.print(*lines, sep="\n")


async def _eval_in_frame(repl, arg: str):
    parsed = _number(repl, arg, ",eval-in-frame N FORM")
    if parsed is None or not parsed[1]:
        if parsed is not None:
            repl.renderer.notice("Usage: ,eval-in-frame N FORM")
        return
    await _call(repl, "eval_in_frame", parsed[0], parsed[1], render=True, needs_level=True)


async def _source(repl, arg: str):
    parsed = _number(repl, arg, ",source N (a frame number from ,bt)")
    if parsed is None:
        return
    where = await _call(repl, "frame_source", parsed[0])
    if where is not None:
        repl.renderer.notice(where or f"Frame {parsed[0]} has no source file (typed at the "
                                      "prompt, or the Lisp's own without sources).")


async def _restart_frame(repl, arg: str):
    parsed = _number(repl, arg, ",restart-frame N")
    if parsed is not None:
        await _call(repl, "restart_frame", parsed[0], render=True, needs_level=True)


async def leave_level(repl, arg: str = ""):
    result = await _call(repl, "leave_level", needs_level=True)
    if result is not None:
        say_level(repl)


async def _top(repl, arg: str):
    session = repl.session
    if session is None or not session.level:
        repl.renderer.notice("Already at the top level.")
        return
    if await _call(repl, "top") is not None:
        say_level(repl)


async def _threads(repl, arg: str):
    session = repl.session
    waiting = list(session.other_debuggers) if session else []
    if not waiting:
        repl.renderer.notice("No other thread waits in the debugger.")
        return
    lines = [Text("Other threads waiting in the debugger (,thread N enters one):", style="bold")]
    for n, (thread, level, condition, _) in enumerate(waiting):
        text = condition[0] if isinstance(condition, list) and condition else condition
        lines.append(Text(f"  {n}: thread {thread}, level {level}: {text}"))
    repl.renderer.print(*lines, sep="\n")


async def _thread(repl, arg: str):
    parsed = _number(repl, arg, ",thread N (from ,threads)")
    session = repl.session
    if parsed is None or session is None:
        return
    try:
        error = await asyncio.to_thread(session.enter_thread, parsed[0])
    except (NotOverThisTransport, ValueError) as exc:
        repl.renderer.notice(str(exc)[:1].upper() + str(exc)[1:] + ".")
        return
    repl.renderer.error(error, session.level)


def say_level(repl) -> None:
    level = repl.session.level if repl.session is not None else 0
    repl.renderer.notice(f"Back at debug level {level}." if level else "Back at the top level.")


COMMANDS = [
    Command("bt", "the waiting error's frames, numbered, with where each is defined", _bt),
    Command("frame", "frame N's local variables", _frame, "N"),
    Command("eval-in-frame", "evaluate FORM with frame N's locals in scope", _eval_in_frame,
            "N FORM"),
    Command("source", "where frame N's function is defined (path:line)", _source, "N"),
    Command("restart-frame", "run frame N again from its start (SBCL)", _restart_frame, "N"),
    Command("abort", "leave this debug level (Ctrl-D on an empty line does the same)",
            leave_level),
    Command("top", "leave every debug level, back to the top level", _top),
    Command("threads", "the debuggers other threads of a connected image wait in (Swank)",
            _threads),
    Command("thread", "enter the debugger thread N waits in (from ,threads)", _thread, "N"),
]
