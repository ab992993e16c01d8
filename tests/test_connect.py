"""`--connect`: the person's running image over nREPL, Swank and Guile's REPL server.

Real servers, started here as a person starts them (tests/lisp_servers.py). Each transport is
held to what a child Lisp gives: values, output streamed as it is printed, errors with type,
message and frames, Ctrl-C's interrupt with the image alive, a 10 MiB print in bounded memory,
injection-proof look-ups, the eval gate, a killed server reported (and never restarted), the
REPL under a pty and `lispshell mcp --connect`.
"""
from __future__ import annotations

import os

import threading
import tracemalloc

import pytest

from lisp_servers import Server
from lispshell.lisp.connection import ConnectError, connect_session, parse_target
from lispshell.workspace.project import connect_target
from lispshell.tools.gate import Decision, EvalGate
from lispshell.tools.registry import ToolContext, call_tool

KINDS = ["nrepl", "swank", "guile", "guile-socket"]

# What each dialect says for the same things.
CODE = {
    "clojure": {
        "print_and_value": '(do (println "hello") (+ 40 2))',
        "error": "(/ 1 0)", "error_type": "ArithmeticException", "error_message": "Divide by zero",
        "define": "(def lispshell-test-x 41)", "use": "(inc lispshell-test-x)",
        "wait_for": lambda p: ('(do (println "waiting") (flush) (while (not (.exists '
                               f'(java.io.File. "{p}"))) (Thread/sleep 10)) :seen)'),
        "spin": '(do (println "spinning") (flush) (loop [] (recur)))',
        "big": '(let [line (apply str (repeat 1023 "x"))] (dotimes [_ 10240] (println line)))',
        "mark": lambda p: f'(spit "{p}" "ran" :append true)',
        "reader_eval": '#=(spit "{p}" "ran")',
        "describe": "map", "completion": ("mapc", "mapcat"),
        # nREPL's own completions op answers: a static member, as cider does
        "completion_more": ("Math/fl", "Math/floor"),
        "read_input": ("(read-line)", "nil"),
        "in_package": '(ns lispshell.test-ns)', "prompt": 'lispshell.test-ns>',
    },
    "sbcl": {
        "print_and_value": '(progn (write-line "hello") (+ 40 2))',
        "error": "(/ 1 0)", "error_type": "DIVISION-BY-ZERO", "error_message": "arithmetic error",
        "define": "(defparameter *lispshell-test-x* 41)", "use": "(1+ *lispshell-test-x*)",
        "wait_for": lambda p: ('(progn (write-line "waiting") '
                               f'(loop until (probe-file "{p}") do (sleep 0.01)) :seen)'),
        "spin": '(progn (write-line "spinning") (loop))',
        "big": ('(let ((line (make-string 1023 :initial-element #\\x))) '
                '(dotimes (i 10240) (write-line line)))'),
        "mark": lambda p: (f'(with-open-file (s "{p}" :direction :output :if-exists :append '
                           ':if-does-not-exist :create) (write-line "ran" s))'),
        "reader_eval": ('#.(with-open-file (s "{p}" :direction :output :if-does-not-exist '
                        ':create) (write-line "ran" s))'),
        "describe": "mapcar", "completion": ("mapc", "mapcan"),
        "completion_more": ("m-v-b", "multiple-value-bind"),     # word by word
        "read_input": ("(read-line *standard-input* nil :eof)", ":EOF"),
        "in_package": '(defpackage :lispshell-test (:use :cl)) (in-package :lispshell-test)', "prompt": 'LISPSHELL-TEST>',
    },
    "guile": {
        "print_and_value": '(begin (display "hello") (newline) (+ 40 2))',
        "error": "(car 1)", "error_type": "wrong-type-arg", "error_message": "Wrong type",
        "define": "(define lispshell-test-x 41)", "use": "(1+ lispshell-test-x)",
        "wait_for": lambda p: ('(begin (display "waiting") (newline) (let loop () (unless '
                               f'(file-exists? "{p}") (usleep 10000) (loop))) (quote seen))'),
        "spin": '(begin (display "spinning") (newline) (let loop () (loop)))',
        "big": ('(let ((line (make-string 1023 #\\x))) (do ((i 0 (+ i 1))) ((= i 10240)) '
                '(display line) (newline)))'),
        "mark": lambda p: f'(call-with-output-file "{p}" (lambda (port) (display "ran" port)))',
        "reader_eval": '#.(call-with-output-file "{p}" (lambda (port) (display "ran" port)))',
        "describe": "map", "completion": ("string-ap", "string-append"),
        "completion_more": ("c-w-o-f", "call-with-output-file"),
        "read_input": ("(read-char)", "#<eof>"),
        "in_package": '(define-module (lispshell test))', "prompt": '(lispshell test)>',
    },
}


def lisp_of(kind: str) -> str:
    return parse_target(f"{kind.split('-')[0]}://h:1" if "socket" not in kind
                        else "guile:///x").lisp


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """`get(kind)`: that kind's server, started on first use and shared by the module."""
    started = {}

    def get(kind):
        if kind not in started:
            started[kind] = Server(kind, tmp_path_factory.mktemp(kind)).start()
        return started[kind]

    yield get
    for srv in started.values():
        srv.kill()


@pytest.fixture(params=KINDS)
def server(request, servers):
    return servers(request.param)


@pytest.fixture
def conn(server):
    session = connect_session(server.url, {})
    yield session
    session.close()
    assert server.alive(), "closing a connection must leave the image running"


def code(session, name):
    return CODE[session.lisp][name]


def test_values_output_and_errors(conn):
    chunks = []
    r = conn.eval(code(conn, "print_and_value"), on_output=chunks.append)
    assert r.ok and r.values == ["42"], r
    assert "".join(chunks) == "hello\n" == r.output
    r = conn.eval(code(conn, "error"))
    assert not r.ok and r.values == []
    assert code(conn, "error_type") in r.error.type, r.error
    assert code(conn, "error_message") in r.error.message, r.error
    assert r.error.backtrace, "a short backtrace comes with the error"
    assert conn.eval(code(conn, "define")).ok
    r = conn.eval(code(conn, "use"))
    assert r.values == ["42"], r
    assert conn.package


def test_reading_input_sees_end_of_file(conn):
    form, value = code(conn, "read_input")
    r = conn.eval(form, timeout=60)
    assert r.ok and r.values[0] == value, r   # (CL: and T, the second value)


def test_output_streams_before_the_eval_ends(conn, tmp_path):
    flag = tmp_path / "flag"

    def on_output(text):
        if "waiting" in text:
            flag.write_text("go")     # only once the first line has arrived can the eval end

    r = conn.eval(code(conn, "wait_for")(flag), on_output=on_output, timeout=120)
    assert r.ok and r.output.startswith("waiting"), r


def test_interrupt_leaves_the_image_alive(conn):
    assert conn.eval(code(conn, "define")).ok
    seen = threading.Event()

    def on_output(text):
        if "spinning" in text:
            seen.set()

    result = {}
    worker = threading.Thread(target=lambda: result.update(
        r=conn.eval(code(conn, "spin"), on_output=on_output)))
    worker.start()
    assert seen.wait(120), "the spinning eval never started"
    assert conn.try_eval(code(conn, "use")) is None, "the editor's look-ups never wait"
    conn.interrupt()
    worker.join(120)
    assert not worker.is_alive()
    assert result["r"].interrupted, result["r"]
    r = conn.eval(code(conn, "use"))
    assert r.values == ["42"], "the image lives on with its definitions"
    assert conn.try_eval(code(conn, "use")).values == ["42"]


def test_ten_mib_print_streams_in_bounded_memory(conn):
    got = [0]

    def on_output(text):
        got[0] += len(text)

    tracemalloc.start()
    try:
        r = conn.eval(code(conn, "big"), on_output=on_output, output_cap=4096, timeout=300)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.ok, r
    assert got[0] == 10240 * 1024, "every character reaches the person"
    assert len(r.output) == 4096 and r.output_dropped == 10240 * 1024 - 4096
    assert peak < 4 * 1024 * 1024, f"{peak} bytes held for a 10 MiB print"


def _ctx(session, gate=None):
    return ToolContext(session=lambda: session, gate=gate or EvalGate("yolo"), eval_timeout=60)


def test_lookups_never_evaluate(conn, tmp_path):
    mark = tmp_path / "pwned"
    attempts = [f"x) {code(conn, 'mark')(mark)} (", code(conn, "reader_eval").replace("{p}", str(mark)),
                f'" {code(conn, "mark")(mark)} "']
    for text in attempts:
        for tool, key in (("describe", "symbol"), ("symbol_value", "symbol")):
            answer = call_tool(tool, {key: text}, _ctx(conn))
            assert answer["ok"] is False, (tool, text, answer)
    expanded = call_tool("macroexpand", {"form": "(when x y)"}, _ctx(conn))
    assert expanded["ok"] and expanded["expansion"].startswith("(if x"), expanded
    injected = "(when " + code(conn, "reader_eval").replace("{p}", str(mark)) + " 1)"
    assert call_tool("macroexpand", {"form": injected}, _ctx(conn))["ok"] is False
    assert not mark.exists(), "a look-up ran the model's text"
    described = call_tool("describe", {"symbol": code(conn, "describe")}, _ctx(conn))
    assert described["ok"] and code(conn, "describe") in described["description"].lower()
    found = call_tool("apropos", {"pattern": code(conn, "completion")[0]}, _ctx(conn))
    assert found["ok"] and any(code(conn, "completion")[1] in s.lower() for s in found["symbols"])
    assert code(conn, "completion")[1] in conn.completions(code(conn, "completion")[0])
    assert code(conn, "completion_more")[1] in conn.completions(code(conn, "completion_more")[0])
    # ASDF's systems (`,load-system` Tab) where the Lisp has them, none elsewhere
    assert ("asdf" in conn.completions("asd", "system")) is (conn.lisp == "sbcl")


PROJECT_FILE = {
    "clojure": ("a.clj", "(ns lispshell-proj.a)\n(defn f [x] (inc x))\n(defn g [y] (f y))\n",
                "lispshell-proj.a"),
    "sbcl": ("a.lisp", "(defpackage :lispshell-proj (:use :cl) (:export #:f #:g))\n"
             "(in-package :lispshell-proj)\n"
             "(defun f (x) (1+ x))\n(defun g (y) (f y))\n", "LISPSHELL-PROJ"),
    "guile": ("a.scm", "(define-module (lispshell-proj a))\n(define-public (f x) (+ x 1))\n"
              "(define-public (g y) (f y))\n", "(lispshell-proj a)"),
}


def test_project_tools_over_the_connection(conn, tmp_path):
    name, text, package = PROJECT_FILE[conn.lisp]
    (tmp_path / name).write_text(text)
    ctx = ToolContext(session=lambda: conn, gate=EvalGate("yolo"), root=tmp_path, eval_timeout=120)
    loaded = call_tool("load_file", {"file_path": str(tmp_path / name)}, ctx)
    assert loaded["ok"], loaded
    found = call_tool("find_definition", {"symbol": "g", "package": package}, ctx)
    assert found["ok"] and found["definitions"][0]["line"] == text.count("\n"), found
    callers = call_tool("who_calls", {"symbol": "f", "package": package}, ctx)
    assert callers["ok"] and [c["line"] for c in callers["calls"]] == [text.count("\n")], callers
    listed = call_tool("list_package", {"package": package}, ctx)
    assert listed["ok"] and {"f", "g"} <= {r["name"].lower() for r in listed["names"]}, listed
    before = conn.package
    ran = call_tool("eval", {"code": "(g 41)", "package": package}, ctx)
    assert ran["ok"] and ran["values"] == ["42"], ran
    assert conn.package == before, "eval in a package leaves the person's current one"


def test_eval_goes_through_the_gate(conn, tmp_path):
    mark = tmp_path / "ran"
    asked = []

    def decline(text, index, total):
        asked.append(text)
        return Decision(False, text, "not now")

    answer = call_tool("eval", {"code": code(conn, "mark")(mark)},
                       _ctx(conn, EvalGate("ask", decline)))
    assert answer["ok"] is False and answer["error"]["code"] == "DECLINED"
    assert asked and not mark.exists()
    answer = call_tool("eval", {"code": code(conn, "mark")(mark)}, _ctx(conn))
    assert answer["ok"] is True and mark.exists()


def test_swank_debugger_is_answered_with_abort(servers):
    session = connect_session(servers("swank").url, {})
    try:
        r = session.eval('(progn (write-line "before") (break "stop here ~a" 42))')
        assert r.output == "before\n" and r.error is not None, r
        assert "stop here 42" in r.error.message and "abort restart" in r.error.message
        assert r.error.type == "SIMPLE-CONDITION"
        assert session.eval("(+ 1 2)").values == ["3"], "no debugger is left waiting"
        assert session.eval("(values 1 2 (list 3))").values == ["1", "2", "(3)"]
    finally:
        session.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_killed_server_is_reported_and_never_restarted(kind, tmp_path):
    srv = Server(kind, tmp_path).start()
    try:
        session = connect_session(srv.url, {})
        assert session.eval(CODE[session.lisp]["define"]).ok
        srv.kill()
        r = session.eval(CODE[session.lisp]["use"])
        assert r.error is not None and r.error.type == "connection-lost", r
        assert ",reconnect" in r.error.message and not r.restarted
        # Also read by the model over MCP, which cannot type ,reconnect: it is told what it gets.
        assert "lispshell mcp does so on its next call" in r.error.message
        assert not session.alive
        again = session.eval(CODE[session.lisp]["use"])
        assert again.error.type == "not-connected"
        with pytest.raises(ConnectError):
            session.reconnect()
        with pytest.raises(Exception, match="does not restart"):
            session.restart()
    finally:
        srv.kill()


