"""The eval gate's question on the terminal: show the exact code, then y / n / a / e.

    ── the model wants to evaluate (2 of 3) ──
    (delete-file "notes.txt")
    Evaluate? [y]es / [n]o (+ reason) / [a]lways this session / [e]dit   (default: no)

- `y` runs it; `n` refuses and asks for an optional reason, passed to the model; `a` runs it
  and every later eval of this session (the gate goes to YOLO, shown in the toolbar); `e` opens
  the code in $EDITOR, then asks again about the edited code (the model is told what ran).
- Enter, Esc and Ctrl-D mean no, and the model carries on; Ctrl-C means no and ends the
  model's turn (as in Claude Code). Nothing is ever approved by default. The answer is echoed
  after the question; pasted text is not an answer and is ignored (said on the question line).
- Keys typed before the question appeared can never answer it: prompt-toolkit's own type-ahead
  store and the terminal's input queue are both emptied first, and keys arriving within a
  short grace period after the question is drawn are ignored.

The gate calls `confirm(code, index, total)` from the worker thread that runs the tool; the
question itself runs on the REPL's event loop (prompt-toolkit lives there).
"""
from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import tempfile
import time

from rich.console import Console, Group
from rich.syntax import Syntax
from rich.text import Text

from lispshell.lisp.dialects import SBCL, get_dialect
from lispshell.tools.gate import Decision, EvalGate

QUESTION = "Evaluate? [y]es / [n]o (+ reason) / [a]lways this session / [e]dit   (default: no) "
TALL_QUESTION = ("Evaluate? [y]es / [n]o (+ reason) / [a]lways this session / [e]dit / [v]iew "
                 "it all   (default: no) ")
EDIT_QUESTION = "Write it? [y]es / [n]o (+ reason)   (default: no) "
EDIT_QUESTION_TALL = "Write it? [y]es / [n]o (+ reason) / [v]iew it all   (default: no) "
EDIT_KEYS = {"y": "y", "n": "n", "enter": "no", "escape": "no", "c-d": "no", "c-c": "stop"}


def _dialect(lisp: str):
    try:
        return get_dialect(lisp)
    except ValueError:
        return SBCL


def flush_typeahead() -> None:
    """Throw away every key typed before now: prompt-toolkit's store and the tty's queue."""
    try:
        from prompt_toolkit.application.current import get_app_session
        from prompt_toolkit.input.typeahead import clear_typeahead

        clear_typeahead(get_app_session().input)
    except Exception:
        pass
    try:
        import termios

        if sys.stdin.isatty():
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except Exception:
        pass


# key -> answer, for the gate's question; letters match in either case.
GATE_KEYS = {"y": "y", "n": "n", "a": "a", "e": "e",
             "enter": "no", "escape": "no", "c-d": "no", "c-c": "stop"}
TALL_KEYS = {**GATE_KEYS, "v": "v"}
SHOWN = {"no": "no", "stop": "no, and stop"}    # how an answer is echoed after the question
PASTE_NOTE = "  [pasted text ignored: answer with one key]"


