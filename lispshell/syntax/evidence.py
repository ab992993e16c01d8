"""How sure a repair is: `certain`, `likely` or `guess` (docs/check-and-repair.md).

A repair only ever inserts, removes or changes closers (openers say what the author meant to
start, and are never touched). Its *size* is its number of edits. Judged per top-level form
(`repair` cuts the text at lines that start in column 0), with the form count kept: a repair
that splits a form or glues two together is no repair at all.

- **certain**: a one-edit repair, and no other one-edit repair of the form reads.
- **likely**: every edit sits in a line's closer trail (inserted after the last code of a
  line, or on a blank line after it; removed from the closers that end a line; or a closer of
  the wrong kind changed where it stands), the result agrees with every line's indentation,
  no form it touches has an impossible shape (`shapes.py`, plus the arities the text's own
  definitions and calls give, `text_arities`), and moving any one edit to another trail
  gives no other result that does all this. Closers one too many after a complete form need
  not agree with the indentation (the form's own lines are left as written) when no other
  removal agrees better (`_weigh_stray_end`). Or the shapes decide: the indentation's
  placement leaves an impossible shape and exactly one other place on the line of one
  inserted closer keeps every shape (`_reshape`, `_shapes_decide`): every rival breaks one.
  Or a space after an opener decides (`(fn [ body`: nobody types that space, a closer was
  dropped there). But not when three or more closers are missing after the last one left
  and a place earlier on their line, with no closer after it, fits as well
  (`_open_tail_ties`): the author stopped writing closers somewhere on that line.
- **guess**: anything else. The best candidate is still returned, with the rivals found.

"Agrees with the indentation" is parinfer's rule for closer trails: each line that starts
with code is indented deeper than every form still open around it, and not deeper than a
form the closers just before it closed; and no line but the first starts outside the form.

Why trails: indentation decides closers at line ends and says nothing about closers in the
middle of a line. A closer dropped mid-line leaves text that a closer dropped at the line end
could have left too; what tells them apart is the shape of the forms, so a repair that leaves
a form of an impossible shape (an `if` with one argument) is never more than a guess, and a
placement the shapes alone single out is likely.
"""
from __future__ import annotations

import re
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import NamedTuple

from lispshell.syntax import rules, shapes
from lispshell.syntax.dialects import CL, CLOJURE, SCHEME, delimiter_chars
from lispshell.syntax.lexer import tokenize

CERTAIN, LIKELY, GUESS = "certain", "likely", "guess"
LEVELS = (CERTAIN, LIKELY, GUESS)            # strongest first
CLOSE_FOR = {"(": ")", "[": "]", "{": "}"}
MAX_CHECKS = 300          # full re-reads spent looking for a rival before giving up on "certain"
MAX_EDITS = 40            # more edits than this are not weighed: a guess
MAX_TOKENS = 20_000       # nor are forms longer than this (each test re-reads the form)
# name -> (fewest, most or None) arguments, from a live image's arglists; set by `repair`
IMAGE_ARITY: ContextVar = ContextVar("image_arity", default=None)
_QUOTES = ("'", "`")
# inside a backquoted template these make the next datum code again
_UNQUOTES = (",", ",@", "~", "~@", "#,", "#,@")
_TEMPLATES = ("syntax-rules", "syntax-case", "define-syntax-rule", "er-macro-transformer")
_UNCOUNTABLE = ("#+", "#-", "#?", "#_", "#;")   # elements that may or may not be there
_SPLICES = (",@", "~@", "#,@")                  # any number of elements, none included
_VARIABLE_TAILS = (".", "...")                 # a dotted list, a syntax-rules repetition
_KEYWORD_ARGS = {CL: (":",), SCHEME: ("#:",), CLOJURE: ()}   # a Clojure keyword is data
_SCHEME_SYNTAX = frozenset("""if let let* letrec letrec* lambda define when unless cond case
set! let-values let*-values receive""".split())


def weakest(levels) -> str:
    """The weakest of several levels (a text is as sure as its least sure form)."""
    return max(levels, key=LEVELS.index, default=CERTAIN)


class _V(NamedTuple):
    """A token of the chunk after the edits: its code, column, whether it starts its line,
    its line number in the chunk, and its span in the original text (inserted: p, p)."""
    code: str
    col: int
    first: bool
    line: int
    start: int
    end: int
    inserted: bool


class Judged(NamedTuple):
    reads: bool
    forms: int
    disagreements: int
    key: str                 # the token codes: equal keys are the same structure
    first_bad: int           # index in the virtual tokens of the first line that disagrees
    bad_lines: tuple = ()    # the chunk's code lines (0-based) that disagree


@dataclass
class Verdict:
    level: str
    edits: list
    rule: str                # the code of the rule that decided it (lispshell/syntax/rules.py)
    trace: tuple = ()        # the rules that fired, in order (rules.Step), the deciding one too
    rivals: list = field(default_factory=list)     # other edit lists that fit as well

    @property
    def why(self) -> str:
        return rules.why(self.trace)


def decided(level: str, edits: list, rule: str, detail: str = "", rivals=(),
             before=(), after=()) -> Verdict:
    """A verdict decided by `rule` (naming `detail`), after the steps `before` and followed
    by the tie-breaks `after` (rules.Step each)."""
    return Verdict(level, edits, rule, (*before, rules.Step(rule, detail), *after),
                   list(rivals))


def apply_edits(text: str, edits: list[dict]) -> str:
    """Apply non-overlapping edits given against `text` (any order)."""
    out, pos = [], 0
    for e in sorted(edits, key=lambda e: (e["start"], e["end"])):
        out.append(text[pos:e["start"]])
        out.append(e["text"])
        pos = e["end"]
    out.append(text[pos:])
    return "".join(out)


# --- the chunk after some edits, without re-lexing it ------------------------------------------

# One structure walk per candidate: inside `walks()` (one chunk's repair, repair._repair_chunk)
# a candidate's virtual tokens and what `judge` reads from them are built once, and every rule
# that weighs the candidate shares them (the search, weigh's tests, the tie-breaks each ask for
# the same candidates again: about three walks of each before). Keyed by the texts' and
# chunk's identities, alive for the whole scope, and the edits in their order (two closers
# inserted at one place are read in the order given). Bounded: a chunk with more candidates
# than that starts over rather than hold every walk of a 20,000-token form.
_WALKS: ContextVar = ContextVar("walks", default=None)
_MAX_WALKS = 512


@contextmanager
def walks():
    """The scope inside which candidates' walks are kept and shared (see `_WALKS`)."""
    token = _WALKS.set({})
    try:
        yield
    finally:
        _WALKS.reset(token)


def _walk(text: str, chunk: list, edits: list) -> list | None:
    """The memo entry [virtual tokens, Judged or None] of a candidate, None outside
    `walks()`."""
    memo = _WALKS.get()
    if memo is None:
        return None
    key = (id(text), id(chunk), tuple((e["start"], e["end"], e["text"]) for e in edits))
    entry = memo.get(key)
    if entry is None:
        if len(memo) >= _MAX_WALKS:
            memo.clear()
        entry = memo[key] = [tuple(_virtual(text, chunk, edits)), None]
    return entry


def virtual(text: str, chunk: list, edits: list) -> list[_V]:
    """The chunk's tokens after `edits` (a fresh list: callers may keep or change it)."""
    entry = _walk(text, chunk, edits)
    return _virtual(text, chunk, edits) if entry is None else list(entry[0])


def judged(text: str, chunk: list, edits: list) -> Judged:
    """`judged(text, chunk, edits)`, shared inside `walks()`."""
    entry = _walk(text, chunk, edits)
    if entry is None:
        return judge(_virtual(text, chunk, edits))
    if entry[1] is None:
        entry[1] = judge(entry[0])
    return entry[1]


def _virtual(text: str, chunk: list, edits: list) -> list[_V]:
    inserts: dict[int, str] = {}
    deleted, replaced = set(), {}
    for e in edits:
        if e["start"] == e["end"]:
            inserts[e["start"]] = inserts.get(e["start"], "") + e["text"].strip()
        elif not e["text"]:
            deleted.add(e["start"])
        else:
            replaced[e["start"]] = e["text"]
    points = sorted(inserts)
    out: list[_V] = []
    k, shift, line, prev_end, carry_first = 0, 0, 0, chunk[0].start, False

    def put(upto: int, last: bool = False):
        nonlocal k, shift, line, prev_end
        while k < len(points) and (last or points[k] <= upto):
            p = points[k]
            hole = "\n" in text[prev_end:p]     # on a blank line: part of the line's trail
            for i, ch in enumerate(inserts[p]):
                out.append(_V(ch, 0, hole and i == 0, line, p, p, True))
            shift += len(inserts[p])
            prev_end = max(prev_end, p)
            k += 1

    for t in chunk:
        put(t.start)
        first = t.first or carry_first
        carry_first = False
        if t.first:
            shift = 0
            if out:
                line += 1
        if t.start in deleted:
            shift -= t.end - t.start
            carry_first = first
            prev_end = t.end
            continue
        out.append(_V(replaced.get(t.start, t.code), t.col + shift, first, line, t.start,
                      t.end, False))
        prev_end = t.end
    put(0, last=True)
    return out


def judge(vt: list[_V]) -> Judged:
    """Does it read, how many forms, how many lines disagree with the indentation."""
    stack: list[tuple[str, int]] = []
    trail: list[int] = []           # columns of the forms closed since the last code token
    forms = bad = 0
    first_bad = -1
    bad_lines = []
    for i, v in enumerate(vt):
        c = v.code
        if c in ")]}":
            # a prefix (`'`, `#'`, `,`) needs a datum: `')` does not read
            if not stack or CLOSE_FOR[stack[-1][0]] != c or (i and vt[i - 1].code in "pd"):
                return Judged(False, forms, bad, "", i if first_bad < 0 else first_bad)
            trail.append(stack.pop()[1])
            if not stack:
                forms += 1
            continue
        if v.first and (any(col >= v.col for _, col in stack) or
                        any(col < v.col for col in trail) or (not stack and forms)):
            bad += 1
            bad_lines.append(v.line)
            if first_bad < 0:
                first_bad = i
        trail = []
        if c in "([{":
            stack.append((c, v.col))
        elif not stack and c not in "pd":
            forms += 1
    if stack:
        return Judged(False, forms, bad, "", len(vt) if first_bad < 0 else first_bad)
    return Judged(True, forms, bad, "".join(v.code for v in vt), first_bad, tuple(bad_lines))


# --- shapes -------------------------------------------------------------------------------------

def _word(text: str, vt: list[_V], k: int) -> str:
    """The atom at virtual token k, or "" when it is none."""
    return text[vt[k].start:vt[k].end] if 0 <= k < len(vt) and vt[k].code == "a" else ""


def _bound_before(text: str, vt: list[_V]) -> set[str]:
    """Names a Scheme form binds before the calls of them it may hold: an internal define's,
    in the whole body (psyntax's `(define match (lambda (e p w r mod) ...))` after the calls
    of it in `match-each`), and a `letrec`'s, in all its bindings (psyntax-pp.scm's)."""
    word = partial(_word, text, vt)
    names = set()
    for k in range(1, len(vt) - 2):
        if vt[k].code != "(":
            continue
        if word(k + 1) in shapes.SCHEME_DEFINES and word(k + 2):
            names.add(word(k + 2))
        elif word(k + 1) in ("letrec", "letrec*") and vt[k + 2].code == "(":
            depth = 0
            for j in range(k + 2, len(vt)):
                if vt[j].code in "([{":
                    depth += 1
                    if depth == 2 and word(j + 1):
                        names.add(word(j + 1))
                elif vt[j].code in ")]}":
                    depth -= 1
                    if depth == 0:
                        break
    return names


def _internal_arities(text: str, vt: list[_V]) -> dict:
    """{name: (n, n)} for each procedure a Scheme form defines inside it, once, with a
    parameter list of n plain names (`(define (all-subclasses c) ...)` in a body), when
    every call of it the text closes itself passes n: Guile's compiler threads an argument
    through macros (`(let$ t (convert-test consequent kt kf))` for a four-parameter
    `convert-test`). A name defined twice, or with optional, keyword or rest parameters,
    has no count here."""
    word = partial(_word, text, vt)
    counts: dict = {}
    headers = set()
    for k in range(1, len(vt) - 3):
        if vt[k].code == "(" and word(k + 1) == "define" and vt[k + 2].code == "(" and \
                word(k + 3):
            name, j = word(k + 3), k + 4
            while word(j) and word(j) not in (".", "#:optional", "#:key", "#:rest"):
                j += 1
            plain = j < len(vt) and vt[j].code == ")"
            counts[name] = (j - k - 4, j - k - 4) if plain and name not in counts else None
            headers.add(k + 2)
    # [name of a counted call or "", its arguments so far] of each open list (a prefix's
    # datum counts once); a call a repair's closer ends is what the count is to judge
    stack: list = []
    for k, v in enumerate(vt):
        if v.code in "([{":
            if stack:
                stack[-1][1] += 1
            name = word(k + 1) if v.code == "(" and k not in headers else ""
            stack.append([name if counts.get(name) else "", -1])
        elif v.code in ")]}":
            if stack:
                name, n = stack.pop()
                if name and not v.inserted and counts[name] != (n, n):
                    counts[name] = None
        elif stack and v.code not in "pd":
            stack[-1][1] += 1
    return {name: n for name, n in counts.items() if n is not None}


