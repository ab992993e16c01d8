"""Entry points: `lispshell` (the REPL, -e, or forms on stdin), `lispshell check`, `lispshell mcp`,
`lispshell hook` (Claude Code's edit hook), `lispshell undo` and `lispshell trust`.

Each subcommand lives in its own module and is imported only when asked for, so starting the
REPL never pays for the MCP SDK and `lispshell check` never pays for prompt-toolkit.
"""
from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    if argv is None:     # the program itself, not a test calling in: before any child starts
        from lispshell.credentials import seal_credentials
        seal_credentials()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "check":
        from lispshell.cli.check import main as run
        argv = argv[1:]
    elif argv and argv[0] == "mcp":
        from lispshell.mcp.main import main as run
        argv = argv[1:]
    elif argv and argv[0] == "hook":
        from lispshell.cli.hook import main as run
        argv = argv[1:]
    elif argv and argv[0] == "trust":
        from lispshell.cli.trust import main as run
        argv = argv[1:]
    elif argv and argv[0] == "undo":
        from lispshell.cli.undo import main as run
        argv = argv[1:]
    else:
        from lispshell.repl.main import main as run
    try:
        return run(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`lispshell check --diff | head`): stop quietly, as Unix tools
        # do, and make sure no later flush of standard output complains about it again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