async def ask_key(grace: float, question: str = QUESTION, keys: dict | None = None) -> str:
    """One answer key, looked up in `keys` (default: the gate's: "y", "n", "a", "e", "no" for
    Enter/Esc/Ctrl-D, "stop" for Ctrl-C). The answer is echoed after the question, so the
    screen says what was decided; pasted text is not a key and is ignored, visibly."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.keys import Keys

    keys = GATE_KEYS if keys is None else keys
    shown = [0.0]
    note = [""]
    kb = KeyBindings()

    def answer(result):
        def handler(event):
            if time.monotonic() - shown[0] < grace:
                return  # too early to be an answer to this question: typed ahead
            note[0] = ""
            event.app.current_buffer.text = SHOWN.get(result, result)
            event.app.exit(result=result)
        return handler

    for key, result in keys.items():
        for variant in {key, key.upper()} if len(key) == 1 else {key}:
            kb.add(variant, eager=True)(answer(result))

    @kb.add(Keys.BracketedPaste)
    def _pasted(event):
        note[0] = PASTE_NOTE

    @kb.add(Keys.Any)
    def _ignore(event):
        pass

    def pre_run():
        flush_typeahead()
        shown[0] = time.monotonic()

    session = PromptSession(key_bindings=kb, erase_when_done=False)
    try:
        return await session.prompt_async(lambda: question + note[0], pre_run=pre_run)
    except (KeyboardInterrupt, EOFError):
        return "no"


async def ask_reason() -> str:
    from prompt_toolkit import PromptSession

    try:
        text = await PromptSession().prompt_async("Reason for the model (optional, Enter to skip): ")
    except (KeyboardInterrupt, EOFError):
        return ""
    return text.strip()


def shown_code(code: str, lexer: str, theme: str, dialect: str | None = None):
    """The code as the person approves it: highlighted, with every control, invisible or
    lookalike character written out (`gate.visible_pieces`) and marked in reverse video, so
    that no byte the model sent can move the cursor, erase a line or pass for something else."""
    from lispshell.show import HIDDEN_NOTE, visible_pieces

    pieces = visible_pieces(code, dialect)
    if not any(changed for _, changed in pieces):
        return Syntax(code, lexer, theme=theme, background_color="default", word_wrap=True)
    text = Text()
    for shown, changed in pieces:
        text.append(shown, style="reverse" if changed else None)
    return Group(text, Text(HIDDEN_NOTE, style="dim"))


def edit_in_editor(code: str, suffix: str) -> str | None:
    """The code after the person edited it in $VISUAL/$EDITOR, or None if the editor failed."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    fd, path = tempfile.mkstemp(prefix="lispshell-eval-", suffix=suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(code)
        try:
            status = subprocess.call(shlex.split(editor) + [path])
        except OSError:
            return None
        if status != 0:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read().rstrip("\n")
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


STOPPED = "they pressed Ctrl-C to stop this turn"


