"""The REPL's `,` commands (SLIME style): a small table of name, help text and handler.

A handler is `handler(repl, arg: str)`; it may be a coroutine function. It returns
`QUIT` to end the REPL, anything else to carry on. The LLM side adds its own commands through
`llm.commands` (`{name: (help, handler(arg))}`); they are listed by `,help` and dispatched the
same way. A command may be abbreviated to any unambiguous prefix (`,q`, `,res`).
"""
from __future__ import annotations

import inspect
from typing import Callable

from rich.text import Text

from lispshell.lisp.dialects import DIALECTS, get_dialect
from lispshell.repl.command import QUIT, Command
from lispshell.repl.debugger import COMMANDS as DEBUGGER
from lispshell.repl.navigation import COMMANDS as NAVIGATION
from lispshell.repl.observe import COMMANDS as OBSERVE


def _help(repl, arg: str):
    from rich.table import Table     # only ,help draws a table: not paid for at start-up

    table = Table.grid(padding=(0, 2))
    for cmd in repl.commands.all():
        table.add_row(Text("," + cmd.name + (" " + cmd.usage if cmd.usage else ""), style="bold"),
                      cmd.help)
    repl.renderer.print(table)
    repl.renderer.print(Text(
        "Enter submits a complete form (newline otherwise), Meta-Enter/Esc-Enter submits anyway, "
        "Ctrl-X Ctrl-] closes the open lists and submits, Ctrl-J inserts a newline, Ctrl-C clears "
        "or interrupts, Ctrl-D exits, Ctrl-R searches history, Tab completes (or indents), "
        "Ctrl-X Ctrl-E opens $EDITOR, Ctrl-X Ctrl-D shows the documentation of the symbol at "
        "the cursor, Ctrl-X Ctrl-A apropos; the toolbar shows the arglist of the operator at the "
        "cursor. Prose (or `?` + text) goes to the LLM.",
        style="dim"), soft_wrap=False)       # wrapped at words, unlike the Lisp's own output


def _quit(repl, arg: str):
    return QUIT


def _restart(repl, arg: str):
    return repl.restart()


def _lisp(repl, arg: str):
    name = arg.strip()
    if not name:
        repl.renderer.notice(f"Running {repl.lisp}. Switch with ,lisp "
                             + "|".join(sorted(DIALECTS)) + ".")
        return None
    return repl.switch_lisp(name)


def _connect(repl, arg: str):
    if not arg.strip():
        links = repl.sessions.connections()
        if links:
            repl.renderer.notice("Connections: " + ", ".join(
                k + (" (current)" if k == repl.key else "") for k in links)
                + ". ,connect URL switches or connects; ,lisp NAME goes back to a Lisp of "
                "lispshell's own.")
            return None
    return repl.connect(arg.strip())


def _disconnect(repl, arg: str):
    return repl.disconnect()


def _reconnect(repl, arg: str):
    return repl.reconnect()


def _history(repl, arg: str):
    try:
        count = int(arg) if arg.strip() else 20
    except ValueError:
        repl.renderer.notice(f"Usage: ,history [N] (N a number, not {arg.strip()!r})")
        return None
    entries = repl.history_entries()
    first = max(0, len(entries) - count)
    for number, entry in enumerate(entries[first:], first + 1):
        repl.renderer.print(Text(f"{number:5d}  ", style="dim") + Text(entry))


def _last(repl, arg: str):
    """The last value or error (with every backtrace frame), whole: in the pager only when it
    is taller than the screen, as values are."""
    renderer = repl.renderer
    if not renderer.last:
        renderer.notice("Nothing to show yet: ,last shows the last value or error.")
    elif not renderer.page_if_tall(renderer.last, "\n".join(t.plain for t in renderer.last
                                                             if hasattr(t, "plain"))):
        renderer.print(*renderer.last, sep="\n")


