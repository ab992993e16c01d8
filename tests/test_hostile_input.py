"""Hostile input (issue 21): the gate shows every byte the person approves as itself, and no
eval can read lispshell's API key through /proc. Project trust is in test_trust.py.
"""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from conftest import LISPSHELL
from lispshell.tools.gate import visible

KEY = "sk-ant-test-secret-sealed-away"
# Reads lispshell's own original environment block (the Lisp's parent's /proc entry); answers
# whether the key is there and whether the read worked at all (PATH is always there).
PARENT_ENVIRON = {
    "sbcl": ('(let ((pid (sb-alien:alien-funcall (sb-alien:extern-alien "getppid" '
             '(function sb-alien:int))))) (with-open-file (s (format nil "/proc/~D/environ" pid) '
             ':external-format :latin-1) (let* ((buf (make-string 1000000)) '
             '(text (subseq buf 0 (read-sequence buf s)))) '
             f'(list (not (null (search "{KEY}" text))) (not (null (search "PATH=" text)))))))'),
    "guile": ('(let* ((p (open-input-file (format #f "/proc/~a/environ" (getppid)) '
              '#:encoding "ISO-8859-1")) (text ((@ (ice-9 textual-ports) get-string-all) p))) '
              f'(list (and (string-contains text "{KEY}") #t) '
              '(and (string-contains text "PATH=") #t)))'),
    "clojure": ('(let [t (slurp (str "/proc/" (.pid (.get (.parent (java.lang.ProcessHandle/current))))'
                ' "/environ") :encoding "ISO-8859-1")] '
                f'[(.contains t "{KEY}") (.contains t "PATH=")])'),
}
SEALED = {"sbcl": "(NIL T)", "guile": "(#f #t)", "clojure": "[false true]"}


# --- the key ---------------------------------------------------------------------------------

@pytest.mark.parametrize("lisp", list(PARENT_ENVIRON))
def test_no_eval_reads_the_key_from_lispshells_proc_environ(lisp):
    env = dict(os.environ, ANTHROPIC_API_KEY=KEY)
    r = subprocess.run([LISPSHELL, "--lisp", lisp, "--no-project", "-e", PARENT_ENVIRON[lisp]],
                       capture_output=True, text=True, timeout=120, env=env,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == SEALED[lisp]
    assert KEY not in r.stdout + r.stderr


def test_lispshell_mcp_is_sealed_too(tmp_path):
    from mcp_harness import answer, connect, run

    os.environ["ANTHROPIC_API_KEY"] = KEY     # what the server process inherits
    try:
        async def scenario():
            async with connect(tmp_path, "--lisp", "guile", "--allow-eval") as client:
                got = answer(await client.call_tool("eval", {"code": PARENT_ENVIRON["guile"]}))
                assert got["ok"] is True and got["values"] == [SEALED["guile"]], got
        run(scenario)
    finally:
        del os.environ["ANTHROPIC_API_KEY"]


# --- every byte shown as itself ----------------------------------------------------------------

HIDDEN = '(+ 1 2) ; \x1b[2K\x1b[1A\n(with-open-file (s "{target}" :direction :output))'


@pytest.mark.parametrize("text, shown", [
    ("(+ 1 2)\n\t(car x)", "(+ 1 2)\n\t(car x)"),
    ("a\x1b[2Kb", "a^[[2Kb"),
    ("\x07\x08\r\x7f\x00", "^G^H^M^?^@"),
    ("\x9b31m", "<U+009B>31m"),                     # 8-bit CSI
    ("x\u202ey\u2066z\u200b", "x<U+202E>y<U+2066>z<U+200B>"),   # bidi, zero width
    ("\u2028\ufeff", "<U+2028><U+FEFF>"),
    ("\udcff", "<U+DCFF>"),                          # a lone surrogate
    ("λ é 漢 😀", "λ é 漢 😀"),                       # letters are letters
])
def test_visible_writes_out_what_a_terminal_would_hide(text, shown):
    assert visible(text) == shown


def test_the_mcp_question_shows_the_escape_sequences_not_their_effect(tmp_path):
    from mcp_harness import answer, connect, run

    target = tmp_path / "hidden-ran"
    code = HIDDEN.format(target=target)
    asked = []

    def person(message):
        asked.append(message)
        return "decline"

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", elicit=person) as client:
            got = answer(await client.call_tool("eval", {"code": code}))
            assert got["ok"] is False and got["error"]["code"] == "DECLINED", got
    run(scenario)
    assert len(asked) == 1
    assert "\x1b" not in asked[0]
    assert "(+ 1 2) ; ^[[2K^[[1A\n(with-open-file" in asked[0]
    assert "shown as ^X and <U+XXXX>" in asked[0]
    assert not target.exists()


def test_the_repl_gate_shows_the_escape_sequences_not_their_effect(tmp_path):
    from fake_anthropic import FakeAnthropic, Reply
    from test_llm_repl_pty import Shell

    target = tmp_path / "hidden-ran"
    code = HIDDEN.format(target=target)
    with FakeAnthropic() as api:
        api.script(Reply.tool("eval", {"code": code}), Reply.text("Fine."))
        sh = Shell(tmp_path, api)
        try:
            sh.expect(">")
            sh.submit("add one and two")
            sh.expect("the model wants to evaluate")
            shown = sh.expect("Evaluate?")
            assert "^[[2K^[[1A" in shown and "(with-open-file" in shown, shown
            assert "shown as ^X and <U+XXXX>" in shown
            assert "\x1b[2K\x1b[1A" not in sh.raw         # the bytes never reached the terminal
            time.sleep(0.4)                   # the gate's grace period, as a person's pause
            sh.send("n")
            sh.expect("Reason")
            sh.submit("")
            sh.expect("Fine.")
        finally:
            sh.close()
    assert not target.exists()
