"""The loop the system prompt teaches, walked by a scripted model on the fake Messages API
against a real Lisp started with a real project, in all three dialects: find the definition,
read the form, replace it structurally, load the file (through the gate), run the code, run the
project's own tests (asdf:test-system, clojure.test/run-tests, an SRFI-64 file), report.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from fake_anthropic import FakeAnthropic, Reply
from lispshell import config as config_mod
from lispshell.workspace import project
from lispshell.lisp.session import make_session
from lispshell.tools.gate import Decision
from test_llm_agent import Confirm, ask, make_agent, still_valid

PROJECTS = Path(__file__).parent / "projects"


@dataclass
class Case:
    project: str
    file: str                  # the file holding `twice`, relative to the project
    prepare: dict | None       # a first tool call that loads the project (name, input)
    symbol: dict               # find_definition's input
    form: dict                 # read_form's address
    new_source: str            # `twice` rewritten
    check: dict                # eval's input, whose value must be "hello 42"
    tests: list                # the tool calls that run the project's tests, in order
    passed: str                # what the last of them prints when every test passed


CASES = {
    "sbcl": Case("asdf-demo", "src/core.lisp", ("load_system", {"name": "demo"}),
                 {"symbol": "demo:twice"}, {"form_type": "defun", "form_name": "twice"},
                 '(defun twice (x)\n  "Two times X, by addition."\n  (+ x x))',
                 {"code": "(greet)", "package": "demo"},
                 [("eval", {"code": '(asdf:test-system "demo")'})], "demo tests: 2 passed"),
    "guile": Case("guile-demo", "src/app/util.scm", ("load_file", {"file_path": "src/app/util.scm"}),
                  {"symbol": "twice", "package": "(app util)"},
                  {"form_type": "define", "form_name": "twice"},
                  '(define (twice x)\n  "Two times X, by addition."\n  (+ x x))',
                  {"code": "(greet)", "package": "(app util)"},
                  [("load_file", {"file_path": "test/util-test.scm"})],
                  "# of expected passes      2"),
    "clojure": Case("clj-deps", "src/demo/core.clj", ("load_file", {"file_path": "src/demo/core.clj"}),
                    {"symbol": "demo.core/twice"}, {"form_type": "defn", "form_name": "twice"},
                    '(defn twice\n  "Two times x, by addition."\n  [x]\n  (+ x x))',
                    {"code": "(demo.core/greet)"},
                    [("load_file", {"file_path": "test/demo/core_test.clj"}),
                     ("eval", {"code": "(clojure.test/run-tests 'demo.core-test)"})],
                    "Ran 2 tests containing 2 assertions.\n0 failures, 0 errors."),
}


def last_result(body: dict) -> dict:
    """The JSON of the last tool_result the model was sent."""
    block = body["messages"][-1]["content"][0]
    assert block["type"] == "tool_result", block
    return json.loads(block["content"])


@pytest.mark.parametrize("lisp", list(CASES))
def test_the_model_changes_loads_and_checks_a_project_function(lisp, tmp_path, monkeypatch):
    case = CASES[lisp]
    root = tmp_path / case.project
    shutil.copytree(PROJECTS / case.project, root)
    monkeypatch.chdir(root)        # relative paths, as the model uses them, are the project's
    found = project.find(root, search_parents=False)
    session = make_session(lisp, project.apply(found, config_mod.load(), lisp))
    session.start()
    confirm = Confirm(*["y"] * (3 + len(case.tests)))
    with FakeAnthropic() as api:
        try:
            agent = make_agent(api, session, confirm=confirm,
                               groups=("live", "project", "structure"))
            agent.ctx.root = root
            agent.ctx.eval_timeout = 60.0
            seen: dict = {}

            def read_after_definition(body):
                seen["definition"] = last_result(body)
                return Reply.tool("read_form", {"file_path": case.file, **case.form})

            def replace_after_read(body):
                seen["read"] = last_result(body)
                return Reply.tool("replace_form", {"file_path": case.file, **case.form,
                                                   "new_source": case.new_source,
                                                   "expected_hash": seen["read"]["hash"]})

            def load_after_replace(body):
                seen["replace"] = last_result(body)
                return Reply.tool("load_file", {"file_path": case.file})

            def eval_after_load(body):
                seen["load"] = last_result(body)
                return Reply.tool("eval", case.check)

            def tests_after_eval(step):
                def reply(body):
                    seen["eval" if step == 0 else f"test{step - 1}"] = last_result(body)
                    return Reply.tool(*case.tests[step])
                return reply

            def report(body):
                seen["tests"] = last_result(body)
                return Reply.text("twice now adds; the file loaded with no warnings, greet "
                                  "still answers \"hello 42\" and the project's tests pass.")

            api.script(Reply.tool(*case.prepare, text="Loading the project first."),
                       lambda body: Reply.tool("find_definition", case.symbol),
                       read_after_definition, replace_after_read, load_after_replace,
                       eval_after_load, *[tests_after_eval(i) for i in range(len(case.tests))],
                       report)
            ask(agent, "make twice use addition instead of multiplication, and check greet")

            source = root / case.file
            assert seen["definition"]["ok"] is True, seen["definition"]
            [definition] = seen["definition"]["definitions"]
            assert definition["file"] == str(source)
            assert seen["read"]["ok"] is True and "(* 2 x)" in seen["read"]["text"]
            assert seen["replace"]["ok"] is True, seen["replace"]
            assert case.new_source in source.read_text()
            assert "(* 2 x)" not in source.read_text()
            assert seen["load"] == {**seen["load"], "ok": True, "finished": True,
                                    "summary": "no warnings"}
            assert seen["eval"]["ok"] is True and seen["eval"]["values"] == ['"hello 42"']
            # the image runs the new definition, and the project's tests pass with it
            assert seen["tests"]["ok"] is True, seen["tests"]
            assert case.passed in seen["tests"]["output"], seen["tests"]
            assert len(confirm.asked) == 3 + len(case.tests)   # every load and eval was asked
            assert confirm.asked[2][0].splitlines()[-1] == case.check["code"]
            assert "tests pass" in agent.display.all_text
            still_valid(agent, api)
        finally:
            session.close()


def test_a_declined_load_reaches_the_model_and_nothing_is_loaded(tmp_path, monkeypatch):
    root = tmp_path / "asdf-demo"
    shutil.copytree(PROJECTS / "asdf-demo", root)
    monkeypatch.chdir(root)
    found = project.find(root, search_parents=False)
    session = make_session("sbcl", project.apply(found, config_mod.load(), "sbcl"))
    session.start()
    confirm = Confirm(Decision(False, "", "not yet"))
    with FakeAnthropic() as api:
        try:
            agent = make_agent(api, session, confirm=confirm, groups=("live", "project"))
            agent.ctx.root = root
            api.script(Reply.tool("load_system", {"name": "demo"}), Reply.text("I will wait."))
            ask(agent, "load the system")
            result = api.message_requests[1].body["messages"][-1]["content"][0]
            assert result["is_error"] is True
            assert "declined" in result["content"] and "not yet" in result["content"]
            assert session.eval('(find-package "DEMO")').values == ["NIL"]
            still_valid(agent, api)
        finally:
            session.close()
