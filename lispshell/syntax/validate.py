"""Is this text readable Lisp? Delimiters, strings, comments and reader errors, without a Lisp.

Stable API (others build on it; keep it):

    v = validate(text, dialect)
    v.ok          True when every form reads
    v.complete    False only when the text merely stops early (an opener still open, an
                  unterminated string / block comment / |symbol|, a trailing ' or #_): the
                  REPL keeps the editor open for more. Invalid text is complete and not ok.
    v.forms       number of complete top-level forms (before the first error)
    v.errors      list of `Problem` (message, line, col, offset, code, and for delimiter
                  problems opener_line/opener_col/opener_offset, expected/found, and
                  suggest_line/suggest_col/suggest_offset: where a missing closer most likely
                  belongs, judged from the indentation)
    v.unclosed    openers still open at the end (innermost last), as `Problem`-free dicts
    v.text        the report the validate_syntax tool answers ("✓ Syntax valid: N top-level
                  form(s)" or "✗ Syntax invalid" and the details)

    top_level_forms(text, dialect) -> list[(start, end)]   spans of complete top-level forms

Lines and columns are 1-based; columns count characters; offsets are 0-based string indexes.
Nothing is evaluated and no Lisp is needed: the dialect's lexer (`lexer.tokenize`) does it all.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass, field

from lispshell.syntax.dialects import CL, CLOJURE, SCHEME, resolve_dialect
from lispshell.syntax.lexer import TokenList, tokenize

OPENER_OF = {")": "(", "]": "[", "}": "{"}
CLOSER_OF = {"(": ")", "[": "]", "{": "}"}
NAME_OF = {"(": "parenthesis", "[": "bracket", "{": "brace",
           ")": "parenthesis", "]": "bracket", "}": "brace"}
DELIM_OF = {"(": "paren", "[": "bracket", "{": "brace", ")": "paren", "]": "bracket", "}": "brace"}
DATUM_CODES = frozenset("axAsScC")     # token codes that are a whole datum by themselves
MAX_ERRORS = 20


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
        return self.code in _EARLY_END

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


_EARLY_END = frozenset({"UNCLOSED", "UNTERMINATED_STRING", "UNTERMINATED_COMMENT",
                        "UNTERMINATED_SYMBOL", "INCOMPLETE"})


@dataclass
class Validation:
    dialect: str
    forms: int
    errors: list = field(default_factory=list)
    unclosed: list = field(default_factory=list)   # [{"delim", "offset", "line", "col"}]
    source: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def complete(self) -> bool:
        return not self.errors or not all(p.incomplete for p in self.errors)

    @property
    def text(self) -> str:
        return report(self)

    def to_dict(self) -> dict:
        return {"valid": self.ok, "complete": self.complete, "forms": self.forms,
                "errors": [p.to_dict() for p in self.errors],
                **({"unclosed": self.unclosed} if self.unclosed else {})}


class Lines:
    """Offset -> (line, col) for one text, 1-based."""

    def __init__(self, text: str):
        self.text = text
        self._starts = None

    @property
    def starts(self) -> list:
        """Offsets where each line starts (computed on first use)."""
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return self._starts

    def line_col(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1

    def line_text(self, line: int) -> str:
        start = self.starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


# ---------------------------------------------------------------------------------------------

def validate(text: str, dialect: str) -> Validation:
    """Check that `text` reads in `dialect`. Never evaluates; never raises for any text."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    dialect = resolve_dialect(dialect)
    tokens, state = tokenize(text, dialect)
    return _check(text, dialect, tokens, state)


def top_level_forms(text: str, dialect: str) -> list[tuple[int, int]]:
    """Spans (start, end) of the complete top-level forms of `text`, in order.

    A prefix belongs to its form (`'x`, `#'f`, `#+sbcl (f)`, `^:m x`); comments and datums
    discarded by `#;` / `#_` are not forms. Scanning stops at the first error.
    """
    dialect = resolve_dialect(dialect)
    tokens, state = tokenize(text, dialect)
    spans: list = []
    _scan(text, dialect, tokens, spans)
    return spans


# ---------------------------------------------------------------------------------------------

def _prefix_arity(tok: str, dialect: str) -> int:
    """How many datums a prefix token takes: #+feature form and ^meta form take two."""
    if dialect == CL and tok in ("#+", "#-"):
        return 2
    if dialect == CLOJURE and tok in ("^", "#^"):
        return 2
    return 1


class _TopLevel:
    """Groups depth-0 tokens into forms: prefixes wait for their datums, `#_` discards one."""

    def __init__(self, text, dialect, tokens, spans):
        self.text, self.dialect, self.tokens, self.spans = text, dialect, tokens, spans
        self.frames: list = []   # [start token index, datums still needed, discards?]
        self.count = 0

    def prefix(self, j: int, code: str) -> None:
        if code == "d":
            self.frames.append([j, 1, True])
        else:
            tok = self.tokens.text_of(j)
            self.frames.append([j, _prefix_arity(tok, self.dialect), False])

    def datum(self, first: int, last: int) -> None:
        """A datum spanning tokens first..last finished at depth 0."""
        frames = self.frames
        while frames:
            frame = frames[-1]
            frame[1] -= 1
            if frame[1] > 0:
                return
            frames.pop()
            if frame[2]:          # a discarded datum is not a datum
                return
            first = frame[0]
        self.count += 1
        if self.spans is not None:
            self.spans.append((self.tokens.starts[first], self.tokens.ends[last]))