def shape_problems(text: str, vt: list[_V], dialect: str, points: set[int],
                   counts: bool = True, library: bool = False) -> list[str]:
    """Impossible shapes among the lists the edits touched: those that contain an edit
    point (a virtual token index) or end on a line where an edit is. Quoted lists are data,
    and a list with a reader conditional or a discarded datum in it has no countable shape.
    counts=False: only the dialect's rules for its forms, not the argument counts the text,
    the standard library or an image give.
    library=True: also the counts of what the dialect's other library modules export
    (`shapes.library_arity`), which a text may not import: only ever to choose among ties."""
    if not vt:
        return []
    arities = text_arities(text, dialect) if counts else {}
    image = IMAGE_ARITY.get() if counts else None
    lines = {vt[p].line for p in points if p < len(vt)} | \
        ({vt[-1].line} if any(p >= len(vt) for p in points) else set())
    root = {"elems": [], "pend": [], "quoted": False, "uncountable": False, "role": None,
            "template": False}
    frames = [root]
    out: list[str] = []
    # names the form binds to local functions or variables (`shapes.binds`), anywhere in
    # it: a call of one says nothing by the global function's argument count
    local: set[str] = set()
    # rest parameters (`[x & more]`, `(lambda (x . more)`): a list, never a number, unless
    # the name is bound some other way too (a `let` may rebind it)
    rest_names: set[str] = set()
    plain_bound: set[str] = set()
    internal = None        # `_internal_arities`, when a call of a local name first needs it
    if dialect == SCHEME:
        local |= _bound_before(text, vt)

    def start_datum(f) -> tuple[bool, bool, str | None]:
        """A datum starts in frame f: (is it a prefix's datum, is it quoted, the prefix
        nearest it). That prefix decides: a quote makes it data, an unquote code again."""
        prefixed, mode = False, None
        while f["pend"]:
            entry = f["pend"][-1]
            entry[0] -= 1
            if entry[1] == "m":
                if entry[0] == 1:
                    return True, True, "q"     # a type hint or metadata: not an element
            elif entry[1] == "c" and entry[0] == 1:
                # the feature expression of #+ / #- (unless read in some other way: #.)
                return True, True, "q" if prefixed else "c"
            else:
                prefixed, mode = True, mode or (entry[1] if entry[1] != "c" else None)
            if entry[0] > 0:
                break
            f["pend"].pop()       # a complete prefixed datum is a datum of the prefix before
        return prefixed, mode == "q" or (mode != "u" and f["quoted"]), mode

    for i, v in enumerate(vt):
        c = v.code
        f = frames[-1]
        tok = "" if v.inserted else text[v.start:v.end]
        if c in ")]}":
            if len(frames) == 1:
                continue
            frames.pop()
            touched = any(f["open"] < p <= i for p in points) or v.line in lines
            elems = f["elems"]
            if touched and any(entry[1] in ("m", "c") and entry[0] == 1 for entry in f["pend"]):
                # `^{:tag x}` or `#+sbcl` right before a closer: the reader wants the form the
                # metadata or the feature expression is about (`[a b ^{:m 1}]` does not read)
                out.append("a metadata map or feature expression with no form after it")
            if touched and f["kind"] == "list" and \
                    f["role"] in ("feature", "fbinding", "signature", "slot", "cl-type",
                                  "import-set", "peg"):
                why = shapes.feature_problem(elems) if f["role"] == "feature" else \
                    shapes.role_problem(f["role"], elems, dialect)
                if why:
                    out.append(f"({elems[0].text if elems else ''} ...) {why}")
            if touched and dialect == SCHEME and f["kind"] == "list" and elems and \
                    elems[0].kind == "atom" and \
                    elems[0].text in ("define-syntax-rule", "syntax-rules") and \
                    not f["uncountable"]:
                why = shapes.ellipsis_problem(elems[0].text, elems[1:])
                if why:
                    out.append(f"({elems[0].text} ...) {why}")
            if touched and f["kind"] == "map" and dialect == CLOJURE and \
                    not f["uncountable"] and len(elems) % 2:
                out.append(f"{{...}} holds keys and values, {len(elems)} element(s)")
            if touched and f.get("dot") is not None and len(elems) - f["dot"] != 2 and \
                    not f.get("conditional"):
                out.append("(... . x) has one element after the dot, not "
                           f"{len(elems) - f['dot'] - 1}")     # the reader says so, data or not
            if touched and f["kind"] == "list" and not f["quoted"] and \
                    f["role"] in (None, shapes.THREADED) and \
                    not f["uncountable"] and elems and elems[0].kind == "atom" and \
                    f["template"] and not f["splice"] and shapes.known(elems[0].text, dialect) \
                    and (dialect != SCHEME or elems[0].text in _SCHEME_SYNTAX):
                # a backquoted template without a splice is the code the macro writes: an
                # `if`, a `not`, a `setf` of the dialect has its shape there too (`(if (not
                # ~test ~then ~else))`); who knows what other names mean where it expands.
                # Scheme quasiquotes data as often (SXML: `(@ (name ...))` is no Guile `@`,
                # `(map ...)` an HTML element): there only its syntax, never an element name
                why = shapes.problem(elems[0].text, elems[1:], dialect)
                if why:
                    out.append(f"({elems[0].text} ...) {why}")
            elif library and touched and dialect != SCHEME and f["kind"] == "list" and \
                    not f["quoted"] and f["template"] and not f["splice"] and \
                    f["role"] in (None, shapes.THREADED) and not f["uncountable"] and \
                    elems and elems[0].kind == "atom" and elems[0].text not in local:
                # choosing among ties only: a template's `(logandc2 x)` is most likely the
                # standard's logandc2 in the code the macro writes
                head = elems[0].text
                known = shapes.stdlib_arity(head, dialect) or shapes.library_arity(head, dialect)
                source = "the library"
                if known is None and _transform_body(frames[1], dialect):
                    known = _own_definition(frames[1], head, dialect)
                    source = "the form's own parameter list"
                why = _count_problem(known, len(elems) - 1 + bool(f["role"]), source)
                if why:
                    out.append(f"({head} ...) {why}")
            elif touched and f["kind"] == "list" and not f["quoted"] and \
                    not f["template"] and f["role"] in (None, shapes.THREADED) and \
                    not f["uncountable"] and elems and elems[0].kind == "atom":
                head = elems[0].text
                args = elems[1:] + ([shapes.Arg("other")] if f["role"] else [])
                if head == "new" and dialect == CLOJURE and args and args[0].kind == "atom":
                    # `(new StringBuilder (str x) ys)` is `(StringBuilder. (str x) ys)`, for
                    # every count below: the text's `deftype`s, the JDK's constructors
                    head, args = args[0].text + ".", args[1:]
                why = None if head in local else shapes.problem(head, args, dialect)
                if why is None and head not in local and len(frames) > 1:
                    why = _own_rest_problem(frames, head, args, dialect)
                # a list of a name and keywords in the body of a definer nothing here knows
                # is its syntax (`(ir2-convert :test ir2-convert)`, a defprinter's slot, is
                # no call of sb-c's one-argument ir2-convert; `(delete-original :initform
                # nil)`, a def-stream-class slot, none of the file's two-argument function)
                syntax = bool(args) and args[0].kind == "atom" and \
                    args[0].text[:1] == ":" and _in_unknown_definer(frames, dialect)
                known = None if head in local or syntax else arities.get(head)
                source = "the text's own definition or calls"
                if head in local and dialect == SCHEME and counts and not syntax:
                    internal = _internal_arities(text, vt) if internal is None else internal
                    if head in internal:
                        known, source = internal[head], "its definition inside the form"
                if known is None and counts and head not in local and len(frames) > 1:
                    # the form defines the function it calls: its own parameter list says
                    # what a call takes, even when the damage left that list open in the
                    # text (`[input output opts\n (do-copy (Reader. input output opts`)
                    known = _own_definition(frames[1], head, dialect)
                    source = "the form's own parameter list"
                if why is None and known is None and counts and head not in local:
                    known, source = shapes.stdlib_arity(head, dialect), "the standard library"
                if why is None and known is None and library and head not in local and \
                        not syntax:
                    known, source = shapes.library_arity(head, dialect), "the library"
                if why is None and known is None and image is not None and \
                        head not in local and not shapes.known(head, dialect):
                    known, source = image(head), "the running image's arglist"
                if why is None and f.get("spliced") and head in shapes.CLJ_TRANSDUCERS and \
                        len(args) == 1:
                    # `~@(map f)`: given only a function, map returns a transducer, a
                    # function, and `~@` splices a sequence
                    why = "given only a function returns a transducer, which ~@ cannot splice"
                if why is None:
                    why = _count_problem(known, len(args), source)
                if why:
                    out.append(f"({head} ...) {why}")
            if f["attach"]:
                # a list with a reader conditional in it: its length is not known
                frames[-1]["elems"].append(shapes.Arg("other" if f["uncountable"] else
                                                      f["kind"], "", elems))
            continue
        if c in "pd":
            if tok.startswith(_UNCOUNTABLE):
                f["uncountable"] = f["conditional"] = True
            if tok in _SPLICES:
                f["splice"] = True
            meta = tok in ("^", "#^") and dialect == CLOJURE
            if not f["pend"] and not meta:
                f["elems"].append(shapes.Arg("other", tok))      # the prefix
            # `^long [x]` is the vector [x] with a hint: the vector stays the element
            f["pend"].append([2 if tok in ("#+", "#-", "^", "#^") else 1,
                              "m" if meta else "c" if tok in ("#+", "#-") else
                              "t" if tok == "`" else "q" if tok in _QUOTES else
                              "u" if tok in _UNQUOTES else "f" if tok == "#'" else None,
                              tok])
            continue
        spliced = bool(f["pend"]) and f["pend"][-1][2] in _SPLICES
        prefixed, quoted, mode = start_datum(f)
        if mode == "q" and _transform_body(f, dialect):
            quoted, mode = False, "t"
        if c in "([{":
            kind = {"(": "list", "[": "vector", "{": "map"}.get(tok, "other")
            elems = f["elems"]
            parent = elems[0].text if elems and elems[0].kind == "atom" else ""
            # after a dot, a list is the parent's tail, not one of its elements: nothing
            # the parent's shape says of its elements holds for it
            role = "function" if mode == "f" else "feature" if mode == "c" else \
                shapes.DATA if f.get("dot") is not None else shapes.child_role(
                parent, f["role"], len(elems) - prefixed, elems, dialect)
            template = mode == "t" or (mode is None and f["template"] and not quoted)
            bound = None if quoted or template else shapes.binds(
                kind, parent, role, len(elems) - prefixed, elems, dialect, f["role"],
                len(frames) == 2)
            frames.append({"open": i, "kind": kind, "elems": [], "pend": [],
                           "quoted": quoted or role == shapes.DATA, "role": role,
                           "template": template, "splice": False,
                           "uncountable": False, "attach": not prefixed, "binds": bound,
                           "spliced": spliced and kind == "list" and dialect == CLOJURE,
                           "rest_at": "params" if shapes.params_with_rest(
                               kind, parent, len(elems) - prefixed, elems, dialect, bound)
                           else None})
        elif prefixed:
            if c == "a" and mode == "q" and f["elems"] and f["elems"][-1].text == "'" and \
                    vt[i - 1].code in "pd" and text[vt[i - 1].start:vt[i - 1].end] == "'":
                f["elems"][-1].quotes = tok      # `'double-float`, not `',x` or `'#'f`
        else:
            if tok == "." and dialect != CLOJURE:
                f["uncountable"] = True       # a dotted list: no argument count
                f["dot"] = len(f["elems"])
            is_rest = f.get("rest_at") == "next" and c == "a"
            if f.get("rest_at"):
                f["rest_at"] = "next" if tok in ("&", ".") else "params"
            if is_rest:
                rest_names.add(tok)
            f["elems"].append(shapes.Arg("string" if c in "sS" else "atom", tok,
                                         rest=c == "a" and tok in rest_names and
                                         tok not in plain_bound and not is_rest))
            bound = f.get("binds")
            if bound and c == "a" and (bound == "all" or bound == "first" and
                                       len(f["elems"]) == 1 or bound == "rest" and
                                       len(f["elems"]) > 1 or bound == "even" and
                                       len(f["elems"]) % 2):
                local.add(tok)
                if not is_rest:
                    plain_bound.add(tok)
            if len(f["elems"]) == 1 and tok in _TEMPLATES:
                f["quoted"] = True            # macro patterns and templates are data
    return out


# --- what the text itself says about its functions ----------------------------------------------

_DEFINERS = {CL: ("defun", "defmacro", "defgeneric", "defmethod"),
             SCHEME: ("define", "define*", "define-public", "define-inlinable"),
             CLOJURE: ("defn", "defn-", "defmacro", "defmethod", "definline")}
# Called with any number of arguments, however consistently a text happens to call them.
_VARIADIC = frozenset("""list list* + - * / = < > <= >= and or progn begin do vector append
concatenate format max min str println print prn apply funcall values error cerror warn
string-append logior logand logxor max min concat hash-map vector hash-set conj assoc merge
comp partial juxt cond case when unless let let* if inst define recur
match match-lambda match-lambda* match-let match-let* match-letrec syntax-case with-syntax
guard parameterize""".split())     # (Scheme's clause and body macros among them)


