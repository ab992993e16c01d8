"""The one reading of a text (lispshell.syntax.reading): what it holds, that it is computed
once per text, and the one column rule."""
import pytest

from lispshell.syntax import reading
from lispshell.syntax.cst import StructureError, parse
from lispshell.syntax.errors import StructureError as TheError
from lispshell.syntax.reading import read
from lispshell.syntax.validate import validate


@pytest.fixture
def lexed(monkeypatch):
    """The lengths of the texts `read` lexes, from an empty cache."""
    seen = []
    real = reading.tokenize

    def counting(text, dialect, state=None):
        seen.append(text)
        return real(text, dialect, state)

    monkeypatch.setattr(reading, "tokenize", counting)
    reading._CACHE.clear()
    yield seen
    reading._CACHE.clear()


def test_pairs_depths_unclosed_and_spans():
    text = "(a [b] c) 'x ; note\n(d (e"
    r = read(text, "clojure")
    starts = r.tokens.starts
    at = {text[s:e]: i for i, (s, e) in enumerate(zip(starts, r.tokens.ends))}
    assert r.partner[0] == 6 and r.partner[6] == 0
    assert r.partner[at["["]] == at["]"]
    assert [text[starts[o]] for o in r.unclosed] == ["(", "("]
    assert r.depths[at["b"]] == 2 and r.depths[at["d"]] == 1
    assert r.spans == [(0, 9), (10, 12)]
    assert [p.code for p in r.problems] == ["UNCLOSED"]


def test_a_wrong_closer_still_pairs_and_an_extra_one_pairs_with_nothing():
    r = read("(a]) )", "clojure")
    assert r.partner[0] == 2 and r.partner[3] == -1 and r.partner[4] == -1
    assert r.first_problem == ("MISMATCH", 2, 0)
    assert [p.code for p in r.problems] == ["MISMATCH"]
    assert r.spans == []


def test_a_prefix_before_a_closer_is_the_first_problem():
    r = read("(a ')", "cl")
    assert r.first_problem[0] == "MISSING_DATUM"


def test_the_same_text_is_read_once(lexed):
    from lispshell.repl.forms import split_forms
    from lispshell.repl.indent import newline_indent
    from lispshell.repl.route import route

    text = "(defun f (x)\n  (* x 2))\n(f 21)"
    assert route(text, "sbcl") == "lisp"
    assert validate(text, "sbcl").ok
    forms, problem = split_forms(text, "sbcl")
    assert forms == ["(defun f (x)\n  (* x 2))", "(f 21)"] and problem is None
    assert newline_indent(text, "sbcl") == 0
    parse(text, "cl")
    assert lexed == [text]
    assert read(text, "cl") is read(text, "sbcl")


def test_the_cache_is_small_and_forgets_the_oldest(lexed):
    texts = [f"(f {i})" for i in range(reading._CACHE_SIZE + 1)]
    for t in texts:
        read(t, "cl")
    read(texts[-1], "cl")
    assert len(lexed) == len(texts)
    read(texts[0], "cl")                   # pushed out by the newest
    assert len(lexed) == len(texts) + 1


def test_large_readings_are_not_hoarded(lexed, monkeypatch):
    monkeypatch.setattr(reading, "_CACHE_CHARS", 100)
    big = [f"(f{i} " + "x " * 40 + ")" for i in range(2)]
    read(big[0], "cl")
    read(big[1], "cl")
    assert len(reading._CACHE) == 1           # the newest only
    read(big[1], "cl")
    assert len(lexed) == 2


def test_one_column_rule_a_tab_is_one_column():
    text = "(a\t)]"
    v = validate(text, "clojure")
    assert (v.errors[0].line, v.errors[0].col) == (1, 5)
    with pytest.raises(StructureError) as info:
        parse(text, "clojure")
    assert info.value.extra["col"] == 5 and "column 5" in info.value.message
    lines = read(text, "clojure").lines
    assert lines.line_col(4) == (1, 5)
    assert lines.width(4) == 9             # what indentation compares: tabs to 8


def test_line_index():
    lines = read("ab\r\ncd\n\nef", "cl").lines
    assert lines.line_count == 4
    assert lines.line_col(0) == (1, 1) and lines.line_col(5) == (2, 2)
    assert lines.line_end(1) == 2 and lines.line_text(3) == ""
    assert lines.line_start(4) == 8


def test_the_errors_of_syntax_are_the_tools_errors():
    from lispshell.syntax.delimiters import StackError
    from lispshell.tools.registry import ToolError

    assert StructureError is TheError
    assert issubclass(ToolError, TheError) and issubclass(StackError, TheError)
    assert StackError("UNDERFLOW", "m", ["paren"], found="paren").to_dict() == {
        "code": "UNDERFLOW", "message": "m", "found": "paren", "stack": ["paren"]}


def test_a_structure_error_crosses_call_tool_unchanged():
    from lispshell.tools import call_tool

    from lispshell.syntax.limits import MAX_NESTING, check_nesting

    deep = "(" * (MAX_NESTING + 1)
    out = call_tool("validate_syntax", {"code": deep, "dialect": "cl"})
    with pytest.raises(StructureError) as info:
        check_nesting(deep, "cl", "code")
    assert out == {"ok": False, "error": info.value.to_dict()}
