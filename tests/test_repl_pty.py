"""The REPL as a person uses it: `lispshell` under a real pty, real SBCL (and Guile, Clojure).

Each test drives the console script with pexpect and reads the screen output with the
terminal escape codes stripped. Expected values are chosen so they never appear in the typed
input (type `(* 6 7)`, look for `42`), so the echo of the input cannot satisfy an expectation.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pty_shell import CTRL_C, CTRL_D, ENTER, META_ENTER, UP, Shell


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is `pid` (read from /proc: no dependency on procps)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ")".
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(entry.name))
    return children


def lisp_child(sh, name: str) -> int:
    [pid] = [p for p in child_pids(sh.child.pid)
             if name in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]
    return pid


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])      # utime + stime


def wait_running(sh, name: str, wait: float = 30) -> None:
    """Until the Lisp is visibly running the form (it burns CPU): the event a Ctrl-C test waits
    for before pressing the key."""
    pid = lisp_child(sh, name)
    start, deadline = cpu_ticks(pid), time.monotonic() + wait
    while cpu_ticks(pid) < start + 10:       # a tenth of a second of CPU at 100 Hz
        assert time.monotonic() < deadline, "the form never started running"
        time.sleep(0.02)


def gone(pid: int, wait: float = 10) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def shell(tmp_path):
    shells = []

    def start(*args, **kw):
        s = Shell(tmp_path, *args, **kw)
        shells.append(s)
        return s

    yield start
    for s in shells:
        s.close()


PROMPT = "CL-USER>"


def test_enter_submits_complete_forms_and_continues_incomplete_ones(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("\n42\n")
    sh.expect(PROMPT)
    # Enter inside an open form inserts a newline; the form is read whole at the end.
    sh.submit("(list 1")
    sh.submit("(* 6 7)")
    sh.submit(")")
    sh.expect("(1 42)")
    sh.expect(PROMPT)
    # Ctrl-X Ctrl-] closes what is open and submits.
    sh.send("(* 6 (+ 3 4" + "\x18\x1d")
    sh.expect("42")
    # Ctrl-J is a newline even after a complete form; Meta-Enter then submits.
    sh.send("(+ 40 2)\n(* 10 10)" + META_ENTER)
    sh.expect("42")
    sh.expect("100")


def test_extra_paren_shows_a_positioned_error_and_the_shell_goes_on(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit("(+ 40 2))")
    sh.expect("Syntax error at line 1, column 9")
    sh.expect("^")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("42")


def test_errors_values_and_output_without_newline(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit('(error "kaboom ~a" (* 6 7))')
    sh.expect("kaboom 42")
    sh.expect("[1] " + PROMPT)            # the error waits in a debug level
    sh.submit(",top")
    sh.expect("Back at the top level.")
    sh.submit("(values (* 6 7) (* 7 7))")
    sh.expect("42\n49\n")
    sh.submit('(progn (princ "ab") (princ "cd") (values))')
    # The output is ended with a newline before anything else: the prompt starts a line.
    sh.expect("abcd\n")
    sh.expect("No values")
    sh.expect("\n" + PROMPT)


def test_ctrl_c_clears_the_input_and_interrupts_a_running_eval(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.send("(this is abandoned")
    sh.send(CTRL_C)
    sh.submit("(* 6 7)")        # would be swallowed by the open form had Ctrl-C not cleared it
    sh.expect("42")
    sh.submit("(defvar *kept* 41)")
    sh.expect("*KEPT*")
    sh.submit("(loop)")
    wait_running(sh, "sbcl")
    sh.send(CTRL_C)
    sh.expect("SB-SYS:INTERACTIVE-INTERRUPT")      # SBCL: where it was waits in a level
    sh.expect("[1] " + PROMPT)
    sh.submit(",top")
    sh.expect("Back at the top level.")
    sh.submit("(1+ *kept*)")       # the image survived, with its definitions
    sh.expect("42")


def test_ctrl_d_exits_and_ends_the_child(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("42")
    sh.expect(PROMPT)
    lisp_children = child_pids(sh.child.pid)
    assert lisp_children, "the Lisp should be a child of lispshell"
    sh.send(CTRL_D)
    assert sh.wait_exit() == 0
    assert all(gone(pid) for pid in lisp_children)


def test_history_persists_per_dialect_across_restarts(shell, tmp_path):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("42")
    sh.expect(PROMPT)
    sh.send(CTRL_D)
    sh.wait_exit()
    assert "+(* 6 7)" in (tmp_path / "state" / "history-sbcl").read_text()

    again = shell("--lisp", "sbcl")
    again.expect(PROMPT)
    again.send(UP)
    again.send(ENTER)
    again.expect("42")
    again.submit(",history")
    again.expect("(* 6 7)")


def test_help_prose_and_switching_lisp(shell, tmp_path):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit(",help")
    sh.expect(",restart")
    sh.expect(",history")
    sh.submit("what package am I in?")
    sh.expect("ANTHROPIC_API_KEY")
    sh.submit(",nonsense")
    sh.expect("Unknown command ,nonsense")
    sh.submit(",lisp guile")
    sh.expect("Switched to guile")
    sh.submit("(define (f x) (* x 6))")
    sh.submit("(f 7)")
    sh.expect("42")
    sh.submit(",lisp sbcl")        # back to the same SBCL image
    sh.expect("Switched to sbcl")
    sh.submit(",quit")
    assert sh.wait_exit() == 0
    assert "(f 7)" in (tmp_path / "state" / "history-guile").read_text()
    assert "(f 7)" not in (tmp_path / "state" / "history-sbcl").read_text()


def test_no_llm_flag_answers_prose_with_a_message(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("add seven to that")
    sh.expect("--no-llm")


def test_clojure_prompt_comes_before_the_jvm_and_ctrl_c_interrupts_it(shell):
    sh = shell("--lisp", "clojure")
    sh.expect("user>")
    sh.submit("(* 6 7)")            # waits for the JVM, then answers
    sh.expect("42", timeout=60)
    sh.submit("(def kept 41)")
    sh.expect("#'user/kept")
    sh.submit("(loop [] (recur))")
    wait_running(sh, "java")
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    sh.submit("(inc kept)")
    sh.expect("42")
    sh.send(CTRL_D)
    assert sh.wait_exit() == 0


def test_ctrl_x_ctrl_e_edits_the_input_in_editor(shell, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "(* 6 7)" > "$1"\n')
    editor.chmod(0o755)
    sh = shell("--lisp", "sbcl", env={"EDITOR": str(editor), "VISUAL": str(editor)})
    sh.expect(PROMPT)
    sh.send("(this gets replaced")
    sh.send("\x18\x05")            # Ctrl-X Ctrl-E: the editor's text is submitted
    sh.expect("42")


def test_tab_completes_from_the_live_image(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit("(defun lispshell-test-frobnicate (x) (* x 6))")
    sh.expect("LISPSHELL-TEST-FROBNICATE")
    sh.expect(PROMPT)
    sh.send("(lispshell-test-frob\t")
    sh.expect("nicate")            # the completion (made in a worker thread) is on screen
    sh.submit(" 7)")
    sh.expect("42")


def test_a_lisp_that_dies_is_announced_and_replaced(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit("(sb-ext:exit :code 3 :abort t)")
    sh.expect("The sbcl process exited with status 3 during the evaluation; a fresh one was "
              "started")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("42")


def test_pasted_newlines_do_not_submit(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.send("\x1b[200~(* 6 7)\n(* 8 8)\n\x1b[201~")   # bracketed paste: stays in the editor
    sh.send(CTRL_C)                                    # ... so Ctrl-C throws it away
    sh.submit("(* 7 7)")
    assert "42" not in sh.expect("49")
    sh.send("\x1b[200~(* 6 7)\n(* 8 8)\x1b[201~")
    sh.send(ENTER)                                     # both pasted forms, in order
    sh.expect("42")
    sh.expect("64")


def test_restart_command_gives_a_fresh_image_and_unicode_round_trips(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit('(defvar *gone* "λ→x")')
    sh.expect("*GONE*")
    sh.submit("(length *gone*)")
    sh.expect("3")
    sh.submit("(string-upcase *gone*)")
    sh.expect('"Λ→X"')
    sh.submit(",restart")
    sh.expect("Restarted sbcl")
    sh.expect(PROMPT)
    sh.submit("(boundp '*gone*)")
    sh.expect("NIL")


def test_tab_in_leading_blanks_reindents_the_line(shell, tmp_path):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.send("(list 1\n")            # Ctrl-J: a newline, indented under the 1
    sh.send("\x01\x0b")             # Ctrl-A Ctrl-K: drop that indentation
    sh.send("\t(* 6 7))" + ENTER)   # Tab puts it back
    sh.expect("(1 42)")
    sh.send(CTRL_D)
    sh.wait_exit()
    # The history keeps the input exactly as submitted.
    assert "+(list 1\n+      (* 6 7))\n" in (tmp_path / "state" / "history-sbcl").read_text()


def test_a_lisp_that_cannot_start_is_reported_and_the_shell_stays(shell, tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('[lisp.sbcl]\ncommand = ["/nonexistent/sbcl"]\n')
    sh = shell("--lisp", "sbcl")
    sh.expect("The Lisp did not start")
    sh.expect("/nonexistent/sbcl")
    sh.submit("(* 6 7)")
    sh.expect("/nonexistent/sbcl")
    sh.submit(",lisp guile")          # another Lisp still works
    sh.submit("(* 6 7)")
    sh.expect("42")


def test_ctrl_c_while_waiting_for_a_booting_lisp_gives_up_on_the_form(shell, tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(   # a Lisp that takes a while to boot
        '[lisp.guile]\ncommand = ["sh", "-c", "sleep 1; exec guile --no-auto-compile -q"]\n')
    sh = shell("--lisp", "guile")
    sh.expect("(guile-user)>")
    sh.submit("(* 6 7)")
    sh.expect("Waiting for guile to start")
    sh.send(CTRL_C)
    sh.expect("the form was not evaluated")
    sh.submit("(* 7 7)")
    assert "42" not in sh.expect("49")


def test_a_big_output_is_shown_whole_in_the_repl(shell):
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit('(dotimes (i 10000) (format t "line ~d xxxxxxxxxxxxxxx~%" i))')
    shown = sh.expect("line 9999 xxxxxxxxxxxxxxx", timeout=60)
    assert "line 5000 xxxxxxxxxxxxxxx" in shown
    after = sh.expect(PROMPT)
    assert "NIL" in after and "dropped" not in after and "not kept" not in after


def test_a_value_after_a_restart_is_shown(shell):
    """The child was killed while idle: the next form runs in a fresh one, and its output, the
    notice and its value all show (the notice used to take the value's place)."""
    sh = shell("--lisp", "sbcl")
    sh.expect(PROMPT)
    sh.submit("(+ 20 1)")
    sh.expect("21")
    sh.expect(PROMPT)
    lisp = lisp_child(sh, "sbcl")
    os.kill(lisp, 9)
    assert gone(lisp)          # reaped: lispshell noticed it (the toolbar says "stopped")
    sh.submit("(progn (print :ran) (+ 1 1))")
    sh.expect(":RAN")
    sh.expect("had died; a fresh one was started")
    after = sh.expect(PROMPT)
    assert "\n2\n" in after.replace("\r", "")
