"""The agent-integration pieces of issue 13: `lispshell hook` (Claude Code's PostToolUse hook for
the agent's own Edit/Write/MultiEdit), the undo journal, `undo_edit`, `,undo` and
`lispshell undo`."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import LISPSHELL
from lispshell.workspace import files, journal
from lispshell.workspace import undo as undoing
from lispshell.tools.registry import ToolContext, call_tool
from mcp_harness import answer, connect, run
from pty_shell import Shell


@pytest.fixture(autouse=True)
def own_journal(tmp_path, monkeypatch):
    """Each test its own state directory, so journals never mix (subprocesses inherit it)."""
    monkeypatch.setenv("LISPSHELL_STATE_DIR", str(tmp_path / "state"))


def hook(payload, cwd=None) -> tuple[int, str, str]:
    done = subprocess.run([LISPSHELL, "hook"], input=payload if isinstance(payload, str)
                          else json.dumps(payload), capture_output=True, text=True, timeout=60,
                          cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def claude_code_event(tool: str, path: Path, cwd: Path, **tool_input) -> dict:
    """What Claude Code sends a PostToolUse hook (its documented fields)."""
    tool_input = {"file_path": str(path), **tool_input}
    return {"session_id": "abc123", "transcript_path": str(cwd / "transcript.jsonl"),
            "cwd": str(cwd), "permission_mode": "default", "hook_event_name": "PostToolUse",
            "tool_name": tool, "tool_input": tool_input,
            "tool_response": {"filePath": str(path), "success": True}}


# (file name, text the agent wrote, text after the hook): each repair is `certain` or
# `likely` (an extra closer at the end: removing the one of (x) reads too, against the
# indentation).
CERTAIN = [
    ("extra.lisp", "(defun f (x)\n  (+ x 1)))\n", "(defun f (x)\n  (+ x 1))\n"),
    ("extra.scm", "(define (f x)\n  (+ x 1)))\n", "(define (f x)\n  (+ x 1))\n"),
    ("kind.clj", "(defn f [x]\n  (let [y 2)\n    (+ x y)))\n",
     "(defn f [x]\n  (let [y 2]\n    (+ x y)))\n"),
]


@pytest.mark.parametrize("name, written, repaired", CERTAIN)
@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
def test_hook_repairs_what_is_certain_and_says_what_it_changed(tmp_path, name, written,
                                                               repaired, tool):
    path = tmp_path / name
    path.write_text(written)
    extra = {"Write": {"content": written},
             "Edit": {"old_string": "x", "new_string": "x", "replace_all": False},
             "MultiEdit": {"edits": [{"old_string": "x", "new_string": "x"}]}}[tool]
    status, out, err = hook(claude_code_event(tool, path, tmp_path, **extra))
    assert status == 0, err
    assert path.read_text() == repaired
    said = json.loads(out)
    context = said["hookSpecificOutput"]["additionalContext"]
    assert said["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert "decision" not in said
    assert f"lispshell repaired {path}" in context and "lispshell undo" in context
    assert ("removed ')'" in context) or ("replaced ')' by ']'" in context)
    assert "(certain)" in context or "(likely)" in context


def test_the_hooks_repair_is_journaled_and_undone_as_the_agent_is_told(tmp_path):
    path = tmp_path / "a.lisp"
    written = "(defun f (x)\n  (+ x 1)))\n"
    path.write_text(written)
    _, out, _ = hook(claude_code_event("Write", path, tmp_path, content=written))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    [entry] = journal.entries()
    assert entry["tool"] == "lispshell hook" and entry["path"] == str(path)
    command = f"lispshell undo {path}"
    assert f"`{command}` puts your version back" in context
    done = subprocess.run([LISPSHELL, *command.split()[1:]], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert path.read_text() == written


def test_hook_blocks_a_guess_with_the_position_and_candidate(tmp_path):
    path = tmp_path / "mid.lisp"     # a declaration must be a list; two places keep that
    text = "(defun f (cond x)\n  (declare (ignore cond) x)\n"
    path.write_text(text)
    status, out, _ = hook(claude_code_event("Write", path, tmp_path, content=text))
    assert status == 0
    said = json.loads(out)
    assert said["decision"] == "block"
    assert said["reason"].startswith(f"{path}:1:1: ")
    assert "a guess (form shape: (declare ...)" in said["reason"]
    assert "best guess: 2:25 inserted ')'" in said["reason"]
    assert path.read_text() == text           # a guess is never written


def test_hook_blocks_what_it_cannot_repair_without_calling_it_a_guess(tmp_path):
    path = tmp_path / "s.lisp"
    text = '(defun f ()\n  "abc)\n'
    path.write_text(text)
    status, out, _ = hook(claude_code_event("Edit", path, tmp_path, old_string="a",
                                            new_string="b"))
    reason = json.loads(out)["reason"]
    assert status == 0 and reason.startswith(f"{path}:2:3: ") and "unterminated string" in reason
    assert reason.endswith("Not repaired (not a delimiter problem): fix it yourself."), reason
    assert path.read_text() == text


def test_hook_resolves_a_relative_path_against_the_agents_cwd(tmp_path):
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / "a.lisp"
    path.write_text("(+ 1 2))\n")
    event = claude_code_event("Write", Path("src/a.lisp"), tmp_path, content="")
    status, out, _ = hook(event, cwd="/")
    assert status == 0 and path.read_text() == "(+ 1 2)\n"
    assert "additionalContext" in out


@pytest.mark.parametrize("name, text", [("tool.py", "def f(:\n  pass)))\n"),
                                        ("notes.md", "((((\n"),
                                        ("good.lisp", "(defun f (x) x)\n"),
                                        ("good.clj", "(ns a) (defn f [x] {:a [x]})\n")])
def test_hook_is_silent_on_other_files_and_on_files_that_read(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    status, out, err = hook(claude_code_event("Edit", path, tmp_path, old_string="a",
                                              new_string="b"))
    assert (status, out, err) == (0, "", "")
    assert path.read_text() == text


@pytest.mark.parametrize("payload", ["", "not json", "[]", "5", json.dumps({"tool_input": 3}),
                                     json.dumps({"tool_name": "Bash",
                                                 "tool_input": {"command": "ls"}}),
                                     json.dumps({"tool_input": {"file_path": "/nonexistent/a.lisp"}})])
def test_hook_ignores_what_is_not_an_edit_of_an_existing_file(payload):
    assert hook(payload) == (0, "", "")


def test_hook_help_does_not_wait_for_standard_input():
    done = subprocess.run([LISPSHELL, "hook", "--help"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("usage: lispshell hook < HOOK_JSON")
    assert "PostToolUse" in done.stdout
    done = subprocess.run([LISPSHELL, "hook", "--bogus"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and "usage: lispshell hook" in done.stderr


# ---- the journal and undo ----------------------------------------------------------------------

def test_undo_after_a_structural_edit_restores_the_bytes(tmp_path):
    path = tmp_path / "m.lisp"
    original = ";; header\n(defun a () 1)\n\n(defun b () 2)\n"
    path.write_text(original)
    ctx = ToolContext(root=tmp_path)
    edited = call_tool("replace_form", {"file_path": str(path), "form_type": "defun",
                                        "form_name": "a", "new_source": "(defun a () 10)"}, ctx)
    assert edited["ok"], edited
    assert "(defun a () 10)" in path.read_text()
    [entry] = journal.entries()
    assert entry["tool"] == "replace_form" and entry["path"] == str(path)
    undone = call_tool("undo_edit", {"file_path": str(path)}, ctx)
    assert undone["ok"], undone
    assert path.read_bytes() == original.encode()
    assert undone["undid"] == "replace_form"
    assert journal.entries() == []
    again = call_tool("undo_edit", {"file_path": str(path)}, ctx)
    assert again["error"]["code"] == "NOTHING_TO_UNDO"
    # The tools know the file's new hash: a further edit goes through without a re-read.
    assert call_tool("delete_form", {"file_path": str(path), "form_type": "defun",
                                     "form_name": "b"}, ctx)["ok"]


def test_undo_is_refused_after_an_outside_change(tmp_path):
    path = tmp_path / "m.scm"
    path.write_text("(define (a) 1)\n")
    ctx = ToolContext(root=tmp_path)
    assert call_tool("sexp_wrap", {"file_path": str(path), "form_type": "define",
                                   "form_name": "a", "path": [1], "wrapper": "round"}, ctx)["ok"]
    path.write_text("(define (a) 'mine)\n")          # the person's own edit
    refused = call_tool("undo_edit", {"file_path": str(path)}, ctx)
    assert refused["error"]["code"] == "CHANGED_SINCE"
    # "nothing to undo" (issue 45): the file's content is not lispshell's to take back
    assert refused["error"]["message"].startswith(f"nothing to undo: {path} changed since "
                                                  "lispshell's last change to it (sexp_wrap at ")
    assert "would lose the later one; nothing was changed" in refused["error"]["message"]
    assert path.read_text() == "(define (a) 'mine)\n"


def test_undo_steps_back_through_several_changes_newest_first(tmp_path):
    path = tmp_path / "m.lisp"
    path.write_text("(defun a () 1)\n")
    ctx = ToolContext(root=tmp_path)
    texts = [path.read_text()]
    for n in (2, 3):
        assert call_tool("replace_form", {"file_path": str(path), "form_type": "defun",
                                          "form_name": "a", "new_source": f"(defun a () {n})"},
                         ctx)["ok"]
        texts.append(path.read_text())
    for expected in reversed(texts[:-1]):
        assert call_tool("undo_edit", {"file_path": str(path)}, ctx)["ok"]
        assert path.read_text() == expected


def test_undo_edit_stays_inside_the_root(tmp_path):
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    other = outside / "x.lisp"
    other.write_text("(a))\n")
    assert subprocess.run([LISPSHELL, "check", "--fix", str(other)], capture_output=True).returncode == 0
    refused = call_tool("undo_edit", {"file_path": str(other)}, ToolContext(root=inside))
    assert refused["error"]["code"] == "OUTSIDE_ROOT"
    assert other.read_text() == "(a)\n"


def test_the_journal_is_bounded_and_private(tmp_path, monkeypatch):
    monkeypatch.setattr(journal, "MAX_ENTRIES", 5)
    monkeypatch.setattr(journal, "MAX_BYTES", 3000)
    path = tmp_path / "big.lisp"
    path.write_bytes(b"(a)\n")
    for n in range(12):
        body = f"(a {n} \"{'x' * 900}\")\n".encode()
        files.write_file(path, body, expected=files.digest(path.read_bytes()), tool="test")
    kept = journal.entries()
    assert 1 <= len(kept) <= 5
    assert sum(e["size"] for e in kept) <= 3000
    saved = list((tmp_path / "state" / "journal" / "before").iterdir())
    assert sorted(p.name for p in saved) == sorted(e["id"] for e in kept)
    assert all(p.stat().st_mode & 0o077 == 0 for p in saved)
    assert (tmp_path / "state" / "journal" / "before").stat().st_mode & 0o077 == 0
    assert (tmp_path / "state" / "journal" / "index.jsonl").stat().st_mode & 0o077 == 0


def test_a_torn_journal_line_loses_only_itself(tmp_path):
    path = tmp_path / "a.lisp"
    path.write_text("(a))\n")
    files.write_file(path, b"(a)\n", expected=files.digest(b"(a))\n"))
    index = tmp_path / "state" / "journal" / "index.jsonl"
    index.write_text(index.read_text() + '{"id": "torn", "pa')
    assert len(journal.entries()) == 1
    undoing.undo(path)
    assert path.read_text() == "(a))\n"


def test_lispshell_undo_command_and_list(tmp_path):
    path = tmp_path / "a.lisp"
    path.write_text("(defun f (x)\n  (+ x 1)))\n")       # an extra closer: likely
    assert subprocess.run([LISPSHELL, "check", "--fix=likely", str(path)]).returncode == 0
    assert path.read_text() == "(defun f (x)\n  (+ x 1))\n"
    listed = subprocess.run([LISPSHELL, "undo", "--list"], capture_output=True, text=True)
    assert listed.returncode == 0
    assert "lispshell check --fix=likely" in listed.stdout and str(path) in listed.stdout
    done = subprocess.run([LISPSHELL, "undo", "a.lisp"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert path.read_text() == "(defun f (x)\n  (+ x 1)))\n"
    assert "undid lispshell check --fix=likely of " in done.stdout
    empty = subprocess.run([LISPSHELL, "undo"], capture_output=True, text=True)
    assert (empty.returncode, empty.stderr) == (1, "lispshell undo: nothing to undo: the journal "
                                                   "is empty\n")
    bad = subprocess.run([LISPSHELL, "undo", "--nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unrecognized arguments" in bad.stderr


def test_undo_through_the_mcp_sdk_client(tmp_path):
    path = tmp_path / "m.clj"
    path.write_text("(ns m)\n\n(defn f [x] x)\n")

    async def scenario():
        async with connect(tmp_path, "--lisp", "none") as client:
            edit = answer(await client.call_tool("replace_form", {
                "file_path": str(path), "form_type": "defn", "form_name": "f",
                "new_source": "(defn f [x] (inc x))"}))
            assert edit["ok"], edit
            assert "(inc x)" in path.read_text()
            undone = answer(await client.call_tool("undo_edit", {"file_path": str(path)}))
            assert undone["ok"] and undone["undid"] == "replace_form"
            assert path.read_text() == "(ns m)\n\n(defn f [x] x)\n"
            again = answer(await client.call_tool("undo_edit", {"file_path": str(path)}))
            assert again["error"]["code"] == "NOTHING_TO_UNDO"
            # a paredit edit, then the person's own change: undo refuses and keeps theirs
            wrap = answer(await client.call_tool("sexp_wrap", {
                "file_path": str(path), "form_type": "defn", "form_name": "f", "path": [2],
                "wrapper": "round"}))
            assert wrap["ok"], wrap
            path.write_text("(ns m)\n\n(defn f [x] :mine)\n")
            refused = answer(await client.call_tool("undo_edit", {"file_path": str(path)}))
            assert refused["error"]["code"] == "CHANGED_SINCE"
            assert path.read_text() == "(ns m)\n\n(defn f [x] :mine)\n"
    run(scenario)


def test_undo_in_the_repl(tmp_path):
    path = tmp_path / "r.lisp"
    path.write_text("(list 1 2))\n")
    state = tmp_path / "state"
    assert subprocess.run([LISPSHELL, "check", "--fix", str(path)],
                          env=dict(os.environ, LISPSHELL_STATE_DIR=str(state))).returncode == 0
    shell = Shell(tmp_path, "--lisp", "sbcl", "--no-llm")
    try:
        shell.expect("CL-USER>")
        shell.submit(f",undo {path}")
        shell.expect("Undid lispshell check --fix of")
        assert path.read_text() == "(list 1 2))\n"
        shell.submit(",undo")
        shell.expect("Nothing to undo: the journal is empty")
    finally:
        shell.close()
