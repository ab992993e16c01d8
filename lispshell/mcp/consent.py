"""Asking the person, through the MCP client, to accept one `eval`.

The server enforces its own gate: tool annotations are only hints to clients, so an `eval`
runs only if the server was started with `--allow-eval` (gate mode "yolo") or the person
accepts that very call in an elicitation that shows the code. No tool can change the mode.

Elicitation travels differently in the two protocol eras the SDK serves:
- handshake era (2025-11-25 and older): the server sends `elicitation/create` to the client
  while the `tools/call` is running, and waits for the answer;
- 2026-07-28: server-initiated requests are gone. The `tools/call` answers an
  `InputRequiredResult` carrying the question; the client asks the person and retries the same
  call with `input_responses` and the `request_state` we minted.

For the second, `request_state` is a random one-time ticket recorded here (the `Ledger`), tied
to the very call (tool name and arguments) and to the digest of the code that was shown. A retry
runs the code only if its ticket is known, unused, was issued for this call, and names this
code with an "accept" answer: an answer to another question, a forged or replayed ticket, or an
answer with no ticket at all just asks again.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
from collections import OrderedDict
from typing import Any, Awaitable, Callable

import anyio
import anyio.from_thread
import mcp_types as types

from lispshell.tools.gate import Decision

log = logging.getLogger(__name__)

# Accept or decline is the whole answer: there is nothing to fill in.
CONFIRM_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

# The reasons a call was not run; the eval tool puts "The code was not evaluated: " in front.
NO_ELICITATION = (
    "this MCP client cannot ask the person to confirm it (it does not support elicitation), "
    "and lispshell mcp was not started with --allow-eval. The person can restart the server "
    "with --allow-eval to let the model evaluate code.")
DECLINED = ""  # the eval tool already says "The person declined to evaluate this code."
# A `cancel` is no one's answer: Claude Code in print mode (`claude -p`) gives it to every
# question at once, shown to no one, and a person who dismisses the question gives the same.
# So it is never reported as the person's refusal, and the ways out are named.
NO_ONE_ANSWERED = (
    "no one answered the confirmation: the MCP client closed the question without an answer "
    "(Claude Code in print mode, `claude -p`, does so for every question, unseen; a person who "
    "dismisses the question does the same). Do not retry: ask the person. Evals can run only "
    "when someone answers: the person in an interactive client, a program driving "
    "`claude -p --input-format stream-json` that answers the elicitation, an Elicitation hook, "
    "or a server restarted with --allow-eval (docs/mcp.md, \"Answering without a person\").")
WAITING = "Waiting for the person to confirm this evaluation."


def question_key(code: str) -> str:
    """The input-request key for one piece of code: the same code always gets the same key."""
    return "confirm-eval-" + hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def confirm_message(code: str, lisp: str, index: int, total: int) -> str:
    from lispshell.lisp.dialects import get_dialect
    from lispshell.show import HIDDEN_NOTE, visible_code

    which = f" (form {index} of {total})" if total > 1 else ""
    try:
        dialect = get_dialect(lisp).syntax
    except ValueError:
        dialect = None                       # lookalikes written out everywhere
    shown = visible_code(code, dialect)
    note = f" {HIDDEN_NOTE}" if shown != code else ""
    # The raw bytes never reach the client's dialog: an escape sequence there could hide code.
    return (f"The model asks to evaluate this code in the live {lisp} image{which}{note}:\n\n"
            f"{shown}\n\n"
            "Accept to run it once. Decline to refuse; the model is told that you refused.")


def edit_message(edit) -> str:
    from lispshell.show import visible, visible_code

    return (f"The model asks to change {visible(edit.path)}, a file that runs code at start "
            f"({visible(edit.why)}). The whole change:\n\n{visible_code(edit.diff)}\n"
            "Accept to write it once. Decline to refuse; the model is told that you refused.")


def client_can_elicit(capabilities: types.ClientCapabilities | None) -> bool:
    """Form elicitation declared (a bare `elicitation: {}` predates modes and means form)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def decision_from_answer(code: str, answer: Any) -> Decision:
    action = getattr(answer, "action", None)
    if action == "accept":
        return Decision(True, code)
    if action == "decline":
        return Decision(False, code, DECLINED)
    log.warning("lispshell mcp: an eval was not run: %s", NO_ONE_ANSWERED)
    return Decision(False, code, NO_ONE_ANSWERED, by_person=False, refusal="NO_ONE_TO_ASK")


