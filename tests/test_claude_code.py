"""lispshell with the real Claude Code CLI (the version pinned in tests/claude-code.version),
headless, against the local Messages API: the configurations the docs give, as Claude Code
reads them, and what Claude Code then does with the server, as its next API request and its
debug file show. See tests/claude_code.py for the harness and what the pin is relied on for.
"""
from __future__ import annotations

import json
import re
import time

import pytest

from claude_code import (PINNED, ROOT, VERSION, Claude, after, installed_version,
                         tool_results)
from fake_anthropic import FakeAnthropic, Reply

from lispshell.tools.registry import all_tools

PREFIX = PINNED["mcp_tool_prefix"]
# Claude Code asks its own permission before any MCP or file tool in print mode.
ALLOW_LISPSHELL = ("--allowedTools", "mcp__lispshell")


def json_block(doc: str, needle: str) -> dict:
    """The first ```json block of `doc` (relative to the repository) that contains `needle`:
    the tests use the configuration the docs give, as they give it."""
    for block in re.findall(r"```json\n(.*?)```", (ROOT / doc).read_text(), re.S):
        if needle in block:
            return json.loads(block)
    raise AssertionError(f"{doc} has no json block with {needle!r}")


def marker_code(path) -> str:
    return (f'(with-open-file (s "{path}" :direction :output :if-exists :append '
            f':if-does-not-exist :create) (write-line "ran" s))')


def runs(path) -> int:
    return path.read_text().count("ran") if path.exists() else 0


def answered(api, tool_use_id: str) -> dict:
    """lispshell's answer to one tool call, as the model read it in the next request."""
    return json.loads(tool_results(after(api, tool_use_id))[tool_use_id])


def server_args(*flags: str) -> dict:
    config = json_block("README.md", "mcpServers")
    config["mcpServers"]["lispshell"]["args"] += list(flags)
    return config


@pytest.fixture(scope="module", autouse=True)
def pinned_version():
    assert installed_version() == VERSION


@pytest.fixture
def api():
    with FakeAnthropic(key="sk-ant-fake-key-for-tests") as server:
        yield server


@pytest.fixture
def claude(tmp_path, api):
    c = Claude(tmp_path, api)
    yield c
    assert not api.invalid, [r.error for r in api.invalid]


def assert_server_stopped_by_sigint(claude: Claude) -> None:
    """Claude Code ends a server with SIGINT, then SIGTERM 100 ms later, then SIGKILL: the
    first must be enough, and nothing the server started may be left running."""
    debug = claude.debug()
    assert PINNED["stopping"] in debug
    assert PINNED["stopped"] in debug and PINNED["sigint_failed"] not in debug
    for _ in range(600):     # the exit is logged; the process table catches up
        if not claude.project_processes():
            break
        time.sleep(0.05)
    assert claude.project_processes() == []


# -- scenarios ---------------------------------------------------------------------------------
def test_the_readmes_mcp_json_starts_the_server_with_the_registrys_tools(claude, api):
    claude.mcp_json(json_block("README.md", "mcpServers"))
    api.script(Reply.text("ready"))
    result = claude.print("hello")
    assert result["result"] == "ready"
    first = api.message_requests[0].body
    served = sorted(t["name"][len(PREFIX):] for t in first["tools"]
                    if t["name"].startswith(PREFIX))
    assert served == sorted(t.name for t in all_tools())
    # The server was ready before Claude Code's first request: its instructions are in it.
    assert "lispshell: tools for Lisp code" in json.dumps(first)
    assert PINNED["connected"] in claude.debug()
    assert_server_stopped_by_sigint(claude)


def test_a_projects_mcp_json_waits_for_approval_outside_print_mode(claude):
    """What docs/mcp.md says: the TUI asks first (and `claude -p` does not: the test above)."""
    claude.mcp_json(json_block("README.md", "mcpServers"))
    assert PINNED["pending_approval"] in claude.cli("mcp", "list")


def test_a_server_that_cannot_serve_says_why_where_claude_code_shows_it(claude):
    claude.mcp_json(server_args("--tools", "live,synatx"))
    # Approved, as in the TUI (a project's own settings cannot approve its servers).
    claude.settings({"enableAllProjectMcpServers": True}, user=True)
    shown = claude.cli("mcp", "get", "lispshell")
    assert PINNED["tools_fetch_failed"] in shown
    assert "unknown tool or group 'synatx'" in shown and "syntax" in shown


def test_describe_and_eval_with_allow_eval(claude, api, tmp_path):
    claude.mcp_json(server_args("--allow-eval"))
    api.script(Reply.tool(PREFIX + "describe", {"symbol": "car"}, id="toolu_describe"),
               Reply.tool(PREFIX + "eval", {"code": "(+ 1 2)"}, id="toolu_eval"),
               Reply.text("done"))
    assert claude.print("look car up, add", *ALLOW_LISPSHELL)["result"] == "done"
    described = answered(api, "toolu_describe")
    assert described["ok"] is True and "CAR" in json.dumps(described)
    assert answered(api, "toolu_eval")["values"] == ["3"]
    assert_server_stopped_by_sigint(claude)     # with a child SBCL running


