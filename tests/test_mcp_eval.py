"""`lispshell mcp` live-image tools against a real SBCL: the server's own eval gate
(refused without permission, elicitation accepted/declined in both protocol eras, forged and
replayed confirmations), `--allow-eval`, a killed child Lisp restarted, a cancelled eval
interrupted."""
from __future__ import annotations

import anyio
import mcp_types as types
import pytest

from lispshell.mcp.consent import question_key
from mcp_harness import alive, answer, connect, kill, lisp_pids, run, wait_gone


def marker_code(path) -> str:
    """Code whose only effect is appending a line to `path`: proof that it ran, and how often."""
    return (f'(with-open-file (s "{path}" :direction :output :if-exists :append '
            f':if-does-not-exist :create) (write-line "ran" s))')


def runs(path) -> int:
    return path.read_text().count("ran") if path.exists() else 0


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_eval_is_refused_when_no_one_can_confirm_it(tmp_path, mode):
    marker = tmp_path / "marker.txt"

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", mode=mode) as client:  # no elicitation
            refused = answer(await client.call_tool("eval", {"code": marker_code(marker)}))
            assert refused["ok"] is False
            assert "--allow-eval" in str(refused)
            # read-only live tools need no permission
            described = answer(await client.call_tool("describe", {"symbol": "car"}))
            assert described["ok"] is True
    run(scenario)
    assert runs(marker) == 0


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_eval_asks_the_person_with_the_code(tmp_path, mode):
    marker = tmp_path / "marker.txt"
    code = marker_code(marker)
    asked, answers = [], ["accept", "decline", "cancel"]

    def person(message):
        asked.append(message)
        return answers[len(asked) - 1]

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", mode=mode, elicit=person) as client:
            accepted = answer(await client.call_tool("eval", {"code": code}))
            assert accepted["ok"] is True, accepted
            assert runs(marker) == 1
            declined = answer(await client.call_tool("eval", {"code": code}))
            assert declined["ok"] is False and "declined" in str(declined)
            cancelled = answer(await client.call_tool("eval", {"code": code}))
            # A cancel is what Claude Code in print mode answers, unseen: no person declined.
            assert cancelled["error"]["code"] == "NO_ONE_TO_ASK", cancelled
            assert "declined" not in cancelled["error"]["message"]
            assert "--allow-eval" in cancelled["error"]["message"]
    run(scenario)
    assert len(asked) == 3 and all(code in message for message in asked)
    assert runs(marker) == 1


def test_forged_and_replayed_confirmations_run_nothing(tmp_path):
    """2026-era round trips: an 'accept' without our ticket, with a forged ticket, or with a
    ticket already used asks again instead of running the code."""
    marker = tmp_path / "marker.txt"
    code = marker_code(marker)
    accept = {question_key(code): types.ElicitResult(action="accept")}

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", mode="auto",
                           elicit=lambda message: "accept") as client:
            session = client.session
            for state in [None, "forged-ticket"]:
                again = await session.call_tool("eval", {"code": code}, input_responses=accept,
                                                request_state=state, allow_input_required=True)
                assert isinstance(again, types.InputRequiredResult)
            asked = await session.call_tool("eval", {"code": code}, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            assert list(asked.input_requests) == [question_key(code)]
            assert code in asked.input_requests[question_key(code)].params.message
            ran = await session.call_tool("eval", {"code": code}, input_responses=accept,
                                          request_state=asked.request_state,
                                          allow_input_required=True)
            assert isinstance(ran, types.CallToolResult) and not ran.is_error
            assert runs(marker) == 1
            replayed = await session.call_tool("eval", {"code": code}, input_responses=accept,
                                               request_state=asked.request_state,
                                               allow_input_required=True)
            assert isinstance(replayed, types.InputRequiredResult)
            # A fresh ticket for one code runs no other code.
            fresh = await session.call_tool("eval", {"code": code}, allow_input_required=True)
            other = marker_code(tmp_path / "other.txt")
            swapped = await session.call_tool(
                "eval", {"code": other}, allow_input_required=True,
                input_responses={question_key(other): types.ElicitResult(action="accept")},
                request_state=fresh.request_state)
            assert isinstance(swapped, types.InputRequiredResult)
    run(scenario)
    assert runs(marker) == 1
    assert not (tmp_path / "other.txt").exists()


def test_allow_eval_runs_and_a_killed_lisp_is_restarted(tmp_path):
    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", "--allow-eval") as client:
            assert lisp_pids(tmp_path) == []  # the image starts on first use, not before
            first = answer(await client.call_tool("eval", {"code": "(+ 1 2)"}))
            assert first["ok"] is True and "3" in str(first)
            [pid] = lisp_pids(tmp_path)
            defined = answer(await client.call_tool("eval", {"code": "(defvar *kept* 41)"}))
            assert defined["ok"] is True
            reused = answer(await client.call_tool("eval", {"code": "(1+ *kept*)"}))
            assert "42" in str(reused)
            assert lisp_pids(tmp_path) == [pid]  # one image, reused

            kill(pid)
            after = answer(await client.call_tool("eval", {"code": "(* 6 7)"}))
            assert after["ok"] is True and "42" in str(after), after
            assert "restarted" in str(after).lower()
            [new_pid] = lisp_pids(tmp_path)
            assert new_pid != pid
            described = answer(await client.call_tool("describe", {"symbol": "car"}))
            assert described["ok"] is True
            return new_pid

    pid = run(scenario)
    assert wait_gone(pid), "the child Lisp outlived lispshell mcp"
    assert not alive(pid)


def test_a_cancelled_eval_is_interrupted_in_the_image(tmp_path):
    """The client gives up on a long eval: the server interrupts it, so its tail never runs
    and the image answers the next call (without the interrupt the marker would appear)."""
    marker = tmp_path / "late.txt"
    slow = f"(progn (sleep 20) {marker_code(marker)})"

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", "--allow-eval") as client:
            warm = answer(await client.call_tool("eval", {"code": "(+ 1 1)"}))
            assert warm["ok"] is True
            with anyio.move_on_after(2) as scope:
                await client.call_tool("eval", {"code": slow})
            assert scope.cancelled_caught
            after = answer(await client.call_tool("eval", {"code": "(* 3 5)"}))
            assert after["ok"] is True and "15" in str(after)
    run(scenario)
    assert not marker.exists()
