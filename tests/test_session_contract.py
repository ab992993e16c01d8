"""The session contract (lispshell/lisp/contract.py), run against all six transports: the SBCL,
Guile and Clojure children and real Swank, nREPL and Guile REPL servers. Each transport either
does what an operation promises or refuses it plainly, as its `capabilities` say."""
from __future__ import annotations

import os
import threading

import pytest

from lisp_servers import Server
from lispshell.lisp import guile_server, nrepl, swank
from lispshell.lisp.connection import connect_session
from lispshell.lisp.contract import (Capabilities, InterruptOutcome, NotOverThisTransport,
                                     Session, missing_operations)
from lispshell.lisp.session import LispSession

TRANSPORTS = ("sbcl", "guile", "clojure", "swank", "nrepl", "guile-server")

# Per Lisp: a value, an error, a form reading a line, a completion, one that spins until the
# file `go` exists, ignoring every interrupt meanwhile (the interrupt never lands).
FORMS = {
    "sbcl": {"value": "(+ 40 2)", "error": "(car 1)", "read": "(read-line)",
             "complete": ("mapc", "mapcan"),
             "deaf": lambda go: ('(sb-sys:without-interrupts (progn (write-line "deaf") '
                                 f'(loop until (probe-file "{go}") do (sleep 0.05)) :woke))')},
    "guile": {"value": "(+ 40 2)", "error": "(car 1)",
              "read": "(begin (use-modules (ice-9 rdelim)) (read-line))",
              "complete": ("string-ap", "string-append")},
    "clojure": {"value": "(+ 40 2)", "error": "(/ 1 0)", "read": "(read-line)",
                "complete": ("mapc", "mapcat"),
                "deaf": lambda go: ('(do (println "deaf") (flush) (loop [] (when-not (try '
                                    f'(Thread/sleep 50) (.exists (java.io.File. "{go}")) '
                                    '(catch Throwable _ false)) (recur))) :woke)')},
}
SERVER_OF = {"swank": "swank", "nrepl": "nrepl", "guile-server": "guile"}
LISP_OF = {"swank": "sbcl", "nrepl": "clojure", "guile-server": "guile"}


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    made, servers = {}, []

    def get(kind: str):
        if kind not in made:
            if kind in SERVER_OF:
                srv = Server(SERVER_OF[kind], tmp_path_factory.mktemp(kind)).start()
                servers.append(srv)
                made[kind] = connect_session(srv.url, {})
            else:
                made[kind] = LispSession(kind)
                made[kind].start()
        return made[kind]

    yield get
    for s in made.values():
        s.close()
    for srv in servers:
        srv.kill()


@pytest.fixture(params=TRANSPORTS)
def session(request, opened):
    return opened(request.param)


def forms(session) -> dict:
    return FORMS[session.lisp]


# -- the declaration ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [LispSession, swank.Session, nrepl.Session, guile_server.Session])
def test_every_transport_fills_every_required_operation(cls):
    assert missing_operations(cls) == []


def test_a_transport_that_drops_an_operation_is_caught():
    class Partial(LispSession):
        _give_up = Session._give_up
        completions = Session.completions

    assert missing_operations(Partial) == ["completions", "_give_up"]


def test_a_default_refuses_plainly_naming_the_operation_and_the_transport():
    s = Session()
    s.transport = "a test transport"
    with pytest.raises(NotOverThisTransport, match="a backtrace is not available over a test"):
        s.backtrace()
    assert s.interrupt() is InterruptOutcome.NOTHING_RUNNING
    assert not InterruptOutcome.NOTHING_RUNNING and InterruptOutcome.SENT


# -- behaviour, on each transport -------------------------------------------------------------
def test_eval_gives_values_errors_and_the_package(session):
    r = session.eval(forms(session)["value"])
    assert r.ok and r.values == ["42"], r
    r = session.eval(forms(session)["error"])
    assert r.error is not None and r.values == [] and session.level == 0, r
    assert session.package and session.ready and not session.busy


def test_try_eval_and_completions(session):
    r = session.try_eval(forms(session)["value"], timeout=60, wait=30)
    assert r is not None and r.values == ["42"], r
    prefix, name = forms(session)["complete"]
    assert name in session.completions(prefix)


