"""`lispshell mcp` over stdio, driven by the MCP SDK's own client: handshake, tool list,
text and file tools, bad arguments, the root fence. Live-image tools: test_mcp_eval.py."""
from __future__ import annotations

import subprocess

import pytest

from conftest import LISPSHELL
from mcp_harness import answer, connect, run, server_env

import lispshell
from lispshell.tools.registry import all_tools

# The tools these tests call, by group; the assertions below name them.
SYNTAX_TOOLS = {"push_delimiter", "pop_delimiter", "set_sentinel", "balance_and_resume",
                "delimiter_batch", "validate_syntax"}
STRUCTURE_TOOLS = {"read_module", "read_form", "replace_form", "insert_form", "delete_form"}
LIVE_TOOLS = {"eval", "describe", "symbol_value", "macroexpand", "apropos"}

SOURCE = (";; greeting\n(defun hello (name)\n  (format nil \"Hello, ~a\" name))\n\n"
          "(defun twice (x) (* 2 x))\n")


@pytest.fixture
def root(tmp_path):
    (tmp_path / "hello.lisp").write_text(SOURCE)
    return tmp_path


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_handshake_list_and_call(root, mode):
    """Both protocol eras: serverInfo, the registry's exact tool list, a syntax tool, a bad
    argument answered as an error result, and the server still serving after it."""
    async def scenario():
        async with connect(root, "--lisp", "sbcl", mode=mode) as client:
            assert client.server_info.name == "lispshell"
            assert client.server_info.version == lispshell.__version__
            assert client.server_capabilities.tools is not None

            listed = {t.name: t for t in (await client.list_tools()).tools}
            registry = {t.name: t for t in all_tools()}
            assert set(listed) == set(registry)
            assert SYNTAX_TOOLS | STRUCTURE_TOOLS | LIVE_TOOLS <= set(listed)
            for name, tool in registry.items():
                mcp_tool = listed[name]
                assert mcp_tool.input_schema == tool.input_schema, name
                assert mcp_tool.description == tool.description, name
                assert mcp_tool.annotations.read_only_hint is tool.read_only, name
                assert mcp_tool.annotations.destructive_hint is tool.destructive, name
            assert listed["validate_syntax"].annotations.read_only_hint is True
            assert listed["describe"].annotations.read_only_hint is True
            assert listed["eval"].annotations.destructive_hint is True
            assert listed["replace_form"].annotations.destructive_hint is True

            good = answer(await client.call_tool(
                "validate_syntax", {"code": "(defun f (x) (+ x 1))", "dialect": "cl"}))
            assert good["ok"] is True and good["valid"] is True
            bad = answer(await client.call_tool(
                "validate_syntax", {"code": "(defun f (x) (+ x 1)", "dialect": "cl"}))
            assert bad["valid"] is False and "Syntax invalid" in bad["report"]

            popped = answer(await client.call_tool(
                "pop_delimiter", {"stack": ["paren"], "type": "bracket"}))
            assert popped["ok"] is False and popped["error"]["code"] == "MISMATCH"

            wrong = answer(await client.call_tool("validate_syntax", {"code": 42}))
            assert wrong["error"]["code"] == "BAD_INPUT"
            missing = answer(await client.call_tool("validate_syntax", {}))
            assert missing["error"]["code"] == "BAD_INPUT"
            unknown = answer(await client.call_tool("no_such_tool", {}))
            assert unknown["error"]["code"] == "UNKNOWN_TOOL"

            again = answer(await client.call_tool("validate_syntax", {"code": "(a [b] c)",
                                                                      "dialect": "cl"}))
            assert again["ok"] is True and again["valid"] is True
    run(scenario)


def test_structural_tools_work_on_files_under_the_root(root):
    async def scenario():
        async with connect(root, "--lisp", "none") as client:
            module = answer(await client.call_tool("read_module", {"file_path": "hello.lisp"}))
            assert "hello" in str(module) and "twice" in str(module)
            form = answer(await client.call_tool(
                "read_form",
                {"file_path": "hello.lisp", "form_type": "defun", "form_name": "twice"}))
            assert "(* 2 x)" in str(form)
            edit = answer(await client.call_tool("replace_form", {
                "file_path": "hello.lisp", "form_type": "defun", "form_name": "twice",
                "new_source": "(defun twice (x) (+ x x))"}))
            assert edit["ok"] is True, edit
    run(scenario)
    text = (root / "hello.lisp").read_text()
    assert "(defun twice (x) (+ x x))" in text
    assert text.startswith(";; greeting\n(defun hello (name)\n")  # the rest untouched


def test_file_tools_refuse_paths_that_leave_the_root(root, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.lisp").write_text("(defun secret () 42)\n")
    (root / "link").symlink_to(outside)
    (root / "sneaky.lisp").symlink_to(outside / "secret.lisp")

    async def scenario():
        async with connect(root, "--lisp", "none") as client:
            for path in ["../" + outside.name + "/secret.lisp", str(outside / "secret.lisp"),
                         "link/secret.lisp", "sneaky.lisp", "/etc/passwd"]:
                for tool, extra in [("read_module", {}),
                                    ("replace_form", {"form_type": "defun", "form_name": "secret",
                                                      "new_source": "(defun secret () 0)"})]:
                    refused = answer(await client.call_tool(tool, {"file_path": path, **extra}))
                    assert refused["ok"] is False, (tool, path)
                    assert refused["error"]["code"] == "OUTSIDE_ROOT", (tool, path, refused)
            inside = answer(await client.call_tool("read_module", {"file_path": "hello.lisp"}))
            assert inside["ok"] is True
    run(scenario)
    assert (outside / "secret.lisp").read_text() == "(defun secret () 42)\n"


def test_without_a_lisp_live_tools_are_not_listed(root):
    async def scenario():
        async with connect(root, "--lisp", "none") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert not names & LIVE_TOOLS
            assert SYNTAX_TOOLS <= names
            called = answer(await client.call_tool("eval", {"code": "(+ 1 2)"}))
            assert called["error"]["code"] == "NO_LISP"
            assert "--lisp none" in called["error"]["message"]
    run(scenario)


def test_bad_flags_exit_with_a_message_not_a_traceback(tmp_path):
    for args, expected in [(["--root", str(tmp_path / "missing")], "not a directory"),
                           (["--lisp", "cobol"], "invalid choice"),
                           (["--http", "localhost:notaport"], "[HOST:]PORT")]:
        proc = subprocess.run([LISPSHELL, "mcp", *args], capture_output=True, text=True,
                              env=server_env(), timeout=30, stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, (args, proc.stderr)
        assert expected in proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stdout == ""


def test_edit_of_a_file_changed_since_it_was_read_is_refused(root):
    """The server remembers what the model read across calls: an outside change in between
    makes the next edit stale, and the file keeps the outside change."""
    async def scenario():
        async with connect(root, "--lisp", "none") as client:
            read = answer(await client.call_tool("read_module", {"file_path": "hello.lisp"}))
            assert read["ok"] is True, read
            changed = SOURCE + "(defun third (x) x)\n"
            (root / "hello.lisp").write_text(changed)
            edit = answer(await client.call_tool("replace_form", {
                "file_path": "hello.lisp", "form_type": "defun", "form_name": "twice",
                "new_source": "(defun twice (x) (+ x x))"}))
            assert edit["ok"] is False and edit["error"]["code"] == "STALE", edit
            assert (root / "hello.lisp").read_text() == changed
    run(scenario)
