"""The gate decides every eval; only the person changes its mode."""
import pytest

from lispshell.tools.gate import Decision, EvalGate


def test_modes():
    asked = []

    def confirm(code, index, total):
        asked.append((code, index, total))
        return Decision(False, code, "not now")

    gate = EvalGate("ask", confirm)
    refused = gate.decide("(rm)", 2, 3)
    assert not refused.approved and refused.by_person and asked == [("(rm)", 2, 3)]
    gate.set_mode("yolo")
    assert gate.decide("(+ 1 2)").approved and len(asked) == 1
    gate.set_mode("off")
    off = gate.decide("(+ 1 2)")
    assert not off.approved and not off.by_person


def test_nobody_to_ask_is_not_a_person_saying_no():
    decision = EvalGate("ask").decide("(+ 1 2)")
    assert not decision.approved and not decision.by_person


def test_bad_mode_is_refused():
    with pytest.raises(ValueError):
        EvalGate("sometimes")
    with pytest.raises(ValueError):
        EvalGate().set_mode("always")
