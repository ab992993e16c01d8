r"""A dialect-aware Lisp lexer with offsets, driven by one compiled regex per dialect.

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
and only when a comment really nests. Where the install built it, `_scan.c` scans the plain
tokens (blanks, delimiters, plain atoms, strings, `;` comments) in C and asks these regexes for
every other one (`scan_fast`): the same tokens, without a Python string per token. The regex
path (`scan_regex`) is the reference it is tested against.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import itemgetter, sub
from typing import NamedTuple

from lispshell.syntax.dialects import CL, CLOJURE, DELIM_OF_CHAR, SCHEME, resolve_dialect


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
    ("char", r"""#\\[\s\S][^\s()'";`,]*"""),
    ("prefix", r"#'|#[+.-]|#\d+=|#\d*[aA]|#[sScCpP]"),
    ("block_comment", _BLOCK_FLAT),
    ("block_nested", r"#\|"),
    ("atom", rf"""#(?:[:bBoOxX*]|\d+[rR#*]){_CL_ATOM_REST}"""),
    ("char_open", r"#\\\Z"),
    ("hash_other", r"""#[^\s()'";`,]*"""),
    ("string_open", _STRING_OPEN),
    ("symbol_open", r"\|[\s\S]*|\\\Z"),
    ("atom", r"\S"),
]

# Guile reader directives: `#!r6rs` is a directive, any other `#!` starts a `#!...!#` comment.
_DIRECTIVES = ("curly-infix-and-bracket-lists", "curly-infix", "no-fold-case", "fold-case",
               "r6rs", "r7rs")