_NAMED_LETS = ("let", "let*", "letrec", "letrec*")
_MIN_USES = 3     # calls with one count that make it the function's (all but one call)
_KEPT = 12       # elements of a list kept for reading definitions (name and parameters)
_KINDS = {"(": "list", "[": "vector", "{": "map"}
_META = ("^", "#^")


def text_arities(text: str, dialect: str) -> dict:
    """`_text_arities`, kept per text and per source (SBCL's definers read otherwise)."""
    return _text_arities(text, dialect, shapes.SBCL_SOURCE.get())


@lru_cache(maxsize=8)
def _text_arities(text: str, dialect: str, _sbcl: bool) -> dict:
    """{name: (min, max or None)} of the functions the text defines (their parameter lists)
    or calls three times or more with the same number of arguments and at most once otherwise
    (the odd one may be the damaged call itself). Lists under a quote are data.

    A form left open (the damaged one, most often) still defines what its parameter list
    says, and a line that starts with an opener at column 0 starts a new top-level form even
    when the one before it was left open: one damaged form hides no definition after it."""
    calls = text_calls(text, dialect)
    out = {}
    for name, counts in calls.uses.items():
        if name in calls.defined or not calls.countable(name) or calls.library_takes_more(name):
            continue
        (n, k), = counts.most_common(1)
        if k >= _MIN_USES and sum(counts.values()) - k <= 1:
            out[name] = (n, n)
    out.update(calls.defined)
    return out


class Calls(NamedTuple):
    """What a text's calls and definitions say: {name: Counter of argument counts} of its
    calls whose lists it closes, {name: arity} of the functions it defines, and the names
    whose calls say nothing of another call's count (a named let's loop, a GOOPS generic),
    those called with keyword arguments, and those heading a list read as data (under a
    quote, in a template, a binding: no call counted)."""
    uses: dict
    defined: dict
    varied: frozenset
    keyed: frozenset
    dialect: str
    quoted: frozenset = frozenset()

    def countable(self, name: str) -> bool:
        """May one call of `name` say how many arguments another takes? Not for a variadic
        function, a form shapes.py knows (its own rules say), or a name the text uses many
        ways."""
        return not (name in _VARIADIC or name.lower() in _VARIADIC or name in self.varied or
                    shapes.known(name, self.dialect) or
                    shapes.stdlib_arity(name, self.dialect) or
                    _uncounted(name, self.dialect))

    def library_takes_more(self, name: str) -> bool:
        """Does one of the dialect's libraries export `name` with optional arguments the
        text's calls all leave out (Guile's `wait-condition-variable`: a mutex, at times a
        time)? Then they say nothing of a call that passes one. (A text that always passes
        some, as Guile's compiler does `intmap-fold`'s seeds, leaves none out.)"""
        lib = shapes.library_arity(name, self.dialect)
        counts = self.uses.get(name)
        if not lib or not counts or name in self.defined:
            return False
        lo, hi = lib
        return set(counts) == {lo} and (hi is None or hi > lo)

    def weakly_countable(self, name: str) -> bool:
        """May a single call of `name` say how another is called? Not a Java method's or
        constructor's (overloaded by argument count), nor whatever text_arities refuses."""
        return self.countable(name) and name not in self.keyed and \
            name not in self.defined and not (
            self.dialect == CLOJURE and (name.startswith(".") or name.endswith(".")))


def text_calls(text: str, dialect: str) -> Calls:
    """The calls and definitions of a text (see text_arities)."""
    return _text_calls(text, dialect, shapes.SBCL_SOURCE.get())


@lru_cache(maxsize=64)
def _text_calls(text: str, dialect: str, _sbcl: bool) -> Calls:
    """`text_calls`, kept per text and per source."""
    tokens, _ = tokenize(text, dialect)
    codes = tokens.codes
    uses: dict[str, Counter] = {}
    defined: dict[str, tuple] = {}
    local: set[str] = set()
    # GOOPS generics: their methods and accessors take different counts (`(object-info o
    # env)` and the slot accessor's `(object-info env)`)
    generics: set[str | None] = set()
    keyed: set[str] = set()        # called with keyword arguments: optional ones, any number
    quoted_heads: set[str] = set()
    # each open list: [head or None, element count, quoted, elems, opener, skip next datum,
    # a `^hint`'s datum, its role (shapes.child_role)]
    stack: list[list] = []
    quote_next = None              # "q" a quote, "u" an unquote before the next datum

    def define(frame, complete: bool = True) -> None:
        head, elems = frame[0], frame[3]
        if head and not frame[2] and frame[4] == "(" and elems and _defines(head, dialect):
            _definition(head.lower(), elems, dialect, defined, complete)
        if head in _GOOPS_DEFINERS and dialect == SCHEME and elems and len(elems) > 1:
            generics.add(_generic_name(elems[1]))
        if head in _CLOJURE_TYPES and dialect == CLOJURE and len(elems) > 2 and \
                elems[1][0] == "atom" and elems[2][0] == "vector" and len(elems[2][1]) < _KEPT:
            # `(Name. a b)` and `(->Name a b)` take the fields; a record's class also a
            # metadata and an extension map after them
            n = len(elems[2][1])
            defined[elems[1][1] + "."] = (n, n + 2) if head == "defrecord" else (n, n)
            defined["->" + elems[1][1]] = (n, n)

    for j, c in enumerate(codes):
        if c in ";b":
            continue
        if c in "([{":
            start = tokens.starts[j]
            if stack and (start == 0 or text[start - 1] == "\n"):
                define(stack[0], complete=False)   # a top-level form left open before
                stack.clear()
            quoted = quote_next == "q" or (quote_next != "u" and bool(stack and stack[-1][2]))
            skipped = bool(stack) and stack[-1][5]
            role = None
            if stack and not quoted:
                # what the form around it says it is: a binding, a lambda list, a clause
                # is no call (`(let ((x (f y)))`: `(x ...)` calls nothing)
                parent = stack[-1]
                prior = [shapes.Arg(kind, text if kind == "atom" else "")
                         for kind, text in (parent[3] or [])]
                role = shapes.child_role((parent[0] or "") if parent[4] == "(" else "",
                                         parent[7], parent[1], prior, dialect)
                quoted = role == shapes.DATA
            if stack and not skipped:
                stack[-1][1] += 1
            stack.append([None, 0, quoted, [] if c in "([" else None, c, False, skipped,
                          role])
            quote_next = None
            continue
        if c in ")]}":
            if not stack:
                continue
            frame = stack.pop()
            head, n, quoted, elems, opener = frame[:5]
            role = frame[7]
            if head and not quoted and opener == "(" and role in (None, shapes.THREADED) \
                    and stack:
                # inside `->` / `doto` a call gets one argument more than it shows; a
                # top-level form is a definition or a definer's macro (`define*`,
                # `define-record-type`), as long as its body: no call
                uses.setdefault(head, Counter())[n - (role is None)] += 1
                if head in _NAMED_LETS and elems and len(elems) > 1 and elems[1][0] == "atom":
                    local.add(elems[1][1])     # a named let's loop: a name used many ways
            if head and not quoted and opener == "(" and not stack:
                define(frame)                  # top level only: no local ones
            if head and quoted:
                quoted_heads.add(head)
            if frame[6]:
                stack[-1][5] = False           # the datum a `^` hint was about: not counted
            elif stack and stack[-1][3] is not None and len(stack[-1][3]) < _KEPT:
                stack[-1][3].append((_KINDS[opener], elems or []))
            continue
        if c in "pd":
            tok = tokens.text_of(j)
            quote_next = "q" if tok in _QUOTES else "u" if tok in _UNQUOTES else None
            if stack and (tok.startswith(_UNCOUNTABLE) or tok in _SPLICES):
                stack[-1][0] = ""            # no countable call
            if stack and tok in _META and dialect == CLOJURE:
                stack[-1][5] = True          # `^String x`: the hint is no element
            continue
        quote_next = None
        if stack:
            top = stack[-1]
            if top[5]:
                top[5] = False
                continue
            tok = tokens.text_of(j)
            if top[1] == 0 and c == "a" and top[0] is None:
                top[0] = tok
            elif tok in _VARIABLE_TAILS:
                top[0] = ""                  # `(f a . rest)`, `(k v ...)`: any number
            elif top[0] and tok.startswith(_KEYWORD_ARGS[dialect]):
                keyed.add(top[0])
            elif top[0] and top[1] == 1 and c in "sS" and dialect != CLOJURE and "~" in tok:
                # `(bug "~S not found in ~S" thing env)`: a format control first, then as
                # many arguments as it takes, whatever the other calls pass
                local.add(top[0])
            if dialect == SCHEME and top[3] and top[3][-1][0] == "atom" and \
                    top[3][-1][1] in _GOOPS_ACCESSORS:
                generics.add(tok)
            top[1] += 1
            if top[3] is not None and len(top[3]) < _KEPT:
                top[3].append(("atom", tok))
    if stack:
        define(stack[0], complete=False)
    return Calls(uses, defined, frozenset(local | generics), frozenset(keyed), dialect,
                 frozenset(quoted_heads))


_GOOPS_DEFINERS = ("define-method", "define-generic", "define-accessor")
_CLOJURE_TYPES = ("deftype", "defrecord")
_GOOPS_ACCESSORS = ("#:accessor", "#:getter", "#:setter")


def _generic_name(header) -> str | None:
    """The generic a GOOPS definition names: `name`, `(name args...)`, `((setter name)
    args...)`."""
    kind, what = header
    if kind == "atom":
        return what
    if kind == "list" and what:
        kind, what = what[0]
        if kind == "atom":
            return what
        if kind == "list" and len(what) == 2 and what[1][0] == "atom":
            return what[1][1]
    return None


_STATIC_CALL = re.compile(r"(?:[\w$]+\.)*[A-Z][\w$]*/.")     # Class/method, pkg.Class/method


def _uncounted(name: str, dialect: str) -> bool:
    """Names whose calls say nothing of another call's count: a CL keyword heading a list
    (macro syntax, `(:generator 3 ...)`, never a function), a `define-` or `with-` macro (a
    body of any length follows; Guile's `define!` is a function). Java overloads methods
    and constructors by argument count, but a text that calls one three times alike calls
    it that way (clojure.core's `(IllegalArgumentException. msg)`): those still count, but
    for a class's static methods, which a text calls whichever way it needs
    (`(clojure.lang.Symbol/intern name)` three times, `(clojure.lang.Symbol/intern ns name)`
    once)."""
    if dialect == CL and name.startswith(":"):
        return True
    if dialect == CLOJURE and _STATIC_CALL.match(name):
        return True
    base = re.split(r"[/:]", name)[-1].lower()
    return base.startswith(("define-", "with-"))


def _defines(head: str, dialect: str, own: bool = False) -> bool:
    """Does a form with this head give the parameters of the function it names? SBCL's
    `deftransform` only for its own body (`own`): its lambda list may take only the calls
    it rewrites (`(deftransform + ((x y)) ...)`, as `(define-source-transform values (x)
    ...)` passes on any other), but the code it returns is one of them."""
    head = head.lower()
    return head in _DEFINERS[dialect] or own and dialect == CL and head == "deftransform" \
        and shapes.SBCL_SOURCE.get()


def _definition(definer: str, elems: list, dialect: str, defined: dict,
                complete: bool = True) -> None:
    """Record the arity of a definition from its parameter list: `(defun name (params)
    ...)`, `(define (name . params) ...)`, `(defn name "doc" [params] ...)` and `(defn name
    ([a] ...) ([a b] ...))`, and the methods of a generic function or multimethod: `(defmethod
    name :around ((x point) y) ...)`, `(defmethod name dispatch-value [params] ...)`. Elements
    are (kind, atom text or list of elements); a list cut at _KEPT elements, or a parameter
    list not read here, defines nothing. Of a form left open (complete False), the last
    arity is missing: the others give the fewest arguments, and no most."""
    if len(elems) < 2 or len(elems) >= _KEPT:
        return
    if dialect == SCHEME:
        header = elems[1]
        if header[0] == "list" and 0 < len(header[1]) < _KEPT and header[1][0][0] == "atom":
            arity = _lambda_list_arity(header[1][1:], dialect)
            if arity:
                defined[header[1][0][1]] = arity
        elif header[0] == "atom":
            arity = _procedure_arity(elems[2] if len(elems) > 2 else None, complete)
            if arity:
                defined[header[1]] = arity
        return
    if elems[1][0] != "atom":
        return
    name, rest = elems[1][1], list(elems[2:])
    if definer == "deftransform":
        # `(deftransform name ((lambda-list) arg-types result-type ...) ...)`
        rest = rest[0][1][:1] if rest and rest[0][0] == "list" else []
    if definer == "defmethod":
        if dialect == CLOJURE:
            rest = rest[1:]                  # the dispatch value
        else:
            while rest and rest[0][0] == "atom":
                rest = rest[1:]              # qualifiers
    if dialect == CLOJURE:
        while rest and (rest[0][0] == "map" or rest[0][0] == "atom" and
                        rest[0][1].startswith('"')):
            rest = rest[1:]                  # docstring, attribute map
        if rest and rest[0][0] == "vector":
            arities = [_lambda_list_arity(rest[0][1], dialect)]
        else:                                # one list per arity, each with its vector
            arities = [_lambda_list_arity(body[0][1], dialect)
                       if body and body[0][0] == "vector" else None
                       for kind, body in rest if kind == "list"] or [None]
            if not complete:
                # the form was left open in its last arity, which is not among these: arities
                # come fewest first, so it takes more than they do, and there is no upper bound
                arities.append((arities[-1][0], None) if arities[-1] else None)
        if None in arities:
            return
        los = [lo for lo, _ in arities]
        his = [hi for _, hi in arities]
        defined[name] = (min(los), None if None in his else max(his))
        return
    if rest and rest[0][0] == "list":
        arity = _lambda_list_arity(rest[0][1], dialect,
                                   methods=definer in ("defmethod", "defmacro", "deftransform"))
        if arity:
            defined[name] = arity


