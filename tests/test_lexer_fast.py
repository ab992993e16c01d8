"""The C fast path (lispshell/syntax/_scan.c) gives exactly what the regex path gives: the
same tokens, end states and delimiter pairs, on every Lisp source Debian installs and on random
text. The regex path is the reference: it is what an install without a C compiler runs."""
from __future__ import annotations

import glob
import zipfile

from hypothesis import given, settings, strategies as st

from lispshell.syntax import lexer, reading
from lispshell.syntax.lexer import scan_fast, scan_regex


def sources():
    for path in sorted(glob.glob("/usr/share/sbcl-source/**/*.lisp", recursive=True)):
        yield "cl", path, open(path, encoding="utf-8", errors="replace").read()
    for path in sorted(glob.glob("/usr/share/guile/3.0/**/*.scm", recursive=True)):
        yield "scheme", path, open(path, encoding="utf-8", errors="replace").read()
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        for name in sorted(jar.namelist()):
            if name.endswith(".clj"):
                yield "clojure", name, jar.read(name).decode("utf-8", "replace")


def lexed(scan, text, dialect):
    tokens, state = scan(text, dialect)
    return tokens.codes, tokens.starts, tokens.ends, state


def test_the_fast_path_is_built_and_used():
    """The checkout's install (and CI's) builds it: a missing build must not pass unseen."""
    assert lexer._fast is not None
    assert reading._fast is lexer._fast


def test_every_debian_lisp_source_lexes_and_pairs_the_same_both_ways():
    counts = {"cl": 0, "scheme": 0, "clojure": 0}
    for dialect, path, text in sources():
        fast = lexed(scan_fast, text, dialect)
        assert fast == lexed(scan_regex, text, dialect), path
        codes = fast[0]
        delimiters = [j for j, c in enumerate(codes) if c in "()[]{}"]
        assert lexer._fast.pair(codes) == reading.pair_delimiters(codes, delimiters), path
        counts[dialect] += 1
    assert min(counts.values()) >= 20, counts      # the corpus is really there


# Every character class of every dialect, the multi-character tokens that start like plain
# ones, and blanks beyond ASCII (what \s matches): the places where a C loop and a regex
# could part.
PIECES = (list("()[]{}ab1 \n\t\r\v\f;\"\\|#'`,@^~_!?:.-+*/=<>%&$0xX")
          + ["\x85", "\xa0", "\u2028", "\u3000", "\x1c", "\x00", "é", "\U0001f600", "λ"]
          + ["#|", "|#", "#\\", "#_", "#;", '#"', "#!", "#(", ",@", "~@", "#?(", "#?@(", "#{",
             "#::{", "#:a{", "##", "#!r6rs", "!#", "#inst", "#x", "#:", "#+", "#-", "#.",
             "#1=", "#1#", "#'", "#^", "#=", "#u8(", "#vu8(", "#t", "#\\space", "\\newline",
             "#{a b}#", "|a b|", '"a\\"b"'])
TEXTS = st.lists(st.sampled_from(PIECES), max_size=50).map("".join)
DIALECTS = st.sampled_from(["cl", "scheme", "clojure"])


@settings(max_examples=2000, deadline=None)
@given(TEXTS, DIALECTS)
def test_random_text_lexes_the_same_both_ways(text, dialect):
    assert lexed(scan_fast, text, dialect) == lexed(scan_regex, text, dialect)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=60), DIALECTS)
def test_any_text_lexes_the_same_both_ways(text, dialect):
    """Any code point, lone surrogates and every Unicode blank included."""
    assert lexed(scan_fast, text, dialect) == lexed(scan_regex, text, dialect)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list("()[]{}a;")), max_size=60).map("".join))
def test_random_delimiters_pair_the_same_both_ways(codes):
    delimiters = [j for j, c in enumerate(codes) if c in "()[]{}"]
    assert lexer._fast.pair(codes) == reading.pair_delimiters(codes, delimiters)


def test_bad_arguments_are_refused_not_crashed():
    import pytest
    comp = lexer.COMPILED["cl"]
    with pytest.raises(ValueError):
        lexer._fast.scan("(a)", b"short", comp.pattern.match, comp.codes, comp.stops)
    with pytest.raises(TypeError):
        lexer._fast.scan(b"(a)", comp.fast, comp.pattern.match, comp.codes, comp.stops)
    with pytest.raises(TypeError):
        lexer._fast.pair(b"()")


def test_without_the_fast_path_the_reading_is_the_same(monkeypatch):
    """An install built without a C compiler runs the regex path for the whole reading (and
    splices a changed text's reading from its token texts, not from offsets)."""
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        text = jar.read("clojure/core.clj").decode()
    changed = text.replace("(defn into", "(defn into ;; changed\n", 1)

    def readings():
        with reading._CACHE_LOCK:
            reading._CACHE.clear()
        first = reading.read(text, "clojure")
        assert reading._reread(changed, "clojure") is not None   # it is spliced, not read whole
        again = reading.read(changed, "clojure")        # spliced from the first
        return [(r.tokens.codes, r.tokens.starts, r.tokens.ends, r.partner, r.form_tokens)
                for r in (first, again)]

    fast = readings()
    monkeypatch.setattr(lexer, "_fast", None)
    monkeypatch.setattr(reading, "_fast", None)
    assert readings() == fast
    with reading._CACHE_LOCK:
        reading._CACHE.clear()
    whole = reading.read(changed, "clojure")
    assert (whole.tokens.codes, whole.tokens.starts, whole.partner) == fast[1][:2] + fast[1][3:4]
