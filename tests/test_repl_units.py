"""Pure parts of the REPL: splitting forms, positioned errors, the command table, indentation."""
from __future__ import annotations

import asyncio

from lispshell.lisp.contract import Session
from lispshell.repl.commands import QUIT, CommandTable
from lispshell.repl.completion import symbol_prefix
from lispshell.repl.forms import position, split_forms
from lispshell.repl.indent import newline_indent


def test_split_forms_in_order_and_without_comments():
    forms, problem = split_forms("(defun f () 1) ; hi\n(f)\n'x", "sbcl")
    assert forms == ["(defun f () 1)", "(f)", "'x"]
    assert problem is None


def test_split_forms_stops_at_an_extra_paren_with_its_position():
    text = "(+ 1 2)\n(list 3))\n(print 4)"
    forms, problem = split_forms(text, "sbcl")
    assert forms == ["(+ 1 2)", "(list 3)"]
    assert (problem.line, problem.col) == (2, 9)
    shown = problem.describe(text, "<stdin>")
    assert shown.startswith("<stdin>:2:9: ")
    assert shown.splitlines()[1:] == ["  (list 3))", "          ^"]


def test_split_forms_reports_an_unclosed_form():
    forms, problem = split_forms("(+ 1 2) (list 3", "guile")
    assert forms == ["(+ 1 2)"]
    assert problem is not None and problem.line == 1


def test_position_is_one_based():
    assert position("ab\ncd", 0) == (1, 1)
    assert position("ab\ncd", 4) == (2, 2)


class FakeRepl:
    def __init__(self):
        self.seen = []


def test_commands_prefixes_ambiguity_and_llm_extras():
    calls = []
    table = CommandTable(lambda: {"yolo": ("toggle YOLO", lambda arg: calls.append(arg))})
    assert table.find("q")[0].name == "q"          # Guile's: leaves a level, else quits
    assert table.find("qu")[0].name == "quit"
    assert table.find("res")[0].name == "restart"
    assert table.find("h")[0] is None and "ambiguous" in table.find("h")[1]   # help, history
    assert "Unknown command" in table.find("nope")[1]
    names = [c.name for c in table.all()]
    assert names[:5] == ["help", "quit", "restart", "lisp", "history"] and "yolo" in names
    assert asyncio.run(table.run(FakeRepl(), ",yolo on")) is None and calls == ["on"]
    assert asyncio.run(table.run(FakeRepl(), ",quit")) is QUIT


def test_llm_commands_cannot_shadow_builtins():
    table = CommandTable(lambda: {"quit": ("nope", lambda arg: None)})
    assert table.find("quit")[0].help.startswith("leave")


def test_symbol_prefix():
    assert symbol_prefix("(mapc") == "mapc"
    assert symbol_prefix("(cl:def") == "cl:def"
    assert symbol_prefix("(foo '") == ""
    assert symbol_prefix("@at") == "at"


def test_newline_indent_lisp_style():
    assert newline_indent("(defun f (x)", "cl") == 2
    assert newline_indent("(foo a", "cl") == 5
    assert newline_indent("(foo", "cl") == 1
    assert newline_indent("(let ((a 1)", "cl") == 6
    assert newline_indent("(+ 1 2)", "cl") == 0
    assert newline_indent('(list "abc', "cl") == 0          # inside a string: add nothing
    assert newline_indent("(defn f [x]", "clojure") == 2
    assert newline_indent("[1 2", "clojure") == 1
    assert newline_indent("{:a 1", "clojure") == 1
    assert newline_indent("(define (f x)", "scheme") == 2
    assert newline_indent("  (when x\n    (foo a", "cl") == 9


def test_history_file_problems_keep_history_in_memory(tmp_path):
    from lispshell.repl.editor import SafeFileHistory

    problems = []
    unreadable = tmp_path / "history-sbcl"
    unreadable.mkdir()                       # a directory: cannot be read or appended to
    history = SafeFileHistory(unreadable, on_problem=problems.append)
    assert list(history.load_history_strings()) == []
    history.store_string("(+ 1 2)")
    history.store_string("(+ 3 4)")
    assert len(problems) == 1 and str(unreadable) in problems[0]


