"""What a Lisp programmer expects of a REPL beyond evaluating (issue 14): big values paged,
feedback while the shell waits, help while typing, restarts and an inspector, themes.
`lispshell` under a real pty, real Lisps; the screen is read with escape codes stripped."""
from __future__ import annotations

import pytest

from pty_shell import Shell

PROMPT = "CL-USER>"


@pytest.fixture
def shell(tmp_path):
    shells = []

    def start(*args, **kw):
        kw.setdefault("env", {})
        kw["env"].setdefault("PAGER", "less")
        s = Shell(tmp_path, *args, **kw)
        shells.append(s)
        return s

    yield start
    for s in shells:
        s.close()


def test_a_one_megabyte_value_is_paged_whole_and_last_reopens_it(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")                     # short values are printed as always
    sh.expect("42")
    sh.expect(PROMPT)
    sh.submit('(concatenate (quote string) (make-string 1000000 :initial-element #\\z) '
              '(string-upcase "the-end"))')
    sh.expect("zzzzzzzzzzzzzzzzzzzz")       # less shows the start...
    sh.send("G")                             # ...and its end: nothing was cut
    sh.expect("zTHE-END\"")
    sh.expect("(END)")
    sh.send("q")
    sh.expect("1,000,009 characters")
    sh.expect("shown in the pager")
    sh.expect(PROMPT)
    sh.submit(",last")
    sh.expect("zzzzzzzzzzzzzzzzzzzz")
    sh.send("q")
    sh.expect(PROMPT)
    sh.submit("(+ 40 2)")                    # the shell goes on
    sh.expect("42")


def test_last_shows_every_frame_of_the_last_error(tmp_path, shell):
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.toml").write_text('[repl]\nbacktrace_lines = 1\npager = "cat"\n')
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(defun deep-zz (n) (if (zerop n) (error \"bottom ~a\" (* 6 7)) (1+ (deep-zz (1- n)))))")
    sh.expect(PROMPT)
    sh.submit("(deep-zz 3)")
    sh.expect("bottom 42")
    sh.expect("more frames (,last shows them)")
    sh.expect(PROMPT)
    sh.submit(",last")
    sh.expect("bottom 42")
    for _ in range(4):
        sh.expect("DEEP-ZZ")
