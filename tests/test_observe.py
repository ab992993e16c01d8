"""Watching code run (docs/observing.md): trace with its log, time and profile, on the three
children and over the three servers (Swank, nREPL, Guile's), through the model's tools; the
person's commands in a real pty; the model's calls through the gate with the fake API."""
from __future__ import annotations

import time

import pytest

from conftest import started_sessions
from lisp_servers import Server
from lispshell.lisp.connection import connect_session
from lispshell.tools.gate import Decision, EvalGate
from lispshell.tools.registry import ToolContext, call_tool

CODE = {
    "sbcl": {
        "define": "(defun fact (n) (if (< n 2) 1 (* n (fact (1- n)))))\n"
                  "(defun burn (n) (let ((s 0)) (dotimes (i n) (setf s (mod (+ s (* i i)) "
                  "1000003))) s))\n(defun work () (loop repeat 20 sum (burn 20000)))\n"
                  "(defun oops (x) (car x))",
        "fact": "FACT", "macro": "when", "call_oops": "(ignore-errors (oops 5))",
        "deep": "(fact 10000)",
    },
    "guile": {
        "define": "(define (fact n) (if (< n 2) 1 (* n (fact (- n 1)))))\n"
                  "(define (burn n) (let lp ((i 0) (s 0)) (if (< i n) (lp (1+ i) "
                  "(modulo (+ s (* i i)) 1000003)) s)))\n"
                  "(define (work) (let lp ((k 0) (t 0)) (if (< k 20) (lp (1+ k) (+ t (burn "
                  "20000))) t)))\n(define (oops x) (car x))",
        "fact": "fact", "macro": "when", "call_oops": "(false-if-exception (oops 5))",
        "deep": "(fact 10000)",
    },
    "clojure": {
        "define": "(defn fact [n] (if (< n 2) 1 (*' n (fact (dec n)))))\n"
                  "(defn burn [n] (loop [i 0 s 0] (if (< i n) (recur (inc i) (mod (+ s (* i i)) "
                  "1000003)) s)))\n(defn work [] (reduce + (repeatedly 20 #(burn 20000))))\n"
                  "(defn oops [x] (first x))",
        "fact": "user/fact", "macro": "when",
        "call_oops": "(try (oops 5) (catch Exception e :caught))",
        "deep": "(fact 2000)",
    },
}
def _burn(n: int) -> int:
    s = 0
    for i in range(n):
        s = (s + i * i) % 1000003
    return s


WORK = 20 * _burn(20000)          # what (work) answers on every Lisp
KINDS = ["sbcl", "guile", "clojure", "swank", "nrepl", "guile-server"]
LISP_OF = {"swank": "sbcl", "nrepl": "clojure", "guile-server": "guile"}
SERVER_OF = {"swank": "swank", "nrepl": "nrepl", "guile-server": "guile"}

children = pytest.fixture(scope="module")(lambda: (yield from started_sessions()))


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    started: dict = {}

    def get(kind):
        if kind not in started:
            server = Server(kind, tmp_path_factory.mktemp(kind)).start()
            started[kind] = (server, connect_session(server.url, {}))
        return started[kind][1]

    yield get
    for server, session in started.values():
        session.close()
        server.kill()


@pytest.fixture(params=KINDS)
def session(request, children, servers):
    kind = request.param
    return servers(SERVER_OF[kind]) if kind in SERVER_OF else children(kind)


def _ctx(session, gate=None):
    return ToolContext(session=lambda: session, gate=gate or EvalGate("yolo"), eval_timeout=120)


def _ok(result):
    assert result["ok"] is True, result
    return result


def test_trace_log_time_and_profile_on_every_transport(session):
    code = CODE[session.lisp]
    ctx = _ctx(session)
    _ok(call_tool("eval", {"code": code["define"]}, ctx))
    call_tool("trace", {"remove": []}, ctx)
    call_tool("trace_log", {}, ctx)
    from lispshell.tools.project_tools import call_helper
    call_helper(ctx, "trace-clear")

    added = _ok(call_tool("trace", {"add": ["fact", "oops", code["macro"]]}, ctx))
    assert added["traced"][0].endswith(code["fact"]) or added["traced"][0] == code["fact"]
    refused, = added["refused"]
    assert refused["name"] == code["macro"] and "macro" in refused["why"]
    ran = _ok(call_tool("eval", {"code": "(fact 3)"}, ctx))
    assert ran["values"] == ["6"]
    lines = [line for line in ran.get("output", "").splitlines() if line.strip()]
    fact = code["fact"]
    assert lines == [f"({fact} 3)", f"  ({fact} 2)", f"    ({fact} 1)", "    => 1", "  => 2",
                     "=> 6"], ran.get("output")
    _ok(call_tool("eval", {"code": code["call_oops"]}, ctx))
    log = _ok(call_tool("trace_log", {}, ctx))
    calls = log["calls"]
    assert [(c["depth"], c["args"], c["outcome"]) for c in calls] == [
        (0, ["3"], "values"), (1, ["2"], "values"), (2, ["1"], "values"), (0, ["5"], "error")]
    assert calls[0]["result"] == ["6"] and calls[3]["result"], calls
    only = _ok(call_tool("trace_log", {"name": "fact", "limit": 2}, ctx))
    assert [c["args"] for c in only["calls"]] == [["2"], ["1"]] and "newest 2 of 3" in only["note"]
    # Untrace restores the original: same result, nothing printed, nothing logged.
    assert _ok(call_tool("trace", {"remove": []}, ctx))["traced"] == []
    again = _ok(call_tool("eval", {"code": "(fact 5)"}, ctx))
    assert again["values"] == ["120"] and not again.get("output", "").strip()
    assert len(_ok(call_tool("trace_log", {}, ctx))["calls"]) == 4
    timed = _ok(call_tool("time", {"code": "(fact 20)"}, ctx))
    assert timed["values"] == ["2432902008176640000"]
    assert timed["timing"].startswith("real ") and "allocated" in timed["timing"]
    profiled = _ok(call_tool("profile", {"code": "(work)", "seconds": 1}, ctx))
    rows = [line for line in profiled["profile"].splitlines() if "burn" in line.lower()]
    assert rows and rows[0].startswith("*"), profiled["profile"]


