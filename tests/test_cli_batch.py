"""Non-interactive lispshell: `-e FORM` and forms on standard input, on all three Lisps.

Values go to stdout one per line, errors to stderr, and the exit status says whether every
form succeeded.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import LISPSHELL


def run(*args: str, stdin: str | None = None, env: dict | None = None, timeout: float = 90):
    return subprocess.run([LISPSHELL, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})),
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def test_sbcl_eval_flags_in_order():
    r = run("--lisp", "sbcl", "-e", "(defvar *x* 41)", "-e", '(princ "out")', "-e",
            "(values (1+ *x*) :two)")
    assert r.returncode == 0, r.stderr
    assert r.stdout == '*X*\nout\n"out"\n42\n:TWO\n'
    assert r.stderr == ""


def test_sbcl_failing_form_sets_the_exit_status_and_later_forms_still_run():
    r = run("--lisp", "sbcl", "-e", '(error "kaboom")', "-e", "(* 6 7)")
    assert r.returncode == 1
    assert "kaboom" in r.stderr
    assert r.stdout == "42\n"


def test_a_fresh_sbcl_has_empty_repl_variables():
    # Not the bootstrap's leftovers (`*` was #<PACKAGE "COMMON-LISP-USER">, `+++` lispshell's loop).
    r = run("--lisp", "sbcl", "-e", "(list * ** *** + ++ +++ / // ///)")
    assert r.returncode == 0 and r.stdout == "(NIL NIL NIL NIL NIL NIL NIL NIL NIL)\n", r.stdout[:300]


def test_sbcl_forms_from_stdin():
    program = ';; a comment\n(defun sq (x) (* x x))\n(format t "~a~%" (sq 7))\n(sq 9)\n'
    r = run("--lisp", "sbcl", stdin=program)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "SQ\n49\nNIL\n81\n"


def test_stdin_syntax_error_is_positioned_and_fails():
    r = run("--lisp", "sbcl", stdin="(* 6 7)\n(+ 1 2))\n(print :never)\n")
    assert r.returncode == 1
    assert r.stdout == "42\n3\n"          # the forms before the problem ran; none after it
    assert r.stderr.startswith("<stdin>:2:8: unmatched close")    # path:line:col: message
    assert "(+ 1 2))" in r.stderr and "^" in r.stderr


def test_stdin_unclosed_form_fails_without_hanging():
    r = run("--lisp", "sbcl", stdin="(* 6 7)\n(list 1 2\n")
    assert r.returncode == 1
    assert r.stdout == "42\n"
    assert "<stdin>:2:1" in r.stderr


def test_guile_stdin_values_and_errors():
    r = run("--lisp", "guile",
            stdin='(define (f x) (* x 6))\n(display "hi")\n(values (f 7) 2)\n(car 5)\n(f 1)\n')
    assert r.returncode == 1
    assert "hi" in r.stdout and "42\n2\n" in r.stdout and r.stdout.endswith("6\n")
    assert "car" in r.stderr.lower()


def test_clojure_eval_and_stdin():
    r = run("--lisp", "clojure", "-e", "(* 6 7)", "-e", "(/ 1 0)")
    assert r.returncode == 1
    assert r.stdout.splitlines()[0] == "42"
    assert "Divide by zero" in r.stderr
    r = run("--lisp", "clojure", stdin='(ns my.app)\n(defn f [x] (* x 6))\n(println (f 7))\n'
                                       '(str *ns*)\n')
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["nil", "#'my.app/f", "42", "nil", '"my.app"']


def test_config_path_and_unknown_lisp():
    r = run("--config-path")
    assert r.returncode == 0
    assert r.stdout.strip().endswith("config.toml")
    assert r.stdout.strip().startswith(os.environ["LISPSHELL_CONFIG_DIR"])
    r = run("--lisp", "cobol", "-e", "1")
    assert r.returncode == 2 and "cobol" in r.stderr
    r = run("--version")                  # as `lispshell mcp --version` answers
    assert r.returncode == 0 and r.stdout.startswith("lispshell ")


def test_user_config_sets_the_lisp_and_flags_win(tmp_path):
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('default_lisp = "guile"\n')
    env = {"LISPSHELL_CONFIG_DIR": str(config_dir)}
    assert run("-e", "(string? \"x\")", env=env).stdout == "#t\n"
    assert run("--lisp", "sbcl", "-e", "(stringp \"x\")", env=env).stdout == "T\n"
    (config_dir / "config.toml").write_text("default_lisp = [\n")
    r = run("-e", "1", env=env)
    assert r.returncode == 2 and "config.toml" in r.stderr and "Traceback" not in r.stderr


def test_a_lisp_that_cannot_start_is_a_clear_error(tmp_path):
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('[lisp.sbcl]\ncommand = ["/nonexistent/sbcl"]\n')
    r = run("--lisp", "sbcl", "-e", "1", env={"LISPSHELL_CONFIG_DIR": str(config_dir)})
    assert r.returncode == 2
    assert "cannot start sbcl" in r.stderr and "Traceback" not in r.stderr


def test_non_interactive_path_does_not_import_prompt_toolkit_or_anthropic():
    code = ("import sys\nfrom lispshell.repl.main import main\n"
            "status = main(['--lisp', 'sbcl', '-e', '(+ 1 2)'])\n"
            "print(status, 'prompt_toolkit' in sys.modules, 'anthropic' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.stdout.splitlines() == ["3", "0 False False"], r.stderr


# The person's own output and values are never cut (issue 9): only what the model keeps is.
LINES = {"sbcl": '(dotimes (i 10000) (format t "line ~d xxxxxxxxxxxxxxx~%" i))',
         "guile": '(do ((i 0 (+ i 1))) ((= i 10000)) (format #t "line ~a xxxxxxxxxxxxxxx~%" i))',
         "clojure": '(dotimes [i 10000] (println (str "line " i " xxxxxxxxxxxxxxx")))'}
EXPECTED = "".join(f"line {i} xxxxxxxxxxxxxxx\n" for i in range(10000))


@pytest.mark.parametrize("lisp", ["sbcl", "guile", "clojure"])
def test_every_line_of_a_big_output_reaches_stdout(lisp):
    r = run("--lisp", lisp, "--no-project", "-e", LINES[lisp])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(EXPECTED) and len(EXPECTED) > 3 * 65536
    assert "dropped" not in r.stderr and "not kept" not in r.stderr


def test_a_script_on_stdin_prints_all_of_it():
    r = run("--lisp", "sbcl", "--no-project", stdin=LINES["sbcl"] + "\n(+ 1 2)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == EXPECTED + "NIL\n3\n"


def test_a_one_megabyte_value_is_printed_whole():
    r = run("--lisp", "sbcl", "--no-project", "-e", "(make-string 1000000 :initial-element #\\a)")
    assert r.returncode == 0, r.stderr
    assert r.stdout == '"' + "a" * 1000000 + '"\n'


@pytest.mark.parametrize("lisp, before, exit_form, status", [
    ("sbcl", '(princ "a")', "(sb-ext:exit :code 3)", 3),
    ("guile", '(display "a")', "(exit 0)", 0),
    ("guile", '(display "a")', "(exit 5)", 5),
    ("clojure", '(print "a")', "(System/exit 4)", 4),
])
def test_exiting_the_lisp_ends_the_run_with_its_status(lisp, before, exit_form, status):
    """As `sbcl < file`: nothing after the exit runs, and the run's status is the Lisp's."""
    after = {"sbcl": '(princ "after-exit")', "guile": '(display "after-exit")',
             "clojure": '(print "after-exit")'}[lisp]
    r = run("--lisp", lisp, "--no-project", stdin=f"{before}\n{exit_form}\n{after}\n")
    assert r.returncode == status, r.stderr
    assert "after-exit" not in r.stdout and r.stdout.startswith("a")
    assert "died" not in r.stderr and "fresh" not in r.stderr
    e = run("--lisp", lisp, "--no-project", "-e", exit_form, "-e", "(+ 1 2)")
    assert (e.returncode, e.stdout) == (status, "")


def test_a_closed_pipe_ends_the_run_quietly():
    proc = subprocess.Popen([LISPSHELL, "--no-project", "-e", '(loop (princ "x"))'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout.read(10) == b"x" * 10
    proc.stdout.close()                          # what `| head -c 10` does
    assert proc.wait(timeout=60) == 141
    err = proc.stderr.read().decode()
    assert "Traceback" not in err and "BrokenPipe" not in err


@pytest.mark.parametrize("lisp", ["sbcl", "clojure"])
def test_a_repl_command_given_to_e_is_explained_not_evaluated(lisp):
    r = run("--lisp", lisp, "-e", ",help")
    assert r.returncode == 2 and r.stdout == ""
    assert ",help is a REPL command" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("lisp,define,call,frame", [
    ("sbcl", "(defun f (x) (car x)) (defun g (x) (1+ (f x)))", "(g 5)", "(F 5)"),
    ("guile", "(define (f x) (car x)) (define (g x) (+ 1 (f x)))", "(g 5)", "(f 5)"),
    ("clojure", "(defn f [x] (first x)) (defn g [x] (inc (f x)))", "(g 5)", "user/f"),
])
def test_an_uncaught_error_prints_the_user_s_frames(lisp, define, call, frame):
    r = run("--lisp", lisp, "-e", define, "-e", call)
    assert r.returncode == 1, r
    lines = r.stderr.splitlines()
    at = lines.index("Backtrace (innermost first):")
    frames = lines[at + 1:]
    assert any(frame in line for line in frames), r.stderr
    assert len([f for f in frames if f.startswith("  ")]) <= 13
    assert "%lispshell" not in r.stderr.lower() and "lispshell.loop" not in r.stderr
