"""The undo journal: every file lispshell's tools write can be put back.

Each write (form and paredit tools, `lispshell check --fix`, `lispshell hook`) records the path,
the hash of the file before and after, and the bytes before, in the state directory
(`journal/`). `undo(path)` restores the last change to a file, but only while the file still has
the hash lispshell wrote: a file changed since (by the person, an editor, an agent's own tools)
is refused with the hashes, never overwritten. The journal keeps the newest MAX_ENTRIES changes
within MAX_BYTES of saved content, dropping the oldest first.

Several lispshell processes (a REPL and an MCP server) may share it: the index is only changed
under an exclusive lock, and rewritten atomically.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import time
from contextlib import contextmanager
from pathlib import Path

MAX_ENTRIES = 500
MAX_BYTES = 64 * 1024 * 1024


class UndoError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _dir() -> Path:
    from lispshell.config import state_dir
    path = state_dir() / "journal"
    # The saved bytes are the person's files: readable by them only, like shell history.
    (path / "before").mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _save(target: Path, data: bytes) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


@contextmanager
def _locked():
    folder = _dir()
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(folder: Path) -> list[dict]:
    try:
        lines = (folder / "index.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue            # a torn line from a killed process: skip it, keep the rest
        if _well_formed(entry):  # a crafted one (an id with ../) names no file of ours
            entries.append(entry)
    return entries


_ID = re.compile(r"[0-9a-f]{1,32}-[0-9a-f]{1,16}")


def _well_formed(entry) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("id"), str)
            and _ID.fullmatch(entry["id"]) is not None
            and isinstance(entry.get("path"), str) and os.path.isabs(entry["path"])
            and "\0" not in entry["path"]
            and all(isinstance(entry.get(k), str) for k in ("before", "after"))
            and isinstance(entry.get("time"), (int, float))
            and isinstance(entry.get("size", 0), int))


def _write(folder: Path, entries: list[dict]) -> None:
    tmp = folder / f".index.{secrets.token_hex(4)}.tmp"
    _save(tmp, "".join(json.dumps(e) + "\n" for e in entries).encode("utf-8"))
    os.replace(tmp, folder / "index.jsonl")


def record(path: Path, before: bytes, before_hash: str, after_hash: str, tool: str = "") -> None:
    """Journal one write (called by lispshell.files after the file was replaced)."""
    if before_hash == after_hash:
        return
    with _locked() as folder:
        entry_id = f"{time.time_ns():x}-{secrets.token_hex(3)}"
        _save(folder / "before" / entry_id, before)
        entries = _read(folder)
        entries.append({"id": entry_id, "time": time.time(), "path": os.path.realpath(path),
                        "before": before_hash, "after": after_hash, "size": len(before),
                        "tool": tool})
        total = 0
        keep: list[dict] = []
        for e in reversed(entries):           # newest first, within both bounds
            total += e.get("size", 0)
            if len(keep) < MAX_ENTRIES and total <= MAX_BYTES:
                keep.append(e)
            else:
                (folder / "before" / e["id"]).unlink(missing_ok=True)
        _write(folder, list(reversed(keep)))


def entries() -> list[dict]:
    with _locked() as folder:
        return _read(folder)


def undo(path: Path | None = None, root: Path | None = None) -> dict:
    """Restore the last journaled change (to `path`, or to any file); what was done."""
    from lispshell import files

    with _locked() as folder:
        journal = _read(folder)
        wanted = os.path.realpath(path) if path is not None else None
        candidates = [e for e in journal if wanted is None or e["path"] == wanted]
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
            raise UndoError("CHANGED_SINCE", f"nothing was undone: {target} changed since "
                            f"lispshell wrote it (hash {files.digest(current)}, lispshell wrote "
                            f"{entry['after']})")
        before = (folder / "before" / entry["id"]).read_bytes()
        try:
            files.write_file(target, before, root, expected=entry["after"], journal=False)
        except files.FileError as exc:
            raise UndoError(exc.code, exc.message) from None
        (folder / "before" / entry["id"]).unlink(missing_ok=True)
        _write(folder, [e for e in journal if e["id"] != entry["id"]])
    return {"file": str(target), "restored_hash": entry["before"], "undid": entry.get("tool") or
            "an edit", "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry["time"]))}
