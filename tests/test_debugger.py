"""Debug levels (docs/debugging.md): an error waits with its frames, for the person in a real
pty and for the model through `backtrace`, `eval_in_frame` and `invoke_restart`."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import LISPSHELL
from fake_anthropic import FakeAnthropic, Reply
from lispshell.lisp.session import LispSession
from lispshell.tools.gate import EvalGate
from lispshell.tools.registry import ToolContext, call_tool
from pty_shell import CTRL_C, CTRL_D

PROMPT = "CL-USER>"


def test_define_then_retry_in_the_waiting_error(sbcl_shell):
    sh = sbcl_shell
    sh.submit("(defun caller () (list :got (missing-fn 2)))")
    sh.expect("CALLER")
    sh.submit("(caller)")
    sh.expect("UNDEFINED-FUNCTION")
    sh.expect("Backtrace (level 1; ,bt for all, ,frame N for locals):")
    sh.expect("1: (CALLER)")
    sh.expect("0: [CONTINUE] Retry calling MISSING-FN.")
    sh.expect("[1] " + PROMPT)
    sh.submit("(defun missing-fn (x) (* x 10))")        # evaluated inside the error
    sh.expect("MISSING-FN")
    sh.expect("[1] " + PROMPT)
    sh.submit(",invoke 0")
    sh.expect("(:GOT 20)")
    sh.expect("\n" + PROMPT)                              # back at the top: no [n]


def test_levels_nest_and_frames_show_their_locals(sbcl_shell):
    sh = sbcl_shell
    sh.submit("(defun f (x) (car x)) (defun g (x) (+ 1 (f (* x 2))))")
    sh.submit("(g 5)")
    sh.expect("[1] " + PROMPT)
    sh.submit(",bt")
    sh.expect("Backtrace at level 1 (TYPE-ERROR")
    sh.expect("0: (F 10)")
    sh.expect("1: (G 5)")
    sh.submit(",frame 1")
    sh.expect("Frame 1: (G 5)")
    sh.expect("x = 5")
    sh.submit(",eval-in-frame 0 (list :x-is x)")
    sh.expect("(:X-IS 10)")
    sh.submit(",frame 9")
    sh.expect("Choose a frame from 0 to")
    sh.submit('(error "inner")')
    sh.expect("0: [ABORT] Return to debug level 1.")
    sh.expect("[2] " + PROMPT)
    sh.send(CTRL_D)                                       # Ctrl-D at a level leaves it
    sh.expect("Back at debug level 1.")
    sh.expect("[1] " + PROMPT)
    sh.submit(",top")
    sh.expect("Back at the top level.")
    sh.submit("(+ 40 2)")
    sh.expect("42")


def test_ctrl_c_waits_where_the_code_was_and_continue_resumes_it(sbcl_shell):
    sh = sbcl_shell
    sh.submit("(defvar *stop* nil)")
    sh.submit("(progn (loop until *stop*) :resumed)")
    sh.expect(" s · Ctrl-C interrupts")                  # it runs
    sh.send(CTRL_C)
    sh.expect("SB-SYS:INTERACTIVE-INTERRUPT")
    sh.expect("0: [CONTINUE] Return from SB-UNIX:SIGINT.")
    sh.expect("[1] " + PROMPT)
    sh.submit("(setf *stop* t)")                          # inside the interrupted extent
    sh.expect("T")
    sh.submit(",invoke 0")                                # CONTINUE: the loop goes on, sees it
    sh.expect(":RESUMED")


def test_a_batch_run_never_waits_in_an_error():
    r = subprocess.run([LISPSHELL, "--lisp", "sbcl", "--no-project", "-e", "(car 1)",
                        "-e", "(+ 1 2)"], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and r.stdout.strip().splitlines()[-1] == "3", (r.stdout, r.stderr)
    assert "[ABORT]" not in r.stdout + r.stderr


def test_the_tools_read_and_retry_the_waiting_error():
    with LispSession("sbcl") as s:
        ctx = ToolContext(session=lambda: s, gate=EvalGate("yolo"), keep_levels=True)
        assert s.eval("(defun f (x) (car x)) (defun g (y) (1+ (f (* y 2))))").error is None
        failed = call_tool("eval", {"code": "(g 5)"}, ctx)
        assert failed["error"]["debug_level"] == 1 and "backtrace" in failed["error"]["waits"]
        bt = call_tool("backtrace", {}, ctx)
        assert bt["ok"] and bt["condition"]["type"] == "TYPE-ERROR"
        assert [f["call"] for f in bt["frames"]][:2] == ["(F 10)", "(G 5)"]
        assert bt["frames"][1]["locals"] == {"y": "5"}
        assert bt["restarts"][-1] == "0: [ABORT] Return to lispshell's top level."
        inside = call_tool("eval_in_frame", {"frame": 1, "code": "(* y 100)"}, ctx)
        assert inside["values"] == ["500"], inside
        bad = call_tool("eval_in_frame", {"frame": 7, "code": "1"}, ctx)
        assert bad["error"]["code"] == "BAD_INPUT" and "choose 0 to 1" in bad["error"]["message"]
        left = call_tool("invoke_restart", {"restart": 0}, ctx)        # ABORT
        assert left["ok"] is False and "Back at the top level" in left["error"]["message"]
        none = call_tool("backtrace", {}, ctx)
        assert none["error"]["code"] == "NO_LEVEL"
        # Without keep_levels (MCP, tests): the error unwinds at once.
        plain = ToolContext(session=lambda: s, gate=EvalGate("yolo"))
        assert "debug_level" not in call_tool("eval", {"code": "(g 5)"}, plain)["error"]
        assert s.level == 0


def test_eval_in_frame_and_invoke_restart_go_through_the_gate():
    asked = []

    def person(code, index, total):
        from lispshell.tools.gate import Decision
        asked.append(code)
        return Decision(False, code, "not now")

    with LispSession("sbcl") as s:
        ctx = ToolContext(session=lambda: s, gate=EvalGate("ask", person), keep_levels=True)
        assert s.eval("(defun caller () (list (missing-fn 2)))").error is None
        assert s.eval("(caller)", keep_levels=True).level == 1
        refused = call_tool("eval_in_frame", {"frame": 1, "code": '(delete-file "x")'}, ctx)
        assert refused["error"]["code"] == "DECLINED"
        refused = call_tool("invoke_restart", {"restart": 1, "value": "(lambda (x) x)"}, ctx)
        assert refused["error"]["code"] == "DECLINED"
        assert asked == [';; in frame 1: (CALLER)\n(delete-file "x")',
                         ";; invoke restart 1: [USE-VALUE] Call specified function.\n"
                         "(lambda (x) x)"]
        assert s.level == 1                   # still waiting: nothing ran


def test_the_model_reads_the_frames_proposes_the_definition_and_the_retry_runs(tmp_path):
    from test_llm_repl_pty import Shell as LLMShell

    with FakeAnthropic() as api:
        api.script(Reply.tool("backtrace", {}, text="Let me look at the frames."),
                   Reply.tool("eval", {"code": "(defun missing-fn (x) (* x 10))"},
                              text="MISSING-FN is undefined; defining it:"),
                   Reply.tool("invoke_restart", {"restart": 0}, text="Retrying the call:"),
                   Reply.text("It returned (:GOT 20)."))
        sh = LLMShell(tmp_path, api, "--lisp", "sbcl", "--no-project",
                      groups=("live", "debug"))
        try:
            sh.expect(PROMPT)
            sh.submit("(defun caller () (list :got (missing-fn 2)))")
            sh.submit("(caller)")
            sh.expect("[1] " + PROMPT)
            sh.submit("why did that fail? fix it")
            sh.expect("backtrace")
            sh.answer("y")                                   # the definition
            sh.answer("y")                                   # the retry
            sh.expect("(:GOT 20)")
            sh.expect("It returned (:GOT 20).")
        finally:
            sh.close()
        assert api.invalid == []
        first = api.message_requests[0].body["messages"]
        recorded = json.dumps(first)
        assert "debug_level" in recorded and "Retry calling MISSING-FN" in recorded
        frames = api.message_requests[1].body["messages"][-1]["content"][0]["content"]
        assert "(CALLER)" in frames and '"level":1' in frames
        retried = api.message_requests[3].body["messages"][-1]["content"][0]["content"]
        assert "(:GOT 20)" in retried


def test_mcp_evals_never_leave_a_level(tmp_path):
    from mcp_harness import answer, connect, run

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", "--allow-eval") as client:
            failed = answer(await client.call_tool("eval", {"code": "(car 1)"}))
            assert failed["ok"] is False and "debug_level" not in failed["error"]
            none = answer(await client.call_tool("backtrace", {}))
            assert none["error"]["code"] == "NO_LEVEL"
            ok = answer(await client.call_tool("eval", {"code": "(+ 1 2)"}))
            assert ok["values"] == ["3"]
    run(scenario)
    assert os.path.isdir(tmp_path)


WRAPPED = ('(try (throw (ex-info "db down" {:db :down})) '
           '(catch Exception e (throw (ex-info "bad order" {:order 7} e))))')


def _says_the_whole_chain(error):
    assert error.type == "clojure.lang.ExceptionInfo"
    assert error.message == ("bad order {:order 7}\n"
                             "  caused by clojure.lang.ExceptionInfo: db down {:db :down}")
    assert not any("lispshell" in f for f in error.backtrace), error.backtrace


def test_clojure_says_a_wrapped_ex_info_whole_on_a_child():
    with LispSession("clojure") as s:
        _says_the_whole_chain(s.eval(WRAPPED).error)
        assert "Unable to resolve symbol: zz-nothing" in str(s.eval("(zz-nothing 1)").error)


def test_clojure_says_a_wrapped_ex_info_whole_over_nrepl(tmp_path):
    from lisp_servers import Server
    from lispshell.lisp.connection import connect_session

    srv = Server("nrepl", tmp_path).start()
    try:
        session = connect_session(srv.url, {})
        try:
            _says_the_whole_chain(session.eval(WRAPPED).error)
        finally:
            session.close()
    finally:
        srv.kill()


# --- Swank: SLDB kept as a level --------------------------------------------------------------

@pytest.fixture(scope="module")
def swank(tmp_path_factory):
    from lisp_servers import Server

    srv = Server("swank", tmp_path_factory.mktemp("swank")).start()
    yield srv
    srv.kill()


def test_define_then_retry_over_swank(swank):
    from lispshell.lisp.connection import connect_session

    s = connect_session(swank.url, {})
    try:
        assert s.eval("(defun sw-caller () (list :got (sw-missing 2)))").ok
        r = s.eval("(sw-caller)", keep_levels=True)
        assert r.level == 1 and r.error.type == "UNDEFINED-FUNCTION", r
        assert s.restarts[0] == "CONTINUE\tRetry calling SW-MISSING."
        assert [f.call for f in s.backtrace()] == ['("undefined function" 2)', "(SW-CALLER)"]
        defined = s.eval("(defun sw-missing (x) (* x 10))", keep_levels=True)
        assert defined.values == ["SW-MISSING"] and defined.level == 1
        retried = s.invoke_restart(0)
        assert retried.values == ["(:GOT 20)"] and s.level == 0, retried
        # Locals, eval in a frame, a nested level, leaving one, then all.
        assert s.eval("(defun sw-f (x) (car x)) (defun sw-g (x) (1+ (sw-f x)))").ok
        assert s.eval("(sw-g 5)", keep_levels=True).level == 1
        assert s.frame_locals(1)[0].name == "x" and s.frame_locals(1)[0].value == "5"
        assert s.eval_in_frame(1, "(* x 3)").values == ["15"]
        assert s.eval("(car 7)", keep_levels=True).level == 2
        assert "Back at debug level 1" in s.leave_level().error.message and s.level == 1
        s.top()
        assert s.level == 0 and s.eval("(+ 1 2)").values == ["3"]
    finally:
        s.close()


def test_another_swank_threads_debugger_is_listed_not_aborted(swank):
    from lispshell.lisp.connection import connect_session

    s = connect_session(swank.url, {})
    try:
        r = s.eval('(let ((th (sb-thread:make-thread (lambda () (error "boom in bg"))))) '
                   "(sb-thread:join-thread th :default :still-waiting :timeout 5))",
                   keep_levels=True)
        # The thread waits in its debugger (the join gave up); it is listed, not left.
        assert r.values[0] == ":STILL-WAITING", r
        assert "another thread" in r.output and "boom in bg" in r.output
        assert ",thread 0 enters it" in r.output
        assert len(s.other_debuggers) == 1
        error = s.enter_thread(0)
        assert "boom in bg" in error.message and s.level == 1
        assert any("abort thread" in line for line in error.restarts)
        left = s.leave_level()
        assert s.level == 0 and "Back at the top level" in left.error.message
    finally:
        s.close()


def test_invoke_gives_its_form_to_a_restart_that_reads_standard_input():
    """An :interactive function calling (read) reads *standard-input*: FORM is there too."""
    with LispSession("sbcl") as s:
        r = s.eval('(restart-case (error "need") (use-it (v) :interactive (lambda () '
                   "(list (read))) (* v 2)))", keep_levels=True)
        assert r.level == 1 and s.restarts[0] == "USE-IT\tUSE-IT"
        assert s.invoke_restart(0, "21").values == ["42"]
