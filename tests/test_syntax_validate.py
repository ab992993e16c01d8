"""validate(): the spec's report text, completeness for the REPL, positions, reader errors."""
from __future__ import annotations

import glob
import zipfile

import pytest
from hypothesis import given, settings, strategies as st

from lispshell.syntax.validate import top_level_forms, validate


def test_valid_text_reports_the_form_count():
    v = validate("(defun f (x)\n  (+ x 1))\n(f 2)\n'x ; done", "cl")
    assert v.ok and v.complete and v.errors == []
    assert v.forms == 3
    assert v.text == "✓ Syntax valid: 3 top-level form(s)"


def test_unclosed_reports_count_opener_and_likely_closer_position():
    text = "(defun f (x)\n  (let ((y 1))\n    (+ x y)\n\n(defun g ()\n  2)"
    v = validate(text, "cl")
    assert not v.ok and not v.complete
    p = v.errors[0]
    assert p.code == "UNCLOSED"
    assert (p.opener_line, p.opener_col) == (2, 3)          # the innermost still open: (let
    assert (p.suggest_line, p.suggest_col) == (3, 12)       # after (+ x y), by indentation
    assert len(v.unclosed) == 2
    assert v.text.splitlines()[:5] == [
        "✗ Syntax invalid", "",
        "Error: Unexpected end of input - unclosed parenthesis",
        "Unclosed parentheses: 2",
        "Approximate location: line 2"]
    assert "line 3, column 12" in v.text


def test_extra_closer_is_invalid_not_incomplete():
    v = validate("(a b))", "cl")
    assert not v.ok and v.complete
    p = v.errors[0]
    assert p.code == "UNMATCHED_CLOSE" and (p.line, p.col, p.offset) == (1, 6, 5)
    assert v.text.startswith("✗ Syntax invalid\n\nError: unmatched close parenthesis")
    assert "Stream: line 1, column 6: (a b))" in v.text


def test_wrong_closer_names_the_opener_it_collides_with():
    v = validate("(let [x 1)\n  x)", "clojure")
    p = v.errors[0]
    assert p.code == "MISMATCH" and p.expected == "bracket" and p.found == "paren"
    assert (p.line, p.col) == (1, 10) and (p.opener_line, p.opener_col) == (1, 6)
    assert "expected ']'" in p.message
    assert v.complete and not v.ok


@pytest.mark.parametrize("text,dialect,code", [
    ('(foo "bar', "cl", "UNTERMINATED_STRING"),
    ("#| never", "cl", "UNTERMINATED_COMMENT"),
    ("(a |b c", "cl", "UNTERMINATED_SYMBOL"),
    ("#! never", "scheme", "UNTERMINATED_COMMENT"),
    ('#"re', "clojure", "UNTERMINATED_STRING"),
    ("'", "cl", "INCOMPLETE"),
    ("#_", "clojure", "INCOMPLETE"),
    ("(a #\\", "cl", "INCOMPLETE"),
    ("(a \\", "clojure", "INCOMPLETE"),
    ("#", "cl", "INCOMPLETE"),
])
def test_text_that_merely_stops_early_is_incomplete(text, dialect, code):
    v = validate(text, dialect)
    assert not v.ok and not v.complete
    assert v.errors[0].code == code


@pytest.mark.parametrize("text,dialect,code,fragment", [
    ("(a #<foo>)", "cl", "BAD_DISPATCH", "#<foo>"),
    ("(a #<x>)", "scheme", "BAD_DISPATCH", "#<x>"),
    ("(a #%x)", "clojure", "BAD_DISPATCH", "#%x"),
    ("(a #\\foo)", "cl", "BAD_CHARACTER", "#\\foo"),
    ("(a #\\bogus)", "scheme", "BAD_CHARACTER", "#\\bogus"),
    ("(a \\abc)", "clojure", "BAD_CHARACTER", "\\abc"),
    ("(foo ')", "cl", "MISSING_DATUM", "'"),
    ("[#_]", "clojure", "MISSING_DATUM", "#_"),
])
def test_reader_errors_beyond_delimiters(text, dialect, code, fragment):
    v = validate(text, dialect)
    assert not v.ok and v.complete
    assert v.errors[0].code == code
    assert fragment in v.errors[0].message


@pytest.mark.parametrize("text,dialect", [
    ("(a #\\space #\\Newline #\\a #\\LATIN_SMALL_LETTER_A #\\U+41)", "cl"),
    ("(a #\\space #\\x41 #\\nul #\\( #t #f #:k #x1F #e1.5 #*101)", "scheme"),
    ("(a \\newline \\space \\u00e9 \\o101 \\( \\a)", "clojure"),
    ("#+sbcl (a) #-sbcl [b]", "cl"),
])
def test_valid_reader_syntax_is_not_flagged(text, dialect):
    assert validate(text, dialect).ok


def test_line_and_column_count_characters_not_bytes():
    v = validate("; é\n(λ x))", "cl")
    p = v.errors[0]
    assert (p.line, p.col) == (2, 6)


def test_top_level_forms_spans():
    text = "#+sbcl (a) b 'c #_ ignored ; note\n(d\n e)"
    spans = top_level_forms(text, "clojure")
    assert [text[s:e] for s, e in spans] == ["#+sbcl", "(a)", "b", "'c", "(d\n e)"]
    text = "#+sbcl (a) b ^:m x"
    assert [text[s:e] for s, e in top_level_forms(text, "cl")] == ["#+sbcl (a)", "b", "^:m", "x"]
    assert [text[s:e] for s, e in top_level_forms(text, "clojure")][-1] == "^:m x"
    assert top_level_forms("(a) (b", "cl") == [(0, 3)]


def test_validate_refuses_non_text_and_unknown_dialects():
    with pytest.raises(TypeError):
        validate(None, "cl")
    with pytest.raises(ValueError):
        validate("(a)", "cobol")


def test_real_sources_are_valid():
    files = sorted(glob.glob("/usr/share/guile/3.0/**/*.scm", recursive=True))
    assert len(files) > 100
    for path in files[::4]:
        text = open(path, encoding="utf-8", errors="replace").read()
        v = validate(text, "scheme")
        assert v.ok, (path, v.text)
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        names = [n for n in jar.namelist() if n.endswith(".clj")]
        for name in names:
            v = validate(jar.read(name).decode(), "clojure")
            assert v.ok, (name, v.text)


BALANCED = st.recursive(
    st.sampled_from(["a", "1", '"s)"', "#\\(", ":k"]),
    lambda inner: st.lists(inner, max_size=4).map(lambda xs: "(" + " ".join(xs) + ")"),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(BALANCED, min_size=1, max_size=4), st.data())
def test_dropping_a_closer_is_incomplete_and_adding_one_is_invalid(forms, data):
    text = "\n".join(forms)
    v = validate(text, "cl")
    assert v.ok and v.forms == len(forms)
    closers = [i for i, c in enumerate(text) if c == ")" and text[i - 2:i] != "#\\"
               and text.count('"', 0, i) % 2 == 0]
    if closers:
        i = data.draw(st.sampled_from(closers))
        cut = validate(text[:i] + text[i + 1:], "cl")
        assert not cut.ok and not cut.complete
    extra = validate(text + ")", "cl")
    assert not extra.ok and extra.complete and extra.errors[0].code == "UNMATCHED_CLOSE"
