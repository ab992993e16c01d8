"""The client-owned delimiter stack: pure functions behind the delimiter tools.

A stack is a list of "paren" | "bracket" | "brace"; its top is the last element. Nothing here
mutates its input: every operation returns a new list or raises `StackError` (whose `stack`
is the unchanged input). `scan_slice` advances a stack over a slice of text with the lexer, so
a client can send only what it wrote since the last call; the lexer state (inside a string,
a block comment...) travels with the client between calls.
"""
from __future__ import annotations

import hashlib

from lispshell.syntax.dialects import CLOSE_CHAR, DELIM_TYPES, OPEN_CHAR
from lispshell.syntax.errors import StructureError
from lispshell.syntax.lexer import LexState, tokenize

MAX_DEPTH = 100_000        # stack entries
MAX_OPS = 100_000          # entries in a batch's ops, and types in one pushMany/popMany
MAX_SLICE = 1_000_000      # characters in one docSlice


class StackError(StructureError):
    """A StructureError that also answers the client's stack, unchanged."""

    def __init__(self, code: str, message: str, stack: list, **extra):
        super().__init__(code, message, **extra)
        self.stack = stack

    def to_dict(self) -> dict:
        return {**super().to_dict(), "stack": self.stack}


def check_type(value, where: str = "type") -> str:
    if value not in DELIM_TYPES:
        raise StackError("INVALID_TYPE", f"{where} must be paren, bracket or brace, not "
                         f"{_show(value)}", [])
    return value


def check_stack(stack) -> list:
    """A validated copy of a client's stack."""
    if not isinstance(stack, list):
        raise StackError("BAD_INPUT", "stack must be an array of paren|bracket|brace", [])
    if len(stack) > MAX_DEPTH:
        raise StackError("BAD_INPUT", f"stack depth {len(stack)} exceeds the limit of "
                         f"{MAX_DEPTH} (MAX_DEPTH)", [], limit="MAX_DEPTH", max=MAX_DEPTH)
    for i, item in enumerate(stack):
        if item not in DELIM_TYPES:
            raise StackError("INVALID_TYPE", f"stack[{i}] must be paren, bracket or brace, "
                             f"not {_show(item)}", [])
    return list(stack)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def push(stack: list, kind: str) -> list:
    if len(stack) >= MAX_DEPTH:
        raise StackError("BAD_INPUT", f"push would exceed the stack depth limit of {MAX_DEPTH} "
                         f"(MAX_DEPTH)", stack, limit="MAX_DEPTH", max=MAX_DEPTH)
    return stack + [kind]


def pop(stack: list, kind: str) -> list:
    if not stack:
        raise StackError("UNDERFLOW", f"cannot pop {kind}: the stack is empty (a "
                         f"{CLOSE_CHAR[kind]!r} here would be an extra closer)", stack,
                         found=kind)
    if stack[-1] != kind:
        top = stack[-1]
        raise StackError("MISMATCH", f"the top of the stack is {top}: close it with "
                         f"{CLOSE_CHAR[top]!r}, not {CLOSE_CHAR[kind]!r}", stack,
                         expected=top, found=kind)
    return stack[:-1]


def closers(stack: list) -> str:
    """The text that closes every open delimiter of `stack`, innermost first."""
    return "".join(CLOSE_CHAR[t] for t in reversed(stack))


def scan_slice(stack: list, text: str, dialect: str, state: LexState | None = None,
               start: int = 0) -> tuple[list, LexState, list]:
    """Advance `stack` over `text` (the document from offset `start`).

    Returns (new stack, lexer state at the end of the slice, events), where events lists
    ("push"|"pop", type, document offset) for every delimiter read. Openers and closers inside
    strings, comments and character literals are not delimiters. Raises StackError (with the
    input stack unchanged, and `at`: the offset of the offending closer) on a wrong or extra
    closer.
    """
    if len(text) > MAX_SLICE:
        raise StackError("BAD_INPUT", f"docSlice.text has {len(text)} characters, over the "
                         f"limit of {MAX_SLICE} (MAX_SLICE): send smaller slices", stack,
                         limit="MAX_SLICE", max=MAX_SLICE)
    tokens, end_state = tokenize(text, dialect, state)
    new = list(stack)
    events = []
    codes, starts = tokens.codes, tokens.starts
    for j, c in enumerate(codes):
        if c in "([{":
            kind = _KIND[c]
            if len(new) >= MAX_DEPTH:
                raise StackError("BAD_INPUT", f"the slice nests deeper than the stack depth "
                                 f"limit of {MAX_DEPTH} (MAX_DEPTH)", stack, limit="MAX_DEPTH",
                                 max=MAX_DEPTH)
            new.append(kind)
            events.append(("push", kind, start + starts[j]))
        elif c in ")]}":
            kind = _KIND[c]
            at = start + starts[j]
            if not new:
                raise StackError("UNDERFLOW", f"extra {CLOSE_CHAR[kind]!r} at offset {at}: "
                                 f"nothing is open there", stack, found=kind, at=at)
            if new[-1] != kind:
                top = new[-1]
                raise StackError("MISMATCH", f"{CLOSE_CHAR[kind]!r} at offset {at} cannot "
                                 f"close {OPEN_CHAR[top]!r}: write {CLOSE_CHAR[top]!r} there",
                                 stack, expected=top, found=kind, at=at)
            new.pop()
            events.append(("pop", kind, at))
    return new, end_state, events


_KIND = {"(": "paren", ")": "paren", "[": "bracket", "]": "bracket", "{": "brace", "}": "brace"}


def rolling_hash(previous: str, text: str) -> str:
    """The document hash after appending `text`: sha256 of the previous hash and the slice.

    A client that holds the document computes the same chain over the slices it sent; a
    different answer means the two sides no longer see the same text.
    """
    digest = hashlib.sha256()
    digest.update(previous.encode("utf-8"))
    digest.update(b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return "sha256:" + digest.hexdigest()