def test_input_reaches_on_input_or_is_refused_and_counted(session):
    asked = []
    r = session.eval(forms(session)["read"], timeout=60,
                     on_input=lambda: asked.append(1) or "typed here\n")
    assert asked and r.ok and "typed here" in r.values[0], r
    r = session.eval(forms(session)["read"], timeout=60)
    assert r.input_refused >= 1, r        # (CL signals END-OF-FILE, as it should)


def test_interrupt_outcomes(session):
    assert session.interrupt() is InterruptOutcome.NOTHING_RUNNING      # idle
    started, result = threading.Event(), {}
    spin = {"sbcl": '(progn (write-line "go") (loop (sleep 0.01)))',
            "guile": '(begin (display "go") (newline) (let loop () (usleep 10000) (loop)))',
            "clojure": '(do (println "go") (flush) (loop [] (Thread/sleep 10) (recur)))'}
    worker = threading.Thread(target=lambda: result.update(r=session.eval(
        spin[session.lisp], on_output=lambda t: started.set())))
    worker.start()
    assert started.wait(120)
    outcome = session.interrupt()
    assert outcome is InterruptOutcome.SENT and outcome == "interrupted"
    worker.join(120)
    r = result["r"]
    assert r.interrupted and session.level == 0, r
    assert session.eval(forms(session)["value"]).values == ["42"]


# The loop's SIGINT handler, wrapped for a test: after it has run, the wrapper adds a line to
# the file HANDLED, so the test waits for the handler instead of guessing how long it takes.
WRAP_HANDLER = """(do (def old-int (sun.misc.Signal/handle (sun.misc.Signal. "INT")
  (reify sun.misc.SignalHandler (handle [_ s] (.handle ^sun.misc.SignalHandler old-int s)
    (spit "{handled}" "handled\\n" :append true))))) :wrapped)"""
UNWRAP_HANDLER = '(do (sun.misc.Signal/handle (sun.misc.Signal. "INT") old-int) :unwrapped)'


@pytest.fixture
def jvm_signals(opened, tmp_path):
    """The Clojure child, its SIGINT handler reporting each run to a file; (session, the
    file's path, `wait(n)`: until the handler has run n times)."""
    session = opened("clojure")
    handled = tmp_path / "handled"
    assert session.eval(WRAP_HANDLER.format(handled=handled)).values == [":wrapped"]

    def wait(n: int) -> None:
        while not (handled.exists() and handled.read_text().count("handled") >= n):
            threading.Event().wait(0.01)

    yield session, handled, wait
    assert session.eval(UNWRAP_HANDLER).values == [":unwrapped"]


def _signal_for(session, request_id: str) -> None:
    """SIGINT to the child, naming `request_id` as lispshell does before each one."""
    path = session._interrupt_file()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(request_id)
    session._channel.interrupt()


def test_a_late_jvm_interrupt_never_stops_the_next_eval(jvm_signals):
    """The JVM runs a SIGINT's handler whenever a loaded machine gets to it: one sent for an
    eval that has ended since can land in the next (test_interrupt_outcomes[clojure] failed so
    under load). Each names its request, and the loop ignores one naming another."""
    session, handled, wait = jvm_signals
    ended = session._request_id
    result = {}
    waiting = threading.Event()
    # The eval runs until the handler has run; a stop would end it at once.
    code = ('(do (println "waiting") (flush) (loop [] (if (.exists (java.io.File. '
            f'"{handled}")) :survived (do (Thread/sleep 5) (recur)))))')
    worker = threading.Thread(target=lambda: result.update(r=session.eval(
        code, on_output=lambda t: waiting.set())))
    worker.start()
    assert waiting.wait(120)
    _signal_for(session, ended)
    worker.join(120)
    assert result["r"].values == [":survived"], result["r"]
    assert session.eval("(+ 1 2)").values == ["3"]


