"""One `,` command: name, help text and handler (the tables are in commands.py and the modules
it gathers: debugger.py, navigation.py, observe.py)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

QUIT = object()       # what a handler returns to end the REPL


@dataclass
class Command:
    name: str
    help: str
    handler: Callable[..., Any]      # (repl, arg) -> QUIT | None, maybe async
    usage: str = ""
