"""The lexer: token kinds per dialect, offsets, resumable state, and the two scan paths agree."""
from __future__ import annotations

import glob
import zipfile

import pytest
from hypothesis import given, settings, strategies as st

from lispshell.syntax.dialects import resolve_dialect
from lispshell.syntax.lexer import LexState, Token, TokenList, _scan_loop, tokenize


def kinds(text, dialect):
    tokens, _ = tokenize(text, dialect)
    return [(t.kind, text[t.start:t.end]) + ((t.delim,) if t.delim else ()) for t in tokens]


# --- dialect names ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,want", [
    ("cl", "cl"), ("sbcl", "cl"), ("lisp", "cl"), ("common-lisp", "cl"), ("Common-Lisp", "cl"),
    ("guile", "scheme"), ("scheme", "scheme"), ("clj", "clojure"), ("edn", "clojure"),
    ("x/foo.lisp", "cl"), ("a.cl", "cl"), ("sys.asd", "cl"), ("b.scm", "scheme"),
    (".ss", "scheme"), ("lib.sld", "scheme"), ("core.clj", "clojure"), ("x.cljs", "clojure"),
    ("x.cljc", "clojure"), ("deps.edn", "clojure"), ("script.bb", "clojure"),
])
def test_resolve_dialect(name, want):
    assert resolve_dialect(name) == want


@pytest.mark.parametrize("bad", ["python", "foo.py", "", 3, None])
def test_resolve_dialect_refuses_with_a_clear_message(bad):
    with pytest.raises(ValueError, match="dialect"):
        resolve_dialect(bad)


# --- token tables ------------------------------------------------------------------------------

CL_CASES = [
    ("(a)", [("open", "(", "paren"), ("atom", "a"), ("close", ")", "paren")]),
    ("#|a #|b|# c|# x", [("block_comment", "#|a #|b|# c|#"), ("atom", "x")]),
    ("|sym)|", [("atom", "|sym)|")]),
    ("a\\)b", [("atom", "a\\)b")]),
    ("#\\( #\\) #\\space", [("char", "#\\("), ("char", "#\\)"), ("char", "#\\space")]),
    ('"a\\"b)"', [("string", '"a\\"b)"')]),
    ("; c (\nx", [("comment", "; c ("), ("atom", "x")]),
    ("#(1 2)", [("open", "#(", "paren"), ("atom", "1"), ("atom", "2"),
                ("close", ")", "paren")]),
    ("#'f `(,a ,@b)", [("prefix", "#'"), ("atom", "f"), ("prefix", "`"), ("open", "(", "paren"),
                       ("prefix", ","), ("atom", "a"), ("prefix", ",@"), ("atom", "b"),
                       ("close", ")", "paren")]),
    ("#+sbcl x #-ccl y #.z", [("prefix", "#+"), ("atom", "sbcl"), ("atom", "x"),
                              ("prefix", "#-"), ("atom", "ccl"), ("atom", "y"),
                              ("prefix", "#."), ("atom", "z")]),
    ("#:foo #x1F #b101 #*101 #1=x #1#", [("atom", "#:foo"), ("atom", "#x1F"),
                                         ("atom", "#b101"), ("atom", "#*101"),
                                         ("prefix", "#1="), ("atom", "x"), ("atom", "#1#")]),
    ("[a] {b}", [("atom", "[a]"), ("atom", "{b}")]),   # constituents in CL
    ('#p"x"', [("prefix", "#p"), ("string", '"x"')]),
]

