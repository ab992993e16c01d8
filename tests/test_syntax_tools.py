"""validate_syntax and repair_syntax through call_tool, as the LLM and MCP clients see them."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from lispshell.tools import ToolContext, call_tool, result_text


def test_validate_syntax_valid_and_invalid():
    r = call_tool("validate_syntax", {"code": "(defun f (x) (+ x 1))", "dialect": "cl"})
    assert r == {"ok": True, "valid": True, "forms": 1,
                 "report": "✓ Syntax valid: 1 top-level form(s)"}
    r = call_tool("validate_syntax", {"code": "(defun f (x)\n  (+ x 1)", "dialect": "sbcl"})
    assert r["ok"] and r["valid"] is False and r["complete"] is False
    assert r["report"].startswith("✗ Syntax invalid\n\nError: Unexpected end of input - "
                                  "unclosed parenthesis\nUnclosed parentheses: 1\n"
                                  "Approximate location: line 1")
    e = r["errors"][0]
    assert (e["line"], e["col"], e["suggest_line"], e["suggest_col"]) == (1, 1, 2, 10)
    # with the repair and how sure it is
    assert r["repair"] == {"level": "likely", "edits": ["2:10 inserted ')'"]}
    assert r["report"].endswith("Repair (likely: the indentation decides): 2:10 inserted ')'")


def test_validate_syntax_takes_the_sessions_dialect():
    code = "(let [x 1] {:a x})"
    assert call_tool("validate_syntax", {"code": code}, ToolContext(dialect="clojure"))["valid"]
    r = call_tool("validate_syntax", {"code": "#{1 2}", "dialect": "python"})
    assert r["ok"] is False and r["error"]["code"] == "BAD_INPUT"


def test_repair_syntax_answers_repaired_code_and_edits():
    r = call_tool("repair_syntax", {"code": "(let [x 1)\n  x)", "dialect": "clojure"})
    assert r["ok"] and r["changed"] and r["valid"] and r["level"] == "certain"
    assert r["changes"] == ["1:10 replaced ')' by ']'"]
    assert r["repaired"] == "(let [x 1]\n  x)"
    assert r["edits"] == [{"start": 9, "end": 10, "text": "]"}]
    r = call_tool("repair_syntax", {"code": '(a "b', "dialect": "cl"})
    assert r["ok"] and not r["changed"] and r["level"] == "guess" and "note" in r


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["validate_syntax", "repair_syntax"]),
       st.fixed_dictionaries({}, optional={
           "code": st.text(max_size=30) | st.integers() | st.none() | st.lists(st.text()),
           "dialect": st.sampled_from(["cl", "scheme", "clojure", "x"]) | st.integers()}))
def test_any_arguments_get_an_answer_never_a_traceback(name, args):
    r = call_tool(name, args)
    assert r["ok"] in (True, False)
    if not r["ok"]:
        assert r["error"]["code"] == "BAD_INPUT"
    json.loads(result_text(r))