class _Session(Session):
    """A session as the REPL sees one: the declared interface (lisp/levels.py)."""

    def __init__(self, ready=True, busy=False, alive=True, package="CL-USER"):
        self.ready, self.busy, self._alive, self.package = ready, busy, alive, package

    @property
    def alive(self) -> bool:
        return self._alive


class _Options:
    no_llm = False


def test_toolbar_shows_lisp_package_state_and_llm_text():
    from lispshell.repl.app import Repl

    repl = Repl("clojure", {"lisp": {"clojure": {}}}, _Options())
    repl.sessions["clojure"] = _Session(ready=False, package="")
    assert [p.strip() for p in repl.toolbar().split("│")] == ["clojure", "user", "starting"]
    repl.sessions["clojure"] = _Session(busy=True, package="my.ns")
    assert "my.ns" in repl.toolbar() and "busy" in repl.toolbar()
    repl.sessions["clojure"] = _Session(alive=False)
    assert "stopped" in repl.toolbar()

    class LLM:
        commands = {}

        def toolbar(self):
            return "YOLO"

    repl.llm = LLM()
    repl.sessions["clojure"] = _Session(package="user")
    assert repl.toolbar().split("│")[-1].strip() == "YOLO"
    repl.flash("Ctrl-D or ,quit to leave")
    assert "Ctrl-D or ,quit to leave" in repl.toolbar()
    assert repl.prompt_message() == [("bold ansigreen", "user"), ("", "> ")]
    # Typing again ends the hint about the empty line (issue 23): it does not linger 3 s.
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from lispshell.repl.editor import make_prompt_session
    with create_pipe_input() as pipe:
        from prompt_toolkit.application import create_app_session
        with create_app_session(input=pipe, output=DummyOutput()):
            session = make_prompt_session(repl, "clojure")
            session.default_buffer.on_text_changed.fire()     # what typing a key fires
    assert "Ctrl-D or ,quit to leave" not in repl.toolbar()


def test_evals_made_while_the_llm_side_loads_reach_it_in_order_before_a_question(monkeypatch):
    import threading

    import lispshell.repl.llm_hook as hook
    from lispshell.repl.app import Repl

    release = threading.Event()
    seen = []

    class LLM:
        commands = {}

        def record_eval(self, code, result, lisp=None, **_recorded_as):
            seen.append(("eval", code, result))
            assert lisp == "sbcl"

        async def ask(self, text):
            seen.append(("ask", text))

        def toolbar(self):
            return ""

    def slow_make_llm(repl):
        release.wait(5)                      # like importing the SDK
        return LLM()

    monkeypatch.setattr(hook, "make_llm", slow_make_llm)

    async def scenario():
        repl = Repl("sbcl", {"lisp": {"sbcl": {}}}, _Options())
        repl._loop = asyncio.get_running_loop()
        await repl.record_eval("(+ 1 2)", "r1")     # returns at once: the LLM is loading
        await repl.record_eval("(+ 3 4)", "r2")
        assert seen == []
        release.set()
        await repl.ask("add seven to that")

    asyncio.run(scenario())
    assert seen == [("eval", "(+ 1 2)", "r1"), ("eval", "(+ 3 4)", "r2"),
                    ("ask", "add seven to that")]


def test_missing_closers_only_for_merely_unclosed_text():
    from lispshell.repl.editor import missing_closers

    assert missing_closers("(let ((x [1 2", "clojure") == "])))"
    assert missing_closers("(foo (bar", "sbcl") == "))"
    assert missing_closers('(list "ab', "sbcl") == ""       # the string is the person's to end
    assert missing_closers("(+ 1 2)", "sbcl") == ""
    assert missing_closers("(+ 1 2))", "sbcl") == ""