SCHEME_CASES = [
    ("[a]", [("open", "[", "bracket"), ("atom", "a"), ("close", "]", "bracket")]),
    ("#;(a b) c", [("datum_comment", "#;"), ("open", "(", "paren"), ("atom", "a"),
                   ("atom", "b"), ("close", ")", "paren"), ("atom", "c")]),
    ("#| x #| y |# |#", [("block_comment", "#| x #| y |# |#")]),
    ("#!/usr/bin/guile -s\n!#\n(a)", [("block_comment", "#!/usr/bin/guile -s\n!#"),
                                      ("open", "(", "paren"), ("atom", "a"),
                                      ("close", ")", "paren")]),
    ("#!r6rs (a)", [("comment", "#!r6rs"), ("open", "(", "paren"), ("atom", "a"),
                    ("close", ")", "paren")]),
    ("#\\( #\\x41", [("char", "#\\("), ("char", "#\\x41")]),
    ("#(1) #u8(2) #vu8(3)", [("open", "#(", "paren"), ("atom", "1"), ("close", ")", "paren"),
                             ("open", "#u8(", "paren"), ("atom", "2"), ("close", ")", "paren"),
                             ("open", "#vu8(", "paren"), ("atom", "3"),
                             ("close", ")", "paren")]),
    # `|` is an ordinary constituent in Guile's default reader: |x y| is two symbols
    ("#t #f #:kw a'b |x y| #{a b}#", [("atom", "#t"), ("atom", "#f"), ("atom", "#:kw"),
                                      ("atom", "a'b"), ("atom", "|x"), ("atom", "y|"),
                                      ("atom", "#{a b}#")]),
    ("{a}", [("atom", "{a}")]),                       # Guile reads { } as symbol constituents
    ("#'x #`y #,z #,@w", [("prefix", "#'"), ("atom", "x"), ("prefix", "#`"), ("atom", "y"),
                          ("prefix", "#,"), ("atom", "z"), ("prefix", "#,@"), ("atom", "w")]),
]

CLOJURE_CASES = [
    ("\\( \\) \\newline \\a", [("char", "\\("), ("char", "\\)"), ("char", "\\newline"),
                               ("char", "\\a")]),
    ('#"a\\"(b"', [("string", '#"a\\"(b"')]),
    ("#{1}", [("open", "#{", "brace"), ("atom", "1"), ("close", "}", "brace")]),
    ("#(inc %)", [("open", "#(", "paren"), ("atom", "inc"), ("atom", "%"),
                  ("close", ")", "paren")]),
    ("#?(:clj 1) #?@(:cljs [2])", [("open", "#?(", "paren"), ("atom", ":clj"), ("atom", "1"),
                                   ("close", ")", "paren"), ("open", "#?@(", "paren"),
                                   ("atom", ":cljs"), ("open", "[", "bracket"), ("atom", "2"),
                                   ("close", "]", "bracket"), ("close", ")", "paren")]),
    ("#_(a) b", [("datum_comment", "#_"), ("open", "(", "paren"), ("atom", "a"),
                 ("close", ")", "paren"), ("atom", "b")]),
    ("#:ns{:a 1} #::{:b 2}", [("open", "#:ns{", "brace"), ("atom", ":a"), ("atom", "1"),
                              ("close", "}", "brace"), ("open", "#::{", "brace"), ("atom", ":b"),
                              ("atom", "2"), ("close", "}", "brace")]),
    ("[a,b]", [("open", "[", "bracket"), ("atom", "a"), ("atom", "b"),
               ("close", "]", "bracket")]),
    ("^:m x @a ~b ~@c 'd `e", [("prefix", "^"), ("atom", ":m"), ("atom", "x"), ("prefix", "@"),
                               ("atom", "a"), ("prefix", "~"), ("atom", "b"), ("prefix", "~@"),
                               ("atom", "c"), ("prefix", "'"), ("atom", "d"), ("prefix", "`"),
                               ("atom", "e")]),
    ('#inst "2020" ##Inf x#', [("prefix", "#inst"), ("string", '"2020"'), ("atom", "##Inf"),
                               ("atom", "x#")]),
    ("#'f #!shebang (\nx", [("prefix", "#'"), ("atom", "f"), ("comment", "#!shebang ("),
                            ("atom", "x")]),
]


@pytest.mark.parametrize("text,want", CL_CASES)
def test_cl_tokens(text, want):
    assert kinds(text, "cl") == want


@pytest.mark.parametrize("text,want", SCHEME_CASES)
def test_scheme_tokens(text, want):
    assert kinds(text, "scheme") == want


@pytest.mark.parametrize("text,want", CLOJURE_CASES)
def test_clojure_tokens(text, want):
    assert kinds(text, "clojure") == want


@pytest.mark.parametrize("text,dialect,mode", [
    ('(a "bc', "cl", "string"), ("(a #| b", "cl", "block_comment"), ("(a |b", "cl", "symbol"),
    ("#! never closed", "scheme", "hash_bang"), ("(a ; c", "clojure", "line_comment"),
    ('#"re', "clojure", "string"), ("(a b", "cl", "code"),
])
def test_end_state_says_where_the_text_stopped(text, dialect, mode):
    tokens, state = tokenize(text, dialect)
    assert state.mode == mode
    assert state.unterminated == (mode not in ("code", "line_comment"))
    assert tokens[-1].end == len(text)


