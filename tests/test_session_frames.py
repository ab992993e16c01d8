"""The frame reader on its own (no Lisp): answers split at every possible byte boundary,
stray answers, output that contains the marker's first character, the cap."""
from __future__ import annotations

import codecs

import pytest

import lispshell.lisp.session as S

NONCE = "0123456789abcdef01234567"
MARKER = S.MARK + NONCE


def frame(output: str, *segments: str, request_id: str = "1") -> str:
    return output + "".join(MARKER + s for s in segments) + f"{MARKER}D{request_id}\n"


def read(monkeypatch, chunks: list[bytes], cap: int = 1000, request_id: str = "1"):
    s = S.LispSession("sbcl")
    S._live_sessions.discard(s)
    s._marker, s._request_id, s._fd, s._poller = MARKER, request_id, -1, None
    s._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    feed = iter(chunks)
    monkeypatch.setattr(S, "read_some", lambda fd, poller, deadline: next(feed, b""))
    answer = S._Answer(cap, None)
    s._read_answer(answer, None)
    return answer, s._pending


ANSWER = frame("printed \x1e not a marker ☃\n", "V\n3", "V\"two\"", "PCL-USER")


@pytest.mark.parametrize("split", range(1, len(ANSWER.encode())))
def test_an_answer_split_anywhere_reads_the_same(monkeypatch, split):
    data = ANSWER.encode()
    answer, pending = read(monkeypatch, [data[:split], data[split:]])
    assert answer.text_output() == "printed \x1e not a marker ☃\n"
    assert answer.values() == ["3", '"two"']
    assert answer.one("P") == "CL-USER" and answer.error() is None
    assert pending == ""


def test_byte_by_byte(monkeypatch):
    data = frame("out", "EDIVISION-BY-ZERO", "Mdivide by 0", "B(/ 1 0)", "B(F)", "PCL-USER").encode()
    answer, _ = read(monkeypatch, [data[i:i + 1] for i in range(len(data))])
    err = answer.error()
    assert (err.type, err.message, err.backtrace) == ("DIVISION-BY-ZERO", "divide by 0", ["(/ 1 0)", "(F)"])
    assert answer.text_output() == "out"


def test_a_stray_earlier_answer_is_dropped(monkeypatch):
    stray = frame("old output", "V\n1", "PCL-USER", request_id="6")
    mine = frame("new output", "V\n2", "PCL-USER", request_id="7")
    answer, pending = read(monkeypatch, [(stray + mine).encode()], request_id="7")
    assert answer.values() == ["2"] and answer.text_output() == "new output"


def test_output_cap_counts_what_it_drops(monkeypatch):
    data = frame("x" * 5000, "V" + "y" * 3000, "PCL-USER").encode()
    chunks = [data[i:i + 700] for i in range(0, len(data), 700)]
    answer, _ = read(monkeypatch, chunks, cap=1000)
    assert answer.text_output() == "x" * 1000 and answer.dropped == 4000
    assert answer.values() == ["y" * 1000 + "... [truncated: 2000 more characters]"]


def test_end_of_file_is_death(monkeypatch):
    with pytest.raises(S._Died):
        read(monkeypatch, [b"partial output"])
