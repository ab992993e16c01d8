"""The fake Messages API is only worth its tests if it refuses what the real API refuses."""
from __future__ import annotations

import json
import urllib.request

import anthropic
import pytest

from fake_anthropic import FakeAnthropic, Reply

TOOLS = [{"name": "eval", "description": "e", "input_schema": {"type": "object"}}]
USE = {"type": "tool_use", "id": "toolu_1", "name": "eval", "input": {"code": "1"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1"}


def user(*blocks):
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def text(t):
    return {"type": "text", "text": t}


BAD = {
    "first message from the assistant": dict(messages=[assistant(text("hi")), user(text("q"))]),
    "two user messages in a row": dict(messages=[user(text("a")), user(text("b"))]),
    "tool_use without its result": dict(messages=[user(text("q")), assistant(USE), user(text("next"))]),
    "result not first": dict(messages=[user(text("q")), assistant(USE), user(text("x"), RESULT)]),
    "result answering nothing": dict(messages=[user(RESULT)]),
    "duplicate ids": dict(messages=[user(text("q")), assistant(USE), user(RESULT),
                                    assistant(USE), user(RESULT)]),
    "empty text": dict(messages=[user(text(""))]),
    "whitespace text": dict(messages=[user(text("  \n"))]),
    "empty assistant turn": dict(messages=[user(text("q")), assistant(), user(text("again"))]),
    "tool name with a dot": dict(messages=[user(text("q"))],
                                 tools=[{"name": "sexp.guard", "input_schema": {"type": "object"}}]),
    "tool_use of an unknown tool": dict(messages=[user(text("q")),
                                                  assistant({**USE, "name": "other"}),
                                                  user({**RESULT})]),
    "five cache breakpoints": dict(messages=[user(*[{**text(f"t{i}"), "cache_control": {"type": "ephemeral"}}
                                                    for i in range(5)])]),
    "temperature": dict(messages=[user(text("q"))], temperature=0.5),
    "dangling tool_use at the end": dict(messages=[user(text("q")), assistant(USE)]),
}


@pytest.fixture(scope="module")
def api():
    with FakeAnthropic() as server:
        yield server


@pytest.mark.parametrize("case", sorted(BAD))
def test_the_fake_refuses_what_the_api_refuses(api, case):
    params = {"model": "m", "max_tokens": 10, "tools": TOOLS, **BAD[case]}
    client = anthropic.Anthropic(api_key=api.key, base_url=api.url, max_retries=0)
    extra = {}
    if "temperature" in params:  # the SDK 2.x has no such parameter any more
        extra["extra_body"] = {"temperature": params.pop("temperature")}
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(**params, **extra)
    assert info.value.type == "invalid_request_error"
    assert api.requests[-1].error


def test_the_fake_accepts_a_valid_history_and_answers_json_and_sse(api):
    client = anthropic.Anthropic(api_key=api.key, base_url=api.url, max_retries=0)
    messages = [user(text("q")), assistant(text("let me"), USE), user(RESULT, text("and?"))]
    api.script(Reply.text("json answer"), Reply.tool("eval", {"code": "(+ 1 2)"}, text="sse"))
    reply = client.messages.create(model="m", max_tokens=10, tools=TOOLS, messages=messages)
    assert reply.content[0].text == "json answer"
    with client.messages.stream(model="m", max_tokens=10, tools=TOOLS, messages=messages) as s:
        final = s.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[1].input == {"code": "(+ 1 2)"}


def test_auth_and_version_headers_are_required(api):
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [user(text("q"))]}).encode()

    def post(headers):
        req = urllib.request.Request(api.url + "/v1/messages", body,
                                     {"content-type": "application/json", **headers})
        try:
            return urllib.request.urlopen(req).status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert post({"anthropic-version": "2026-10-21"}) == 401
    assert post({"authorization": "Bearer wrong", "anthropic-version": "2026-10-21"}) == 401
    assert post({"x-api-key": api.key}) == 400
    api.script(Reply.text("ok"))
    assert post({"x-api-key": api.key, "anthropic-version": "2023-06-01"}) == 200