class TerminalConfirm:
    """`confirm(code, index, total) -> Decision` for EvalGate, asking on the REPL's terminal."""

    def __init__(self, console: Console, gate_ref, lisp=lambda: "sbcl", grace: float = 0.3,
                 loop: asyncio.AbstractEventLoop | None = None, announce=None,
                 package=lambda: "", stop_turn=lambda: None):
        self.code_theme = "ansi_dark"     # rich Syntax theme (the REPL's [repl] style sets it)
        self.console = console
        self.gate_ref = gate_ref          # () -> EvalGate, for `a`
        self.lisp = lisp                  # () -> current Lisp name, for highlighting
        self.package = package            # () -> the package/module/namespace it will run in
        self.grace = grace
        self.stop_turn = stop_turn        # () -> None: Ctrl-C at the question ends the turn
        self.loop = loop
        self.announce = announce or (lambda msg: console.print(Text("; " + msg, style="bold yellow")))

    def __call__(self, code: str, index: int = 1, total: int = 1) -> Decision:
        return self._asked(code, "evaluation", lambda: self.ask(code, index, total))

    def confirm_edit(self, edit) -> Decision:
        """EvalGate's `confirm_edit`: the whole diff of a change to a file that runs at start,
        then yes or no (no 'always': each such change is its own decision)."""
        return self._asked(edit.question_text(), "change", lambda: self.ask_edit(edit))

    def _asked(self, text: str, what: str, question) -> Decision:
        """The answer to `question()` (a coroutine run on the REPL's loop), called from the
        tool's worker thread; a refusal no one made when no terminal can show it."""
        loop = self.loop
        if loop is None or not loop.is_running():
            return Decision(False, text, f"No terminal is available to confirm this {what}.",
                            by_person=False)
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:  # would deadlock: the question needs the loop we are blocking
            return Decision(False, text, "The confirmation could not be shown.", by_person=False)
        return asyncio.run_coroutine_threadsafe(question(), loop).result()

    async def ask_edit(self, edit) -> Decision:
        from lispshell.show import visible

        text = edit.question_text()
        self.console.print(Text(f"── the model wants to change a file that runs at start: "
                                f"{visible(edit.path)} ──", style="bold magenta"))
        self.console.print(Text(f"({visible(edit.why)})", style="dim"))
        while True:
            shown, tall = self._fitted(edit.diff, None, "diff")
            self.console.print(shown)
            key = await ask_key(self.grace, EDIT_QUESTION_TALL if tall else EDIT_QUESTION,
                                {**EDIT_KEYS, "v": "v"} if tall else EDIT_KEYS)
            if key != "v":
                break
            self._page(edit.diff, None)
        if key == "y":
            return Decision(True, text)
        if key == "stop":
            self.stop_turn()
            return Decision(False, text, reason=STOPPED)
        reason = await ask_reason() if key == "n" else ""
        return Decision(False, text, reason=reason)

    def _fitted(self, code: str, dialect: str, lexer: str) -> tuple[object, bool]:
        """(what to print, whether it was cut). A form taller than the screen leaves room for
        the question: its first lines (where a form acts first) and its last, with the count
        between; `v` at the question shows it all in the pager. Never the first lines
        scrolled away above the question."""
        from lispshell.repl.pager import screen_lines

        room = max(8, self.console.height - 8)
        width = self.console.width
        if screen_lines(code, width) <= room:
            return shown_code(code, lexer, self.code_theme, dialect), False
        lines = code.split("\n")
        head, tail = [], []
        budget = room - 2
        for line in lines:                       # two thirds of the room for the first lines
            rows = screen_lines(line, width)
            if rows > budget * 2 // 3 - sum(screen_lines(x, width) for x in head) and head:
                break
            head.append(line)
        for line in reversed(lines[len(head):]):
            if screen_lines("\n".join(head + tail + [line]), width) > budget:
                break
            tail.insert(0, line)
        hidden = len(lines) - len(head) - len(tail)
        note = Text(f"⋮ {hidden} more line{'s' if hidden != 1 else ''} not shown here: [v] shows "
                    f"all {len(lines)} lines ⋮", style="bold yellow")
        parts = [shown_code("\n".join(head), lexer, self.code_theme, dialect), note]
        if tail:
            parts.append(shown_code("\n".join(tail), lexer, self.code_theme, dialect))
        return Group(*parts), True

    def _page(self, code: str, dialect: str | None = "") -> None:
        from lispshell.repl.pager import pager_command, run_pager
        from lispshell.show import visible_code

        command = pager_command({})
        shown = visible_code(code, _dialect(self.lisp()).syntax if dialect == "" else dialect)
        problem = run_pager(command, shown) if command else "no pager"
        if problem:
            self.console.print(Text(shown))

    def show(self, code: str, index: int, total: int, edited: bool = False) -> bool:
        try:
            where = self.package() or ""
        except Exception:
            where = ""
        where = f" in {self.lisp()} {where}".rstrip()
        count = f" ({index} of {total})" if total > 1 else ""
        title = ("your edited code" if edited else "the model wants to evaluate") + where + count
        self.console.print(Text(f"── {title} ──", style="bold magenta"))
        record = _dialect(self.lisp())
        shown, cut = self._fitted(code, record.syntax, record.lexer)
        self.console.print(shown)
        return cut

    async def ask(self, code: str, index: int = 1, total: int = 1) -> Decision:
        edited = False
        while True:
            tall = self.show(code, index, total, edited)
            key = await ask_key(self.grace, TALL_QUESTION if tall else QUESTION,
                                TALL_KEYS if tall else GATE_KEYS)
            if key == "v":
                self._page(code)     # on the loop's thread: the pager takes SIGINT from it
                continue
            if key == "y":
                return Decision(True, code, edited=edited)
            if key == "a":
                gate: EvalGate = self.gate_ref()
                if gate is not None:
                    gate.set_mode("yolo")
                self.announce("YOLO on for the rest of this session: the model's evals run "
                              "without asking (,yolo off to stop).")
                return Decision(True, code, edited=edited)
            if key == "e":
                new = await asyncio.get_running_loop().run_in_executor(
                    None, edit_in_editor, code, _dialect(self.lisp()).suffixes[0])
                if new is None:
                    self.console.print(Text("; the editor failed; nothing changed", style="yellow"))
                elif new.strip() and new != code:
                    code, edited = new, True
                continue
            if key == "stop":     # Ctrl-C: no, and the model's turn ends here
                self.stop_turn()
                return Decision(False, code, reason=STOPPED, edited=edited)
            reason = await ask_reason() if key == "n" else ""
            return Decision(False, code, reason=reason, edited=edited)
