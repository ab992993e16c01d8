"""SBCL: the bootstrap loop sent to a fresh `sbcl` and the few things that differ.

The loop lives in its own package, %LISPSHELL, so it adds nothing to CL-USER. It reads
length-prefixed requests from standard input, evaluates each form of the request in the
current package, and answers in the frame `session.py` reads (see its module docstring).
Conditions never reach the debugger: a `handler-bind` on SERIOUS-CONDITION (which includes
SB-SYS:INTERACTIVE-INTERRUPT, what SIGINT signals) records type, message and a short
backtrace while the stack is still there, then unwinds to the loop. `*invoke-debugger-hook*`
catches what goes straight to the debugger (`break`, `invoke-debugger`).
"""
from __future__ import annotations

from lispshell.lisp.image import code as image_code

NAME = "sbcl"
SYNTAX = "cl"
DEFAULT_COMMAND = ["sbcl", "--noinform", "--no-sysinit", "--no-userinit", "--disable-debugger"]
# The error type the loop reports when SIGINT interrupted an eval.
INTERRUPT_TYPE = "SB-SYS:INTERACTIVE-INTERRUPT"


def code_length(text: str) -> int:
    """Length as the loop counts it when it reads the request: characters."""
    return len(text)


def prepare(code: str) -> str:
    return code


def bootstrap(nonce: str) -> str:
    """The loop (lispshell/lisp/image/sbcl-loop.lisp), then the call that starts it."""
    return (image_code("sbcl-loop.lisp")
            + f'\n(in-package "COMMON-LISP-USER")\n(%lispshell::main "{nonce}")\n')
