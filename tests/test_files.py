"""Files keep what they are, and the root fence holds under races (issues 15 and 16).

Every write of a lispshell tool goes through lispshell.workspace.files: through a descriptor of the root,
no symlink followed below it, atomically, keeping mode, owner, links and extended attributes.
"""
from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from lispshell.workspace import files
from lispshell.tools.registry import ToolContext, call_tool

FORM = "(defun inside () :inside)\n"
SECRET = "(defun outside () :secret-outside-the-root)\n"


def test_a_directory_swapped_for_a_symlink_never_leads_out_of_the_root(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "f.lisp").write_text(FORM)
    (outside / "f.lisp").write_text(SECRET)
    ctx = ToolContext(root=root)
    stop = threading.Event()
    swaps = 0

    def swapper():
        nonlocal swaps
        real, parked = root / "sub", root / "parked"
        while not stop.is_set():
            os.rename(real, parked)
            os.symlink(outside, real)
            os.unlink(real)
            os.rename(parked, real)
            swaps += 1

    thread = threading.Thread(target=swapper)
    thread.start()
    leaked = written = reads = 0
    deadline = time.monotonic() + 3.0
    try:
        while time.monotonic() < deadline:
            r = call_tool("read_form", {"file_path": "sub/f.lisp", "form_type": "defun",
                                        "form_name": "outside"}, ctx)
            reads += 1
            leaked += "secret-outside" in str(r)
            call_tool("insert_form", {"file_path": "sub/f.lisp", "position": "end",
                                      "new_source": "(defun added () 1)"}, ctx)
            written += (outside / "f.lisp").read_text() != SECRET
    finally:
        stop.set()
        thread.join()
    assert swaps > 100 and reads > 50          # the race really ran
    assert (leaked, written) == (0, 0)
    assert (outside / "f.lisp").read_text() == SECRET
    assert [p.name for p in outside.iterdir()] == ["f.lisp"]   # no temporary file out there


def test_a_read_only_file_is_refused_and_unchanged(tmp_path):
    f = tmp_path / "ro.lisp"
    f.write_text(FORM)
    f.chmod(0o444)
    r = call_tool("insert_form", {"file_path": str(f), "position": "end",
                                  "new_source": "(defun more () 2)"}, ToolContext(root=tmp_path))
    assert r["error"]["code"] == "READ_ONLY" and "read-only" in r["error"]["message"]
    assert f.read_text() == FORM and stat.S_IMODE(f.stat().st_mode) == 0o444


def test_owner_group_mode_and_xattrs_are_kept(tmp_path):
    f = tmp_path / "own.lisp"
    f.write_text(FORM)
    os.chown(f, 1234, 4321)
    f.chmod(0o640)
    os.setxattr(f, "user.note", b"keep me")
    r = call_tool("insert_form", {"file_path": str(f), "position": "end",
                                  "new_source": "(defun more () 2)"}, ToolContext(root=tmp_path))
    assert r["ok"] is True, r
    st = f.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1234, 4321, 0o640)
    assert os.getxattr(f, "user.note") == b"keep me"
    assert "(defun more () 2)" in f.read_text()


def test_a_hard_linked_file_is_written_in_place(tmp_path):
    f, other = tmp_path / "a.lisp", tmp_path / "b.lisp"
    f.write_text(FORM)
    os.link(f, other)
    inode = f.stat().st_ino
    r = call_tool("insert_form", {"file_path": str(f), "position": "end",
                                  "new_source": "(defun more () 2)"}, ToolContext(root=tmp_path))
    assert r["ok"] is True, r
    assert f.stat().st_ino == inode and f.stat().st_nlink == 2
    assert other.read_text() == f.read_text() and "(defun more () 2)" in other.read_text()


def test_a_killed_writes_leftover_is_cleaned_by_the_next_write(tmp_path):
    f = tmp_path / "k.lisp"
    f.write_text(FORM)
    leftover = tmp_path / ".k.lisp.dead1234.tmp"
    fresh = tmp_path / ".k.lisp.live5678.tmp"       # another writer's, in progress
    leftover.write_text("half")
    fresh.write_text("half")
    old = time.time() - 3600
    os.utime(leftover, (old, old))
    r = call_tool("insert_form", {"file_path": str(f), "position": "end",
                                  "new_source": "(defun more () 2)"}, ToolContext(root=tmp_path))
    assert r["ok"] is True, r
    assert not leftover.exists() and fresh.exists()


def test_a_file_changed_after_it_was_read_is_not_overwritten(tmp_path):
    f = tmp_path / "s.lisp"
    f.write_text(FORM)
    data, _ = files.read_file(f, tmp_path)
    f.write_text(FORM + "(defun theirs () 3)\n")      # someone else's write
    with pytest.raises(files.FileError) as err:
        files.write_file(f, b"(mine)\n", tmp_path, expected=files.digest(data))
    assert err.value.code == "STALE"
    assert "theirs" in f.read_text()


def test_paths_outside_the_root_are_refused_by_the_file_layer_too(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "x.lisp").write_text(SECRET)
    for path in (tmp_path / "x.lisp", root / ".." / "x.lisp"):
        with pytest.raises(files.FileError) as err:
            files.read_file(Path(path), root)
        assert err.value.code == "OUTSIDE_ROOT"


def test_a_root_given_through_a_symlink_is_still_a_fence(tmp_path):
    """The root is fixed as its real path: given as a symlink (or a str) it refused every file,
    since paths are resolved before they are checked against it."""
    real, outside = tmp_path / "real", tmp_path / "outside"
    (real / "sub").mkdir(parents=True)
    outside.mkdir()
    (real / "sub" / "f.lisp").write_text(FORM)
    (outside / "f.lisp").write_text(SECRET)
    os.symlink(real, tmp_path / "link")
    os.symlink(outside, real / "out")
    ctx = ToolContext(root=str(tmp_path / "link"))
    r = call_tool("insert_form", {"file_path": "sub/f.lisp", "position": "end",
                                  "new_source": "(defun more () 2)"}, ctx)
    assert r["ok"] is True, r
    assert "(defun more () 2)" in (real / "sub" / "f.lisp").read_text()
    for path in ("out/f.lisp", str(outside / "f.lisp"), "../outside/f.lisp"):
        r = call_tool("read_form", {"file_path": path, "form_type": "defun",
                                    "form_name": "outside"}, ctx)
        assert r["error"]["code"] == "OUTSIDE_ROOT", (path, r)
