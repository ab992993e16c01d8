"""The code lispshell puts into each Lisp image, kept as real source files beside this one:
the read-eval-print loops (`*-loop.*`), the look-up helpers (`*-introspect.*`) and the project
helpers (`*-project.*`). People can read them, lint them (`lispshell check`) and change them as
Lisp; the wheel ships them and `code(name)` reads one from the installed package."""
from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def code(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
