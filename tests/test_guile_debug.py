"""Breakpoints, stepping, Ctrl-C and `,m` on Guile (issue 41, docs/debugging.md): Guile's own
traps under lispshell's levels, for the person in a real pty, through the session over a
child and over Guile's REPL server, for the model (scripted) and over MCP."""
from __future__ import annotations

import threading

import pytest

from lispshell.lisp.session import LispSession
from pty_shell import CTRL_C, steps as step_lines

F = "(define (f a b) (* 10 (+ a b)))"
ADD = "(define (add a b) (+ a b)) (define (caller) (* 10 (add 2 3)))"


def test_break_shows_the_arguments_and_continue_returns_the_own_result(guile_shell):
    sh = guile_shell
    sh.submit(F)
    sh.expect("(guile-user)>")
    sh.submit(",break f")
    sh.expect("Breakpoint 1: a call of f stops in a level")
    sh.submit("(f 2 3)")
    sh.expect("; break: (f 2 3)")
    sh.expect(";   a = 2")
    sh.expect(";   b = 3")
    sh.expect("[1] (guile-user)>")
    sh.submit("(+ a b)")                       # the arguments are bound at the level
    sh.expect("\n5\n")
    sh.submit(",bt")
    sh.expect("0: (f 2 3)")
    sh.submit(",locals")
    sh.expect("a = 2")
    sh.submit(",return 7")                     # Guile's trap is inside the call: said
    sh.expect("cannot return from this call without running it")
    sh.submit(",continue")                     # f runs: its own result
    sh.expect("\n50\n")
    sh.expect("(guile-user)>")
    sh.submit(",break f when (> a 5)")
    sh.expect("when (> a 5)")
    sh.submit("(list (f 1 1) 'then)")          # the condition is false: no stop
    sh.expect("(20 then)")
    sh.submit("(f 6 0)")
    sh.expect("; break: (f 6 0)")
    sh.submit(",abort")
    sh.expect("Back at the top level.")
    sh.submit(",breaks")
    sh.expect("1: f when (> a 5)  (2 hits)")
    sh.submit(",unbreak f")
    sh.expect("Removed breakpoint 1 on f.")
    sh.submit("(f 2 3)")
    sh.expect("\n50\n")
    sh.submit(",break car")
    sh.expect("Cannot break on car: it is one of Guile's primitives")
    sh.submit(",break no-such")
    sh.expect("No procedure no-such is defined in (guile-user)")


def test_m_is_guiles_module_command(guile_shell):
    sh = guile_shell
    sh.submit(",m")
    sh.expect("(guile-user)")
    sh.submit(",m (ice-9 match)")
    sh.expect("(ice-9 match)>")
    sh.submit(",m")
    sh.expect("(ice-9 match)\n")
    sh.submit(",m guile-user")
    sh.expect("(guile-user)>")
    sh.submit(",m 1 2")
    sh.expect("1 2 is not a module name")


DEFS = "(define (g x) (* x 2)) (define (f n) (let ((a (+ n 1))) (+ 1 (g a))))"


def test_step_walks_into_a_call_and_out_in_at_most_four_lines_a_step(guile_shell):
    sh = guile_shell
    sh.submit(DEFS)
    sh.expect("(guile-user)>")
    start = len(sh.text())
    sh.submit(",step (list (f 3) (f 10))")
    sh.expect("; step: (f 3)")
    sh.expect("[1] (guile-user)>")
    sh.submit(",s")
    sh.expect("; step: (+ n 1)  [in f]")
    sh.submit(",locals")                       # the stepped frame's variables
    sh.expect("n = 3")
    sh.submit(",s")
    sh.expect("; step: (g a)  [in f]")
    sh.submit(",s")
    sh.expect("; step: (* x 2)  [in g]")
    sh.submit(",bt")                           # the stepped frames, not lispshell's
    bt = sh.expect(",frame N: its locals")
    assert "0: (g 4)" in bt and "1: (f 3)" in bt and "step" not in bt, bt
    sh.submit(",s")                            # g returns: its value, then the next form
    sh.expect("; (g a) => 8")
    sh.expect("; step: (+ 1 (g a))  [in f]")
    sh.submit(",next")                         # Guile's name for ,n
    sh.expect("; (f 3) => 9")
    sh.expect("; step: (f 10)")
    sh.submit(",s")
    sh.expect("; step: (+ n 1)  [in f]")
    sh.submit(",finish")                       # Guile's name for ,o: f runs out
    sh.expect("; (f 10) => 23")
    sh.submit(",c")
    sh.expect("\n(9 23)\n")
    steps = [s for s in step_lines(sh.text()[start:], '(guile-user)>') if s]
    assert len(steps) >= 7, steps
    for printed in steps:
        assert len(printed) <= 4, printed      # the command's line, and at most three more
        assert not any("lispshell" in line or "hashq-ref" in line for line in printed), printed


