"""Help while typing, from the live image (rebel-readline's eldoc, SLIME's autodoc).

- The toolbar shows the arglist and first doc line of the operator of the innermost open list
  at the cursor whose operator has one: `(mapcar function «list» &rest more-lists) — Apply
  FUNCTION to ...`, with the parameter the cursor's argument goes to marked «so», as SLIME's
  autodoc highlights it. Inside `(with-open-file (s ` the innermost list's operator, `s`, names
  no function: the hint is the enclosing `with-open-file`'s, its first parameter marked.
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
    found = operators_at(text_before_cursor, lisp)
    return found[0][0] if found and found[0][0] else ""


def operators_at(text_before_cursor: str, lisp: str) -> list[tuple[str, int]]:
    """(operator, argument index) of each open list around the cursor, innermost first: the
    operator's name ("" where the list starts with no symbol), and which argument (from 0,
    after the operator) the cursor is in or about to type."""
    if not text_before_cursor or len(text_before_cursor) > LONGEST_INPUT:
        return []
    from lispshell.syntax.reading import read
    from lispshell.syntax.validate import validate

    try:
        dialect = resolve_dialect(lisp)
        check = validate(text_before_cursor, dialect)
    except Exception:
        return []
    found = []
    for opener in reversed([o for o in check.unclosed if o.get("delim") == "paren"]):
        start = opener["offset"] + 1
        match = _SYMBOL.match(text_before_cursor, start)
        name = match.group(0) if match else ""
        if not name or name[0].isdigit() or name[0] in ":#" or name in (".", "-", "+"):
            found.append(("", 0))
            continue
        rest = text_before_cursor[match.end():]
        try:
            reading = read(rest, dialect)
        except Exception:
            found.append((name, -1))
            continue
        spans = list(reading.spans)
        # an argument being typed (the last form ends at the cursor) is the current one
        typing = bool(spans) and spans[-1][1] == len(rest) and not reading.unclosed
        index = len(spans) - 1 if typing else len(spans)
        if not rest or not rest[:1].isspace():
            index = -1              # still typing the operator itself
        found.append((name, index))
    return found


def mark_argument(arglist: str, index: int, lisp: str) -> str:
    """`arglist` (as the image gives it: `(name param ...)`, Clojure's `(name [params] ...)`)
    with the parameter that argument `index` goes to marked «so»; unchanged when none is."""
    if index < 0 or not (arglist.startswith("(") and arglist.endswith(")")):
        return arglist
    from lispshell.syntax.reading import read

    try:
        dialect = resolve_dialect(lisp)
        inner = arglist[1:-1]
        elements = read(inner, dialect).spans[1:]       # after the name
    except Exception:
        return arglist

    def marked(start: int, end: int) -> str:
        return arglist[:1 + start] + "«" + inner[start:end] + "»" + arglist[1 + end:]

    def param_for(items: list[tuple[int, int]], text: str, offset: int):
        """The span (in `inner`) of the parameter taking argument `index` among `items`."""
        position, rest_next = 0, False
        for start, end in items:
            word = text[start:end].lower()
            if rest_next:
                return offset + start, offset + end
            if word in ("&rest", "&body", "&", "."):
                rest_next = True
                continue
            if word in ("&key", "&aux", "&allow-other-keys", "&environment", "&whole"):
                return None            # keyword arguments come by name: nothing to mark
            if word == "&optional" or word.startswith("#:"):
                continue
            if position == index:
                return offset + start, offset + end
            position += 1
        return None

    if lisp == "clojure" and elements and inner[elements[0][0]:elements[0][0] + 1] == "[":
        for start, end in elements:          # the first arity the argument fits
            body = inner[start + 1:end - 1]
            try:
                params = read(body, dialect).spans
            except Exception:
                continue
            span = param_for(params, body, start + 1)
            if span is not None:
                return marked(*span)
        return arglist
    span = param_for(elements, inner, 0)
    return marked(*span) if span is not None else arglist


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
        """The toolbar's hint for the operator at the cursor; "" until the image has answered.
        An operator without an arglist (a variable at the head of a binding list: the `s` of
        `(with-open-file (s `) gives way to the enclosing one, as SLIME's autodoc does."""
        session = self.repl.session
        if session is None:
            return ""
        lisp = self.repl.lisp
        syntax = self.repl.dialect
        for name, index in operators_at(document.text_before_cursor, syntax)[:8]:
            if not name:
                continue
            key = (lisp, session.generation, session.package, name)
            with self._lock:
                if key not in self._cache:
                    if self._asking is None:
                        self._asking = key
                        threading.Thread(target=self._fetch, args=(session, key), daemon=True,
                                         name="lispshell-arglist").start()
                    return ""          # asked (or asking another): the answer redraws
                hint = self._cache[key]
            if hint:
                arglist, dash, doc = hint.partition(" — ")
                return mark_argument(arglist, index, syntax) + dash + doc
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
