"""The registry's promises: every answer has "ok", bad input never raises, names fit the API."""
import json

import pytest

from lispshell.tools import ToolContext, ToolError, all_tools, call_tool
from lispshell.tools.registry import NAME_PATTERN


def test_unknown_tool_is_an_error_not_an_exception():
    result = call_tool("no_such_tool", {})
    assert result["ok"] is False
    assert result["error"]["code"] == "UNKNOWN_TOOL"


@pytest.mark.parametrize("args", [None, [], "x", 3])
def test_non_object_arguments_are_refused(args):
    tool = all_tools()[0]
    result = call_tool(tool.name, args)
    assert result["ok"] is False and result["error"]["code"] == "BAD_INPUT"


def test_every_tool_is_well_formed():
    tools = all_tools()
    assert tools, "no tools registered"
    for tool in tools:
        assert NAME_PATTERN.match(tool.name)
        assert tool.description.strip()
        assert tool.input_schema.get("type") == "object"
        assert not (tool.read_only and tool.destructive), tool.name
        json.dumps(tool.definition())


def test_wrong_types_for_every_tool_never_raise():
    for tool in all_tools():
        for prop in tool.input_schema.get("properties", {}):
            result = call_tool(tool.name, {prop: {"x": [1]}})
            assert isinstance(result, dict) and "ok" in result, tool.name
            json.dumps(result)


def test_handler_bugs_become_internal_errors(temporary_tool):
    def boom(args, ctx):
        raise ZeroDivisionError("division by zero")

    temporary_tool("_test_boom", boom)
    result = call_tool("_test_boom", {})
    assert result["ok"] is False and result["error"]["code"] == "INTERNAL"
    assert "Traceback" not in json.dumps(result)


def test_resolve_path_stays_inside_root(tmp_path):
    (tmp_path / "inside.lisp").write_text("(a)")
    outside = tmp_path.parent / (tmp_path.name + "-outside")
    outside.mkdir()
    (tmp_path / "escape").symlink_to(outside)
    ctx = ToolContext(root=tmp_path)
    assert ctx.resolve_path("inside.lisp") == (tmp_path / "inside.lisp").resolve()
    for bad in ["../x.lisp", str(outside / "x.lisp"), "escape/x.lisp", "/etc/passwd"]:
        with pytest.raises(ToolError) as info:
            ctx.resolve_path(bad)
        assert info.value.code == "OUTSIDE_ROOT"


def test_every_schema_is_closed_and_valid_json_schema():
    from jsonschema import Draft202012Validator

    for tool in all_tools():
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        Draft202012Validator.check_schema(tool.input_schema)


@pytest.mark.parametrize("tool, wrong, real", [
    ("delete_form", "dryRun", "dry_run"), ("sexp_kill", "preview", "dry_run"),
    ("insert_form", "after", "position"), ("insert_form", "before", "form_name"),
    ("eval", "pkg", "package"), ("eval", "in_package", "package"),
    ("describe", "ns", "package"), ("validate_syntax", "lang", "dialect"),
    ("read_module", "path", "file_path"), ("read_form", "filePath", "file_path"),
    ("sexp_kill", "n", "count"), ("sexp_slurp_forward", "times", "count"),
    ("sexp_unwrap", "keep_body", "keep"), ("sexp_kill", "expr", "target"),
    ("replace_form", "newSource", "new_source"), ("find_references", "name", "symbol"),
])
def test_unknown_arguments_are_refused_naming_the_real_one(tool, wrong, real):
    result = call_tool(tool, {wrong: True})
    assert result["ok"] is False and result["error"]["code"] == "UNKNOWN_ARGUMENT", result
    assert real in result["error"]["did_you_mean"][wrong], result
    assert real in result["error"]["message"]


def test_an_unknown_argument_never_reaches_the_handler(temporary_tool):
    ran = []
    temporary_tool("_test_closed", lambda args, ctx: ran.append(args) or {},
                   schema={"type": "object", "properties": {"dry_run": {"type": "boolean"}}})
    result = call_tool("_test_closed", {"dryRun": True})
    assert result["error"]["code"] == "UNKNOWN_ARGUMENT" and ran == []
    assert call_tool("_test_closed", {"dry_run": None})["ok"] is True   # null: not given
    assert ran == [{}]


def test_schema_errors_name_the_field_and_the_fix():
    r = call_tool("sexp_wrap", {"code": "(f a)", "target": "a", "count": 0})
    assert r["error"] == {"code": "BAD_INPUT", "field": "count",
                          "message": "count must be a positive integer (got 0)"}
    r = call_tool("sexp_wrap", {"code": "(f a)", "target": "a", "wrapper": "angle"})
    assert r["error"]["message"] == 'wrapper must be one of round, square, curly (got "angle")'
    r = call_tool("read_form", {"code": "(f a)", "line": "1"})
    assert "give 1, not a string" in r["error"]["message"]