def test_deep_recursion_traces_and_the_log_keeps_the_newest(children):
    session = children("sbcl")
    ctx = _ctx(session)
    _ok(call_tool("eval", {"code": CODE["sbcl"]["define"]}, ctx))
    _ok(call_tool("trace", {"add": ["fact"]}, ctx))
    try:
        ran = session.eval("(progn (fact 10000) (loop repeat 2 do (fact 3)) :done)",
                           timeout=300, output_cap=1 << 16)
        assert ran.values == [":DONE"], ran
        log = _ok(call_tool("trace_log", {"limit": 3}, ctx))
        assert log["total_calls"] >= 10006 and "were dropped from the log" in log["note"]
        assert [c["args"] for c in log["calls"]] == [["3"], ["2"], ["1"]]
    finally:
        call_tool("trace", {"remove": []}, ctx)


class Asked:
    def __init__(self):
        self.shown = []

    def __call__(self, code, index=1, total=1):
        self.shown.append(code)
        return Decision(False, code, "not now")


def test_the_model_s_trace_time_and_profile_pass_the_gate(children):
    session = children("guile")
    asked = Asked()
    ctx = _ctx(session, EvalGate("ask", asked))
    _ok(call_tool("eval", {"code": CODE["guile"]["define"]}, _ctx(session)))
    for tool, args in (("trace", {"add": ["fact"]}), ("time", {"code": "(fact 3)"}),
                       ("profile", {"code": "(work)", "seconds": 2})):
        result = call_tool(tool, args, ctx)
        assert result["error"]["code"] == "DECLINED", result
    assert asked.shown == [";; trace fact", ";; time\n(fact 3)", ";; profile for 2 s\n(work)"]
    assert _ok(call_tool("trace", {}, ctx))["traced"] == []          # listing asks nothing
    _ok(call_tool("trace_log", {}, ctx))                              # reading asks nothing
    assert len(asked.shown) == 3
    bad = call_tool("time", {"code": "(fact 3))"}, _ctx(session))
    assert bad["error"]["code"] == "UNBALANCED" and "nothing was run" in bad["error"]["message"]


# --- the person's commands, in a real pty ------------------------------------------------------

@pytest.mark.parametrize("lisp", ["sbcl", "guile", "clojure"])
def test_the_person_s_commands(tmp_path, lisp):
    import pty_shell

    sh = pty_shell.Shell(tmp_path, "--lisp", lisp, "--no-project", "--no-llm")
    try:
        sh.expect(">", 120)
        sh.submit(CODE[lisp]["define"].replace("\n", " "))
        sh.expect(">", 120)
        sh.submit(",trace fact")
        sh.expect("Tracing")
        sh.submit("(fact 3)")
        fact = CODE[lisp]["fact"]
        sh.expect(f"({fact} 3)\n  ({fact} 2)\n    ({fact} 1)\n    => 1\n  => 2\n=> 6\n6")
        sh.submit(",trace-log")
        sh.expect(f"({fact} 3) => 6\n  ({fact} 2) => 2\n    ({fact} 1) => 1")
        sh.submit(",untrace")
        sh.expect("Untraced")
        sh.submit("(fact 4)")
        assert "=> " not in sh.expect("24")
        sh.submit(",time (fact 20)")
        sh.expect("; real ")
        sh.expect("allocated")
        sh.expect("2432902008176640000")
        sh.submit(",profile 1 (work)")
        sh.expect("* marks your own")
        rows = sh.expect(str(WORK))                 # the table, then (work)'s value
        assert any(line.startswith("*") and "burn" in line.lower() for line in rows.splitlines()), rows
        sh.submit(",time (fact 3))")
        sh.expect("does not read as whole forms")
    finally:
        sh.close()


