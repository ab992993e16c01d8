"""Breakpoints for the model and for MCP clients, the same on SBCL, Guile and Clojure
(docs/debugging.md, docs/mcp.md): the model sets one through the gate, reads the call's
arguments at the level, evaluates in its frame and continues; where nobody can step (an MCP
client's eval) the call is left at once and the hit says the call and its arguments."""
from __future__ import annotations

import json

import pytest

from fake_anthropic import Reply
from mcp_harness import answer, connect, run
from test_llm_repl_pty import Shell as LLMShell

CASES = {
    # lisp: (definitions, the name as the Lisp prints it, the call as the hit shows it)
    "sbcl": ("(defun add (a b) (+ a b)) (defun caller () (* 10 (add 2 3)))", "ADD", "(ADD 2 3)"),
    "guile": ("(define (add a b) (+ a b)) (define (caller) (* 10 (add 2 3)))", "add",
              "(add 2 3)"),
    "clojure": ("(defn add [a b] (+ a b)) (defn caller [] (* 10 (add 2 3)))", "user/add",
                "(user/add 2 3)"),
}
PROMPTS = {"sbcl": "CL-USER>", "guile": "(guile-user)>", "clojure": "user>"}


@pytest.mark.parametrize("lisp", sorted(CASES))
def test_the_model_sets_a_breakpoint_reads_the_arguments_and_continues(tmp_path, api, lisp):
    defs, name, call = CASES[lisp]
    prompt = PROMPTS[lisp]
    api.script(Reply.tool("set_breakpoint", {"name": "add", "condition": "(> a 1)"},
                          text="I'll stop add when a > 1."),
               Reply.text("Set. Call (caller) and I'll read the arguments."),
               Reply.tool("backtrace", {}, text="Reading the call:"),
               Reply.tool("eval_in_frame", {"frame": 0, "code": "(* a b)"}, text="Their product:"),
               Reply.tool("invoke_restart", {"restart": 0}, text="a = 2 and b = 3; running it:"),
               Reply.text("add returned 5, so caller gives 50."))
    sh = LLMShell(tmp_path, api, "--lisp", lisp, "--no-project", groups=("live", "debug"))
    try:
        sh.expect(prompt, timeout=90)
        sh.submit(defs)
        sh.expect(prompt)
        sh.submit("stop add when a is over 1")
        sh.expect(";; break on add when (> a 1)")      # the gate shows what is set
        sh.answer("y")
        sh.expect("Call (caller)")
        sh.submit("(caller)")
        sh.expect(f"; break: {call}")
        sh.expect("[1] " + prompt)
        sh.submit("what are the arguments? go on")
        sh.expect("Their product:")
        sh.answer("y")                                  # eval_in_frame
        sh.expect("running it:")
        sh.answer("y")                                  # the restart: CONTINUE
        sh.expect('invoke_restart → {"values": ["50"]')
        sh.expect("add returned 5")
        # the level was left: the prompt has no "[1] " (it may follow the spinner's line on
        # the same row, after a carriage return, not a newline)
        assert not sh.expect(prompt).endswith("[1] ")
    finally:
        sh.close()
    content = [r.body["messages"][-1]["content"][0]["content"] for r in api.message_requests]
    assert '"set_by":"you"' in content[1].replace(" ", "") and "(> a 1)" in content[1]
    frames = json.loads(content[3])
    assert frames["condition"]["type"] == "LISPSHELL-BREAK"
    assert frames["frames"][0]["call"] == call
    assert frames["frames"][0]["locals"] == {"a": "2", "b": "3"}
    assert frames["restarts"][0] == f"0: [CONTINUE] Run {name} with these arguments."
    assert '"6"' in content[4]
    assert "50" in content[5]


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
