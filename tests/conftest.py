"""Test-wide isolation: no test reads the developer's config, history or API key.

Set at import time, so every subprocess a test starts (lispshell under a pty, `lispshell mcp`)
inherits the same clean environment.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

_SANDBOX = Path(tempfile.mkdtemp(prefix="lispshell-tests-"))
# each pytest process (each xdist worker) has its own; left behind, a run leaves one or three
atexit.register(shutil.rmtree, _SANDBOX, ignore_errors=True)
for _name in list(os.environ):
    if _name.startswith("ANTHROPIC_"):
        del os.environ[_name]
os.environ["ANTHROPIC_CONFIG_DIR"] = str(_SANDBOX / "anthropic")  # empty: no stored credentials
os.environ["LISPSHELL_STATE_DIR"] = str(_SANDBOX / "state")
os.environ["LISPSHELL_CONFIG_DIR"] = str(_SANDBOX / "config")
os.environ.setdefault("TERM", "xterm-256color")
(_SANDBOX / "anthropic").mkdir()

VENV_BIN = Path(sys.executable).parent
# The console script, as a person runs it (tests spawn it under a real pty or as a subprocess).
LISPSHELL = str(VENV_BIN / "lispshell")


import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# The suite is a gate (a red CI does not land), so property tests draw the same examples on
# every run. To hunt for new counterexamples: ./dev test --hypothesis-profile=explore
settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile("default")


def _persons_shell(tmp_path, lisp: str, prompt: str, timeout: float):
    """lispshell for the person alone (no model, no project) in a real pty, at its prompt."""
    from pty_shell import Shell

    sh = Shell(tmp_path, "--lisp", lisp, "--no-llm", "--no-project")
    try:
        sh.expect(prompt, timeout=timeout)
    except BaseException:
        sh.close()
        raise
    return sh


@pytest.fixture
def sbcl_shell(tmp_path):
    sh = _persons_shell(tmp_path, "sbcl", "CL-USER>", 30)
    yield sh
    sh.close()


@pytest.fixture
def guile_shell(tmp_path):
    sh = _persons_shell(tmp_path, "guile", "(guile-user)>", 60)
    yield sh
    sh.close()


@pytest.fixture
def clojure_shell(tmp_path):
    sh = _persons_shell(tmp_path, "clojure", "user>", 90)
    yield sh
    sh.close()


@pytest.fixture(params=["child", "server"])
def guile(request, tmp_path):
    """A Guile session (lispshell/lisp/contract.py) on a child, then over Guile's REPL server;
    the server's image must outlive whatever the test did."""
    from lisp_servers import Server
    from lispshell.lisp.connection import connect_session
    from lispshell.lisp.session import LispSession

    if request.param == "child":
        s = LispSession("guile")
        s.start()
        yield s
        s.close()
    else:
        srv = Server("guile", tmp_path).start()
        s = connect_session(srv.url, {})
        yield s
        s.close()
        assert srv.alive(), "what the test did left Guile's server running"
        srv.kill()


@pytest.fixture
def api():
    """The stand-in at the network edge (tests/fake_anthropic.py), one per test. A request
    the real Messages API would refuse fails the test that made it."""
    from fake_anthropic import FakeAnthropic

    with FakeAnthropic() as server:
        yield server
        assert server.invalid == [], [r.error for r in server.invalid]


@pytest.fixture
def temporary_tool():
    """Register a tool for one test only: `temporary_tool(name, handler, group=...)`.
    Tools registered at import time would leak into every later test (the MCP tool list)."""
    from lispshell.tools import registry

    added = []

    def add(name, handler, *, group="tests", read_only=True, schema=None):
        registry.get_tool(name)  # load the real tools first
        registry.register(name, f"{name} (tests only)", schema or {"type": "object", "properties": {}},
                          group=group, read_only=read_only)(handler)
        added.append(name)

    yield add
    for name in added:
        registry._REGISTRY.pop(name, None)


def started_sessions(**options):
    """A generator for module fixtures: yields `get(lisp)`, which starts that Lisp's session on
    first use (with `options`) and reuses it; every session is closed at the end."""
    from lispshell.lisp.session import LispSession

    made: dict = {}

    def get(name: str):
        if name not in made:
            made[name] = LispSession(name, **options)
            made[name].start()
        return made[name]

    yield get
    for session in made.values():
        session.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test's report ends with the last lines each running Lisp server printed."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        from lisp_servers import LIVE
        for srv in list(LIVE):
            # a copy in one C call: the reader thread cannot append in the middle of it
            printed = "".join(list(srv.printed.copy())[-40:])
            if printed:
                report.sections.append((f"{srv.kind} server at {srv.url} printed", printed))


# -- markers: what a test needs, read from its source ------------------------------------------
# `pty`: drives lispshell in a real pseudo-terminal; `lisp`: starts a Lisp, a server, lispshell
# or Claude Code as a process. The rest is pure Python: `./dev test --fast` runs only that
# (`-m "not lisp and not pty"`). Read from the test's own source, its fixtures' and the
# module's functions it calls, so that a new test is classified without anyone remembering to.
NEEDS = {
    "pty": ("pty_shell", "Shell("),
    "lisp": ("LispSession(", "connect_session(", "Server(", "started_sessions(", "make_session(",
             "mcp_harness", "claude_code", "subprocess.", "LISPSHELL", ".start()", "emacs",
             "Runtime(", "run_batch", "spawn("),
}


def pytest_configure(config):
    config.addinivalue_line("markers", "pty: drives lispshell in a real pseudo-terminal")
    config.addinivalue_line("markers", "lisp: starts a Lisp, a REPL server or lispshell itself")


def _sources(function, seen: set, depth: int = 3) -> list[str]:
    import inspect

    function = inspect.unwrap(function)
    if function in seen or depth == 0:
        return []
    seen.add(function)
    try:
        out = [inspect.getsource(function)]
    except (OSError, TypeError):
        return []
    module_globals = getattr(function, "__globals__", {})
    for name in getattr(getattr(function, "__code__", None), "co_names", ()):
        called = module_globals.get(name)
        if inspect.isfunction(called) and called.__module__ == function.__module__:
            out += _sources(called, seen, depth - 1)
    return out


def pytest_collection_modifyitems(config, items):
    for item in items:
        seen: set = set()
        texts = _sources(getattr(item, "function", None), seen)
        for defs in getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).values():
            for fixturedef in defs:
                texts += _sources(fixturedef.func, seen)
        text = "\n".join(texts)
        for mark, hints in NEEDS.items():
            if any(h in text for h in hints):
                item.add_marker(mark)