def test_the_model_traces_reads_the_log_and_profiles_in_the_repl(tmp_path):
    from fake_anthropic import FakeAnthropic, Reply
    from test_llm_repl_pty import GRACE, Shell

    with FakeAnthropic() as api:
        api.script(Reply.tool("trace", {"add": ["fact"]}), Reply.tool("eval", {"code": "(fact 3)"}),
                   Reply.tool("trace_log", {}),
                   Reply.tool("profile", {"code": "(work)", "seconds": 1}),
                   Reply.text("fact is called three times; burn takes the time."))
        sh = Shell(tmp_path, api, "--no-project", groups=("live", "observe"))
        try:
            sh.expect(">")
            sh.submit(CODE["sbcl"]["define"].replace("\n", " "))
            sh.expect("OOPS")
            sh.submit("what does fact get called with, and where does work spend its time?")
            for question in (";; trace fact", "the model wants to evaluate", ";; profile for 1 s"):
                sh.expect(question)
                sh.answer("y")
            sh.expect("burn takes the time.")
            results = [m["content"][0] for m in api.message_requests[-1].body["messages"]
                       if m["role"] == "user" and isinstance(m["content"], list)
                       and m["content"][0].get("type") == "tool_result"]
            log = results[-2]["content"]
            assert '"args":["2"]' in log and '"result":["6"]' in log, log
            assert "BURN" in results[-1]["content"], results[-1]
            time.sleep(GRACE)
            sh.quit()
        finally:
            sh.close()
        assert api.invalid == []


def test_the_person_s_profile_reaches_the_model_as_its_own_call(tmp_path):
    from fake_anthropic import FakeAnthropic, Reply
    from test_llm_repl_pty import Shell

    with FakeAnthropic() as api:
        api.script(Reply.text("BURN takes most of the samples."))
        sh = Shell(tmp_path, api, "--no-project", groups=("live", "observe"))
        try:
            sh.expect(">")
            sh.submit(CODE["sbcl"]["define"].replace("\n", " "))
            sh.expect("OOPS")
            sh.submit(",profile 1 (work)")
            sh.expect("* marks your own")
            sh.expect(str(WORK))
            sh.submit("why is this slow?")
            sh.expect("BURN takes most of the samples.")
            messages = api.message_requests[-1].body["messages"]
            uses = [b for m in messages if m["role"] == "assistant" for b in m["content"]
                    if b.get("type") == "tool_use"]
            assert uses[-1]["name"] == "profile"
            assert uses[-1]["input"] == {"code": "(work)", "seconds": 1.0}
            sh.quit()
        finally:
            sh.close()
        assert api.invalid == []


def test_over_mcp_trace_asks_as_eval_does_and_the_log_is_read_freely(tmp_path):
    from mcp_harness import answer, connect, run as run_async

    asked: list[str] = []

    def elicit(message: str) -> str:
        asked.append(message)
        return "accept"

    async def scenario():
        async with connect(tmp_path, "--lisp", "guile", elicit=elicit) as client:
            answer(await client.call_tool("eval", {"code": CODE["guile"]["define"]}))
            traced = answer(await client.call_tool("trace", {"add": ["fact"]}))
            assert traced["added"] == ["fact"], traced
            ran = answer(await client.call_tool("eval", {"code": "(fact 2)"}))
            assert "(fact 1)" in ran["output"], ran
            log = answer(await client.call_tool("trace_log", {}))
            assert [c["args"] for c in log["calls"]] == [["2"], ["1"]], log
    run_async(scenario)
    assert len(asked) == 3 and ";; trace fact" in asked[1], asked


@pytest.mark.parametrize("kind", ["swank", "nrepl", "guile"])
def test_the_person_s_commands_over_a_connection(tmp_path, kind):
    import pty_shell

    (tmp_path / "server").mkdir()
    server = Server(kind, tmp_path / "server").start()
    lisp = {"swank": "sbcl", "nrepl": "clojure", "guile": "guile"}[kind]
    sh = pty_shell.Shell(tmp_path, "--connect", server.url, "--no-llm")
    try:
        sh.expect("Connected to " + server.url, timeout=120)
        sh.submit(CODE[lisp]["define"].replace("\n", " "))
        sh.expect(CODE[lisp]["fact"].split("/")[-1].upper() if lisp == "sbcl" else ">", 60)
        sh.submit(",trace fact")
        sh.expect("Tracing")
        sh.submit("(fact 2)")
        fact = CODE[lisp]["fact"]
        sh.expect(f"({fact} 2)\n  ({fact} 1)\n  => 1\n=> 2\n2")
        sh.submit(",trace-log fact")
        sh.expect(f"({fact} 2) => 2\n  ({fact} 1) => 1")
        sh.submit(",untrace")
        sh.expect("Untraced")
        sh.submit(",time (fact 20)")
        sh.expect("allocated")
        sh.expect("2432902008176640000")
    finally:
        sh.close()
        server.kill()
