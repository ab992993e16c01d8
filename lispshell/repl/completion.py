"""Tab completion of symbols from the live image (and of `,` command names after a comma).

The candidates come from `session.completions(prefix)` (apropos in the child). The completer
runs in a worker thread (prompt-toolkit's ThreadedCompleter) so the editor never waits on the
child, and the session answers [] at once while the child is busy or still starting. Answers
are cached per prefix until the next eval (which may define new names); a longer prefix is
served by filtering a cached shorter one.
"""
from __future__ import annotations

import re
import threading
from typing import Callable

from prompt_toolkit.completion import Completer, Completion

# The symbol being typed: everything back to a delimiter, quote or whitespace.
_SYMBOL_TAIL = re.compile(r"[^\s()\[\]{}\"';`,@^~]+$")


def symbol_prefix(text_before_cursor: str) -> str:
    match = _SYMBOL_TAIL.search(text_before_cursor)
    return match.group(0) if match else ""


def compound_match(prefix: str, name: str) -> bool:
    """Does `prefix` match `name` word by word, as SLIME's completion does (m-v-b matches
    multiple-value-bind)? The loops in the images answer by this rule (SBCL's
    `compound-match-p`); here it filters a cached answer for a longer prefix."""
    at = 0
    name = name.lower()
    for ch in prefix.lower():
        if at >= len(name):
            return False
        if ch == "-":
            at = name.find("-", at)
            if at < 0:
                return False
        elif ch != name[at]:
            return False
        at += 1
    return True


# The commands whose argument is a name or a form of the image: completed as Lisp is.
SYMBOL_ARGUMENTS = frozenset({"edit", "who-calls", "who-refs", "macroexpand", "apropos",
                              "describe", "inspect", "eval-in-frame"})


def _file_completions(document):
    """`,load FILE`: the file names under the path typed (~ expanded)."""
    from prompt_toolkit.completion import PathCompleter
    from prompt_toolkit.document import Document

    path = document.text_before_cursor.lstrip()[1:].partition(" ")[2].lstrip()
    yield from PathCompleter(expanduser=True).get_completions(Document(path, len(path)), None)


class LiveCompleter(Completer):
    def __init__(self, get_session: Callable[[], object], limit: int = 200,
                 commands: Callable[[], list[str]] = lambda: []):
        self.get_session = get_session
        self.commands = commands          # () -> the `,` commands' names
        self.limit = limit
        self._cache: dict[tuple[str, str], list[str]] = {}   # (kind, prefix) -> names
        self._cache_owner: object = None
        self._lock = threading.Lock()
        # Bumped by invalidate: an answer asked for before an eval and back after it (a busy
        # machine) is not cached, or the name the eval defined would be filtered out.
        self._generation = 0

    def invalidate(self) -> None:
        """Forget cached answers (after an eval: new names may exist)."""
        with self._lock:
            self._cache.clear()
            self._generation += 1

    def candidates(self, prefix: str, kind: str = "symbol") -> list[str]:
        session = self.get_session()
        if session is None:
            return []
        with self._lock:
            if self._cache_owner is not session:
                self._cache.clear()
                self._cache_owner = session
            if (kind, prefix) in self._cache:
                return self._cache[kind, prefix]
            generation = self._generation
            for (known_kind, known), names in self._cache.items():
                if known_kind == kind and prefix.lower().startswith(known.lower()) \
                        and len(names) < self.limit:
                    found = [n for n in names if compound_match(prefix, n)]
                    self._cache[kind, prefix] = found
                    return found
        if session.busy or not session.ready:
            return []   # not cached: ask again when the child is free
        try:
            names = list(session.completions(prefix, kind))
        except Exception:   # a dying child must not break the editor
            return []
        with self._lock:
            if generation == self._generation:
                self._cache[kind, prefix] = names
        return names

    def get_completions(self, document, complete_event):
        typed = document.text_before_cursor.lstrip()
        if typed.startswith(","):       # a REPL command: its name, then what it takes
            name, space, _ = typed[1:].partition(" ")
            if not space:
                for command in sorted(self.commands()):
                    if command.startswith(name.lower()):
                        yield Completion(command, start_position=-len(name))
                return
            if name.lower() == "load":
                yield from _file_completions(document)
                return
            if name.lower() == "load-system":      # the systems ASDF (or Quicklisp) knows
                typed_name = typed[1:].partition(" ")[2].lstrip()
                for system in self.candidates(typed_name, "system")[: self.limit]:
                    yield Completion(system, start_position=-len(typed_name))
                return
            if name.lower() not in SYMBOL_ARGUMENTS:
                return
        prefix = symbol_prefix(document.text_before_cursor)
        if not prefix:
            return
        for name in self.candidates(prefix)[: self.limit]:
            if name.isupper() and not prefix.isupper():
                name = name.lower()     # CL's reader upcases; show what the person types
            yield Completion(name, start_position=-len(prefix))
