"""`lispshell trust [DIR]`: let a project's code run when lispshell starts its Lisp there.

Until a project is trusted, `lispshell` and `lispshell mcp` start a bare Lisp in it (see
lispshell.workspace.trust for what is recorded and when it asks again). Exit status: 0 done (or listed),
1 nothing to trust or revoke, 2 usage error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lispshell.show import say


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lispshell trust",
        description="Trust the project in DIR (default: the current directory's project), so "
                    "that lispshell starts its Lisp with the project's code. The decision is "
                    "remembered until a file that decides what runs at start changes.")
    parser.add_argument("directory", nargs="?", metavar="DIR",
                        help="the project's directory, or a directory inside it")
    parser.add_argument("--list", action="store_true", help="show the trusted projects")
    parser.add_argument("--diff", action="store_true",
                        help="show what changed in the project's start-up files since you "
                             "trusted it (the whole diff where lispshell's tools changed them)")
    parser.add_argument("--revoke", action="store_true",
                        help="withdraw the trust given to the project in DIR")
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    from lispshell.workspace import project, trust

    if args.list:
        shown = trust.records()
        if not shown:
            say("no project is trusted")
        for root, record in sorted(shown.items()):
            files = ", ".join(name for name, digest in sorted(record.get("files", {}).items())
                              if digest) or "no files"
            say(f"{root}  ({record.get('kind')}, trusted {record.get('trusted_at', '?')}: "
                  f"{files})")
        return 0
    start = Path(args.directory or ".").expanduser().absolute()
    if args.revoke:
        found = _find(project, start)
        root = found.root if found is not None else start.resolve()
        if trust.revoke(root):
            say(f"lispshell trust: {root} is no longer trusted: its Lisp starts bare")
            return 0
        say(f"lispshell trust: {root} was not trusted", file=sys.stderr)
        return 1
    found = _find(project, start)
    if found is not None and args.diff:
        shown = trust.changes(found)
        if not shown:
            say(f"lispshell trust: nothing in {found.root}'s start-up files changed since it "
                "was trusted" if trust.check(found).known else
                f"lispshell trust: {found.root} is not trusted: nothing to compare with")
        for name, text in shown:
            say(f"{name}: {text}")
        return 0
    if found is None:
        say(f"lispshell trust: no project in {start} or the directories above it up to its "
              "repository's root (looked for *.asd, deps.edn, project.clj and Guile modules)",
              file=sys.stderr)
        return 1
    try:
        record = trust.grant(found)
    except trust.TrustError as exc:
        say(f"lispshell trust: {found.found} in {found.root} is not trusted: {exc}",
            file=sys.stderr)
        return 1
    say(f"lispshell trust: {found.found} in {found.root} is trusted: lispshell starts its Lisp "
          "with the project from now on.")
    for name, digest in sorted(record["files"].items()):
        if digest:
            say(f"  {name}  sha256 {digest[:16]}")
    say("A change to these files (or to where the project's code is loaded from) asks again; "
          "`lispshell trust --revoke` withdraws it.")
    return 0


def _find(project, start: Path):
    try:
        return project.find(start)
    except project.ProjectError as exc:
        say(f"lispshell trust: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
