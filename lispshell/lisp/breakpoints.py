"""Breakpoints, kept in the image (lispshell/lisp/levels.py: `set_breakpoint`).

The image holds the breakpoints (so the REPL, the model's tools and MCP see one set), each
Lisp's helpers setting, listing and clearing them: SBCL's in image/sbcl-debug.lisp (the
function encapsulated), Clojure's in image/clojure-debug.clj (the var's root wrapped). Every
helper prints one line per breakpoint, `number TAB name TAB condition TAB hits TAB model`, and
signals an error that says why when it cannot (no such function, a macro, a condition that
does not read). The name and the condition reach the image as string literals, never spliced
into code: the name is read there with the reader's evaluation off, and the condition is code
the person typed or the gate showed.
"""
from __future__ import annotations

from lispshell.lisp.dialects import string_literal
from lispshell.lisp.levels import Breakpoint, level_kind

FORMS = {
    "sbcl": {
        "set": "(%lispshell::set-breakpoint {name} {condition} {model})",
        "list": "(%lispshell::list-breakpoints)",
        "clear": "(%lispshell::clear-breakpoints {which})",
        "true": "t", "false": "nil",
    },
    # The loop's own procedures, registered for its thread (image/guile-loop.scm): Guile's
    # traps fire on the thread that set them, the loop's.
    "guile": {
        "set": "({guile} \"set\" {name} {condition} {model})",
        "set-at": "({guile} \"set-at\" {file} {line} {condition} {model})",
        "list": "({guile} \"list\")",
        "clear": "({guile} \"clear\" {which})",
        "true": "#t", "false": "#f",
    },
    "clojure": {
        "set": "(lispshell.debug/set-breakpoint {name} {condition} {model})",
        "list": "(lispshell.debug/list-breakpoints)",
        "clear": "(lispshell.debug/clear-breakpoints {which})",
        "true": "true", "false": "false",
    },
}


GUILE_HELPER = ("(hashq-ref (module-ref (resolve-module '(lispshell debug)) 'loops) "
                "((@ (ice-9 threads) current-thread)))")


def parse(output: str) -> list[Breakpoint]:
    points = []
    for line in output.splitlines():
        parts = line.split("\t")
        if len(parts) == 5 and parts[0].isdigit() and parts[3].isdigit():
            points.append(Breakpoint(int(parts[0]), parts[1], parts[2], int(parts[3]),
                                     parts[4] == "model"))
    return points


def run(session, op: str, **args) -> list[Breakpoint]:
    """Run helper `op` (set, list, clear) in `session`'s image; the breakpoints it printed.
    Raises ValueError with the image's reason when it refused."""
    forms = FORMS[session.lisp]
    lits = {k: (forms["true"] if v else forms["false"]) if isinstance(v, bool)
            else string_literal(v) for k, v in args.items()}
    result = session.eval(forms[op].format(guile=GUILE_HELPER, **lits), timeout=None,
                          history=False,
                          keep_levels=True)
    if result.error is not None:
        message = result.error.message.strip() or result.error.type
        raise ValueError(message[:1].lower() + message[1:].rstrip("."))
    return parse(result.output)


def _condition(text: str) -> str:
    """The condition of `,break NAME when COND` (`when` is optional: a condition is a form)."""
    text = text.strip()
    return text[5:].strip() if text.startswith("when ") else text


class ImageBreakpoints:
    """`set_breakpoint`, `breakpoints`, `clear_breakpoint` for a transport whose image has
    lispshell's helpers (mixed into the session classes before `Session`). `known_breakpoints`
    is what the last of them saw (number -> Breakpoint), for the toolbar, which must not ask
    the image at each redraw; a breakpoint set by code typed at the prompt shows from the next
    `,breaks`."""

    known_breakpoints: dict = {}

    def _saw(self, points, all_of_them: bool = False, gone: bool = False):
        known = {} if all_of_them else dict(self.known_breakpoints)
        for p in points:
            if gone:
                known.pop(p.number, None)
            else:
                known[p.number] = p
        self.known_breakpoints = known
        return points

    def _breakpoints_here(self) -> None:
        if self.lisp not in FORMS:
            self._refuse("a breakpoint")

    def set_breakpoint(self, name: str, condition: str = "", by_model: bool = False):
        self._breakpoints_here()
        name = name.strip()
        if not name:
            raise ValueError("which function? ,break NAME [when CONDITION]")
        points = run(self, "set", name=name, condition=_condition(condition), model=by_model)
        if not points:
            raise ValueError(f"no breakpoint was set on {name}")
        return self._saw(points)[-1]

    def set_source_breakpoint(self, file: str, line: int, condition: str = "",
                              by_model: bool = False):
        self._breakpoints_here()
        if "set-at" not in FORMS[self.lisp]:
            self._refuse("a breakpoint at a source line")
        points = run(self, "set-at", file=file.strip(), line=str(line),
                     condition=_condition(condition), model=by_model)
        if not points:
            raise ValueError(f"no breakpoint was set at {file}:{line}")
        return self._saw(points)[-1]

    def breakpoints(self) -> list[Breakpoint]:
        self._breakpoints_here()
        return self._saw(run(self, "list"), all_of_them=True)

    def clear_breakpoint(self, which: str = "") -> list[Breakpoint]:
        self._breakpoints_here()
        return self._saw(run(self, "clear", which=which.strip()), gone=True)


