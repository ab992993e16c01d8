"""The interactive REPL: read a line, route it, evaluate it or hand it to the LLM, show the result.

The `Repl` object is what the LLM side integrates against. What it may rely on:

  repl.session        the current LispSession, or connection to someone's image (nREPL, Swank,
                      Guile server: see lispshell/lisp/connection.py); None only if the Lisp
                      could not be started
  repl.lisp           the current Lisp's name: "sbcl" | "guile" | "clojure"
  repl.dialect        its syntax dialect: "cl" | "scheme" | "clojure"
  repl.package        the current package / module / namespace, as the prompt shows it
  repl.console        the rich Console everything is printed with
  repl.config         the effective configuration (dict)
  repl.options        the parsed command-line flags (.yolo, .model, .continue_, .no_llm, .lisp)
  repl.print_above(*renderables)   print without garbling the prompt: from the event loop or
                      any thread, whether or not a prompt is being edited at the time
  repl.print_notice(message)       the same, as a one-line `; notice`
  repl.flash(message)              a short-lived message in the bottom toolbar

What the `,` commands (repl/commands.py, debugger.py, navigation.py, observe.py) use, and
nothing private besides (tests/test_layers.py checks):

  await repl.ready_session()       the current session, started or waited for as needed
  await repl.run_in_session(session, call, *args)   a blocking session call in a thread,
                      Ctrl-C interrupting it by the one escalating path (`interrupt`)
  await repl.run_persons_code(session, call, *args) the same for a call that runs the
                      person's code: output streamed, input asked, a status line while silent
  repl.after_eval()   the image may have changed (completions and hints are asked again)
  await repl.record_eval(code, result, recorded)     tell the model of an eval
  repl.sessions       the Lisps and connections held (repl/sessions.py); repl.key the current
  repl.command_state  what a command keeps between its calls

The LLM object comes from `lispshell.repl.llm_hook.make_llm(repl)`. It is created once, in a
worker thread, after the first prompt is on screen (so its imports never delay the prompt);
make_llm must not touch the event loop. After it exists, every eval the person makes is passed
to `llm.record_eval(code, result, lisp=)`, prose goes to `await llm.ask(text)` (a task: Ctrl-C
interrupts a busy Lisp and cancels it), `llm.commands` join the `,` commands and
`llm.toolbar()` joins the bottom toolbar.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime
import re
import signal
import sys
import time
import traceback
from contextlib import contextmanager
from functools import partial

from rich.text import Text

from lispshell.config import GateSettings, ReplSettings, settings
from lispshell.lisp.contract import InterruptOutcome
from lispshell.lisp.dialects import DIALECTS, get_dialect
from lispshell.repl.commands import QUIT, CommandTable
from lispshell.repl.forms import split_forms
from lispshell.repl.render import Renderer
from lispshell.repl.route import COMMAND, LISP, LLM, is_lone_symbol, route


LLM_LOAD_DELAY = 0.3     # seconds after the first prompt starts (see _after_prompt_started)


class Repl:
    def __init__(self, lisp: str, config: dict, options, console=None):
        from lispshell.repl.sessions import Sessions
        self.sessions = Sessions(lisp)            # the Lisps and connections held; one current
        self.config = config
        self.options = options
        from lispshell.repl.pager import pager_command
        from lispshell.repl.theme import THEMES, ThemeError, theme_for

        try:
            self.theme = theme_for(config)
            bad_style = ""
        except ThemeError as exc:
            self.theme, bad_style = THEMES["default"], str(exc)

        self.renderer = Renderer(console, settings(config, ReplSettings).backtrace_lines,
                                 pager_command(config), value_style=self.theme.value)
        self.console = self.renderer.console
        if bad_style:
            self.renderer.notice(f"{bad_style}; using the default colours.")
        self.commands = CommandTable(lambda: getattr(self.llm, "commands", None) or {})
        self.llm = None
        self._llm_future: asyncio.Future | None = None
        self._llm_failed = False
        self._pending_evals: list = []            # evals made before the LLM side loaded
        self._prompts: dict = {}                 # lisp name -> PromptSession
        self._flash: tuple[str, float] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.hints = None                         # eldoc.ArglistHints, made on first use
        self.force_lisp = False                   # Meta-Enter submitted the text as Lisp
        self.command_state: dict = {}             # what a command keeps between calls
        from lispshell.repl.input_line import InputLine
        self.input_line = InputLine(self)         # what the person's code reads from them

    # What the LLM side reads ------------------------------------------------------------
    @property
    def session(self):
        return self.sessions.current

    @property
    def lisp(self) -> str:
        """The current session's Lisp."""
        return self.sessions.lisp

    @lisp.setter
    def lisp(self, name: str) -> None:
        self.sessions.lisp = name

    @property
    def key(self) -> str:
        """The current session's key in `sessions`: a Lisp's name or a URL."""
        return self.sessions.key

    @key.setter
    def key(self, key: str) -> None:
        self.sessions.key = key

    @property
    def dialect(self) -> str:
        return get_dialect(self.lisp).syntax

    def print_above(self, *renderables, **kwargs) -> None:
        """Print rich renderables above the prompt (safe from any thread, prompt or not)."""
        loop = self._loop
        if loop is not None and loop.is_running():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                loop.call_soon_threadsafe(partial(self.print_above, *renderables, **kwargs))
                return
            from prompt_toolkit.application import get_app_or_none, run_in_terminal

            app = get_app_or_none()
            if app is not None and app.is_running:
                run_in_terminal(partial(self.renderer.print, *renderables, **kwargs))
                return
        self.renderer.print(*renderables, **kwargs)

    def print_notice(self, message: str) -> None:
        self.print_above(Text("; " + message, style="italic yellow"))

    def flash(self, message: str | None, seconds: float = 3.0) -> None:
        """Show `message` in the bottom toolbar for `seconds`; None takes it away."""
        self._flash = None if message is None else (message, time.monotonic() + seconds)

    def redraw(self) -> None:
        """Redraw the prompt and toolbar soon (safe from any thread)."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return

        def invalidate() -> None:
            from prompt_toolkit.application import get_app_or_none

            app = get_app_or_none()
            if app is not None and app.is_running:
                app.invalidate()
        loop.call_soon_threadsafe(invalidate)

    # Sessions ---------------------------------------------------------------------------
    def start_session(self, lisp: str):
        """Start `lisp` in the background (the prompt never waits for a JVM)."""
        from lispshell.lisp.session import make_session

        try:
            session = make_session(lisp, self.config)
            session.start(wait=False)
        except Exception as exc:
            self.renderer.notice(f"Cannot start {lisp}: {exc}")
            return None
        self.sessions[lisp] = session
        self.sessions.make_current(lisp, lisp)
        self.sessions.start_failed.pop(lisp, None)
        if self._loop is not None and self._loop.is_running():
            asyncio.ensure_future(self._watch_boot(lisp, session))
        return session

    async def _watch_boot(self, lisp: str, session) -> None:
        """Say at once, above the prompt, if a Lisp booting in the background fails to start."""
        from lispshell.lisp.session import init_failure
        try:
            await asyncio.get_running_loop().run_in_executor(None, partial(session.start, True))
        except Exception as exc:
            self.sessions.start_failed[lisp] = str(exc)
            self.print_notice(f"The Lisp did not start: {exc}")
            return
        report = session.init_report
        printed = (report.output if report is not None else "").strip("\n")
        if printed:           # what ~/.sbclrc or ~/.guile printed, as their own REPL shows it
            self.print_above(Text(printed + "\n", end=""), soft_wrap=True)
        if init_failure(session):
            self.print_notice(init_failure(session)[:1].upper() + init_failure(session)[1:] + ".")

    async def restart(self):
        """Kill the current Lisp and start a fresh one (`,restart`)."""
        session = self.session
        if session is None and self.sessions.on_a_connection_address:
            self.renderer.notice(f"Not connected to {self.key}: ,reconnect connects again; "
                                 ",lisp NAME starts a Lisp of lispshell's own.")
            return None
        if session is None:
            if self.start_session(self.lisp):
                self.renderer.notice(f"Started {self.lisp}.")
            return None
        if session.is_connection:
            self.renderer.notice(f"{session.url} is someone's image, not one lispshell started: "
                                 "it is never restarted from here. ,reconnect opens a new "
                                 "connection; ,lisp NAME starts a Lisp of lispshell's own.")
            return None
        started = time.monotonic()
        # A JVM takes seconds to come back: say what is happening meanwhile.
        self.renderer.status(lambda: f"restarting {self.lisp} · "
                                     f"{time.monotonic() - started:.1f} s", delay=0.3)
        try:
            await asyncio.get_running_loop().run_in_executor(None, session.restart)
        except Exception as exc:
            self.renderer.notice(f"Restart failed: {exc}")
            return None
        finally:
            self.renderer.status(None)
        self.sessions.start_failed.pop(self.lisp, None)
        self.after_eval()
        self.renderer.notice(f"Restarted {self.lisp}: a fresh image (earlier definitions are gone).")
        return None

    def switch_lisp(self, name: str):
        name = name.lower()
        if name not in DIALECTS:
            self.renderer.notice(f"Unknown Lisp {name!r}; known: " + ", ".join(sorted(DIALECTS)))
            return None
        if name == self.key and self.session is not None:
            self.renderer.notice(f"Already running {name}.")
            return None
        self.sessions.make_current(name, name)
        if self.session is None:
            self.start_session(name)
        self.renderer.notice(f"Switched to {name}" + (" (starting)" if self.session is not None
                                                      and not self.session.ready else "") + ".")
        return None

    # Connections to images lispshell did not start (,connect ,disconnect ,reconnect) -------
    async def connect(self, text: str | None, first: bool = False):
        """Connect to `text` (a URL, a port, or "" for a port file) and make it current; an
        existing connection to the same address is switched to. Returns the session or None.
        `first` (--connect): on failure the address stays current, so that nothing else is
        evaluated in its place (a Lisp of lispshell's own is started only when asked)."""
        from lispshell.lisp.connection import ConnectError, connect_session
        from lispshell.workspace.project import connect_target

        try:
            target = connect_target(text)
        except ConnectError as exc:
            self.renderer.notice(str(exc))
            if first:
                self.key = "(not connected)"
            return None
        if first:
            self.sessions.make_current(target.url, target.lisp)
        session = self.sessions.get(target.url)
        if session is None:
            self.renderer.notice(f"Connecting to {target.url}...")
            try:
                session = await asyncio.get_running_loop().run_in_executor(
                    None, partial(connect_session, target, self.config))
            except Exception as exc:   # ConnectError, or a server that answers nonsense
                self.renderer.notice(f"Not connected: {exc}")
                return None
            self.sessions[target.url] = session
        self.sessions.make_current(target.url, target.lisp)
        self.renderer.notice(f"Connected to {target.url} ({session.dialect.display}, "
                             f"{session.package or session.dialect.starting_package}). "
                             "The image is theirs: ,disconnect leaves it running.")
        return session

    async def disconnect(self):
        session = self.session
        if not session.is_connection:
            self.renderer.notice("Not connected to an image (the current Lisp is lispshell's "
                                 "own; ,quit ends it).")
            return None
        await asyncio.get_running_loop().run_in_executor(None, session.close)
        del self.sessions[self.key]
        rest = list(self.sessions)
        # ,reconnect acts on the current connection: with another one current, it is
        # ,connect URL that comes back here.
        again = f",connect {session.url}" if rest else ",reconnect"
        self.renderer.notice(f"Disconnected from {session.url}; the image keeps running there "
                             f"({again} connects again).")
        if rest:
            self.sessions.make_current(rest[-1], self.sessions[rest[-1]].lisp)
            self.renderer.notice(f"Now on {self.key}.")
        # With nothing else, the key stays the address: nothing runs in its place until the
        # person says so (,reconnect, ,connect, ,lisp NAME).
        return None

    async def reconnect(self):
        session = self.session
        if session is None and self.sessions.on_a_connection_address:       # disconnected: the same address again
            await self.connect(self.key)
            return None
        if session is None or not session.is_connection:
            self.renderer.notice("The current Lisp is not a connection (,connect URL makes one).")
            return None
        try:
            await asyncio.get_running_loop().run_in_executor(None, session.reconnect)
        except Exception as exc:
            self.renderer.notice(f"Not connected: {exc}")
            return None
        self.renderer.notice(f"Reconnected to {session.url} (the image's definitions are as "
                             "they were there).")
        return None

    def history_entries(self) -> list[str]:
        prompt = self._prompts.get(self.lisp)
        if prompt is None:
            return []
        return list(prompt.history.get_strings())

    def close(self) -> None:
        """End every child Lisp (no stray processes)."""
        self.sessions.close_all()

    # The prompt -------------------------------------------------------------------------
    def prompt_session(self):
        if self.lisp not in self._prompts:
            from lispshell.repl.editor import make_prompt_session

            self._prompts[self.lisp] = make_prompt_session(self, self.lisp)
        return self._prompts[self.lisp]

    @property
    def package(self) -> str:
        """The current package, module or namespace (the starting one while the Lisp boots)."""
        return (self.session.package if self.session is not None else "") or _starting_package(self.lisp)

    def prompt_message(self):
        session = self.session
        level = session.level if session is not None else 0
        # An image reached over a connection says which (`swank:4005 CL-USER>`): the same
        # package at a child's prompt is a different image.
        target = getattr(session, "target", None) if session is not None else None
        where = [("ansicyan", f"{target.scheme}:{target.port or target.path.rsplit('/', 1)[-1]} ")] \
            if target is not None and getattr(session, "is_connection", False) else []
        at = [("bold ansired", f"[{level}] ")] if level else []
        return where + at + [("bold ansigreen", self.package), ("", "> ")]

    def toolbar(self):
        session = self.session
        if session is None and self.sessions.on_a_connection_address:
            state = "disconnected (,reconnect)"
        elif session is None:
            state = "no Lisp (,restart)"
        elif session.is_connection:
            state = ("busy" if session.busy else "connected" if session.ready
                     else "not connected (,reconnect)")
        elif self.lisp in self.sessions.start_failed and not session.ready:
            state = "failed to start (,restart)"
        elif not session.ready:
            state = "starting"
        elif session.busy:
            state = "busy"
        elif not session.alive:
            state = "stopped (restarts on the next eval)"
        else:
            state = "ready"
        parts = [self.key, self.package if session else "-", state]
        if session is not None and session.level:
            waiting = session.waiting
            kind = getattr(waiting, "type", "")
            parts.append("step: ,s into ,n over ,o out ,c continue ,abort" if kind == "LISPSHELL-STEP"
                         else f"break {session.level}: ,continue ,return FORM ,s ,bt ,abort"
                         if kind == "LISPSHELL-BREAK" else
                         f"debug level {session.level}: ,bt ,frame N ,invoke N ,abort ,top")
        points = list(getattr(session, "known_breakpoints", {}).values()) if session else []
        if points:
            # the model's are named: the person removes them with ,unbreak
            mine = [p.name for p in points if p.by_model]
            parts.append(f"{len(points)} breakpoint{'s' if len(points) > 1 else ''}"
                         + (f" (model: {', '.join(mine[:3])}{'…' if len(mine) > 3 else ''})"
                            if mine else ""))
        llm = self._llm_toolbar()
        if llm:
            parts.append(llm)
        if self._flash and time.monotonic() < self._flash[1]:
            parts.append(self._flash[0])
        line = " " + " │ ".join(parts) + " "
        hint, width = self._arglist_hint()
        if hint:
            room = width - len(line) - 3
            line += "│ " + (hint if len(hint) <= room else hint[:max(0, room - 1)] + "…")
        return line

    def _arglist_hint(self) -> tuple[str, int]:
        """(the arglist of the operator at the cursor, the screen width), or ("", 0)."""
        from prompt_toolkit.application import get_app_or_none

        app = get_app_or_none()
        if app is None or not app.is_running or self.session is None:
            return "", 0
        if self.hints is None:
            from lispshell.repl.eldoc import ArglistHints

            self.hints = ArglistHints(self)
        try:
            return self.hints.hint(app.current_buffer.document), app.output.get_size().columns
        except Exception:       # a hint must never break the prompt
            return "", 0

    def _llm_toolbar(self) -> str:
        from lispshell.repl.llm_hook import gate_label, initial_gate_mode

        if getattr(self.options, "no_llm", False):
            return "LLM off"
        if self._llm_failed:
            return "LLM failed to load"
        if self.llm is None:      # still loading: the mode is known already
            return gate_label(initial_gate_mode(self.config, self.options))
        try:
            return str(self.llm.toolbar() or "")
        except Exception:
            return ""

    # The loop ---------------------------------------------------------------------------
    async def run(self) -> int:
        self._loop = asyncio.get_running_loop()
        self._say_yolo()
        connect = getattr(self.options, "connect", None)
        if connect is not None:
            await self.connect(connect, first=True)   # failed: evals say so; nothing starts
        else:
            self.start_session(self.lisp)
        try:
            with typeahead_mode():   # between prompts; each prompt sets its own raw mode
                _keep_early_typeahead()
                await self._read_eval_print_loop()
        finally:
            self.close()
        return 0

    async def _read_eval_print_loop(self) -> None:
        while True:
            watcher = asyncio.ensure_future(self._redraw_on_change())
            try:
                text = await self.prompt_session().prompt_async(pre_run=self._after_prompt_started)
            except KeyboardInterrupt:
                continue
            except EOFError:
                if self.session is not None and self.session.level:
                    watcher.cancel()
                    from lispshell.repl.debugger import leave_level
                    await leave_level(self)     # Ctrl-D at a level leaves it, as in SBCL
                    continue
                break
            finally:
                watcher.cancel()
            # Ctrl-C cancels whatever the input started (a restart, a switch...); evals and
            # LLM questions install their own, finer handlers while they run.
            task = asyncio.ensure_future(self.handle(text))
            with self._on_sigint(task.cancel):
                try:
                    if await task is QUIT:
                        break
                except asyncio.CancelledError:
                    if not task.cancelled():
                        raise
                    self.renderer.notice("Interrupted.")
                except KeyboardInterrupt:
                    self.renderer.notice("Interrupted.")
                except Exception as exc:   # a bug of ours: say so, keep the shell alive
                    self._internal_error(exc)

    async def _redraw_on_change(self) -> None:
        """Redraw the prompt when what it shows changes (the Lisp becomes ready, the package
        changes, a flash message expires), rather than on a timer: an idle shell is silent."""
        from prompt_toolkit.application import get_app_or_none

        # Sampled now, as the prompt is first drawn: a Lisp that turns ready in the next 0.2 s
        # (an eval the model's stopped turn interrupted) would otherwise stay `busy` on screen.
        shown = (self.toolbar(), repr(self.prompt_message()))
        while True:
            await asyncio.sleep(0.2)
            self._show_idle_output()
            now = (self.toolbar(), repr(self.prompt_message()))
            if now != shown:
                app = get_app_or_none()
                if app is not None and app.is_running:
                    app.invalidate()
                shown = now

    def _show_idle_output(self) -> None:
        """What a thread the person left running printed while the prompt waits: shown above
        the prompt when it is printed, not held for the next eval's output."""
        session = self.session
        if session is None:
            return
        try:
            text = session.idle_output()
        except Exception:         # a dying Lisp: the next eval says so
            return
        if text:
            self.print_above(Text(text, end=""), soft_wrap=True)

    async def handle(self, text: str):
        """One submitted input; returns QUIT when the REPL should end."""
        forced, self.force_lisp = self.force_lisp, False
        if not text.strip():
            return None
        kind = route(text, self.dialect)
        if forced and kind == LLM and not text.strip().startswith("?"):
            kind = LISP
        if kind == COMMAND:
            return await self.commands.run(self, text)
        if kind == LLM:
            question = text.strip()
            question = question[1:].strip() if question.startswith("?") else question
            if question:
                await self.ask(question)
            else:
                self.renderer.notice("Type your question after the ?, e.g. ? what does mapcan do")
            return None
        await self.eval_text(text)      # "lisp", or "incomplete" forced by Meta-Enter
        return None

    async def eval_text(self, text: str) -> None:
        forms, problem = split_forms(text, self.dialect)
        if problem is not None:
            self.renderer.syntax_problem(text, problem)   # nothing is evaluated
            return
        # Only a word alone may have been prose: a whole form failing on an unbound variable keeps
        # its restarts and is not offered to the model.
        lone = len(forms) == 1 and is_lone_symbol(forms[0], self.lisp)
        for form in forms:
            result = await self.eval_form(form, lone_symbol=lone)
            if result is None or (result.interrupted and not result.timed_out):
                break

    async def eval_form(self, code: str, lone_symbol: bool = False, recorded=None):
        """Evaluate one form the person typed, show it, and tell the LLM side about it.
        A `lone_symbol` that is unbound may have been a word of prose: offered to the model.
        `recorded`: (code, tool, tool input) the model is told of instead of `code` (,time
        evaluates a wrapped form; the model reads the person's form, as its `time` call)."""
        session = await self.ready_session()
        if session is None:
            return None
        try:
            result, streamed = await self.run_persons_code(session, session.eval, code,
                                                           timeout=None, keep_levels=True)
        except Exception as exc:
            self.renderer.finish_line()
            self.renderer.notice(f"Could not evaluate: {exc}")
            return None
        offer = lone_symbol and _unbound(self.lisp, result) and await self._may_offer()
        shown = result
        if offer and result.error.restarts:
            # The line was most likely prose: SBCL's restarts for it would be noise before the
            # question (they stay on offer: ,invoke still works).
            shown = dataclasses.replace(result, error=dataclasses.replace(result.error,
                                                                          restarts=[]))
        self.renderer.result(shown, streamed, _says_no_values(self.lisp))
        self.after_eval()
        if offer:
            await self._offer_to_llm(code)
            return result           # not recorded: an unbound word is no eval to remember
        await self.record_eval(code, result, recorded)
        return result

    # Running in the session: the one path every command takes ---------------------------
    async def ready_session(self, start: bool = True):
        """The session a command acts on, ready to take it: lispshell's own Lisp is started if
        none runs (with `start`) and waited for while it boots (Ctrl-C gives up waiting). None,
        said, when there is none or it will not start. A lost connection is returned as it is:
        it answers "not connected" at once, and is never started from here."""
        session = self.session
        if session is None:
            if not start:
                self.renderer.notice("No Lisp is running.")
                return None
            if self.key != self.lisp:
                self.renderer.notice(f"Not connected to {self.key}: ,connect URL, or ,lisp NAME "
                                     "for a Lisp of lispshell's own.")
                return None
            session = self.start_session(self.lisp)
            if session is None:
                return None
        if not session.is_connection and not session.ready \
                and not await self._wait_until_ready(session):
            return None
        return session

    async def run_in_session(self, session, call, *args, **kwargs):
        """Run `call(*args, **kwargs)`, a blocking operation on `session`, in a worker thread
        while Ctrl-C interrupts it through `interrupt`: the one escalating path, where an
        interrupt that has not landed is said and only the person's second Ctrl-C kills the
        Lisp (or closes the connection). Answers what `call` answers; its exceptions pass."""
        with self._on_sigint(lambda: self.interrupt(session)):
            return await asyncio.get_running_loop().run_in_executor(
                None, partial(call, *args, **kwargs))

    async def run_persons_code(self, session, call, *args, **kwargs):
        """`run_in_session` for a call that runs the person's code (an eval, a restart, a step,
        a breakpoint's continue): its output is shown as it comes, what it reads is asked of the
        person, its value is capped only where a person's value is, and a status line shows
        while it is silent (no prompt, so no toolbar, while a form runs). `call` takes
        on_output, value_cap and on_input. Answers (its result, whether any output came)."""
        from lispshell.lisp.session import PERSON_VALUE_CAP

        streamed = False

        def on_output(chunk: str) -> None:
            nonlocal streamed
            streamed = True
            self.renderer.output(chunk)

        started = time.monotonic()
        self.renderer.status(lambda: f"{self.lisp} busy · {time.monotonic() - started:.1f} s · "
                                     "Ctrl-C interrupts", delay=0.5)
        try:
            result = await self.run_in_session(session, call, *args, on_output=on_output,
                                               value_cap=PERSON_VALUE_CAP,
                                               on_input=self.input_line.reader(), **kwargs)
        finally:
            self.renderer.status(None)
        return result, streamed

    async def _may_offer(self) -> bool:
        """Can an unbound lone word be offered to the model (the LLM is on, with a key)?"""
        if getattr(self.options, "no_llm", False):
            return False
        llm = await self.get_llm()
        return llm is not None and getattr(llm, "has_key", False)

    async def _offer_to_llm(self, word: str) -> None:
        """`thanks`, `why?`, `continue` typed alone read as symbols and failed as unbound: with
        the LLM on, one key sends the line to the model instead."""
        from lispshell.repl.confirm import ask_key

        grace = settings(self.config, GateSettings).grace
        question = f"{word.strip()} is unbound. Send it to the model? [y]es / [n]o (default: no) "
        with self.renderer.status_held():
            key = await ask_key(grace, question, OFFER_KEYS)
        if key == "y":
            await self.ask(word.strip())

    async def _wait_until_ready(self, session) -> bool:
        """Wait for a Lisp still booting (Clojure's JVM); Ctrl-C stops waiting. False if it
        will not start or the person gave up (the form is then not evaluated)."""
        if self.lisp not in self.sessions.start_failed:
            self.renderer.notice(f"Waiting for {self.lisp} to start (Ctrl-C to give up)...")
        waiting = asyncio.get_running_loop().run_in_executor(None, partial(session.start, True))
        with self._on_sigint(waiting.cancel):
            try:
                await waiting
            except asyncio.CancelledError:
                if not waiting.cancelled():
                    raise
                self.renderer.notice("Interrupted: the form was not evaluated.")
                return False
            except Exception as exc:
                self.renderer.notice(f"Could not evaluate: {exc}")
                return False
        self.sessions.start_failed.pop(self.lisp, None)
        return True

    def after_eval(self) -> None:
        """After the image may have changed: completions and arglist hints are asked again."""
        prompt = self._prompts.get(self.lisp)
        if prompt is not None:
            prompt.lispshell_completer.invalidate()
        if self.hints is not None:
            self.hints.invalidate()

    # The LLM seam -----------------------------------------------------------------------
    def _after_prompt_started(self) -> None:
        """Called as the prompt starts, before it is drawn: load the LLM side a moment later,
        so its imports (a second or two of CPU) do not compete with the first draw."""
        if self._llm_future is None:
            asyncio.get_running_loop().call_later(LLM_LOAD_DELAY, self._load_llm_soon)

    def _load_llm_soon(self) -> None:
        if self._llm_future is None and not getattr(self.options, "no_llm", False):
            self._llm_future = asyncio.get_running_loop().run_in_executor(None, self._make_llm)
            self._llm_future.add_done_callback(self._llm_loaded)

    def _say_yolo(self) -> None:
        """Before the first prompt, not when the LLM side has loaded seconds later."""
        from lispshell.repl.llm_hook import YOLO_AT_START, initial_gate_mode

        if not getattr(self.options, "no_llm", False) and \
                initial_gate_mode(self.config, self.options) == "yolo":
            self.renderer.print(Text("; " + YOLO_AT_START, style="bold yellow"))

    def _llm_loaded(self, future: asyncio.Future) -> None:
        """The LLM side exists: the toolbar and the commands use it from now on."""
        if not future.cancelled() and future.exception() is None:
            self.llm = future.result()

    def _make_llm(self):
        from lispshell.repl.llm_hook import make_llm

        return make_llm(self)

    async def get_llm(self):
        """The LLM object, or None (no key, --no-llm, or it failed to load: said once)."""
        if getattr(self.options, "no_llm", False) or self._llm_failed:
            return None
        self._load_llm_soon()
        try:
            self.llm = await asyncio.shield(self._llm_future)
        except Exception as exc:
            self._llm_failed = True
            self.renderer.notice(f"The LLM side failed to load: {exc}")
            return None
        return self.llm

    async def llm_just_loaded(self) -> bool:
        """Wait for an LLM side still loading; True if it exists now and did not before."""
        if self.llm is not None or getattr(self.options, "no_llm", False) or self._llm_failed:
            return False
        return await self.get_llm() is not None

    async def record_eval(self, code: str, result, recorded=None) -> None:
        """Tell the LLM side about the person's eval, without ever waiting for it to load:
        evals made before it exists are queued and handed over, in order, when it does.
        `recorded`: (code, tool, tool input) to tell instead (see `eval_form`)."""
        if getattr(self.options, "no_llm", False) or self._llm_failed:
            return
        tool, tool_input = "eval", None
        if recorded is not None:
            code, tool, tool_input = recorded
        # with the Lisp it ran in: a queued eval may be handed over after a ,lisp switch
        self._pending_evals.append((code, result, self.lisp, tool, tool_input))
        self._load_llm_soon()
        if self._llm_future.done():
            await self._flush_pending_evals()
        elif len(self._pending_evals) == 1:
            self._llm_future.add_done_callback(
                lambda _f: asyncio.ensure_future(self._flush_pending_evals()))

    async def _flush_pending_evals(self) -> None:
        llm = await self.get_llm()
        pending, self._pending_evals = self._pending_evals, []
        if llm is None:
            return
        for code, result, lisp, tool, tool_input in pending:
            try:
                llm.record_eval(code, result, lisp=lisp, tool=tool, tool_input=tool_input)
            except Exception as exc:
                self.renderer.notice(f"The LLM side could not record an eval: {exc}")
                return

    async def ask(self, text: str) -> None:
        """Hand prose to the LLM side, as a task Ctrl-C cancels (and a busy Lisp is interrupted)."""
        if getattr(self.options, "no_llm", False):
            self.renderer.notice("That reads as prose, which goes to the LLM, but lispshell was "
                                 "started with --no-llm.")
            return
        task = asyncio.ensure_future(self._ask(text))

        def on_sigint() -> None:
            session = self.session
            if session is not None and session.busy:
                session.interrupt()          # the LLM's own eval, if one is running
            task.cancel()

        with self._on_sigint(on_sigint):
            try:
                await task
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise
                self.renderer.notice("Interrupted.")
            except Exception as exc:
                self.renderer.notice(f"LLM error: {type(exc).__name__}: {exc}")

    async def _ask(self, text: str) -> None:
        llm = await self.get_llm()
        if llm is None:
            self.renderer.notice(
                "That reads as prose, which goes to the LLM; set ANTHROPIC_API_KEY to talk to "
                "Claude. (A lone symbol or a form is evaluated.)")
            return
        if self._pending_evals:
            await self._flush_pending_evals()     # the model must see them before the question
        await llm.ask(text)

    # Plumbing ---------------------------------------------------------------------------
    def interrupt(self, session) -> None:
        """Ctrl-C while a form runs: interrupt it. An interrupt that has not landed within the
        grace period is said, and only a Ctrl-C after that kills the Lisp: the person's word,
        never a timer's (a connection is never killed at all)."""
        did = session.interrupt()
        if did is InterruptOutcome.GAVE_UP:
            self.print_notice("Closing the connection, as you asked; the image runs on."
                              if session.is_connection else
                              "Killing the Lisp, as you asked: a fresh one starts.")
            return
        grace = session.interrupt_grace

        def late() -> None:
            if session.busy and session.interrupt_pending >= grace:
                self.print_notice(
                    f"The interrupt has not landed yet ({self.lisp} keeps trying). Ctrl-C "
                    "again kills the Lisp and starts a fresh one (definitions are lost)."
                    if not session.is_connection else
                    "The interrupt has not landed yet; lispshell keeps waiting. Ctrl-C again "
                    "closes the connection (the image runs on, that evaluation included; "
                    ",reconnect connects again).")
        if did is InterruptOutcome.SENT and self._loop is not None:
            self._loop.call_later(grace + 0.1, late)

    @contextmanager
    def _on_sigint(self, callback):
        """While no prompt is reading, Ctrl-C arrives as SIGINT: route it to `callback`.

        A Python-level handler rather than loop.add_signal_handler: a prompt shown meanwhile
        (the LLM side's confirmation) saves and restores Python-level handlers, so this one
        survives it.
        """
        loop = asyncio.get_running_loop()
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, lambda signum, frame: loop.call_soon_threadsafe(callback))
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)

    def _internal_error(self, exc: BaseException) -> None:
        from lispshell.config import state_dir

        log = state_dir() / "error.log"
        try:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"--- {datetime.datetime.now().isoformat()}\n")
                f.write("".join(traceback.format_exception(exc)))
            where = f" (details in {log})"
        except OSError:
            where = ""
        self.renderer.finish_line()
        self.renderer.notice(f"Internal error: {type(exc).__name__}: {exc}{where}")


