"""The LLM inside the REPL, as a person uses it: `lispshell` under a real pty, real Lisps, and
the fake Messages API (the only fake). The screen is read with escape codes stripped.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pexpect
import pytest

import pty_shell
from fake_anthropic import FakeAnthropic, Reply, tool_block

GRACE = 0.15  # [gate] grace_ms below, in seconds


class Shell(pty_shell.Shell):
    """The shared pty driver, pointed at the fake API, with the gate's helpers."""

    def __init__(self, tmp: Path, api: FakeAnthropic | None, *args: str, key: bool = True,
                 editor: str = "true", config: str = "", cpr: bool = False,
                 groups: tuple[str, ...] = ("live",), cwd: Path | None = None):
        (tmp / "anthropic").mkdir(exist_ok=True)
        (tmp / "config").mkdir(exist_ok=True)
        (tmp / "config" / "config.toml").write_text(    # `config`: more TOML, from the test
            "[gate]\ngrace_ms = 150\n[llm]\ntimeout = 20.0\nmax_retries = 2\n"
            f"tool_groups = {list(groups)!r}\n".replace("'", '"') + config)
        env = {"EDITOR": editor, "ANTHROPIC_CONFIG_DIR": str(tmp / "anthropic")}
        if api is not None:
            env["ANTHROPIC_BASE_URL"] = api.url
            if key:
                env["ANTHROPIC_API_KEY"] = api.key
        super().__init__(tmp, *args, env=env, cpr=cpr, cwd=cwd)

    def expect(self, wanted: str, timeout: float = 40) -> str:
        return super().expect(wanted, timeout)

    def answer(self, keys: str) -> None:
        """Answer the gate's question, after its grace period."""
        self.expect("Evaluate?")
        time.sleep(GRACE + 0.25)
        self.send(keys)

    def quit(self) -> None:
        self.submit(",quit")
        try:
            self.child.expect(pexpect.EOF, timeout=20)
        finally:
            self.close()


@pytest.fixture
def shell(tmp_path, api):
    shells = []

    def start(*args, **kw):
        s = Shell(tmp_path, api, *args, **kw)
        shells.append(s)
        s.expect(">")
        return s

    yield start
    for s in shells:
        s.close()


def sent_messages(api, n=-1):
    return api.message_requests[n].body["messages"]


def test_add_seven_to_that_with_a_confirmed_eval(shell, api):
    api.script(Reply.tool("eval", {"code": "(+ 5 7)"}, text="Adding seven to the 5:"),
               Reply.text("The answer is **twelve**."))
    sh = shell()
    sh.submit("(+ 2 3)")
    sh.expect("5")
    sh.submit("add seven to that")
    sh.expect("the model wants to evaluate")
    sh.answer("y")
    sh.expect("eval (+ 5 7) → 12")
    sh.expect("The answer is twelve.")
    first = sent_messages(api, 0)
    assert first[1]["content"][0]["input"] == {"code": "(+ 2 3)"}
    assert first[2]["content"][-1]["text"] == "add seven to that"
    assert '"12"' in sent_messages(api, 1)[-1]["content"][0]["content"]
    sh.submit(",usage")
    sh.expect("session: in")
    sh.quit()


def test_a_refused_eval_with_a_reason(shell, api, tmp_path):
    target = tmp_path / "refused.txt"
    code = f'(with-open-file (s "{target}" :direction :output) (write-line "x" s))'
    api.script(Reply.tool("eval", {"code": code}), Reply.text("Fine, no file then."))
    sh = shell()
    sh.submit("write a file please")
    sh.answer("n")
    sh.expect("Reason")
    sh.submit("not in my home")
    sh.expect("declined")
    sh.expect("Fine, no file then.")
    result = sent_messages(api, 1)[-1]["content"][0]
    assert result["is_error"] and "declined to evaluate" in result["content"]
    assert "not in my home" in result["content"]
    assert not target.exists()
    sh.quit()


