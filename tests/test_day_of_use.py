"""What a day of real use tripped on (issue 40): debugger frames whatever printer variables the
person set, the line a frame's definition starts on, and a form resumed over Swank that can
still be interrupted."""
from __future__ import annotations

import concurrent.futures
import time

import pytest

from lisp_servers import Server
from lispshell.lisp.connection import connect_session
from lispshell.lisp.session import LispSession

DEMO = """;;;; demo.lisp: a file with comments and blank lines between its forms

(defun helper (x)
  (* x 2))

;;; a comment before the next form
#| a block
   comment |#

(defun dd (n)
  (if (> n 3)
      (error "too big ~a" n)
      (helper n)))
"""
DD_LINE = 10


@pytest.mark.parametrize("printer", [
    "(setf *print-case* :downcase)",
    "(setf *print-case* :capitalize *print-pretty* t)",
    '(progn (setf *print-readably* nil *print-pretty* t) (defpackage "ELSEWHERE" (:use)) '
    '(setf *package* (find-package "ELSEWHERE")))',
])
def test_frames_are_the_persons_whatever_the_printer_variables(printer, tmp_path):
    demo = tmp_path / "demo.lisp"
    demo.write_text(DEMO)
    with LispSession("sbcl") as s:
        assert s.eval(f'(load (compile-file "{demo}"))').ok
        assert s.eval(printer).ok
        r = s.eval("(cl-user::dd 4)", keep_levels=True)
        assert r.level == 1
        shown = "\n".join(r.error.backtrace).lower()
        assert "%lispshell" not in shown and "main" not in shown, r.error.backtrace
        frames = s.backtrace()
        assert [f.call.lower() for f in frames] == ["(cl-user::dd 4)"] or \
            [f.call.lower() for f in frames] == ["(dd 4)"], frames
        # ,frame N and ,source N number the same list
        assert s.frame_source(0) == f"{demo}:{DD_LINE}"


def test_a_frames_source_is_the_line_its_definition_starts_on(tmp_path):
    demo = tmp_path / "demo.lisp"
    demo.write_text(DEMO)
    with LispSession("sbcl") as s:
        assert s.eval(f'(load (compile-file "{demo}"))').ok
        r = s.eval("(dd 4)", keep_levels=True)
        assert r.level == 1
        [frame] = s.backtrace()
        assert frame.source == f"{demo}:{DD_LINE}", frame   # not 5, where the helper ended
        assert s.frame_source(0) == f"{demo}:{DD_LINE}"


# Asked of the level's thread as Swank reads a request (in its own package): named whole.
SWJ = '(cl:symbol-value (cl:find-symbol "*SWJ*" "COMMON-LISP-USER"))'


def _interrupt_until_done(session, future, deadline):
    """Ctrl-C, again until the eval answers (one sent before lispshell sent the form is not
    sent at all). Each waits 5 s for the answer: one level is what is tested here."""
    while not future.done():
        assert time.monotonic() < deadline, "the interrupt never landed"
        session.interrupt()
        concurrent.futures.wait([future], timeout=5)
    return future.result()


def test_a_form_resumed_over_swank_can_be_interrupted_again(tmp_path):
    srv = Server("swank", tmp_path).start()
    session = connect_session(srv.url, {})
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        assert session.eval("(defparameter *swj* -1)").ok
        loop = "(loop for i from 0 do (sleep 0.1) (defparameter *swj* i))"
        deadline = time.monotonic() + 120
        first = _interrupt_until_done(
            session, pool.submit(session.eval, loop, keep_levels=True), deadline)
        assert first.level == 1, first
        before = int(session._ask_level(SWJ))
        resumed = pool.submit(session.invoke_restart, 0)      # CONTINUE
        again = _interrupt_until_done(session, resumed, deadline)
        assert again.level == 1 and again.error is not None, again
        assert int(session._ask_level(SWJ)) > before, "the form ran on after CONTINUE"
        session.top()
        assert session.eval("(+ 1 2)").values == ["3"]
    finally:
        srv.kill()            # a form still running there ends with its image
        session.close()
        pool.shutdown(wait=True)


