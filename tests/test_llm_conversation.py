"""The conversation's invariants, checked by the fake server's validator (the real API's rules)."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fake_anthropic import Invalid, validate_request
from lispshell.llm.conversation import (DROPPED_NOTE, INTERRUPTED_RESULT, Conversation,
                                        latest_conversation_path, new_conversation)

TOOLS = [{"name": n, "description": n, "input_schema": {"type": "object"}}
         for n in ("eval", "describe")]


def accepted(conv: Conversation, eval_sent: bool = True) -> dict:
    """The request the agent would send; raises Invalid when the API would refuse it."""
    messages = conv.for_request(eval_sent)
    if messages and messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": "next question"})
    if not messages:
        messages = [{"role": "user", "content": "first question"}]
    body = {"model": "m", "max_tokens": 10, "messages": messages,
            "tools": TOOLS if eval_sent else TOOLS[1:]}
    validate_request(body)
    return body


def test_person_evals_read_as_eval_calls_then_the_question():
    conv = Conversation()
    conv.record_eval("(+ 2 3)", '{"ok":true,"values":["5"]}')
    conv.add_user_text("add seven to that")
    body = accepted(conv)
    use = body["messages"][1]["content"][0]
    assert use["type"] == "tool_use" and use["name"] == "eval" and use["input"] == {"code": "(+ 2 3)"}
    last = body["messages"][2]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["tool_use_id"] == use["id"]
    assert '"5"' in last[0]["content"]
    assert last[1] == {"type": "text", "text": "add seven to that"}


def test_several_evals_in_a_row_mixed_with_questions_and_answers():
    conv = Conversation()
    for i in range(3):
        conv.record_eval(f"(* {i} 2)", f"{i * 2}")
    conv.add_user_text("what did I compute?")
    conv.add_assistant([{"type": "text", "text": "Doubles."}])
    conv.record_eval("(error \"x\")", "error", is_error=True)
    conv.add_user_text("why did that fail?")
    body = accepted(conv)
    ids = [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert len(ids) == len(set(ids)) == 4
    # the eval after the model's answer joins that assistant message, so roles still alternate
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"] * 4 + ["user"]
    assert any(b.get("is_error") for b in body["messages"][-1]["content"])


def test_empty_and_whitespace_text_never_enter():
    conv = Conversation()
    conv.add_user_text("   ")
    conv.add_user_text("hi")
    assert conv.add_assistant([{"type": "text", "text": ""}, {"type": "text", "text": " \n"}]) == []
    conv.add_user_text("again")
    conv.add_assistant([{"type": "text", "text": "answer  \n"}])
    body = accepted(conv)
    assert body["messages"][0]["content"] == [{"type": "text", "text": "hi"},
                                              {"type": "text", "text": "again"}]
    assert body["messages"][1]["content"] == [{"type": "text", "text": "answer"}]


def test_unanswered_tool_call_is_answered_by_repair():
    conv = Conversation()
    conv.add_user_text("q")
    conv.add_assistant([{"type": "text", "text": "let me"},
                        {"type": "tool_use", "id": "toolu_a", "name": "describe", "input": {}}])
    try:
        validate_request({"model": "m", "max_tokens": 5, "tools": TOOLS,
                          "messages": conv.messages + [{"role": "user", "content": "next"}]})
        raise AssertionError("the fake server should refuse a dangling tool_use")
    except Invalid as exc:
        assert "tool_result" in str(exc)
    fixed = conv.repair()
    assert fixed and conv.problems() == []
    body = accepted(conv)
    assert body["messages"][2]["content"][0]["content"] == INTERRUPTED_RESULT


def test_gate_off_turns_eval_pairs_into_text():
    conv = Conversation()
    conv.record_eval("(+ 2 3)", "5")
    conv.add_user_text("and?")
    body = accepted(conv, eval_sent=False)
    flat = json.dumps(body["messages"])
    assert "tool_use" not in flat and "[eval] (+ 2 3)" in flat


def test_trim_keeps_pairs_whole_and_says_so():
    conv = Conversation()
    for i in range(40):
        conv.record_eval(f"(list {i} " + "x " * 50 + ")", "y " * 50)
        conv.add_user_text(f"question {i} " + "z " * 50)
        conv.add_assistant([{"type": "text", "text": f"answer {i}"}])
    before = conv.estimate_tokens()
    dropped = conv.trim_to(before // 4)
    assert dropped > 0 and conv.estimate_tokens() <= before // 4
    note = conv.messages[0]["content"][0]["text"]
    assert note.startswith(DROPPED_NOTE) and "\n(list " in note  # what was defined is listed
    accepted(conv)
    conv.trim_to(conv.estimate_tokens() // 2)  # again: one note, not two
    texts = [b.get("text", "") for m in conv.messages for b in m["content"]]
    assert sum(t.startswith(DROPPED_NOTE) for t in texts) == 1
    accepted(conv)


def test_log_is_append_only_and_resumes(tmp_path):
    path = tmp_path / "c.jsonl"
    conv = Conversation(path, {"lisp": "sbcl"})
    conv.record_eval("(+ 2 3)", "5")
    conv.add_user_text("add seven")
    conv.add_assistant([{"type": "text", "text": "12"}])
    size = path.stat().st_size
    assert path.stat().st_mode & 0o077 == 0  # readable by the person only
    start = conv.checkpoint()
    conv.add_user_text("another")
    conv.rollback(start)
    assert path.stat().st_size > size  # a rollback is one more line, nothing rewritten
    with open(path, "a") as f:
        f.write('{"at": 0, "messages": [')  # a torn last line, as after a crash
    again = Conversation.load(path)
    assert again.messages == conv.messages and again.meta["lisp"] == "sbcl"
    again.add_user_text("continued")
    assert Conversation.load(path).messages[-1]["content"][-1]["text"] == "continued"


def test_latest_conversation_is_found():
    first = new_conversation()
    first.add_user_text("one")
    second = new_conversation()
    second.add_user_text("two")
    assert latest_conversation_path() == second.path


# ---------------------------------------------------------------- whatever happens, it stays valid
block = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.sampled_from(["", " ", "\n", "hello", "x "])),
    st.builds(lambda n: {"type": "tool_use", "id": f"toolu_{n}", "name": "describe", "input": {}},
              st.integers(0, 5)),
)
op = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(["", "  ", "why?", "add seven"])),
    st.tuples(st.just("assistant"), st.lists(block, max_size=4)),
    st.tuples(st.just("results"), st.lists(st.integers(0, 5), max_size=3)),
    st.tuples(st.just("eval"), st.sampled_from(["(+ 1 2)", "(error 1)"])),
    st.tuples(st.just("rollback"), st.integers(0, 6)),
    st.tuples(st.just("raw"), st.sampled_from(["user", "assistant"])),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(op, max_size=14))
def test_any_sequence_of_events_repairs_to_a_valid_history(ops):
    conv = Conversation()
    for kind, arg in ops:
        if kind == "user":
            conv.add_user_text(arg)
        elif kind == "assistant":
            conv.add_assistant(arg)
        elif kind == "results":
            conv.add_tool_results([(f"toolu_{n}", "r", False) for n in arg])
        elif kind == "eval":
            conv.record_eval(arg, "result")
        elif kind == "rollback":
            conv.rollback(min(arg, len(conv.messages)))
        else:  # something appended behind the conversation's back
            conv.messages.append({"role": arg, "content": [{"type": "text", "text": " "}]})
    conv.repair()
    assert conv.problems() == []
    accepted(conv)
