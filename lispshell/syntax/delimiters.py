"""The client-owned delimiter stack: pure functions behind the delimiter tools.

A stack is a list of "paren" | "bracket" | "brace"; its top is the last element. Nothing here
mutates its input: every operation returns a new list or raises `StackError` (whose `stack`
is the unchanged input). `scan_slice` advances a stack over a slice of text with the lexer, so
a client can send only what it wrote since the last call; the lexer state (inside a string,
a block comment...) travels with the client between calls.
"""
from __future__ import annotations

import hashlib

from lispshell.syntax.dialects import CLOSE_CHAR, DELIM_OF_CHAR as DELIM_OF, DELIM_TYPES, OPEN_CHAR
from lispshell.syntax.errors import StructureError
from lispshell.syntax.lexer import LexState
from lispshell.syntax.reading import read

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
    r = read(text, dialect, state)
    codes, starts = r.codes, r.tokens.starts
    # A closer the slice opened nothing for closes the client's stack instead; the first that
    # cannot, or a wrong closer of the slice's own, is the error (the reader stops there).
    stack_left = len(stack)
    popped = []                          # token indexes of the closers that close `stack`
    error = None
    for j, _, code, o in r.delimiter_problems:
        if code == "MISMATCH":
            error = (j, "MISMATCH", DELIM_OF[codes[o]])
            break
        if code == "UNMATCHED_CLOSE":
            stack_left -= 1
            if stack_left < 0:
                error = (j, "UNDERFLOW", None)
                break
            if stack[stack_left] != DELIM_OF[codes[j]]:
                error = (j, "MISMATCH", stack[stack_left])
                break
            popped.append(j)
    too_deep = _too_deep(r, len(stack), popped, error[0] if error else len(codes))
    if too_deep is not None:
        raise StackError("BAD_INPUT", f"the slice nests deeper than the stack depth "
                         f"limit of {MAX_DEPTH} (MAX_DEPTH)", stack, limit="MAX_DEPTH",
                         max=MAX_DEPTH)
    if error is not None:
        j, code, top = error
        kind = DELIM_OF[codes[j]]
        at = start + starts[j]
        if code == "UNDERFLOW":
            raise StackError("UNDERFLOW", f"extra {CLOSE_CHAR[kind]!r} at offset {at}: "
                             f"nothing is open there", stack, found=kind, at=at)
        raise StackError("MISMATCH", f"{CLOSE_CHAR[kind]!r} at offset {at} cannot "
                         f"close {OPEN_CHAR[top]!r}: write {CLOSE_CHAR[top]!r} there",
                         stack, expected=top, found=kind, at=at)
    new = stack[:stack_left] + [DELIM_OF[codes[o]] for o in r.unclosed]
    events = [("push" if codes[j] in "([{" else "pop", DELIM_OF[codes[j]], start + starts[j])
              for j in r.delimiters]
    return new, r.state, events


def _too_deep(r, outside: int, popped: list, end: int) -> int | None:
    """The first opener before token `end` at which the client's stack (`outside` deep, less
    the `popped` closers before it) and the slice's own lists reach MAX_DEPTH, or None."""
    codes = r.codes
    if outside + codes.count("(") + codes.count("[") + codes.count("{") < MAX_DEPTH:
        return None                      # cannot be that deep: not worth looking
    depths, k = r.depths, 0
    for j in range(end):
        while k < len(popped) and popped[k] < j:
            k += 1
        if codes[j] in "([{" and outside - k + depths[j] >= MAX_DEPTH:
            return j
    return None


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
