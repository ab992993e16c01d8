"""`lispshell undo [FILE]` and `lispshell undo --list`: the undo journal from the shell.

Every file lispshell's tools write (form and paredit tools, `lispshell check --fix`,
`lispshell hook`) is journaled (lispshell.workspace.journal); this puts the last change back, to FILE or
to whichever file changed last, and refuses when the file changed since lispshell wrote it.
Exit status: 0 undone (or listed), 1 nothing undone, 2 usage error.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from lispshell.workspace import journal

from lispshell.workspace import undo as undoing
from lispshell.show import say


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lispshell undo", description="Put back the last change lispshell made to a file.")
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="the file to put back (default: the last file changed)")
    parser.add_argument("--list", action="store_true",
                        help="show the journal, newest last, and change nothing")
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    try:
        if args.list:
            return _list(Path(args.file).expanduser().absolute() if args.file else None)
        done = undoing.undo(Path(args.file).expanduser().absolute() if args.file else None)
    except journal.UndoError as exc:
        say(f"lispshell undo: {exc.message}", file=sys.stderr)
        return 1
    except OSError as exc:
        say(f"lispshell undo: the journal cannot be read: {exc.strerror}", file=sys.stderr)
        return 1
    say(f"undid {done['undid']} of {done['when']}: {done['file']}")
    return 0


def _list(only: Path | None) -> int:
    import os

    wanted = os.path.realpath(only) if only else None
    shown = [e for e in journal.entries() if wanted is None or e["path"] == wanted]
    if not shown:
        say("the journal is empty" if wanted is None else f"no change to {only} is journaled")
        return 0
    width = max(len(e.get("tool") or "edit") for e in shown)   # the paths start in one column
    for e in shown:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["time"]))
        say(f"{when}  {e.get('tool') or 'edit':<{width}}  {e['path']}  "
              f"({e['size']} bytes before)")
    return 0
