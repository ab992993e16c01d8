"""A dialect-aware Lisp lexer with offsets, driven by one compiled regex per dialect.

Stable API (others build on it; keep it):

    tokens, state = tokenize(text, dialect, state=None)

- `dialect` is a syntax dialect ("cl", "scheme", "clojure") or anything `resolve_dialect`
  accepts ("sbcl", "guile", "clj", "foo.lisp"...).
- Each `Token` is a NamedTuple `(kind, start, end, delim)`: `text[start:end]` is the token;
  `delim` is "paren" | "bracket" | "brace" for `open`/`close`, else None.
- Kinds: `open` (also prefixed openers `#(` `#{` `#?(` `#?@(` `#:ns{` `#u8(`...), `close`,
  `string` (also Clojure `#"regex"`), `comment` (`;` to end of line, Clojure `#!`, Guile
  `#!r6rs`-style directives), `block_comment` (`#|...|#`, nested; Guile `#!...!#`),
  `datum_comment` (the `#;` / `#_` prefix; the next datum is commented out), `char` (`#\(`,
  `#\space`, Clojure `\(` `\newline`), `atom` (symbols, numbers, keywords, `#t`, `#:foo`,
  CL `|a)b|`, and unknown `#x` dispatches, which `validate` reports), `prefix` (`'` `` ` ``
  `,` `,@` `#'` `@` `~` `~@` `^` `#^` `#+` `#-` `#.` `#=` tagged literals `#inst`...).
  Whitespace (and Clojure's commas) is not emitted: it is the gaps between tokens.
- `state` is a `LexState` saying where the text stopped: `mode` is "code", "string",
  "block_comment" (with `depth`), "hash_bang" (Guile `#!...`), "line_comment" or "symbol"
  (inside CL/Scheme `|...|`); `state.unterminated` is True when the text stops inside a string,
  block comment, `|symbol|` or right after a lone `\\`. Pass it back with the next chunk of the
  same document to resume: tokens of the next call are relative to that chunk, and a token
  that began in the previous chunk starts at 0. `LexState.to_dict()` / `from_dict()` give a
  JSON form for tools.

Why a regex: one `finditer` over a master pattern whose alternatives are capturing groups
(`m.lastindex` says which) runs the inner loops in C; a char-by-char Python loop is 3-4x slower.
Nested block comments (which a regex cannot count) are the only construct handled in Python,
and only when a comment really nests.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from lispshell.syntax.dialects import CL, CLOJURE, SCHEME, resolve_dialect


class Token(NamedTuple):
    kind: str
    start: int
    end: int
    delim: str | None = None


@dataclass(frozen=True)
class LexState:
    """Where a chunk of text stopped, so that the next chunk can be lexed as its continuation."""

    mode: str = "code"   # code | string | block_comment | hash_bang | line_comment | symbol
    depth: int = 0       # block comment nesting depth (mode block_comment)
    carry: str = ""      # an unfinished lexeme that the next chunk may extend (e.g. "#", "#\\")

    @property
    def unterminated(self) -> bool:
        """True when the text stops inside a token that needs more text to be readable."""
        if self.mode in ("string", "block_comment", "hash_bang", "symbol"):
            return True
        return self.mode == "code" and self.carry in ("#\\", "\\")

    def to_dict(self) -> dict:
        return {"mode": self.mode, "depth": self.depth, "carry": self.carry}

    @classmethod
    def from_dict(cls, data) -> "LexState":
        """Rebuild a state from `to_dict()` output; ValueError if it is not one."""
        if not isinstance(data, dict):
            raise ValueError("lexer state must be an object {mode, depth, carry}")
        mode, depth, carry = data.get("mode", "code"), data.get("depth", 0), data.get("carry", "")
        if mode not in _MODE_OPENER:
            raise ValueError(f"lexer state mode must be one of {', '.join(_MODE_OPENER)}")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 10_000:
            raise ValueError("lexer state depth must be an integer from 0 to 10000")
        if not isinstance(carry, str) or len(carry) > MAX_CARRY:
            raise ValueError(f"lexer state carry must be a string of at most {MAX_CARRY} chars")
        if mode == "block_comment" and depth < 1:
            depth = 1
        return cls(mode, depth, carry)


CODE = LexState()
MAX_CARRY = 256  # longer unfinished atoms are not carried: splitting an atom changes no structure

# What to put in front of the next chunk to put the lexer back in a mode.
_MODE_OPENER = {"code": "", "string": '"', "block_comment": "#|", "hash_bang": "#!",
                "line_comment": ";", "symbol": "|"}

# ---------------------------------------------------------------------------------------------
# The master patterns. Each alternative is one capturing group (no other capturing groups), so
# `m.lastindex` names the alternative; `_TAGS[dialect][i]` says what it is. Frequent tokens
# come first. Every non-blank character is matched by some alternative (the last one is a
# catch-all), so the gaps finditer skips are exactly the whitespace.

_STRING = r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"'
_STRING_OPEN = r'"[\s\S]*'                      # only reached when the string never closes
_BLOCK_FLAT = r'#\|[^|#]*(?:(?:\|(?!#)|#(?!\|))[^|#]*)*\|#'   # a block comment without nesting
_BAR = r'\|[^|\\]*(?:\\[\s\S][^|\\]*)*\|'     # |a symbol with ) inside|

_CL_C = r"""[^\s()'";`,|\\]"""                  # CL atom constituents (#, [ ] { } included)
_CL_ATOM_REST = rf"""(?:{_CL_C}+|\\[\s\S]|{_BAR})*"""
_CL = [
    ("open:paren", r"\("),
    ("close:paren", r"\)"),
    ("atom", rf"""(?:[^\s()'";`,|\\#]|\\[\s\S]|{_BAR}){_CL_ATOM_REST}"""),
    ("comment", r";[^\n]*"),
    ("string", _STRING),
    ("prefix", r"'|`|,@|,"),
    ("open:paren", r"#\d*\("),
    ("char", rf"""#\\[\s\S][^\s()'";`,]*"""),
    ("prefix", r"#'|#[+.-]|#\d+=|#\d*[aA]|#[sScCpP]"),
    ("block_comment", _BLOCK_FLAT),
    ("block_nested", r"#\|"),
    ("atom", rf"""#(?:[:bBoOxX*]|\d+[rR#*]){_CL_ATOM_REST}"""),
    ("char_open", r"#\\\Z"),
    ("hash_other", r"""#[^\s()'";`,]*"""),
    ("string_open", _STRING_OPEN),
    ("symbol_open", rf"""(?:{_CL_C}+|\\[\s\S])*(?:\|[\s\S]*|\\\Z)"""),
    ("atom", r"\S"),
]

# Guile reader directives: `#!r6rs` is a directive, any other `#!` starts a `#!...!#` comment.
_DIRECTIVES = ("curly-infix-and-bracket-lists", "curly-infix", "no-fold-case", "fold-case",
               "r6rs", "r7rs")
_SC_C = r"""[^\s()\[\]";'`,]"""                   # Guile: { } are constituents, | only at start
_SCHEME = [
    ("open:paren", r"\("),
    ("close:paren", r"\)"),
    ("atom", rf"""[^\s()\[\]";'`,|#]{_SC_C}*|{_BAR}"""),
    ("open:bracket", r"\["),
    ("close:bracket", r"\]"),
    ("comment", r";[^\n]*"),
    ("string", _STRING),
    ("prefix", r"'|`|,@|,|#'|#`|#,@|#,"),
    ("datum_comment", r"#;"),
    ("char", rf"""#\\[\s\S]{_SC_C}*"""),
    ("open:paren", r"#(?:\d+(?:@-?\d+)*)?(?:vu8|[usfc]\d+|b)?\("),
    ("block_comment", _BLOCK_FLAT),
    ("block_nested", r"#\|"),
    ("comment", rf"#!(?:{'|'.join(_DIRECTIVES)})(?!{_SC_C})"),
    ("block_comment", r"#![\s\S]*?!#"),
    ("hash_bang_open", r"#![\s\S]*"),
    ("atom", r"#\{(?:[^}]|\}(?!#))*\}#"),
    ("char_open", r"#\\\Z"),
    ("hash_other", rf"""#{_SC_C}*"""),
    ("string_open", _STRING_OPEN),
    ("symbol_open", r"\|[\s\S]*"),
    ("atom", r"\S"),
]

_CJ_C = r"""[^\s,()\[\]{}";@^`~\\]"""            # Clojure: ' and # are non-terminating
_CLOJURE = [
    ("open:paren", r"\("),
    ("close:paren", r"\)"),
    ("atom", rf"""[^\s,()\[\]{{}}";@^`~\\'#]{_CJ_C}*"""),
    ("open:bracket", r"\["),
    ("close:bracket", r"\]"),
    ("open:brace", r"\{"),
    ("close:brace", r"\}"),
    ("comment", r";[^\n]*"),
    ("string", _STRING),
    ("prefix", r"'|`|~@|~|@|\^|#'|#\^|#="),
    ("char", rf"""\\[\s\S]{_CJ_C}*"""),
    ("open:paren", r"#\(|#\?@?\("),
    ("open:brace", rf"""#\{{|#::?{_CJ_C}*\{{"""),
    ("datum_comment", r"#_"),
    ("string", "#" + _STRING),
    ("comment", r"#![^\n]*"),
    ("atom", rf"""##{_CJ_C}*"""),
    ("prefix", rf"""#[a-zA-Z]{_CJ_C}*"""),      # tagged literals: #inst "...", #uuid "..."
    ("string_open", "#?" + _STRING_OPEN),
    ("char_open", r"\\\Z"),
    ("hash_other", rf"""#{_CJ_C}*"""),
    ("atom", r"\S"),
]

_TABLES = {CL: _CL, SCHEME: _SCHEME, CLOJURE: _CLOJURE}
_BLANK = {CL: r"\s*", SCHEME: r"\s*", CLOJURE: r"[\s,]*"}
_NEST = re.compile(r"#\||\|#")

# Public kind and delim of each internal tag.
_PUBLIC = {
    "atom": ("atom", None), "comment": ("comment", None), "string": ("string", None),
    "prefix": ("prefix", None), "char": ("char", None), "block_comment": ("block_comment", None),
    "datum_comment": ("datum_comment", None), "block_nested": ("block_comment", None),
    "char_open": ("char", None), "hash_other": ("atom", None), "string_open": ("string", None),
    "symbol_open": ("atom", None), "hash_bang_open": ("block_comment", None),
}
for _d in ("paren", "bracket", "brace"):
    _PUBLIC[f"open:{_d}"] = ("open", _d)
    _PUBLIC[f"close:{_d}"] = ("close", _d)


class _Compiled(NamedTuple):
    pattern: re.Pattern
    tags: tuple          # group index -> internal tag
    kinds: tuple         # group index -> public kind
    delims: tuple        # group index -> delim or None
    nested: frozenset    # group indexes of a #| that needs nesting counted in Python


def _compile(dialect: str) -> _Compiled:
    table = _TABLES[dialect]
    body = "|".join(f"({rx})" for _, rx in table)
    pattern = re.compile(f"{_BLANK[dialect]}(?:{body}|\\Z)")
    assert pattern.groups == len(table), dialect   # no stray capturing group in an alternative
    tags = (None,) + tuple(tag for tag, _ in table)
    kinds = (None,) + tuple(_PUBLIC[tag][0] for tag, _ in table)
    delims = (None,) + tuple(_PUBLIC[tag][1] for tag, _ in table)
    nested = frozenset(i for i, tag in enumerate(tags) if tag == "block_nested")
    return _Compiled(pattern, tags, kinds, delims, nested)


COMPILED = {d: _compile(d) for d in _TABLES}
def nested_block_end(text: str, pos: int, depth: int = 1) -> tuple[int, int, bool]:
    """Scan a `#|` block comment from `pos` (just after its opener) at nesting `depth`.

    Returns (end, depth, last_char_free): `end` is just past the closing `|#` (depth 0) or
    len(text) when the comment does not close; `last_char_free` says whether the last character
    of the text was not part of a `#|` or `|#` pair (so it may pair with the next chunk).
    """
    last = pos
    for m in _NEST.finditer(text, pos):
        depth += 1 if m.group() == "#|" else -1
        last = m.end()
        if depth == 0:
            return last, 0, False
    return len(text), depth, last != len(text)


def tokenize(text: str, dialect: str, state: LexState | None = None) -> tuple[list[Token], LexState]:
    """Tokens of `text` and the state the lexer stopped in (see the module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    dialect = resolve_dialect(dialect)
    if state is None or state == CODE:
        tokens, _, end_state = scan(text, dialect)
        return tokens, end_state
    if not isinstance(state, LexState):
        raise TypeError("state must be a LexState (or None)")
    prefix = _resume_prefix(state, dialect)
    if not text:
        return [], state
    tokens, _, end_state = scan(prefix + text, dialect)
    shift = len(prefix)
    out = []
    for i, tok in enumerate(tokens):
        if tok.end > shift or i == 0:
            out.append(Token(tok.kind, max(0, tok.start - shift), tok.end - shift, tok.delim))
    return out, end_state


def _resume_prefix(state: LexState, dialect: str) -> str:
    if state.mode == "block_comment":
        if dialect == CLOJURE:
            raise ValueError("Clojure has no #| block comments")
        return "#|" * max(1, state.depth) + state.carry
    if state.mode == "hash_bang" and dialect != SCHEME:
        raise ValueError("#!...!# block comments are Guile (scheme) syntax")
    if state.mode == "symbol" and dialect == CLOJURE:
        raise ValueError("Clojure has no |symbols|")
    return _MODE_OPENER[state.mode] + state.carry


def scan(text: str, dialect: str) -> tuple[list[Token], list[str], LexState]:
    """The lexer proper: (tokens, internal tag of each token, end state). `dialect` resolved.

    The tags are finer than kinds: "hash_other" is an unknown `#` dispatch, "char_open" a lone
    `#\\` at the end, "string_open" an unterminated string... (see the pattern tables).
    """
    comp = COMPILED[dialect]
    finditer, kinds, delims, tags = comp.pattern.finditer, comp.kinds, comp.delims, comp.tags
    nested = comp.nested
    tokens: list[Token] = []
    tag_list: list[str] = []
    append, tag_append = tokens.append, tag_list.append
    new = tuple.__new__
    pos, n = 0, len(text)
    depth, free_last = 0, False
    while pos < n:
        for m in finditer(text, pos):
            i = m.lastindex
            if i is None:          # only blanks were left
                pos = n
                break
            tag_append(tags[i])
            if i not in nested:
                append(new(Token, (kinds[i], m.start(i), m.end(), delims[i])))
                continue
            start = m.start(i)      # a #| that the flat pattern could not close: count nesting
            pos, depth, free_last = nested_block_end(text, m.end())
            append(Token("block_comment", start, pos))
            break
        else:
            pos = n
    return tokens, tag_list, _end_state(text, tokens, tag_list, dialect, depth, free_last)


def _end_state(text, tokens, tag_list, dialect, depth, free_last) -> LexState:
    """The mode the text stops in, judged from its last token."""
    if not tokens or tokens[-1].end != len(text):
        return CODE
    tag = tag_list[-1]
    tok = text[tokens[-1].start:]
    if tag == "block_nested":
        return LexState("block_comment", depth, text[-1] if free_last and text[-1] in "|#" else "") if depth else CODE
    if tag == "string_open":
        return LexState("string", 0, "\\" if _escape_pending(tok) else "")
    if tag == "symbol_open":
        if dialect == CL and "|" not in tok:          # a lone \ at the very end
            return LexState("code", 0, "\\")
        return LexState("symbol", 0, "\\" if _escape_pending(tok) else "")
    if tag == "hash_bang_open":
        if any(("#!" + d).startswith(tok) for d in _DIRECTIVES):   # "#!r6" may still become "#!r6rs"
            return LexState("code", 0, tok)
        return LexState("hash_bang", 0, "!" if len(tok) > 2 and tok.endswith("!") else "")
    if tag == "comment" and not (dialect == SCHEME and tok.startswith("#!")):
        return LexState("line_comment")
    if tag in ("atom", "char", "char_open", "prefix", "datum_comment", "hash_other", "comment"):
        return LexState("code", 0, tok) if len(tok) <= MAX_CARRY else CODE
    return CODE


def _escape_pending(tok: str) -> bool:
    """True when `tok` ends with an odd run of backslashes (the next char is escaped)."""
    return (len(tok) - len(tok.rstrip("\\"))) % 2 == 1
