"""Reading and writing the person's files: inside a root, without races, keeping what they are.

The tools check a path once (`ToolContext.resolve_path`: inside the root, symlinks resolved).
Every read and write then opens it again through a descriptor of the root directory, one
component at a time with O_NOFOLLOW, so a directory swapped for a symlink between the check and
the use is refused (`OUTSIDE_ROOT`), never followed. The temporary file is created and renamed
inside that same directory descriptor.

A write keeps the file what it was: its mode, owner and group, extended attributes, and its
hard links (a file with several names is rewritten in place, after the same checks, since a
rename would split it). A read-only file is refused. With an expected hash, the file is read
again just before the rename and the write refused if it changed; what remains is the moment
between that last read and the rename, which no portable call closes (docs/structure.md).
A temporary file left by a write that was killed (`.NAME.xxxx.tmp`, older than a minute) is
removed by the next write in that directory.
"""
from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
import threading
import time
from pathlib import Path

from lispshell.workspace import journal as undo_journal

MAX_FILE_BYTES = 8 * 1024 * 1024
LEFTOVER_AGE = 60.0          # seconds before a temporary file of ours counts as abandoned
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class FileError(Exception):
    """A file operation refused or failed: a stable code and a message that names the file."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _parts(path: Path, root: Path | None) -> tuple[Path, list[str]]:
    """(the directory to start from, the components below it) for an absolute `path`."""
    path = Path(os.path.abspath(path))
    if root is not None:
        root = Path(os.path.abspath(root))
        try:
            rel = path.relative_to(root)
        except ValueError:
            raise FileError("OUTSIDE_ROOT", f"{path} is outside the allowed root {root}") from None
        parts = [p for p in rel.parts if p not in ("", ".")]
        if ".." in parts or not parts:
            raise FileError("OUTSIDE_ROOT", f"{path} is outside the allowed root {root}")
        return root, parts
    return path.parent, [path.name]


def _open_parent(path: Path, root: Path | None) -> tuple[int, str]:
    """(descriptor of the directory holding `path`, its name there), walked without following
    any symlink below `root`."""
    start, parts = _parts(path, root)
    try:
        fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileError("NOT_FOUND", f"no such directory: {start}") from None
    except OSError as exc:
        raise FileError("IO_ERROR", f"cannot open {start}: {exc.strerror}") from None
    try:
        for part in parts[:-1]:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                raise FileError("NOT_FOUND", f"no such file: {path}") from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and root is not None:
                    raise FileError("OUTSIDE_ROOT", f"{path}: a component changed into a "
                                    "symlink or a file while it was being used; refused") from None
                raise FileError("IO_ERROR", f"cannot open {path}: {exc.strerror}") from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _open_file(parent: int, name: str, path: Path, flags: int) -> int:
    # O_NONBLOCK: opening a named pipe waits for a writer forever (a tool call hung on one);
    # it changes nothing for the regular files that _read_fd then insists on.
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=parent)
    except FileNotFoundError:
        raise FileError("NOT_FOUND", f"no such file: {path}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileError("OUTSIDE_ROOT", f"{path} became a symlink while it was being "
                            "used; refused") from None
        if exc.errno == errno.EISDIR:
            raise FileError("BAD_INPUT", f"{path} is a directory, not a file") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise FileError("BAD_INPUT", "the file name is too long") from None
        raise FileError("IO_ERROR", f"cannot open {path}: {exc.strerror}") from None


def _read_fd(fd: int, path: Path) -> tuple[bytes, os.stat_result]:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise FileError("BAD_INPUT", f"{path} is not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise FileError("TOO_LARGE", f"{path} is larger than {MAX_FILE_BYTES} bytes")
    chunks, size = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), st
        size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise FileError("TOO_LARGE", f"{path} is larger than {MAX_FILE_BYTES} bytes")
        chunks.append(chunk)


def read_file(path: Path, root: Path | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes and status of the regular file `path`, opened through the root."""
    parent, name = _open_parent(path, root)
    try:
        fd = _open_file(parent, name, path, os.O_RDONLY)
        try:
            return _read_fd(fd, path)
        except OSError as exc:
            raise FileError("IO_ERROR", f"cannot read {path}: {exc.strerror}") from None
        finally:
            os.close(fd)
    finally:
        os.close(parent)


