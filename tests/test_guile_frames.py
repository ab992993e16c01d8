"""Guile's errors name the person's procedures with where they are (issue 22 item 4): the loop
compiles what is typed, as Guile's own REPL does, and captures the stack in its handler, on a
child in a real pty and over Guile's REPL server."""
from __future__ import annotations

import pytest

from lisp_servers import Server
from lispshell.lisp.connection import connect_session
from lispshell.lisp.levels import Local
from lispshell.lisp.session import LispSession

DEFINE = "(define (f x) (car x))\n(define (g x) (+ 1 (f x)))"


def test_an_error_typed_at_the_prompt_names_the_callers_with_line_and_column(guile_shell):
    sh = guile_shell
    sh.submit("(define (f x) (car x)) (define (g x) (+ 1 (f x)))")
    sh.submit("(g 5)")
    sh.expect("wrong-type-arg: In procedure car")
    # Each form typed is read on its own: its lines and columns count from its start.
    sh.expect("(f 5) at 1:15")
    sh.expect("(g _) at 1:20")
    # The error waits in a level (tests/test_guile_levels.py): ,bt and ,frame N show its
    # frames, as Guile's own ,bt and ,locals do.
    sh.submit(",bt")
    sh.expect("Backtrace at level 1")
    sh.expect("0: (f 5)")
    sh.submit(",frame 0")
    sh.expect("Frame 0: (f 5)")
    sh.expect("x = 5")


@pytest.fixture(scope="module")
def guile_server(tmp_path_factory):
    server = Server("guile", tmp_path_factory.mktemp("guile")).start()
    yield server
    server.kill()


def test_over_the_guile_server_too(guile_server):
    session = connect_session(guile_server.url, {})
    try:
        assert session.eval(DEFINE).ok
        error = session.eval("(g 5)").error
        assert error.type == "wrong-type-arg"
        assert error.backtrace[:2] == ["(f 5) at 1:15", "(g _) at 2:20"], error
        # The frames of the form itself (compiled: it loops) come after those of its callees.
        assert session.eval("(let loop ((i 0)) (if (< i 3) (loop (+ i 1)) (g i)))").error \
            .backtrace[:2] == ["(f 3) at 1:15", "(g _) at 2:20"]
        # A syntax error is raised while compiling: the compiler's frames are Guile's, not
        # the person's, and the image carries on.
        error = session.eval("(let ((x)) x)").error
        assert error.type == "syntax-error" and "bad let" in error.message
        assert error.backtrace == []
        assert session.eval("(g '(41))").values == ["42"]
    finally:
        session.close()


@pytest.mark.parametrize("transport", ["child", "server"])
def test_the_last_errors_frames_and_their_locals(transport, guile_server):
    """An error of an eval that keeps no level (the model's, MCP's, a look-up) unwinds at
    once, but the loop keeps the stack it captured: backtrace() and frame_locals(n) read the
    last error's frames."""
    session = LispSession("guile") if transport == "child" else \
        connect_session(guile_server.url, {})
    try:
        if transport == "child":
            session.start()
        with pytest.raises(ValueError, match="No error to show"):
            session.backtrace()
        assert session.eval(
            "(define (h x) (let ((twice (* x 2))) (+ x (vector-ref twice 0))))").ok
        assert session.eval("(h 21)").error.type == "wrong-type-arg"
        assert session.eval("(+ 1 2)").values == ["3"]      # a later success keeps them
        frames = session.backtrace()
        assert (frames[0].index, frames[0].call, frames[0].source) == (0, "(h 21)", "1:43")
        # `twice` was optimized away; the compiler's unboxed temporaries are not shown.
        assert session.frame_locals(0) == [Local("x", "21")]
        with pytest.raises(ValueError, match="No frame 5"):
            session.frame_locals(5)
        with pytest.raises(ValueError, match="no debug level is open"):
            session.eval_in_frame(0, "x")      # only where the error waits (a level)
    finally:
        session.close()