def test_ctrl_c_over_swank_lands_in_its_own_eval_even_before_the_eval_begins(tmp_path):
    """Swank's own `(:emacs-interrupt t)` breaks into "the newest worker thread": before the
    eval's thread begins (a loaded machine) that is another request's, or the REPL thread.
    Here another request of the connection sleeps, and Ctrl-C comes the moment the eval is
    sent: it must stop the eval, and no other thread's debugger may open."""
    srv = Server("swank", tmp_path).start()
    session = connect_session(srv.url, {})
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        session._unwanted.add(session._rex("(cl:sleep 600)", "COMMON-LISP-USER"))
        sent = session._rex

        def rex_then_interrupt(form, package, thread=None):
            rid = sent(form, package, thread)
            if "swank-eval" in form:
                session._send_interrupt()
            return rid

        session._rex = rex_then_interrupt
        r = pool.submit(session.eval, "(loop (sleep 0.1))", keep_levels=True).result(120)
        session._rex = sent
        assert r.level == 1 and "Interrupt" in r.error.message, r
        assert session.other_debuggers == [] and "another thread" not in r.output, r
        session.top()
        assert session.eval("(+ 1 2)").values == ["3"]
    finally:
        srv.kill()
        session.close()
        pool.shutdown(wait=True)


def test_complete_while_typing_opens_the_menu_as_a_symbol_is_typed(tmp_path):
    from pty_shell import Shell

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text("[repl]\ncomplete_while_typing = true\n")
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", "--no-project", cpr=True)
    try:
        sh.expect("CL-USER>")
        sh.submit("(defun lispshell-test-frobnicate (x) (* x 6))")
        sh.expect("LISPSHELL-TEST-FROBNICATE")
        sh.expect("CL-USER>")
        sh.send("(lispshell-test-frob")           # no Tab
        sh.expect("lispshell-test-frobnicate")     # the menu's entry (made in a worker thread)
    finally:
        sh.close()


def test_ctrl_r_then_enter_runs_the_line_found(sbcl_shell):
    sh = sbcl_shell
    sh.submit("(list :found (* 6 7))")
    sh.expect("(:FOUND 42)")
    sh.expect("CL-USER>")
    sh.submit("(+ 1 2)")
    sh.expect("3")
    sh.expect("CL-USER>")
    sh.send("\x12")                 # Ctrl-R
    sh.send(":found")
    sh.expect("(list :found (* 6 7))")
    sh.send("\r")                   # Enter: runs it, as bash does
    sh.expect("(:FOUND 42)")


def test_lines_typed_before_the_first_prompt_are_each_submitted(tmp_path):
    """Enter typed while lispshell starts reached the first prompt as a newline (the terminal
    was still in cooked mode, which turns CR into LF), glued to the next line."""
    from pty_shell import Shell

    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", "--no-project")
    try:
        sh.send("(+ 1 2)\r(+ 3 100)\r,quit\r")      # at once, before any prompt
        sh.expect("\n3\n")
        sh.expect("\n103\n")
        assert sh.wait_exit() == 0
    finally:
        sh.close()


def test_edit_of_a_definition_whose_file_is_gone_says_so(tmp_path):
    from pty_shell import Shell

    gone = tmp_path / "gone.lisp"
    gone.write_text("(defun lispshell-test-gone (x)\n  (* x 2))\n")
    marker = tmp_path / "editor-ran"
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\ntouch {marker}\n")
    editor.chmod(0o755)
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", "--no-project",
               env={"EDITOR": str(editor), "VISUAL": ""})
    try:
        sh.expect("CL-USER>")
        sh.submit(f'(load (compile-file "{gone}"))')
        sh.expect("\nT\n")
        gone.unlink()
        sh.submit(",edit lispshell-test-gone")
        sh.expect(f"is defined in {gone}, which is not on this machine")
        sh.expect("CL-USER>")
        assert not marker.exists(), "the editor was run on a file that does not exist"
    finally:
        sh.close()


def test_a_missing_sbcl_source_names_the_package_that_has_it():
    import lispshell.repl.commands  # noqa: F401 (it loads navigation, as the REPL does)
    from lispshell.repl.navigation import _source_package

    assert "apt install sbcl-source" in _source_package("/usr/share/sbcl-source/src/code/list.lisp")