# Guile: { } are constituents; ' ` , # are special only at the start of a token. `|` is an
# ordinary constituent, as Guile's reader has it by default (`|x` is the symbol "|x"; R7RS
# |symbols| need (read-enable 'r7rs-symbols) there).
_SC_C = r"""[^\s()\[\]";]"""
_SCHEME = [
    ("open:paren", r"\("),
    ("close:paren", r"\)"),
    ("atom", rf"""[^\s()\[\]";'`,#]{_SC_C}*"""),
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
_BLANK = {CL: r"\s*+", SCHEME: r"\s*+", CLOJURE: r"[\s,]*+"}   # possessive: never given back
_NEST = re.compile(r"#\||\|#")

# ---------------------------------------------------------------------------------------------
# Token codes: one character per token, so that a whole text's token kinds are one string that
# `validate` can scan quickly. Internal tag -> code; code -> public kind and delim.
_TAG_CODE = {
    "open:paren": "(", "open:bracket": "[", "open:brace": "{",
    "close:paren": ")", "close:bracket": "]", "close:brace": "}",
    "atom": "a", "comment": ";", "string": "s", "prefix": "p", "char": "c",
    "block_comment": "b", "block_nested": "b", "datum_comment": "d",
    "hash_other": "x",      # an unknown # dispatch (lexed as an atom; validate reports it)
    "char_open": "C",       # a lone #\ (Clojure \) at the very end
    "string_open": "S",     # a string that never closes
    "symbol_open": "A",     # a |symbol that never closes, or a lone \ at the very end
    "hash_bang_open": "B",  # a Guile #! comment that never closes
}
CODE_KIND = {"(": "open", "[": "open", "{": "open", ")": "close", "]": "close", "}": "close",
             "a": "atom", "x": "atom", "A": "atom", ";": "comment", "s": "string", "S": "string",
             "p": "prefix", "c": "char", "C": "char", "b": "block_comment",
             "B": "block_comment", "d": "datum_comment"}
CODE_DELIM = DELIM_OF_CHAR      # delimiter codes are the delimiter characters

# The code of a token from its first character, valid for every token except those starting
# with "#" (looked at again) and the last token (which may be unterminated).
_FIRST_CODE = {
    CL: {"(": "(", ")": ")", '"': "s", ";": ";", "'": "p", "`": "p", ",": "p"},
    SCHEME: {"(": "(", ")": ")", "[": "[", "]": "]", '"': "s", ";": ";", "'": "p", "`": "p",
             ",": "p"},
    CLOJURE: {"(": "(", ")": ")", "[": "[", "]": "]", "{": "{", "}": "}", '"': "s", ";": ";",
              "'": "p", "`": "p", "~": "p", "@": "p", "^": "p", "\\": "c"},
}


# Tokens starting with "#" whose code the first two characters decide (the rest are matched
# again). "#\\" alone at the end is "C", handled apart.
_HASH2_CODE = {
    CL: {"#'": "p", "#(": "(", "#\\": "c", "#+": "p", "#-": "p", "#.": "p", "#:": "a",
         "#x": "a", "#X": "a", "#b": "a", "#B": "a", "#o": "a", "#O": "a", "#*": "a",
         "#p": "p", "#P": "p", "#s": "p", "#S": "p", "#c": "p", "#C": "p", "#a": "p",
         "#A": "p"},
    SCHEME: {"#(": "(", "#\\": "c", "#'": "p", "#`": "p", "#,": "p", "#;": "d", "#t": "x",
             "#:": "x", "#x": "x", "#X": "x", "#e": "x", "#i": "x", "#o": "x", "#d": "x"},
    CLOJURE: {"#(": "(", "#{": "{", "#_": "d", "#'": "p", "##": "a", "#^": "p", "#=": "p",
              "#!": ";", **{"#" + c: "p" for c in "abcdefghijklmnopqrstuvwxyz"
                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}},
}
# Blank characters: what `\s` matches (str.isspace), plus Clojure's commas.
_BLANKS = ("\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
           "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_BLANK_CHARS = {CL: _BLANKS, SCHEME: _BLANKS, CLOJURE: _BLANKS + ","}


# The C fast path's character classes (_scan.c), per dialect: what an ASCII character does
# where a token may start and inside a plain atom, as the regexes above have it. Others:
# `;` comment, `"` string, blanks (_BLANK_CHARS), and the rest plain atom characters.
# tests/test_lexer_fast.py holds the fast path to the regex path.
_FAST_CLASSES = {
    CL: {"delim": "()", "inner": "#", "escape": "|\\", "other": "'`,"},
    SCHEME: {"delim": "()[]", "inner": "'`,#", "escape": "", "other": ""},
    CLOJURE: {"delim": "()[]{}", "inner": "'#", "escape": "", "other": "@^`~\\"},
}
_FAST_CLASS_OF = {"blank": 0, "atom": 1, "inner": 2, "delim": 3, "comment": 4, "string": 5,
                  "other": 6, "escape": 7}


def _fast_classes(dialect: str) -> bytes:
    classes = [_FAST_CLASS_OF["atom"]] * 128
    roles = {**_FAST_CLASSES[dialect], "comment": ";", "string": '"',
             "blank": "".join(c for c in _BLANK_CHARS[dialect] if c < "\x80")}
    for role, chars in roles.items():
        for char in chars:
            classes[ord(char)] = _FAST_CLASS_OF[role]
    return bytes(classes)


class _Compiled(NamedTuple):
    pattern: re.Pattern  # blanks, then one capturing group per alternative (or the end)
    bulk: re.Pattern     # one group: the blanks before a token and the token, for findall
    codes: tuple         # group index -> token code
    tags: tuple          # group index -> internal tag
    first: re.Pattern    # matches a first character that is not in _FIRST_CODE and not "#"
    first_table: list    # str.translate table: BMP character -> code ("a", or _FIRST_CODE)
    hash2: dict          # _HASH2_CODE of the dialect
    blanks: str          # _BLANK_CHARS of the dialect
    fast: bytes          # _fast_classes of the dialect, for the C fast path
    stops: tuple         # group index -> True where the C fast path hands over (nesting #|)


def _compile(dialect: str) -> _Compiled:
    table = _TABLES[dialect]
    body = "|".join(f"({rx})" for _, rx in table)
    pattern = re.compile(f"{_BLANK[dialect]}(?:{body}|\\Z)")
    assert pattern.groups == len(table), dialect   # no stray capturing group in an alternative
    flat = "|".join(f"(?:{rx})" for _, rx in table)
    bulk = re.compile(f"({_BLANK[dialect]}(?:{flat}))|{_BLANK[dialect]}\\Z")
    tags = (None,) + tuple(tag for tag, _ in table)
    codes = (None,) + tuple(_TAG_CODE[tag] for tag, _ in table)
    firsts = _FIRST_CODE[dialect]
    first = re.compile("[^" + re.escape("".join(firsts) + "#") + "]")
    table = ["a"] * 0x10000              # first character -> code, "a" unless special
    for char, code in firsts.items():
        table[ord(char)] = code
    table[ord("#")] = "#"
    return _Compiled(pattern, bulk, codes, tags, first, table,
                     _HASH2_CODE[dialect], _BLANK_CHARS[dialect], _fast_classes(dialect),
                     tuple(tag == "block_nested" for tag in tags))


COMPILED = {d: _compile(d) for d in _TABLES}


class TokenList(Sequence):
    """The tokens of a text: a read-only sequence of `Token`, stored compactly.

    Kinds are computed in bulk by `tokenize`; a `Token` object is built when you index or
    iterate (building a million small objects up front costs more than lexing), and the
    offsets are summed up the first time they are asked for. `codes` holds one character per
    token (see `CODE_KIND`); `starts` and `ends` the spans; `text_of(i)` a token's text.
    """

    __slots__ = ("codes", "_starts", "_ends", "_parts", "_texts", "_blanks", "_source")

    def __init__(self, codes: str = "", starts: list | None = None, ends: list | None = None,
                 *, parts: list | None = None, texts: list | None = None, blanks: str = "",
                 source: str = ""):
        self.codes = codes
        self._starts, self._ends = starts, ends
        # parts: each token with the blanks before it; texts, if given, the same stripped
        self._parts, self._texts, self._blanks, self._source = parts, texts, blanks, source
        if parts is None and starts is None:
            self._starts, self._ends = [], []

    @property
    def ends(self) -> list:
        if self._ends is None:
            self._ends = list(accumulate(map(len, self._parts)))
        return self._ends

    @property
    def starts(self) -> list:
        if self._starts is None:
            texts = self._texts
            if texts is None:
                texts = map(str.lstrip, self._parts, repeat(self._blanks)) if self._blanks \
                    else map(str.lstrip, self._parts)
            self._starts = list(map(sub, self.ends, map(len, texts)))
        return self._starts

    def start_of(self, index: int) -> int:
        """starts[index], without summing every start (a few milliseconds on a big text)
        when they are not summed yet."""
        if self._starts is not None:
            return self._starts[index]
        ends = self._ends if self._ends is not None else self.ends
        if self._texts is not None:     # (asked for every node of a tree: kept short)
            return ends[index] - len(self._texts[index])
        return ends[index] - len(self.text_of(index))

    def text_of(self, index: int) -> str:
        """The text of token `index`."""
        if self._starts is not None and self._ends is not None:
            return self._source[self._starts[index]:self._ends[index]]
        if self._texts is not None:
            return self._texts[index]
        if self._parts is not None:
            return self._parts[index].lstrip(self._blanks or None)
        return self._source[self.starts[index]:self.ends[index]]

    def pieces(self) -> tuple[list, list]:
        """(parts, texts): each token with the blanks before it, and without them; the parts
        joined give the text up to the last token's end."""
        if self._parts is not None:
            texts = self._texts
            if texts is None:
                texts = list(map(self.text_of, range(len(self.codes))))
            return self._parts, texts
        source, starts, ends = self._source, self.starts, self.ends
        parts = list(map(source.__getitem__, map(slice, [0] + ends[:-1], ends)))
        return parts, list(map(source.__getitem__, map(slice, starts, ends)))

    def head(self, k: int) -> "TokenList":
        """The first k tokens."""
        parts, texts = self.pieces()
        return TokenList(self.codes[:k], parts=parts[:k], texts=texts[:k], blanks=self._blanks,
                         source=self._source)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.codes)))]
        code = self.codes[index]
        return Token(CODE_KIND[code], self.starts[index], self.ends[index], CODE_DELIM.get(code))

    def __iter__(self):
        codes = self.codes
        return map(_make_token, zip(map(CODE_KIND.__getitem__, codes), self.starts, self.ends,
                                    map(CODE_DELIM.get, codes)))

    def __eq__(self, other) -> bool:
        if isinstance(other, TokenList):
            return (self.codes, self.starts, self.ends) == (other.codes, other.starts, other.ends)
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __add__(self, other):
        return list(self) + list(other)

    def __radd__(self, other):
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"TokenList({list(self)!r})"


