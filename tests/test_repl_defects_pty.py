"""The rough edges of issue 14, each reproduced as a person meets it: `lispshell` under a real
pty, real Lisps, and the fake Messages API where the model is involved. The screen is read
with escape codes stripped; every wait is on something appearing, with a deadline.
"""
from __future__ import annotations

import json
import re
import stat
import subprocess
import time
import sys
from pathlib import Path

import pytest

import pty_shell
from fake_anthropic import Reply
from test_llm_repl_pty import GRACE
from test_llm_repl_pty import Shell as LLMShell

PROMPT = "CL-USER>"


@pytest.fixture
def shell(tmp_path, api):
    """A lispshell with the fake API's key: start(*flags, key=True, editor=..., config=...)."""
    shells = []

    def start(*args, **kw):
        s = LLMShell(tmp_path, api, *args, **kw)
        shells.append(s)
        return s

    yield start
    for s in shells:
        s.close()


def requests_sent(api) -> list[list[dict]]:
    return [r.body["messages"] for r in api.message_requests]


def editor_script(tmp_path: Path, sed: str) -> str:
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\nsed -i "{sed}" "$1"\n')
    editor.chmod(0o755)
    return str(editor)


# 2 ------------------------------------------------------------------------------------------
def test_the_screen_shows_the_code_the_person_edited_not_the_models(shell, api, tmp_path):
    api.script(Reply.tool("eval", {"code": "(* 6 7)"}), Reply.text("Multiplied."))
    sh = shell(editor=editor_script(tmp_path, "s/(\\* 6 7)/(* 8 7)/"))
    sh.expect(PROMPT)
    sh.submit("multiply something")
    sh.answer("e")
    sh.expect("your edited code")
    sh.answer("y")
    line = sh.expect("→ 56")
    assert line.rstrip().endswith("eval (* 8 7)"), line
    sh.expect("Multiplied.")
    sh.quit()


# 3 ------------------------------------------------------------------------------------------
def test_yolo_is_said_before_the_first_prompt_and_shown_on_the_first_toolbar(shell):
    sh = shell("--yolo", cpr=True)
    before = sh.expect(PROMPT)
    assert "YOLO" in before            # the notice comes first, not seconds after the prompt
    toolbar = sh.expect("YOLO")        # on the first toolbar, with no eval made
    assert "sbcl" in toolbar
    sh.quit()


# 5 ------------------------------------------------------------------------------------------
def test_text_pasted_at_the_gate_is_ignored_and_said_so(shell, api, tmp_path):
    target = tmp_path / "pasted.txt"
    code = f'(with-open-file (s "{target}" :direction :output) (write-line "x" s))'
    api.script(Reply.tool("eval", {"code": code}), Reply.text("Not written then."))
    sh = shell()
    sh.expect(PROMPT)
    sh.submit("write the file")
    sh.answer("\x1b[200~yes\x1b[201~")        # a bracketed paste of "yes": not an answer
    sh.expect("pasted text ignored")
    sh.send(pty_shell.ENTER)                  # Enter means no
    sh.expect("declined")
    sh.expect("Not written then.")
    assert "(default: no) yes" not in sh.text()
    assert not target.exists()
    sh.quit()




# 6 ------------------------------------------------------------------------------------------
def test_enter_submits_a_recalled_multi_line_form_with_the_cursor_on_its_first_line(tmp_path):
    sh = pty_shell.Shell(tmp_path, "--lisp", "sbcl", "--no-llm")
    try:
        sh.expect(PROMPT)
        sh.submit("(defun zz ()")
        sh.submit("  (* 6 7))")
        sh.expect("ZZ")
        sh.expect(PROMPT)
        sh.send(pty_shell.UP)              # the whole form comes back
        sh.expect("(* 6 7))")
        sh.send("\x1b[A" "\x1b[F")         # Up to its first line, End
        sh.send(pty_shell.ENTER)           # submits: the form is complete
        sh.expect("ZZ")
        sh.expect(PROMPT)
        sh.submit("(zz)")
        sh.expect("42")
    finally:
        sh.close()

# 7 ------------------------------------------------------------------------------------------
def test_tab_after_a_comma_completes_repl_commands(tmp_path):
    sh = pty_shell.Shell(tmp_path, "--lisp", "sbcl", "--no-llm")
    try:
        sh.expect(PROMPT)
        sh.submit("(+ 20 22)")             # the image is up: Lisp completions would be offered
        sh.expect("42")
        sh.expect(PROMPT)
        sh.send(",lo\t")
        sh.expect("load-system")           # the command, not LOG, LOGAND, LOOP...
        assert "logand" not in sh.text().lower()
        sh.send(pty_shell.CTRL_C)
        sh.send(",res\t")                  # the issue's own example
        sh.expect("tart")
        sh.send(pty_shell.CTRL_C)
        sh.send(",his\t")
        sh.expect("tory")                  # one candidate: completed in place
        sh.send(pty_shell.ENTER)
        sh.expect("(+ 20 22)")             # ,history ran
    finally:
        sh.close()


# 8, 9 -----------------------------------------------------------------------------------------
def check(*args: str, stdin: str | None = None) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "lispshell", "check", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


def test_check_flags_a_missing_closer_paid_back_by_an_extra_one(tmp_path):
    path = tmp_path / "pair.lisp"
    path.write_text("(defun a (x)\n  (+ x 1)\n\n(defun b (y)\n  (* y 2)))\n")
    code, out = check(str(path))
    assert code == 1, out
    lines = out.splitlines()
    assert any(line.startswith(f"{path}:4:1: ") and "missing" in line for line in lines), out
    assert any(line.startswith(f"{path}:5:11: ") and "too many" in line for line in lines), out
    assert "line 2, column 10" in out          # where the missing closer belongs
    # with an unrelated error further on, both are said
    other = tmp_path / "pair.clj"
    other.write_text("(defn a [x]\n  (inc x)\n\n(defn b [y]\n  (* y 2)))\n\n(defn c []\n  [1 2))\n")
    code, out = check(str(other))
    assert code == 1 and f"{other}:8:7: ')' does not match '['" in out, out
    assert f"{other}:4:1: '(defn' starts in column 0" in out and f"{other}:5:11: " in out, out
    # a column-0 body of a wrapper, or a backquoted template, is not a mistake
    fine = tmp_path / "fine.lisp"
    fine.write_text("(progn\n(defun f () 1)\n(defun g () 2))\n"
                    "(defmacro m ()\n  `(progn\n(defun h () 3)))\n")
    assert check(str(fine)) == (0, "")


def test_check_says_nothing_of_closers_inside_an_unterminated_comment(tmp_path):
    path = tmp_path / "comment.lisp"
    path.write_text("(defun a ()\n  #| a comment never closed\n  1)\n")
    code, out = check(str(path))
    assert code == 1
    assert f"{path}:2:3: " in out and "block comment" in out
    assert "belongs at" not in out, out


def test_check_and_the_repl_give_each_position_once(tmp_path):
    path = tmp_path / "extra.lisp"
    path.write_text("(defun f (x)\n  (g x)))\n")
    code, out = check(str(path))
    assert code == 1 and out.startswith(f"{path}:2:9: unmatched close parenthesis"), out
    assert "line 2" not in out and "column" not in out, out
    sh = pty_shell.Shell(tmp_path, "--lisp", "sbcl", "--no-llm")
    try:
        sh.expect(PROMPT)
        sh.submit("(+ 1 2))")
        shown = sh.expect("^")
        assert "Syntax error at line 1, column 8: unmatched close parenthesis" in shown, shown
        assert shown.count("column") == 1, shown
    finally:
        sh.close()


def test_mcp_says_once_that_the_code_was_not_evaluated(tmp_path):
    from mcp_harness import answer, connect, run

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl") as client:   # no elicitation
            return answer(await client.call_tool("eval", {"code": "(+ 1 2)"}))
    refused = run(scenario)
    message = refused["error"]["message"]
    assert message.startswith("The code was not evaluated: "), message
    assert "refused" not in message.lower(), message
    assert "--allow-eval" in message


# 11 -----------------------------------------------------------------------------------------
def test_tools_without_an_argument_says_how_like_yolo(shell):
    sh = shell()
    sh.expect(PROMPT)
    sh.submit(",yolo")
    sh.expect("Use ,yolo on or ,yolo off")
    sh.submit(",tools")
    sh.expect("Use ,tools on or ,tools off")
    sh.submit(",tools")                    # asking twice changes nothing
    sh.expect("Tool details are off")
    sh.quit()


def test_the_clojure_gate_names_the_namespace_while_the_jvm_boots(shell, api, tmp_path):
    api.script(Reply.tool("eval", {"code": "(* 6 7)"}), Reply.text("Fine."))
    # a JVM that takes its time: the question comes while it boots
    sh = shell("--lisp", "clojure", config='[lisp.clojure]\ncommand = ["sh", "-c", "sleep 20; '
               'exec java -cp /usr/share/java/clojure.jar clojure.main"]\n')
    sh.expect("user>")
    sh.submit("multiply six by seven")
    header = sh.expect("(* 6 7)")
    assert "the model wants to evaluate in clojure user" in header, header
    sh.answer("n")
    sh.expect("Reason")
    sh.send(pty_shell.ENTER)
    sh.expect("Fine.")
    sh.quit()


def test_guile_prints_nothing_after_define_as_guile_does(tmp_path):
    sh = pty_shell.Shell(tmp_path, "--lisp", "guile", "--no-llm")
    try:
        sh.expect("(guile-user)>")
        sh.submit("(define x 6)")
        sh.submit("(* x 7)")
        between = sh.expect("42")
        assert "No values" not in between, between
    finally:
        sh.close()


def test_without_a_key_nothing_is_saved_and_the_toolbar_says_so(tmp_path):
    sh = LLMShell(tmp_path, None, cpr=True)
    try:
        sh.expect(PROMPT)
        sh.submit("(* 6 7)")
        sh.expect("42")
        sh.expect("no API key")            # the toolbar, once the LLM side has looked
        sh.quit()
    finally:
        sh.close()
    assert not list((tmp_path / "state").rglob("*.jsonl"))
    history = tmp_path / "state" / "history-sbcl"
    assert "(* 6 7)" in history.read_text()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600   # people type secrets


# 12 -----------------------------------------------------------------------------------------
def test_ctrl_c_at_the_gate_stops_the_turn_and_records_the_refusal(shell, api):
    api.script(Reply.tool("eval", {"code": "(+ 40 4)"}, text="Let me add."))
    sh = shell()
    sh.expect(PROMPT)
    sh.submit("add some numbers")
    sh.answer(pty_shell.CTRL_C)
    sh.expect("declined")
    sh.expect("stopped")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")                   # the REPL is back, the turn over
    sh.expect("42")
    assert len(api.message_requests) == 1
    api.script(Reply.text("Next answer."))
    sh.submit("and now?")
    sh.expect("Next answer.")
    history = requests_sent(api)[1]
    results = [b for m in history if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert results[0]["is_error"] and "declined" in json.dumps(results[0])
    assert history[-1]["content"][-1]["text"] == "and now?"
    sh.quit()


def test_ctrl_c_at_the_first_of_two_evals_answers_both_and_runs_neither(shell, api, tmp_path):
    from fake_anthropic import tool_block
    target = tmp_path / "second.txt"
    second = f'(with-open-file (s "{target}" :direction :output) (write-line "x" s))'
    api.script(Reply.of(tool_block("eval", {"code": "(+ 40 4)"}),
                        tool_block("eval", {"code": second})))
    sh = shell()
    sh.expect(PROMPT)
    sh.submit("do two things")
    sh.expect("(1 of 2)")
    sh.answer(pty_shell.CTRL_C)
    sh.expect("stopped")
    sh.expect(PROMPT)
    api.script(Reply.text("Fine."))
    sh.submit("and now?")
    sh.expect("Fine.")
    [last] = [m for m in requests_sent(api)[1] if m["role"] == "user"
              and isinstance(m["content"], list)
              and any(b.get("type") == "tool_result" for b in m["content"])]
    results = [b for b in last["content"] if b.get("type") == "tool_result"]
    assert len(results) == 2 and all(r["is_error"] for r in results), results
    assert not target.exists()            # the second eval never ran, nor was it asked
    sh.quit()


# 13 -----------------------------------------------------------------------------------------
def test_one_word_of_prose_is_offered_to_the_model(shell, api):
    api.script(Reply.text("You are welcome."))
    sh = shell()
    sh.expect(PROMPT)
    sh.submit("thanks")
    sh.expect("UNBOUND-VARIABLE")
    # Most likely prose: SBCL's restarts are not listed before the question.
    assert "Restarts" not in sh.expect("Send it to the model?")
    time.sleep(GRACE + 0.25)               # the question's grace period (type-ahead guard)
    sh.send("y")
    sh.expect("You are welcome.")
    sh.submit("continue")
    sh.expect("Send it to the model?")
    time.sleep(GRACE + 0.25)
    sh.send("n")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("42")
    [sent] = requests_sent(api)
    assert sent[-1]["content"][-1]["text"] == "thanks"
    calls = json.dumps(sent)
    assert '"code": "thanks"' not in calls and "UNBOUND" not in calls
    sh.quit()


def test_a_form_failing_on_an_unbound_variable_is_not_offered_to_the_model(shell, api):
    sh = shell()
    sh.expect(PROMPT)
    sh.submit("(+ 1 undefined-zz)")
    sh.expect("Restarts")                  # listed, and the prompt follows: no question
    assert "Send it to the model?" not in sh.expect(PROMPT, timeout=15)
    sh.submit(",invoke 1 41")
    sh.expect("42")
    assert api.message_requests == []
    sh.quit()


@pytest.mark.parametrize("lisp,prompt,error", [
    ("guile", "(guile-user)>", "Unbound variable: thanks"),
    ("clojure", "user>", "Unable to resolve symbol: thanks"),
])
def test_one_word_of_prose_is_offered_in_guile_and_clojure(shell, api, lisp, prompt, error):
    api.script(Reply.text("Welcome."))
    sh = shell("--lisp", lisp)
    sh.expect(prompt)
    sh.submit("thanks")
    sh.expect(error, timeout=60)
    sh.expect("Send it to the model?")
    time.sleep(GRACE + 0.25)
    sh.send("y")
    sh.expect("Welcome.")
    assert requests_sent(api)[0][-1]["content"][-1]["text"] == "thanks"
    sh.quit()


# 14 -----------------------------------------------------------------------------------------
def dialogue(page: str) -> list[str]:
    """The lines of the example dialogue in a documentation page (README.md, docs/llm.md)."""
    text = (Path(__file__).parent.parent / page).read_text()
    block = re.search(r"```\n(CL-USER> \(\+ 2 3\)\n.*?)```", text, re.S).group(1)
    return [line.strip() for line in block.strip().splitlines()]


def test_the_documented_dialogue_is_what_the_screen_shows(shell, api):
    api.script(Reply.tool("eval", {"code": "(+ 5 7)"}, text="Adding seven to the 5:"),
               Reply.text("The answer is 12."))
    sh = shell()
    sh.expect(PROMPT)
    sh.submit("(+ 2 3)")
    sh.expect("5")
    sh.submit("add seven to that")
    sh.answer("y")
    sh.expect("The answer is 12.")
    screen = sh.text()
    for page in ("README.md", "docs/llm.md"):
        at = 0
        for line in dialogue(page):         # each line on the screen, in order
            found = screen.find(line, at)
            assert found >= 0, (page, line, screen[at:])
            at = found + len(line)
    sh.submit("(+ 1 2) (* 6 7)")           # every form's value shows (docs/lisps.md)
    assert "3" in sh.expect("42").split()
    sh.quit()
