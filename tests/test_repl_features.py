"""What a Lisp programmer expects of a REPL beyond evaluating (issue 14): big values paged,
feedback while the shell waits, help while typing, restarts and an inspector, themes.
`lispshell` under a real pty, real Lisps; the screen is read with escape codes stripped."""
from __future__ import annotations

import pytest

from fake_anthropic import Reply
from pty_shell import CTRL_C, Shell
from test_llm_repl_pty import Shell as LLMShell, sent_messages

PROMPT = "CL-USER>"


@pytest.fixture
def shell(tmp_path):
    shells = []

    def start(*args, **kw):
        kw.setdefault("env", {})
        kw["env"].setdefault("PAGER", "less")
        s = Shell(tmp_path, *args, cpr=True, **kw)      # cpr: the toolbar is drawn
        shells.append(s)
        return s

    yield start
    for s in shells:
        s.close()


def test_a_one_megabyte_value_is_paged_whole_and_last_reopens_it(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(* 6 7)")                     # short values are printed as always
    sh.expect("42")
    sh.expect(PROMPT)
    sh.submit('(concatenate (quote string) (make-string 1000000 :initial-element #\\z) '
              '(string-upcase "the-end"))')
    sh.expect("zzzzzzzzzzzzzzzzzzzz")       # less shows the start...
    sh.send("G")                             # ...and its end: nothing was cut
    sh.expect("zTHE-END\"")
    sh.expect("(END)")
    sh.send("q")
    sh.expect("1,000,009 characters")
    sh.expect("shown in the pager")
    sh.expect(PROMPT)
    sh.submit(",last")
    sh.expect("zzzzzzzzzzzzzzzzzzzz")
    sh.send("q")
    sh.expect(PROMPT)
    sh.submit("(+ 40 2)")                    # the shell goes on
    sh.expect("42")


def test_last_shows_every_frame_of_the_last_error(tmp_path, shell):
    (tmp_path / "config").mkdir(exist_ok=True)
    pager = tmp_path / "pager"
    pager.write_text("#!/bin/sh\necho PAGED-BY-THE-PAGER\ncat\n")
    pager.chmod(0o755)
    (tmp_path / "config" / "config.toml").write_text(
        f'[repl]\nbacktrace_lines = 1\npager = "{pager}"\n')
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(defun deep-zz (n) (if (zerop n) (error \"bottom ~a\" (* 6 7)) (1+ (deep-zz (1- n)))))")
    sh.expect(PROMPT)
    sh.submit("(deep-zz 3)")
    sh.expect("bottom 42")
    sh.expect("more frames (,last shows them)")
    sh.expect(PROMPT)
    sh.submit(",last")
    sh.expect("bottom 42")
    for _ in range(4):
        sh.expect("DEEP-ZZ")
    # A short error is printed, not paged (issue 23): only what is taller than the screen is.
    assert "PAGED-BY-THE-PAGER" not in sh.text()


# ---------------------------------------------------------------- feedback while waiting
def test_a_silent_form_shows_a_busy_status_until_interrupted(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(loop)")
    sh.expect("sbcl busy · ")
    sh.expect(" s · Ctrl-C interrupts")
    sh.send(CTRL_C)
    # SBCL: the interrupt waits in a debug level, where CONTINUE would resume the loop.
    sh.expect("SB-SYS:INTERACTIVE-INTERRUPT")
    sh.expect("0: [CONTINUE] Return from SB-UNIX:SIGINT.")
    sh.expect("[1] " + PROMPT)
    sh.submit(",top")
    sh.expect("Back at the top level.")
    sh.submit("(* 6 7)")
    sh.expect("42")


@pytest.fixture
def llm_shell(tmp_path, api):
    shells = []

    def start(*args, **kw):
        s = LLMShell(tmp_path, api, *args, **kw)
        shells.append(s)
        s.expect(">")
        return s

    yield start
    for s in shells:
        s.close()


def test_thinking_shows_a_spinner_with_time_and_ctrl_c_stops_the_turn(llm_shell, api):
    api.script(Reply.stall(after=0), Reply.text("Second answer."))
    sh = llm_shell()
    sh.submit("explain closures")
    sh.expect("thinking · ")
    sh.expect(" tokens · Ctrl-C stops")
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    sh.submit("and now?")
    sh.expect("Second answer.")
    assert sent_messages(api)[-1]["content"][-1]["text"] == "and now?"
    sh.quit()


def test_yolo_code_is_shown_before_it_runs_and_the_call_while_it_runs(llm_shell, api):
    api.script(Reply.tool("eval", {"code": "(loop for i from 0)"}),
               Reply.text("It never ended, sorry."))
    sh = llm_shell("--yolo")
    sh.submit("count forever")
    sh.expect("the model evaluates (YOLO) in sbcl CL-USER")
    sh.expect("(loop for i from 0)")
    sh.expect("eval (loop for i from 0) · ")     # the status line names the running call
    sh.send(CTRL_C)
    sh.expect("Interrupted")
    result = None
    sh.submit("what happened?")
    sh.expect("It never ended, sorry.")
    for message in sent_messages(api):
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                result = block
    assert result is not None and result["is_error"]
    sh.quit()


def test_the_toolbar_says_ready_once_a_stopped_turns_eval_has_unwound(llm_shell, api):
    # The prompt comes back while the interrupted eval is still unwinding (its cleanup sleeps
    # for a tenth of a second, inside the redraw watcher's first interval): the toolbar
    # drawn then says busy, and must turn ready by itself, with no key pressed.
    for _ in range(3):
        api.script(Reply.tool("eval", {"code": "(unwind-protect (loop) (sleep 0.1))"}))
    sh = llm_shell("--yolo", cpr=True)
    for _ in range(3):
        sh.submit("count forever")
        sh.expect("eval (unwind-protect (loop) (sleep 0.1)) · ")
        sh.send(CTRL_C)
        sh.expect("Interrupted")
        sh.expect("ready │ YOLO")           # (redrawn from the changed cell on)
    sh.quit()


# ---------------------------------------------------------------- help while typing
@pytest.mark.parametrize("lisp,prompt,typed,arglist", [
    # the parameter the cursor's argument goes to is marked, as SLIME's autodoc does
    ("sbcl", "CL-USER>", "(mapcar ", "(mapcar «function» list &rest more-lists) — Apply FUNCTION"),
    ("guile", "(guile-user)>", "(map ", "(map «f» l"),
    ("clojure", "user>", "(map ", "(map [«f»] [f coll]"),
    # the innermost list's operator names no function (the stream's variable): the enclosing
    ("sbcl", "CL-USER>", '(with-open-file (s "/tmp/x") (read-line s) ',
     "(with-open-file (stream filespec &rest options) &body «body»)"),
    ("sbcl", "CL-USER>", "(with-open-file (s ", "(with-open-file «(stream filespec &rest options)»"),
])
def test_the_toolbar_shows_the_arglist_of_the_operator_at_the_cursor(shell, lisp, prompt, typed,
                                                                      arglist):
    sh = shell("--lisp", lisp, "--no-llm")
    sh.expect(prompt)
    # Typed at once, while Clojure's JVM may still be starting: the editor never waits for
    # the image, and the hint appears when the image can answer.
    sh.send("(let ((x 1)) " + typed if lisp != "clojure" else "(let [x 1] " + typed)
    sh.expect(arglist, timeout=90)
    sh.send("\x03")                           # clear the line; the shell goes on
    sh.submit("(+ 40 2)")
    sh.expect("42")


def test_doc_and_apropos_keys_print_above_the_prompt(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(+ 1 2)")                      # the Lisp is up: a starting one says so instead
    sh.expect("3")
    sh.expect(PROMPT)
    sh.send("(mapcar")
    sh.send("\x18\x04")                       # Ctrl-X Ctrl-D
    sh.expect("documentation of mapcar")
    sh.expect("names a compiled function")
    sh.send("\x03")
    sh.send("mapc")
    sh.send("\x18\x01")                       # Ctrl-X Ctrl-A
    sh.expect("apropos of mapc")
    sh.expect("MAPCAN")


@pytest.mark.parametrize("lisp,spin,name,arglist", [
    ("sbcl", "(loop)", "mapcar", "(mapcar function list"),
    ("guile", "(let spin () (spin))", "map", "(map f l"),
    ("clojure", "(loop [] (recur))", "map", "(map [f] [f coll]"),
])
def test_a_look_up_never_waits_for_a_busy_image(lisp, spin, name, arglist):
    import threading

    from lispshell.lisp.introspect import call_form
    from lispshell.lisp.session import LispSession

    with LispSession(lisp) as session:
        running = threading.Thread(target=session.eval, args=(spin,), daemon=True)
        running.start()
        while not session.busy:
            running.join(0.01)
        # The toolbar's look-up while the person's form runs: nothing, at once, and the form
        # is neither interrupted nor disturbed.
        assert session.try_eval(call_form(lisp, "arglist", name, "").form) is None
        assert running.is_alive() and session.busy
        session.interrupt()
        running.join(60)
        assert not running.is_alive()
        answer = session.try_eval(call_form(lisp, "arglist", name, "").form, timeout=30)
        assert arglist in answer.output


# ---------------------------------------------------------------- restarts and the inspector
def test_sbcl_restarts_are_listed_and_invoked_by_number(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(+ 1 undefined-zz)")
    sh.expect("The variable UNDEFINED-ZZ is unbound")
    sh.expect("Restarts (,invoke N [FORM]; forms evaluate inside the error; ,abort leaves "
              "level 1, ,top all):")
    sh.expect("0: [CONTINUE] Retry using UNDEFINED-ZZ.")
    sh.expect("1: [USE-VALUE] Use specified value.")
    sh.expect("3: [ABORT] Return to lispshell's top level.")
    sh.expect(PROMPT)
    sh.submit(",invoke 1 (* 6 7)")            # USE-VALUE with 42: the form carries on
    sh.expect("\n43\n")
    sh.expect(PROMPT)
    sh.submit('(restart-case (error "boom") (take-mine () :report "Take mine." (* 11 11)))')
    sh.expect("0: [TAKE-MINE] Take mine.")
    sh.submit(",invoke 0")
    sh.expect("121")
    sh.expect(PROMPT)
    # The error waits: a form evaluates inside it, an error there nests, ,abort leaves one.
    sh.submit('(error "again ~a" (* 7 7))')
    sh.expect("again 49")
    sh.expect("0: [ABORT] Return to lispshell's top level.")
    sh.expect("[1] " + PROMPT)
    sh.submit("(* 6 7)")
    sh.expect("42")
    sh.submit('(error "third")')
    sh.expect("0: [ABORT] Return to debug level 1.")
    sh.expect("[2] " + PROMPT)
    sh.submit(",abort")
    sh.expect("Back at debug level 1.")
    sh.submit(",invoke 0")
    sh.expect("Back at the top level")
    sh.submit(",invoke 0")
    sh.expect("No error is waiting with restarts")


def test_invoke_says_plainly_where_there_are_no_restarts(shell):
    sh = shell("--lisp", "clojure", "--no-llm")
    sh.expect("user>", timeout=60)
    sh.submit("(/ 1 0)")
    sh.expect("ArithmeticException")
    sh.submit(",invoke 0")
    sh.expect("Clojure exceptions have no restarts")


def test_inspect_a_struct_and_a_hash_table(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(defstruct point x y)")
    sh.expect(PROMPT)
    sh.submit("(make-point :x (* 6 7) :y (list 1 (* 2 4)))")
    sh.expect("#S(POINT :X 42 :Y (1 8))")
    sh.submit(",inspect *")                  # the last value
    sh.expect("POINT  #S(POINT")
    sh.expect("0  x  42")
    sh.expect("1  y  (1 8)")
    sh.expect(",inspect N opens part N")
    sh.submit(",inspect 1")                  # into the slot y: a list
    sh.expect("CONS  (1 8)")
    sh.expect("1  1  8")
    sh.submit(",inspect 7")
    sh.expect("No part 7: the last table has 2")
    sh.submit(",inspect 1")                  # still the list's part 1
    sh.expect("(INTEGER 0 4611686018427387903)  8")
    sh.expect("(no parts: an atom)")
    sh.submit(',inspect (let ((h (make-hash-table :test (quote equal)))) '
              '(setf (gethash "k1" h) (* 3 3) (gethash :k2 h) (* 4 4)) h)')
    sh.expect("HASH-TABLE  #<HASH-TABLE :TEST EQUAL :COUNT 2")
    sh.expect('"k1"  9')
    sh.expect(":K2   16")
    sh.submit(",inspect (error \"nope ~a\" (* 5 5))")
    sh.expect("nope 25")
    sh.submit(",inspect (list 1 2))")          # read by lispshell first, as at the prompt
    sh.expect("Syntax error at line 1, column 11: unmatched close parenthesis")
    sh.submit(",inspect (list 1")
    sh.expect("Syntax error at line 1, column 1: ")
    assert "END-OF-FILE" not in sh.expect(PROMPT)
    sh.submit("(+ 40 2)")
    sh.expect("42")


def test_inspect_in_guile_and_clojure(shell):
    sh = shell("--lisp", "guile", "--no-llm")
    sh.expect("(guile-user)>")
    sh.submit("(use-modules (srfi srfi-9)) (define-record-type point (make-point x y) point? (x px) (y py))")
    sh.expect("(guile-user)>")
    sh.submit(",inspect (make-point (* 6 7) 'why)")
    sh.expect("point  #<point x: 42")
    sh.expect("x  42")
    sh.submit(",inspect 1")
    sh.expect("symbol  why")
    sh.submit(",inspect *")
    sh.expect("keeps no last value here")
    sh = shell("--lisp", "clojure", "--no-llm")
    sh.expect("user>")
    sh.submit('(throw (ex-info "bad thing" {:code (* 6 7)}))')
    sh.expect("bad thing {:code 42}")
    sh.submit(",inspect *e")
    sh.expect("clojure.lang.ExceptionInfo  bad thing")
    sh.expect("ex-data :code  42")
    sh.submit(",inspect 1")                  # the ex-data entry
    sh.expect("java.lang.Long  42")
    sh.submit(",invoke 0")                    # said plainly, as in Guile
    sh.expect("Clojure exceptions have no restarts")


# ---------------------------------------------------------------- colours
RGB_OR_256 = ("38;5;", "38;2;")


def _config(tmp_path, text: str) -> None:
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.toml").write_text(text)


def test_default_colours_are_the_terminals_own_and_prose_is_not_highlighted(tmp_path):
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", env={"NO_COLOR": ""})
    try:
        sh.expect(PROMPT)
        start = len(sh.raw)
        sh.send('(defun zz () "text" :key 42)')
        sh.expect(":key 42")
        lisp = sh.raw[start:]
        assert "\x1b[0;35mdefun" in lisp               # a built-in in ANSI magenta
        assert "\x1b[0;32m\"text\"" in lisp and "\x1b[0;36m42" in lisp   # green, cyan
        assert not any(code in lisp for code in RGB_OR_256)   # no RGB navy for symbols
        sh.send("\x03")
        start = len(sh.raw)
        sh.send("why does defun return 42")
        sh.expect("return 42")
        prose = sh.raw[start:]
        assert "35m" not in prose and "36m" not in prose, repr(prose)   # prose stays plain
    finally:
        sh.close()


def test_the_light_theme_and_a_bad_style_name(tmp_path):
    _config(tmp_path, '[repl]\nstyle = "light"\n')
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm", env={"NO_COLOR": ""})
    try:
        sh.expect(PROMPT)
        sh.submit("(* 6 7)")
        sh.expect("42")
        assert "\x1b[1;34m42" in sh.raw                 # values: bold blue on a light screen
    finally:
        sh.close()
    _config(tmp_path, '[repl]\nstyle = "neon"\n')
    sh = Shell(tmp_path, "--lisp", "sbcl", "--no-llm")
    try:
        sh.expect("[repl] style = 'neon': choose one of default, dark, light, none; "
                  "using the default colours.")
        sh.expect(PROMPT)
        sh.submit("(* 6 7)")
        sh.expect("42")
    finally:
        sh.close()
