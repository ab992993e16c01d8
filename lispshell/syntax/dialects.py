"""Dialect names and tables: which syntax a name, alias or file extension means.

Stable API (others build on it):

- `CL`, `SCHEME`, `CLOJURE`: the three syntax dialects, `"cl" | "scheme" | "clojure"`.
- `resolve_dialect(name_or_path) -> str`: maps a dialect name, a Lisp implementation name or
  alias (`sbcl`, `lisp`, `common-lisp` -> cl; `guile` -> scheme; `clj`, `edn` -> clojure), or a
  file path / extension (`foo.lisp`, `.scm`, `x.cljc`) to a syntax dialect. Anything else raises
  `ValueError` with a message that lists what is accepted.
- `DELIM_TYPES` (`paren`, `bracket`, `brace`), `OPEN_CHAR` / `CLOSE_CHAR` (type -> char),
  `DELIM_OF_CHAR` (char -> type), `CLOSER_OF` / `OPENER_OF` (char -> the matching char), and `delimiter_chars(dialect)`: the bracket characters that
  the dialect's reader treats as delimiters (in CL and Guile, `{}` are symbol constituents;
  in CL `[]` are too).
"""
from __future__ import annotations

import os

CL = "cl"
SCHEME = "scheme"
CLOJURE = "clojure"
DIALECTS = (CL, SCHEME, CLOJURE)

# Lisp implementation names and common spellings -> syntax dialect.
ALIASES = {
    "cl": CL, "common-lisp": CL, "commonlisp": CL, "common_lisp": CL, "lisp": CL, "sbcl": CL,
    "scheme": SCHEME, "guile": SCHEME, "scm": SCHEME, "r7rs": SCHEME,
    "clojure": CLOJURE, "clj": CLOJURE, "cljs": CLOJURE, "cljc": CLOJURE, "edn": CLOJURE,
    "clojurescript": CLOJURE, "babashka": CLOJURE, "bb": CLOJURE,
}

EXTENSIONS = {
    ".lisp": CL, ".cl": CL, ".asd": CL, ".lsp": CL,
    ".scm": SCHEME, ".ss": SCHEME, ".sld": SCHEME, ".sls": SCHEME,
    ".clj": CLOJURE, ".cljs": CLOJURE, ".cljc": CLOJURE, ".edn": CLOJURE, ".bb": CLOJURE,
}

DELIM_TYPES = ("paren", "bracket", "brace")
OPEN_CHAR = {"paren": "(", "bracket": "[", "brace": "{"}
CLOSE_CHAR = {"paren": ")", "bracket": "]", "brace": "}"}
CLOSER_OF = {"(": ")", "[": "]", "{": "}"}      # opener char -> its closer char
OPENER_OF = {")": "(", "]": "[", "}": "{"}      # closer char -> its opener char
DELIM_OF_CHAR = {"(": "paren", ")": "paren", "[": "bracket", "]": "bracket",
                 "{": "brace", "}": "brace"}

# The bracket characters each reader treats as delimiters (the rest are symbol constituents).
_DELIMITER_CHARS = {CL: "()", SCHEME: "()[]", CLOJURE: "()[]{}"}

# Human names, for messages.
DISPLAY_NAME = {CL: "Common Lisp", SCHEME: "Scheme", CLOJURE: "Clojure"}


def resolve_dialect(name_or_path) -> str:
    """A syntax dialect ("cl", "scheme" or "clojure") for a name, alias, extension or path."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise ValueError(f"dialect must be a string, not {type(name_or_path).__name__}")
    text = os.fspath(name_or_path).strip()
    key = text.lower()
    if key in ALIASES:
        return ALIASES[key]
    ext = key if key.startswith(".") and "/" not in key else os.path.splitext(key)[1]
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    raise ValueError(
        f"unknown dialect {text!r}: use cl, scheme or clojure (aliases: sbcl, lisp, "
        f"common-lisp, guile, clj, edn) or a file ending in "
        f"{', '.join(sorted(EXTENSIONS))}")


def delimiter_chars(dialect: str) -> str:
    """The bracket characters that are delimiters in `dialect` (already resolved)."""
    return _DELIMITER_CHARS[dialect]
