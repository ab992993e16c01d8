"""What the model and MCP clients receive of an answer, at most: each cap in one place. (The
person sees everything whole; the model is told what it did not see.)"""
from __future__ import annotations

VALUE_CAP = 8000  # characters per printed value sent back
OUTPUT_CAP = 16000  # characters of printed output sent back to the model per eval
RECORD_CAP = 4000  # the same for the person's own evals, which the model reads as history
LOOKUP_CAP = 4 * 1024 * 1024  # a look-up's whole answer, read before it is cut for the model
LOOKUP_ARG_CAP = 64 * 1024    # the longest name or form a look-up takes
# The longest code the model's eval sends. Writing a request is not under the eval's time limit
# (it cannot stop half-way), and Guile takes some 10 s to read 8 MB; no one reviews a megabyte
# at the gate either. A file of that size goes through load_file, which sends only its path.
EVAL_CODE_CAP = 1024 * 1024


def cap(text: str, limit: int) -> tuple[str, int]:
    """At most `limit` characters of `text`, and how many were cut."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def head_tail(text: str, limit: int) -> tuple[str, int]:
    """At most `limit` characters: the start and the end (where errors and results usually
    are), and how many were cut from the middle."""
    if len(text) <= limit:
        return text, 0
    head, tail = limit * 2 // 3, limit // 3
    return text[:head] + "\n[...]\n" + text[-tail:], len(text) - head - tail
