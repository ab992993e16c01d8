"""The person's input line: how code evaluated at the prompt reads from them.

When a form reads standard input (`(read-line)`, `(y-or-n-p "Proceed?")`, Guile's `read-char`,
Clojure's `read-line`, a restart's `:interactive` reader), the session calls the eval's
`on_input` from the thread the eval runs in (lispshell/lisp/session.py). `InputLine.reader()`
is that callable for the REPL: it shows a line of its own under the output, marked `» ` and
with no package in it (it is not the Lisp's prompt), and answers with what the person typed:

  Enter      the line, newline included (the code reads it as from a terminal)
  Ctrl-D     end of file (on an empty line; elsewhere it deletes, as at the prompt)
  Ctrl-C     interrupts the reading code, as Ctrl-C interrupts any running code

Output the code printed before it asks (`(format t "Name? ")`, no newline) is already on
the screen: the line starts after it. Keys typed while the code ran are not lost: they
answer the read, as a terminal would give them to the program. Lines typed here have
their own history (Up), kept for the session and apart from the prompt's.
"""
from __future__ import annotations

import asyncio

MARK = "» "
TOOLBAR = (" the running code reads standard input │ Enter sends the line │ "
           "Ctrl-D end of file │ Ctrl-C interrupts ")
_INTERRUPT = object()


class InputLine:
    def __init__(self, repl):
        self.repl = repl
        self._prompt = None

    def reader(self):
        """The `on_input` callable for one eval (called from its worker thread)."""
        loop = asyncio.get_running_loop()

        def on_input() -> str | None:
            line = asyncio.run_coroutine_threadsafe(self._ask(), loop).result()
            if line is _INTERRUPT:
                raise KeyboardInterrupt
            return line
        return on_input

    def _session(self):
        if self._prompt is None:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.history import InMemoryHistory

            self._prompt = PromptSession(history=InMemoryHistory())
        return self._prompt

    async def _ask(self):
        renderer = self.repl.renderer
        with renderer.status_held():
            try:
                text = await self._session().prompt_async(
                    [("bold", MARK)], bottom_toolbar=TOOLBAR, multiline=False,
                    complete_while_typing=False, enable_history_search=False)
            except KeyboardInterrupt:
                line = _INTERRUPT
            except EOFError:
                line = None
            else:
                line = text + "\n"
        # The line the person ended (Enter, Ctrl-D, Ctrl-C) leaves the cursor on a new one.
        renderer.at_line_start = True
        return line