def _writable(st: os.stat_result, fd: int, path: Path) -> None:
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise FileError("READ_ONLY", f"{path} is read-only (mode "
                        f"{stat.S_IMODE(st.st_mode):o}); nothing was written")
    if not os.access(f"/proc/self/fd/{fd}", os.W_OK) and os.path.exists("/proc/self/fd"):
        raise FileError("READ_ONLY", f"{path} is not writable by this user; nothing was written")


def _copy_xattrs(src_fd: int, dst_fd: int) -> None:
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(src_fd)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(dst_fd, name, os.getxattr(src_fd, name))
        except OSError:
            pass   # e.g. security.* attributes an unprivileged user cannot set


def _clean_leftovers(parent: int, name: str) -> None:
    prefix = f".{name}."
    now = time.time()
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        if entry.startswith(prefix) and entry.endswith(".tmp"):
            try:
                st = os.stat(entry, dir_fd=parent, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime > LEFTOVER_AGE:
                    os.unlink(entry, dir_fd=parent)
            except OSError:
                pass


def write_file(path: Path, data: bytes, root: Path | None = None, *,
               expected: str | None = None, journal: bool = True, tool: str = "") -> str:
    """Replace the contents of the existing file `path` with `data`; the new hash.

    `expected`: the hash of the bytes the edit was made from; the write is refused with STALE
    if the file no longer has it. The change is recorded in the undo journal
    (lispshell.workspace.journal) unless `journal` is false (an undo itself)."""
    with WRITING:
        return _write_and_record(path, data, root, expected, journal, tool)


# Held from a file's change to its journal entry. A process that ends on a signal (`lispshell
# mcp` on SIGTERM) takes it first, so it never exits between the two: every change it made can
# be undone.
WRITING = threading.RLock()


def _write_and_record(path: Path, data: bytes, root: Path | None, expected: str | None,
                      journal: bool, tool: str) -> str:
    parent, name = _open_parent(path, root)
    try:
        _clean_leftovers(parent, name)
        fd = _open_file(parent, name, path, os.O_RDONLY)
        try:
            current, st = _read_fd(fd, path)
            _writable(st, fd, path)
            before = digest(current)
            if expected is not None and before != expected:
                raise FileError("STALE", f"{path} changed while the edit was prepared; "
                                "nothing was written")
            # From here the file must still hold `current` (when expected was given): compared
            # as bytes, which costs less than hashing them again.
            check = current if expected is not None else None
            if st.st_nlink > 1:
                _write_in_place(parent, name, path, data, check)
            else:
                _write_by_rename(parent, name, path, data, st, fd, check)
        finally:
            os.close(fd)
    finally:
        os.close(parent)
    after = digest(data)
    if journal:
        try:
            undo_journal.record(path, current, before, after, tool)
        except OSError:
            pass    # the edit is made; only its undo is lost (the state directory is unwritable)
    return after


def _write_in_place(parent: int, name: str, path: Path, data: bytes,
                    check: bytes | None) -> None:
    """A file with several hard links keeps them all: its own inode is rewritten. `check`: the
    bytes it must still hold (None: no check)."""
    fd = _open_file(parent, name, path, os.O_RDWR)
    try:
        if check is not None:
            now, _ = _read_fd(fd, path)
            if now != check:
                raise FileError("STALE", f"{path} changed while the edit was prepared; "
                                "nothing was written")
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except OSError as exc:
        raise FileError("IO_ERROR", f"cannot write {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _write_by_rename(parent: int, name: str, path: Path, data: bytes, st: os.stat_result,
                     original: int, check: bytes | None) -> None:
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=parent)
    except OSError as exc:
        raise FileError("IO_ERROR", f"cannot write next to {path}: {exc.strerror}; the file "
                        "is unchanged") from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if os.geteuid() == 0 or st.st_uid == os.geteuid():
                try:
                    os.fchown(fd, st.st_uid, st.st_gid)
                except OSError:
                    pass   # a group we are not in: the mode is still kept
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
            _copy_xattrs(original, fd)
        finally:
            os.close(fd)
        if check is not None:
            # As late as possible: read the file again right before it is replaced.
            again = _open_file(parent, name, path, os.O_RDONLY)
            try:
                now, _ = _read_fd(again, path)
            finally:
                os.close(again)
            if now != check:
                raise FileError("STALE", f"{path} changed while the edit was prepared; "
                                "nothing was written")
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        try:
            os.fsync(parent)
        except OSError:
            pass
    except BaseException as exc:
        try:
            os.unlink(tmp, dir_fd=parent)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise FileError("IO_ERROR", f"cannot write {path}: {exc.strerror}; the file is "
                            "unchanged") from None
        raise
