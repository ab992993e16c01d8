"""One reading of a Lisp text, computed once and shared: routing, form splitting, validation,
repair, indentation, the delimiter scan and the CST all start from it.

    r = read(text, dialect)        # a `Reading`; the same object for the same (text, dialect)
    r.tokens, r.state              # the lexer's tokens and end state (`lexer.tokenize`)
    r.partner[j]                   # the token index of the closer of opener j, or of the
                                   # opener of closer j; -1 when it has none
    r.unclosed                     # openers still open at the end, innermost last
    r.depths[j]                    # how many lists are open just before token j
    r.delimiters                   # the indexes of the opener and closer tokens, in order
    r.spans                        # (start, end) of the complete top-level forms before the
                                   # first problem (prefixes belong to their form);
                                   # r.form_tokens the same as (first, last) token indexes
    r.delimiter_problems           # (token, rank, code, opener) of every MISMATCH,
                                   # UNMATCHED_CLOSE and MISSING_DATUM, in text order;
                                   # r.first_problem the first as (code, token, opener)
    r.problems                     # `Problem`s: wrong, extra or missing closers, reader
                                   # errors, unterminated tokens, with positions (see validate)
    r.lines                        # the `LineIndex` of the text

How closers pair: a closer closes the innermost list still open, whatever its kind; a wrong
kind pairs all the same (and is a MISMATCH problem), a closer with nothing open pairs with
nothing (UNMATCHED_CLOSE). The first problem in the text is the one a Lisp reader stops at;
`validate` reports it, and counts forms only before it.

Positions: lines are 1-based, columns are 1-based and count characters (code points), so a
tab is one column. That is the one column rule of every line:column lispshell reports.
Indentation, which compares what a person sees, uses `LineIndex.width`: the visual width
of the line before an offset with tabs to the next multiple of 8. It is a width, not a
position, and nothing reports it as a column.

Readings are cached (the last 8, and fewer when they are large: 4 million characters in all,
the newest always kept) by (text, dialect), so a press of Enter that routes, validates,
splits and indents the same text lexes it once, and a tool that validates then parses a file
reads it once. A `Reading` is never changed after `read` returns it: treat it as a value.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from itertools import accumulate, compress, count
from operator import add
from threading import Lock

from lispshell.syntax.dialects import CL, CLOJURE, CLOSER_OF, OPENER_OF, SCHEME, resolve_dialect
from lispshell.syntax.dialects import DELIM_OF_CHAR as DELIM_OF
from lispshell.syntax.lexer import CODE, LexState, TokenList, _fast, spliced, tokenize

# Delimiter token codes (see lexer.CODE_KIND) are the characters themselves, so the tables
# of dialects.py serve: CLOSER_OF, OPENER_OF, DELIM_OF (char -> paren | bracket | brace).
NAME_OF = {"(": "parenthesis", "[": "bracket", "{": "brace",
           ")": "parenthesis", "]": "bracket", "}": "brace"}
OPENERS = "([{"
CLOSERS = ")]}"
TRIVIA = ";b"                           # comment codes: not data, not delimiters
DATUM_CODES = frozenset("axAsScC")     # token codes that are a whole datum by themselves
MAX_ERRORS = 20
# token code -> 1 for a delimiter, else 0: `compress` over these bytes picks the delimiters
# in C (token codes are ASCII)
_DELIM_MASK = str.maketrans({**{c: "\x00" for c in range(128)},
                             **{ord(c): "\x01" for c in "()[]{}"}})
_DEPTH_DELTA = {"(": 1, "[": 1, "{": 1}


# ---- positions ---------------------------------------------------------------------------------

class LineIndex:
    """Offsets <-> 1-based lines and 1-based character columns for one text (see the module
    docstring for the column rule), and the visual `width` indentation compares."""

    __slots__ = ("text", "_starts", "_known")

    # A call on a text never seen asks the lines of a few offsets (the form it read or edited):
    # counting the newlines from the nearest line already known costs far less than the table
    # of every line start (a millisecond on a big file), which is built once that many were
    # asked, or when something needs every line.
    PROBES = 32

    def __init__(self, text: str):
        self.text = text
        self._starts = None
        self._known: dict = {}      # line -> its start, for the lines asked before the table

    @property
    def starts(self) -> list:
        """Offsets where each line starts (computed on first use)."""
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return self._starts

    def _line_and_start(self, offset: int) -> tuple[int, int]:
        if self._starts is None and len(self._known) < self.PROBES and offset >= 0:
            line, start = 1, 0
            for known_line, known_start in list(self._known.items()):
                if start < known_start <= offset:
                    line, start = known_line, known_start
            text = self.text
            nl = text.rfind("\n", start, offset)
            if nl >= 0:
                line += text.count("\n", start, nl + 1)
                start = nl + 1
            self._known[line] = start
            return line, start
        starts = self.starts
        i = bisect.bisect_right(starts, offset) - 1
        return i + 1, starts[i]

    def line(self, offset: int) -> int:
        return self._line_and_start(offset)[0]

    def line_col(self, offset: int) -> tuple[int, int]:
        line, start = self._line_and_start(offset)
        return line, offset - start + 1

    def line_start(self, line: int) -> int:
        if self._starts is None and (line in self._known or line == 1):
            return self._known.get(line, 0)
        return self.starts[line - 1]

    def line_end(self, line: int) -> int:
        """Offset of the line's newline (or of the end of text), `\\r` excluded."""
        start = self.line_start(line)
        end = self.text.find("\n", start)
        if end < 0:
            end = len(self.text)
        if end > start and self.text[end - 1] == "\r":
            end -= 1
        return end

    def line_text(self, line: int) -> str:
        start = self.line_start(line)
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def width(self, offset: int) -> int:
        """The visual width of the line before `offset`, tabs to the next multiple of 8."""
        return visual_width(self.text[self._line_and_start(offset)[1]:offset])