async def _invoke(repl, arg: str):
    """`,invoke N [FORM]`: invoke restart N of the error on offer (SBCL), as SLDB does."""
    number, _, form = arg.strip().partition(" ")
    session = repl.session
    if session is None or (not session.capabilities.levels and not session.restarts):
        # (a Clojure breakpoint's level has restarts: CONTINUE, RETURN-VALUE)
        repl.renderer.notice(get_dialect(repl.lisp).no_restarts)
        return
    if not number.isdigit():
        repl.renderer.notice("Usage: ,invoke N [FORM] (N: a restart listed under the error; "
                             "FORM: the value a restart such as USE-VALUE asks for)")
        return
    if not session.restarts:
        repl.renderer.notice("No error is waiting with restarts: an error opens a debug level "
                             "that offers them, until ,abort or ,top leaves it.")
        return
    from lispshell.repl.debugger import run_on

    await run_on(repl, session.invoke_restart, int(number), form.strip())





async def _inspect(repl, arg: str):
    """`,inspect FORM`: evaluate FORM (the person typed it) and show its parts in a table:
    slots, hash table entries, elements, an exception's message and ex-data. `,inspect N`
    right after opens part N of that table (the image keeps the parts last shown)."""

    from rich.table import Table

    from lispshell.lisp.introspect import call_form
    from lispshell.lisp.session import PERSON_VALUE_CAP

    code = arg.strip()
    session = repl.session
    image = (repl.key, id(session), session.generation)
    shown = repl.command_state.get("inspect")      # (image, parts) of the last table
    # A bare number while a table of this image is on screen opens that part (a number has
    # no parts of its own to show).
    function = ("inspect-part" if code.isdigit() and shown is not None and shown[0] == image
                else "inspect-back" if code == "-" else "inspect-form")
    if function == "inspect-back" and (shown is None or shown[0] != image):
        repl.renderer.notice("Nothing to go back to: ,inspect FORM first")
        return
    if code in ("", "*"):
        code = get_dialect(repl.lisp).last_value
        if not code:
            repl.renderer.notice(f"{repl.lisp} keeps no last value here: use ,inspect FORM")
            return
    from lispshell.repl.forms import split_forms

    _, problem = split_forms(code, repl.dialect)
    if problem is not None:           # positioned, as at the prompt, not the Lisp reader's EOF
        repl.renderer.syntax_problem(code, problem)
        return
    session = await repl.ready_session()
    if session is None:
        return
    look = call_form(repl.lisp, function, code, "")
    result = await repl.run_in_session(session, session.eval, look.form, timeout=None,
                                       history=False, output_cap=PERSON_VALUE_CAP)
    answer = look.answer(result.output) if result.error is None else None
    if answer is None:
        repl.renderer.result(result, False)
        return
    status, body = answer
    printed = result.output.partition(look.mark)[0]
    repl.renderer.output(printed)          # what FORM itself printed
    repl.renderer.finish_line()
    if status != "ok":
        repl.renderer.print(Text(body.strip(), style="red"))
        return
    head, *parts = body.rstrip("\n").split("\n")
    kind, _, summary = head.partition("\t")
    table = Table(title=Text(f"{kind}  ", style="bold") + Text(summary), title_justify="left",
                  show_header=False, box=None, padding=(0, 1), pad_edge=False,
                  caption=Text(",inspect N opens part N · ,inspect - goes back", style="dim")
                  if parts else Text(",inspect - goes back", style="dim"),
                  caption_justify="left")
    table.add_column(style="dim", justify="right")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for n, part in enumerate(parts):
        label, _, value = part.partition("\t")
        table.add_row(str(n), label, value)
    if not parts:
        # An empty hash table, vector or list has no parts either, and is no atom.
        empty = any(w in kind.upper() for w in ("HASH", "TABLE", "MAP", "SET", "VECTOR",
                                                  "ARRAY", "STRING", "LIST", "CONS"))
        table.add_row("", "", Text("(empty: no entries)" if empty else "(no parts: an atom)",
                                   style="dim"))
    repl.command_state["inspect"] = ((repl.key, id(session), session.generation), len(parts))
    repl.renderer.last = [table]
    if not repl.renderer.page_if_tall([table], body):
        repl.renderer.print(table)


