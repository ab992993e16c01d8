"""Streaming display: finished lines committed at once, code blocks highlighted, compact tools."""
from __future__ import annotations

import io

from rich.console import Console

from lispshell.llm.render import RichDisplay, summarize


def display(width=80, color=False):
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=color, color_system="truecolor" if color else None)
    return RichDisplay(console), out


def test_finished_lines_are_committed_before_the_stream_ends():
    d, out = display()
    d.text("First **line**\nSecond li")
    assert "First line" in out.getvalue() and "Second" not in out.getvalue()
    d.text("ne\n")
    assert "Second line" in out.getvalue()
    d.end_text()


def test_code_blocks_wait_for_their_fence_and_are_highlighted():
    d, out = display()
    d.text("Try:\n```lisp\n(defun sq (x)\n  (* x x))\n")
    assert "defun" not in out.getvalue()  # held until the block closes (a terminal shows it dim, live)
    d.text("```\nDone.")
    d.end_text()
    assert "(defun sq (x)" in out.getvalue() and out.getvalue().rstrip().endswith("Done.")

    d, out = display(color=True)
    d.text("```lisp\n(defun sq (x) (* x x))\n```\n")
    d.end_text()
    assert "\x1b[96;49mdefun" in out.getvalue()  # coloured by the lexer, not just dimmed


def test_an_unclosed_block_is_still_shown_at_the_end():
    d, out = display()
    d.text("```clojure\n(map inc [1 2])")
    d.end_text()
    assert "(map inc [1 2])" in out.getvalue()


def test_tool_calls_are_one_compact_line_or_full_with_tools_on():
    d, out = display()
    d.tool("eval", {"code": "(+ 5\n   7)"}, {"ok": True, "values": ["12"]})
    assert out.getvalue().strip() == "eval (+ 5 7) → 12"
    d.show_tools = True
    d.tool("describe", {"symbol": "car"}, {"ok": True, "description": "CAR names a function\n..."})
    lines = out.getvalue().strip().splitlines()
    assert lines[1].strip() == "describe car → CAR names a function"
    assert '"symbol": "car"' in lines[2] and "description" in lines[3]


def test_summaries_say_what_happened():
    assert summarize("eval", {"code": "(rm)"}, {"ok": False, "error": {
        "code": "DECLINED", "message": "The person declined to evaluate this code. Reason: no"}})[1] \
        == "declined (no)"
    assert "TIMEOUT" in summarize("eval", {"code": "(loop)"}, {"ok": False, "error": {
        "code": "TIMEOUT", "message": "exceeded"}})[1]
    assert summarize("apropos", {"pattern": "str"}, {"ok": True, "symbols": ["a", "b"]})[1] == "2 symbol(s)"
    long = summarize("eval", {"code": "(list " + "1 " * 200 + ")"}, {"ok": True, "values": ["x"]}, 40)
    assert len(long[0]) <= 46 and long[0].endswith("…")
