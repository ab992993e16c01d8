"""The line editor: one prompt-toolkit PromptSession per Lisp, with Lisp-aware keys.

Keys (Emacs mode; prompt-toolkit's defaults for everything not listed):
  Enter                 submit when the input is complete (a form, prose, a command) or has a
                        syntax error (it is then shown with its position), wherever the cursor
                        is; inside an open form, a newline indented Lisp-style
  Meta-Enter, Esc Enter submit whatever is there
  Ctrl-J                newline (indented) anywhere
  Ctrl-X Ctrl-]         close every open list, then submit (SLIME's close-all-parens)
  Ctrl-C                clear the input (on an empty line: a reminder of how to leave)
  Ctrl-D                on an empty line: leave lispshell
  Tab                   complete a symbol from the live image (after a `,`: a command's
                        name); at the start of a continuation line, indent it Lisp-style
  Ctrl-R, Up            history search (Enter runs the line found), history (Up filters by
                        what is typed)
  Ctrl-X Ctrl-E         edit the input in $EDITOR
  Ctrl-X Ctrl-D         the documentation of the symbol at the cursor (from the live image)
  Ctrl-X Ctrl-A         apropos: the symbols whose names contain the one at the cursor
The toolbar shows the arglist of the operator at the cursor (see eldoc.py).
Pasted text (bracketed paste) lands in the buffer and is never submitted by its newlines.
"""
from __future__ import annotations

import os
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.enums import DEFAULT_BUFFER
from prompt_toolkit.application import get_app
from prompt_toolkit.filters import Condition, has_focus, is_searching
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.layout.processors import HighlightMatchingBracketProcessor

from lispshell.config import ReplSettings, settings
from lispshell.syntax.dialects import resolve_dialect
from lispshell.repl.indent import newline_indent
from lispshell.repl.route import INCOMPLETE, route


def pygments_lexer(lisp: str):
    """Pygments' lexer class for a Lisp (imported on demand: each module costs a little)."""
    from pygments.lexers import find_lexer_class_by_name

    return find_lexer_class_by_name(_dialect(lisp).lexer)


def _dialect(lisp: str):
    from lispshell.lisp.dialects import SBCL, get_dialect
    try:
        return get_dialect(lisp)
    except ValueError:
        return SBCL


