"""Each image loop (image/*-loop.*) driven through the framed protocol itself
(lispshell/lisp/protocol.py): every request kind its dialect declares gets the answer the
protocol promises, an input request is answered both ways, and a kind it does not know still
ends in an answer (the session never hangs on it)."""
from __future__ import annotations

import time

import pytest

from lispshell.lisp import protocol
from lispshell.lisp.channel import read_some
from lispshell.lisp.dialects import DIALECTS
from lispshell.lisp.session import LispSession, _Answer

FORMS = {   # a value of 3, an error, a completion, a line read from standard input
    "sbcl": ("(+ 1 2)", "(car 1)", ("mapc", "mapcan"), "(read-line)"),
    "guile": ("(+ 1 2)", "(car 1)", ("string-ap", "string-append"),
              "(begin (use-modules (ice-9 rdelim)) (read-line))"),
    "clojure": ("(+ 1 2)", "(/ 1 0)", ("mapc", "mapcat"), "(read-line)"),
}


@pytest.fixture(scope="module", params=sorted(FORMS))
def loop(request):
    s = LispSession(request.param)
    s.start()
    yield s
    s.close()


def ask(s: LispSession, kind: str, text: str = "", on_input=None) -> _Answer:
    """One request, straight over the channel: the answer's fields as the loop framed them."""
    with s._lock:
        s._send(kind, text)
        answer = _Answer(1 << 16, None, on_input=on_input)
        s._read_answer(answer, time.monotonic() + 120)
    return answer


def test_the_dialect_declares_only_kinds_the_protocol_has():
    for d in DIALECTS.values():
        assert set(d.requests) <= set(protocol.REQUESTS), d.name
        assert set("ENCQ") <= set(d.requests), d.name
        assert ("Y" in d.requests) == d.systems, d.name
        assert set("IFAT") <= set(d.requests) if d.levels else not set("IAT") & set(d.requests)
        assert ("F" in d.requests) == bool(d.levels or d.last_error_frames), d.name


def test_every_declared_request_kind_is_answered(loop):
    value, error, (prefix, name), _ = FORMS[loop.lisp]
    kinds = loop.dialect.requests
    a = ask(loop, "E", value)
    assert a.values() == ["3"] and a.one("P"), a.fields
    a = ask(loop, "N", value)
    assert a.values() == ["3"]
    assert name in ask(loop, "C", prefix).values()
    a = ask(loop, "E", error)
    assert a.error() is not None and a.error().message, a.fields
    if "Y" in kinds:
        assert "asdf" in ask(loop, "Y", "asd").values()
    if "F" in kinds:
        frames = ask(loop, "F", "bt")
        assert frames.values() and frames.error() is None, frames.fields
    if "I" in kinds:                     # the error above waits at level 1, with restarts
        assert a.one("L") == "1" and a.fields.get("R"), a.fields
        a = ask(loop, "E", error)        # level 2
        assert a.one("L") == "2"
        assert ask(loop, "A").one("L") == "1"
        assert ask(loop, "E", error).one("L") == "2"
        assert ask(loop, "T").one("L") is None
        a = ask(loop, "E", error)
        restarts = [r.split("\t")[0] for r in a.error().restarts]
        b = ask(loop, "I", str(restarts.index("ABORT")))
        assert b.one("L") is None, b.fields
    a = ask(loop, "Z", "")               # unknown: an answer all the same
    assert a.one("P"), a.fields


def test_input_is_asked_and_answered_both_ways(loop):
    *_, read = FORMS[loop.lisp]
    a = ask(loop, "E", read, on_input=lambda: "typed here\n")
    assert "typed here" in (a.values() or [""])[0], a.fields
    a = ask(loop, "E", read, on_input=lambda: None)          # end of file
    assert a.input_refused == 0 and (a.error() is not None or a.values()), a.fields
    a = ask(loop, "E", read)                                  # nobody to type
    assert a.input_refused == 1


def test_q_ends_the_loop(loop):
    with loop._lock:
        loop._send("Q", "")
        deadline = time.monotonic() + 60
        while read_some(loop._fd, loop._poller, deadline):    # until the end of the channel
            pass
        assert time.monotonic() < deadline, "the loop did not end"
