"""Printing text that holds data from outside (file names, paths, values) on a terminal.

Every line lispshell's commands print (`check`, `trust`, `undo`, `hook`, notices) goes through
`say`: control characters as `^X`, invisible ones as `<U+XXXX>` (lispshell.tools.gate.visible),
so a file named `notes\\e]52;c;...\\e\\\\.lisp` in a cloned repository cannot write the
clipboard, and an `.asd` named to erase lines cannot hide the line above it.
"""
from __future__ import annotations

import sys


def say(*parts, sep: str = " ", end: str = "\n", file=None, flush: bool = False) -> None:
    """`print`, with every part rendered visible."""
    from lispshell.tools.gate import visible

    out = file if file is not None else sys.stdout
    out.write(visible(sep.join(str(p) for p in parts)) + end)
    if flush:
        out.flush()
