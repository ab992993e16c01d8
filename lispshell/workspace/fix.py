"""Read → repair → decide → write: how a delimiter repair reaches a file of the person's.

`lispshell check --fix` (the person's own command) and the Claude Code hook (nobody asked)
both write through `fix_file`; what may be written is `syntax.repair.decide`'s answer for
their policy, the same function the form tools decide their new source with. A write is
atomic, through a symlink rather than over it, confined to `root`, and refused if the file
changed since its bytes were read (lispshell.workspace.files). Unattended, a file that runs
at start (an init file, git's config: lispshell.workspace.writes) is never written: only
the person's yes may change it, and a hook cannot ask.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lispshell.syntax.repair import Decision, decide
from lispshell.workspace import files, writes


@dataclass(frozen=True)
class Fixed:
    decision: Decision
    written: bool = False
    refused: str = ""       # why a repair the policy takes may not be written to this file
    failed: str = ""        # why writing it failed (changed since read, gone, read-only...)


def fix_file(path: str, data: bytes, dialect: str, policy: str, *, root: Path | None,
             tool: str, decision: Decision | None = None) -> Fixed:
    """Decide the repair of `data` (the file's bytes as read) by `policy` and, if it is
    written, write it. The file's path tells the repair whether it is SBCL's own source.
    `decision`: already made for these bytes and this policy (`check` shows it first)."""
    if decision is None:
        decision = decide(data.decode("utf-8", "surrogateescape"), dialect, policy, path=path)
    if not decision.writes:
        return Fixed(decision)
    real = Path(os.path.realpath(path))
    if policy == "unattended":
        refused = _runs_at_start(real, root)
        if refused:
            return Fixed(decision, refused=refused)
    try:
        files.write_file(real, decision.text.encode("utf-8", "surrogateescape"), root,
                         expected=files.digest(data), tool=tool)
    except files.FileError as exc:
        return Fixed(decision, failed=exc.message)
    return Fixed(decision, written=True)


def _runs_at_start(path: Path, root: Path | None) -> str:
    """Why nobody-asked may not write `path` (the model's file tools' rules hold), or ""."""
    try:
        verdict = writes.check(path, root=root)
    except writes.WriteRefused as exc:
        return exc.message
    if verdict.startup:
        return (f"this file runs at start ({verdict.startup}): lispshell changes it only with "
                "the person's yes, and a hook cannot ask.")
    return ""
