"""The agent loop against the fake Messages API (real SDK, real sockets) and a real SBCL.

Every test ends by asking one more question and checking that the fake server accepted every
request: whatever went wrong before, the conversation must still be valid for the API.
"""
from __future__ import annotations

import asyncio
import time

import anthropic
import httpx2
import pytest

from fake_anthropic import Reply, tool_block
from lispshell import config as config_mod
from lispshell.lisp.session import make_session
from lispshell.llm.agent import NO_KEY_MESSAGE, Agent, Display, LLMSettings, make_client
from lispshell.llm.conversation import Conversation
from lispshell.tools.gate import Decision, EvalGate
from lispshell.tools.registry import ToolContext

SYSTEM = "You are a test assistant in lispshell."


@pytest.fixture(scope="module")
def sbcl():
    session = make_session("sbcl", config_mod.load())
    session.start()
    yield session
    session.close()


class Confirm:
    """A scripted person at the gate: answers in order, records what was asked."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked: list[tuple[str, int, int]] = []

    def __call__(self, code, index, total):
        self.asked.append((code, index, total))
        answer = self.answers.pop(0) if self.answers else "n"
        if isinstance(answer, Decision):
            return answer
        return Decision(answer == "y", code, "" if answer == "y" else "not now")


def make_agent(api, session=None, mode="ask", confirm=None, groups=("live",), **settings):
    s = LLMSettings(model="claude-test", tool_groups=list(groups), timeout=settings.pop("timeout", 10),
                    **settings)
    client = anthropic.AsyncAnthropic(api_key=api.key, base_url=api.url,
                                      timeout=httpx2.Timeout(s.timeout, connect=2.0),
                                      max_retries=s.max_retries)
    ctx = ToolContext(session=(lambda: session) if session else None,
                      gate=EvalGate(mode, confirm), eval_timeout=5.0)
    return Agent(settings=s, conversation=Conversation(), ctx=ctx, system=SYSTEM,
                 display=Display(), client=client)


def run(agent, coro):
    """Run on the agent's own event loop: the async client's connections belong to one loop,
    as in the REPL."""
    if not hasattr(agent, "_test_runner"):
        agent._test_runner = asyncio.Runner()
    return agent._test_runner.run(coro)


def ask(agent, text):
    run(agent, agent.ask(text))


def still_valid(agent, api):
    """One more question goes through, and no request was ever refused."""
    api.script(Reply.text("still here"))
    ask(agent, "are you still there?")
    assert api.invalid == [], [r.error for r in api.invalid]
    assert agent.conv.problems() == []
    assert agent.display.all_text.endswith("still here")


def test_the_dialogue_add_seven_to_that(api, sbcl):
    confirm = Confirm("y")
    agent = make_agent(api, sbcl, confirm=confirm)
    result = sbcl.eval("(+ 2 3)")
    from lispshell.tools.live import eval_result
    agent.record_eval("(+ 2 3)", eval_result(result))
    api.script(Reply.tool("eval", {"code": "(+ 5 7)"}, text="5 plus seven:"),
               Reply.text("It is 12."))
    ask(agent, "add seven to that")
    first = api.message_requests[0].body["messages"]
    assert first[1]["content"][0]["input"] == {"code": "(+ 2 3)"}
    assert '"5"' in first[2]["content"][0]["content"]
    assert first[2]["content"][1]["text"] == "add seven to that"
    assert confirm.asked == [("(+ 5 7)", 1, 1)]
    second = api.message_requests[1].body["messages"][-1]["content"][0]
    assert second["type"] == "tool_result" and '"12"' in second["content"]
    assert ("tool", "eval", {"code": "(+ 5 7)"}) in [e[:3] for e in agent.display.events]
    still_valid(agent, api)


def test_several_evals_in_one_turn_are_asked_one_by_one_in_order(api, sbcl, tmp_path):
    confirm = Confirm("y", "y", "y")
    agent = make_agent(api, sbcl, confirm=confirm)
    codes = ["(defparameter *trail* (list 1))", "(push 2 *trail*)", "(push 3 *trail*)"]
    api.script(Reply.of(*[tool_block("eval", {"code": c}) for c in codes]), Reply.text("done"))
    ask(agent, "build a trail")
    assert confirm.asked == [(codes[0], 1, 3), (codes[1], 2, 3), (codes[2], 3, 3)]
    assert [" ".join(v.split()) for v in sbcl.eval("*trail*").values] == ["(3 2 1)"]
    still_valid(agent, api)


def test_a_refused_eval_reaches_the_model_and_nothing_runs(api, sbcl, tmp_path):
    target = tmp_path / "refused.txt"
    code = f'(with-open-file (s "{target}" :direction :output) (write-line "x" s))'
    confirm = Confirm(Decision(False, code, "too risky"))
    agent = make_agent(api, sbcl, confirm=confirm)
    api.script(Reply.tool("eval", {"code": code}), Reply.text("Understood, I will not."))
    ask(agent, "write a file")
    assert not target.exists()
    result = api.message_requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] is True
    assert "The person declined to evaluate this code." in result["content"]
    assert "too risky" in result["content"]
    assert "Understood" in agent.display.all_text  # the turn went on
    still_valid(agent, api)


def test_an_edited_eval_tells_the_model_what_ran(api, sbcl):
    confirm = Confirm(Decision(True, "(+ 1 1)", edited=True))
    agent = make_agent(api, sbcl, confirm=confirm)
    api.script(Reply.tool("eval", {"code": "(+ 100 1)"}), Reply.text("ok"))
    ask(agent, "compute")
    content = api.message_requests[1].body["messages"][-1]["content"][0]["content"]
    assert '"2"' in content and "(+ 1 1)" in content and "edited" in content


def test_yolo_runs_without_asking(api, sbcl):
    confirm = Confirm()
    agent = make_agent(api, sbcl, mode="yolo", confirm=confirm)
    api.script(Reply.tool("eval", {"code": "(* 11 11)"}), Reply.text("121"))
    ask(agent, "square eleven")
    assert confirm.asked == []
    assert '"121"' in api.message_requests[1].body["messages"][-1]["content"][0]["content"]
    still_valid(agent, api)


def test_gate_off_sends_no_eval_tool_and_history_still_valid(api, sbcl):
    agent = make_agent(api, sbcl, mode="off")
    agent.record_eval("(+ 2 3)", {"ok": True, "values": ["5"]})
    api.script(Reply.text("five"))
    ask(agent, "what was that?")
    body = api.message_requests[0].body
    assert "eval" not in [t["name"] for t in body["tools"]]
    assert "describe" in [t["name"] for t in body["tools"]]
    still_valid(agent, api)


def test_ctrl_c_mid_stream_keeps_the_text_and_a_valid_history(api):
    agent = make_agent(api)
    api.script(Reply.stall("First line of the answer.\nSecond line, then a tool:",
                           tool_block("describe", {"symbol": "car"}), after=1, delay=0.01))

    async def scenario():
        task = asyncio.ensure_future(agent.ask("explain car"))
        while "First line" not in agent.display.all_text:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(agent, scenario())
    last = agent.conv.messages[-1]
    assert last["role"] == "assistant" and last["content"][-1]["text"].endswith("[interrupted]")
    assert all(b["type"] == "text" for b in last["content"])  # the unfinished call is gone
    api.release_stalls()
    still_valid(agent, api)


def test_ctrl_c_during_a_long_eval_interrupts_the_lisp(api, sbcl):
    agent = make_agent(api, sbcl, mode="yolo")
    api.script(Reply.tool("eval", {"code": "(sleep 20)"}))

    async def scenario():
        task = asyncio.ensure_future(agent.ask("sleep"))
        deadline = time.monotonic() + 10
        while not sbcl.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(agent, scenario())
    results = agent.conv.messages[-1]["content"]
    assert results[0]["type"] == "tool_result" and results[0]["is_error"]
    assert "Interrupted" in results[0]["content"]
    assert sbcl.eval("(+ 1 1)", timeout=10).values == ["2"]  # the image is alive and free
    still_valid(agent, api)


def test_refusal_with_nothing_said_takes_the_question_out(api):
    agent = make_agent(api)
    api.script(Reply(blocks=[], stop_reason="refusal"))
    ask(agent, "something refused")
    assert any("declined" in n for n in agent.display.messages("notice"))
    assert agent.conv.messages == []
    still_valid(agent, api)


def test_refusal_after_some_text_keeps_the_text(api):
    agent = make_agent(api)
    api.script(Reply.text("I can't help with", stop_reason="refusal"))
    ask(agent, "something refused")
    assert agent.conv.messages[-1]["content"] == [{"type": "text", "text": "I can't help with"}]
    still_valid(agent, api)


def test_a_tool_that_raises_becomes_an_error_result(api, temporary_tool):
    def explode(args, ctx):
        raise RuntimeError("kaboom")

    temporary_tool("explode_for_tests", explode)
    agent = make_agent(api, groups=("live", "tests"))
    api.script(Reply.tool("explode_for_tests", {}), Reply.text("that tool broke"))
    ask(agent, "use the bad tool")
    result = api.message_requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "kaboom" in result["content"]
    assert "Traceback" not in result["content"]
    still_valid(agent, api)


def test_api_error_mid_stream_is_one_line_and_keeps_history_valid(api):
    agent = make_agent(api)
    api.script(Reply.stream_error("Half an answer", tool_block("describe", {"symbol": "car"}),
                                  after=1))
    ask(agent, "question")
    errors = agent.display.messages("error")
    assert len(errors) == 1 and "overloaded" in errors[0]
    assert agent.conv.messages[-1]["role"] == "user"  # the partial answer is not kept
    still_valid(agent, api)


def test_max_tokens_cutting_a_tool_call_does_not_run_it(api, sbcl):
    confirm = Confirm("y", "y")
    agent = make_agent(api, sbcl, confirm=confirm)
    api.script(Reply.of("Two steps:", tool_block("eval", {"code": "(+ 20 1)"}),
                        tool_block("eval", {"code": "(defparameter *cut* 1)"}),
                        cut_last_tool=True),
               Reply.text("ok, shorter"))
    ask(agent, "do two things")
    assert [c for c, _, _ in confirm.asked] == ["(+ 20 1)"]  # only the complete call ran
    assert sbcl.eval("(boundp '*cut*)").values == ["NIL"]
    sent = api.message_requests[1].body["messages"][-1]["content"]
    assert sent[0]["type"] == "tool_result" and "cut off" in sent[-1]["text"]
    assert any("max_tokens" in n for n in agent.display.messages("notice"))
    still_valid(agent, api)


def test_overloaded_twice_then_success_is_retried_by_the_sdk(api):
    agent = make_agent(api)
    api.script(Reply.overloaded(), Reply.overloaded(), Reply.text("made it"))
    ask(agent, "hello")
    assert agent.display.all_text == "made it" and agent.display.messages("error") == []
    assert len(api.message_requests) == 3
    still_valid(agent, api)


@pytest.mark.parametrize("reply,expected", [
    (Reply.overloaded(), "overloaded (529)"),
    (Reply.rate_limited(), "Rate limited (429)"),
    (Reply.error(500, "api_error", "boom"), "API error (500)"),
    (Reply.error(404, "not_found_error", "model: x"), "check the model name"),
])
def test_each_error_class_gets_one_line(api, reply, expected):
    agent = make_agent(api, max_retries=0)
    api.script(reply)
    ask(agent, "hello")
    errors = agent.display.messages("error")
    assert len(errors) == 1 and expected in errors[0] and "\n" not in errors[0]
    still_valid(agent, api)


def test_bad_key_connection_and_timeout_errors(api):
    agent = make_agent(api, max_retries=0)
    agent._client = anthropic.AsyncAnthropic(api_key="wrong-key", base_url=api.url, max_retries=0)
    ask(agent, "hello")
    assert "Authentication failed (401)" in agent.display.messages("error")[-1]
    assert "wrong-key" not in str(agent.display.events)

    agent._client = anthropic.AsyncAnthropic(api_key=api.key, base_url="http://127.0.0.1:9",
                                             max_retries=0)
    ask(agent, "hello")
    assert "Cannot reach the API" in agent.display.messages("error")[-1]

    agent._client = anthropic.AsyncAnthropic(api_key=api.key, base_url=api.url, max_retries=0,
                                             timeout=httpx2.Timeout(1.0, connect=1.0))
    api.script(Reply.stall("Starting to answer", after=0))  # silent after the first bytes
    ask(agent, "hello")
    assert "Timed out" in agent.display.messages("error")[-1]
    api.release_stalls()
    agent._client = anthropic.AsyncAnthropic(api_key=api.key, base_url=api.url, max_retries=0)
    api.requests.clear()  # the refused key was meant to be refused
    still_valid(agent, api)


def test_no_key_says_how_to_enable_and_sends_nothing(monkeypatch, tmp_path):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))
    assert make_client(LLMSettings()) is None
    agent = Agent(settings=LLMSettings(), conversation=Conversation(), ctx=ToolContext(),
                  system=SYSTEM, display=Display())
    ask(agent, "hello")
    assert agent.display.messages("error") == [NO_KEY_MESSAGE]
    assert "ANTHROPIC_API_KEY" in NO_KEY_MESSAGE


def test_key_and_base_url_come_from_the_environment(monkeypatch, api):
    monkeypatch.setenv("ANTHROPIC_API_KEY", api.key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    agent = Agent(settings=LLMSettings(model="m", tool_groups=["live"]), conversation=Conversation(),
                  ctx=ToolContext(gate=EvalGate("ask")), system=SYSTEM, display=Display())
    api.script(Reply.rate_limited(), Reply.text("from env"))
    ask(agent, "hi")
    headers = {k.lower(): v for k, v in api.requests[-1].headers.items()}
    assert headers["authorization"] == f"Bearer {api.key}"
    assert headers["anthropic-version"]
    assert agent.display.all_text == "from env"
    assert agent.display.messages("notice") == ["The API answered 429 (rate limited); retrying..."]


def test_tool_round_limit_stops_with_a_clear_message(api):
    agent = make_agent(api, max_tool_rounds=3)
    api.script(*[Reply.tool("describe", {"symbol": "car"}) for _ in range(5)])
    ask(agent, "loop forever")
    assert len(api.message_requests) == 3
    assert any("Stopped after 3 tool rounds" in n for n in agent.display.messages("notice"))
    still_valid(agent, api)


def test_cached_prefix_is_byte_identical_and_read_from_cache(api, sbcl):
    agent = make_agent(api, sbcl, mode="yolo", groups=("live", "syntax", "delimiters", "structure"))
    api.script(Reply.tool("eval", {"code": "(+ 1 2)"}), Reply.text("3"), Reply.text("again"))
    ask(agent, "one")
    agent.record_eval("(+ 2 2)", {"ok": True, "values": ["4"]})
    ask(agent, "two")
    bodies = [r.body for r in api.message_requests]
    import json
    prefixes = {json.dumps([b["tools"], b["system"]], sort_keys=False) for b in bodies}
    assert len(prefixes) == 1
    assert all(b["cache_control"] == {"type": "ephemeral"} for b in bodies)
    from fake_anthropic import count_cache_breakpoints  # the prefix's one + the automatic one
    assert {count_cache_breakpoints(b) for b in bodies} == {2}
    assert bodies[0]["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert agent.total.cache_read > 0 and agent.total.cache_write > 0
    assert "cache read" in agent.usage_report()


def test_tool_definitions_stay_lean(api):
    """Tool definitions are sent with every request: keep the live group small."""
    agent = make_agent(api, groups=("live",))
    import json
    size = len(json.dumps(agent.tool_definitions()))
    assert size < 2600, size


def test_long_history_is_trimmed_without_splitting_pairs(api):
    agent = make_agent(api, context_tokens=9000, max_tokens=500)
    for i in range(60):
        agent.record_eval(f"(list {i} " + "x " * 40 + ")", {"ok": True, "values": ["y " * 40]})
    api.script(Reply.text("fits"))
    ask(agent, "summarise")
    assert any("dropped" in n for n in agent.display.messages("notice"))
    assert api.invalid == []
    still_valid(agent, api)


def test_prompt_too_long_is_trimmed_and_retried_once(api):
    agent = make_agent(api)
    for i in range(30):
        agent.record_eval(f"(list {i} " + "x " * 40 + ")", {"ok": True, "values": ["y " * 40]})
    api.script(Reply.error(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000"),
               Reply.text("shorter now"))
    before = len(agent.conv.messages)
    ask(agent, "summarise all that")
    assert agent.display.all_text == "shorter now"
    assert any("dropped" in n for n in agent.display.messages("notice"))
    assert len(agent.conv.messages) < before
    api.requests[:] = [r for r in api.requests if "too long" not in (r.error or "")]
    still_valid(agent, api)


def test_max_tokens_cutting_text_after_a_complete_call_still_runs_it(api):
    agent = make_agent(api)
    api.script(Reply.of(tool_block("describe", {"symbol": "car"}), "and then I wou",
                        stop_reason="max_tokens"),
               Reply.text("ok"))
    ask(agent, "look up car")
    sent = api.message_requests[1].body["messages"][-1]["content"]
    assert sent[0]["type"] == "tool_result" and not any("cut off" in b.get("text", "") for b in sent)
    still_valid(agent, api)
