"""The undo journal: every file lispshell's tools write can be put back.

Each write (form and paredit tools, `lispshell check --fix`, `lispshell hook`) records the path,
the hash of the file before and after, and the bytes before, in the state directory
(`journal/`). `undo(path)` restores the last change to a file, but only while the file still has
the hash lispshell wrote: a file changed since (by the person, an editor, an agent's own tools)
is refused with the hashes, never overwritten. The journal keeps the newest MAX_ENTRIES changes
within MAX_BYTES of saved content, dropping the oldest first.

Several lispshell processes (a REPL and an MCP server) may share it: the index is only changed
under an exclusive lock. A write appends one line to the index (reading and rewriting a
500-line index on every write cost each edit a few milliseconds); the entries beyond the bounds
are dropped at once (their saved bytes deleted, and every reader applies the same bounds), and
their lines are taken out of the index, which is then rewritten atomically, only once it holds
twice as many lines as entries kept.
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
def locked():
    folder = _dir()
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def read(folder: Path) -> list[dict]:
    """The entries of the index, oldest first, within the bounds (see `_bounded`)."""
    return _index(folder).entries


class _Index:
    """The index as this process last read or wrote it: its entries within the bounds, how
    many lines the file holds, whether it ends with a newline, and the file's identity then."""

    def __init__(self, folder: str, stamp, entries: list, lines: int, clean_end: bool):
        self.folder, self.stamp, self.entries = folder, stamp, entries
        self.lines, self.clean_end = lines, clean_end


_KNOWN: _Index | None = None    # read again when the file is not the one this process saw


def _stamp(path: Path):
    """What changes whenever anyone appends to or replaces the index."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _index(folder: Path) -> _Index:
    """The index, read only when it changed since this process last saw it (called under
    the lock: nobody changes it meanwhile)."""
    global _KNOWN
    path = folder / "index.jsonl"
    stamp = _stamp(path)
    known = _KNOWN
    if known is not None and known.folder == str(folder) and known.stamp == stamp \
            and stamp is not None:
        return known
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    lines = text.splitlines()
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue            # a torn line from a killed process: skip it, keep the rest
        if _well_formed(entry):  # a crafted one (an id with ../) names no file of ours
            entries.append(entry)
    kept, _ = _bounded(entries)
    _KNOWN = _Index(str(folder), stamp, kept, len(lines), text.endswith("\n") or not text)
    return _KNOWN


def _bounded(entries: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the newest entries within MAX_ENTRIES and MAX_BYTES, oldest first; the others)."""
    total = 0
    keep: list[dict] = []
    drop: list[dict] = []
    for e in reversed(entries):           # newest first, within both bounds
        total += e.get("size", 0)
        if len(keep) < MAX_ENTRIES and total <= MAX_BYTES:
            keep.append(e)
        else:
            drop.append(e)
    keep.reverse()
    return keep, drop


_ID = re.compile(r"[0-9a-f]{1,32}-[0-9a-f]{1,16}")


def _well_formed(entry) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("id"), str)
            and _ID.fullmatch(entry["id"]) is not None
            and isinstance(entry.get("path"), str) and os.path.isabs(entry["path"])
            and "\0" not in entry["path"]
            and all(isinstance(entry.get(k), str) for k in ("before", "after"))
            and isinstance(entry.get("time"), (int, float))
            and isinstance(entry.get("size", 0), int))


def rewrite(folder: Path, entries: list[dict]) -> None:
    """Replace the index with `entries`, atomically."""
    global _KNOWN
    tmp = folder / f".index.{secrets.token_hex(4)}.tmp"
    _save(tmp, "".join(json.dumps(e) + "\n" for e in entries).encode("utf-8"))
    os.replace(tmp, folder / "index.jsonl")
    _KNOWN = _Index(str(folder), _stamp(folder / "index.jsonl"), list(entries), len(entries),
                    True)


def _append(folder: Path, index: _Index, entry: dict) -> None:
    """Add one line to the index (after a newline if a killed writer left half a line)."""
    global _KNOWN
    line = ("" if index.clean_end else "\n") + json.dumps(entry) + "\n"
    fd = os.open(folder / "index.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        data = memoryview(line.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
    index.lines += 1 + (not index.clean_end)
    index.clean_end = True
    index.stamp = _stamp(folder / "index.jsonl")
    _KNOWN = index


def record(path: Path, before: bytes, before_hash: str, after_hash: str, tool: str = "") -> None:
    """Journal one write (called by lispshell.workspace.files after the file was replaced)."""
    if before_hash == after_hash:
        return
    with locked() as folder:
        entry_id = f"{time.time_ns():x}-{secrets.token_hex(3)}"
        _save(folder / "before" / entry_id, before)
        entry = {"id": entry_id, "time": time.time(), "path": os.path.realpath(path),
                 "before": before_hash, "after": after_hash, "size": len(before),
                 "tool": tool}
        index = _index(folder)
        kept, dropped = _bounded(index.entries + [entry])
        for e in dropped:
            (folder / "before" / e["id"]).unlink(missing_ok=True)
        if index.lines + 1 > 2 * max(len(kept), 1):
            rewrite(folder, kept)          # mostly lines of dropped entries: compact
        else:
            index.entries = kept
            _append(folder, index, entry)


def entries() -> list[dict]:
    with locked() as folder:
        return list(read(folder))


def before(entry: dict) -> bytes | None:
    """The bytes a journaled change replaced, or None when they are gone."""
    if not re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", str(entry.get("id", ""))):
        return None
    try:
        return (_dir() / "before" / entry["id"]).read_bytes()
    except OSError:
        return None