def test_print_mode_answers_no_one_to_ask_and_runs_nothing(claude, api, tmp_path):
    marker = tmp_path / "ran.txt"
    claude.mcp_json(server_args())
    api.script(Reply.tool(PREFIX + "eval", {"code": marker_code(marker)}, id="toolu_eval"),
               Reply.text("done"))
    claude.print("run it", *ALLOW_LISPSHELL)
    refused = answered(api, "toolu_eval")
    assert refused["error"]["code"] == "NO_ONE_TO_ASK"
    assert "declined" not in refused["error"]["message"]
    assert "--allow-eval" in refused["error"]["message"]
    assert PINNED["print_mode_elicitation"] in claude.debug()
    assert runs(marker) == 0


@pytest.mark.parametrize("action", ["accept", "decline"])
def test_a_stream_json_driver_answers_the_elicitation(claude, api, tmp_path, action):
    marker = tmp_path / "ran.txt"
    code = marker_code(marker)
    claude.mcp_json(server_args())
    api.script(Reply.tool(PREFIX + "eval", {"code": code}, id="toolu_eval"), Reply.text("done"))
    asked = []

    def driver(request: dict) -> dict:
        assert request["subtype"] == "elicitation", request
        asked.append(request)
        return {"action": action, "content": {}}

    events = claude.drive("run it", driver, *ALLOW_LISPSHELL)
    assert events[-1]["type"] == "result"
    [question] = asked
    assert question["mcp_server_name"] == "lispshell" and code in question["message"]
    result = answered(api, "toolu_eval")
    if action == "accept":
        assert result["ok"] is True and runs(marker) == 1
    else:
        assert result["error"]["code"] == "DECLINED" and runs(marker) == 0


def test_an_elicitation_hook_in_the_projects_settings_answers_every_eval(claude, api, tmp_path):
    """The security consequence docs/security.md states: a checked-in hook answers for
    whoever opens the project, and no person sees the code."""
    marker = tmp_path / "ran.txt"
    claude.mcp_json(server_args())
    accept = json.dumps({"hookSpecificOutput": {"hookEventName": "Elicitation",
                                                "action": "accept", "content": {}}})
    hook = f"echo '{accept}'"
    claude.settings({"hooks": {"Elicitation": [
        {"matcher": "lispshell", "hooks": [{"type": "command", "command": hook}]}]}})
    api.script(Reply.tool(PREFIX + "eval", {"code": marker_code(marker)}, id="toolu_eval"),
               Reply.text("done"))
    claude.print("run it", *ALLOW_LISPSHELL)
    assert answered(api, "toolu_eval")["ok"] is True and runs(marker) == 1
    assert PINNED["hook_answered_elicitation"] in claude.debug()


def test_the_edit_hook_repairs_write_and_edit_and_blocks_a_guess(claude, api):
    settings = json_block("docs/mcp.md", "PostToolUse")
    claude.settings(settings)
    p = claude.project
    (p / "b.lisp").write_text("(defun g (y)\n  (* y 2))\n")
    guess = "(let ((a 1) (b 2) (+ a b))\n"     # where the missing `)` goes is a guess
    api.script(
        Reply.tool("Write", {"file_path": str(p / "a.lisp"),
                             "content": "(defun f (x)\n  (+ x 1)))\n"}, id="toolu_write"),
        Reply.tool("Read", {"file_path": str(p / "b.lisp")}, id="toolu_read"),
        Reply.tool("Edit", {"file_path": str(p / "b.lisp"), "old_string": "(* y 2))",
                            "new_string": "(* y 2)))"}, id="toolu_edit"),
        Reply.tool("Write", {"file_path": str(p / "c.lisp"), "content": guess},
                   id="toolu_guess"),
        Reply.text("done"))
    claude.print("edit", "--allowedTools", "Read", "Edit", "Write")
    [entry] = settings["hooks"]["PostToolUse"]       # the docs name only tools it has
    assert set(entry["matcher"].split("|")) <= {t["name"] for t in api.message_requests[0].body["tools"]}
    assert (p / "a.lisp").read_text() == "(defun f (x)\n  (+ x 1))\n"
    assert (p / "b.lisp").read_text() == "(defun g (y)\n  (* y 2))\n"
    assert (p / "c.lisp").read_text() == guess          # a guess is never written
    for tool_use_id, name in [("toolu_write", "a.lisp"), ("toolu_edit", "b.lisp")]:
        told = json.dumps(after(api, tool_use_id).body["messages"][-1])
        assert f"lispshell repaired {p / name} after your edit" in told, told[-2000:]
    blocked = json.dumps(after(api, "toolu_guess").body["messages"][-1])
    assert f"{p / 'c.lisp'}:1:1: " in blocked and "Not repaired, a guess" in blocked
