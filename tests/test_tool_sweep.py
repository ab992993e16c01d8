"""Every tool in the registry, fed bad input: one clear error each, never a traceback, never an
answer that cannot be sent as JSON. Generated from the registry, so a tool is covered the day
it is added (issue 9)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lispshell.lisp.session import make_session
from lispshell import config as config_mod
from lispshell.tools.gate import EvalGate
from lispshell.tools.registry import MAX_STRING, ToolContext, all_tools, call_tool

TOOLS = all_tools()
BAD_STRINGS = {
    "huge": "(" * 10 + "x" * (MAX_STRING + 10),
    "nested": "(" * 100_000 + ")" * 100_000,
    "unclosed": "(" * 100_000,
    "nul": "(a \x00 b)",
    "surrogate": "(a \ud800 b)",
    "empty": "",
}
WRONG_TYPES = [None, 5, True, 1.5, [], {}, ["x"], {"text": 1}]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    (root / "ok.lisp").write_text("(defun f (x) x)\n")
    (root / "latin1.lisp").write_bytes(b"(defun caf\xe9 () 1)\n")      # not UTF-8
    (root / "dir.lisp").mkdir()
    os.symlink("loop.lisp", root / "loop.lisp")                      # a symlink to itself
    os.mkfifo(root / "pipe.lisp")                  # opening it waited for a writer forever
    session = make_session("sbcl", config_mod.load())
    session.start()
    yield ToolContext(session=lambda: session, gate=EvalGate("off"), root=root,
                      eval_timeout=20.0, output_cap=4096)
    session.close()


def check(name: str, result: dict) -> None:
    assert isinstance(result, dict) and isinstance(result.get("ok"), bool), (name, result)
    # Whatever came in, what goes out can be sent as UTF-8 JSON.
    json.dumps(result, ensure_ascii=False).encode("utf-8")
    if not result["ok"]:
        error = result["error"]
        assert error["code"] != "INTERNAL", (name, error)
        assert error["message"] and "Traceback" not in error["message"], (name, error)


def base_args(tool) -> dict:
    """Valid-looking values for every required argument."""
    props = tool.input_schema.get("properties", {})
    out = {}
    for key in tool.input_schema.get("required", []):
        kind = props.get(key, {}).get("type")
        enum = props.get(key, {}).get("enum")
        out[key] = enum[0] if enum else {"string": "x", "integer": 0, "array": [],
                                         "object": {}, "boolean": False}.get(kind, "x")
    return out


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_bad_arguments_get_clear_errors(tool, ctx):
    check(tool.name, call_tool(tool.name, "not an object", ctx))
    check(tool.name, call_tool(tool.name, {**base_args(tool), "unexpected": 1}, ctx))
    for key in tool.input_schema.get("required", []):
        args = base_args(tool)
        del args[key]
        result = call_tool(tool.name, args, ctx)
        check(tool.name, result)
        assert result["ok"] is False and result["error"]["code"] == "BAD_INPUT"
    for key in tool.input_schema.get("properties", {}):
        for value in WRONG_TYPES:
            check(f"{tool.name}.{key}={value!r}", call_tool(tool.name, {**base_args(tool),
                                                                        key: value}, ctx))


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_hostile_strings_get_clear_errors(tool, ctx):
    props = tool.input_schema.get("properties", {})
    for key, spec in props.items():
        if spec.get("type") != "string" or spec.get("enum"):
            continue
        for label, text in BAD_STRINGS.items():
            if tool.evaluates and key == "code":
                pass        # the gate is off: nothing runs, the answer must still be clean
            result = call_tool(tool.name, {**base_args(tool), key: text}, ctx)
            check(f"{tool.name}.{key}={label}", result)


FILE_CASES = {
    "missing": "no/such/file.lisp",
    "directory": "dir.lisp",
    "not utf-8": "latin1.lisp",
    "symlink loop": "loop.lisp",
    "named pipe": "pipe.lisp",
    "too long": "x" * 5000 + ".lisp",
    "no such user": "~nosuchuser-zz/x.lisp",
    "surrogate": "\udcff.lisp",
    "nul": "a\x00.lisp",
    "outside": "/etc/passwd",
}


@pytest.mark.parametrize("tool", [t for t in TOOLS if "file_path" in t.input_schema.get(
    "properties", {})], ids=lambda t: t.name)
def test_bad_paths_get_clear_errors(tool, ctx):
    for label, path in FILE_CASES.items():
        result = call_tool(tool.name, {**base_args(tool), "file_path": path}, ctx)
        check(f"{tool.name} {label}", result)
        if tool.name == "find_references" and label == "directory":
            continue                       # it searches a folder's files: that is its job
        assert result["ok"] is False, (tool.name, label, result)


def test_a_looping_symlink_does_not_break_a_folder_search(ctx):
    result = call_tool("find_references", {"file_path": ".", "symbol": "f"}, ctx)
    check("find_references", result)
    assert result["ok"] is True and result["count"] >= 1, result
    assert Path(ctx.root, "ok.lisp").exists()


@pytest.mark.parametrize("tool, code", [("read_module", "(" * 30_000),
                                        ("validate_syntax", "(" * 1_000_000),
                                        ("repair_syntax", "(" * 1_000_000),
                                        ("sexp_wrap", "(" * 30_000 + ")" * 30_000)])
def test_absurdly_deep_text_is_refused_at_once(tool, code):
    args = {"code": code, "dialect": "cl", **({"path": [0]} if tool == "sexp_wrap" else {})}
    result = call_tool(tool, args)
    assert result["error"]["code"] == "TOO_DEEP", result
    assert "over the limit of 2000" in result["error"]["message"]


def test_deep_but_real_nesting_still_works():
    code = "(" * 1500 + "x" + ")" * 1500
    assert call_tool("validate_syntax", {"code": code, "dialect": "cl"})["valid"] is True


@pytest.mark.parametrize("tool", ["validate_syntax", "repair_syntax", "read_module",
                                  "check_syntax"])
def test_a_million_stray_closers_are_refused_at_once(tool):
    """They nest nothing, so the depth limit let them through: repair weighed every one against
    every other (minutes) and read_module measured each one's line prefix (quadratic)."""
    result = call_tool(tool, {"code": ")" * 1_000_000, "dialect": "cl"})
    assert result["error"]["code"] == "TOO_LARGE", result
    assert "1,000,000 unmatched delimiters, over the limit of 2,000" in result["error"]["message"]