# The one-key question after an unbound lone symbol: y sends it, anything that means no, no.
OFFER_KEYS = {"y": "y", "n": "no", "enter": "no", "escape": "no", "c-c": "no", "c-d": "no"}


def _unbound(lisp: str, result) -> bool:
    err = getattr(result, "error", None)
    if err is None or getattr(result, "interrupted", False):
        return False
    try:
        pattern = get_dialect(lisp).unbound_error
    except ValueError:
        return False
    return re.search(pattern, f"{err.type}: {err.message}") is not None


def _says_no_values(lisp: str) -> bool:
    try:
        return get_dialect(lisp).says_no_values
    except ValueError:
        return True


def _starting_package(lisp: str) -> str:
    """Shown until the image reports its own (so the prompt does not change when it is ready)."""
    try:
        return get_dialect(lisp).starting_package
    except ValueError:
        return lisp


@contextmanager
def typeahead_mode():
    """Terminal settings for between prompts (while a form runs, no prompt reads the keyboard).

    In the ordinary cooked mode, keys typed ahead would be echoed into the output and Enter
    (CR) would reach the next prompt as a newline (LF, by ICRNL), so a line typed ahead would
    never be submitted. Here: no echo, no line editing, CR kept as CR; ISIG stays on, so
    Ctrl-C still arrives as SIGINT and interrupts the eval. The next prompt reads the keys.
    """
    try:
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError, AttributeError):
        yield
        return
    mode = list(saved)
    mode[0] &= ~termios.ICRNL                          # iflag
    mode[3] &= ~(termios.ECHO | termios.ICANON)        # lflag (ISIG kept)
    mode[6] = list(mode[6])
    mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
    try:
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        try:
            termios.tcsetattr(fd, termios.TCSANOW, saved)
        except OSError:
            pass


def _keep_early_typeahead() -> None:
    """Keys typed before the first prompt (while lispshell starts) answer it as typed.

    Until `typeahead_mode` the terminal was in cooked mode, which turned each Enter (CR)
    into a newline (LF, by ICRNL): read as Ctrl-J, `(+ 1 2)` Enter `,quit` Enter became one
    two-line input. The bytes already waiting are taken now, their newlines made Enter again,
    and handed to the first prompt as prompt-toolkit's own type-ahead."""
    import os
    import select

    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return
        data = b""
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    except (OSError, ValueError):
        return
    if not data:
        return
    from prompt_toolkit.application.current import get_app_session
    from prompt_toolkit.input.typeahead import store_typeahead
    from prompt_toolkit.input.vt100_parser import Vt100Parser

    keys: list = []
    parser = Vt100Parser(keys.append)
    parser.feed(data.replace(b"\n", b"\r").decode("utf-8", "replace"))
    parser.flush()
    store_typeahead(get_app_session().input, keys)


def run_interactive(lisp: str, config: dict, options) -> int:
    repl = Repl(lisp, config, options)
    try:
        return asyncio.run(repl.run())
    finally:
        repl.close()
        sys.stdout.flush()
