"""Stepping and breakpoints (issue 41, docs/debugging.md): SBCL's stepper said one line a step,
for the person in a real pty and through the session over a child and over Swank."""
from __future__ import annotations


import pytest

from lispshell.lisp.session import LispSession
from pty_shell import steps as step_lines

PROMPT = "CL-USER>"
# g compiled as usual (no step points), f with (debug 3): ,s into (f 3) steps its body, and
# into (g a) it cannot, which is said.
DEFS = ("(defun g (x) (* x 2)) (declaim (optimize (debug 3))) "
        "(defun f (n) (let ((a (+ n 1))) (g a))) (declaim (optimize (debug 1)))")


def test_step_walks_into_a_call_and_out_in_at_most_four_lines_a_step(sbcl_shell):
    sh = sbcl_shell
    sh.submit(DEFS)
    sh.expect("F\n")
    start = len(sh.text())
    sh.submit(",step (f 3)")
    sh.expect("; step: (F 3)  [arguments: 3]")
    sh.expect("[1] " + PROMPT)
    sh.submit(",s")
    sh.expect("; step: (+ N 1)")
    sh.submit(",s")
    sh.expect("; step: (G A)  [arguments: 4]")
    sh.submit(",s")                          # G has no step points: its value, said why
    sh.expect("; (G A) => 8  (G has no step points: compiled without (debug 3))")
    sh.expect("; (F 3) => 8")
    sh.expect("\n8\n" + PROMPT)
    steps = step_lines(sh.text()[start:], 'CL-USER>')
    assert len(steps) == 4, steps
    for printed in steps:
        # the command's line, and at most three of what it printed
        assert len(printed) <= 3, printed
        assert not any("SB-IMPL" in line or "STEP-FORM" in line for line in printed), printed


def test_next_and_out_and_frames_at_a_step(sbcl_shell):
    sh = sbcl_shell
    sh.submit(DEFS)
    sh.expect("F\n")
    sh.submit(",step (list (f 3) (f 10))")
    sh.expect("; step: (F 3)")
    sh.submit(",n")                             # over (f 3): its value, then the next call
    sh.expect("; (F 3) => 8")
    sh.expect("; step: (F 10)")
    sh.submit(",s")
    sh.expect("; step: (+ N 1)")
    sh.submit(",bt")                            # the stepped frame, not the stepper's
    bt = sh.expect(",frame N: its locals")
    assert "0: (F 10)" in bt and "STEP-FORM" not in bt and "SINGLE-STEP" not in bt, bt
    sh.submit(",frame 0")
    sh.expect("n = 10")
    sh.submit(",o")                             # out of F: the rest of it runs unstepped
    sh.expect("(8 22)\n" + PROMPT)


def test_step_where_it_cannot_is_said(sbcl_shell):
    sh = sbcl_shell
    sh.submit(",s")
    sh.expect("Nothing is being stepped")
    sh.submit(",step")
    sh.expect("Usage: ,step FORM")
    sh.submit("(car 1)")
    sh.expect("[1] " + PROMPT)
    sh.submit(",s")                             # a TYPE-ERROR has no CONTINUE to step from
    sh.expect("no CONTINUE restart to step from")
    sh.submit(",top")
    sh.expect("Back at the top level.")


def test_stepping_on_a_session_and_over_swank(tmp_path_factory):
    from lisp_servers import Server
    from lispshell.lisp.connection import connect_session

    with LispSession("sbcl") as s:
        assert s.eval(DEFS).ok
        r = s.eval(s.step_form("(f 3)"), keep_levels=True)
        assert r.error.type == "LISPSHELL-STEP" and r.level == 1
        assert s.step("into").error.message == "(+ N 1)"
        assert s.continue_level().values == ["8"] and s.level == 0
    srv = Server("swank", tmp_path_factory.mktemp("swank")).start()
    try:
        c = connect_session(srv.url, {})
        try:
            assert c.eval(DEFS).ok
            r = c.eval(c.step_form("(f 3)"), keep_levels=True)
            assert r.error.type == "LISPSHELL-STEP", r
            assert r.error.message == "(F 3)  [arguments: 3]", r
            assert c.step("into").error.message == "(+ N 1)"
            assert c.step("into").error.message == "(G A)  [arguments: 4]"
            last = c.step("into")
            assert last.values == ["8"] and c.level == 0, last
            assert "; (G A) => 8  (G has no step points" in last.output, last
        finally:
            c.close()
    finally:
        srv.kill()