def test_stray_closers_do_not_hide_deep_nesting():
    result = call_tool("read_module", {"code": ")" * 1000 + "(" * 3000, "dialect": "cl"})
    assert result["error"]["code"] == "TOO_DEEP"
    assert "nests 3000 levels deep" in result["error"]["message"]


def test_a_repair_called_directly_gives_up_on_too_many_problems():
    """check --fix and the hook call repair() without the registry's limit."""
    from lispshell.syntax.repair import TOO_MANY, repair

    r = repair("(defun f (x) x)\n" + ")" * 5000, "cl")
    assert r.edits == [] and r.level == "guess" and r.why.startswith(TOO_MANY)
    fixed = repair("(defun f (x) x)))\n", "cl")
    assert fixed.text == "(defun f (x) x)\n" and fixed.edits


def test_many_stray_closers_in_a_file_are_refused_by_the_form_tools(tmp_path):
    (tmp_path / "c.lisp").write_text("(defun f (x) x)\n" + ")" * 3000 + "\n")
    result = call_tool("read_module", {"file_path": "c.lisp"}, ToolContext(root=tmp_path))
    assert result["error"]["code"] == "TOO_LARGE", result


@pytest.mark.parametrize("tool, key", [("describe", "symbol"), ("symbol_value", "symbol"),
                                       ("apropos", "pattern"), ("macroexpand", "form")])
def test_a_look_up_of_megabytes_is_refused_before_it_is_sent(tool, key):
    """Guile took 19 s to read an 8 MB name it was sent, past an 8 s timeout the answer then
    claimed; no name or macro form is that long."""
    result = call_tool(tool, {key: "x" * 8_000_000}, ToolContext())
    assert result["error"]["code"] == "TOO_LARGE", result
    assert "over the limit of 65536 for a look-up" in result["error"]["message"]