def spliced(old: TokenList, a: int, mid: TokenList, k: int, gap: str, b: int,
            source: str, dialect: str) -> TokenList:
    """old's tokens before a, mid's first k, then old's from b (the blanks before old token b
    being `gap` now), as the tokens of `source`: the caller checked that the three pieces are
    what lexing `source` whole gives (reading.read's re-read of a changed text)."""
    codes = old.codes[:a] + mid.codes[:k] + old.codes[b:]
    if old._parts is None:      # offsets (the C fast path's): mid's moved to where it starts
        e = old.ends[a - 1] if a else 0        # ...and the right part's by the text's change
        shift = len(source) - len(old._source)
        return TokenList(codes, _joined(old.starts, a, mid.starts, k, e, b, shift),
                         _joined(old.ends, a, mid.ends, k, e, b, shift), source=source)
    old_parts, old_texts = old.pieces()
    mid_parts, mid_texts = mid.pieces()
    right_parts = [gap + old_texts[b]] + old_parts[b + 1:] if b < len(old.codes) else []
    return TokenList(codes,
                     parts=old_parts[:a] + mid_parts[:k] + right_parts,
                     texts=old_texts[:a] + mid_texts[:k] + old_texts[b:],
                     blanks=_BLANK_CHARS[dialect] if dialect == CLOJURE else "", source=source)