def test_a_nested_level_lists_and_invokes_the_outer_levels_restarts():
    with LispSession("sbcl") as s:
        first = s.eval("(list (nope-fn 1))", keep_levels=True)
        assert first.level == 1
        second = s.eval("(car 1)", keep_levels=True)
        assert second.level == 2
        names = [r.split("\t")[1] for r in second.error.restarts]
        # its own first, then level 1's, down to the way back to the top, as SLDB lists them
        assert names == ["Return to debug level 1.", "Retry calling NOPE-FN.",
                         "Call specified function.", "Return specified values.",
                         "Return zero values.", "Return to lispshell's top level."], names
        assert s.eval("(defun nope-fn (x) (* x 10))", keep_levels=True).level == 2
        retried = s.invoke_restart(1)          # level 1's CONTINUE, from level 2
        assert retried.values == ["(10)"] and retried.level == 0 == s.level, retried


def test_guile_who_calls_finds_a_caller_in_a_file_loaded_with_load(tmp_path):
    from lispshell.tools.gate import EvalGate
    from lispshell.tools.registry import ToolContext, call_tool

    source = tmp_path / "callers.scm"
    source.write_text("(define (lispshell-test-callee x) (* x 2))\n\n"
                      "(define (lispshell-test-caller)\n  (lispshell-test-callee 21))\n")
    with LispSession("guile") as s:
        ctx = ToolContext(session=lambda: s, gate=EvalGate("yolo"), root=tmp_path,
                          eval_timeout=60.0)
        assert call_tool("load_file", {"file_path": str(source)}, ctx)["ok"]
        found = call_tool("who_calls", {"symbol": "lispshell-test-callee"}, ctx)
    assert found["ok"], found
    assert [(c["line"], c["in"]) for c in found["calls"]] == [(4, "define lispshell-test-caller")], found


def test_abort_in_a_form_at_a_level_leaves_it_and_says_so():
    with LispSession("sbcl") as s:
        assert s.eval("(car 1)", keep_levels=True).level == 1
        left = s.eval("(abort)", keep_levels=True)
        assert left.level == 0 == s.level, left
        assert left.error.type == "LISPSHELL-ABORTED" and "top level" in left.error.message
        # a level's own restart 0, invoked from the level inside it, comes back to it
        s.eval("(car 1)", keep_levels=True)
        assert s.eval("(cdr 1)", keep_levels=True).level == 2
        assert s.invoke_restart(0).level == 1


def test_rough_edges_at_the_sbcl_prompt(sbcl_shell):
    sh = sbcl_shell
    sh.submit("(defun lispshell-test-fact (n) (if (< n 2) 1 (* n (lispshell-test-fact (1- n)))))")
    sh.expect("CL-USER>")
    sh.submit(",who-calls lispshell-test-fact")
    sh.expect("no location (typed at the prompt")
    sh.submit(",inspect (make-hash-table)")
    sh.expect("(empty: no entries)")
    sh.submit('(error "first line~%second line")')
    sh.expect("[1] CL-USER>")
    sh.submit(",bt")
    sh.expect("(SIMPLE-ERROR: first line second line)")     # the whole message
    sh.submit("(abort)")
    sh.expect("; Back at the top level")
    assert "[1]" not in sh.expect("CL-USER>")


def test_guile_bt_offers_what_guile_has(guile_shell):
    sh = guile_shell
    sh.submit("(define (lispshell-test-g x) (car x))")
    sh.submit("(lispshell-test-g 5)")
    sh.expect("wrong-type-arg")
    sh.expect("(guile-user)>")
    sh.submit(",bt")
    sh.expect("Backtrace at level 1")
    shown = sh.expect("(guile-user)>")
    assert ",frame N: its locals" in shown and ",eval-in-frame" in shown, shown
    sh.submit(",eval-in-frame 0 (list x x)")      # what ,bt offers, Guile does
    sh.expect("(5 5)")


def test_disconnect_with_a_child_open_names_the_command_that_comes_back(tmp_path):
    from pty_shell import Shell

    srv = Server("guile", tmp_path).start()
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", "--no-project")
    try:
        sh.expect("CL-USER>")
        sh.submit(",connect " + srv.url)
        sh.expect("Connected to " + srv.url)
        sh.submit(",disconnect")
        sh.expect(f"(,connect {srv.url} connects again)")
        sh.expect("Now on sbcl")
    finally:
        sh.close()
        srv.kill()