class SafeFileHistory(FileHistory):
    """FileHistory that survives an unreadable or unwritable file: history stays in memory."""

    def __init__(self, filename, on_problem=None):
        super().__init__(filename)
        self.on_problem = on_problem or (lambda message: None)
        self._warned = False

    def _problem(self, what: str, exc: OSError) -> None:
        if not self._warned:
            self._warned = True
            self.on_problem(f"History file {self.filename} cannot be {what} ({exc.strerror or exc}); "
                            "this session's history is kept in memory only.")

    def load_history_strings(self):
        try:
            return list(super().load_history_strings())
        except OSError as exc:
            self._problem("read", exc)
            return []

    def store_string(self, string: str) -> None:
        try:
            # Private, as shells keep theirs (0600): people type secrets at a prompt. An
            # existing file keeps the mode its owner gave it.
            os.close(os.open(self.filename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
            super().store_string(string)
        except OSError as exc:
            self._problem("written", exc)


def history_path(state_dir: Path, lisp: str) -> Path:
    return state_dir / f"history-{lisp}"


def wants_newline(document, lisp: str) -> bool:
    """Should Enter insert a newline (True) or submit (False)? Only the text decides, never
    where the cursor is (as SLIME's RET): a complete form recalled from history submits from
    any of its lines; Ctrl-J adds a line to it."""
    text = document.text
    if not text.strip():
        return False
    return route(text, lisp) == INCOMPLETE


def missing_closers(text: str, lisp: str) -> str:
    """The closers that complete `text` (innermost first); "" if it is not merely unclosed
    (an unterminated string or comment, or an error, is left for the person to fix)."""
    from lispshell.syntax.dialects import CLOSE_CHAR
    from lispshell.syntax.validate import validate

    check = validate(text, resolve_dialect(lisp))
    if check.complete or any(e.code != "UNCLOSED" for e in check.errors):
        return ""
    return "".join(CLOSE_CHAR[o["delim"]] for o in reversed(check.unclosed))


def newline_and_indent(buffer, lisp: str) -> None:
    before = buffer.document.text_before_cursor
    stripped = before.rstrip(" \t")
    if len(stripped) < len(before) and not stripped.endswith("\n"):
        buffer.delete_before_cursor(len(before) - len(stripped))   # no trailing blanks
        before = stripped
    buffer.insert_text("\n" + " " * newline_indent(before, lisp))


def key_bindings(repl) -> KeyBindings:
    kb = KeyBindings()
    focused = has_focus(DEFAULT_BUFFER)

    @kb.add("enter", filter=focused)
    def _enter(event):
        buffer = event.current_buffer
        state = buffer.complete_state
        if state and state.current_completion:
            buffer.apply_completion(state.current_completion)
        elif wants_newline(buffer.document, repl.dialect):
            newline_and_indent(buffer, repl.dialect)
        else:
            buffer.validate_and_handle()

    @kb.add("enter", filter=is_searching)
    def _run_found(event):
        # Ctrl-R, then Enter runs the line found, as readline and bash do (prompt-toolkit's
        # own Enter only ends the search).
        from prompt_toolkit import search

        search.accept_search()
        buffer = event.app.current_buffer
        if not wants_newline(buffer.document, repl.dialect):
            buffer.validate_and_handle()

    @kb.add("escape", "enter", filter=focused)
    def _force_submit(event):
        repl.force_lisp = True       # "submit anyway": what is typed is Lisp, never prose
        event.current_buffer.validate_and_handle()

    @kb.add("c-x", "c-]", filter=focused)
    def _close_and_submit(event):
        """SLIME's close-all-parens: add the missing closers, then submit (only when asked)."""
        buffer = event.current_buffer
        closers = missing_closers(buffer.text, repl.dialect)
        if closers:
            buffer.cursor_position = len(buffer.text)
            buffer.insert_text(closers)
        buffer.validate_and_handle()

    @kb.add("c-j", filter=focused)
    def _newline(event):
        newline_and_indent(event.current_buffer, repl.dialect)

    @Condition
    def in_leading_blanks() -> bool:
        document = get_app().current_buffer.document
        return document.cursor_position_row > 0 and \
            not document.current_line_before_cursor.strip()

    @kb.add("tab", filter=focused & in_leading_blanks)
    def _indent_line(event):
        """Tab at the start of a continuation line: indent it Lisp-style (else: complete)."""
        buffer = event.current_buffer
        document = buffer.document
        line_start = document.cursor_position - len(document.current_line_before_cursor)
        want = newline_indent(document.text[:line_start - 1], repl.dialect)
        line = document.current_line
        have = len(line) - len(line.lstrip(" "))
        buffer.text = document.text[:line_start] + " " * want + document.text[line_start + have:]
        buffer.cursor_position = line_start + want

    @kb.add("c-x", "c-d", filter=focused)
    def _doc(event):
        from lispshell.repl.eldoc import look_up, operator_at, symbol_at

        document = event.current_buffer.document
        name = symbol_at(document) or operator_at(document.text_before_cursor, repl.dialect)
        look_up(repl, "describe-name", name, "documentation")

    @kb.add("c-x", "c-a", filter=focused)
    def _apropos(event):
        from lispshell.repl.eldoc import look_up, symbol_at

        look_up(repl, "apropos*", symbol_at(event.current_buffer.document), "apropos")

    @kb.add("c-c", filter=focused)
    def _clear(event):
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            repl.flash("Ctrl-D or ,quit to leave")

    return kb


def make_prompt_session(repl, lisp: str) -> PromptSession:
    """A PromptSession for `lisp`: its own history file, lexer, completer and the shared keys."""
    from lispshell.config import state_dir
    from lispshell.repl.completion import LiveCompleter
    from lispshell.repl.theme import input_lexer, prompt_style

    history = SafeFileHistory(history_path(state_dir(), lisp), on_problem=repl.print_notice)
    completer = LiveCompleter(lambda: repl.session,
                              commands=lambda: [c.name for c in repl.commands.all()])
    session = PromptSession(
        message=repl.prompt_message,
        multiline=True,
        prompt_continuation=lambda width, line_number, soft_wrap: " " * width,
        # Not ThreadedHistory: its lines arrive from a thread, and Up pressed at once on a
        # busy machine found none. A file history loads whole in the one step of the event
        # loop after the prompt is first drawn, before any key is read.
        history=history,
        enable_history_search=True,
        lexer=input_lexer(lisp, pygments_lexer(lisp), repl.theme),
        style=prompt_style(repl.theme),
        include_default_pygments_style=False,    # its RGB navy symbols vanish on dark screens
        completer=ThreadedCompleter(completer),
        # prompt-toolkit's own complete-while-typing is off whenever history search is on
        # (Up filtering by what is typed): completing as typed is done below instead.
        complete_while_typing=False,
        input_processors=[HighlightMatchingBracketProcessor()],
        key_bindings=key_bindings(repl),
        bottom_toolbar=repl.toolbar,
        enable_open_in_editor=True,
        tempfile_suffix=_dialect(lisp).suffixes[0],  # editor modes
        mouse_support=False,
    )
    session.lispshell_completer = completer      # so an eval can invalidate its cache
    session.lispshell_history = history

    def typing_resumed(_buffer) -> None:
        repl.flash(None)          # a hint about the empty line ("Ctrl-D or ,quit") is past
    session.default_buffer.on_text_changed += typing_resumed
    if settings(repl.config, ReplSettings).complete_while_typing:
        from lispshell.repl.completion import symbol_prefix

        def complete_as_typed(buffer) -> None:
            # A menu as a symbol is typed (`[repl] complete_while_typing = true`), as Tab
            # would open it; never after a blank or a delimiter, never in a comment's prose.
            if buffer.complete_state is None and symbol_prefix(buffer.document.text_before_cursor):
                buffer.start_completion(select_first=False)
        session.default_buffer.on_text_insert += complete_as_typed
    return session