def _procedure_arity(value, complete: bool):
    """The arity of `(define name VALUE)` when VALUE is a `lambda` or `case-lambda` (all its
    clauses): `(saturate+ (saturate+ a b) c d)` is the four-argument clause of saturate+'s
    own case-lambda, however often its other clauses call it with two. A definition left
    open before its value is read says nothing of the count: any."""
    if value is None:
        return None if complete else (0, None)
    kind, elems = value
    if kind != "list" or not elems or elems[0][0] != "atom":
        return None
    if elems[0][1] == "lambda" and len(elems) > 1:
        params = elems[1]
        if params[0] == "atom":
            return (0, None)               # (lambda args ...)
        return _lambda_list_arity(params[1], SCHEME) if params[0] == "list" else None
    if elems[0][1] == "case-lambda":
        arities = [_lambda_list_arity(c[1][0][1], SCHEME)
                   if c[0] == "list" and c[1] and c[1][0][0] == "list" else
                   (0, None) if c[0] == "list" and c[1] and c[1][0][0] == "atom" else None
                   for c in elems[1:]
                   if not (c[0] == "atom" and c[1].startswith('"'))]    # a docstring
        if not complete or len(elems) >= _KEPT:
            arities.append((0, None))      # clauses not seen
        if not arities or None in arities:
            return None
        his = [hi for _, hi in arities]
        return (min(lo for lo, _ in arities), None if None in his else max(his))
    return None


def _transform_body(f: dict, dialect: str) -> bool:
    """Is a datum starting in frame `f` a body form of SBCL's `deftransform`? Quoted, it is
    the code that replaces the call (`'(%set-slot (deref object) slot value)`), a template."""
    elems = f["elems"]
    return dialect == CL and not f["quoted"] and len(elems) >= 3 and \
        elems[0].kind == "atom" and elems[0].text.lower() == "deftransform" and \
        shapes.SBCL_SOURCE.get()


# what comes before a parameter list's rest parameter
_REST_WORDS = {CL: ("&rest", "&body"), SCHEME: (".",), CLOJURE: ("&",)}


def _own_rest_problem(frames: list, head: str, args: list, dialect: str) -> str | None:
    """A function that passes its own rest parameter, bare, where its own rest list begins
    (`(defn aget ([array idx] ...) ([array idx & idxs] (apply aget (aget array idx idxs))))`):
    the list would arrive nested in a new rest list. What it passes on is spread with
    `apply` (`(apply aget (aget array idx) idxs)`), or taken apart first."""
    top = frames[1]
    elems = top["elems"]
    if top["kind"] != "list" or top["quoted"] or len(elems) < 3 or \
            elems[0].kind != "atom" or elems[1].kind != "atom" or elems[1].text != head or \
            not _defines(elems[0].text, dialect):
        return None
    if dialect == CLOJURE:
        # one parameter vector, or one per arity: those read, and the one of the arity the
        # call is in, still open
        arities = [e.elems for e in elems[2:] if e.kind == "list"] + \
            ([frames[2]["elems"]] if len(frames) > 2 and frames[2]["kind"] == "list" else [])
        lists = [e for e in elems[2:] if e.kind == "vector"][:1] or \
            [a[0] for a in arities if a and a[0].kind == "vector"]
    elif dialect == CL:
        lists = [elems[2]] if elems[2].kind == "list" else []
    else:
        return None         # a Scheme rest parameter follows a dot, which no Arg keeps
    words = _REST_WORDS[dialect]
    if any(not any(e.kind == "atom" and e.text in words for e in p.elems) and
           len(p.elems) == len(args) for p in lists):
        return None         # the call is of a fixed arity, which may take a list
    for params in lists:
        names = [e.text.lower() if e.kind == "atom" else "" for e in params.elems]
        at = next((k for k, w in enumerate(names) if w in words), None)
        if at is None or at + 1 >= len(names) or not names[at + 1] or \
                any(w.startswith("&") and w not in ("&optional",) + words
                    for w in names[:at]):
            continue
        fixed = at - names[:at].count("&optional")
        rest = params.elems[at + 1].text
        for k, a in enumerate(args):
            if k >= fixed and a.kind == "atom" and a.text == rest:
                return f"passes its own rest parameter {rest} into a rest list of its own"
    return None


def _own_definition(top: dict, name: str, dialect: str):
    """(fewest, most or None) arguments of `name` when `top`, the frame of a top-level form
    being read by `shape_problems`, defines it (`_definition`), else None. Its body may not
    be complete yet: a Clojure function's arities seen so far give only the fewest."""
    elems = top["elems"]
    if top["kind"] != "list" or top["quoted"] or len(elems) < 2 or \
            elems[0].kind != "atom" or not _defines(elems[0].text, dialect, own=True):
        return None

    def plain(a):
        if a.kind in ("atom", "string"):
            return ("atom", a.text)
        return (a.kind, [plain(e) for e in a.elems])

    defined: dict = {}
    _definition(elems[0].text.lower(), [plain(a) for a in elems[:_KEPT - 1]], dialect,
                defined, complete=False)
    return defined.get(name)


def _lambda_list_arity(params: list, dialect: str, methods: bool = False):
    """(fewest, most or None) arguments a parameter list takes, or None when it is not read
    here (cut short, or a lambda-list keyword not known). A list in a required place is a
    destructured parameter (Clojure, CL macros) or a specialized one (CL methods)."""
    if len(params) >= _KEPT - 1:
        return None
    required = optional = 0
    mode = "required"
    skip = False
    for kind, p in params:
        word = p.lower() if kind == "atom" else ""
        if skip:
            skip = False
        elif word in ("&optional", "#:optional"):
            mode = "optional"
        elif word in ("&rest", "&body", "&key", "#:key", "#:rest", ".", "&"):
            return required, None
        elif word in ("&whole", "&environment"):
            skip = True
        elif word == "&aux":
            break
        elif word.startswith(("&", "#:")):
            return None
        elif kind == "atom" or (kind in ("list", "vector", "map") and
                                (methods or dialect == CLOJURE or mode == "optional")):
            if mode == "required":
                required += 1
            else:
                optional += 1
        else:
            return None
    return required, required + optional


def _points(vt: list[_V]) -> set[int]:
    return {i for i, v in enumerate(vt) if v.inserted}


def _edit_points(vt: list[_V], edits: list) -> set[int]:
    """Virtual indexes where the edits are: inserted closers, changed ones, and the token
    after a removed one."""
    changed = {e["start"] for e in edits if e["start"] != e["end"]}
    out = _points(vt)
    for i, v in enumerate(vt):
        if not v.inserted and v.start in changed:
            out.add(i)
    removed = sorted(e["start"] for e in edits if e["start"] != e["end"] and not e["text"])
    for r in removed:
        out.add(next((i for i, v in enumerate(vt) if v.start > r), len(vt)))
    return out


# --- trails -------------------------------------------------------------------------------------

def in_trail(text: str, chunk: list, e: dict) -> bool:
    """Is the edit in a closer trail: only closers follow it on its line?"""
    if e["start"] != e["end"] and e["text"]:
        return True                      # a changed closer stays where the author put it
    after = e["end"] if e["start"] == e["end"] else e["start"] + 1
    line_end = text.find("\n", after)
    line_end = len(text) if line_end < 0 else line_end
    for t in chunk:
        if t.start >= after:
            if t.start >= line_end:
                return True
            if t.code not in ")]}":
                return False
    return True


def _line_tokens(chunk: list, line_index: int) -> list:
    """The tokens of code line `line_index` (0-based) of the chunk."""
    line, out = -1, []
    for j, t in enumerate(chunk):
        if t.first or j == 0:
            line += 1
        if line == line_index:
            out.append(t)
        elif line > line_index:
            break
    return out


def trail_closers(chunk: list, line_index: int) -> list:
    """The closers that end code line `line_index` (0-based) of the chunk."""
    toks = _line_tokens(chunk, line_index)
    k = len(toks)
    while k and toks[k - 1].code in ")]}":
        k -= 1
    return toks[k:]


_COLUMN_0 = re.compile(r"\n(?=[^ \t\r\n])")


def chunk_end(text: str, chunk: list) -> int:
    """Where the text that may hold a chunk's dropped closers ends: at the next line that
    starts in column 0 with anything but blanks (the next top-level form, or a comment
    about it), else at the end of the text. A form damaged in the middle of a file has
    the same blank lines after it as one that ends the text."""
    m = _COLUMN_0.search(text, chunk[-1].end)
    return m.end() if m else len(text)


def _trail_spots(text: str, chunk: list, line_index: int, after_opener=True) -> list[int]:
    """Offsets in the trail of code line `line_index`: after its last code token, after each
    closer of the run that ends it, and on the blank lines after it (where a closer alone on
    its line was dropped). after_opener=False: not right after a line's last opener (a closer
    seldom goes there: that would be `()`)."""
    toks = _line_tokens(chunk, line_index)
    if not toks:
        return []
    run = trail_closers(chunk, line_index)
    last_code = [toks[-len(run) - 1]] if len(run) < len(toks) else []
    if after_opener is not True and last_code and last_code[0].code in "([{" and \
            not (after_opener and text[last_code[0].start] in after_opener):
        last_code = []
    spots = [t.end for t in last_code + run]
    last = toks[-1]
    later = [t.start for t in chunk if t.start > last.start]
    end = later[0] if later else chunk_end(text, chunk)
    pos = text.find("\n", last.end, end)
    while 0 <= pos < end:
        stop = text.find("\n", pos + 1, end)
        if stop < 0 and end < len(text):
            break                # the indentation of the next code line: no blank line
        line_text = text[pos + 1:stop if stop >= 0 else end]
        if line_text and line_text.strip(" \t") == "":
            spots.append(pos + 1 + len(line_text))
        pos = stop
    return spots


# --- the verdict -----------------------------------------------------------------------------------