async def _project_tool(repl, tool: str, args: dict) -> None:
    """`,load` and `,load-system`: the project tools, run for the person (no gate: they typed
    it), with the file's output streamed and each diagnostic shown."""

    from lispshell.tools.gate import EvalGate
    from lispshell.tools.registry import ToolContext, call_tool

    session = await repl.ready_session()
    if session is None:
        return
    ctx = ToolContext(session=lambda: session, gate=EvalGate("yolo"), root=None,
                      eval_timeout=None, extra={"on_output": repl.renderer.output})
    result = await repl.run_in_session(session, call_tool, tool, args, ctx)
    repl.renderer.finish_line()
    failed = result.get("error") or {}
    body = failed if failed else result
    for line in body.get("diagnostics") or []:
        style = "red" if ": error: " in line else "yellow" if ": warning: " in line else "dim"
        repl.renderer.print(Text(line, style=style))
    what = args.get("file_path") or args.get("name")
    if failed:
        repl.renderer.print(Text(f"; not loaded: {what}: {failed.get('message', '')}", style="red"))
        project = repl.config.get("project") or {}
        if tool == "load_system" and project.get("trusted") is False:
            # The likely why: an untrusted project's systems are never put on the registry.
            repl.renderer.notice(f"The project in {project.get('root', 'this directory')} is "
                                 "not trusted, so its systems are not on ASDF's registry: "
                                 ",trust trusts it and restarts the Lisp with them.")
    else:
        repl.renderer.notice(f"Loaded {what} ({result.get('summary', 'no warnings')}).")
    if body.get("dependencies"):
        repl.renderer.notice(body["dependencies"][:1].upper() + body["dependencies"][1:] + ".")
    repl.after_eval()


def _load(repl, arg: str):
    if not arg.strip():
        repl.renderer.notice("Usage: ,load FILE (compiles where the Lisp compiles, then loads)")
        return None
    from pathlib import Path
    path = str(Path(arg.strip()).expanduser())
    session = repl.session
    if session is not None and session.capabilities.levels and session.dialect.loads_in_a_level:
        return _load_where_errors_wait(repl, session, path)
    return _project_tool(repl, "load_file", {"file_path": path})


async def _load_where_errors_wait(repl, session, path: str) -> None:
    """`,load` on SBCL: compiled (each diagnostic shown), then loaded as a form of the
    person's, so that an error while loading waits in a debug level with its frames, as
    SLIME's C-c C-l leaves it in SLDB; the person is told where loading stopped and that what
    came before it is loaded."""
    from pathlib import Path

    from lispshell.lisp.dialects import string_literal
    from lispshell.tools.project_tools import compile_only
    from lispshell.tools.registry import ToolContext, ToolError

    file = Path(path).resolve()
    if not file.is_file():
        repl.renderer.print(Text(f"; not loaded: {path}: no such file: {path}", style="red"))
        return
    if await repl.ready_session() is not session:
        return
    ctx = ToolContext(session=lambda: session, root=None, eval_timeout=None,
                      extra={"on_output": repl.renderer.output})
    try:
        compiled = await repl.run_in_session(session, compile_only, ctx, file)
    except ToolError as exc:
        repl.renderer.finish_line()
        repl.renderer.print(Text(f"; not loaded: {path}: {exc.message}", style="red"))
        return
    repl.renderer.finish_line()
    for line in compiled["diagnostics"]:
        style = "red" if ": error: " in line else "yellow" if ": warning: " in line else "dim"
        repl.renderer.print(Text(line, style=style))
    fasl = compiled.get("fasl")
    if not fasl:
        repl.renderer.print(Text(f"; not loaded: {path}: "
                                 f"{compiled.get('error') or 'it did not compile'}", style="red"))
        return
    fasl = string_literal(fasl)
    code = f"(unwind-protect (load {fasl}) (when (probe-file {fasl}) (delete-file {fasl})))"
    before = session.level
    result, _ = await repl.run_persons_code(session, session.eval, code, timeout=None,
                                            keep_levels=True)
    repl.after_eval()
    if result.error is None:
        repl.renderer.finish_line()
        repl.renderer.notice(f"Loaded {path} ({compiled['summary']}"
                             + ("; it compiled with errors" if compiled["compile_failed"] else "")
                             + ").")
        return
    repl.renderer.result(result, True)
    if session.level > before:
        where = ""
        try:
            frames = await repl.run_in_session(session, session.backtrace)
            where = next((f.source for f in frames if f.source.startswith(f"{file}:")), "")
        except Exception:      # the level is there either way; only the line is missing
            pass
        repl.renderer.notice(f"Loading {path} stopped" + (f" at {where}" if where else "")
                             + ": the forms before it are loaded, the rest is not. The error "
                             f"waits in debug level {session.level} (,invoke N, ,abort).")


