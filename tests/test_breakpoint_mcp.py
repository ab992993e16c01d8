"""A breakpoint hit where nobody can step (an MCP client's eval): on every Lisp the call is
left at once, the hit says the call and its arguments, and clearing the breakpoint lets the
same call run (docs/debugging.md, docs/mcp.md)."""
from __future__ import annotations

import pytest

from mcp_harness import answer, connect, run

CASES = {
    # lisp: (definitions, the name as the Lisp prints it, the call as the hit shows it)
    "sbcl": ("(defun add (a b) (+ a b)) (defun caller () (* 10 (add 2 3)))", "ADD", "(ADD 2 3)"),
    "guile": ("(define (add a b) (+ a b)) (define (caller) (* 10 (add 2 3)))", "add",
              "(add 2 3)"),
    "clojure": ("(defn add [a b] (+ a b)) (defn caller [] (* 10 (add 2 3)))", "user/add",
                "(user/add 2 3)"),
}


@pytest.mark.parametrize("lisp", sorted(CASES))
def test_a_breakpoint_hit_in_an_mcp_eval_unwinds_and_says_so(tmp_path, lisp):
    defs, name, call = CASES[lisp]

    async def scenario():
        async with connect(tmp_path, "--lisp", lisp, "--allow-eval") as client:
            assert answer(await client.call_tool("eval", {"code": defs}))["ok"]
            point = answer(await client.call_tool("set_breakpoint", {"name": "add"}))
            assert point["breakpoint"]["name"] == name, point
            hit = answer(await client.call_tool("eval", {"code": "(caller)"}))
            assert hit["error"]["code"] == "BREAKPOINT", hit
            assert f"{call}; a = 2; b = 3" in hit["error"]["message"], hit
            assert "the call was left at once" in hit["error"]["message"]
            assert "debug_level" not in hit["error"]
            cleared = answer(await client.call_tool("clear_breakpoint", {"name": "add"}))
            assert [p["name"] for p in cleared["removed"]] == [name] and cleared["left"] == []
            ok = answer(await client.call_tool("eval", {"code": "(caller)"}))
            assert ok["values"] == ["50"]
    run(scenario)
