"""Guile 3: the bootstrap loop sent to a fresh `guile -q` and the few things that differ.

Why not the stock REPL: it compiles every form, and Guile 3.0.8 dies after about 1,900
compiled forms ("Too many root sets"). Our loop evaluates with `primitive-eval` in the current
module instead (the interpreter: no compilation, no root sets, and faster for small forms).
The loop itself is compiled once, by the stock REPL that reads it.

Everything is local to one `let`, so nothing is added to (guile-user). Errors are caught with
a non-unwinding `with-exception-handler` (so the handler still sees the stack) that aborts to
a prompt: the nested `[1]>` debugger never appears. SIGINT becomes a throw out of the eval
while one runs and is ignored between evals.
"""
from __future__ import annotations

from lispshell.lisp.image import code as image_code

NAME = "guile"
SYNTAX = "scheme"
DEFAULT_COMMAND = ["guile", "--no-auto-compile", "-q"]
INTERRUPT_TYPE = "interrupt"


def code_length(text: str) -> int:
    """Length as the loop counts it when it reads the request: characters."""
    return len(text)


def prepare(code: str) -> str:
    return code


def bootstrap(nonce: str) -> str:
    """The loop (lispshell/lisp/image/guile-loop.scm) is a procedure of the nonce: applied to it."""
    return "(" + image_code("guile-loop.scm") + f' "{nonce}")\n'