ADD = "(defun add (a b) (+ a b)) (defun caller () (* 10 (add 2 3)))"


def test_break_on_sbcl_shows_the_arguments_and_continue_returns_the_own_result(sbcl_shell):
    sh = sbcl_shell
    sh.submit(ADD)
    sh.expect("CALLER\n")
    sh.submit(",break add")
    sh.expect("Breakpoint 1: a call of ADD stops in a level")
    sh.submit("(caller)")
    sh.expect("; break: (ADD 2 3)")
    sh.expect(";   a = 2")
    sh.expect(";   b = 3")
    sh.expect("[1] " + PROMPT)
    sh.submit("(+ a b)")                        # the arguments are bound at the level
    sh.expect("\n5\n")
    sh.submit(",bt")
    sh.expect("0: (ADD 2 3)")
    sh.expect("1: (CALLER)")
    sh.submit(",continue")                      # ADD runs: its own result, times 10
    sh.expect("\n50\n" + PROMPT)
    sh.submit("(caller)")
    sh.expect("; break: (ADD 2 3)")
    sh.submit(",return (* a 100)")              # ADD's body not run
    sh.expect("\n2000\n" + PROMPT)
    sh.submit(",breaks")
    sh.expect("1: ADD  (2 hits)")
    sh.submit(",unbreak add")
    sh.expect("Removed breakpoint 1 on ADD.")
    sh.submit("(caller)")
    sh.expect("\n50\n" + PROMPT)
    sh.submit(",break no-such-fn")
    sh.expect("NO-SUCH-FN is not defined as a function")
    sh.submit(",break add (> a 5)")
    sh.expect("when (> a 5)")
    sh.submit("(list (add 1 1) :then)")         # the condition is false: no stop
    sh.expect("(2 :THEN)")


def test_break_on_sbcl_over_swank(tmp_path_factory):
    from lisp_servers import Server
    from lispshell.lisp.connection import connect_session

    srv = Server("swank", tmp_path_factory.mktemp("swank")).start()
    try:
        c = connect_session(srv.url, {})
        try:
            assert c.eval(ADD).ok
            point = c.set_breakpoint("add", "(= b 3)")
            assert (point.number, point.name, point.condition) == (1, "ADD", "(= b 3)")
            r = c.eval("(caller)", keep_levels=True)
            assert r.error.type == "LISPSHELL-BREAK", r
            assert r.error.message == "(ADD 2 3)\na = 2\nb = 3"
            assert c.eval("(+ a b)", keep_levels=True).values == ["5"]
            assert c.continue_level().values == ["50"] and c.level == 0
            assert c.eval("(caller)", keep_levels=True).level == 1
            assert c.return_value("(- a)").values == ["-20"]
            assert [p.hits for p in c.breakpoints()] == [2]
            assert [p.name for p in c.clear_breakpoint("1")] == ["ADD"]
            assert c.eval("(caller)", keep_levels=True).values == ["50"]
        finally:
            c.close()
    finally:
        srv.kill()


