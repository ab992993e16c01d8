"""Programs that read standard input, answered by the person at a real terminal (a pty), on
each child Lisp and over Swank, nREPL and Guile's REPL server; a batch run's own standard
input; and the model's eval and MCP, which nobody can type into: end of file at once, said."""
from __future__ import annotations

import subprocess
import time

import pytest

from conftest import LISPSHELL
from lisp_servers import Server
from lispshell.lisp.session import LispSession
from lispshell.tools.gate import EvalGate
from lispshell.tools.registry import ToolContext, call_tool
from pty_shell import CTRL_C, CTRL_D, Shell

MARK = "»"     # the input line's marker (lispshell/repl/input_line.py)

# A program that prints a question without a newline, reads two lines, then asks yes or no,
# and its value once answered "Ada", "Lovelace", "y". Guile and Clojure have no y-or-n-p:
# the program reads the answer's line itself.
PROGRAMS = {
    "sbcl": ('(progn (format t "Name? ") (list (read-line) (read-line) '
             '(y-or-n-p "Proceed?")))', "Proceed? (y or n)", '("Ada" "Lovelace" T)'),
    "guile": ('(begin (use-modules (ice-9 rdelim)) (display "Name? ") '
              '(let* ((a (read-line)) (b (read-line))) (display "Proceed? (y/n) ") '
              '(list a b (string=? (read-line) "y"))))', "Proceed? (y/n)",
              '("Ada" "Lovelace" #t)'),
    "clojure": ('(do (print "Name? ") (let [a (read-line) b (read-line)] '
                '(print "Proceed? (y/n) ") [a b (= "y" (read-line))]))', "Proceed? (y/n)",
                '["Ada" "Lovelace" true]'),
}
# Reading once more: end of file (Ctrl-D), and what each Lisp makes of it.
READ_ONCE = {"sbcl": ("(read-line)", "END-OF-FILE"),
             "guile": ("(begin (use-modules (ice-9 rdelim)) (read-line))", "#<eof>"),
             "clojure": ("(read-line)", "nil")}
PROMPTS = {"sbcl": "CL-USER>", "guile": "(guile-user)>", "clojure": "user>"}


def converse(sh, lisp: str, prompt: str) -> None:
    """The person answers the program, then ends a read with Ctrl-D and interrupts one."""
    program, question, value = PROGRAMS[lisp]
    sh.submit(program)
    # What the program printed before reading is on the screen before anything is typed,
    # and the input line (no package in it) follows it.
    sh.expect("Name? " + MARK, timeout=120)
    sh.submit("Ada")
    sh.expect(MARK)
    sh.submit("Lovelace")
    sh.expect(question)
    sh.expect(MARK)
    sh.submit("y")
    sh.expect(value)
    sh.expect(prompt)
    form, eof = READ_ONCE[lisp]
    sh.submit(form)
    sh.expect(MARK)
    sh.send(CTRL_D)
    sh.expect(eof)
    sh.expect(prompt)
    if lisp == "sbcl":                  # END-OF-FILE is an error, which waits in a level
        sh.submit(",top")
        sh.expect("Back at the top level")
    sh.submit(form)
    sh.expect(MARK)
    sh.send(CTRL_C)
    sh.expect("nterrupt")
    sh.expect(prompt)


@pytest.mark.parametrize("lisp", ["sbcl", "guile", "clojure"])
def test_a_program_asks_the_person_on_each_child(lisp, tmp_path):
    sh = Shell(tmp_path, "--lisp", lisp, "--no-llm", "--no-project")
    try:
        sh.expect(PROMPTS[lisp])
        converse(sh, lisp, PROMPTS[lisp])
        sh.submit("(+ 40 2)")            # the image goes on
        sh.expect("42")
    finally:
        sh.close()