def _scan(text, dialect, tokens: TokenList, spans=None):
    """Walk the tokens once: (forms, first structural problem or None, open stack, top)."""
    codes = tokens.codes
    stack: list = []          # token indexes of the openers still open
    top = _TopLevel(text, dialect, tokens, spans)
    last_sig = " "            # code of the last token that is not a comment
    problem = None
    top_start = 0
    for j, c in enumerate(codes):
        if c in "([{":
            if not stack:
                top_start = j
            stack.append(j)
        elif c in ")]}":
            if last_sig in "pd":
                problem = ("MISSING_DATUM", j, None)
                break
            if not stack:
                problem = ("UNMATCHED_CLOSE", j, None)
                break
            o = stack.pop()
            if codes[o] != OPENER_OF[c]:
                problem = ("MISMATCH", j, o)
                break
            if not stack:
                top.datum(top_start, j)
        elif c in ";b":
            continue
        elif not stack:
            if c in "pd":
                top.prefix(j, c)
            else:
                top.datum(j, j)
        last_sig = c
    return top, problem, stack


def _check(text: str, dialect: str, tokens: TokenList, state) -> Validation:
    top, problem, stack = _scan(text, dialect, tokens)
    lines = Lines(text)
    result = Validation(dialect, top.count, source=text)
    errors = result.errors
    errors.extend(_reader_errors(text, dialect, tokens, lines))
    if problem is not None:
        errors.append(_structural_problem(text, tokens, lines, *problem))
        return _finish(result)
    last_code = tokens.codes[-1] if tokens.codes else ""
    if state.unterminated:
        errors.append(_unterminated(text, dialect, tokens, lines, state, last_code))
    elif top.frames and not stack:
        j = top.frames[-1][0]
        tok = text[tokens.starts[j]:tokens.ends[j]]
        errors.append(_problem("INCOMPLETE", f"Unexpected end of input after {_q(tok)}: "
                               f"it needs a datum to apply to", tokens.starts[j], lines))
    if stack:
        errors.append(_unclosed_problem(text, tokens, lines, stack))
        result.unclosed = [_opener_info(tokens, lines, o) for o in stack]
    return _finish(result)


def _finish(result: Validation) -> Validation:
    """Earliest problem first (the reader stops there); "stops early" problems last."""
    result.errors.sort(key=lambda p: (p.code == "UNCLOSED", p.offset))
    del result.errors[MAX_ERRORS:]
    return result


def _problem(code, message, offset, lines: Lines, **extra) -> Problem:
    line, col = lines.line_col(offset)
    return Problem(code, message, offset, line, col, **extra)


def _opener_info(tokens, lines, o) -> dict:
    start = tokens.starts[o]
    line, col = lines.line_col(start)
    return {"delim": DELIM_OF[tokens.codes[o]], "offset": start, "line": line, "col": col}


def _q(token: str) -> str:
    """A token quoted for a message, verbatim (repr would double every backslash)."""
    return "'" + token + "'"


def _snippet(text: str, start: int, limit: int = 40) -> str:
    end = text.find("\n", start)
    piece = text[start:] if end < 0 else text[start:end]
    return piece if len(piece) <= limit else piece[:limit] + "..."


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
        while tokens.codes[prev] in ";b":
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


def closer_hint(text: str, tokens: TokenList, lines: Lines, o: int) -> int:
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
        if line != prev_line and codes[j] not in ";b":
            # first token on a new line: does it start left of (or at) the opener's column?
            first_on_line = text[line_starts[line - 1]:s].strip(" \t,") == ""
            if first_on_line and s - line_starts[line - 1] + 1 <= ocol:
                return last_end
        if codes[j] not in ";b":
            last_end = ends[j]
            prev_line = bisect.bisect_right(line_starts, ends[j] - 1) if ends[j] > s else line
    return last_end


def _unterminated(text, dialect, tokens, lines, state, last_code) -> Problem:
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


def _reader_errors(text, dialect, tokens: TokenList, lines: Lines) -> list:
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


# --- the report text -----------------------------------------------------------------------------

def report(v: Validation) -> str:
    """The validate_syntax report: the spec's text, plus line/column details."""
    if v.ok:
        return f"✓ Syntax valid: {v.forms} top-level form(s)"
    out = ["✗ Syntax invalid", ""]
    first = v.errors[0]
    lines = Lines(v.source)
    if first.code == "UNCLOSED":
        out.append(f"Error: {first.message}")
        n = len(v.unclosed)
        all_parens = all(u["delim"] == "paren" for u in v.unclosed)
        out.append(f"Unclosed {'parentheses' if all_parens else 'delimiters'}: {n}")
        out.append(f"Approximate location: line {first.opener_line}")
        for u in reversed(v.unclosed[-5:]):
            out.append(f"  open {_OPEN_CHAR[u['delim']]!r} at line {u['line']}, column "
                       f"{u['col']}: {_snippet(v.source, u['offset'])}")
        if n > 5:
            out.append(f"  ... and {n - 5} more")
        out.append(f"Missing {_CLOSE_CHAR[first.expected]!r} most likely belongs at line "
                   f"{first.suggest_line}, column {first.suggest_col} (from the indentation)")
    else:
        out.append(f"Error: {first.message}")
        where = f"  Stream: line {first.line}, column {first.col}: "
        out.append(where + lines.line_text(first.line))
        out.append(" " * (len(where) + first.col - 1) + "^")
        for other in v.errors[1:]:
            out.append(f"Also: line {other.line}, column {other.col}: {other.message}")
    return "\n".join(out)


_OPEN_CHAR = {"paren": "(", "bracket": "[", "brace": "{"}
_CLOSE_CHAR = {"paren": ")", "bracket": "]", "brace": "}"}
