"""A Lisp programmer's first day (issue 23): what reads as Lisp is evaluated, their init files
are loaded, and the REPL's smaller defects, each in a real pty or against a real server."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import LISPSHELL
from pty_shell import META_ENTER, Shell

PROMPT = "CL-USER>"


@pytest.fixture
def shell(tmp_path):
    shells = []

    def start(*args, env=None):
        sh = Shell(tmp_path, *args, env=env)
        shells.append(sh)
        return sh

    yield start
    for sh in shells:
        sh.close()


def test_lisp_is_never_sent_to_the_model(shell):
    sh = shell("--lisp", "sbcl", "--no-project")        # no API key: prose would be said so
    sh.expect(PROMPT)
    sh.submit("(defparameter *x* 3) *x*")
    sh.expect("\n3\n")
    sh.submit("*x* *x*")
    sh.expect("\n3\n")
    sh.send("hello world" + META_ENTER)                  # Esc Enter: Lisp, whatever it reads as
    sh.expect("The variable HELLO is unbound")
    sh.submit("add seven to that")                       # unmistakable prose
    sh.expect("The LLM is not enabled")
    assert "The LLM is not enabled" not in sh.text().split("add seven to that")[0]


def _run(*args, home: Path):
    return subprocess.run([LISPSHELL, "--no-project", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env=dict(os.environ, HOME=str(home)))


def test_init_files_are_loaded_as_the_lisps_own_repl_loads_them(tmp_path):
    (tmp_path / ".sbclrc").write_text("(defvar *from-sbclrc* :loaded)\n")
    (tmp_path / ".guile").write_text("(define from-guile-init 42)\n")
    assert _run("-e", "(boundp '*from-sbclrc*)", home=tmp_path).stdout == "T\n"
    assert _run("--no-init", "-e", "(boundp '*from-sbclrc*)", home=tmp_path).stdout == "NIL\n"
    assert _run("--lisp", "guile", "-e", "from-guile-init", home=tmp_path).stdout == "42\n"


def test_a_broken_init_file_is_reported_and_the_repl_still_starts(tmp_path, shell):
    (tmp_path / ".sbclrc").write_text('(defvar *before* 1)\n(error "broken rc ~a" 7)\n')
    r = _run("-e", "(list (boundp '*before*) (+ 1 2))", home=tmp_path)
    assert r.returncode == 0 and r.stdout == "(T 3)\n", r.stderr
    assert "loading ~/.sbclrc failed: SIMPLE-ERROR: broken rc 7" in r.stderr
    assert f"broken rc 7 (at {tmp_path / '.sbclrc'}:2:1)" in r.stderr     # where, too
    sh = shell("--lisp", "sbcl", "--no-project", env={"HOME": str(tmp_path)})
    sh.expect("Loading ~/.sbclrc failed: SIMPLE-ERROR: broken rc 7")
    sh.submit("(* 6 7)")
    sh.expect("42")


def test_what_init_files_print_is_shown_in_the_repl(tmp_path, shell):
    (tmp_path / ".sbclrc").write_text('(format t "hello from my sbclrc~%")\n')
    (tmp_path / ".guile").write_text('(display "hello from my guile init")(newline)\n')
    sh = shell("--lisp", "sbcl", "--no-project", env={"HOME": str(tmp_path)})
    sh.expect("hello from my sbclrc")
    sh.submit(",lisp guile")
    sh.expect("hello from my guile init")
    # a batch run's standard output is the script's: not there
    assert _run("-e", "(+ 1 2)", home=tmp_path).stdout == "3\n"


def test_a_guile_program_serving_its_own_repl_with_spawn_server(tmp_path):
    """A long-running Guile program exposes its image with (spawn-server); its main thread is
    busy with its own work, and its REPL module lacks (ice-9 threads)."""
    import time

    from lisp_servers import free_port, wait_listening

    port = free_port()
    program = subprocess.Popen(
        ["guile", "-c", "(use-modules (system repl server)) "
         f"(spawn-server (make-tcp-server-socket #:port {port})) (let loop () (sleep 1) (loop))"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_listening(f"guile://127.0.0.1:{port}", time.monotonic() + 60)
        r = subprocess.run([LISPSHELL, "--connect", f"guile://127.0.0.1:{port}", "-e", "(+ 1 2)",
                            "-e", "(define zz 21)", "-e", "(* zz 2)"], capture_output=True,
                           text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert r.returncode == 0 and r.stdout == "3\n42\n", r.stderr
    finally:
        program.kill()
        program.wait()


def test_a_server_that_never_answers_is_given_up_with_a_message(tmp_path):
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[session]\nconnect_timeout = 1.0\n")
    try:
        r = subprocess.run([LISPSHELL, "--connect", f"guile://127.0.0.1:{listener.getsockname()[1]}",
                            "-e", "(+ 1 2)"], capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL,
                           env=dict(os.environ, LISPSHELL_CONFIG_DIR=str(config)))
        assert r.returncode == 2, r
        assert "did not answer as a Guile REPL server (no answer within 1 s" in r.stderr
    finally:
        listener.close()


STATS = """(defvar *threshold* 10)
(defun helper (x) (* x *threshold*))
(defun mean (xs)
  (/ (reduce #'+ (mapcar #'helper xs)) (length xs)))
"""


def test_the_persons_navigation_commands(tmp_path, shell):
    source = tmp_path / "stats.lisp"
    source.write_text(STATS)
    opened = tmp_path / "opened"
    editor = tmp_path / "editor"
    editor.write_text(f'#!/bin/sh\necho "$@" > "{opened}"\n')
    editor.chmod(0o755)
    sh = shell("--lisp", "sbcl", "--no-project", "--no-llm",
               env={"VISUAL": str(editor), "EDITOR": str(editor)})
    sh.expect(PROMPT)
    sh.submit(f",load {source}")
    sh.expect(f"Loaded {source}")
    sh.submit(",who-calls helper")
    sh.expect(f"{source}:3:1: COMMON-LISP-USER::MEAN")
    sh.submit(",who-refs *threshold*")
    sh.expect(f"{source}:2:1: COMMON-LISP-USER::HELPER")
    sh.submit(",describe mean")
    sh.expect("Lambda-list: (XS)")
    sh.submit(",apropos hash-table-cou")
    sh.expect("HASH-TABLE-COUNT")
    sh.submit(",macroexpand (when (zz-never-runs) 1)")
    sh.expect("One step:")
    sh.expect("(if (zz-never-runs)")
    sh.submit(",edit mean")
    sh.expect(PROMPT)
    sh.submit("(+ 1 1)")                 # the editor has returned by the next answer
    sh.expect("\n2\n")
    assert opened.read_text().split() == ["+3", str(source)]
    sh.submit(",describe")
    sh.expect("Usage: ,describe NAME")
    sh.submit(",edit no-such-zz")
    sh.expect("No symbol named no-such-zz")


def test_edit_without_an_editor_prints_where(tmp_path, shell):
    source = tmp_path / "stats.lisp"
    source.write_text(STATS)
    sh = shell("--lisp", "sbcl", "--no-project", "--no-llm", env={"VISUAL": "", "EDITOR": ""})
    sh.expect(PROMPT)
    sh.submit(f",load {source}")
    sh.expect(f"Loaded {source}")
    sh.submit(",edit helper")
    sh.expect(f"{source}:2:1")


def test_command_arguments_complete():
    from prompt_toolkit.document import Document

    from lispshell.repl.completion import LiveCompleter

    class Session:
        busy, ready = False, True

        def completions(self, prefix, kind="symbol"):
            return [n for n in ("mean", "mean-of", "helper") if n.startswith(prefix)]

    completer = LiveCompleter(lambda: Session(), commands=lambda: ["edit", "load"])
    names = [c.text for c in completer.get_completions(Document(",edit mea"), None)]
    assert names == ["mean", "mean-of"]
    assert [c.text for c in completer.get_completions(Document(",ed"), None)] == ["edit"]


def test_reconnect_after_disconnect_and_no_local_lisp_in_its_place(tmp_path, shell):
    from lisp_servers import Server

    srv = Server("swank", tmp_path).start()
    try:
        sh = shell("--connect", srv.url, "--no-llm")
        sh.expect("Connected to " + srv.url, timeout=120)
        sh.submit("(defvar *there* 42)")
        sh.submit(",disconnect")
        sh.expect("Disconnected from " + srv.url)
        sh.submit(",restart")                     # never a local image in its place
        sh.expect(f"Not connected to {srv.url}: ,reconnect connects again")
        sh.submit(",reconnect")
        sh.expect("Connected to " + srv.url)
        sh.submit("*there*")
        sh.expect("\n42\n")
    finally:
        srv.kill()


def test_a_threads_output_shows_when_it_is_printed_not_with_the_next_eval(tmp_path, shell):
    go = tmp_path / "go"
    sh = shell("--lisp", "sbcl", "--no-project", "--no-llm")
    sh.expect(PROMPT)
    # The thread prints only once the test, having seen the prompt come back, creates a file:
    # then nothing but the prompt waits, and the text must show there, not with a next eval.
    sh.submit(f'(sb-thread:make-thread (lambda () (loop until (probe-file "{go}") '
              'do (sleep 0.05)) (format t "from the thread~%") (finish-output)))')
    sh.expect("#<SB-THREAD:THREAD")
    sh.expect(PROMPT)
    go.write_text("")
    sh.expect("from the thread")          # with no further input: shown above the prompt


def test_the_persons_guile_server_console_stays_clean(tmp_path):
    """Guile 3.0.8's REPL server prints "In thread: Wrong type to apply" for every client
    whose REPL quits, and a backtrace for one whose connection is reset: lispshell's loop and
    its interrupting client end their threads, after the server closed their connections.
    Nothing of lispshell's reaches the person's console."""
    import threading
    import time

    from lisp_servers import free_port
    from lispshell.lisp.connection import ConnectError, connect_session

    port = free_port()
    # Started by hand: the suite's probe for a listening port (connect, close) is itself a
    # client whose reset Guile reports on the console.
    server = subprocess.Popen(["guile", f"--listen={port}"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed = []
    ready = threading.Event()

    def drain():
        for line in server.stdout:
            printed.append(line)
            if "Enter `,help' for help." in line:
                ready.set()
    threading.Thread(target=drain, daemon=True).start()
    try:
        assert ready.wait(60), "".join(printed)
        # The banner can come before the port listens: a refused connection reaches no REPL
        # (no client, nothing on the console), so it is simply tried again.
        deadline = time.monotonic() + 60
        while True:
            try:
                session = connect_session(f"guile://127.0.0.1:{port}", {})
                break
            except ConnectError as exc:
                assert "refused" in str(exc) and time.monotonic() < deadline, exc
                ready.wait(0.1)
        assert session.eval("(+ 1 2)").values == ["3"]
        assert session.eval("(let loop () (loop))", timeout=1.0).timed_out   # interrupted
        assert session.eval("(+ 2 2)").values == ["4"]
        session.close()                                                   # ,disconnect
        # A last client's answer comes after whatever the server printed for the others.
        last = connect_session(f"guile://127.0.0.1:{port}", {})
        assert last.eval("(+ 3 3)").values == ["6"]
        last.close()
        console = "".join(printed)
        assert "In thread" not in console and "Wrong type to apply" not in console, console
        assert "Broken pipe" not in console and "Backtrace" not in console, console
    finally:
        server.kill()
        server.wait()


def test_restarting_clojure_says_what_is_happening(shell):
    sh = shell("--lisp", "clojure", "--no-project", "--no-llm")
    sh.expect("user>")
    sh.submit("(+ 1 2)")
    sh.expect("\n3\n")
    sh.submit(",restart")
    sh.expect("restarting clojure · ")        # no blank screen while the JVM comes back
    sh.expect("Restarted clojure", timeout=120)


@pytest.mark.parametrize("lisp,typed,wanted", [
    ("sbcl", "m-v-b", ["multiple-value-bind"]),               # word by word, as SLIME's
    ("sbcl", "cl:m-v-b", ["cl:multiple-value-bind"]),
    ("sbcl", "mul", ["multiple-value-bind"]),                 # plain prefixes still
    ("guile", "c-w-o-f", ["call-with-output-file"]),          # a name (guile) has via a use
    ("clojure", "m-i", ["map-indexed"]),
    ("clojure", "Math/fl", ["Math/floor", "Math/floorDiv", "Math/floorMod"]),
    ("clojure", "Integer/MAX", ["Integer/MAX_VALUE"]),        # static fields too
    ("clojure", ".toUpper", [".toUpperCase"]),                # instance methods of imports
    ("clojure", ":else", [":else"]),                          # keywords interned so far
])
def test_completion_of_words_members_and_keywords(lisp, typed, wanted):
    """Issue 23 item 11: (m-v-b Tab, (Math/fl Tab, (.toUpper Tab, :ke Tab."""
    from lispshell.lisp.session import LispSession

    with LispSession(lisp) as s:
        s.eval("1")
        found = s.completions(typed)
    assert set(wanted) <= set(found), found
    if typed == "mul":        # plain prefix matches come before word-by-word ones
        assert all(n.startswith("mul") for n in found)


def test_a_cached_answer_serves_longer_prefixes_word_by_word():
    from prompt_toolkit.document import Document

    from lispshell.repl.completion import LiveCompleter, compound_match

    asked = []

    class Session:
        busy, ready = False, True

        def completions(self, prefix, kind="symbol"):
            asked.append(prefix)
            return ["multiple-value-bind", "multiple-value-list", "make-vector"]

    session = Session()
    completer = LiveCompleter(lambda: session)
    assert [c.text for c in completer.get_completions(Document("(m-v"), None)] == [
        "multiple-value-bind", "multiple-value-list", "make-vector"]
    assert [c.text for c in completer.get_completions(Document("(m-v-b"), None)] == [
        "multiple-value-bind"]
    assert asked == ["m-v"]           # the longer prefix was filtered from the cached answer
    assert compound_match("w-o-f", "with-open-file")
    assert not compound_match("w-o-f", "with-output-to-file")
    assert not compound_match("m-v-b-x", "multiple-value-bind")


def test_an_answer_asked_before_an_eval_and_back_after_it_is_not_kept():
    """On a busy machine a completion asked before an eval can come back after the eval
    cleared the cache: kept, it hid the names the eval defined from every longer prefix
    (Tab after `(defun frobnicate ...)` completed nothing)."""
    from lispshell.repl.completion import LiveCompleter

    names = ["frob-old"]

    class Session:
        busy, ready = False, True

        def completions(self, prefix, kind="symbol"):
            answer = [n for n in names if n.startswith(prefix)]
            names.append("frobnicate")       # the eval lands while this answer travels
            completer.invalidate()
            return answer

    completer = LiveCompleter(lambda: session)
    session = Session()
    assert completer.candidates("frob") == ["frob-old"]
    Session.completions = lambda self, prefix, kind="symbol": [
        n for n in names if n.startswith(prefix)]
    assert completer.candidates("frobn") == ["frobnicate"]


def test_tab_completes_word_by_word_at_the_prompt(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit("(+ 1 2)")          # the Lisp is up: a completion asked before it is answers none
    sh.expect("\n3\n")
    sh.expect(PROMPT)
    sh.send("(m-v-b\t")
    sh.expect("multiple-value-bind")
    sh.submit(" (a b) (values 1 2) (+ a b))")
    sh.expect("\n3\n")


def test_keywords_complete_on_sbcl():
    """(make-hash-table :te Tab gives :test, as SLIME completes keywords (issue 23 item 11)."""
    from lispshell.lisp.session import LispSession

    with LispSession("sbcl") as s:
        assert ":test" in s.completions(":te")
        assert "cl:mapcar" in s.completions("cl:mapc")      # package prefixes as before


def test_load_system_completes_system_names(tmp_path, shell):
    """,load-system de Tab: the systems ASDF knows, from the registries' .asd files (issue 23
    item 11); nothing is loaded by completing."""
    from lispshell.lisp.session import LispSession

    systems = tmp_path / "systems"
    systems.mkdir()
    (systems / "lispshell-demo-one.asd").write_text(
        '(asdf:defsystem "lispshell-demo-one" :perform (asdf:load-op :after (o c) '
        '(error "completing must not load")))\n')
    (systems / "lispshell-demo-two.asd").write_text('(asdf:defsystem "lispshell-demo-two")\n')
    registry = f'(progn (require :asdf) (push #p"{systems}/" (symbol-value (find-symbol "*CENTRAL-REGISTRY*" "ASDF"))) t)'
    with LispSession("sbcl") as s:
        assert s.eval(registry).values == ["T"]
        assert s.completions("lispshell-demo-", "system") == ["lispshell-demo-one",
                                                             "lispshell-demo-two"]
        assert s.completions("asdf", "system")[:1] == ["asdf"]       # defined ones too
        assert s.eval('(asdf:registered-system "lispshell-demo-one")').values[0] == "NIL"
    with LispSession("sbcl") as s:                    # ASDF not required yet: Tab does it
        assert "asdf" in s.completions("asd", "system")
    with LispSession("guile") as s:
        assert s.completions("", "system") == []      # no systems: nothing asked
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit(registry)
    sh.expect("\nT\n")
    sh.send(",load-system lispshell-demo-t\t")
    sh.expect("wo")                 # the completion's rest, drawn after what was typed
    sh.send("\r")
    sh.expect("Loaded lispshell-demo-two")


INSPECT_FUNCTION = {
    # lisp: (file suffix, the file's code, what to inspect, rows expected)
    "sbcl": (".lisp", '(defun lispshell-adds (a &optional (b 2))\n  "Adds."\n  (+ a b))\n',
             "(function lispshell-adds)",
             ["name\tLISPSHELL-ADDS", "lambda-list\t(A &OPTIONAL (B 2))",
              'documentation\t"Adds."', 'source\t"{path}:1"']),
    "guile": (".scm", '(define (lispshell-adds a b)\n  "Adds."\n  (+ a b))\n', "lispshell-adds",
              ["name\tlispshell-adds", "arguments\t(a b)", 'documentation\t"Adds."']),
    "clojure": (".clj", '(defn lispshell-adds\n  "Adds."\n  [a b]\n  (+ a b))\n'
                '(def lispshell-closure (let [k 5] (fn [x] (+ k x))))\n', "lispshell-adds",
                ["name\tuser/lispshell-adds", "arglists\t([a b])", 'doc\t"Adds."',
                 'source\t"{path}:1"']),
}


@pytest.mark.parametrize("lisp", sorted(INSPECT_FUNCTION))
def test_inspect_shows_a_functions_parts_and_goes_back(tmp_path, lisp):
    """Issue 23 item 12: a function inspects as its name, lambda list, documentation and
    source, not as an atom; an unbound slot reads <unbound>; ,inspect - goes back."""
    from lispshell.lisp.introspect import call_form
    from lispshell.lisp.session import LispSession
    from lispshell.tools.gate import EvalGate
    from lispshell.tools.registry import ToolContext, call_tool
    import lispshell.tools.project_tools  # noqa: F401

    suffix, code, target, rows = INSPECT_FUNCTION[lisp]
    path = tmp_path / f"adds{suffix}"
    path.write_text(code)

    with LispSession(lisp) as s:
        ctx = ToolContext(session=lambda: s, gate=EvalGate("yolo"), root=tmp_path,
                          eval_timeout=120)
        assert call_tool("load_file", {"file_path": str(path)}, ctx)["ok"]

        def inspect(function, arg):
            look = call_form(lisp, function, arg, "")
            return look.answer(s.eval(look.form, history=False).output)

        status, body = inspect("inspect-form", target)
        assert status == "ok", body
        for row in rows:
            assert row.format(path=path) in body.split("\n"), body
        assert inspect("inspect-back", "-")[0] == "error"      # nothing before the first
        status, body = inspect("inspect-form", {"sbcl": "(list 1 (list 2 3))",
                                                "guile": "(list 1 (list 2 3))",
                                                "clojure": "[1 [2 3]]"}[lisp])
        assert status == "ok" and "\n1\t(2 3)\n" in body or "\n1\t[2 3]\n" in body, body
        assert inspect("inspect-part", "1")[1].split("\n")[1:3] == ["0\t2", "1\t3"]
        assert inspect("inspect-back", "-") == (status, body)  # back to the list, as shown
        if lisp == "sbcl":
            assert s.eval("(defclass lispshell-c () ((s :initarg :s)))").ok
            status, body = inspect("inspect-form", "(make-instance 'lispshell-c)")
            assert body.split("\n")[1] == "s\t<unbound>", body
            assert inspect("inspect-part", "0") == ("error", "Part 0 has no value to open")
        if lisp == "clojure":
            status, body = inspect("inspect-form", "lispshell-closure")
            assert "closed over k\t5" in body.split("\n"), body
            status, body = inspect("inspect-form", '(ex-info "outer" {} (ex-info "inner" {}))')
            assert "cause\tclojure.lang.ExceptionInfo: inner" in body.split("\n"), body


def test_inspect_back_at_the_prompt(shell):
    sh = shell("--lisp", "sbcl", "--no-llm")
    sh.expect(PROMPT)
    sh.submit(",inspect -")
    sh.expect("Nothing to go back to: ,inspect FORM first")
    sh.submit(",inspect (list 1 (list 2 3))")
    sh.expect(",inspect N opens part N · ,inspect - goes back")
    sh.submit(",inspect 1")
    sh.expect("CONS  (2 3)")
    sh.submit(",inspect -")
    sh.expect("CONS  (1 (2 3))")
    sh.submit(",inspect (function car)")
    sh.expect("lambda-list")