def test_a_jvm_interrupt_that_comes_before_its_request_is_read_still_stops_it(jvm_signals,
                                                                               monkeypatch):
    """An interrupt sent the instant after a request (the person's Ctrl-C at once, a
    look-up's deadline) can be handled before the loop has read the request: it waits for
    that request and stops it as it starts (it was lost: test_a_look_up_never_waits_for_a_
    busy_image[clojure] hung so under load)."""
    session, handled, wait = jvm_signals
    real_write = session._write

    def write_after_the_interrupt(text: str) -> None:
        if text.startswith("E"):
            request_id = text.split("\n", 1)[0].split(" ", 1)[1]
            _signal_for(session, request_id)
            wait(1)                         # handled while the loop waits for a request
            monkeypatch.setattr(session, "_write", real_write)
        real_write(text)

    monkeypatch.setattr(session, "_write", write_after_the_interrupt)
    r = session.eval("(loop [] (Thread/sleep 10) (recur))", timeout=60)
    assert r.error is not None and r.error.type == "interrupt", r
    assert not r.timed_out
    assert session.eval("(+ 1 2)").values == ["3"]     # and the next one is not stopped


def test_a_late_interrupt_through_guiles_server_never_stops_the_next_eval(opened, tmp_path):
    """Guile's server is interrupted from a second client, which may run its form after the
    eval it was sent for has ended: the interrupt names its request, and the loop ignores one
    naming another."""
    session = opened("guile-server")
    assert session.eval("(+ 1 2)").values == ["3"]
    ended, go = session._request_id, tmp_path / "go"
    code = ('(begin (display "waiting") (newline) (force-output) (let wait () (if '
            f'(file-exists? "{go}") (quote survived) (begin (usleep 10000) (wait)))))')
    waiting, result = threading.Event(), {}
    worker = threading.Thread(target=lambda: result.update(r=session.eval(
        code, on_output=lambda t: waiting.set())))
    worker.start()
    assert waiting.wait(60)
    session._interrupt_through_server(session._token, ended)     # returns once it has run
    go.touch()
    worker.join(60)
    assert result["r"].values == ["survived"], result["r"]


def test_the_file_naming_a_jvm_interrupt_goes_with_its_session():
    with LispSession("clojure") as session:
        session.start()
        path = session._interrupt_file()
        r = session.eval("(loop [] (Thread/sleep 10) (recur))", timeout=0.5)
        assert r.timed_out and os.path.exists(path), r
        assert session.eval("(+ 1 2)").values == ["3"]
    assert not os.path.exists(path)