def test_step_from_a_breakpoint_and_where_it_cannot(guile_shell):
    sh = guile_shell
    sh.submit(",s")
    sh.expect("Nothing is being stepped")
    sh.submit(DEFS)
    sh.expect("(guile-user)>")
    sh.submit(",break g")
    sh.expect("Breakpoint 1")
    sh.submit("(f 1)")
    sh.expect("; break: (g 2)")
    sh.submit(",s")                            # stepping starts in the call
    sh.expect("; step: (* x 2)  [in g]")
    sh.submit(",c")
    sh.expect("\n5\n")


def test_ctrl_c_waits_in_a_level_and_continue_resumes(guile_shell):
    from test_repl_pty import wait_running

    sh = guile_shell
    sh.submit("(begin (define n 0) (* 6 7))")
    sh.expect("\n42\n")                         # the image is up and idle
    sh.submit("(let loop ((i 0)) (set! n i) (loop (1+ i)))")
    wait_running(sh, "guile")
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    sh.expect("CONTINUE")
    sh.expect("[1] (guile-user)>")
    sh.submit("(> n 0)")                       # where it was: its variables as they are
    sh.expect("#t")
    sh.submit(",continue")                     # running again, from where it was
    wait_running(sh, "guile")
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    sh.expect("[1] (guile-user)>")
    sh.submit(",abort")
    sh.expect("Back at the top level.")
    sh.submit("(+ 1 2)")
    sh.expect("\n3\n")


def test_breakpoints_through_the_session(guile):
    assert guile.capabilities.breakpoints
    assert guile.eval(ADD).ok
    point = guile.set_breakpoint("add", "when (= b 3)")
    assert (point.number, point.name, point.condition) == (1, "add", "(= b 3)")
    r = guile.eval("(caller)", keep_levels=True)
    assert r.error.type == "LISPSHELL-BREAK" and r.level == 1, r
    assert r.error.message == "(add 2 3)\na = 2\nb = 3"
    assert [x.split("\t")[0] for x in guile.restarts] == ["CONTINUE", "STEP-INTO", "ABORT"]
    assert guile.eval("(+ a b)", keep_levels=True).values == ["5"]
    assert guile.eval("(define defined-at-the-break (* a 100))", keep_levels=True).ok
    assert [(loc.name, loc.value) for loc in guile.frame_locals(0)] == [("a", "2"), ("b", "3")]
    assert [f.call for f in guile.backtrace()][:2] == ["(add 2 3)", "(caller)"]
    assert guile.eval_in_frame(0, "(* a b)").values == ["6"]
    with pytest.raises(ValueError, match="cannot return from this call"):
        guile.return_value("0")
    assert guile.continue_level().values == ["50"] and guile.level == 0
    assert guile.eval("defined-at-the-break").values == ["200"]
    # A definition made again is a new procedure: the breakpoint on the name follows it.
    assert guile.eval("(define (add a b) (- a b))").ok
    assert guile.eval("(caller)", keep_levels=True).level == 1
    assert guile.continue_level().values == ["-10"]
    # An eval that keeps no level (the model's, MCP, a batch run) leaves the call at once.
    r = guile.eval("(caller)")
    assert r.error.type == "LISPSHELL-BREAK" and r.level == 0 and guile.level == 0, r
    assert [p.hits for p in guile.breakpoints()] == [3]
    assert [p.name for p in guile.clear_breakpoint("1")] == ["add"]
    assert guile.eval("(caller)", keep_levels=True).values == ["-10"]
    with pytest.raises(ValueError, match="is a macro"):
        guile.set_breakpoint("when")
    with pytest.raises(ValueError, match="does not read"):
        guile.set_breakpoint("caller", "(> a")