def _joined(old: list, a: int, mid: list, k: int, e: int, b: int, shift: int) -> list:
    return old[:a] + list(map(e.__add__, mid[:k])) + (list(map(shift.__add__, old[b:]))
                                                      if shift else old[b:])


def _make_token(fields: tuple) -> Token:
    return tuple.__new__(Token, fields)


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


def tokenize(text: str, dialect: str, state: LexState | None = None) -> tuple[TokenList, LexState]:
    """Tokens of `text` and the state the lexer stopped in (see the module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    dialect = resolve_dialect(dialect)
    if state is None or state == CODE:
        return scan(text, dialect)
    if not isinstance(state, LexState):
        raise TypeError("state must be a LexState (or None)")
    prefix = _resume_prefix(state, dialect)
    if not text:
        return TokenList(), state
    tokens, end_state = scan(prefix + text, dialect)
    shift = len(prefix)
    keep = [i for i, end in enumerate(tokens.ends) if end > shift or i == 0]
    return TokenList("".join(tokens.codes[i] for i in keep),
                     [max(0, tokens.starts[i] - shift) for i in keep],
                     [tokens.ends[i] - shift for i in keep]), end_state


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


def scan(text: str, dialect: str) -> tuple[TokenList, LexState]:
    """The lexer proper, for a resolved dialect: (tokens, end state). The C fast path when it
    was built (`pip install` builds it where a C compiler is), else the regex path."""
    if _fast is not None and text:
        return scan_fast(text, dialect)
    return scan_regex(text, dialect)


def scan_fast(text: str, dialect: str) -> tuple[TokenList, LexState]:
    """`scan_regex`'s tokens from the C loop (_scan.c), which asks the regex for every token
    but the plain ones; a `#|` comment that nests hands the rest to `_scan_loop`."""
    comp = COMPILED[dialect]
    codes, starts, ends, stopped = _fast.scan(text, comp.fast, comp.pattern.match, comp.codes,
                                              comp.stops)
    if stopped >= 0:
        more_codes, more_starts, more_ends, state = _scan_loop(text, dialect, stopped)
        return TokenList(codes + more_codes, starts + more_starts, ends + more_ends,
                         source=text), state
    if not codes:
        return TokenList(), CODE
    tokens = TokenList(codes, starts, ends, source=text)
    if ends[-1] != len(text):           # blanks after the last token: nothing is left open
        return tokens, CODE
    tag = comp.tags[comp.pattern.match(text, starts[-1]).lastindex]
    return tokens, _end_state(text, starts[-1], tag, dialect, 0, False)


def scan_regex(text: str, dialect: str) -> tuple[TokenList, LexState]:
    """The lexer's reference path, in regexes alone.

    Fast path: one `findall` gives each token with the blanks before it; codes come from each
    token's first character (or two, for "#" tokens); only a few "#" tokens and the last one
    are matched again, on their own text. Offsets are summed later, when asked for. A `#|`
    comment that nests hands the rest of the text to `_scan_loop`, which counts the nesting.
    """
    comp = COMPILED[dialect]
    parts = comp.bulk.findall(text)
    while parts and not parts[-1]:
        parts.pop()                 # trailing blanks at the end
    if not parts:
        return TokenList(), CODE
    blanks = comp.blanks
    # str.lstrip() without arguments strips exactly what \s matches, and is faster
    texts = list(map(str.lstrip, parts))
    firsts = "".join(map(itemgetter(0), texts))
    if dialect == CLOJURE and "," in firsts:
        # Clojure's commas are blanks too: strip them where they were left (a token never
        # starts with one). Twice as fast as lstrip(blanks) on every part.
        pieces, done = [], 0
        for m in _COMMA.finditer(firsts):
            j = m.start()
            texts[j] = texts[j].lstrip(blanks)
            pieces += (firsts[done:j], texts[j][0])
            done = j + 1
        firsts = "".join(pieces) + firsts[done:]
    codes = firsts.translate(comp.first_table)
    if not firsts.isascii() and max(firsts) > "\uffff":   # the table covers the BMP only
        codes = comp.first.sub("a", firsts).translate(comp.first_table)
    hash2, again = comp.hash2, comp.pattern.match
    pieces, done = [], 0
    last = len(texts) - 1
    tag = None
    for m in _HASH.finditer(codes):
        j = m.start()
        tok = texts[j]
        code = hash2.get(tok[:2])
        if code is None or j == last or (code == "c" and tok == "#\\"):
            i = again(tok).lastindex
            if comp.tags[i] == "block_nested":
                return _finish_with_loop(text, dialect, codes, pieces, done, j, parts, blanks)
            code = comp.codes[i]
        pieces.append(codes[done:j])
        pieces.append(code)
        done = j + 1
    pieces.append(codes[done:])
    m = again(texts[last])             # the last token may be unterminated: "abc, |sym, #\\
    tag = comp.tags[m.lastindex]
    pieces.append(comp.codes[m.lastindex])
    codes = "".join(pieces)
    codes = codes[:-2] + codes[-1]      # the last token's code, replaced
    tokens = TokenList(codes, parts=parts, texts=texts,
                       blanks=blanks if dialect == CLOJURE else "", source=text)
    end = tokens.ends[-1]               # (summed now, for whoever asks for the ends next)
    if end != len(text):                # blanks after the last token: nothing is left open
        return tokens, CODE
    return tokens, _end_state(text, end - len(texts[last]), tag, dialect, 0, False)


def _finish_with_loop(text, dialect, codes, pieces, done, j, parts, blanks):
    """Tokens 0..j-1 from the fast path, the rest (from a nesting #| at token j) by the loop."""
    head = TokenList(codes[:j], parts=parts[:j], blanks=blanks if dialect == CLOJURE else "",
                     source=text)
    start = (head.ends[-1] if j else 0) + len(parts[j]) - len(parts[j].lstrip(blanks))
    more_codes, more_starts, more_ends, state = _scan_loop(text, dialect, start)
    pieces.append(codes[done:j])
    pieces.append(more_codes)
    return TokenList("".join(pieces), head.starts + more_starts, head.ends + more_ends,
                     source=text), state


try:
    from lispshell.syntax import _scan as _fast
except ImportError:     # built without a C compiler: the regex path alone
    _fast = None

_HASH = re.compile("#")
_COMMA = re.compile(",")


def _scan_loop(text: str, dialect: str, pos: int) -> tuple[str, list, list, LexState]:
    """The slow, exact path from `pos`: one match at a time, nesting counted in Python."""
    comp = COMPILED[dialect]
    pattern, codes_of, tags = comp.pattern, comp.codes, comp.tags
    codes, starts, ends = [], [], []
    n = len(text)
    depth, free_last, tag = 0, False, None
    while pos < n:
        for m in pattern.finditer(text, pos):
            i = m.lastindex
            if i is None:          # only blanks were left
                pos = n
                break
            tag = tags[i]
            codes.append(codes_of[i])
            starts.append(m.start(i))
            if tag != "block_nested":
                ends.append(m.end())
                continue
            pos, depth, free_last = nested_block_end(text, m.end())
            ends.append(pos)
            break
        else:
            pos = n
    if not codes:
        return "", [], [], CODE
    return "".join(codes), starts, ends, _end_state(text, starts[-1], tag, dialect, depth,
                                                    free_last)


def _end_state(text: str, last_start: int, tag: str, dialect: str, depth: int,
               free_last: bool) -> LexState:
    """The mode the text stops in, judged from its last token (which starts at `last_start`)."""
    tok = text[last_start:]
    if tag != "block_nested" and not comp_fullmatch(text, last_start, dialect):
        return CODE                 # the last token does not reach the end of the text
    if tag == "block_nested":
        if not depth:
            return CODE
        return LexState("block_comment", depth, text[-1] if free_last and text[-1] in "|#" else "")
    if tag == "string_open":
        return LexState("string", 0, "\\" if _escape_pending(tok) else "")
    if tag == "symbol_open":
        if tok == "\\":             # a lone \ at the very end (CL)
            return LexState("code", 0, "\\")
        return LexState("symbol", 0, "\\" if _escape_pending(tok) else "")
    if tag == "hash_bang_open":
        if any(("#!" + d).startswith(tok) for d in _DIRECTIVES):   # "#!r6" may become "#!r6rs"
            return LexState("code", 0, tok)
        return LexState("hash_bang", 0, "!" if len(tok) > 2 and tok.endswith("!") else "")
    if tag == "comment" and not (dialect == SCHEME and tok.startswith("#!")):
        return LexState("line_comment")
    if tag in ("atom", "char", "char_open", "prefix", "datum_comment", "hash_other", "comment"):
        return LexState("code", 0, tok) if len(tok) <= MAX_CARRY else CODE
    return CODE


def comp_fullmatch(text: str, start: int, dialect: str) -> bool:
    """True when the token at `start` runs to the end of `text`."""
    m = COMPILED[dialect].pattern.match(text, start)
    return m is not None and m.end() == len(text) and m.lastindex is not None


def _escape_pending(tok: str) -> bool:
    """True when `tok` ends with an odd run of backslashes (the next char is escaped)."""
    return (len(tok) - len(tok.rstrip("\\"))) % 2 == 1
