"""The REPL at a debug level (lispshell/lisp/levels.py): the person's SLDB.

An error waits: the prompt says `[1] CL-USER>`, forms evaluate inside the error's dynamic
extent (define the missing function, then `,invoke 0` retries), and these commands look at it:

  ,bt                      the waiting error's frames, numbered, with their source
  ,frame [N]               frame N's locals (default: the current frame)
  ,up  ,down  ,locals      move the current frame out or in, show its locals (Guile's names)
  ,eval-in-frame N FORM    FORM with frame N's locals in scope
  ,source N                where frame N's function is defined (path:line)
  ,restart-frame N         run frame N again from its start (SBCL, where it can)
  ,abort                   leave this level (Ctrl-D on an empty line does the same)
  ,top                     leave every level

Stepping and breakpoints (issue 41; what each Lisp offers is in docs/debugging.md):

  ,step FORM               evaluate FORM stepping: each step a level said in one line
                           (Clojure: ,step (f ARGS) or ,step f, the function instrumented)
  ,s ,n ,o                 step into, over (next), out; from a breakpoint, start stepping
                           (Guile's ,step ,next ,finish at a level are the same)
  ,c  ,continue            run on (a step unstepped, a breakpoint's call, a CONTINUE restart)
  ,return FORM             leave a breakpoint's call with FORM's value, its body not run
  ,break NAME [when COND]  stop when NAME is called (and COND, over its arguments, is true)
  ,break-at FILE LINE      stop where control reaches LINE of FILE (Guile)
  ,breaks                  the breakpoints set
  ,unbreak [N|NAME]        remove one (all without an argument)
"""
from __future__ import annotations

import asyncio
import weakref

from rich.text import Text

from lispshell.lisp.contract import NotOverThisTransport
from lispshell.repl.command import QUIT, Command

STYLE_DIM = "dim"


async def _call(repl, method: str, *args, render: bool = False, needs_level: bool = False):
    """Run a level method of the session in a worker thread; say plainly what cannot be done.
    `render`: the method answers an EvalResult, shown as an eval's. `needs_level`: it acts on
    the waiting error (frames are asked even with no level open: a Lisp whose errors unwind,
    Guile, keeps the last error's frames, and the others answer that no error waits)."""
    session = await repl.ready_session(start=False)
    if session is None:
        return None
    if needs_level and not session.level:
        repl.renderer.notice("No error is waiting: no debug level is open (an error opens one).")
        return None
    try:
        result = await repl.run_in_session(session, getattr(session, method), *args)
    except (NotOverThisTransport, ValueError) as exc:
        repl.renderer.notice(str(exc)[:1].upper() + str(exc)[1:] + ".")
        return None
    if render:
        repl.renderer.result(result, False)
        repl.after_eval()
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


# The current frame of each session's waiting error, as Guile's ,up and ,down move it:
# (the error it belongs to, its number). A new error starts where it was raised, inside
# frame 0 (-1: the primitive that signalled it, which ,bt does not list), so the first ,up
# shows frame 0, as in Guile's REPL.
_current: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def current_frame(session) -> int:
    error, index = _current.get(session, (None, -1))
    return index if error is session.waiting else -1


async def _move(repl, step: int):
    session = repl.session
    if session is None or not session.level:
        repl.renderer.notice("No error is waiting: no debug level is open (an error opens one).")
        return
    frames = await _call(repl, "backtrace")
    if frames is None:
        return
    index = max(current_frame(session) + step, 0 if step > 0 else -1)
    if not 0 <= index < len(frames):
        repl.renderer.notice("Already at the outermost frame." if step > 0 else
                             "Already at the innermost frame.")
        return
    _current[session] = (session.waiting, index)
    await _frame(repl, str(index))


async def _up(repl, arg: str):
    await _move(repl, 1)


async def _down(repl, arg: str):
    await _move(repl, -1)


async def _frame(repl, arg: str):
    if not arg.strip() and repl.session is not None:
        arg = str(max(current_frame(repl.session), 0))
    parsed = _number(repl, arg, ",frame N (a frame number from ,bt)")
    if parsed is None:
        return
    if repl.session is not None and repl.session.waiting is not None:
        _current[repl.session] = (repl.session.waiting, parsed[0])
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


async def _q(repl, arg: str):
    """`,q` at a debug level leaves the level, as in Guile's REPL (a Guile user's habit must
    not cost the image); at the top level it is ,quit."""
    session = repl.session
    if session is not None and session.level:
        await leave_level(repl, "")
        repl.renderer.notice("(,q leaves a debug level; ,quit leaves lispshell.)")
        return None
    return QUIT