def weigh(text: str, chunk: list, edits: list, dialect: str) -> Verdict:
    """The level of a repair (`edits` against `text`) of one chunk (see the module doc)."""
    edits = [dict(e) for e in edits]
    if len(edits) > MAX_EDITS or len(chunk) > MAX_TOKENS:
        return decided(GUESS, edits, "G01")
    vt = virtual(text, chunk, edits)
    best = judged(text, chunk, edits)
    if not edits:
        return decided(CERTAIN, edits, "C00")
    if not best.reads:
        return decided(GUESS, edits, "G02")
    closers = delimiter_chars(dialect)[1::2]          # ")", ")]" or ")]}"
    only = len(edits) == 1 and _no_rival(text, chunk, edits[0], best, closers)
    # The only one-edit repair that reads is still no repair when it leaves a form no program
    # has (`(let [y (inc x)\n  y]))`: a Clojure binding vector of odd length). Argument counts
    # do not overrule it: a local may shadow a function's name.
    problems = shape_problems(text, vt, dialect, _edit_points(vt, edits), counts=not only)
    if only and not problems:
        return decided(CERTAIN, edits, "C01")
    if problems:
        shape = (rules.Step("G06", problems[0]),)     # the first step of every shape rule
        better, rivals = _reshape(text, chunk, edits, best, dialect, closers)
        if better is not edits and not rivals[1:] and not best.disagreements and \
                not judged(text, chunk, better).disagreements and \
                _shapes_decide(text, chunk, better, dialect, closers, problems) and \
                not _library_broken(text, chunk, better, dialect):
            # the library's counts never make a repair likely, but one that breaks them is
            # not: `(postwalk (fn [x] (if (seq? x) (f x) x) form))` mends the `if` and
            # leaves clojure.walk's two-argument postwalk with one
            # nor is one that breaks the pattern of the lines before it when another place
            # keeps both (`(rd :fields (list (byte 1 30) (byte 5 0)) :type 'sized-reg)`
            # under `(rn :fields (list ...) :type ...)`), or when the indentation's
            # placement, shapes aside, keeps it (`(def + :type rational :folded (+ -))`
            # between two defs written so is no `(+) -`)
            alike = _alike_lines(text, chunk, better, _same_line_moves(
                text, chunk, better, best, dialect, closers))
            if alike is not None:
                return decided(GUESS, alike, "G03", "choose another", [better, edits],
                                before=shape)
            if _alike_lines(text, chunk, better, [edits]) is not None:
                return decided(GUESS, better, "G03", "are written like the indentation's "
                                "placement", [edits], before=shape)
            # nor one that leaves an `if` without the else a second closer moved on the line
            # gives it (`(if (not (list? lst) (list lst lst`: `(list lst) lst`), not right
            # after an operator (`(if (member) 'fubar ...)`)
            heads = _heads(text, chunk)
            fuller = _with_else(text, chunk, better, [
                trial for trial in _same_line_moves(
                    text, chunk, better, judged(text, chunk, better), dialect, closers)
                if not any(e["start"] in heads for e in trial if e not in better)])
            if fuller is not None:
                return decided(GUESS, fuller, "G04", rivals=[better, edits], before=shape)
            return decided(LIKELY, better, "L02", problems[0], [edits])
        if better is not edits and _library_broken(text, chunk, better, dialect):
            # the one move breaks the library's counts: closers moved together may keep
            # them (`(prewalk (fn [x] (if (seq? x) (macroexpand x) x)) form)`, two after the
            # last `x`, where one gives clojure.walk's two-argument prewalk one)
            for n in (2, 3):
                for trial in _to_one_place(text, chunk, edits, best, dialect, n=n):
                    if not _library_broken(text, chunk, trial, dialect):
                        return decided(GUESS, trial, "G05", rivals=[better] + rivals[:2],
                                        before=shape)
        return decided(GUESS, better, "G06", problems[0], rivals)
    if not all(in_trail(text, chunk, e) for e in edits):
        return decided(GUESS, edits, "G07")
    if best.disagreements:
        if _stray_end(chunk, edits):
            return _weigh_stray_end(text, chunk, edits, best, dialect)
        spaced = _same_line_moves(text, chunk, edits, best, dialect, closers, after_opener=True)
        if spaced and not _blank_before_closer(text, edits) and \
                not _inner_blanks(text, chunk, edits):
            # the form is loosely indented, but the space still says where a closer was
            return decided(GUESS, spaced[0], "G08", rivals=[edits] + spaced[1:],
                            after=(rules.Step("L03"),))
        # a loosely indented form says nothing of a tie on its last line: what the calls
        # mean still may (`(run-test (sxpath '(@ name) tree expected` under a misindented
        # line)
        loose = (rules.Step("G08"),)
        ties, after_heads, pairs = _open_tail_ties(text, chunk, edits, best, dialect, closers)
        return _break_tie(text, chunk, edits, ties, after_heads, pairs, dialect, loose) \
            if ties or after_heads or pairs else decided(GUESS, edits, "G08")
    rivals = _trail_rivals(text, chunk, edits, best, dialect, closers)
    if rivals:
        return decided(GUESS, edits, "G09", rivals=rivals)
    spaced = _same_line_moves(text, chunk, edits, best, dialect, closers, after_opener=True)
    if spaced and (_blank_before_closer(text, edits) or _inner_blanks(text, chunk, edits)):
        # `#{ :a :b }`: a blank after the opener and one before the closer, the line end
        return decided(GUESS, edits, "G10", rivals=spaced)
    if spaced:
        # `(fn [ body` reads as `(fn [body])` too, but the space says where the closer was
        level = LIKELY if len(spaced) == 1 and _shapes_decide(text, chunk, spaced[0], dialect,
                                                              closers) else GUESS
        return decided(level, spaced[0], "L03", rivals=[edits] + spaced[1:])
    ties, after_heads, pairs = _open_tail_ties(text, chunk, edits, best, dialect, closers)
    if ties:
        return _break_tie(text, chunk, edits, ties, after_heads, pairs, dialect)
    if after_heads or pairs:
        # no tie, but the library calls an operator with nothing where the line end gives it
        # arguments: `(value (missing-arg :type t` in a defstruct is `(value (missing-arg)
        # :type t)` as likely as not (the text may define its own missing-arg); or two
        # closers mid-line give calls the counts the text's others have
        chosen, chose = _choose(text, chunk, edits, [], after_heads, pairs, dialect)
        if chosen is not edits:
            return decided(GUESS, chosen, "G12", rivals=[edits], after=chose)
    if same_line_rivals(text, chunk, edits, dialect):
        # the same level, but another rule: a closer could as well have stood mid-line on
        # its line (a closer dropped mid-line reads the same). `check --fix=likely` writes
        # it; what writes unattended (the hook, the form tools) asks more (rules.UNATTENDED)
        return decided(LIKELY, edits, "L06")
    return decided(LIKELY, edits, "L01")


def _break_tie(text, chunk, edits, ties, after_heads, pairs, dialect, before=()) -> Verdict:
    """A guess among `edits` and its ties on its last line (`_open_tail_ties`), the one
    `_choose` chooses."""
    chosen, chose = _choose(text, chunk, edits, ties, after_heads, pairs, dialect)
    return decided(GUESS, chosen, "G11", rivals=[t for t in [edits] + ties
                                                  if t is not chosen][:3],
                    before=before, after=chose)


def _choose(text, chunk, edits, ties, after_heads, pairs, dialect):
    """(repair, the tie-break steps that chose it) among `edits`, its ties and the weaker
    candidates of `_open_tail_ties`: the tie-break rules T01-T09 (rules.py) in that order,
    each given the candidates it weighs; the first that prefers one over `edits` decides
    (its step is returned, () when none does and `edits` stands). T01 the library's
    argument counts (a closer right after an operator the library calls with nothing among
    them: `(missing-arg) :type list`), T02 and T03 CL's standard keywords and printers'
    streams, T04 `apply`'s rest list, T05 the lines before it, T06 the file's forms of its
    kind, T07 the text's other calls (two closers moved to one place among them, not a call
    of nothing; only with ties or pairs), T08 an `if`'s else, T09 a fold's two arguments."""
    everyone = ties + after_heads + pairs
    breaks = (
        ("T01", lambda: _library_tie_break(text, chunk, edits, everyone, dialect)),
        ("T02", lambda: dialect == CL and _keyword_tie_break(text, chunk, edits,
                                                              ties + pairs, dialect)),
        ("T03", lambda: dialect == CL and _stream_tie_break(text, chunk, edits, ties + pairs)),
        ("T04", lambda: _rest_tie_break(text, chunk, edits, ties + pairs, dialect)),
        ("T05", lambda: _sibling_tie_break(text, chunk, edits, everyone)),
        ("T06", lambda: _kin_tie_break(text, chunk, edits, everyone, dialect)),
        ("T07", lambda: bool(ties or pairs) and _usage_tie_break(text, chunk, edits,
                                                                 ties + pairs, dialect,
                                                                 weak=pairs)),
        ("T08", lambda: _else_tie_break(text, chunk, edits, everyone)),
        ("T09", lambda: _fold_tie_break(text, chunk, edits, ties + pairs, dialect)),
    )
    for code, tie_break in breaks:
        found = tie_break()
        if found:
            chosen, detail = found
            return chosen, (rules.Step(code, detail),)
    return edits, ()


def _full_ifs(text, chunk, trial) -> int:
    """How many `if`s written on one line have a test, a then and an else after `trial`.
    (One over several lines puts an else on a line of its own: `(if (not (list? headers))\n
    (bad-request "Headers not a list: ~a" headers))` has none.) Its own walk, not
    `_closed_lists`: a quoted datum is one element here, and lines count."""
    full, frames = 0, []           # [line of the opener, head, elements]
    for v in virtual(text, chunk, trial):
        if v.code in "([{":
            if frames:
                frames[-1][2] += 1
            frames.append([v.line, None, 0])
        elif v.code in ")]}":
            if frames:
                line, head, n = frames.pop()
                full += head == "if" and n == 4 and line == v.line
        elif frames and v.code not in "pd" and not v.inserted:
            f = frames[-1]
            if f[2] == 0 and v.code == "a":
                f[1] = text[v.start:v.end]
            # a template's `...` repeats what comes before it: no count
            f[2] += 99 if text[v.start:v.end] == "..." else 1
    return full


def _with_else(text, chunk, edits, others) -> list | None:
    """The repair among `others`, the nearest to `edits` of those, that gives an `if` its
    else where `edits` leaves it without one; else None. 96% of SBCL's `if`s have an else,
    91% of Clojure's, 86% of Guile's, and a closer dropped mid-line is rarer by less (`(if
    (not (list? lst)) (list lst) lst)`, not `(if (not (list? lst)) (list lst lst))`)."""
    return _nearest_over(others, lambda trial: _full_ifs(text, chunk, trial),
                         _full_ifs(text, chunk, edits))


def _nearness(trial: list) -> list:
    """Sorts repairs nearest first to where the indentation puts the closers, at the line
    end: the smallest change of structure."""
    return [-e["start"] for e in trial]


def _nearest_over(trials: list, score, mine) -> list | None:
    """The nearest (`_nearness`) of `trials` that `score` rates above `mine`, else None."""
    better = [trial for trial in trials if score(trial) > mine]
    return min(better, key=_nearness) if better else None


def _else_tie_break(text, chunk, edits, others):
    """T08: among repairs that tie, the one `_with_else` chooses, else None."""
    chosen = _with_else(text, chunk, edits, others)
    return None if chosen is None else (chosen, "")


# Operators that fold their arguments, legal with one (`(/ x)` is x's reciprocal, `(logand x)`
# is x) but rarely so written: 0.9-4.7% of their calls in SBCL's and Guile's sources.
_FOLDS = {CL: frozenset(("logand", "logior", "logxor", "logeqv", "/")),
          SCHEME: frozenset(("logand", "logior", "logxor", "bitwise-and", "bitwise-ior",
                             "bitwise-xor", "/")),
          CLOJURE: frozenset(("bit-and", "bit-or", "bit-xor", "/"))}


def _folds_of_one(text: str, vt: list[_V], dialect: str) -> int:
    """Calls of a `_FOLDS` operator given fewer than two arguments."""
    return sum(len(args) < 2 and head.lower() in _FOLDS[dialect]
               for head, *args in _closed_lists(text, vt))


def _fold_tie_break(text, chunk, edits, others, dialect):
    """T09: among repairs that tie, the nearest one that gives a folding operator (`logand`, `/`)
    two arguments or more where the indentation's placement gives it one (`(logand
    (elf-symbol-info sym #xf` is `(logand (elf-symbol-info sym) #xf)`). Not a shape: SBCL
    and Guile write `(logior fop-list-base-opcode)` six times, `(/ x)` for a reciprocal."""
    def folds(trial) -> int:
        return _folds_of_one(text, virtual(text, chunk, trial), dialect)

    mine = folds(edits)
    # none to mend: the ties are not walked
    chosen = _nearest_over(others, lambda trial: -folds(trial), -mine) if mine else None
    return None if chosen is None else (chosen, "")


def _library_broken(text, chunk, trial, dialect) -> list:
    """The shapes a repair breaks, the library's counts (`shapes.library_arity`) included."""
    vt = virtual(text, chunk, trial)
    return shape_problems(text, vt, dialect, _edit_points(vt, trial), library=True)


def _library_tie_break(text, chunk, edits, ties, dialect):
    """T01: among repairs that tie, one that keeps the argument counts of the library
    (`shapes.library_arity`: `(sxpath '(@ name) tree expected)` calls (sxml xpath)'s sxpath,
    which takes one, with three; `(OutputStreamWriter. os enc opts)` a constructor that takes
    two at most) over the indentation's placement when that breaks them. Still a guess: the
    text may define or import a procedure or class of that name that takes other counts."""
    problems = _library_broken(text, chunk, edits, dialect)
    if problems:
        for trial in ties:
            if not _library_broken(text, chunk, trial, dialect):
                return trial, problems[0]
    return None


def _closed_lists(text: str, vt: list[_V]):
    """The elements of each list of `vt` as it closes (not a quoted one's): an atom's text,
    "(" for a list, "'" for a quote."""
    frames: list[list[str]] = []
    for v in vt:
        if v.code in "([{":
            frames.append([])
        elif v.code in ")]}":
            if not frames:
                continue
            elems = frames.pop()
            if frames:
                frames[-1].append("(")
            if elems and elems[0] != "'":
                yield elems
        elif frames and not v.inserted:
            frames[-1].append("'" if v.code == "p" else text[v.start:v.end])


def _standard_keywords_given(text: str, vt: list[_V], dialect: str) -> tuple[int, int]:
    """(keywords given to the standard functions that take them, keywords one of those takes
    given to an operator nothing here knows), counting each list's own arguments."""
    given = stray = 0
    for head, *args in _closed_lists(text, vt):
        keys = [a.lower() for a in args if a.startswith(":")]
        takes = shapes.standard_keywords(head, dialect)
        if takes:
            given += sum(k in takes for k in keys)
        elif not (shapes.known(head, dialect) or shapes.stdlib_arity(head, dialect)):
            stray += len(keys)
    return given, stray


# CL's printers and where each takes its stream among its arguments
_STREAM_AT = {**{f: 1 for f in ("princ", "prin1", "print", "pprint", "write-string",
                                "write-line", "write-char", "write-byte")},
              **{f: 0 for f in ("terpri", "fresh-line", "finish-output", "force-output",
                                "format")}}


def _handed(text: str, vt: list[_V], takers: dict, named) -> tuple[int, int]:
    """(variables `named` says are of a kind given to an operator of `takers` at the place
    it takes one (-1: last), such variables last in any other list)."""
    given = stray = 0
    for head, *args in _closed_lists(text, vt):
        at = takers.get(head.lower())
        args = [a.lower() for a in args]
        if at is not None:
            given += -len(args) <= at < len(args) and named(args[at])
        elif args and named(args[-1]):
            stray += 1
    return given, stray


def _handing_tie_break(text, chunk, edits, ties, takers, named):
    """Among repairs that tie, the one that hands an operator of `takers` the variable it
    takes (`_handed`) where the indentation's placement hands it to another list; else
    None."""
    base, stray = _handed(text, virtual(text, chunk, edits), takers, named)
    if not stray:
        return None
    chosen = []
    for trial in ties:
        given, left = _handed(text, virtual(text, chunk, trial), takers, named)
        if given > base and left < stray:
            chosen.append(trial)
    return (chosen[0], "") if len(chosen) == 1 else None


