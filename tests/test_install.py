"""lispshell installs the way people install it: a wheel, built from this checkout, installed
into a fresh virtual environment outside it, run from another directory. What a new user (and
an MCP client starting `lispshell mcp`) does first must work exactly as from the checkout."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The `bin` directory of a fresh venv holding lispshell from a wheel of this checkout."""
    work = tmp_path_factory.mktemp("install")
    wheels = work / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
                    str(ROOT)], check=True, cwd=work, timeout=600)
    [wheel] = wheels.glob("lispshell-*.whl")
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                   check=True, cwd=work, timeout=900)
    return env_dir / "bin"


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def run(bin_dir: Path, *args: str, cwd: Path, **kw):
    return subprocess.run([str(bin_dir / "lispshell"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=clean_env(), **kw)


def test_the_installed_package_is_not_the_checkout(installed, tmp_path):
    where = subprocess.run([str(installed / "python"), "-c",
                            "import lispshell, lispshell.config as c; print(lispshell.__file__); "
                            "print(c.DEFAULT_CONFIG.read_text()[:1])"],
                           cwd=tmp_path, capture_output=True, text=True, env=clean_env(), timeout=60)
    assert where.returncode == 0, where.stderr
    path = where.stdout.splitlines()[0]
    assert path.startswith(str(installed.parent)) and not path.startswith(str(ROOT))


def test_the_installed_lexer_has_its_fast_path(installed, tmp_path):
    """The wheel carries the C fast path (built where a compiler is, as here) and it lexes as
    the checkout's does."""
    probe = subprocess.run([str(installed / "python"), "-c",
                            "from lispshell.syntax import lexer as x; "
                            "print(x._fast is not None, x.tokenize('(a #\\) \"b\")', 'cl')[0].codes)"],
                           cwd=tmp_path, capture_output=True, text=True, env=clean_env(), timeout=60)
    assert (probe.returncode, probe.stdout) == (0, "True (acs)\n"), probe.stderr


def test_eval_from_another_directory(installed, tmp_path):
    r = run(installed, "--no-project", "-e", "(+ 1 2)", cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stdout, r.stderr) == (0, "3\n", "")


@pytest.mark.parametrize("lisp", ["guile", "clojure"])
def test_each_lisps_loop_ships_in_the_wheel(installed, tmp_path, lisp):
    """Guile's and Clojure's loops (.scm, .clj) are read from the installed package too."""
    r = run(installed, "--lisp", lisp, "--no-project", "-e", "(+ 1 2)", cwd=tmp_path,
            stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stdout) == (0, "3\n"), r.stderr


def test_check_a_file(installed, tmp_path):
    (tmp_path / "ok.lisp").write_text("(defun f (x) (* x 2))\n")
    (tmp_path / "bad.lisp").write_text("(defun g (x)\n  (* x 2)\n")
    ok = run(installed, "check", "ok.lisp", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = run(installed, "check", "bad.lisp", cwd=tmp_path)
    assert bad.returncode == 1 and bad.stdout.startswith("bad.lisp:1:1:")


def test_mcp_answers_initialize_and_tools_list_over_stdio(installed, tmp_path):
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "install-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]
    answers = mcp_exchange([str(installed / "lispshell"), "mcp", "--lisp", "none"], messages,
                           tmp_path)
    assert answers[1]["result"]["serverInfo"]["name"] == "lispshell"
    names = {t["name"] for t in answers[2]["result"]["tools"]}
    assert {"validate_syntax", "read_form", "push_delimiter"} <= names
    assert "eval" not in names            # --lisp none: no live tools are offered


def mcp_exchange(command: list[str], messages: list[dict], cwd) -> dict:
    """Send `messages` to an MCP server over stdio, one line each; its answers by id."""
    proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        answers = {}
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                answer = json.loads(proc.stdout.readline())
                answers[answer["id"]] = answer
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return answers


def test_mcp_look_ups_answer_from_the_installed_package(installed, tmp_path):
    """`lispshell mcp` as a client registers it (the default Lisp): the look-up helpers, Lisp
    files of the package, are loaded into the image and answer."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "install-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "describe", "arguments": {"symbol": "car"}}},
    ]
    answers = mcp_exchange([str(installed / "lispshell"), "mcp"], messages, tmp_path)
    [content] = answers[2]["result"]["content"]
    described = json.loads(content["text"])
    assert described["ok"] is True and "CAR" in described["description"], described