def test_a_load_note_without_a_position_belongs_to_the_file_loaded(tmp_path):
    from lispshell.tools.project_tools import _diagnostic
    from lispshell.tools.registry import ToolContext

    ctx = ToolContext(session=lambda: LispSession("sbcl"), root=tmp_path)   # never started
    note = {"severity": "style-warning", "message": "undefined function: FOO", "file": None,
            "offset": None, "form_path": []}
    line = _diagnostic(ctx, note, str(tmp_path / "demo.lisp"))
    assert line == f"{tmp_path / 'demo.lisp'}: style-warning: undefined function: FOO", line


def test_eval_in_a_frame_without_debug_information_falls_back_to_eval():
    with LispSession("sbcl") as s:
        r = s.eval("(defun lispshell-test-caller () (list :got (lispshell-test-missing 2)))")
        r = s.eval("(lispshell-test-caller)", keep_levels=True)
        assert r.level == 1 and "undefined" in s.backtrace()[0].call.lower()
        answer = s.eval_in_frame(0, "(+ 40 2)")
        assert answer.error is None and answer.values == ["42"], answer


def test_load_of_a_file_that_signals_waits_in_a_level_and_says_what_was_loaded(tmp_path):
    from pty_shell import Shell

    demo = tmp_path / "loading.lisp"
    demo.write_text("(defun lispshell-test-before (x) (* x 2))\n\n"
                    "(error \"during load ~a\" 42)\n\n"
                    "(defun lispshell-test-after (x) (* x 3))\n")
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", "--no-project")
    try:
        sh.expect("CL-USER>")
        sh.submit(f",load {demo}")
        sh.expect("during load 42")
        sh.expect(f"Loading {demo} stopped at {demo}:3: the forms before it are loaded")
        sh.expect("[1] CL-USER>")
        sh.submit("(lispshell-test-before 21)")      # loaded, and callable inside the level
        sh.expect("42")
        sh.submit(",abort")
        sh.expect("CL-USER>")
        sh.submit("(fboundp 'lispshell-test-after)")
        sh.expect("NIL")
        sh.submit(f",load {demo.with_name('missing.lisp')}")
        sh.expect("not loaded: ")
        sh.expect("no such file")
    finally:
        sh.close()


def test_completion_ranks_common_and_public_names_first():
    with LispSession("sbcl") as s:
        assert s.completions(":te")[:2] == [":test", ":test-not"]
        ext = s.completions("sb-ext:")
        assert ext and not ext[0].startswith("sb-ext:%")
        percent = [i for i, c in enumerate(ext) if c.startswith("sb-ext:%")]
        assert not percent or min(percent) > max(i for i, c in enumerate(ext)
                                                 if not c.startswith("sb-ext:%")), ext


def test_load_system_in_an_untrusted_project_names_trust(tmp_path):
    import shutil
    from pathlib import Path

    from pty_shell import Shell

    root = tmp_path / "asdf-demo"
    shutil.copytree(Path(__file__).parent / "projects" / "asdf-demo", root)
    sh = Shell(tmp_path, "--project", str(root), "--no-llm")
    try:
        sh.expect("not trusted yet")
        sh.expect("CL-USER>")
        sh.submit(",load-system demo")
        sh.expect("not loaded: demo")
        sh.expect(",trust trusts it and restarts the Lisp with them")
    finally:
        sh.close()


def test_clojure_keeps_lispshells_own_names_out_of_user():
    with LispSession("clojure") as s:
        r = s.eval("(map str (keys (ns-interns 'user)))")
    assert r.values == ["()"], r


def test_a_connections_prompt_says_which_image(tmp_path):
    from pty_shell import Shell

    srv = Server("guile", tmp_path).start()
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", "--no-project")
    try:
        sh.expect("CL-USER>")
        sh.submit(",connect " + srv.url)
        sh.expect("Connected to " + srv.url)
        sh.expect(f"guile:{srv.port} (guile-user)>")
        sh.submit(",lisp sbcl")
        sh.expect("Switched to sbcl")
        assert f"guile:{srv.port}" not in sh.expect("CL-USER>")   # the child's: no connection
    finally:
        sh.close()
        srv.kill()
