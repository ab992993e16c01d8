"""Guile's errors wait in a level, as in Guile's own REPL (`scheme@(guile-user) [1]>`): on a
child in a real terminal, and over Guile's REPL server (the same loop, typed into a client)."""
from __future__ import annotations



DEFS = "(define (f x) (car x)) (define (g x) (+ 1 (f x)))"


def test_an_error_waits_and_the_level_is_guiles(guile_shell):
    sh = guile_shell
    sh.submit(DEFS)
    sh.expect("(guile-user)>")
    sh.submit("(g 5)")
    sh.expect("Wrong type argument")
    sh.expect("[1]")
    sh.submit(",up")
    sh.expect("x = 5")
    sh.submit(",locals")
    sh.expect("x = 5")
    sh.submit("(define kept-at-the-level 42)")
    sh.expect("[1]")
    sh.submit("(car 2)")                      # a second level inside the first
    sh.expect("[2]")
    sh.submit(",abort")
    sh.expect("Back at debug level 1")
    sh.submit(",q")                           # Guile's habit: leaves the level only
    sh.expect("Back at the top level")
    sh.submit("kept-at-the-level")
    sh.expect("42")
    sh.submit("(+ 1 2)")
    sh.expect("3")


def test_levels_frames_locals_and_eval_in_frame(guile):
    assert guile.eval(DEFS).ok
    r = guile.eval("(g 5)", keep_levels=True)
    assert r.level == 1 and guile.level == 1 and "wrong-type-arg" in r.error.type, r
    assert [x.split("\t")[0] for x in guile.restarts] == ["ABORT"]
    frames = guile.backtrace()
    assert frames[0].call == "(f 5)", frames
    assert ("x", "5") in [(loc.name, loc.value) for loc in guile.frame_locals(0)]
    assert guile.eval_in_frame(0, "(list x (* 2 x))").values == ["(5 10)"]
    assert guile.eval("(define at-level 7)", keep_levels=True).level == 1
    assert guile.eval("(car 2)", keep_levels=True).level == 2
    assert guile.leave_level().level == 1
    assert guile.backtrace()[0].call == "(f 5)", "the outer level's frames again"
    assert guile.top().level == 0
    assert guile.eval("at-level").values == ["7"]
    # Without keep_levels (the model's eval, MCP, a batch run) nothing is left waiting.
    r = guile.eval("(g 5)")
    assert r.error is not None and r.level == 0 and guile.level == 0
    r = guile.eval("(g 5)", keep_levels=True)
    assert guile.invoke_restart(0).level == 0
