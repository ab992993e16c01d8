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

Answers come back on standard output: a first line `@@lispshell-TOKEN <status> <length>`,
then the text, `length` characters (code points) of it, then the mark again. TOKEN is new for every call and is
bound only in the calling thread (a special variable, a parameter, a dynamic var), so a thread
the person left running, printing to the same terminal, cannot write a header lispshell would
take: its text is before or after the answer, or inside it, where the closing mark no longer
follows the declared length and the answer is refused, never the answer. Marker text in a value
or a docstring comes after the real header and is part of its text.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

from lispshell.lisp.dialects import get_dialect, string_literal

MARK = "@@lispshell"

__all__ = ["MARK", "LookUp", "call_form", "parse_answer", "string_literal"]


@dataclass(frozen=True)
class LookUp:
    """One call of a look-up helper: the form to evaluate, and how to read its answer."""
    form: str
    mark: str

    def answer(self, output: str | None) -> tuple[str, str] | None:
        return parse_answer(output or "", self.mark)


def call_form(lisp: str, function: str, *args: str) -> LookUp:
    """The call of `function` on `args` (each passed as a string literal, never spliced as
    code), defining the helpers first if this image lacks them, under a fresh answer mark."""
    mark = f"{MARK}-{secrets.token_hex(8)} "
    return LookUp(get_dialect(lisp).introspect_form(function, *args, mark=mark), mark)


def parse_answer(output: str, mark: str) -> tuple[str, str] | None:
    """(status, text) after the first header with `mark`, or None when there is no whole one
    (the output was cut, or another thread's text fell inside it: the closing mark is not
    where the length says)."""
    at = output.find(mark)
    if at < 0:
        return None
    nl = output.find("\n", at)
    if nl < 0:
        return None
    status, _, length = output[at + len(mark):nl].rpartition(" ")
    if not (length.isdigit() and status):
        return None
    end = nl + 1 + int(length)
    if output[end:end + len(mark)] != mark:
        return None
    return status.strip(), output[nl + 1:end]