def _load_system(repl, arg: str):
    if not arg.strip():
        repl.renderer.notice("Usage: ,load-system NAME (an ASDF system; Common Lisp)")
        return None
    return _project_tool(repl, "load_system", {"name": arg.strip()})


def _undo(repl, arg: str):
    from pathlib import Path

    from lispshell.workspace import journal

    from lispshell.workspace import undo as undoing

    target = Path(arg.strip()).expanduser().absolute() if arg.strip() else None
    try:
        done = undoing.undo(target)
    except journal.UndoError as exc:
        repl.renderer.notice(exc.message[:1].upper() + exc.message[1:])   # says nothing was done
    except OSError as exc:
        repl.renderer.notice(f"Nothing undone: the undo journal cannot be read ({exc.strerror})")
    else:
        repl.renderer.notice(f"Undid {done['undid']} of {done['when']}: {done['file']} has its "
                             "bytes from before it again.")


async def _trust(repl, arg: str):
    """Trust the project lispshell found (or the one in DIR) and start the Lisp with it."""
    import asyncio
    from pathlib import Path

    from lispshell.workspace import project, trust

    found_here = repl.config.get("project") or {}
    start = Path(arg).expanduser().absolute() if arg else (
        Path(found_here["root"]) if found_here.get("root") else Path.cwd())
    try:
        found = project.find(start)
    except project.ProjectError as exc:
        repl.renderer.notice(str(exc))
        return None
    if found is None:
        repl.renderer.notice(f"No project in {start} to trust (looked for *.asd, deps.edn, "
                             "project.clj and Guile modules).")
        return None
    try:
        trust.grant(found)
    except trust.TrustError as exc:
        repl.renderer.notice(f"{found.found} is not trusted: {exc}")
        return None
    try:
        config = project.apply(found, repl.config, found.lisp)
    except project.ProjectError as exc:
        repl.renderer.notice(f"Trusted {found.root}, but it cannot be started: {exc}")
        return None
    repl.config = config
    old = repl.sessions.pop(found.lisp, None)
    if old is not None:
        # A child lispshell started, never a connection (those are keyed by URL).
        await asyncio.get_running_loop().run_in_executor(None, old.close)
    was = repl.key
    repl.start_session(found.lisp)
    if was != found.lisp and was in repl.sessions:
        repl.sessions.make_current(was, repl.sessions[was].lisp)
    repl.renderer.notice(f"Trusted {found.found} ({found.root}); {found.lisp} "
                         + ("restarted with it: earlier definitions are gone. "
                            if old is not None else "starts with it. ")
                         + config["project"]["summary"] + ". `lispshell trust --revoke` "
                         "withdraws the trust.")
    return None


async def _module(repl, arg: str):
    """`,module [NAME]` (Guile's `,m`): show the current module, or make NAME current."""

    dialect = get_dialect(repl.lisp)
    session = repl.session
    if not arg.strip():
        repl.renderer.notice(session.package if session is not None and session.package
                             else dialect.starting_package)
        return None
    form = dialect.set_module_form(arg.strip())
    if form is None:
        repl.renderer.notice(f",module is Guile's: {dialect.display} changes its current "
                             "package with its own form (in-package, in-ns).")
        return None
    session = await repl.ready_session()
    if session is None:
        return None
    result = await repl.run_in_session(session, session.eval, form, timeout=None,
                                       history=False, keep_levels=True)
    if result.error is not None:
        message = result.error.message
        repl.renderer.notice(message[:1].upper() + message[1:])
    return None