async def _top(repl, arg: str):
    session = repl.session
    if session is None or not session.level:
        repl.renderer.notice("Already at the top level.")
        return
    if await _call(repl, "top") is not None:
        say_level(repl)


async def _threads(repl, arg: str):
    session = repl.session
    # (a child asks its image for the breakpoint hits parked there: not on the event loop)
    waiting = await asyncio.to_thread(lambda: list(session.other_debuggers)) if session else []
    if not waiting:
        repl.renderer.notice("No other thread waits in the debugger or at a breakpoint.")
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


async def run_on(repl, method, *args):
    """Run a level action that resumes code (a restart, a step, a breakpoint's continue or
    return): shown as an eval's result, or the next level it stops in."""
    from lispshell.lisp.contract import NotOverThisTransport

    # The form a restart resumes runs as any form: a status line when silent, Ctrl-C, and
    # what it (or the restart's :interactive reader, without FORM) reads asked of the person.
    try:
        result, streamed = await repl.run_persons_code(repl.session, method, *args)
    except (NotOverThisTransport, ValueError) as exc:
        repl.renderer.notice(str(exc)[:1].upper() + str(exc)[1:] + ".")
        return None
    if result.error is not None and result.error.type == "LISPSHELL-ABORTED":
        repl.renderer.finish_line()
        repl.renderer.notice(result.error.message)
    else:
        repl.renderer.result(result, streamed)
    repl.after_eval()
    return result


async def _step_form(repl, arg: str):
    if not arg.strip():
        if repl.session is not None and repl.session.level:   # ,step at a level: ,s
            await _stepper("into")(repl, "")
            return
        repl.renderer.notice("Usage: ,step FORM (each call it makes, stepped: ,s into, ,n over, "
                             ",o out, ,c continue)")
        return
    from lispshell.repl.forms import split_forms

    forms, problem = split_forms(arg, repl.lisp)
    if problem is not None:
        repl.renderer.syntax_problem(arg, problem)
        return
    if len(forms) != 1:
        repl.renderer.notice("Usage: ,step FORM (one form)")
        return
    if await repl.ready_session() is None:
        return
    # (a Lisp that steps by instrumenting, Clojure, prepares the function in the image first)
    code = await _call(repl, "step_form", arg.strip())
    if code is not None:
        await repl.eval_form(code)


def _stepper(how: str):
    async def run(repl, arg: str):
        session = repl.session
        if session is None:
            repl.renderer.notice("Nothing is being stepped: ,step FORM steps a form.")
            return
        if not session.level:       # the session says why, as its Lisp steps
            await _call(repl, "step", how)
            return
        if how == "continue":
            await run_on(repl, session.continue_level)
        else:
            await run_on(repl, session.step, how)
    return run


async def _return(repl, arg: str):
    session = repl.session
    if not arg.strip():
        repl.renderer.notice("Usage: ,return FORM (the value the breakpoint's call returns)")
        return
    if session is None or not session.level:
        repl.renderer.notice("No breakpoint is waiting: ,return leaves a breakpoint's call.")
        return
    await run_on(repl, session.return_value, arg.strip())


async def _break(repl, arg: str):
    name, _, condition = arg.strip().partition(" ")
    if not name:
        repl.renderer.notice("Usage: ,break NAME [CONDITION] (CONDITION: a form over the "
                             "function's arguments, e.g. (> n 3))")
        return
    if await repl.ready_session() is None:
        return
    point = await _call(repl, "set_breakpoint", name, condition.strip())
    if point is not None:
        when = f" when {point.condition}" if point.condition else ""
        repl.renderer.notice(f"Breakpoint {point.number}: a call of {point.name}{when} stops "
                             "in a level (,continue runs it, ,return FORM returns FORM where "
                             "the Lisp can, ,abort leaves it).")


async def _break_at(repl, arg: str):
    import os

    file, _, rest = arg.strip().partition(" ")
    line, _, condition = rest.strip().partition(" ")
    if not file or not line.isdigit():
        repl.renderer.notice("Usage: ,break-at FILE LINE [when CONDITION] (a file loaded "
                             "into the image)")
        return
    if await repl.ready_session() is None:
        return
    # Guile records a compiled file under the name it was compiled from: ,load's absolute one
    path = os.path.abspath(os.path.expanduser(file)) if os.path.exists(
        os.path.expanduser(file)) else file
    point = await _call(repl, "set_source_breakpoint", path, int(line), condition.strip())
    if point is not None:
        when = f" when {point.condition}" if point.condition else ""
        repl.renderer.notice(f"Breakpoint {point.number}: reaching {point.name}{when} stops in "
                             "a level (,continue runs on, ,abort leaves it).")