def test_nested_block_comment_depth_is_kept():
    _, state = tokenize("#| a #| b", "cl")
    assert state == LexState("block_comment", 2, "")
    tokens, state = tokenize(" |# c |# (x)", "cl", state)
    assert state.mode == "code"
    assert [t.kind for t in tokens] == ["block_comment", "open", "atom", "close"]


def test_token_list_behaves_like_a_list_of_tokens():
    tokens, _ = tokenize("(a b)", "cl")
    assert isinstance(tokens, TokenList) and len(tokens) == 4
    assert tokens[0] == Token("open", 0, 1, "paren") and tokens[-1].kind == "close"
    assert tokens[1:3] == [Token("atom", 1, 2), Token("atom", 3, 4)]
    assert list(tokens) == tokens and tokens + [] == list(tokens)
    first, *_ = tokens
    assert first.delim == "paren"


def test_tokenize_refuses_non_text():
    with pytest.raises(TypeError):
        tokenize(b"(a)", "cl")
    with pytest.raises(ValueError):
        tokenize("(a)", "python")


# --- properties: offsets, resumption, the fast and the exact path agree -------------------------

ALPHABET = st.sampled_from(list("()[]{}ab1 \n\t;\"\\|#'`,@^~_!?:x") + ["#|", "|#", "#\\", "#_",
                                                                      "#;", '#"', "#!", "#("])
TEXTS = st.lists(ALPHABET, max_size=40).map("".join)
DIALECTS = st.sampled_from(["cl", "scheme", "clojure"])


@settings(max_examples=300, deadline=None)
@given(TEXTS, DIALECTS)
def test_tokens_cover_every_non_blank_character_in_order(text, dialect):
    tokens, _ = tokenize(text, dialect)
    pos = 0
    blank = " \t\n\r\f\v" + ("," if dialect == "clojure" else "")
    for t in tokens:
        assert t.start >= pos and t.end > t.start
        assert text[pos:t.start].strip(blank) == ""
        pos = t.end
    assert text[pos:].strip(blank) == ""


@settings(max_examples=300, deadline=None)
@given(TEXTS, DIALECTS)
def test_bulk_path_agrees_with_the_exact_loop(text, dialect):
    tokens, state = tokenize(text, dialect)
    codes, starts, ends, loop_state = _scan_loop(text, dialect, 0)
    assert (tokens.codes, tokens.starts, tokens.ends) == (codes, starts, ends)
    assert state == loop_state


def _delims(tokens):
    return [(t.kind, t.delim) for t in tokens if t.kind in ("open", "close")]


@settings(max_examples=300, deadline=None)
@given(TEXTS, DIALECTS, st.data())
def test_lexing_in_chunks_with_the_state_finds_the_same_delimiters(text, dialect, data):
    whole, end_state = tokenize(text, dialect)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    seen, state, prev = [], None, 0
    for cut in cuts + [len(text)]:
        tokens, state = tokenize(text[prev:cut], dialect, state)
        seen += _delims(tokens)
        prev = cut
    assert seen == _delims(whole)
    assert state.unterminated == end_state.unterminated


def test_state_round_trips_through_json_form():
    _, state = tokenize('(a "b\\', "cl")
    assert state == LexState("string", 0, "\\")
    assert LexState.from_dict(state.to_dict()) == state
    for bad in ({"mode": "nope"}, {"mode": "code", "depth": -1}, "x", {"carry": "x" * 300}):
        with pytest.raises(ValueError):
            LexState.from_dict(bad)


# --- real sources read -------------------------------------------------------------------------

def test_real_guile_and_clojure_sources_lex_without_stray_tokens():
    files = sorted(glob.glob("/usr/share/guile/3.0/ice-9/*.scm"))[:40]
    assert files
    for path in files:
        text = open(path, encoding="utf-8", errors="replace").read()
        tokens, state = tokenize(text, "scheme")
        assert state.mode in ("code", "line_comment"), path
        assert tokens.codes.count("(") == tokens.codes.count(")"), path
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        text = jar.read("clojure/core.clj").decode()
    tokens, state = tokenize(text, "clojure")
    assert len(tokens) > 30_000 and state.mode in ("code", "line_comment")
    depth = 0
    for c in tokens.codes:
        depth += (c in "([{") - (c in ")]}")
        assert depth >= 0
    assert depth == 0