def test_connection_errors_are_plain(tmp_path, monkeypatch):
    with pytest.raises(ConnectError, match="no .nrepl-port"):
        connect_target("", start=tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()        # the repository's root: its port file speaks for sub/
    (tmp_path / ".nrepl-port").write_text("7888")
    assert connect_target("", start=tmp_path / "sub").url == "nrepl://127.0.0.1:7888"
    assert parse_target("7889").url == "nrepl://127.0.0.1:7889"
    assert parse_target("guile:///run/g.sock").path == "/run/g.sock"
    for bad in ("http://x:1", "nrepl://x", "swank://x:99999", "nrepl:///sock"):
        with pytest.raises(ConnectError):
            parse_target(bad)
    with pytest.raises(ConnectError, match="refused"):
        connect_session("nrepl://127.0.0.1:1", {})


def test_disconnect_leaves_the_image_and_its_definitions(server):
    first = connect_session(server.url, {})
    assert first.eval(CODE[first.lisp]["define"]).ok
    first.close()
    second = connect_session(server.url, {})
    try:
        assert second.eval(CODE[second.lisp]["use"]).values == ["42"]
    finally:
        second.close()


def test_repl_and_batch_over_the_connection(server, tmp_path):
    import subprocess

    from conftest import LISPSHELL
    from pty_shell import Shell

    lisp = lisp_of(server.kind)
    sessions = (lambda: _nrepl_sessions(server.url)) if server.kind == "nrepl" else set
    before = sessions()
    r = subprocess.run([LISPSHELL, "--connect", server.url, "-e", CODE[lisp]["print_and_value"],
                        "-e", CODE[lisp]["error"]], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stdout == "hello\n42\n", r
    assert CODE[lisp]["error_message"] in r.stderr
    r = subprocess.run([LISPSHELL, "--connect", server.url],
                       input=CODE[lisp]["define"] + "\n" + CODE[lisp]["use"] + "\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "42", r
    assert sessions() == before, "a batch run closes the nREPL sessions it cloned"

    sh = Shell(tmp_path, "--connect", server.url, "--no-llm")
    try:
        sh.expect("Connected to " + server.url, timeout=120)
        sh.submit(CODE[lisp]["print_and_value"])
        sh.expect("hello")
        sh.expect("42")
        sh.submit(",restart")
        sh.expect("never restarted from here")
        sh.submit(CODE[lisp]["spin"])
        sh.expect("spinning")
        sh.send("\x03")
        sh.expect("nterrupt")
        sh.submit(CODE[lisp]["in_package"])
        sh.expect(CODE[lisp]["prompt"])           # the package or namespace, in the prompt
        sh.submit(CODE[lisp]["define"])
        sh.submit(",disconnect")
        sh.expect("keeps running")
        assert sessions() == before, ",disconnect closes the nREPL sessions it cloned"
        sh.submit(",connect " + server.url)
        sh.expect("Connected to " + server.url)
        sh.submit(",quit")
        assert sh.wait_exit() == 0
    finally:
        sh.close()
    assert server.alive()
    assert sessions() == before, ",quit closes them too"


def test_mcp_over_the_connection(server, tmp_path):
    from mcp_harness import answer, connect, run

    lisp = lisp_of(server.kind)
    before = _nrepl_sessions(server.url) if server.kind == "nrepl" else None

    async def scenario():
        async with connect(tmp_path, "--connect", server.url, "--allow-eval") as client:
            # The client's model learns it works on someone's running program.
            assert f"own running {lisp} image at {server.url}" in client.instructions
            got = answer(await client.call_tool("eval", {"code": CODE[lisp]["print_and_value"]}))
            assert got["ok"] and got["values"] == ["42"] and "hello" in got["output"], got
            described = answer(await client.call_tool("describe",
                                                      {"symbol": CODE[lisp]["describe"]}))
            assert described["ok"], described
            if before is not None:
                assert len(_nrepl_sessions(server.url) - before) == 2
    run(scenario)
    assert server.alive()
    if before is not None:
        assert _nrepl_sessions(server.url) == before, "the MCP server closed its nREPL sessions"


def test_mcp_refuses_a_lisp_that_does_not_match(server, tmp_path):
    import subprocess

    from conftest import LISPSHELL

    other = "sbcl" if lisp_of(server.kind) != "sbcl" else "guile"
    r = subprocess.run([LISPSHELL, "mcp", "--connect", server.url, "--lisp", other],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "does not match" in r.stderr
    assert server.alive()


def test_several_connections_one_current(servers, tmp_path):
    from pty_shell import Shell

    nrepl, guile = servers("nrepl"), servers("guile")
    sh = Shell(tmp_path, "--connect", nrepl.url, "--no-llm")
    try:
        sh.expect("Connected to " + nrepl.url, timeout=120)
        sh.submit("(def lispshell-where :clojure)")
        sh.submit(",connect " + guile.url)
        sh.expect("Connected to " + guile.url)
        sh.submit("(define lispshell-where 'the-guile-server)")
        sh.submit(",connect")
        sh.expect(f"Connections: {nrepl.url}, {guile.url} (current)")
        sh.submit(",connect " + nrepl.url)        # switches back: the same connection
        sh.expect("Connected to " + nrepl.url)
        sh.submit("lispshell-where")
        sh.expect(":clojure")
        sh.submit(",reconnect")
        sh.expect("Reconnected to " + nrepl.url)
        sh.submit(",lisp guile")                  # a Lisp of lispshell's own, beside them
        sh.expect("Switched to guile")
        sh.submit("(string-append \"own \" \"child\")")
        sh.expect('"own child"', timeout=120)
        sh.submit(",connect " + guile.url)        # and back: the connection is as it was
        sh.expect("Connected to " + guile.url)
        sh.submit("lispshell-where")
        sh.expect("the-guile-server")
        sh.submit(",quit")
        assert sh.wait_exit() == 0
    finally:
        sh.close()
    assert nrepl.alive() and guile.alive()


def test_mcp_reconnects_after_the_server_comes_back(tmp_path):
    from mcp_harness import answer, connect, run

    first = Server("guile", tmp_path).start()
    again = None

    async def scenario():
        nonlocal again
        async with connect(tmp_path, "--connect", first.url, "--allow-eval") as client:
            got = answer(await client.call_tool("eval", {"code": "(+ 40 2)"}))
            assert got["values"] == ["42"], got
            first.kill()
            lost = answer(await client.call_tool("eval", {"code": "(+ 40 2)"}))
            assert lost["ok"] is False and "lost" in str(lost), lost
            down = answer(await client.call_tool("describe", {"symbol": "map"}))
            assert down["ok"] is False and down["error"]["code"] == "NOT_CONNECTED", down
            again = Server("guile", tmp_path, port=first.port).start()
            back = answer(await client.call_tool("eval", {"code": "(+ 40 2)"}))
            assert back["ok"] and back["values"] == ["42"], back
    try:
        run(scenario)
    finally:
        first.kill()
        if again is not None:
            assert again.alive(), "the server lispshell reconnected to still runs"
            again.kill()


def test_the_shell_lives_when_the_server_dies(tmp_path):
    from pty_shell import Shell

    srv = Server("guile", tmp_path).start()
    sh = Shell(tmp_path, "--connect", srv.url, "--no-llm")
    try:
        sh.expect("Connected to " + srv.url, timeout=120)
        sh.submit("(+ 40 2)")
        sh.expect("42")
        srv.kill()
        sh.submit("(+ 40 2)")
        sh.expect("was lost")
        sh.expect(",reconnect")
        sh.submit(",reconnect")
        sh.expect("Not connected")
        sh.submit(",restart")
        sh.expect("never restarted from here")
        sh.submit(",quit")
        assert sh.wait_exit() == 0
    finally:
        sh.close()
        srv.kill()


def test_nrepl_values_that_never_end_are_bounded(servers):
    session = connect_session(servers("nrepl").url, {})
    try:
        r = session.eval("(range)", timeout=120, value_cap=64 * 1024 * 1024)   # the person's
        assert r.ok and r.values[0].endswith(" ...)") and len(r.values[0]) < 1_000_000, r
        r = session.eval("(binding [*print-length* 3] (pr-str (range)))")
        assert r.values == ['"(0 1 2 ...)"'], "the person's own settings win"
    finally:
        session.close()


def test_bencode_decoder_takes_messages_in_any_pieces():
    from lispshell.lisp.bencode import DecodeError, Decoder, encode

    messages = [{"id": "1", "out": "héllo\n"}, {"status": ["done"], "n": -3, "l": [1, [2, {}]]},
                {"value": "x" * 70_000}]
    data = b"".join(encode(m) for m in messages)
    for step in (1, 7, 4096, len(data)):
        decoder, got = Decoder(), []
        for i in range(0, len(data), step):
            got += decoder.feed(data[i:i + step])
        assert got == messages, step
    with pytest.raises(DecodeError):
        Decoder().feed(b"x")
    with pytest.raises(DecodeError):
        Decoder().feed(b"l" * 100)


def test_swank_messages_read():
    from lispshell.lisp.swank import Symbol, read_sexp

    m = read_sexp('(:return (:ok ("CL-USER" :values "\\"a\\\\b\\"" "(1 . 2)")) 7)')
    assert m[0] == Symbol(":return") and m[-1] == 7
    assert m[1][1] == ["CL-USER", Symbol(":values"), '"a\\b"', "(1 . 2)"]
    assert read_sexp("(:write-string \"x\ny\" :repl-result)")[1] == "x\ny"
    with pytest.raises(ValueError):
        read_sexp('(:return "unclosed')


def test_a_port_file_beyond_the_repository_or_not_the_persons_is_never_used(tmp_path):
    """A .nrepl-port planted in a shared parent would send the person's code (and the secrets
    they type) to someone else's listener."""
    repo = tmp_path / "shared" / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / ".git").mkdir()
    (tmp_path / "shared" / ".nrepl-port").write_text("7888")
    with pytest.raises(ConnectError, match="no .nrepl-port file in .* up to the repository"):
        connect_target("", start=repo / "src")
    (repo / ".nrepl-port").write_text("7889")
    os.chown(repo / ".nrepl-port", 65534, 65534)         # someone else's file
    with pytest.raises(ConnectError, match="is not a file of yours"):
        connect_target("", start=repo / "src")
    (repo / ".nrepl-port").unlink()
    (repo / ".nrepl-port").symlink_to(tmp_path / "shared" / ".nrepl-port")
    with pytest.raises(ConnectError, match="no .nrepl-port"):   # a link is not followed
        connect_target("", start=repo / "src")


def test_port_files_and_flags(tmp_path):
    import subprocess

    from conftest import LISPSHELL
    from lispshell.mcp.main import parse_args

    (tmp_path / ".nrepl-port").write_text("45678\n")
    options, _ = parse_args(["--connect", "--root", str(tmp_path)], {})
    assert options.connect == "nrepl://127.0.0.1:45678" and options.lisp == "clojure"
    r = subprocess.run([LISPSHELL, "--connect", "swank://127.0.0.1:4005", "--lisp", "guile",
                        "-e", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "does not match" in r.stderr
    r = subprocess.run([LISPSHELL, "--connect", "-e", "1"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "cannot connect to nrepl://127.0.0.1:45678" in r.stderr
    # --project starts a Lisp; a connection is an image already running: refused, not ignored
    for cmd in ([LISPSHELL, "--connect", "guile://127.0.0.1:37146", "--project", str(tmp_path),
                 "-e", "1"],
                [LISPSHELL, "mcp", "--connect", "guile://127.0.0.1:37146", "--project",
                 str(tmp_path)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "give one or the other" in r.stderr, r.stderr


def _nrepl_sessions(url: str) -> set[str]:
    """The sessions the nREPL server holds, asked by a bare client of its own (`ls-sessions`)."""
    import socket

    from lispshell.lisp.bencode import Decoder, encode

    host, port = url.removeprefix("nrepl://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(encode({"op": "ls-sessions", "id": "ls"}))
        decoder = Decoder()
        while True:
            for m in decoder.feed(sock.recv(65536)):
                if m.get("id") == "ls" and "sessions" in m:
                    return set(m["sessions"])


def test_nrepl_sessions_are_closed_when_lispshell_leaves(servers):
    """nREPL keeps a session (a thread) until it is closed: lispshell closes the two it cloned
    on ,disconnect, on ,reconnect, after a lost connection (as soon as it reaches the server
    again, or as it leaves) and even while an eval runs, and never anyone else's."""
    import socket

    url = servers("nrepl").url
    others = _nrepl_sessions(url)
    session = connect_session(url, {})
    mine = {session._sid, session._quiet}
    assert _nrepl_sessions(url) == others | mine
    session.close()                                          # ,disconnect
    assert _nrepl_sessions(url) == others

    session = connect_session(url, {})
    first = {session._sid, session._quiet}
    session.reconnect()                                      # ,reconnect while connected
    second = {session._sid, session._quiet}
    assert not first & second and _nrepl_sessions(url) == others | second

    session._sock.shutdown(socket.SHUT_RDWR)                 # the network went away
    assert session.eval("(+ 1 2)").error.type == "connection-lost"
    assert second <= _nrepl_sessions(url), "the server still holds the lost sessions"
    session.reconnect()
    third = {session._sid, session._quiet}
    assert _nrepl_sessions(url) == others | third, "the lost ones are closed on reconnecting"

    session._sock.shutdown(socket.SHUT_RDWR)
    assert session.eval("(+ 1 2)").error.type == "connection-lost"
    session.close()                                          # ,disconnect while not connected
    assert _nrepl_sessions(url) == others, "closed through a short-lived connection"

    session = connect_session(url, {})
    seen = threading.Event()
    result = {}
    worker = threading.Thread(target=lambda: result.update(r=session.eval(
        code(session, "spin"), on_output=lambda t: seen.set())))
    worker.start()
    assert seen.wait(120)
    session.close()                                          # leaving while an eval runs
    worker.join(60)
    assert not worker.is_alive() and result["r"].error.type == "connection-lost"
    assert _nrepl_sessions(url) == others
    again = connect_session(url, {})                         # the image goes on
    try:
        assert again.eval("(+ 40 2)").values == ["42"]
    finally:
        again.close()


# What the REPL's own features need per dialect, over a connection (see docs/connect.md's table).
FEATURES = {
    "clojure": {
        "invoke": "Clojure exceptions have no restarts",
        "typed": "(let [x 1] (map ", "arglist": "(map [«f»] [f coll]",
        "value": "{:a (* 6 7)}", "inspect_last": ",inspect", "inspected": ":a  42",
        "inspect_form": ",inspect [1 (* 6 7)]", "form_inspected": "1  42",
        "load": ("l.clj", "(ns lispshell-load.l)\n(defn twice [x] (* 2 x))\n", None,
                 "(lispshell-load.l/twice 21)"),
    },
    "sbcl": {
        "invoke": "Back at the top level.",       # the error waited in Swank's debugger: left
        "typed": "(let ((x 1)) (mapcar ", "arglist": "(mapcar «function» list &rest more-lists)",
        "value": "(list 1 (* 6 7))", "inspect_last": ",inspect", "inspected": "1  42",
        "inspect_form": ",inspect (vector 1 (* 6 7))", "form_inspected": "1  42",
        "load": ("l.lisp", "(defun lispshell-twice (x) (* 2 x))\n"
                           "(defun lispshell-odd (y) (+ y undefined-zz))\n",
                 "l.lisp:2:", "(lispshell-twice 21)"),
    },
    "guile": {
        "invoke": "Back at the top level",        # the error waited in a level: left
        "typed": "(let ((x 1)) (map ", "arglist": "(map «f» l",
        "value": "(vector 1 (* 6 7))", "inspect_last": ",inspect",
        "inspected": "keeps no last value here",
        "inspect_form": ",inspect (vector 1 (* 6 7))", "form_inspected": "1  42",
        "load": ("l.scm", "(define (lispshell-twice x) (* 2 x))\n"
                          "(define (lispshell-odd y) (+ y undefined-zz))\n",
                 "l.scm:2:", "(lispshell-twice 21)"),
    },
}


def test_repl_features_over_the_connection(server, tmp_path, monkeypatch):
    """What the REPL gives beyond evaluating, over each transport as on a child: the arglist
    while typing, the doc key, ,inspect (the last value, a form), ,last, ,load with its
    warnings, ,undo, and an unbound lone word offered to the model."""
    from fake_anthropic import FakeAnthropic, Reply
    from pty_shell import CTRL_C, Shell

    from lispshell.tools.registry import ToolContext as Ctx

    lisp = lisp_of(server.kind)
    f = FEATURES[lisp]
    name, text, warning, call = f["load"]
    (tmp_path / name).write_text(text)
    edited = tmp_path / ("e" + name[1:])
    edited.write_text("(foo 1)\n")
    monkeypatch.setenv("LISPSHELL_STATE_DIR", str(tmp_path / "state"))   # the shell's journal
    assert call_tool("replace_form", {"file_path": str(edited), "form_type": "foo",
                                      "form_name": "1", "new_source": "(foo 2)"},
                     Ctx(root=tmp_path))["ok"]
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(
        '[gate]\ngrace_ms = 0\n[llm]\ntimeout = 20.0\n[repl]\npager = "cat"\n')
    with FakeAnthropic() as api:
        api.script(Reply.text("You are welcome."))
        sh = Shell(tmp_path, "--connect", server.url, cpr=True,
                   env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": api.key,
                        "ANTHROPIC_CONFIG_DIR": str(tmp_path)})
        try:
            sh.expect("Connected to " + server.url, timeout=120)
            sh.send(f["typed"])                          # help while typing, from the image
            sh.expect(f["arglist"], timeout=60)
            sh.send("\x18\x04")                          # Ctrl-X Ctrl-D: its documentation
            sh.expect("documentation of ")
            sh.send(CTRL_C)
            sh.submit(f["value"])
            sh.expect("42")
            sh.submit(f["inspect_last"])                 # the last value, as the image keeps it
            sh.expect(f["inspected"])
            sh.submit(f["inspect_form"])
            sh.expect(f["form_inspected"])
            sh.submit(CODE[lisp]["error"])
            sh.expect(CODE[lisp]["error_message"])
            sh.submit(",last")                           # the last error, whole
            sh.expect(CODE[lisp]["error_message"])
            sh.submit(",invoke 0")                       # only Swank keeps restarts waiting
            sh.expect(f["invoke"])
            sh.submit(f",load {tmp_path / name}")
            if warning:
                sh.expect(warning)
                sh.expect("undefined-zz".upper() if lisp == "sbcl" else "undefined-zz")
            sh.expect(f"Loaded {tmp_path / name}")
            sh.submit(call)
            sh.expect("42")
            sh.submit(f",undo {edited}")
            sh.expect("Undid replace_form")
            sh.submit("thanks")                          # most likely prose
            sh.expect("Send it to the model?")
            sh.send("y")
            sh.expect("You are welcome.")
            sh.submit(",quit")
            assert sh.wait_exit(60) == 0
        finally:
            sh.close()
        assert api.invalid == []
        assert api.message_requests[0].body["messages"][-1]["content"][-1]["text"] == "thanks"
    assert edited.read_text() == "(foo 1)\n"
    assert server.alive()


def test_guile_server_interrupts_what_it_can_and_says_what_it_cannot(servers, tmp_path):
    """Guile's server: no signal can be sent, so the interrupt is an async run at the eval
    thread's next safe point. `sleep` is woken by it; a call blocked in the kernel (opening a
    FIFO nobody writes) is not: no timer gives up on it, but a second interrupt after
    interrupt_grace (the person's second Ctrl-C) gives up the connection, says so, and leaves
    the image (and that thread) running."""
    import os

    url = servers("guile").url
    session = connect_session(url, {"session": {"interrupt_grace": 1.0}})
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    try:
        assert session.eval("(define lispshell-kept 42)").ok
        for form, stops in (("(sleep 60)", True), (f'(open-input-file "{fifo}")', False)):
            seen, result = threading.Event(), {}
            worker = threading.Thread(target=lambda: result.update(r=session.eval(
                f'(begin (display "go") (newline) {form})', on_output=lambda t: seen.set())))
            worker.start()
            assert seen.wait(60)
            assert session.interrupt() == "interrupted"
            if not stops:
                while session.interrupt_pending < 1.0:       # not landed, and never will
                    worker.join(0.05)
                assert worker.is_alive(), "nothing gave up on a timer"
                assert session.interrupt() == "killed"       # the person's second Ctrl-C
            worker.join(60)
            r = result["r"]
            if stops:
                assert r.interrupted and r.error.message == "Interrupted", r
            else:
                assert r.error.type == "connection-lost" and "did not stop when interrupted" \
                    in r.error.message and ",reconnect" in r.error.message, r
                assert not session.alive
        fd = os.open(fifo, os.O_WRONLY)         # the blocked call returns, in the image
        os.close(fd)
        session.reconnect()
        assert session.eval("lispshell-kept").values == ["42"], "the image kept its definitions"
    finally:
        session.close()


def test_a_timeout_interrupts_and_the_image_lives_on(conn):
    """The model's eval has a time limit: past it the eval is interrupted as by Ctrl-C."""
    assert conn.eval(code(conn, "define")).ok
    r = conn.eval(code(conn, "spin"), timeout=2)
    assert r.timed_out and r.error is not None and "timed out" in r.error.message.lower(), r
    assert conn.eval(code(conn, "use")).values == ["42"]


def test_swank_another_threads_debugger_is_left_and_said(servers):
    """A debugger another thread enters (a break, an unhandled error) is left through its abort
    restart, while an eval runs or at the next one if none does, and the person is told."""
    session = connect_session(servers("swank").url, {})
    note = "another thread entered the debugger: "
    try:
        r = session.eval('(sb-thread:join-thread (sb-thread:make-thread (lambda () '
                         '(break "elsewhere ~a" 7))) :default :ended)', timeout=30)
        assert r.ok and r.values[0] == ":ENDED", r     # the thread was not left waiting
        assert r.output == f"; {note}elsewhere 7 [SIMPLE-CONDITION]; lispshell left it " \
                           "through its abort restart\n", r
        assert session.eval("(progn (defvar *lispshell-go* (sb-thread:make-semaphore)) "
                            "(defvar *lispshell-th* (sb-thread:make-thread (lambda () "
                            "(sb-thread:wait-on-semaphore *lispshell-go*) (error \"later ~a\" 9)))) "
                            "t)").ok
        first = session.eval("(sb-thread:signal-semaphore *lispshell-go*)")   # then idle
        second = session.eval("(sb-thread:join-thread *lispshell-th* :default :ended)")
        assert second.values[0] == ":ENDED", second
        assert f"{note}later 9 [SIMPLE-ERROR]" in first.output + second.output, (first, second)
        r = session.eval('(progn (sb-thread:join-thread (sb-thread:make-thread (lambda () '
                         '(error "other"))) :default nil) (error "mine"))')
        assert r.error.message == "mine" and f"{note}other" in r.output, r
    finally:
        session.close()


def test_nrepl_look_ups_see_the_persons_history(servers):
    """The quiet session is lent the person's *1 *2 *3 *e: the model's symbol_value *1 and
    ,inspect with no form see the person's values, and the look-ups shift none of them."""
    session = connect_session(servers("nrepl").url, {})
    try:
        for form in ("(+ 1 2)", "[:two]", '{:k "one"}'):
            assert session.eval(form).ok
        assert session.eval("(/ 1 0)").error is not None
        for name, value in (("*1", '{:k "one"}'), ("*2", "[:two]"), ("*3", "3")):
            got = call_tool("symbol_value", {"symbol": name}, _ctx(session))
            assert got["ok"] and got["value"] == value, (name, got)
        got = call_tool("symbol_value", {"symbol": "*e"}, _ctx(session))
        assert "Divide by zero" in got["value"], got
        assert session.eval("[*1 *2 *3]").values == ['[{:k "one"} [:two] 3]'], "none shifted"
    finally:
        session.close()


@pytest.mark.parametrize("kind, circular, deep", [
    ("swank", "(let ((c (list 1 2 3))) (setf (cdddr c) c) c)",
     "(let ((x nil)) (dotimes (i 100000) (setf x (list x))) x)"),
    ("guile", "(let ((c (list 1 2 3))) (set-car! c c) c)",
     "(let loop ((i 0) (x '())) (if (= i 100000) x (loop (+ i 1) (list x))))"),
], ids=["swank", "guile"])
def test_circular_and_deep_values_over_a_connection(servers, kind, circular, deep):
    """As on a child (tests/test_values.py): labels for the loop, a bounded print of the deep
    value (Swank printed it through a control stack it exhausted), the image answering after."""
    session = connect_session(servers(kind).url, {})
    try:
        r = session.eval(circular, timeout=60)
        assert r.ok and r.values == [{"swank": "#1=(1 2 3 . #1#)", "guile": "(#0# 2 3)"}[kind]], r
        r = session.eval(deep, timeout=60)
        assert r.ok and r.values[0].startswith("((((((((((") and len(r.values[0]) < 2_100_000, r
        assert session.eval("(+ 1 2)").values == ["3"]
    finally:
        session.close()


def test_swank_sends_the_slime_secret_first(tmp_path, monkeypatch):
    """A Swank server whose ~/.slime-secret is set answers only clients that send it first, as
    SLIME does; lispshell reads the same file."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".slime-secret").write_text("lispshell-test-secret\n")
    monkeypatch.setenv("HOME", str(home))
    srv = Server("swank", tmp_path).start()
    try:
        session = connect_session(srv.url, {})
        assert session.eval("(+ 40 2)").values == ["42"]
        session.close()
        monkeypatch.setenv("HOME", str(tmp_path))          # a client without the secret
        with pytest.raises(ConnectError, match=r"did not answer within 2 s\. A Swank server "
                           r"with a ~/\.slime-secret .* \(there is none here\)"):
            connect_session(srv.url, {"session": {"connect_timeout": 2}})
        assert srv.alive()
    finally:
        srv.kill()


def test_swank_look_ups_leave_no_thread_in_the_debugger(servers):
    """Names are read into one scratch package, emptied after each look-up: a fresh package
    deleted after every read put Swank's indentation thread into the debugger now and then
    (a popup in a connected Emacs). Loading lispshell's helpers prints nothing on the
    server's terminal either."""
    srv = servers("swank")
    session = connect_session(srv.url, {})
    try:
        ctx = _ctx(session)
        for _ in range(150):
            assert call_tool("describe", {"symbol": "mapcar"}, ctx)["ok"]
        assert session.eval("(+ 1 2)").output == "", "no debugger was entered meanwhile"
        assert session._notes == []
        assert "WARNING" not in "".join(srv.printed)
    finally:
        session.close()


def test_a_port_another_user_listens_on_is_refused_before_anything_is_sent(tmp_path):
    """The person's own .nrepl-port, stale: the port now belongs to another user's listener.
    Nothing of the person's reaches it: the listener answers each connection with how many it
    has had, and our own probe afterwards is its first."""
    import socket
    import subprocess

    from conftest import LISPSHELL

    listener = subprocess.Popen(
        ["/usr/bin/python3", "-c", (
            "import socket\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print(s.getsockname()[1], flush=True)\n"
            "n = 0\n"
            "while True:\n"
            "    c, _ = s.accept(); n += 1\n"
            "    c.sendall(str(n).encode()); c.close()\n")],
        stdout=subprocess.PIPE, text=True, user=65534, group=65534, cwd="/")
    try:
        port = int(listener.stdout.readline())
        (tmp_path / ".nrepl-port").write_text(f"{port}\n")
        r = subprocess.run([LISPSHELL, "--connect", "-e", "(+ 1 2)"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, r
        assert "another user's (nobody" in r.stderr and "stale .nrepl-port" in r.stderr
        with pytest.raises(ConnectError, match="another user's"):
            connect_session(f"nrepl://localhost:{port}", {})
        with socket.create_connection(("127.0.0.1", port), timeout=30) as probe:
            assert probe.recv(16) == b"1"
    finally:
        listener.kill()
        listener.wait()