def test_ctrl_c_at_the_input_line_waits_in_a_level_whose_continue_asks_again(sbcl_shell):
    sh = sbcl_shell
    sh.submit('(progn (format t "Age? ") (* 2 (parse-integer (read-line))))')
    sh.expect("Age? " + MARK)
    sh.send(CTRL_C)
    sh.expect("Interrupted while reading standard input.")
    sh.expect("[CONTINUE] Go on reading standard input.")
    sh.expect("[1] CL-USER>")
    sh.submit(",invoke 0")
    sh.expect(MARK)
    sh.submit("21")
    sh.expect("42")
    sh.expect("CL-USER>")
    # A restart's :interactive reader asks through the same line (USE-VALUE, no FORM).
    sh.submit("(+ 1 undefined-zz)")
    sh.expect("[USE-VALUE]")
    sh.expect("[1] CL-USER>")
    sh.submit(",invoke 1")
    sh.expect("Enter a form to be evaluated:")
    sh.expect(MARK)
    sh.submit("41")
    sh.expect("42")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    started = {}

    def get(kind):
        if kind not in started:
            started[kind] = Server(kind, tmp_path_factory.mktemp(kind)).start()
        return started[kind]

    yield get
    for srv in started.values():
        srv.kill()


@pytest.mark.parametrize("kind,lisp", [("swank", "sbcl"), ("nrepl", "clojure"),
                                       ("guile", "guile")])
def test_a_program_asks_the_person_over_each_connection(kind, lisp, servers, tmp_path):
    server = servers(kind)
    sh = Shell(tmp_path, "--connect", server.url, "--no-llm")
    try:
        sh.expect("Connected to " + server.url, timeout=120)
        prompt = PROMPTS[lisp]
        sh.expect(prompt)
        converse(sh, lisp, prompt)
        sh.submit("(+ 40 2)")
        sh.expect("42")
    finally:
        sh.close()
    assert server.alive(), "the person's image runs on"


def test_swank_continue_after_an_interrupted_read_asks_again(servers, tmp_path):
    server = servers("swank")
    sh = Shell(tmp_path, "--connect", server.url, "--no-llm")
    try:
        sh.expect("Connected to " + server.url, timeout=120)
        sh.submit('(progn (format t "Age? ") (* 2 (parse-integer (read-line))))')
        sh.expect("Age? " + MARK)
        sh.send(CTRL_C)
        sh.expect("Interrupted while reading standard input.")
        sh.expect("[1] CL-USER>")
        sh.submit(",invoke 0")
        sh.expect(MARK)
        sh.submit("21")
        sh.expect("42")
    finally:
        sh.close()


def test_a_batch_run_reads_its_own_standard_input():
    r = subprocess.run([LISPSHELL, "--lisp", "sbcl", "-e", "(list (read-line) (read-line))",
                        "-e", "(read-line *standard-input* nil :eof)"],
                       input="first\nsecond\n", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == '("first" "second")\n:EOF\nT\n', r
    # Forms on standard input leave nothing of it: the code gets end of file.
    r = subprocess.run([LISPSHELL, "--lisp", "guile"],
                       input="(use-modules (ice-9 rdelim))\n(read-line)\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "#<eof>\n", r
    r = subprocess.run([LISPSHELL, "--lisp", "clojure", "-e", "(read-line)"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "nil\n", r


@pytest.mark.parametrize("lisp,form", [("sbcl", "(read-line)"),
                                       ("guile", "(read-char)"),
                                       ("clojure", "(read-line)")])
def test_the_models_eval_that_reads_is_told_at_once_it_needs_input(lisp, form):
    with LispSession(lisp) as s:
        ctx = ToolContext(session=lambda: s, gate=EvalGate("yolo"), eval_timeout=600.0)
        started = time.monotonic()
        answer = call_tool("eval", {"code": form}, ctx)
        # Not the eval's time limit: the read got end of file at once.
        assert time.monotonic() - started < 60
    assert answer["ok"] is False and answer["error"]["code"] == "NEEDS_INPUT", answer
    assert "nobody can type" in answer["error"]["message"]


def test_mcp_eval_that_reads_is_told_it_needs_input(tmp_path):
    from mcp_harness import answer, connect, run

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", "--allow-eval") as client:
            got = answer(await client.call_tool("eval", {"code": '(y-or-n-p "Delete?")'}))
            assert got["ok"] is False and got["error"]["code"] == "NEEDS_INPUT", got
            assert got["error"]["lisp_error"]["type"] == "END-OF-FILE"
    run(scenario)