def _stream_tie_break(text, chunk, edits, ties):
    """T03: a CL printer takes the stream the indentation's placement gives to another call: a
    function that takes a stream prints to it (`(princ (reconstruct-s-immediate value)
    stream)` in a printer `(value stream dstate)`, not `(princ (reconstruct-s-immediate value
    stream))`)."""
    return _handing_tie_break(text, chunk, edits, ties, _STREAM_AT,
                              lambda name: "stream" in name)


def _rest_tie_break(text, chunk, edits, ties, dialect):
    """T04: `apply` takes last the rest parameter the indentation's placement gives to another
    call last: arguments gathered into a list are handed on as one (`(apply #'make-instance
    (find-class class) initargs)` in a method of `(class &rest initargs)`)."""
    words = _REST_WORDS[dialect]
    rest = {text[b.start:b.end].lower() for a, b in zip(chunk, chunk[1:])
            if b.code == "a" and text[a.start:a.end].lower() in words}
    if not rest:
        return None
    return _handing_tie_break(text, chunk, edits, ties, {"apply": -1}, rest.__contains__)


def _keyword_tie_break(text, chunk, edits, ties, dialect):
    """T02: among repairs that tie, the one that gives a standard function the keyword arguments
    it takes, which the indentation's placement gives to an operator nothing here knows:
    `(position type (generic-function-encapsulations gf) :key #'car)`, not `(position type
    (generic-function-encapsulations gf :key #'car))`. Still a guess: the text's own
    function may take :key too."""
    base, stray = _standard_keywords_given(text, virtual(text, chunk, edits), dialect)
    if not stray:
        return None
    scored = [(_standard_keywords_given(text, virtual(text, chunk, trial), dialect)[0], trial)
              for trial in ties]
    best = max((n for n, _ in scored), default=0)
    chosen = [trial for n, trial in scored if n == best]
    if best > base and len(chosen) == 1:
        return chosen[0], ""
    return None


def _usage_tie_break(text, chunk, edits, ties, dialect, weak=()):
    """T07: among repairs that tie, the one whose calls take the argument counts the text's other
    calls of the same functions take, when it agrees with them more often than the
    indentation's placement does: `(edge graph comb (combination-fun comb) "label" "fun")` on
    the line before says `(edge graph comb (combination-args comb "label" "args"` lost a
    closer after `comb`. One call is no definition (text_arities asks three): a guess, and
    still the indentation's placement when nothing tells them apart. A candidate of `weak`
    (closers moved together, no tie by itself) is no choice in a Clojure function of
    several arities: one arity calling `(deref-future ref)` says nothing of another's
    `(deref-future ref timeout-ms timeout-val)`, and transducers' arities call `(f)`, `(f
    ret)` and `(f ret x)`."""
    if _several_arities(text, chunk, dialect):
        return None
    seen = text_calls(text, dialect)
    start, end = chunk[0].start, chunk_end(text, chunk)
    damaged = text_calls(text[start:end], dialect).uses       # the lists it closes already

    def calls(trial) -> Calls:
        return text_calls(apply_edits(text[start:end], [
            {**e, "start": e["start"] - start, "end": e["end"] - start} for e in trial]),
            dialect)

    # not names the indentation's placement has only under a quote or in a template: a
    # closer that moves a call out of one (`(f x)) (apply-key key elt)` after a backquote)
    # makes it count, not agree
    base = calls(edits)
    unseen = base.quoted - set(base.uses)

    def agreement(trial) -> int:
        score = 0
        mine = calls(trial)
        for name, counts in mine.uses.items():
            known = seen.uses.get(name)
            # one count for every other call, or two for four calls or more (`run-test` with
            # three, at times two, in Guile's SXPath tests), or they say nothing
            if not known or len(known) > 2 or len(known) == 2 and sum(known.values()) < 4 \
                    or not seen.weakly_countable(name) or name in mine.keyed or name in unseen \
                    or seen.library_takes_more(name):
                continue
            for n, k in (counts - damaged.get(name, Counter())).items():
                score += k if n in known else -k
        return score

    scored = [(agreement(trial), -i, trial) for i, trial in enumerate([edits] + ties)
              if not (any(trial is t for t in weak) and _clojure_arities(chunk, dialect))]
    best, _, chosen = max(scored, key=lambda s: s[:2])
    return None if chosen is edits else (chosen, "")


def line_shape(vt: list[_V], line: int, top: bool = False) -> tuple | None:
    """A code line's shape, its atoms, strings and characters alike (`(def + :type rational
    :folded (+ -))` and `(def * :type rational :folded (* /))` are alike), when the line
    holds whole forms: None when a list it opens goes on past it, or when code follows a
    closer of a list opened before it; () for a line of such closers only. top: only the
    kinds of the line's forms (`(x) (/ 1 x)` and `(x y z ... last) (/ (/ x y . z) last)`
    are two lists). Sibling clauses, bindings and table rows are written alike."""
    depth, out, outer = 0, [], False
    for v in vt:
        if v.line != line:
            continue
        if v.code in ")]}":
            if depth == 0:
                outer = True          # closes a list the line is in: not the line's shape
                continue
            depth -= 1
            if top:
                continue
        elif outer:
            return None
        elif v.code in "([{":
            depth += 1
            if top and depth > 1:
                continue
        elif top and depth:
            continue
        out.append(v.code if v.code in "([{)]}p" else "a")
    return tuple(out) if depth == 0 else None


def keyword_skeleton(text: str, vt: list[_V], line: int) -> tuple | None:
    """The keywords of a line with their depth in it, two or more: rows of an instruction
    format (`(rn :fields (list (byte 1 30) (byte 5 5)) :type 'x-reg)`) put each keyword at
    one depth however many fields their lists hold."""
    depth, out = 0, []
    for v in vt:
        if v.line != line:
            continue
        if v.code in "([{":
            depth += 1
        elif v.code in ")]}":
            depth -= 1
        elif v.code == "a" and not v.inserted and text.startswith(":", v.start):
            out.append((depth, text[v.start:v.end].lower()))
    return tuple(out) if len(out) > 1 else None


def telling(shape: tuple) -> bool:
    """Is a line's shape rare enough that a line shaped alike says something: three lists
    or more, or ten tokens (`(declare (type wrapper wrapper))` is shaped like many a call)?"""
    return sum(c in "([{" for c in shape) >= 3 or len(shape) >= 10


_SIBLINGS = 3          # lines written alike looked at before a line


def _siblings(vt: list[_V], line: int, most: int = _SIBLINGS) -> list[int]:
    """The code lines right before `line` that start in its column, the nearest first: rows
    one after another, not the forms of a body (`(declare (type source-info info))` two
    forms before `(setf (source-info-stream info) nil)` is shaped like its misreading)."""
    starts = {v.line: v.col for v in vt if v.first and not v.inserted}
    col = starts.get(line)
    found = []
    for k in range(line - 1, max(-1, line - 1 - most), -1):
        if starts.get(k) != col:
            break
        found.append(k)
    return found


def _sibling_tie_break(text, chunk, edits, ties):
    """T05: among repairs that tie, the one whose line is shaped like the lines right before it in
    the same list, when the indentation's placement is shaped like none: rows of a table, the
    clauses of a macro, the fields of an instruction format are written alike (`(rn :fields
    (list (byte 5 5) (byte 5 16)) :type 'simd-copy-reg)` on the line before says where
    `(rd :fields (list (byte 1 30) (byte 5 0 :type 'sized-reg` lost its closers)."""
    chosen = _alike_lines(text, chunk, edits, ties)
    return None if chosen is None else (chosen, "")


class _L(NamedTuple):
    """A token as line_shape reads it: its code and its code line in its form."""
    code: str
    line: int


_TOP_FORM = re.compile(r"^[(\[{]([^\s()\[\]{}\"';]*)", re.M)


@lru_cache(maxsize=8)
def top_forms(text: str) -> tuple:
    """(start, limit, head) of each form that starts a line in column 0 with an opener, up
    to the next such line (a line that starts so starts a form even after one left open,
    as in text_arities); head is the symbol after the opener, or ""."""
    starts = [(m.start(), m.group(1)) for m in _TOP_FORM.finditer(text)]
    return tuple((start, limit, head) for (start, head), (limit, _) in
                 zip(starts, starts[1:] + [(len(text), "")]))


@lru_cache(maxsize=8)
def _last_line_shapes(text: str, dialect: str) -> dict:
    """{offset of a top-level form headed by a symbol: (its head, the shape of its last code
    line)}."""
    out = {}
    for start, limit, head in top_forms(text):
        if not head:
            continue
        tokens, _ = tokenize(text[start:limit], dialect)
        toks, line, prev_end = [], -1, -1
        for code, begin, end in zip(tokens.codes, tokens.starts, tokens.ends):
            if code in ";bB":
                continue
            if prev_end < 0 or "\n" in text[start + prev_end:start + begin]:
                line += 1
            prev_end = end
            toks.append(_L(code, line))
        if toks:
            out[start] = (head, line_shape(toks, line))
    return out


def _kin_tie_break(text, chunk, edits, ties, dialect):
    """T06: among repairs that tie on the form's last line, the one whose last line is shaped like
    the last lines of the file's other forms with its operator, when the indentation's
    placement is shaped like none of them: a family of definitions is written alike
    (`(define-syntax-rule (if>? arg ...)\n  (compare:if-rel? (1) (-1 0) arg ...))` beside
    `(compare:if-rel? (-1) (0 1) arg ...))` in SRFI 67's compare.scm)."""
    if chunk[0].col != 0 or len(chunk) < 2 or chunk[1].code not in "axA":
        return None
    head = text[chunk[1].start:chunk[1].end]
    kin = [shape for start, (h, shape) in _last_line_shapes(text, dialect).items()
           if h == head and start != chunk[0].start and shape]
    if len(kin) < 2:
        return None
    last = max(v.line for v in virtual(text, chunk, []))

    def alike(trial) -> int:
        mine = line_shape(virtual(text, chunk, trial), last)
        return sum(shape == mine for shape in kin) if mine and telling(mine) else 0

    if alike(edits):
        return None
    scored = [(alike(trial), trial) for trial in ties]
    best = max((n for n, _ in scored), default=0)
    chosen = [trial for n, trial in scored if n == best]
    return (chosen[0], "") if best >= 2 and len(chosen) == 1 else None


def _alike_lines(text, chunk, edits, others) -> list | None:
    """The one repair among `others` whose line where it differs from `edits` is shaped like
    a line before it in the same list (`line_shape`), when that line of `edits` is shaped
    like none; else None."""
    vt0 = [v for v in virtual(text, chunk, []) if not v.inserted]
    read: dict[int, list[_V]] = {}        # each trial read once, for every line and mode

    def alike(trial, line, mode) -> int:
        vt = read.get(id(trial))
        if vt is None:
            vt = read[id(trial)] = virtual(text, chunk, trial)
        if mode == "keywords":
            mine = keyword_skeleton(text, vt, line)
            # keywords by name and depth are telling enough to look at every row of the
            # list before it (`(rs :fields (list (byte 1 30) (byte 5 16)) :type 'sized-reg)`
            # four fields above `(rt :fields (list ...) :type ...)`)
            return sum(keyword_skeleton(text, vt, k) == mine
                       for k in _siblings(vt, line, most=line)) if mine else 0
        top = mode == "forms"
        mine = line_shape(vt, line, top)
        if not mine or (len(mine) < 2 if top else not telling(mine)):
            return 0          # a line of one form is like any other at the top
        return sum(line_shape(vt, k, top) == mine for k in _siblings(vt, line))

    lines = []
    for trial in others:
        mine, theirs = Counter(e["start"] for e in trial), Counter(e["start"] for e in edits)
        moved = (mine - theirs) + (theirs - mine)
        if moved:
            lines.append((max((v.line for v in vt0 if v.start < min(moved)), default=0),
                          min(mine - theirs, default=-1), trial))
    for mode in ("tokens", "forms", "keywords"):
        # alike in every token first; else alike in the forms the line holds, or in where
        # its keywords stand
        scored = [(alike(trial, line, mode), place, trial) for line, place, trial in lines
                  if not alike(edits, line, mode)]
        best = max((n for n, _, _ in scored), default=0)
        chosen = [(place, trial) for n, place, trial in scored if n == best]
        if best and mode == "keywords":
            # a keyword's depth says where a list ends only up to its first place: the
            # latest of those, nearest the indentation's placement
            latest = max(place for place, _ in chosen)
            chosen = [c for c in chosen if c[0] == latest]
        if best:
            return chosen[0][1] if len(chosen) == 1 else None
    return None


def _in_unknown_definer(frames: list, dialect: str) -> bool:
    """Is the innermost open frame a top-level `def...` / `define-...` form that shapes.py
    has no rule for (its direct children, whatever they are), or a list of lists right in
    one (a list of slots)?"""
    if len(frames) == 3:
        elems = frames[2]["elems"]
        if elems and elems[0].kind == "atom":
            return False
    elif len(frames) != 2:
        return False
    elems = frames[1]["elems"]
    return bool(elems) and elems[0].kind == "atom" and \
        shapes.unknown_definer(elems[0].text, dialect) and \
        elems[0].text.lower() not in _DEFINERS[dialect]


