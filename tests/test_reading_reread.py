"""A text changed in one region is read from the reading of the text before it
(reading._reread): the result must be what reading the text whole gives, token for token and
pair for pair, on real files of the three dialects and on edits that change how everything
after them lexes (an opened string, an opened `#|` comment)."""
from __future__ import annotations

import random
import zipfile
from pathlib import Path

import pytest

from lispshell.syntax import cst, reading
from lispshell.syntax.lexer import tokenize


def _clojure_core() -> str:
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        return jar.read("clojure/core.clj").decode("utf-8")


SOURCES = {
    "clojure": _clojure_core,
    "cl": lambda: Path("/usr/share/common-lisp/source/slime/swank.lisp").read_text(),
    "scheme": lambda: Path("/usr/share/guile/3.0/ice-9/boot-9.scm").read_text(),
}

# What an edit puts in: balanced code, single delimiters, and what opens or closes a string, a
# comment, a |symbol| or a character, so that everything after it lexes otherwise.
PIECES = ["", "x", "(", ")", "[", "]", "{", "}", " (foo bar) ", "(a [b {c d}] \"e\")", '"',
          '"a"', ";", ";; note\n", "\n", "#_", "#;", "'", "`", ",@", "^", "#+", "\\", "#\\",
          "#\\(", "|", "|a b|", "#|", "|#", "#| c |#", "#!", "!#", "#{", "}#", "#\"", "#("]


def whole(text: str, dialect: str) -> reading.Reading:
    tokens, state = tokenize(text, dialect)
    return reading.Reading(text, dialect, tokens, state)


def assert_same(got: reading.Reading, want: reading.Reading) -> None:
    assert got.text == want.text
    assert got.tokens.codes == want.tokens.codes
    assert got.tokens.starts == want.tokens.starts
    assert got.tokens.ends == want.tokens.ends
    parts, texts = got.tokens.pieces()          # what text_of answers, and the blanks
    assert "".join(parts) == got.text[:got.tokens.ends[-1] if got.tokens.ends else 0]
    assert list(map(len, texts)) == [e - s for s, e in zip(want.tokens.starts, want.tokens.ends)]
    for name in ("state", "partner", "delimiters", "delimiter_problems", "unclosed",
                 "form_tokens", "pending_prefixes", "spans"):
        assert getattr(got, name) == getattr(want, name), name


@pytest.fixture(autouse=True)
def empty_cache():
    reading._CACHE.clear()
    reading._LEXED.clear()
    yield
    reading._CACHE.clear()
    reading._LEXED.clear()


def edit(rnd: random.Random, text: str) -> str:
    p = rnd.randrange(len(text) + 1)
    q = min(len(text), p + rnd.choice([0, 0, 1, 2, 5, 40, 400]))
    if rnd.random() < 0.25:             # a piece of the file itself: real code moved
        x = rnd.randrange(len(text))
        piece = text[x:x + rnd.randrange(300)]
    else:
        piece = rnd.choice(PIECES)
    return text[:p] + piece + text[q:]


@pytest.mark.parametrize("dialect", sorted(SOURCES))
def test_random_edits_of_real_files_read_as_the_whole_text(dialect):
    original = SOURCES[dialect]()
    rnd = random.Random(24)
    spliced = 0
    for round_ in range(4):
        text = original
        reading._CACHE.clear()
        reading.read(text, dialect)
        for _ in range(30):         # a chain of edits, each read from the reading before
            new = edit(rnd, text)
            got = reading._reread(new, dialect)
            want = whole(new, dialect)
            if got is not None:
                spliced += 1
                assert_same(got, want)
            assert_same(reading.read(new, dialect), want)
            if reading._clean(want) or rnd.random() < 0.2:
                text = new          # edit on from there (from a broken text too, at times)
    assert spliced >= 10            # the splice really was taken, not always refused


@pytest.mark.parametrize("dialect, opener", [("clojure", '"'), ("cl", '"'), ("cl", "#|"),
                                             ("scheme", "#|"), ("scheme", '"'), ("cl", "|"),
                                             ("scheme", "#!"), ("clojure", "#\"")])
def test_an_edit_that_changes_how_the_rest_lexes(dialect, opener):
    text = SOURCES[dialect]()
    reading.read(text, dialect)
    # in the middle of the file, then closed again much later (everything between is now
    # inside the string or comment), and not closed at all
    middle = text.index("\n(", len(text) // 2) + 1
    later = text.index("\n(", middle + 5000) + 1
    closer = {'"': '"', "#|": "|#", "|": "|", "#!": "!#", "#\"": '"'}[opener]
    for new in (text[:middle] + opener + text[middle:],
                text[:middle] + opener + text[middle:later] + closer + text[later:],
                text[:middle] + "(a " + opener + text[middle + 1:]):
        assert_same(reading.read(new, dialect), whole(new, dialect))
        reading._CACHE.clear()
        reading.read(text, dialect)


def test_guile_hash_brace_symbols_are_read_whole():
    # `#{` with no `}#` after it lexes as a short token: a `}#` added far away changes it, so
    # Scheme text holding `#{` is never spliced
    text = SOURCES["scheme"]()
    head = "(define x #{a\n"
    reading.read(head + text, "scheme")
    new = head + text + "\n}#"
    assert reading._reread(new, "scheme") is None
    assert_same(reading.read(new, "scheme"), whole(new, "scheme"))


def test_the_tree_of_a_changed_file_is_the_whole_parse():
    text = SOURCES["clojure"]()
    cst.parse_shared(text, "clojure")
    at = text.index("(defn into")
    new = text[:at] + "(def added-by-someone-else 1)\n" + text[at:]
    assert reading._reread(new, "clojure") is not None
    root = cst.parse_shared(new, "clojure")
    assert cst.print_tree(root, new) == new
    full = cst.parse(new, "clojure")
    assert [(n.kind, n.start, n.end) for n in cst.walk(root)] == \
        [(n.kind, n.start, n.end) for n in cst.walk(full)]