# Hits parked on threads of a child's image that the loop does not run in (a thread or future
# the person started): the image keeps them (sbcl-debug.lisp, clojure-debug.clj) and these
# helpers list, evaluate at, describe and decide them.
PARKED = {
    "sbcl": {
        "lines": "(%lispshell::parked-lines)",
        "eval": "(%lispshell::eval-at {id} {code})",
        "frames": "(%lispshell::frames-at {id} {op} {n})",
        "resume": "(%lispshell::resume {id} {n} {code})",
        "nil": "nil",
    },
    "clojure": {
        "lines": "(lispshell.debug/parked-lines)",
        "eval": "(lispshell.debug/eval-at {id} {code})",
        "frames": "(lispshell.debug/frames-at {id} {op} {n})",
        "resume": "(lispshell.debug/resume {id} {n} {code})",
        "nil": "nil",
    },
}


def parse_parked(output: str) -> list[tuple[str, str, list[str], str]]:
    """(id, thread, restarts, message) of each `parked-lines` line: id TAB thread TAB the
    restarts ("NAME TAB description", joined by US) TAB the message (newlines as US)."""
    hits = []
    for line in output.splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[0].isdigit() and "\t" in parts[2]:
            restarts, message = parts[2].rsplit("\t", 1)
            hits.append((parts[0], parts[1], restarts.split("\x1f"),
                         message.replace("\x1f", "\n")))
    return hits


class ParkedHits:
    """Another thread's breakpoint hit on a child, entered as a level (`,thread N`): its
    level is lispshell's, above the loop's own (`_remote`, innermost last); forms there are
    evaluated by the loop with the hit's arguments bound, and a restart decides the hit, which
    lets its thread go on. Mixed into LispSession before `Session`."""

    _remote: list = []               # (hit id, LispError) of the hits entered, innermost last
    _other_ids: list = []

    @property
    def level(self) -> int:
        return self._levels.depth + len(self._remote)

    @property
    def waiting(self):
        return self._remote[-1][1] if self._remote else self._levels.waiting

    def _parked_form(self, helper: str, **args) -> str:
        forms = PARKED[self.lisp]
        lits = {k: (forms["nil"] if v is None else str(int(v))) if k in ("id", "n")
                else string_literal(v) for k, v in args.items()}
        return forms[helper].format(**lits)

    @property
    def other_debuggers(self) -> list[tuple]:
        if self.lisp not in PARKED or not self.ready:
            return []
        result = self.try_eval(self._parked_form("lines"), timeout=10.0, wait=1.0)
        if result is None or result.error is not None:
            return []
        mine = {hit_id for hit_id, _ in self._remote}
        others = [p for p in parse_parked(result.output) if p[0] not in mine]
        self._other_ids = [p[0] for p in others]
        return [(thread, 1, message.split("\n")[0], restarts)
                for _, thread, restarts, message in others]

    def enter_thread(self, index: int):
        if self.lisp not in PARKED:
            self._refuse("another thread's debugger")
        others = self.other_debuggers
        if not 0 <= index < len(others):
            raise ValueError(f"no other thread's breakpoint {index}" + (
                f": choose 0 to {len(others) - 1}" if others else ": none is waiting"))
        thread, _, _, restarts = others[index]
        hit_id = self._other_ids[index]
        result = self.eval(self._parked_form("lines"), history=False, timeout=None)
        message = next((p[3] for p in parse_parked(result.output) if p[0] == hit_id),
                       others[index][2])
        # (LispError is session.py's, which imports this module: the class gives it here)
        error = self.error_class(level_kind(restarts), message, [], list(restarts))
        self._remote = self._remote + [(hit_id, error)]
        return error

    # what LispSession asks first, at a remote level -------------------------------------------
    def _remote_eval(self, code: str, **kw):
        hit_id = self._remote[-1][0]
        kw.pop("keep_levels", None)
        kw.pop("history", None)
        result = self._plain_eval(self._parked_form("eval", id=hit_id, code=code), **kw)
        result.level = self.level
        return result

    def _remote_frames(self, op: str, n) -> str:
        result = self._plain_eval(self._parked_form("frames", id=self._remote[-1][0],
                                                    op=op, n=n), timeout=None)
        if result.error is not None:
            raise ValueError(result.error.message)
        return result.output

    def _remote_resume(self, n: int, argument: str = "", **kw):
        hit_id, error = self._remote[-1]
        last = len(error.restarts) - 1          # ABORT: the call (or the step) is left
        if not 0 <= n <= last:
            raise ValueError(f"choose a restart from 0 to {last}")
        kw.pop("keep_levels", None)
        result = self._plain_eval(self._parked_form("resume", id=hit_id, n=n, code=argument),
                                  **kw)
        if result.error is None or "no breakpoint waits as" in result.error.message:
            self._remote = self._remote[:-1]      # decided, or gone with its thread
            result.output += "; the thread goes on\n" if n < last else "; the call was left\n"
        result.level = self.level
        return result

    def _remote_abort(self) -> int:
        """The number of the innermost remote level's ABORT (its last restart)."""
        return len(self._remote[-1][1].restarts) - 1

    def _plain_eval(self, code: str, **kw):
        """An eval of lispshell's own at a remote level (N: the REPL variables left alone)."""
        return self.eval(code, history=False, keep_levels=True, _remote_ok=True, **kw)