def _several_arities(text, chunk, dialect) -> bool:
    """Is the form a Scheme `case-lambda`? Its clauses pass their arguments on, each with
    its own count (`(dup->port port/fd "r")`, then `(dup->port port/fd "r" new-fd)`): they
    say nothing of each other's. (A Clojure function's arities call their helpers alike
    more often: `(elide-top-frames (ExceptionInfo. msg map) "...")` in each.)"""
    return dialect == SCHEME and any(
        t.code == "a" and text[t.start:t.end] in ("case-lambda", "case-lambda*") for t in chunk)


def _clojure_arities(chunk: list, dialect: str) -> bool:
    """Is the form a Clojure definition of several arities (`([x] ...) ([x y] ...)`)?"""
    if dialect != CLOJURE:
        return False
    depth, clauses = 0, 0
    for t, nxt in zip(chunk, chunk[1:]):
        if t.code == "(" and nxt.code == "[" and depth == 1:
            clauses += 1
        depth += 1 if t.code in "([{" else -1 if t.code in ")]}" else 0
    return clauses >= 2


def _blank_before_closer(text: str, edits: list) -> bool:
    """Is a closer inserted at a line end after trailing blanks, or before them (`:b }`)?"""
    for e in edits:
        if e["start"] == e["end"]:
            nl = text.find("\n", e["start"])
            tail = text[e["start"]:nl if nl >= 0 else len(text)]
            if text[e["start"] - 1:e["start"]] in (" ", "\t") or \
                    tail and not tail.strip(" \t\r"):
                return True
    return False


_DOUBLE_BLANK = re.compile(r"\S[ \t]{2,}\S")


def _inner_blanks(text: str, chunk: list, edits: list) -> bool:
    """Does the author write a blank before a closer, as well as after an opener (`[ [ x ]
    ]`, `{ :string s }`), or after other openers (`[ "I" "II" ...]` on each row of
    clojure.pprint's roman numerals)? A closer of the form after a blank on its line, two
    openers with a blank after them, or two blanks in a row between code on an inserted
    closer's line (`{ :string s  offset`: the closer between them dropped). Then a space
    after an opener is the author's style, not a dropped closer's place."""
    spaced = 0
    for t in chunk:
        if t.code in ")]}" and not t.first and text[t.start - 1:t.start] in (" ", "\t"):
            return True
        if t.code in "([{" and text[t.end:t.end + 1] in (" ", "\t"):
            spaced += 1
            if spaced > 1:
                return True
    for e in edits:
        if e["start"] == e["end"]:
            line_start = text.rfind("\n", 0, e["start"]) + 1
            if _DOUBLE_BLANK.search(text, line_start, e["start"]):
                return True
    return False


# Closers missing in one run at a line end from which a tie with a mid-line place demotes a
# repair. Two are the usual end of a form's last line (a call and the definition around it);
# with three or more, a call that closed earlier on the line (`(f (g x) y)))`) is common.
# Among forms of SBCL's, Guile's and Clojure's sources whose last 2-4 closers were dropped
# (bench/repair_corpus.py), about 1 in 8 such ties with three or more missing was the
# mid-line place, 1 in 100 with two.
_TIE_RUN = 3


def _open_tail_ties(text, chunk, edits, best: Judged, dialect, closers) -> tuple:
    """Repairs that move an inserted closer to an earlier place on its line after which the
    text has no closer left, and pass every test as well; and apart from them, those that
    move it right after a list's operator (no tie: see below, but the library may know a
    function that takes nothing), and those that move two to one place (no tie either: the
    line end is likelier, but the text's other calls may say otherwise: `_to_one_place`).

    When the closers a form ends with were dropped (the mistake models make most), every
    closer after some point is missing, and one of those may have stood mid-line: `(f (g x)
    y))` and `(f (g x y)))` both lose three to `(f (g x y`. Indentation cannot say which, and
    when no shape rules either out, neither is likely. A place with a closer still after it
    is no such tie (whoever wrote that closer kept writing closers past the place), and
    neither is a run of fewer than _TIE_RUN missing closers."""
    inserted = sorted((e["start"], len(e["text"])) for e in edits if e["start"] == e["end"])
    if sum(n for _, n in inserted) < _TIE_RUN:
        return [], [], []

    def missing_from(start: int) -> int:
        return sum(n for at, n in inserted if at >= start)

    last_closer = max((t.start for t in chunk if t.code in ")]}"), default=-1)
    # right after an operator: `(h) y` for `(h y)` leaves a call of nothing but its operator
    heads = _heads(text, chunk, openers="([{")
    ties, after_heads = [], []
    for trial in _same_line_moves(text, chunk, edits, best, dialect, closers,
                                  after=last_closer):
        left = Counter(e["start"] for e in edits) - Counter(e["start"] for e in trial)
        if any(missing_from(start) >= _TIE_RUN for start in left):
            if any(e["start"] in heads for e in trial if e not in edits):
                after_heads.append(trial)
            else:
                ties.append(trial)
    pairs = [trial for trial in _to_one_place(text, chunk, edits, best, dialect,
                                              after=last_closer)
             if any(missing_from(start) >= _TIE_RUN for start in
                    Counter(e["start"] for e in edits) - Counter(e["start"] for e in trial))]
    return ties, after_heads, pairs


def _inserted_by_place(edits: list) -> dict:
    """{offset: indexes in `edits` of the closers inserted there}, innermost first."""
    by_place: dict = {}
    for idx, e in enumerate(edits):
        if e["start"] == e["end"]:
            by_place.setdefault(e["start"], []).append(idx)
    return by_place


def _to_one_place(text, chunk, edits, best: Judged, dialect, after: int = -1,
                  n: int = 2) -> list:
    """Repairs that move the n innermost closers inserted at one place to one earlier place
    on its line, after the token starting at `after`: `(run-test (sxpath '(para)) tree
    expected)` loses four to `(run-test (sxpath '(para tree expected`, two of them mid-line;
    the other calls of run-test, which take three, say so."""
    found = []
    for place, idxs in _inserted_by_place(edits).items():
        if len(idxs) < n:
            continue
        others = [e for k, e in enumerate(edits) if k not in idxs[:n]]
        line_start = text.rfind("\n", 0, place) + 1
        for t in chunk:
            if line_start <= t.start and after <= t.start and t.end < place and \
                    t.code not in "([{pd":
                trial = sorted(others + [{"start": t.end, "end": t.end,
                                          "text": edits[k]["text"]} for k in idxs[:n]],
                               key=lambda x: (x["start"], x["end"]))
                if trial not in found and _fits(text, chunk, trial, best, dialect,
                                                max_bad=best.disagreements) is not None:
                    found.append(trial)
    return found


def _stray_end(chunk: list, edits: list) -> bool:
    """Are the edits only removals of closers from the chunk's final closer run, with the
    rest of the chunk balanced: closers after a form that was already complete?"""
    removed = {e["start"] for e in edits if e["start"] != e["end"] and not e["text"]}
    if len(removed) != len(edits):
        return False
    k = len(chunk)
    while k and chunk[k - 1].code in ")]}":
        k -= 1
    if not removed <= {t.start for t in chunk[k:]}:
        return False
    stack = []
    for t in chunk:
        if t.start in removed:
            continue
        if t.code in "([{":
            stack.append(t.code)
        elif t.code in ")]}":
            if not stack or CLOSE_FOR[stack.pop()] != t.code:
                return False
    return not stack


def _weigh_stray_end(text, chunk, edits, best: Judged, dialect) -> Verdict:
    """Closers one too many after a complete form, in a form whose own indentation is loose
    (some lines disagree with it as written). Removing them changes nothing the author wrote
    before them, so the lines that disagree are the author's. What would say otherwise is a
    repair that agrees better with the indentation: removing a closer typed too early instead
    (`(let ((x 1)))` with the body indented under the `let`, which the closer at the end then
    closes), or moving the closer at the end to a line end where a line after it says a form
    closes (a closer dropped there, and one too many written at the end)."""
    if len(edits) != 1:
        return decided(GUESS, edits, "G08")
    k = len(chunk)
    while k and chunk[k - 1].code in ")]}":
        k -= 1
    # closers that end their lines (where indentation can say a form closed too early)
    trials = [[e] for e in ({"start": t.start, "end": t.end, "text": ""}
                            for t in chunk[:k] if t.code in ")]}")
              if in_trail(text, chunk, e)]
    # a closer dropped at the end of the line before one that disagrees, besides the one too
    # many at the end: insert it there and remove one more closer from the end
    closers = delimiter_chars(dialect)[1::2]
    run = chunk[k:]
    if len(run) > len(edits):
        more = [{"start": t.start, "end": t.end, "text": ""} for t in run[-len(edits) - 1:]]
        for line in sorted(set(best.bad_lines)):
            trials.extend(more + [{"start": p, "end": p, "text": ch}]
                          for p in _trail_spots(text, chunk, line - 1, after_opener=False)
                          for ch in closers)
    if len(trials) > MAX_CHECKS:
        return decided(GUESS, edits, "G08")
    rivals = []
    for trial in trials:
        trial = sorted(trial, key=lambda x: (x["start"], x["end"]))
        if _fits(text, chunk, trial, best, dialect,
                 max_bad=best.disagreements - 1) is not None:
            rivals.append(trial)
    if rivals:
        return decided(GUESS, edits, "G13", rivals=rivals[:3])
    return decided(LIKELY, edits, "L04")


def _fits(text, chunk, trial, best: Judged, dialect, *, max_bad: int = 0, shape=True):
    vt = virtual(text, chunk, trial)
    j = judged(text, chunk, trial)
    if not j.reads or j.forms != best.forms or j.key == best.key or j.disagreements > max_bad:
        return None
    if shape and shape_problems(text, vt, dialect, _edit_points(vt, trial)):
        return None
    return j


def same_forms(text, chunk, edits: list, other: list) -> bool:
    """Do two repairs of a chunk leave as many top-level forms (column 0 says how many)?"""
    return judged(text, chunk, edits).forms == judged(text, chunk, other).forms


def disagreements_if_kept(text, chunk, edits: list, dialect: str) -> int | None:
    """How many lines disagree with the indentation after a repair that reads and leaves
    every form it touches a possible shape; None when it does not."""
    vt = virtual(text, chunk, edits)
    j = judged(text, chunk, edits)
    if not j.reads or shape_problems(text, vt, dialect, _edit_points(vt, edits)):
        return None
    return j.disagreements


def also_fits(text, chunk, other: list, edits: list, dialect: str) -> bool:
    """Does `other`, a different repair of the same size, pass every test `edits` passed
    for `likely` (trails, indentation, shapes) with a different result?"""
    best = judged(text, chunk, edits)
    return all(in_trail(text, chunk, e) for e in other) and \
        _fits(text, chunk, other, best, dialect) is not None


def _no_rival(text, chunk, e, best: Judged, closers: str) -> bool:
    """For a one-edit repair: does no other single insertion / removal / change read?"""
    codes = [t.code for t in chunk]
    if e["start"] != e["end"] and e["text"]:
        # depths are unchanged by changing a closer, so openers pair with the same closers:
        # a single change fixes the text only where exactly one pair mismatches
        stack, bad = [], 0
        for c in codes:
            if c in "([{":
                stack.append(c)
            elif c in ")]}" and stack:
                bad += CLOSE_FOR[stack.pop()] != c
        return bad == 1
    inserting = e["start"] == e["end"]
    # depth after each token, and the form ends a shift by -1 (insert) or +1 (remove) makes
    n = len(codes)
    depth, d = [], 0
    for c in codes:
        d += 1 if c in "([{" else -1 if c in ")]}" else 0
        depth.append(d)
    target = 1 if inserting else -1
    suffix_min = [0] * (n + 1)
    suffix_ends = [0] * (n + 1)
    suffix_min[n] = 10 ** 9
    for i in range(n - 1, -1, -1):
        suffix_min[i] = min(suffix_min[i + 1], depth[i])
        c = codes[i]
        ends = depth[i] == target and (c in ")]}" or c not in "([{pd")
        suffix_ends[i] = suffix_ends[i + 1] + ends
    prefix_ends, prefix_ok, ends_so_far, ok = [], [], 0, True
    for i, c in enumerate(codes):
        ok = ok and depth[i] >= 0
        ends_so_far += depth[i] == 0 and (c in ")]}" or c not in "([{pd")
        prefix_ends.append(ends_so_far)
        prefix_ok.append(ok)
    checks = 0
    for i in range(n - 1, -1, -1):
        if inserting:
            # a closer right after token i: the rest shifts one level out
            if depth[i] < 1 or suffix_min[i + 1] < 1 or not prefix_ok[i]:
                continue
            forms = prefix_ends[i] + (depth[i] == 1) + suffix_ends[i + 1]
            trials = [[{"start": chunk[i].end, "end": chunk[i].end, "text": ch}]
                      for ch in closers]
        else:
            if codes[i] not in ")]}" or (i and not prefix_ok[i - 1]) or suffix_min[i + 1] < -1:
                continue
            forms = (prefix_ends[i - 1] if i else 0) + suffix_ends[i + 1]
            trials = [[{"start": chunk[i].start, "end": chunk[i].end, "text": ""}]]
        if forms != best.forms:
            continue
        for trial in trials:
            checks += 1
            if checks > MAX_CHECKS:
                return False
            j = judged(text, chunk, trial)
            if j.reads and j.forms == best.forms and j.key != best.key:
                return False
    return True


