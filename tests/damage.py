"""Damage as bench/repair_corpus.py makes it, for the repair tests' hand-picked forms."""
from __future__ import annotations


def drop_last_closers(form: str, k: int) -> str:
    """The form with its last k closers removed, wherever they stand (the lines they stood on
    kept, as the bench keeps them). For forms without closers inside strings or comments."""
    out = list(form)
    for i in range(len(out) - 1, -1, -1):
        if k and out[i] in ")]}":
            del out[i]
            k -= 1
    return "".join(out)