async def _m(repl, arg: str):
    """`,m`: `,module` on Guile (as in Guile's REPL), `,macroexpand` elsewhere."""
    cmd, _ = repl.commands.find(get_dialect(repl.lisp).m_command)
    outcome = cmd.handler(repl, arg)
    return await outcome if inspect.isawaitable(outcome) else outcome


BUILTIN = [
    Command("help", "list the commands and keys", _help),
    Command("quit", "leave lispshell (Ctrl-D on an empty line does the same)", _quit),
    Command("restart", "kill the Lisp process and start a fresh one", _restart),
    Command("lisp", "switch to another Lisp (each keeps its own image and history)", _lisp,
            "NAME"),
    Command("history", "show the last N inputs for this Lisp (default 20)", _history, "[N]"),
    Command("connect", "connect to a running image (nrepl://, swank://, guile://; a port; "
            "nothing: .nrepl-port) or switch to it; no URL with connections open lists them",
            _connect, "[URL]"),
    Command("disconnect", "close the current connection; the image keeps running", _disconnect),
    Command("reconnect", "connect again to the current connection's address", _reconnect),
    Command("last", "show the last value or error (every backtrace frame) in the pager", _last),
    Command("inspect", "evaluate FORM (default: the last value) and show its slots, entries "
            "or elements, numbered; ,inspect N then opens part N", _inspect, "[FORM|N]"),
    Command("invoke", "invoke restart N of the error just shown (Common Lisp), FORM as its "
            "value if it asks for one", _invoke, "N [FORM]"),
    Command("load", "compile and load a file into the image, with its warnings", _load, "FILE"),
    Command("load-system", "load an ASDF system (Common Lisp), with its warnings", _load_system,
            "NAME"),
    Command("trust", "trust the project found here (or in DIR): start its Lisp with the "
            "project's code, now and in later sessions", _trust, "[DIR]"),
    Command("undo", "put back the last change lispshell's tools made to FILE (or to any file)",
            _undo, "[FILE]"),
    Command("module", "show the current module, or make MODULE current (Guile)", _module,
            "[MODULE]"),
    Command("m", "Guile: ,module (as in Guile's REPL); elsewhere ,macroexpand", _m, "..."),
]


BUILTIN += DEBUGGER + NAVIGATION + OBSERVE


class CommandTable:
    def __init__(self, extra_source: Callable[[], dict] | None = None):
        self._builtin = {cmd.name: cmd for cmd in BUILTIN}
        self._extra_source = extra_source or (lambda: {})

    def all(self) -> list[Command]:
        """Built-in commands, then the LLM side's (which cannot shadow a built-in)."""
        out = dict(self._builtin)
        for name, (help_text, handler) in (self._extra_source() or {}).items():
            if name not in out:
                out[name] = Command(name, help_text, lambda repl, arg, _h=handler: _h(arg))
        return list(out.values())

    def find(self, name: str) -> tuple[Command | None, str]:
        """The command called `name` or uniquely starting with it, or (None, why not)."""
        commands = {cmd.name: cmd for cmd in self.all()}
        if name in commands:
            return commands[name], ""
        matches = [n for n in commands if n.startswith(name)]
        # `,res` is ,restart, although ,restart-frame starts with it too: a match that starts
        # every other one is the one meant.
        shortest = min(matches, key=len) if matches else None
        if shortest is not None and all(m.startswith(shortest) for m in matches):
            return commands[shortest], ""
        if matches:
            return None, f",{name} is ambiguous: " + ", ".join("," + m for m in sorted(matches))
        return None, f"Unknown command ,{name} (,help lists them)"

    async def run(self, repl, text: str):
        """Run `,name arg...`; returns QUIT when the REPL should end."""
        body = text.strip()[1:].strip()
        name, _, arg = body.partition(" ")
        if not name:
            name = "help"
        cmd, why = self.find(name.lower())
        if cmd is None and await repl.llm_just_loaded():   # ,yolo typed while it loads
            cmd, why = self.find(name.lower())
        if cmd is None:
            repl.renderer.notice(why)
            return None
        outcome = cmd.handler(repl, arg.strip())
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome
