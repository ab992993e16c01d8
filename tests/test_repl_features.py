"""What a Lisp programmer expects of a REPL beyond evaluating (issue 14): big values paged,
feedback while the shell waits, help while typing, restarts and an inspector, themes.
`lispshell` under a real pty, real Lisps; the screen is read with escape codes stripped."""
from __future__ import annotations

import pytest

from fake_anthropic import FakeAnthropic, Reply
from pty_shell import CTRL_C, Shell
from test_llm_repl_pty import Shell as LLMShell, sent_messages

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


# ---------------------------------------------------------------- feedback while waiting
def test_a_silent_form_shows_a_busy_status_until_interrupted(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(loop)")
    sh.expect("sbcl busy · ")
    sh.expect(" s · Ctrl-C interrupts")
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("42")


@pytest.fixture
def api():
    with FakeAnthropic() as server:
        yield server
        assert server.invalid == [], [r.error for r in server.invalid]


@pytest.fixture
def llm_shell(tmp_path, api):
    shells = []

    def start(*args, **kw):
        s = LLMShell(tmp_path, api, *args, **kw)
        shells.append(s)
        s.expect(">")
        return s

    yield start
    for s in shells:
        s.close()


def test_thinking_shows_a_spinner_with_time_and_ctrl_c_stops_the_turn(llm_shell, api):
    api.script(Reply.stall(after=0), Reply.text("Second answer."))
    sh = llm_shell()
    sh.submit("explain closures")
    sh.expect("thinking · ")
    sh.expect(" tokens · Ctrl-C stops")
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    sh.submit("and now?")
    sh.expect("Second answer.")
    assert sent_messages(api)[-1]["content"][-1]["text"] == "and now?"
    sh.quit()


def test_yolo_code_is_shown_before_it_runs_and_the_call_while_it_runs(llm_shell, api):
    api.script(Reply.tool("eval", {"code": "(loop for i from 0)"}),
               Reply.text("It never ended, sorry."))
    sh = llm_shell("--yolo")
    sh.submit("count forever")
    sh.expect("the model evaluates (YOLO) in sbcl CL-USER")
    sh.expect("(loop for i from 0)")
    sh.expect("eval (loop for i from 0) · ")     # the status line names the running call
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    result = None
    sh.submit("what happened?")
    sh.expect("It never ended, sorry.")
    for message in sent_messages(api):
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                result = block
    assert result is not None and result["is_error"]
    sh.quit()
