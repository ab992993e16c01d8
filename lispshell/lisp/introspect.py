"""Introspection code for the live-image tools (describe, symbol_value, macroexpand, apropos).

The rule: the model's text is never spliced into code. It travels as an escaped string
literal, and the Lisp reads it itself with read-time evaluation off:
- CL: `*read-eval*` nil AND a copy of the standard readtable in which `#` starts nothing
  (no `#.`, no `#S(...)` constructors, no user reader macros); unqualified names are read
  into a throw-away package and looked up with `find-symbol`, so nothing new is interned.
- Clojure: `*read-eval*` false AND `clojure.edn/read` (no `#=`, no `#java.Class[...]`
  constructors, no user tagged-literal readers); names are looked up in `ns-map` /
  `ns-interns`, never resolved in a way that loads or initialises a class.
- Guile: `read` has no read-time evaluation, but `read-hash-extend` can add `#` syntaxes that
  run code, so names and forms are read with `%read-hash-procedures` emptied, and `#` is
  refused in a name anyway except for the `#{...}#` symbol syntax.
`macroexpand` reads a whole form the same way (CL: the standard readtable without `#S`,
Clojure: no user data readers), then expands it: expanding runs the image's macros, which is
what the tool is for.
The result must be one symbol and nothing else (`foo) (delete-file "x") (` is refused).

The helpers are defined once per image, in their own package / namespace / module, by code
that is itself passed as a string (loaded from a string stream), so the person's package
never gets our symbols. The code is in lispshell/lisp/image/*-introspect.*, and the form that
calls it is each dialect's `introspect_form` (lispshell/lisp/dialects.py).

Answers come back on standard output: a first line `@@lispshell <status> <length>`, then the
text, `length` characters (code points) of it, which end the output. The answer is taken by
position and length (the first header whose length reaches exactly to the end), never by
searching for the last marker: a value or docstring that holds marker text is only text.
"""
from __future__ import annotations

from lispshell.lisp.dialects import get_dialect, string_literal

MARK = "@@lispshell "

__all__ = ["MARK", "call_form", "parse_answer", "string_literal"]


def call_form(lisp: str, function: str, *args: str) -> str:
    """One form that defines the helpers if this image lacks them, then calls `function` on
    `args`, each passed as a string literal (never spliced as code)."""
    return get_dialect(lisp).introspect_form(function, *args)


def parse_answer(output: str) -> tuple[str, str] | None:
    """(status, text) from the helper's output, or None when it printed no whole answer.

    The helper's answer is the last thing it prints: the first header whose declared length
    reaches exactly to the end of the output is it. Marker text inside the answer (a forged
    header in a value or a docstring) comes after the real header and is part of its text."""
    at = output.find(MARK)
    while at >= 0:
        nl = output.find("\n", at)
        if nl < 0:
            return None
        status, _, length = output[at + len(MARK):nl].rpartition(" ")
        if length.isdigit() and nl + 1 + int(length) == len(output) and status:
            return status.strip(), output[nl + 1:]
        at = output.find(MARK, at + 1)
    return None