def visual_width(s: str) -> int:
    """The width of `s` (a piece of one line) on screen, tabs to the next multiple of 8."""
    if "\t" not in s:
        return len(s)
    col = 0
    for ch in s:
        col = (col // 8 + 1) * 8 if ch == "\t" else col + 1
    return col


# ---- problems ------------------------------------------------------------------------------------

@dataclass
class Problem:
    """One syntax problem. Lines and columns are 1-based, offsets 0-based."""

    code: str            # UNCLOSED | UNMATCHED_CLOSE | MISMATCH | UNTERMINATED_STRING |
                         # UNTERMINATED_COMMENT | UNTERMINATED_SYMBOL | INCOMPLETE |
                         # MISSING_DATUM | BAD_DISPATCH | BAD_CHARACTER
    message: str         # names other places (the opener...), never its own: whoever shows it
                         # puts line:col in front
    offset: int
    line: int
    col: int
    opener_offset: int | None = None
    opener_line: int | None = None
    opener_col: int | None = None
    expected: str | None = None      # paren | bracket | brace
    found: str | None = None
    suggest_offset: int | None = None
    suggest_line: int | None = None
    suggest_col: int | None = None

    @property
    def incomplete(self) -> bool:
        """True for problems that only mean "the text stops early"."""
        return self.code in EARLY_END

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


EARLY_END = frozenset({"UNCLOSED", "UNTERMINATED_STRING", "UNTERMINATED_COMMENT",
                       "UNTERMINATED_SYMBOL", "INCOMPLETE"})


# ---- the reading ---------------------------------------------------------------------------------

class Reading:
    """What `read` answers (see the module docstring). Parts nobody asks for cost nothing."""

    def __init__(self, text: str, dialect: str, tokens: TokenList, state: LexState):
        self.text, self.dialect, self.tokens, self.state = text, dialect, tokens, state
        self._lines = self._depths = self._problems = self._prefixes = None
        self._walk()

    @property
    def codes(self) -> str:
        return self.tokens.codes

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    # -- the one walk --------------------------------------------------------------------------

    def _walk(self) -> None:
        """Pair every closer with its opener, note the delimiter problems, group the top level.

        Only delimiter tokens are visited one by one; the top level is then walked jumping
        over each list to its closer, so a file of large forms costs one step per form."""
        codes = self.tokens.codes
        n = len(codes)
        self.delimiters = delimiters = list(
            compress(count(), codes.translate(_DELIM_MASK).encode("latin-1")))
        partner, bad, stack = _fast.pair(codes) if _fast is not None \
            else pair_delimiters(codes, delimiters)
        for j in self.prefixes:           # a prefix or #_ right before a closer
            j += 1
            while j < n and codes[j] in TRIVIA:
                j += 1
            if j < n and codes[j] in CLOSERS:
                bad.append((j, 0, "MISSING_DATUM", None))
        # the reader stops at the first; at one closer a missing datum is what it sees first
        self.delimiter_problems = sorted(bad) if len(bad) > 1 else bad
        self.partner = partner
        self.unclosed = stack
        self._top_level()

    def _top_level(self) -> None:
        """Depth-0 tokens grouped into forms: prefixes wait for their datums, `#_` discards
        one. Stops at the first delimiter problem, as a reader does."""
        codes, partner = self.tokens.codes, self.partner
        stop = self.delimiter_problems[0][0] if self.delimiter_problems else len(codes)
        frames: list = []        # [first token, datums still needed, discards?]
        forms: list = []         # (first token, last token)
        j = 0
        while j < stop:
            c = codes[j]
            if c in OPENERS:
                last = partner[j]
                if last < 0 or last >= stop:
                    break                   # open up to the end (or the problem)
            elif c in TRIVIA or c in CLOSERS:
                j += 1
                continue
            elif c in "pd":
                arity = 1 if c == "d" else _prefix_arity(self.tokens.text_of(j), self.dialect)
                frames.append([j, arity, c == "d"])
                j += 1
                continue
            else:
                last = j
            first = j
            while frames:
                frame = frames[-1]
                frame[1] -= 1
                if frame[1] > 0:
                    break
                frames.pop()
                if frame[2]:                # a discarded datum is not a datum
                    break
                first = frame[0]
            else:
                forms.append((first, last))
            j = last + 1
        self.form_tokens = forms
        self.pending_prefixes = frames

    # -- derived, on first use -------------------------------------------------------------------

    @property
    def prefixes(self) -> list[int]:
        """The indexes of the prefix and `#_` tokens, in order."""
        if self._prefixes is None:
            codes = self.tokens.codes
            found = _positions(codes, "p")
            if "d" in codes:
                found = sorted(found + _positions(codes, "d"))
            self._prefixes = found
        return self._prefixes

    @property
    def spans(self) -> list[tuple[int, int]]:
        """(start, end) offsets of the complete top-level forms before the first problem."""
        starts, ends = self.tokens.starts, self.tokens.ends
        return [(starts[a], ends[b]) for a, b in self.form_tokens]

    @property
    def depths(self) -> list[int]:
        """How many lists are open just before each token (closers that pair with nothing
        leave it unchanged)."""
        if self._depths is None:
            partner = self.partner
            deltas = [_DEPTH_DELTA.get(c, 0) if c not in CLOSERS else
                      (-1 if partner[j] >= 0 else 0) for j, c in enumerate(self.tokens.codes)]
            self._depths = [0] + list(accumulate(deltas))[:-1] if deltas else []
        return self._depths

    @property
    def first_problem(self):
        """(code, closer token, opener token or None) of the first delimiter problem, or None."""
        if not self.delimiter_problems:
            return None
        j, _, code, o = self.delimiter_problems[0]
        return code, j, o

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def problems(self) -> list[Problem]:
        """Every problem a reader meets, earliest first, "stops early" ones last (at most
        MAX_ERRORS): what `validate` reports."""
        if self._problems is None:
            self._problems = _problems(self)
        return self._problems

    def closer_hint(self, o: int) -> int:
        return closer_hint(self.text, self.tokens, self.lines, o)

    def opener_info(self, o: int) -> dict:
        start = self.tokens.starts[o]
        line, col = self.lines.line_col(start)
        return {"delim": DELIM_OF[self.tokens.codes[o]], "offset": start, "line": line,
                "col": col}


def pair_delimiters(codes: str, delimiters: list) -> tuple[list, list, list]:
    """(partner, bad, unclosed) of `Reading._walk`: each delimiter's partner (-1: none), the
    MISMATCH and UNMATCHED_CLOSE problems as (token, 1, code, opener), and the openers left
    open. `_scan.pair` is the same loop in C (lexer.py's fast path)."""
    partner = [-1] * len(codes)
    stack: list = []
    push, pop = stack.append, stack.pop
    bad: list = []
    if "[" in codes or "{" in codes or "]" in codes or "}" in codes:
        opener_of = OPENER_OF
        for j in delimiters:
            c = codes[j]
            if c in "([{":
                push(j)
            elif stack:
                o = pop()
                partner[o] = j
                partner[j] = o
                if codes[o] != opener_of[c]:
                    bad.append((j, 1, "MISMATCH", o))
            else:
                bad.append((j, 1, "UNMATCHED_CLOSE", None))
    else:       # parentheses only (all CL, most Scheme): no closer of the wrong kind,
        for j in delimiters:            # and a quarter faster without looking
            if codes[j] == "(":
                push(j)
            elif stack:
                o = pop()
                partner[o] = j
                partner[j] = o
            else:
                bad.append((j, 1, "UNMATCHED_CLOSE", None))
    return partner, bad, stack


def _positions(codes: str, code: str) -> list[int]:
    """Where `code` is in `codes`: from the lengths of the pieces between, summed in C (a
    regex search of a character class looks at every token, three times slower)."""
    return list(map(add, accumulate(map(len, codes.split(code)[:-1])), count()))


def _prefix_arity(tok: str, dialect: str) -> int:
    """How many datums a prefix token takes: #+feature form and ^meta form take two."""
    if dialect == CL and tok in ("#+", "#-"):
        return 2
    if dialect == CLOJURE and tok in ("^", "#^"):
        return 2
    return 1


# ---- read, cached ------------------------------------------------------------------------------

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 8
_CACHE_CHARS = 4_000_000   # a reading holds several times its text: keep few large ones
_CACHE_LOCK = Lock()       # the REPL reads from the editor's threads too


def read(text: str, dialect: str, state: LexState | None = None) -> Reading:
    """The reading of `text` in `dialect` (a name `resolve_dialect` takes). Never raises for
    any text; the same object comes back for the same text while it is in the cache.

    state: where the lexer stopped at the end of the text before this one (a document read
    in slices, `lexer.tokenize`); pairs and problems are then those of this slice alone."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    dialect = resolve_dialect(dialect)
    key = (text, dialect, state)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    with _CACHE_LOCK:
        lexed = _LEXED.pop(key, None)
    reading = None if lexed or state is not None else _reread(text, dialect)
    if reading is None:
        tokens, end_state = lexed or tokenize(text, dialect, state)
        reading = Reading(text, dialect, tokens, end_state)
    _keep(key, reading)
    return reading


def _keep(key, reading: Reading) -> None:
    with _CACHE_LOCK:
        _CACHE[key] = reading
        held = sum(len(k[0]) for k in _CACHE)
        while len(_CACHE) > 1 and (len(_CACHE) > _CACHE_SIZE or held > _CACHE_CHARS):
            held -= len(_CACHE.popitem(last=False)[0][0])


def lex(text: str, dialect: str) -> tuple[TokenList, LexState]:
    """`tokenize(text, dialect)`, shared with `read`: the tokens of the cached reading of
    `text`, or lexed now and kept for the `read` of it that comes next (a tool checks a file's
    nesting on its tokens before it reads the file, and a big file lexes in 20 ms)."""
    dialect = resolve_dialect(dialect)
    key = (text, dialect, None)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit.tokens, hit.state
        if key in _LEXED:
            return _LEXED[key]
    reading = _reread(text, dialect)
    if reading is not None:
        _keep(key, reading)
        return reading.tokens, reading.state
    lexed = tokenize(text, dialect)
    with _CACHE_LOCK:
        _LEXED.clear()                  # one text waits for its read, no more
        _LEXED[key] = lexed
    return lexed


_LEXED: dict = {}          # (text, dialect, None) -> what `lex` lexed, until `read` takes it


# ---- a changed text read again from the reading of the text before -----------------------------
# A file changed by someone else (an editor, another agent) between two tool calls is a new
# text, mostly the old one: the same beginning and end around a changed region. Its reading is
# the old reading's tokens and pairs before the top-level form where the change begins, the
# changed region lexed and paired afresh, and the old reading's after it (shifted), whenever
# that is provably what reading the new text whole gives; otherwise it is read whole.
#
# Why the pieces are exact: the lexer matches each token from where the one before ended, on
# the text from there on (no pattern looks behind), so
# - after the change, once a token of the new text starts where a token of the old one did
#   (shifted), in the common end, every later token is the old one shifted;
# - before it, old tokens that end before a top-level form that starts before the change are
#   matched on text the two share: a pattern looks one character past its match, or scans
#   for a closing `"`, `|#`, `|`, `!#` to the end of the text, and when such a scan fails the
#   token runs to the end of the text (an unterminated string...), so it is no such token;
#   the one exception is Guile's `#{...}#` (a failing scan leaves a short `#{` token), and
#   Scheme text holding `#{` is read whole;
# - the changed region is lexed as a slice of the new text that runs one token past the
#   point where the old tokens resume: the same scans, cut short at the slice's end, can only
#   run into that last token, so a token starting exactly there proves the lexing resumed.
# Only clean readings are spliced (no delimiter problem, nothing left open, no prefix waiting
# for its datum): a top-level form then starts with nothing open, so the pairs and the
# top-level forms of the three pieces are those of the whole.

REREAD_MIN = 32_768     # shorter texts are read whole in a few milliseconds


def _reread(text: str, dialect: str) -> Reading | None:
    """The reading of `text`, spliced from a cached reading of a text that differs from it
    in one region (see above), or None (then read it whole)."""
    if len(text) < REREAD_MIN or (dialect == SCHEME and "#{" in text):
        return None
    with _CACHE_LOCK:
        olds = [r for (t, d, st), r in reversed(_CACHE.items())
                if d == dialect and st is None and len(t) >= REREAD_MIN]
    best, best_cost = None, len(text) // 4        # a region over a quarter: read it whole
    for old in olds:
        if not _clean(old):
            continue
        p = _common_prefix(old.text, text)
        s = _common_suffix(old.text, text, min(len(old.text), len(text)) - p)
        cost = len(text) - p - s
        if cost < best_cost:
            best, best_cost = (old, p, s), cost
    if best is None:
        return None
    reading = _splice(*best, text)
    return reading if reading is not None and _clean(reading) else None


def _clean(r: Reading) -> bool:
    return not (r.delimiter_problems or r.unclosed or r.pending_prefixes) and r.state == CODE


def _common_prefix(a: str, b: str) -> int:
    """len of the longest common prefix (slices compare in C; a binary search of them)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """len of the longest common suffix, at most `limit`."""
    na, nb = len(a), len(b)
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[na - mid:na - lo] == b[nb - mid:nb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _splice(old: Reading, p: int, s: int, text: str) -> Reading | None:
    """The reading of `text`, which is old.text with [p, len(old.text) - s) replaced."""
    tokens, forms = old.tokens, old.form_tokens
    start_of = tokens.start_of
    shift = len(text) - len(old.text)
    # Left: the old tokens before the last top-level form that starts before the change.
    i = bisect.bisect_left(forms, p, key=lambda f: start_of(f[0])) - 1
    a = forms[i][0] if i >= 0 else 0
    e = tokens.ends[a - 1] if a > 0 else 0
    # Right: the old tokens from the first top-level form that starts in the common end.
    j = bisect.bisect_left(forms, len(old.text) - s, key=lambda f: start_of(f[0]), lo=i + 1)
    n = len(tokens.codes)
    if j < len(forms):
        b = forms[j][0]
        resume = start_of(b) + shift                # where the old tokens resume in text
        piece = text[e:tokens.ends[b] + shift]      # ...and one token past it
    else:
        b, resume, piece = n, len(text), text[e:]
    mid, mid_state = tokenize(piece, dialect=old.dialect)
    if b < n:
        k = bisect.bisect_left(mid.ends, resume - e + 1)
        if k >= len(mid.codes) or mid.start_of(k) != resume - e:
            return None                             # the lexing did not resume there
        state = old.state
    else:
        k, state = len(mid.codes), mid_state
    m = Reading(piece, old.dialect, mid.head(k), CODE)
    if m.delimiter_problems or m.unclosed or m.pending_prefixes:
        return None
    gap = text[e + (mid.ends[k - 1] if k else 0):resume]
    d = a + k - b                                   # how far the right part's indexes move
    r = Reading.__new__(Reading)
    r.text, r.dialect, r.state = text, old.dialect, state
    r.tokens = spliced(tokens, a, mid, k, gap, b, text, old.dialect)
    r._lines = r._depths = r._problems = r._prefixes = None
    delimiters = old.delimiters
    da, db = bisect.bisect_left(delimiters, a), bisect.bisect_left(delimiters, b)
    right = old.partner[b:]
    if d:       # only delimiters have partners: the other tokens' -1 stay
        for x in delimiters[db:]:
            right[x - b] += d
    r.partner = (old.partner[:a] + [x + a if x >= 0 else -1 for x in m.partner] + right)
    r.delimiters = (delimiters[:da] + [x + a for x in m.delimiters]
                    + (list(map(d.__add__, delimiters[db:])) if d else delimiters[db:]))
    r.delimiter_problems, r.unclosed, r.pending_prefixes = [], [], []
    r.form_tokens = (forms[:max(i, 0)] + [(f + a, t + a) for f, t in m.form_tokens]
                     + [(f + d, t + d) for f, t in forms[j:]])
    return r


# ---- problems with positions and messages ------------------------------------------------------

def _problems(r: Reading) -> list[Problem]:
    text, tokens, lines, state = r.text, r.tokens, r.lines, r.state
    errors = _reader_errors(text, r.dialect, tokens, lines)
    first = r.first_problem
    if first is not None:
        errors.append(_structural_problem(text, tokens, lines, *first))
        return _finish(errors)
    last_code = tokens.codes[-1] if tokens.codes else ""
    if state.unterminated:
        errors.append(_unterminated(text, tokens, lines, state, last_code))
    elif r.pending_prefixes and not r.unclosed:
        j = r.pending_prefixes[-1][0]
        tok = text[tokens.starts[j]:tokens.ends[j]]
        errors.append(_problem("INCOMPLETE", f"Unexpected end of input after {_q(tok)}: "
                               f"it needs a datum to apply to", tokens.starts[j], lines))
    if r.unclosed:
        errors.append(_unclosed_problem(text, tokens, lines, r.unclosed))
    return _finish(errors)


def _finish(errors: list) -> list:
    """Earliest problem first (the reader stops there); "stops early" problems last."""
    errors.sort(key=lambda p: (p.code == "UNCLOSED", p.offset))
    del errors[MAX_ERRORS:]
    return errors


def _problem(code, message, offset, lines: LineIndex, **extra) -> Problem:
    line, col = lines.line_col(offset)
    return Problem(code, message, offset, line, col, **extra)


def _q(token: str) -> str:
    """A token quoted for a message, verbatim (repr would double every backslash)."""
    return "'" + token + "'"


def _structural_problem(text, tokens, lines, code, j, o) -> Problem:
    start = tokens.starts[j]
    found = text[start:tokens.ends[j]]
    line, col = lines.line_col(start)
    if code == "UNMATCHED_CLOSE":
        return _problem(code, f"unmatched close {NAME_OF[found[-1]]} {found!r}: nothing is "
                        f"open here (remove it)", start, lines,
                        found=DELIM_OF[found[-1]])
    if code == "MISSING_DATUM":
        prev = j - 1
        while tokens.codes[prev] in TRIVIA:
            prev -= 1
        p = text[tokens.starts[prev]:tokens.ends[prev]]
        pl, pc = lines.line_col(tokens.starts[prev])
        return _problem(code, f"{_q(found)} follows {_q(p)} at line {pl}, column {pc}, which "
                        f"needs a datum to apply to",
                        start, lines, opener_offset=tokens.starts[prev], opener_line=pl,
                        opener_col=pc)
    opener = text[tokens.starts[o]:tokens.ends[o]]
    ol, oc = lines.line_col(tokens.starts[o])
    want = CLOSER_OF[opener[-1]]
    return _problem(code, f"{found!r} does not match {opener!r} opened at line {ol}, column "
                    f"{oc} (expected {want!r})", start, lines,
                    opener_offset=tokens.starts[o], opener_line=ol, opener_col=oc,
                    expected=DELIM_OF[want], found=DELIM_OF[found[-1]],
                    suggest_offset=start, suggest_line=line, suggest_col=col)


def _unclosed_problem(text, tokens, lines, stack) -> Problem:
    o = stack[-1]
    opener = text[tokens.starts[o]:tokens.ends[o]]
    ol, oc = lines.line_col(tokens.starts[o])
    delim = DELIM_OF[opener[-1]]
    where = closer_hint(text, tokens, lines, o)
    sl, sc = lines.line_col(where)
    return _problem("UNCLOSED", f"Unexpected end of input - unclosed {NAME_OF[opener[-1]]}",
                    tokens.starts[o], lines, opener_offset=tokens.starts[o], opener_line=ol,
                    opener_col=oc, expected=delim, suggest_offset=where, suggest_line=sl,
                    suggest_col=sc)


def closer_hint(text: str, tokens: TokenList, lines: LineIndex, o: int) -> int:
    """Where the closer of the opener at token `o` most likely belongs, from indentation.

    The form's body is the lines indented deeper than its opener. The first later line that
    starts a token at or left of the opener's column begins something else, so the closer
    goes right after the last token before that line (comments excluded). Without such a
    line, after the last token of the text.
    """
    codes, starts, ends = tokens.codes, tokens.starts, tokens.ends
    _, ocol = lines.line_col(starts[o])
    line_starts = lines.starts
    last_end = ends[o]
    prev_line = lines.line_col(starts[o])[0]
    for j in range(o + 1, len(codes)):
        s = starts[j]
        line = bisect.bisect_right(line_starts, s)
        if line != prev_line and codes[j] not in TRIVIA:
            # first token on a new line: does it start left of (or at) the opener's column?
            first_on_line = text[line_starts[line - 1]:s].strip(" \t,") == ""
            if first_on_line and s - line_starts[line - 1] + 1 <= ocol:
                return last_end
        if codes[j] not in TRIVIA:
            last_end = ends[j]
            prev_line = bisect.bisect_right(line_starts, ends[j] - 1) if ends[j] > s else line
    return last_end


def _unterminated(text, tokens, lines, state, last_code) -> Problem:
    start = tokens.starts[-1]
    line, col = lines.line_col(start)
    mode = state.mode
    if mode == "string":
        what, code = "string", "UNTERMINATED_STRING"
    elif mode in ("block_comment", "hash_bang"):
        what, code = "block comment", "UNTERMINATED_COMMENT"
    elif mode == "symbol":
        what, code = "|symbol|", "UNTERMINATED_SYMBOL"
    else:
        what, code = "character or escape", "INCOMPLETE"
    return _problem(code, f"Unexpected end of input - unterminated {what} (it starts here)",
                    start, lines, opener_offset=start,
                    opener_line=line, opener_col=col)


# --- reader errors beyond delimiters -----------------------------------------------------------

_SCHEME_HASH_ATOM = re.compile(r"#(?:t|f|true|false|nil|:.*|[xXbBoOdDeEiI].*|\*[01]*)\Z", re.S)
_CL_CHAR_NAMES = {
    "space", "newline", "tab", "page", "rubout", "linefeed", "return", "backspace", "nul",
    "null", "bell", "escape", "esc", "altmode", "delete", "del", "sp", "nl", "lf", "cr", "bs",
    "ht", "ff", "vt", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "so", "si", "dle", "dc1",
    "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub", "fs", "gs", "rs", "us",
}
_SCHEME_CHAR_NAMES = {
    "space", "newline", "tab", "nul", "null", "alarm", "backspace", "linefeed", "vtab", "page",
    "return", "esc", "escape", "delete", "altmode", "rubout", "sp", "nl", "np", "bel", "bs",
    "ht", "lf", "vt", "ff", "cr", "del", "eof", "soh", "stx", "etx", "eot", "enq", "ack",
    "so", "si", "dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub",
    "fs", "gs", "rs", "us",
}
_CLOJURE_CHAR_NAMES = {"newline", "space", "tab", "formfeed", "backspace", "return"}


def _bad_char_name(name: str, dialect: str) -> bool:
    """True when `name` (what follows #\\ or \\) is not a character the reader knows."""
    if len(name) <= 1:
        return False
    if dialect == CLOJURE:
        if name in _CLOJURE_CHAR_NAMES or re.fullmatch(r"u[0-9a-fA-F]{4}", name):
            return False
        m = re.fullmatch(r"o([0-7]{1,3})", name)
        return not (m and int(m.group(1), 8) <= 0o377)
    low = name.lower()
    if dialect == SCHEME:
        return not (low in _SCHEME_CHAR_NAMES or re.fullmatch(r"x[0-9a-f]+|[0-7]{3}|u\+[0-9a-f]+",
                                                              low))
    if low in _CL_CHAR_NAMES or re.fullmatch(r"u\+?[0-9a-f]+", low):
        return False
    try:
        unicodedata.lookup(name.replace("_", " "))
        return False
    except KeyError:
        return True


def _reader_errors(text, dialect, tokens: TokenList, lines: LineIndex) -> list:
    out = []
    codes = tokens.codes
    for m in re.finditer("[xc]", codes):
        j = m.start()
        tok = tokens.text_of(j)            # offsets are summed only if something is wrong
        if codes[j] == "c":
            name = tok[2:] if tok.startswith("#\\") else tok[1:]
            if _bad_char_name(name, dialect):
                out.append(_problem("BAD_CHARACTER", f"unknown character name {_q(tok)}",
                                    tokens.starts[j], lines))
        elif tok == "#" and tokens.ends[j] == len(text):
            out.append(_problem("INCOMPLETE", "Unexpected end of input after '#'",
                                tokens.starts[j], lines))
        elif not (dialect == SCHEME and _SCHEME_HASH_ATOM.match(tok)):
            end = tokens.ends[j]
            shown = tok if len(tok) > 1 else "# followed by " + (
                repr(text[end]) if end < len(text) else "end of input")
            out.append(_problem("BAD_DISPATCH", f"bad # dispatch: {shown} is not "
                                f"{'Common Lisp' if dialect == CL else dialect.capitalize()} "
                                f"syntax", tokens.starts[j], lines))
        if len(out) >= MAX_ERRORS:
            break
    return out