def test_type_ahead_never_approves(shell, api, tmp_path):
    target = tmp_path / "typed-ahead.txt"
    code = f'(with-open-file (s "{target}" :direction :output) (write-line "x" s))'
    api.script(Reply.tool("eval", {"code": code}, text="Writing it now.", delay=0.05),
               Reply.text("Not written."))
    sh = shell()
    sh.submit("write it")
    sh.send("y")  # typed while the answer streams, before any question exists
    sh.expect("Evaluate?")
    sh.send("y")  # and again within the grace period
    time.sleep(GRACE + 0.3)
    sh.send("\r")  # Enter means no
    sh.expect("declined")
    sh.expect("Not written.")
    assert not target.exists()
    sh.quit()


def test_yolo_flag_and_command(shell, api):
    api.script(Reply.tool("eval", {"code": "(* 11 11)"}), Reply.text("done"),
               Reply.tool("eval", {"code": "(* 12 12)"}), Reply.text("asked"))
    sh = shell("--yolo")
    assert "YOLO" in sh.text()        # said before the first prompt
    sh.submit("square eleven")
    sh.expect("eval (* 11 11) → 121")
    assert "Evaluate?" not in sh.text()
    sh.submit(",yolo off")
    sh.expect("YOLO off")
    sh.submit("square twelve")
    sh.answer("y")
    sh.expect("→ 144")
    sh.quit()


@pytest.mark.parametrize("lisp,payloads", [
    ("sbcl", ['#.(with-open-file (s "{p}" :direction :output) (write-line "x" s))',
              'foo) (with-open-file (s "{p}" :direction :output) (write-line "x" s)) (']),
    ("guile", ['#.(call-with-output-file "{p}" (lambda (port) (display 1 port)))',
               'foo) (call-with-output-file "{p}" (lambda (port) (display 1 port))) (']),
    ("clojure", ['#=(spit "{p}" "x")', 'foo) (spit "{p}" "x") (']),
])
def test_describe_and_symbol_value_injections_do_nothing(shell, api, tmp_path, lisp, payloads):
    target = tmp_path / "pwned.txt"
    calls = [tool_block(tool, {"symbol": p.format(p=target)})
             for p in payloads for tool in ("describe", "symbol_value")]
    api.script(Reply.of("Looking these up.", *calls), Reply.text("Nothing there."))
    sh = shell("--lisp", lisp)
    sh.submit("look these names up")
    sh.expect("Nothing there.", timeout=60)
    results = sent_messages(api, 1)[-1]["content"]
    assert len(results) == len(calls) and all(r["is_error"] for r in results)
    assert not target.exists()
    assert "Evaluate?" not in sh.text()  # the look-up tools never ask: they never evaluate
    sh.quit()


def test_ctrl_c_mid_stream_then_a_new_question(shell, api):
    api.script(Reply.stall("A long answer begins here.\nAnd goes on", after=1),
               Reply.text("Second answer."))
    sh = shell()
    sh.submit("tell me a long story")
    sh.expect("A long answer begins here.")
    sh.send("\x03")
    sh.expect("Interrupted")
    api.release_stalls()
    sh.submit("now something short")
    sh.expect("Second answer.")
    msgs = sent_messages(api, 1)
    assert msgs[1]["role"] == "assistant" and "[interrupted]" in msgs[1]["content"][-1]["text"]
    sh.quit()


def test_overloaded_then_success_then_overloaded_for_good(shell, api):
    api.script(Reply.overloaded(), Reply.overloaded(), Reply.text("Made it through."),
               Reply.overloaded(), Reply.overloaded(), Reply.overloaded())
    sh = shell()
    sh.submit("hello there")
    sh.expect("529 (overloaded); retrying")
    sh.expect("Made it through.")
    sh.submit("and again")
    sh.expect("overloaded (529)")
    sh.submit("(* 6 7)")
    sh.expect("42")  # the REPL goes on
    sh.quit()


def test_no_key_lisp_works_and_the_first_prose_line_says_how(tmp_path):
    sh = Shell(tmp_path, None)
    try:
        sh.expect(">")
        sh.submit("(* 6 7)")
        sh.expect("42")
        sh.submit("what is this")
        sh.expect("ANTHROPIC_API_KEY")
        sh.submit("(* 7 8)")
        sh.expect("56")
        assert "Traceback" not in sh.text()
        sh.quit()
    finally:
        sh.close()