def test_break_on_clojure_shows_the_arguments_and_continue_returns_the_own_result(clojure_shell):
    sh = clojure_shell
    sh.submit("(defn f [a b] (* 10 (+ a b)))")
    sh.expect("#'user/f")
    sh.submit(",break f")
    sh.expect("Breakpoint 1: a call of user/f stops in a level")
    sh.submit("(f 2 3)")
    sh.expect("; break: (user/f 2 3)")
    sh.expect(";   a = 2")
    sh.expect(";   b = 3")
    sh.expect("[1] user>")
    sh.submit("(+ a b)")                       # the arguments are bound at the level
    sh.expect("\n5\n")
    sh.submit(",frame 0")
    sh.expect("Frame 0: (user/f 2 3)")
    sh.expect("a = 2")
    sh.submit(",continue")                     # f runs: its own result
    sh.expect("\n50\n")
    sh.submit("(f 1 1)")
    sh.expect("; break: (user/f 1 1)")
    sh.submit(",return :instead")
    sh.expect("\n:instead\n")
    sh.submit("(f 4 4)")
    sh.expect("; break: (user/f 4 4)")
    sh.submit(",abort")
    sh.expect("Back at the top level.")
    sh.submit(",unbreak f")
    sh.expect("Removed breakpoint 1 on user/f.")
    sh.submit("(f 2 3)")
    sh.expect("\n50\n")


def test_break_on_clojure_over_nrepl(tmp_path):
    from lisp_servers import Server
    from lispshell.lisp.connection import connect_session

    srv = Server("nrepl", tmp_path).start()
    try:
        c = connect_session(srv.url, {})
        try:
            assert c.eval("(defn f [a b] (* 10 (+ a b)))").ok
            point = c.set_breakpoint("f")
            assert (point.number, point.name) == (1, "user/f")
            r = c.eval("(do (println :before) (f 2 3))", keep_levels=True)
            assert r.error.type == "LISPSHELL-BREAK", r
            assert r.error.message == "(user/f 2 3)\na = 2\nb = 3" and r.level == 1
            assert ":before" in r.output and "lispshell-hit" not in r.output
            assert c.eval("(+ a b)", keep_levels=True).values == ["5"]
            assert [loc.name for loc in c.frame_locals(0)] == ["a", "b"]
            assert c.backtrace()[0].call == "(user/f 2 3)"
            done = c.continue_level()
            assert done.values == ["50"] and c.level == 0, done
            assert c.eval("(f 1 1)", keep_levels=True).level == 1
            assert c.return_value(":instead").values == [":instead"]
            assert c.eval("(f 1 1)", keep_levels=True).level == 1
            left = c.leave_level()
            assert left.error.type == "LISPSHELL-ABORTED" and c.level == 0, left
            # An eval that keeps no level (MCP, a batch run) leaves the call at once.
            r = c.eval("(f 4 4)")
            assert r.error.type == "LISPSHELL-BREAK" and c.level == 0, r
            # Another thread's hit is listed, entered, and let go. (The future waits for its
            # go until the eval that made it has answered: its note is not that eval's.)
            assert c.eval("(def go (promise)) (def fut (future @go (f 5 5)))").ok
            assert c.eval("(deliver go true)").ok
            listed = []
            for _ in range(100):
                listed = c.other_debuggers
                if listed:
                    break
                c.eval("(Thread/sleep 50)")
            assert listed and "(user/f 5 5)" in listed[0][2], listed
            c.enter_thread(0)
            assert c.eval("(* a b)", keep_levels=True).values == ["25"]
            c.continue_level()
            assert c.eval("@fut").values == ["100"] and c.level == 0
            assert [p.name for p in c.clear_breakpoint("f")] == ["user/f"]
            assert c.eval("(f 2 3)").values == ["50"]
        finally:
            c.close()
    finally:
        srv.kill()


def test_the_tools_at_a_clojure_breakpoint():
    from lispshell.tools.gate import EvalGate
    from lispshell.tools.registry import ToolContext, call_tool

    with LispSession("clojure") as s:
        ctx = ToolContext(session=lambda: s, gate=EvalGate("yolo"), keep_levels=True)
        assert s.eval("(defn f [a b] (* 10 (+ a b)))").ok
        assert call_tool("set_breakpoint", {"name": "f"}, ctx)["breakpoint"]["number"] == 1
        hit = call_tool("eval", {"code": "(f 2 3)"}, ctx)
        assert hit["error"]["code"] == "BREAKPOINT" and hit["error"]["debug_level"] == 1, hit
        bt = call_tool("backtrace", {}, ctx)
        assert bt["frames"][0] == {"index": 0, "call": "(user/f 2 3)",
                                   "locals": {"a": "2", "b": "3"}}, bt
        assert call_tool("eval", {"code": "(+ a b)"}, ctx)["values"] == ["5"]
        assert call_tool("eval_in_frame", {"frame": 0, "code": "(* a b)"}, ctx)["values"] == ["6"]
        assert call_tool("invoke_restart", {"restart": 0}, ctx)["values"] == ["50"]
        assert s.level == 0
        assert call_tool("list_breakpoints", {}, ctx)["breakpoints"][0]["hits"] == 1
        bad = call_tool("set_breakpoint", {"name": "no-such"}, ctx)
        assert bad["error"]["code"] == "BAD_INPUT" and "not defined" in bad["error"]["message"]