def test_break_at_a_source_line(tmp_path):
    src = tmp_path / "sums.scm"
    src.write_text("(define (total xs)\n  (let loop ((xs xs) (acc 0))\n"
                   "    (if (null? xs)\n        acc\n        (loop (cdr xs) (+ acc (car xs))))))\n")
    with LispSession("guile") as s:
        assert s.eval(s.dialect.project_form("load-file", str(src))).ok
        point = s.set_source_breakpoint(str(src), 4)
        assert point.name == f"{src}:4"
        r = s.eval("(total '(1 2 3))", keep_levels=True)
        assert r.error.type == "LISPSHELL-BREAK" and r.level == 1, r
        assert f"at {src}:4" in r.error.message.split("\n")[0]
        # (where the trap fires is where Guile's line table puts line 4's code)
        assert s.backtrace()[0].source.startswith(f"{src}:"), s.backtrace()
        # each time round the loop control reaches the line again
        stops = 1
        done = s.continue_level()
        while done.error is not None and done.error.type == "LISPSHELL-BREAK" and stops < 10:
            stops += 1
            done = s.continue_level()
        assert done.values == ["6"] and s.level == 0 and stops > 1, (done, stops)
        with pytest.raises(ValueError, match="no compiled procedure"):
            s.set_source_breakpoint(str(src), 40)


def test_stepping_and_ctrl_c_through_the_session(guile):
    assert guile.capabilities.stepping
    assert guile.eval(DEFS).ok
    r = guile.eval(guile.step_form("(f 3)"), keep_levels=True)
    assert r.error.type == "LISPSHELL-STEP" and r.error.message == "(f 3)", r
    assert [x.split("\t")[0] for x in guile.restarts] == [
        "STEP-INTO", "STEP-NEXT", "STEP-OUT", "STEP-CONTINUE", "ABORT"]
    assert guile.step("into").error.message == "(+ n 1)  [in f]"
    assert guile.eval("(* n 100)", keep_levels=True).values == ["300"]
    assert guile.step("next").error.message == "(g a)  [in f]"
    done = guile.continue_level()
    assert done.values == ["9"] and guile.level == 0, done
    # Ctrl-C: the eval waits where it was; CONTINUE resumes it; ABORT leaves it.
    assert guile.eval("(define n 0)").ok
    spin = ("(let loop ((i 0)) (set! n i) "
            "(when (zero? (modulo i 1000000)) (display \"tick\") (newline)) (loop (1+ i)))")

    def interrupted(run):
        ticking, result = threading.Event(), {}
        worker = threading.Thread(target=lambda: result.update(
            r=run(on_output=lambda t: ticking.set())))
        worker.start()
        assert ticking.wait(60)                # it runs (again)
        assert guile.interrupt() == "interrupted"
        worker.join(60)
        return result["r"]

    r = interrupted(lambda **kw: guile.eval(spin, keep_levels=True, **kw))
    assert r.interrupted and r.level == 1 and guile.level == 1, r
    assert [x.split("\t")[0] for x in guile.restarts] == ["CONTINUE", "STEP-INTO", "ABORT"]
    before = int(guile.eval("n", keep_levels=True).values[0])
    r = interrupted(guile.continue_level)
    assert r.interrupted and guile.level == 1, r
    assert int(guile.eval("n", keep_levels=True).values[0]) > before, "it went on from there"
    assert guile.leave_level().level == 0
    assert guile.eval("(+ 1 2)").values == ["3"]