def call_digest(name: str, arguments: Any) -> str:
    """What identifies one call across its retries: the tool and its exact arguments."""
    text = json.dumps([name, arguments], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Ledger:
    """Server-wide record of 2026-era rounds: ticket -> (call digest, {question key: answer, or
    None while asked}).

    Answers from earlier rounds of the same call ride along, so a call that confirms several
    forms never asks twice. Bounded, so a client that never retries cannot grow it forever.
    """

    def __init__(self, capacity: int = 256):
        self._tickets: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def issue(self, call: str, questions: dict[str, Any]) -> str:
        ticket = secrets.token_urlsafe(24)
        with self._lock:
            self._tickets[ticket] = (call, dict(questions))
            while len(self._tickets) > self._capacity:
                self._tickets.popitem(last=False)
        return ticket

    def redeem(self, ticket: str | None, call: str) -> dict[str, Any]:
        """What was asked under `ticket` for this `call`, once; unknown or used tickets, or a
        ticket issued for another call, give nothing (and are spent all the same)."""
        if not ticket:
            return {}
        with self._lock:
            issued_for, questions = self._tickets.pop(ticket, ("", {}))
        return questions if hmac.compare_digest(issued_for, call) else {}


class EvalConsent:
    """The gate's `confirm` for one `tools/call`. `confirm` runs in the tool's worker thread."""

    def __init__(self, *, lisp: str, can_elicit: bool, modern: bool, ledger: Ledger,
                 call: str = "",
                 elicit: Callable[[str], Awaitable[types.ElicitResult]] | None = None,
                 input_responses: dict[str, Any] | None = None, request_state: str | None = None,
                 timeout: float | None = None):
        self.lisp = lisp
        self.can_elicit = can_elicit
        self.modern = modern
        self.ledger = ledger
        self._elicit = elicit
        self._timeout = timeout
        self._call = call
        # Redeemed now, whatever happens next: a ticket is good for one retry only. Only the
        # questions it names take their answers from `input_responses`.
        self._answers = ledger.redeem(request_state, call) if modern else {}
        responses = input_responses or {}
        for key, answer in self._answers.items():
            if answer is None and key in responses:
                self._answers[key] = responses[key]
        self.pending: dict[str, types.ElicitRequest] = {}  # 2026 era: questions to send back

    def confirm(self, code: str, index: int = 1, total: int = 1) -> Decision:
        if not self.can_elicit:
            return Decision(False, code, NO_ELICITATION, by_person=False)
        message = confirm_message(code, self.lisp, index, total)
        if self.modern:
            return self._confirm_by_round_trip(code, message)
        return self._confirm_by_request(code, message)

    def confirm_edit(self, edit) -> Decision:
        """The same question about a change to a file that runs at start (EvalGate.decide_edit)."""
        text = edit.question_text()
        if not self.can_elicit:
            return Decision(False, text, NO_ELICITATION.replace("evaluate code",
                            "change files that run at start"), by_person=False)
        message = edit_message(edit)
        if self.modern:
            return self._confirm_by_round_trip(text, message)
        return self._confirm_by_request(text, message)

    def _confirm_by_round_trip(self, code: str, message: str) -> Decision:
        key = question_key(code)
        if self._answers.get(key) is not None:
            return decision_from_answer(code, self._answers[key])
        self.pending[key] = types.ElicitRequest(params=types.ElicitRequestFormParams(
            message=message, requested_schema=CONFIRM_SCHEMA))
        return Decision(False, code, WAITING, by_person=False)

    def _confirm_by_request(self, code: str, message: str) -> Decision:
        async def ask() -> types.ElicitResult:
            with anyio.fail_after(self._timeout):
                return await self._elicit(message)

        try:
            answer = anyio.from_thread.run(ask)
        except TimeoutError:
            return Decision(False, code, "no answer from the person in time.", by_person=False)
        except Exception as exc:  # the client refused the request or went away
            return Decision(False, code, f"could not ask the person to confirm ({exc}).",
                            by_person=False)
        return decision_from_answer(code, answer)

    def input_required(self) -> types.InputRequiredResult:
        """The 2026-era answer that asks the pending questions and waits for the retry."""
        asked = {key: answer for key, answer in self._answers.items() if answer is not None}
        asked.update(dict.fromkeys(self.pending))
        ticket = self.ledger.issue(self._call, asked)
        return types.InputRequiredResult(input_requests=dict(self.pending), request_state=ticket)