@pytest.mark.parametrize("lisp,define,start,value,joined", [
    ("sbcl", "(defun add (a b) (+ a b))",
     '(defvar *th* (sb-thread:make-thread (lambda () (add 5 5)) :name "worker"))',
     "25", "(sb-thread:join-thread *th*)"),
    ("clojure", "(defn add [a b] (+ a b))", "(def th (future (add 5 5)))", "25", "@th"),
])
def test_another_threads_hit_on_a_child_waits_listed_and_is_entered(lisp, define, start, value,
                                                                    joined):
    with LispSession(lisp) as s:
        assert s.eval(define).ok
        s.set_breakpoint("add")
        started = s.eval(start, keep_levels=True)
        assert started.ok and s.level == 0, started
        listed = []
        for _ in range(200):               # the thread reaches the call in its own time
            listed = s.other_debuggers
            if listed:
                break
            s.eval("(sleep 0.05)" if lisp == "sbcl" else "(Thread/sleep 50)")
        assert listed and "ADD 5 5" in listed[0][2].upper(), listed
        error = s.enter_thread(0)
        assert error.type == "LISPSHELL-BREAK" and s.level == 1
        assert "a = 5" in error.message and "b = 5" in error.message
        assert s.eval("(* a b)", keep_levels=True).values == [value]
        assert [loc.name for loc in s.frame_locals(0)] == ["a", "b"]
        assert s.backtrace()[0].call.upper() == "(ADD 5 5)" if lisp == "sbcl" else True
        resumed = s.return_value("(* a 100)")
        assert "the thread goes on" in resumed.output and s.level == 0, resumed
        assert s.eval(joined).values == ["500"]
        assert s.other_debuggers == []


def test_a_hit_on_another_thread_is_listed_and_entered_in_the_repl(sbcl_shell):
    sh = sbcl_shell
    sh.submit(ADD)
    sh.expect("CALLER\n")
    sh.submit(",break add")
    sh.expect("Breakpoint 1")
    sh.submit('(defvar *th* (sb-thread:make-thread (lambda () (caller)) :name "worker"))')
    sh.expect('; breakpoint 1 stopped (ADD 2 3) in thread "worker" (,threads lists it)')
    sh.submit(",threads")
    sh.expect("0: thread worker, level 1: (ADD 2 3)")
    sh.submit(",thread 0")
    sh.expect("; break: (ADD 2 3)")
    sh.expect("[1] " + PROMPT)
    sh.submit("(list a b)")
    sh.expect("(2 3)")
    sh.submit(",continue")
    sh.expect("; the thread goes on")
    sh.submit("(sb-thread:join-thread *th*)")
    sh.expect("\n50\n")


def test_stepping_starts_from_a_breakpoint():
    with LispSession("sbcl") as s:
        assert s.eval(DEFS).ok
        s.set_breakpoint("f")
        assert s.eval("(f 3)", keep_levels=True).error.type == "LISPSHELL-BREAK"
        step = s.step("into")                   # SBCL's START: the call runs stepping
        assert step.error.message == "(+ N 1)" and s.waiting.type == "LISPSHELL-STEP"
        assert "STEP-INTO\tStep into call" in s.restarts, s.restarts
        assert s.step("next").error.message == "(G A)  [arguments: 4]"
        assert s.continue_level().values == ["8"] and s.level == 0