def breakpoint_lines(points) -> list:
    lines = []
    for p in points:
        line = Text(f"  {p.number}: {p.name}")
        if p.condition:
            line.append(f" when {p.condition}")
        line.append(f"  ({p.hits} hit{'' if p.hits == 1 else 's'}"
                    f"{', set by the model' if p.by_model else ''})", style=STYLE_DIM)
        lines.append(line)
    return lines


async def _breaks(repl, arg: str):
    if repl.session is None:
        repl.renderer.notice("No Lisp is running: no breakpoints.")
        return
    points = await _call(repl, "breakpoints")
    if points is None:
        return
    if not points:
        repl.renderer.notice("No breakpoints (,break NAME sets one).")
        return
    repl.renderer.print(Text("Breakpoints (,unbreak N removes one):", style="bold"),
                        *breakpoint_lines(points), sep="\n")


async def _unbreak(repl, arg: str):
    if repl.session is None:
        repl.renderer.notice("No Lisp is running: no breakpoints.")
        return
    removed = await _call(repl, "clear_breakpoint", arg.strip())
    if removed is None:
        return
    if not removed:
        repl.renderer.notice("No breakpoints to remove." if not arg.strip() else
                             f"No breakpoint {arg.strip()} (,breaks lists them).")
        return
    repl.renderer.notice("Removed " + ", ".join(f"breakpoint {p.number} on {p.name}"
                                               for p in removed) + ".")


def say_level(repl) -> None:
    level = repl.session.level if repl.session is not None else 0
    repl.renderer.notice(f"Back at debug level {level}." if level else "Back at the top level.")


COMMANDS = [
    Command("bt", "the waiting error's frames, numbered, with where each is defined", _bt),
    Command("frame", "frame N's local variables (default: the current frame)", _frame, "[N]"),
    Command("locals", "the current frame's local variables (,frame N picks another)", _frame),
    Command("up", "the next frame out, its locals (as Guile's ,up)", _up),
    Command("down", "the next frame in, its locals (as Guile's ,down)", _down),
    Command("eval-in-frame", "evaluate FORM with frame N's locals in scope", _eval_in_frame,
            "N FORM"),
    Command("source", "where frame N's function is defined (path:line)", _source, "N"),
    Command("restart-frame", "run frame N again from its start (SBCL)", _restart_frame, "N"),
    Command("abort", "leave this debug level (Ctrl-D on an empty line does the same)",
            leave_level),
    Command("top", "leave every debug level, back to the top level", _top),
    Command("q", "at a debug level, leave the level (as Guile's ,q); else ,quit", _q),
    Command("threads", "the debuggers (Swank) and breakpoint hits other threads wait in",
            _threads),
    Command("thread", "enter the debugger thread N waits in (from ,threads)", _thread, "N"),
    Command("step", "evaluate FORM stepping: ,s into, ,n over, ,o out, ,c continue (SBCL, "
            "Guile; Clojure: ,step (f ARGS), or ,step f for its next call); alone at a level, "
            ",s", _step_form, "[FORM]"),
    Command("s", "step into the next call (at a step, or from a breakpoint)", _stepper("into")),
    Command("n", "step over the next call", _stepper("next")),
    Command("o", "step out of this function", _stepper("out")),
    Command("c", "continue: the same as ,continue", _stepper("continue")),
    Command("next", "at a step, step over the next call (Guile's ,next): the same as ,n",
            _stepper("next")),
    Command("finish", "at a step, run this function out (Guile's ,finish): the same as ,o",
            _stepper("out")),
    Command("continue", "run on from this level (a step, a breakpoint's call, CONTINUE)",
            _stepper("continue")),
    Command("return", "leave the breakpoint's call with FORM's value, its body not run",
            _return, "FORM"),
    Command("break", "stop when the function NAME is called (and CONDITION is true)", _break,
            "NAME [when CONDITION]"),
    Command("break-at", "stop when control reaches LINE of FILE (Guile's ,break-at-source)",
            _break_at, "FILE LINE [when CONDITION]"),
    Command("breaks", "list the breakpoints", _breaks),
    Command("unbreak", "remove breakpoint N, or the one on NAME, or all", _unbreak, "[N|NAME]"),
]
