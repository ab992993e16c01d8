"""Pieces of `lispshell mcp` that need no server: flag parsing, the confirmation ledger, the
token gate's answers."""
from __future__ import annotations

import argparse

import anyio
import mcp_types as types
import pytest

from lispshell.mcp import consent, http
from lispshell.mcp.main import parse_http


@pytest.mark.parametrize("value, expected", [
    ("8765", ("127.0.0.1", 8765)), ("0", ("127.0.0.1", 0)),
    ("localhost:80", ("localhost", 80)), ("0.0.0.0:9000", ("0.0.0.0", 9000)),
    ("[::1]:8080", ("::1", 8080)), (":7000", ("127.0.0.1", 7000)),
])
def test_parse_http(value, expected):
    assert parse_http(value) == expected


@pytest.mark.parametrize("value", ["", "x", "host:", "host:70000", "1:2:x", "-1"])
def test_parse_http_refuses(value):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_http(value)


def round_trip_consent(ledger, responses=None, state=None, can_elicit=True, call="eval-call"):
    return consent.EvalConsent(lisp="sbcl", can_elicit=can_elicit, modern=True, ledger=ledger,
                               call=call, input_responses=responses, request_state=state)


def test_a_confirmation_runs_only_the_code_it_was_asked_for_and_only_once():
    ledger = consent.Ledger()
    first = round_trip_consent(ledger)
    decision = first.confirm("(delete-everything)")
    assert not decision.approved and first.pending
    ticket = first.input_required().request_state
    key = consent.question_key("(delete-everything)")
    yes = {key: types.ElicitResult(action="accept")}

    other = round_trip_consent(ledger, {consent.question_key("(other)"): yes[key]}, ticket)
    assert not other.confirm("(other)").approved  # the ticket names another code; now spent
    retry = round_trip_consent(ledger, yes, ticket)
    assert not retry.confirm("(delete-everything)").approved  # spent ticket: asks again
    assert retry.pending

    fresh = round_trip_consent(ledger)
    fresh.confirm("(delete-everything)")
    ticket = fresh.input_required().request_state
    elsewhere = round_trip_consent(ledger, yes, ticket, call="another-call")
    assert not elsewhere.confirm("(delete-everything)").approved  # issued for another call

    fresh = round_trip_consent(ledger)
    fresh.confirm("(delete-everything)")
    ticket = fresh.input_required().request_state
    assert round_trip_consent(ledger, yes, ticket).confirm("(delete-everything)").approved
    assert not round_trip_consent(ledger, yes, ticket).confirm("(delete-everything)").approved


def test_a_decline_is_the_persons_and_a_cancel_is_no_ones():
    ledger = consent.Ledger()
    for action, by_person, reason in [("decline", True, consent.DECLINED),
                                      ("cancel", False, consent.NO_ONE_ANSWERED)]:
        asking = round_trip_consent(ledger)
        asking.confirm("(f)")
        ticket = asking.input_required().request_state
        answer = {consent.question_key("(f)"): types.ElicitResult(action=action)}
        decision = round_trip_consent(ledger, answer, ticket).confirm("(f)")
        assert not decision.approved and decision.reason == reason
        assert decision.by_person is by_person
        assert decision.refusal == ("NOT_ALLOWED" if by_person else "NO_ONE_TO_ASK")


def test_without_elicitation_eval_is_refused_with_the_way_out():
    decision = round_trip_consent(consent.Ledger(), can_elicit=False).confirm("(f)")
    assert not decision.approved and "--allow-eval" in decision.reason


def test_ledger_is_bounded():
    ledger = consent.Ledger(capacity=3)
    tickets = [ledger.issue("c", {"k": None}) for _ in range(5)]
    assert ledger.redeem(tickets[0], "c") == {} and ledger.redeem(tickets[1], "c") == {}
    assert ledger.redeem(tickets[4], "c") == {"k": None}
    assert ledger.redeem(tickets[4], "c") == {}
    assert ledger.redeem(None, "c") == {} and ledger.redeem("made-up", "c") == {}


def test_token_gate_answers_401_and_passes_the_right_token():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    gate = http.BearerTokenGate(app, "s3cret-token-0123456789")

    async def request(headers):
        sent = []

        async def send(message):
            sent.append(message)
        await gate({"type": "http", "path": "/mcp", "headers": headers}, None, send)
        return sent[0]["status"]

    async def scenario():
        assert await request([]) == 401
        assert await request([(b"authorization", b"Bearer nope")]) == 401
        assert await request([(b"authorization", b"s3cret-token-0123456789")]) == 401
        assert await request([(b"authorization", b"Bearer s3cret-token-0123456789")]) == 200
    anyio.run(scenario)
    assert seen == ["/mcp"]


def test_fixed_token_from_the_environment(monkeypatch):
    monkeypatch.setenv(http.TOKEN_ENV, "a-fixed-token-for-my-config")
    assert http.make_token() == "a-fixed-token-for-my-config"
    monkeypatch.setenv(http.TOKEN_ENV, "short")
    with pytest.raises(http.TokenError):
        http.make_token()
    monkeypatch.delenv(http.TOKEN_ENV)
    assert http.make_token() != http.make_token()


def test_only_the_mcp_command_pays_for_the_sdk():
    """The REPL and the tools never import the MCP SDK (about a second of start-up)."""
    import subprocess
    import sys
    probe = ("import sys, lispshell.cli.main, lispshell.repl.main, lispshell.tools.registry as r; "
             "r.all_tools(); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_instructions_claim_only_what_the_server_enforces(tmp_path):
    """The server cannot know whether a person sees the client's questions."""
    from lispshell.mcp.handshake import instructions
    from lispshell.mcp.runtime import Options, Runtime

    asking = instructions(Runtime(Options(lisp="sbcl", root=tmp_path), {}))
    assert "NO_ONE_TO_ASK" in asking and "shown to the person" not in asking
    trusting = instructions(Runtime(Options(lisp="sbcl", root=tmp_path, allow_eval=True), {}))
    assert "without confirmation" in trusting and "NO_ONE_TO_ASK" not in trusting