def test_continue_resumes_the_last_conversation(shell, api):
    api.script(Reply.text("Remembered: the number is 41."), Reply.text("It was 41."))
    sh = shell()
    sh.submit("remember the number forty-one")
    sh.expect("Remembered")
    sh.quit()
    sh = shell("--continue")
    sh.expect("Continuing the conversation")
    sh.submit("what was the number?")
    sh.expect("It was 41.")
    texts = json.dumps(sent_messages(api, 1))
    assert "remember the number forty-one" in texts and "Remembered: the number is 41." in texts
    sh.quit()


def test_edit_then_always_and_enter_means_no(shell, api, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/(+ 100 1)/(+ 1 1)/" "$1"\n')
    editor.chmod(0o755)
    api.script(Reply.tool("eval", {"code": "(+ 100 1)"}), Reply.text("edited ok"),
               Reply.tool("eval", {"code": "(+ 20 2)"}), Reply.text("first always"),
               Reply.tool("eval", {"code": "(+ 30 3)"}), Reply.text("no question"))
    sh = shell(editor=str(editor))
    sh.submit("compute something")
    sh.answer("e")
    sh.expect("your edited code")
    sh.answer("y")
    sh.expect("→ 2")
    sh.expect("edited ok")
    content = sent_messages(api, 1)[-1]["content"][0]["content"]
    assert "(+ 1 1)" in content and "edited" in content
    sh.submit("another one please")
    sh.answer("a")
    sh.expect("YOLO on for the rest of this session")
    sh.expect("→ 22")
    sh.submit("and one more")
    sh.expect("→ 33")
    sh.submit(",yolo off")
    sh.expect("YOLO off")
    api.script(Reply.tool("eval", {"code": "(+ 40 4)"}), Reply.text("after enter"))
    sh.submit("the last one now")
    sh.answer("\r")
    sh.expect("declined")
    sh.expect("after enter")  # Enter at the question is a no, not the end of the turn
    # (Ctrl-C ends the turn: tests/test_repl_defects_pty.py)
    sh.quit()


def test_the_api_key_is_never_shown_or_saved(tmp_path):
    """A dialogue, then a rejected key: the key appears neither on the screen nor in any file
    lispshell writes (history, the saved conversation)."""
    key = "sk-ant-test-SECRET-0123456789"
    with FakeAnthropic(key=key) as good:
        good.script(Reply.text("Hello there."))
        sh = Shell(tmp_path, good)
        try:
            sh.expect(">")
            sh.submit("say hello")
            sh.expect("Hello there.")
            sh.quit()
        finally:
            sh.close()
        screens = sh.text()
    with FakeAnthropic(key="a-different-key") as bad:  # our key is refused: 401
        sh = pty_shell.Shell(tmp_path, env={"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": bad.url,
                                            "ANTHROPIC_CONFIG_DIR": str(tmp_path / "anthropic")})
        try:
            sh.expect(">")
            sh.submit("say hello")
            sh.expect("uthentication")
            sh.submit(",quit")
            sh.wait_exit()
        finally:
            sh.close()
        screens += sh.text()
    assert key not in screens
    written = [p for p in (tmp_path / "state").rglob("*") if p.is_file()]
    assert written, "expected history and a saved conversation"
    for path in written:
        assert key not in path.read_text(errors="replace"), path


def test_the_model_is_told_once_that_the_image_is_the_persons(shell, api, tmp_path):
    """On a connection the model works on someone's running program: a note says so, once."""
    from lisp_servers import Server

    server = Server("guile", tmp_path).start()
    try:
        api.script(Reply.text("Hello."), Reply.text("Again."))
        sh = shell("--connect", server.url)
        sh.submit("hello there")
        sh.expect("Hello.")
        sh.submit("and again")
        sh.expect("Again.")
        notes = [block["text"] for m in sent_messages(api, 1) if m["role"] == "user"
                 for block in m["content"] if block.get("type") == "text"
                 and "lispshell did not start it" in block["text"]]
        assert len(notes) == 1 and server.url in notes[0] and "never exit" in notes[0]
        sh.quit()
        assert server.alive()                     # leaving the shell leaves the image running
    finally:
        server.kill()


def test_a_switch_of_lisp_is_said_before_the_evals_made_there(shell, api):
    """After ,lisp guile the person's evals ran in Guile: the model reads the switch first."""
    api.script(Reply.text("Noted."))
    sh = shell()
    sh.submit("(+ 2 3)")
    sh.expect("5")
    sh.submit(",lisp guile")
    sh.expect("guile")
    sh.submit("(+ 10 20)")
    sh.expect("30")
    sh.submit("what did I just do")
    sh.expect("Noted.")
    flat = []
    for m in sent_messages(api, 0):
        for block in m["content"]:
            if block.get("type") == "text":
                flat.append(block["text"])
            elif block.get("type") == "tool_use":
                flat.append(block["input"]["code"])
    switch = flat.index("[The person switched the REPL to guile.]")
    assert flat.index("(+ 2 3)") < switch < flat.index("(+ 10 20)"), flat
    sh.quit()


def test_the_gate_writes_out_lookalikes_and_keeps_a_tall_form_s_first_lines(shell, api,
                                                                           tmp_path):
    """`(when<NBSP>nil ...)` is one symbol to SBCL: the question shows the code point. A form
    taller than the screen (40 rows here) keeps its first, acting lines on screen."""
    tall = "(progn (defparameter *first-acting-line* 1)\n" + "".join(
        f"  (defparameter *filler-{i}* {i})\n" for i in range(60)) + "  :last-line)"
    api.script(Reply.tool("eval", {"code": "(when\u00a0nil (print :ran))"}),
               Reply.tool("eval", {"code": tall}), Reply.text("Done."))
    sh = shell()
    sh.submit("run these")
    sh.expect("(when<U+00A0>nil (print :ran))")
    sh.expect("lookalike characters in it are shown")
    sh.answer("n")
    sh.expect("Reason")
    sh.submit("")
    shown = sh.expect("[v]iew it all")
    assert "*first-acting-line*" in shown and ":last-line" in shown
    assert "more lines not shown here: [v] shows all 62 lines" in shown
    assert "*filler-30*" not in shown
    time.sleep(GRACE + 0.25)
    sh.send("v")                                   # PAGER=cat: the whole form, then again
    sh.expect("(defparameter *filler-30* 30)")         # the pager shows every line
    sh.expect("[v]iew it all")                         # and the question comes back
    time.sleep(GRACE + 0.25)
    sh.send("n")
    sh.expect("Reason")
    sh.submit("")
    sh.expect("Done.")
    sh.quit()


def test_an_init_file_edit_asks_with_its_diff_in_the_repl(tmp_path, api):
    home = tmp_path / "home"
    home.mkdir()
    rc = home / ".sbclrc"
    rc.write_text("(setf *print-case* :downcase)\n")
    call = {"file_path": ".sbclrc", "position": "end", "new_source": "(print :pwned)"}
    api.script(Reply.tool("insert_form", call), Reply.text("Refused, fine."),
               Reply.tool("insert_form", call), Reply.text("Written."))
    sh = Shell(tmp_path, api, "--no-project", groups=("structure",), cwd=home)
    try:
        sh.expect(">")
        sh.submit("add a line to my sbclrc")
        sh.expect("the model wants to change a file that runs at start")
        sh.expect("+(print :pwned)")
        sh.expect("Write it?")
        time.sleep(GRACE + 0.25)
        sh.send("n")
        sh.expect("Reason")
        sh.submit("no thanks")
        sh.expect("Refused, fine.")
        assert rc.read_text() == "(setf *print-case* :downcase)\n"
        result = sent_messages(api, 1)[-1]["content"][0]
        assert result["is_error"] and "declined" in result["content"]
        assert "no thanks" in result["content"]
        sh.submit("again please")
        sh.expect("Write it?")
        time.sleep(GRACE + 0.25)
        sh.send("y")
        sh.expect("Written.")
        assert rc.read_text().rstrip().endswith("(print :pwned)")
        sh.quit()
    finally:
        sh.close()
