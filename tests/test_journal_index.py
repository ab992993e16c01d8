"""The undo journal's index is appended to, one line per write, and compacted only now and
then; what `entries()` and `undo` see is the same as if it were rewritten on every write."""
from __future__ import annotations

import json

import pytest

from lispshell.workspace import files, journal

from lispshell.workspace import undo as undoing


@pytest.fixture(autouse=True)
def own_journal(tmp_path, monkeypatch):
    monkeypatch.setenv("LISPSHELL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(journal, "_KNOWN", None)


def write(path, body: str) -> None:
    files.write_file(path, body.encode(), expected=files.digest(path.read_bytes()), tool="t")


def index_lines(tmp_path) -> list[str]:
    return (tmp_path / "state" / "journal" / "index.jsonl").read_text().splitlines()


def test_a_write_appends_one_line_and_the_index_is_compacted_when_twice_as_long(tmp_path,
                                                                                monkeypatch):
    monkeypatch.setattr(journal, "MAX_ENTRIES", 4)
    path = tmp_path / "a.lisp"
    path.write_text("(a 0)\n")
    seen = []
    for n in range(1, 20):
        write(path, f"(a {n})\n")
        seen.append(len(index_lines(tmp_path)))
        kept = journal.entries()
        assert len(kept) == min(n, 4)
        # the newest four, in order: each entry's bytes are those of the file before it
        befores = [(tmp_path / "state" / "journal" / "before" / e["id"]).read_text()
                   for e in kept]
        assert befores == [f"(a {k})\n" for k in range(max(0, n - 4), n)]
        saved = {p.name for p in (tmp_path / "state" / "journal" / "before").iterdir()}
        assert saved == {e["id"] for e in kept}
    assert max(seen) <= 8 and seen[:4] == [1, 2, 3, 4]
    assert 5 in seen and 8 in seen          # it grew by appending past the bound...
    assert any(b < a for a, b in zip(seen, seen[1:]))    # ...and was compacted


def test_another_process_sees_every_append(tmp_path, monkeypatch):
    path = tmp_path / "a.lisp"
    path.write_text("(a 0)\n")
    write(path, "(a 1)\n")
    assert len(journal.entries()) == 1
    # another process appends (this one's memory of the index is then out of date)
    other = dict(journal.entries()[0], id="abc-1", after=files.digest(b"(a 2)\n"))
    with open(tmp_path / "state" / "journal" / "index.jsonl", "a") as index:
        index.write(json.dumps(other) + "\n")
    (tmp_path / "state" / "journal" / "before" / "abc-1").write_text("(a 1)\n")
    assert [e["id"] for e in journal.entries()][-1] == "abc-1"
    write(path, "(a 3)\n")
    assert len(journal.entries()) == 3
    monkeypatch.setattr(journal, "_KNOWN", None)       # a fresh process reads the same
    assert len(journal.entries()) == 3
    undoing.undo(path)
    assert path.read_text() == "(a 1)\n"


def test_a_write_after_a_torn_line_is_kept(tmp_path, monkeypatch):
    path = tmp_path / "a.lisp"
    path.write_text("(a))\n")
    write(path, "(a)\n")
    index = tmp_path / "state" / "journal" / "index.jsonl"
    index.write_text(index.read_text() + '{"id": "torn", "pa')     # a killed writer
    write(path, "(b)\n")
    monkeypatch.setattr(journal, "_KNOWN", None)
    assert len(journal.entries()) == 2
    undoing.undo(path)
    assert path.read_text() == "(a)\n"
    undoing.undo(path)
    assert path.read_text() == "(a))\n"
