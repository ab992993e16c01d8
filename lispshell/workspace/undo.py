"""Undo: the last change lispshell's tools made to a file, put back from the journal's copy of
what it replaced, only while the file still holds what lispshell wrote (workspace/journal.py
keeps the record, workspace/files.py writes)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from lispshell.workspace import files, journal
from lispshell.workspace.journal import UndoError


def undo(path: Path | None = None, root: Path | None = None) -> dict:
    """Restore the last journaled change (to `path`, or to any file); what was done."""
    with journal.locked() as folder:
        entries = journal.read(folder)
        wanted = os.path.realpath(path) if path is not None else None
        candidates = [e for e in entries if wanted is None or e["path"] == wanted]
        if not candidates:
            raise UndoError("NOTHING_TO_UNDO", "nothing to undo: " + (
                f"no change of lispshell's to {wanted} is in the journal" if wanted
                else "the journal is empty"))
        entry = candidates[-1]
        target = Path(entry["path"])
        # The journal keeps real paths: walked from / without following any symlink, a
        # directory swapped for a link since the change was made is refused, never written
        # through.
        root = root if root is not None else Path("/")
        try:
            current, _ = files.read_file(target, root)
        except files.FileError as exc:
            raise UndoError(exc.code, exc.message) from None
        if files.digest(current) != entry["after"]:
            # Said as "nothing to undo": what the file holds now is not lispshell's, and
            # undoing its older change would throw away whatever came after it.
            raise UndoError("CHANGED_SINCE", f"nothing to undo: {target} changed since "
                            f"lispshell's last change to it ({entry.get('tool') or 'an edit'} at "
                            f"{time.strftime('%H:%M:%S', time.localtime(entry['time']))}; hash "
                            f"now {files.digest(current)}, lispshell wrote {entry['after']}), "
                            "and undoing that change would lose the later one; nothing was "
                            "changed")
        before = (folder / "before" / entry["id"]).read_bytes()
        try:
            files.write_file(target, before, root, expected=entry["after"], journal=False)
        except files.FileError as exc:
            raise UndoError(exc.code, exc.message) from None
        (folder / "before" / entry["id"]).unlink(missing_ok=True)
        journal.rewrite(folder, [e for e in entries if e["id"] != entry["id"]])
    return {"file": str(target), "restored_hash": entry["before"], "undid": entry.get("tool") or
            "an edit", "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry["time"]))}
