"""Entry point of `lispshell mcp` (dispatched by `lispshell/cli.py`); the code is in `lispshell/mcp/`."""
from lispshell.mcp.main import main

__all__ = ["main"]