def _trail_rivals(text, chunk, edits, best: Judged, dialect, closers) -> list:
    """Other results that move one edit to another trail and still fit every test."""
    rivals, seen = [], {best.key}
    for idx, e in enumerate(edits):
        if e["start"] != e["end"] and e["text"] or not in_trail(text, chunk, e):
            continue    # a changed closer stays; so does one placed mid-line on purpose
        others = edits[:idx] + edits[idx + 1:]
        base_vt = virtual(text, chunk, others)
        base = judged(text, chunk, others)
        # only the first line the rest disagrees with, or the end, can take it (a line the
        # rest agrees with would disagree once a form closes or stays open there)
        lines = {base_vt[-1].line if base_vt else 0}
        if 0 <= base.first_bad < len(base_vt):
            bad = base_vt[base.first_bad]
            lines.add(bad.line - 1 if bad.first else bad.line)
            lines.add(bad.line)
        for line in sorted(lines):
            if e["start"] == e["end"]:
                trials = [others + [{"start": p, "end": p, "text": ch}]
                          for p in _trail_spots(text, chunk, line) for ch in closers]
            else:
                trials = [others + [{"start": t.start, "end": t.end, "text": ""}]
                          for t in trail_closers(chunk, line) if t.start != e["start"]]
            for trial in trials:
                j = _fits(text, chunk, trial, best, dialect)
                if j is not None and j.key not in seen:
                    seen.add(j.key)
                    rivals.append(sorted(trial, key=lambda x: (x["start"], x["end"])))
    return rivals


def same_line_rivals(text: str, chunk: list, edits: list, dialect: str) -> list:
    """Repairs that move one inserted closer of `edits` to an earlier place on its own line
    (not right after an opener) and still pass every test `likely` asks of a repair: they
    read, agree with the indentation as well and leave no impossible shape. This is the
    ambiguity `likely` accepts (indentation says nothing about the middle of a line);
    `bench/repair_corpus.py --midline-ties` counts it."""
    return _same_line_moves(text, chunk, edits, judged(text, chunk, edits), dialect,
                            delimiter_chars(dialect)[1::2])


def _reshape(text, chunk, edits, best: Judged, dialect, closers):
    """The best repair leaves a form of an impossible shape: try each inserted closer at the
    other places of its line: first right after an opener that a space follows (`(lambda (
    exp)`: nobody writes that space, a closer was dropped there), then after any other token
    but an opener. The nearest place that reads, agrees with the indentation as well and
    leaves no impossible shape is taken; the others are rivals."""
    found = _same_line_moves(text, chunk, edits, best, dialect, closers, after_opener=True)
    if found and _inner_blanks(text, chunk, edits):
        # the author puts blanks inside delimiters: a space after an opener is no sign
        found += _same_line_moves(text, chunk, edits, best, dialect, closers)
    found = found \
        or _same_line_moves(text, chunk, edits, best, dialect, closers) \
        or _same_line_pair_moves(text, chunk, edits, best, dialect) \
        or _earlier_line_moves(text, chunk, edits, best, dialect) \
        or _line_by_line_moves(text, chunk, edits, best, dialect, closers)
    if not found:
        return edits, []
    # moving either of two closers inserted at one place, or putting one before the same
    # closer rather than after it, gives the same text: one rival
    def same_text(at: int, ch: str) -> int:
        while text[at:at + 1] == ch:
            at += 1
        return at

    unique: dict = {}
    for trial in found:        # places in text order: the last kept, after the closer
        unique[tuple(sorted((same_text(e["start"], ch), ch)
                            for e in trial for ch in e["text"]))] = trial
    found = list(unique.values())
    # the nearest to where the indentation put it first: the smallest change of structure
    found.sort(key=_nearness)
    chosen = _with_else(text, chunk, found[0], found[1:])
    if chosen is not None:
        found.remove(chosen)
        found.insert(0, chosen)
    return _between_blanks(text, found[0], edits), ([edits] + found[1:])[:3]


def _between_blanks(text: str, trial: list, edits: list) -> list:
    """A closer moved mid-line to just before two blanks (`{ :string s  offset`), on a line
    where an opener has a blank after it: that author writes a blank before the closer too
    (`{ :string s } offset`), and the closer stood between the two."""
    out = []
    for e in trial:
        p = e["start"]
        if e["start"] == e["end"] and e not in edits and text[p:p + 2] in ("  ", " \t") and \
                text[p + 2:p + 3] not in ("", "\n", "\r", " ", "\t"):
            line_start = text.rfind("\n", 0, p) + 1
            if re.search(r"[(\[{][ \t]", text[line_start:p]):
                e = {**e, "start": p + 1, "end": p + 1}
        out.append(e)
    return out


_PAIR_SPOTS = 12     # places on the line tried for two closers moved together (78 pairs)
_PAIR_CLOSERS = 4    # of the closers inserted at one place, the innermost tried (6 choices)


def _same_line_pair_moves(text, chunk, edits, best: Judged, dialect) -> list:
    """Repairs that move two closers inserted at one place to two earlier places on their line,
    when no single move leaves every shape possible: `(remove-if-not (lambda (x) (typep x
    type *numbers*` is `(lambda (x) (typep x type)) *numbers*`, two closers mid-line. Never
    more than a guess (two closers placed where the indentation says nothing)."""
    found = []
    for place, idxs in _inserted_by_place(edits).items():
        if len(idxs) < 2:
            continue
        line_start = text.rfind("\n", 0, place) + 1
        spots = [t.end for t in chunk if line_start <= t.start and t.end < place
                 and t.code not in "([{pd"][-_PAIR_SPOTS:]
        # any two of the closers put there (inserted innermost first), not only the two
        # innermost: `[coll (when (seq coll coll` is `[coll] (when (seq coll) coll)`, the
        # vector's `]` and the innermost `)` moved, the `)` of `when` left at the end
        for a, inner in enumerate(idxs[:_PAIR_CLOSERS]):
            for outer in idxs[a + 1:_PAIR_CLOSERS]:
                others = [e for k, e in enumerate(edits) if k not in (inner, outer)]
                for i, p in enumerate(spots):
                    for q in spots[i:]:
                        trial = sorted(others + [
                            {"start": p, "end": p, "text": edits[inner]["text"]},
                            {"start": q, "end": q, "text": edits[outer]["text"]}],
                            key=lambda x: (x["start"], x["end"]))
                        if trial not in found and _fits(text, chunk, trial, best, dialect,
                                                        max_bad=best.disagreements) is not None:
                            found.append(trial)
    return found


_STEPS = 3     # lines whose closers are moved one after the other


def _line_by_line_moves(text, chunk, edits, best: Judged, dialect, closers) -> list:
    """Closers dropped mid-line on two or three lines (`#+(or x86 ppc 128` and `#-(or x86
    ppc 256` on the next, each `)` after `ppc`): no single move keeps every shape, but one
    move on each line does. Each step moves one inserted closer to an earlier place on its
    own line, the nearest to the line's end that leaves no more impossible shapes (the
    fewest) and reads and agrees with the indentation as well; when the shapes are all
    possible after at most _STEPS such moves, that is the repair found (a guess: several
    closers mid-line)."""
    def problems(trial):
        vt = virtual(text, chunk, trial)
        j = judged(text, chunk, trial)
        if not j.reads or j.forms != best.forms or j.disagreements > best.disagreements:
            return None
        return len(shape_problems(text, vt, dialect, _edit_points(vt, trial)))

    current, left = edits, problems(edits)
    if not left:
        return []
    for _ in range(_STEPS):
        step = None
        for idx, e in enumerate(current):
            if e["start"] != e["end"] or not in_trail(text, chunk, e):
                continue
            others = current[:idx] + current[idx + 1:]
            line_start = text.rfind("\n", 0, e["start"]) + 1
            spots = [t for t in chunk if line_start <= t.start and t.end < e["start"]
                     and t.code not in "([{pd"][-_PAIR_SPOTS:]
            for t in reversed(spots):
                trial = sorted(others + [{"start": t.end, "end": t.end, "text": e["text"]}],
                               key=lambda x: (x["start"], x["end"]))
                n = problems(trial)
                # as many problems may be left after one step (`(sequential? x) :seq`
                # leaves the `cond` odd until the next line's closer moves too)
                if n is not None and n <= left and (step is None or n < step[0]):
                    step = (n, trial)
                    break          # the nearest to this line's end
        if step is None:
            return []
        left, current = step
        if not left:
            return [current]
    return []


_EARLIER_LINES = 3     # code lines before an inserted closer's own that may take it instead


def _earlier_line_moves(text, chunk, edits, best: Judged, dialect) -> list:
    """Repairs that move one inserted closer to the end of one of the few code lines before
    its own and leave no impossible shape, though one more line then disagrees with the
    indentation: the author's indentation was loose there (`[s key\n    (. X (f s key`:
    a body indented past its parameter vector, which the indentation then keeps open).
    Only a guess can come of it: the shapes overrule the indentation."""
    found = []
    for idx, e in enumerate(edits):
        if e["start"] != e["end"]:
            continue
        others = edits[:idx] + edits[idx + 1:]
        # its code line in the chunk (as _trail_spots counts them)
        own = sum(1 for t in chunk[1:] if t.first and t.start < e["start"])
        for line in range(own - 1, max(-1, own - 1 - _EARLIER_LINES), -1):
            # nobody ends a line with a Clojure `[` and writes the vector's elements on the
            # lines after it (one line of clojure.core's, pprint's, test's... sources does):
            # a `[` ending a line is most likely `[]`, a parameter vector with none
            for p in _trail_spots(text, chunk, line,
                                  after_opener="[" if dialect == CLOJURE else False):
                if p >= e["start"]:
                    continue
                trial = sorted(others + [{"start": p, "end": p, "text": e["text"]}],
                               key=lambda x: (x["start"], x["end"]))
                if trial not in found and _fits(text, chunk, trial, best, dialect,
                                                max_bad=best.disagreements + 1) is not None:
                    found.append(trial)
    return found


def _count_problem(known, n: int, source: str) -> str | None:
    """A call with n arguments of a function that takes known = (fewest, most or None)."""
    if known is None:
        return None
    lo, hi = known
    if lo <= n and (hi is None or n <= hi):
        return None
    want = f"{lo}" if hi == lo else f"{lo}+" if hi is None else f"{lo}-{hi}"
    return f"takes {want} argument(s) by {source}, has {n}"


def _heads(text, chunk, openers: str = "(") -> dict:
    """{end: text} of the first atom of each list (or of each list, vector and map with
    openers="([{"), unquoted or not (`(,name ...)`): where a closer leaves a call of nothing
    but its operator."""
    return {t.end: text[t.start:t.end] for before, prev, t in _triples(chunk)
            if t.code == "a" and prev is not None and
            (prev.code in openers or (prev.code == "p" and before and before.code in openers))}


def _triples(tokens):
    """Each token with the two before it (None where there are none)."""
    return zip([None, None] + tokens[:-2], [None] + tokens[:-1], tokens)


def _shapes_decide(text, chunk, chosen: list, dialect, closers, broken=()) -> bool:
    """Is a repair that the shapes chose (one closer moved mid-line because the indentation's
    placement breaks a form's shape) still what everything else says: its other edits in
    closer trails, and no other trail placement of any edit that fits as well? Not when the
    closer moved right after a list's operator to mend another form than that list: `(setf
    (waitqueue-name) (semaphore-queue semaphore newval))` keeps setf's pairs, but a call of
    nothing but its operator is where a dropped closer seldom stood (`_open_tail_ties` says
    so too), and closers the damage took from further along the line, which one move cannot
    put back, are likelier. `(sorted-map) m` for `(sorted-map m` mends the list itself.
    broken: the shape problems of the indentation's placement."""
    moved = [e for e in chosen if not in_trail(text, chunk, e)]
    if len(moved) > 1:
        return False
    heads = _heads(text, chunk)
    if any(e["start"] in heads and not any(p.startswith(f"({heads[e['start']]} ")
                                           for p in broken) for e in moved):
        return False
    best = judged(text, chunk, chosen)
    return not _trail_rivals(text, chunk, chosen, best, dialect, closers)


def _same_line_moves(text, chunk, edits, best: Judged, dialect, closers,
                     after_opener: bool = False, after: int = -1) -> list:
    """Each repair that moves one inserted closer of `edits` to an earlier place on its line
    and reads, agrees with the indentation as well as `best` and leaves no impossible shape.
    after_opener: the places right after an opener that a space follows, and only those
    (0.1% of the forms in SBCL's, Guile's and Clojure's sources have one).
    after: only places after the token starting there, or right after it."""
    found = []
    for idx, e in enumerate(edits):
        if e["start"] != e["end"]:
            continue
        others = edits[:idx] + edits[idx + 1:]
        line_start = text.rfind("\n", 0, e["start"]) + 1
        # from the line's first token, unless the closer sits on a line of its own
        lo = line_start if text[line_start:e["start"]].strip() else \
            text.rfind("\n", 0, max(0, line_start - 1)) + 1
        # not right after an opener unless asked: a dropped closer seldom left `()` behind
        spots = [t.end for t in chunk
                 if lo <= t.start and after <= t.start and t.end < e["start"]
                 and (t.code in "([{") == after_opener
                 and (not after_opener or text[t.end:t.end + 1] in (" ", "\t"))]
        for p in spots:
            for ch in closers:
                trial = sorted(others + [{"start": p, "end": p, "text": ch}],
                               key=lambda x: (x["start"], x["end"]))
                if trial not in found and _fits(text, chunk, trial, best, dialect,
                                                max_bad=best.disagreements) is not None:
                    found.append(trial)
    return found