def test_a_jvm_interrupt_is_named_where_the_state_directory_cannot_be_written(tmp_path,
                                                                              monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("LISPSHELL_STATE_DIR", str(tmp_path / "a-file" / "state"))
    with LispSession("clojure") as session:
        session.start()
        path = session._interrupt_file()
        assert not path.startswith(str(tmp_path))
        r = session.eval("(loop [] (Thread/sleep 10) (recur))", timeout=0.5)
        assert r.timed_out and os.path.exists(path), r
    assert not os.path.exists(os.path.dirname(path))


def test_capabilities_say_what_the_transport_does(session):
    caps = session.capabilities
    assert isinstance(caps, Capabilities)
    assert caps.restart_image == (not session.is_connection) == (not caps.reconnect)
    r = session.eval(forms(session)["error"], keep_levels=True)
    assert r.error is not None
    if caps.levels:
        assert session.level == 1 and session.restarts, r
        assert session.backtrace(), "a waiting error has frames"
        session.top()
        assert session.level == 0
    else:
        assert session.level == 0
        with pytest.raises(NotOverThisTransport):
            session.leave_level()
        with pytest.raises(NotOverThisTransport):
            session.invoke_restart(0)
    if caps.frames and not caps.levels:
        assert session.backtrace(), "the last error's frames"
    if not caps.frames:
        with pytest.raises(NotOverThisTransport):
            session.backtrace()
    if not caps.threads:
        with pytest.raises(NotOverThisTransport):
            session.enter_thread(0)
    if caps.systems:
        assert "asdf" in session.completions("asd", kind="system")
    else:
        assert session.completions("asd", kind="system") == []


# -- an interrupt that does not land: said alike on every transport ---------------------------
@pytest.mark.parametrize("kind", ["swank"])
def test_an_interrupt_that_does_not_land_waits_for_the_persons_word(kind, tmp_path):
    """The first Ctrl-C is sent; the eval goes on waiting past the grace (nothing gives up on a
    timer, and `interrupt_pending` says how long); the second closes the connection at the
    person's word, and the image runs on with its definitions (tests/test_connect.py has the
    same for Guile's server, and tests/test_session_hard.py for a child). nREPL cannot get
    here: its server answers the interrupt op itself, at once, and leaves a deaf thread
    behind (test below)."""
    srv = Server(SERVER_OF[kind], tmp_path).start()
    session = connect_session(srv.url, {"session": {"interrupt_grace": 1.0}})
    go = tmp_path / "go"
    try:
        lisp = LISP_OF[kind]
        assert session.eval({"sbcl": "(defparameter *kept* 42)",
                             "clojure": "(def kept 42)"}[lisp]).ok
        seen, result = threading.Event(), {}
        worker = threading.Thread(target=lambda: result.update(r=session.eval(
            FORMS[lisp]["deaf"](go), on_output=lambda t: seen.set())))
        worker.start()
        assert seen.wait(120)
        assert session.interrupt() is InterruptOutcome.SENT
        while session.interrupt_pending < 1.0 and worker.is_alive():   # never lands
            worker.join(0.05)
        worker.join(1.0)
        assert worker.is_alive(), "nothing gave up on a timer"
        assert session.interrupt() is InterruptOutcome.GAVE_UP      # the person's word
        worker.join(120)
        r = result["r"]
        assert r.error.type == "connection-lost" and "closed at your word" in r.error.message \
            and ",reconnect" in r.error.message, r
        assert not session.alive and srv.alive()
        go.write_text("")
        session.reconnect()
        assert session.eval({"sbcl": "*kept*", "clojure": "kept"}[lisp]).values == ["42"]
    finally:
        go.write_text("")
        session.close()
        srv.kill()


def test_nrepl_answers_an_interrupt_itself_even_when_the_code_ignores_it(opened, tmp_path):
    session = opened("nrepl")
    go = tmp_path / "go"
    seen, result = threading.Event(), {}
    worker = threading.Thread(target=lambda: result.update(r=session.eval(
        FORMS["clojure"]["deaf"](go), on_output=lambda t: seen.set())))
    worker.start()
    try:
        assert seen.wait(120)
        assert session.interrupt() is InterruptOutcome.SENT
        worker.join(120)
        assert result["r"].interrupted, result
        assert session.eval("(+ 40 2)").values == ["42"], "the session has a new thread"
    finally:
        go.write_text("")


def test_session_settings_have_one_default_each_and_refuse_a_bad_value():
    from lispshell.config import ConfigError, session_settings

    assert session_settings({}) == session_settings({"session": {}})
    assert session_settings({"session": {"eval_timeout": 5}}).eval_timeout == 5.0
    with pytest.raises(ConfigError, match=r"\[session\] output_cap = 'lots': expected a whole "
                       "number"):
        session_settings({"session": {"output_cap": "lots"}})
    with pytest.raises(ConfigError, match="init_files = 1: expected true or false"):
        session_settings({"session": {"init_files": 1}})


def test_every_section_is_typed_and_its_defaults_are_the_default_files():
    """One place for each default (config/default.toml): a section's settings made from an
    empty configuration, and made with no arguments, are the file's values; a value of the
    wrong type or outside its choices is refused naming its key, at load."""
    from lispshell import config

    raw = config._read(config.DEFAULT_CONFIG)
    for kind in config.SECTIONS:
        made = config.settings({}, kind)
        assert made == kind()
        assert {f: getattr(made, f) for f in raw[kind.SECTION] if f in kind.__dataclass_fields__} \
            == {f: v for f, v in raw[kind.SECTION].items() if f in kind.__dataclass_fields__}
    with pytest.raises(config.ConfigError, match=r"\[gate\] mode = 'maybe': expected 'ask' or "
                       "'yolo' or 'off'"):
        config.settings({"gate": {"mode": "maybe"}}, config.GateSettings)
    with pytest.raises(config.ConfigError, match=r"\[llm\] max_tokens = 1.5: expected a whole"):
        config.settings({"llm": {"max_tokens": 1.5}}, config.LlmSettings)
    assert config.settings({"mcp": {"tools": ["live"]}}, config.McpSettings).tools == ["live"]
    with pytest.raises(config.ConfigError, match=r"\[mcp\] tools = 5: expected a string such "
                       "as"):
        config.settings({"mcp": {"tools": 5}}, config.McpSettings)
    with pytest.raises(config.ConfigError, match=r"\[repl\] must be a table"):
        config.settings({"repl": "dark"}, config.ReplSettings)
