"""tests/cases/paredit.md: source in, a paredit tool call, source (or error) out."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lispshell.tools.registry import ToolContext, call_tool

CASES = Path(__file__).parent / "cases" / "paredit.md"
_BLOCK = re.compile(r"^```(in|call|out|rule) ?(\S*)\n(.*?)^```$", re.M | re.S)


def _cases():
    out = []
    for section in re.split(r"^## ", CASES.read_text(), flags=re.M)[1:]:
        title = section.splitlines()[0]
        blocks = {kind: (arg, body[:-1]) for kind, arg, body in _BLOCK.findall(section)}
        out.append(pytest.param(blocks, id=title))
    return out


@pytest.mark.parametrize("blocks", _cases())
def test_case(blocks):
    dialect, code = blocks["in"]
    tool, args = blocks["call"]
    r = call_tool(tool, {"code": code, "dialect": dialect, **json.loads(args)}, ToolContext())
    expected = blocks["out"][1]
    if expected.startswith("error "):
        _, error_code, message = expected.split(" ", 2)
        assert not r["ok"] and r["error"]["code"] == error_code, r
        assert message in r["error"]["message"], r
        return
    assert r["ok"], r
    assert r["code"] == expected
    if "rule" in blocks:
        assert blocks["rule"][1] in r["rule"], r


def test_every_new_tool_has_a_case():
    tools = {p.values[0]["call"][0] for p in _cases()}
    assert {"sexp_convolute", "sexp_splice_killing", "sexp_raise"} <= tools
