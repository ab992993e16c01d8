"""Help while typing, from the live image (rebel-readline's eldoc, SLIME's autodoc).

- The toolbar shows the arglist and first doc line of the operator of the innermost open list
  at the cursor: `(mapcar function list &rest more-lists) — Apply FUNCTION to ...`.
- Ctrl-X Ctrl-D prints the full documentation of the symbol at the cursor, Ctrl-X Ctrl-A the
  symbols whose names contain it (apropos), above the prompt.

Look-ups go through `session.try_eval`, which answers None at once while the image is busy or
starting: the editor never waits on the Lisp, and a busy image is never interrupted. The
toolbar asks again at its next redraw. Names travel to the image as string literals and are
read there with read-time evaluation off (lispshell/lisp/introspect.py): a name at the cursor
is never evaluated. Arglists are cached per name until the next eval (which may redefine it).
"""
from __future__ import annotations

import re
import threading

from lispshell.lisp.introspect import call_form
from lispshell.syntax.dialects import resolve_dialect

_SYMBOL = re.compile(r"[^\s()\[\]{}\"';`,@^~]+")
_SYMBOL_END = re.compile(r"[^\s()\[\]{}\"';`,@^~]+$")
LONGEST_INPUT = 20_000     # characters before the cursor; beyond that, no hint (keys stay fast)


def operator_at(text_before_cursor: str, lisp: str) -> str:
    """The operator of the innermost open list before the cursor ("" if none)."""
    if not text_before_cursor or len(text_before_cursor) > LONGEST_INPUT:
        return ""
    from lispshell.syntax.validate import validate

    try:
        check = validate(text_before_cursor, resolve_dialect(lisp))
    except Exception:
        return ""
    parens = [o for o in check.unclosed if o.get("delim") == "paren"]
    if not parens:
        return ""
    match = _SYMBOL.match(text_before_cursor, parens[-1]["offset"] + 1)
    name = match.group(0) if match else ""
    if not name or name[0].isdigit() or name[0] in ":#" or name in (".", "-", "+"):
        return ""
    return name


def symbol_at(document) -> str:
    """The symbol the cursor is in or just after."""
    before = _SYMBOL_END.search(document.text_before_cursor)
    after = _SYMBOL.match(document.text_after_cursor)
    return (before.group(0) if before else "") + (after.group(0) if after else "")


class ArglistHints:
    def __init__(self, repl):
        self.repl = repl
        self._cache: dict[tuple, str] = {}      # (lisp, generation, package, name) -> hint
        self._asking: tuple | None = None        # the look-up under way (one at a time)
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    def hint(self, document) -> str:
        """The toolbar's hint for the operator at the cursor; "" until the image has answered."""
        name = operator_at(document.text_before_cursor, self.repl.dialect)
        session = self.repl.session
        if not name or session is None:
            return ""
        key = (self.repl.lisp, session.generation, session.package, name)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
            if self._asking is None:
                self._asking = key
                threading.Thread(target=self._fetch, args=(session, key), daemon=True,
                                 name="lispshell-arglist").start()
        return ""

    def _fetch(self, session, key: tuple) -> None:
        lisp, _, _, name = key
        hint = None
        try:
            look = call_form(lisp, "arglist", name, "")
            result = session.try_eval(look.form, timeout=15.0)
            if result is not None:        # None: busy or starting, ask again at the next redraw
                answer = look.answer(result.output) if result.error is None else None
                hint = ""
                if answer and answer[0] == "ok":
                    arglist, _, doc = answer[1].partition("\n")
                    hint = arglist + (f" — {doc.strip()}" if doc.strip() else "")
        except Exception:         # a broken look-up is not retried at every redraw
            hint = ""
        finally:
            with self._lock:
                self._asking = None
                if hint is not None:
                    self._cache[key] = hint
        if hint:
            self.repl.redraw()


def look_up(repl, function: str, name: str, what: str) -> None:
    """Ctrl-X Ctrl-D / Ctrl-X Ctrl-A: run `function` of the look-up helpers on `name` in a
    worker thread and print its answer above the prompt."""
    from rich.text import Text

    if not name:
        repl.flash(f"No symbol at the cursor to show {what} for")
        return
    session = repl.session

    def work() -> None:
        result = None
        look = call_form(repl.lisp, function, name, "")
        if session is not None:
            result = session.try_eval(look.form, timeout=10.0,
                                      wait=2.0)    # behind a toolbar look-up, not an eval
        if result is None:
            repl.flash(f"{repl.lisp} is busy or starting: no {what} now")
            repl.redraw()
            return
        answer = look.answer(result.output) if result.error is None else None
        if answer is None:
            message = str(result.error) if result.error else "no answer"
            repl.print_above(Text(f"; {what} of {name}: {message}", style="yellow"))
        elif answer[0] != "ok":
            repl.print_above(Text(f"; {answer[1].strip()}", style="yellow"))
        else:
            repl.print_above(Text(f"── {what} of {name} ──", style="bold"),
                             Text(answer[1].rstrip()), sep="\n")

    threading.Thread(target=work, daemon=True, name="lispshell-lookup").start()
