"""Projects: recognised from their marker files and started with the real Lisp.

Each test copies a small real project from tests/projects/ into its own directory (ASDF writes
fasls, Leiningen writes target/) and runs `lispshell` there as a person would.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import LISPSHELL
from lispshell import project

PROJECTS = Path(__file__).parent / "projects"


@pytest.fixture
def copy_project(tmp_path):
    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(PROJECTS / name, target)
        return target
    return copy


def run(*args: str, cwd: Path, timeout: float = 240):
    return subprocess.run([LISPSHELL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=dict(os.environ))


# --- recognising a project -------------------------------------------------------------------

def test_asdf_project_is_found_with_its_systems(copy_project):
    root = copy_project("asdf-demo")
    found = project.find(root)
    assert (found.kind, found.lisp, found.systems) == ("asdf", "sbcl", ("demo",))
    command = found.command(["sbcl", "--noinform"])
    assert command[:2] == ["sbcl", "--noinform"]
    assert f'(push "{root}/" asdf:*central-registry*)' in " ".join(command)
    assert "ASDF project asdf-demo" in found.summary and ",load-system demo" in found.summary


def test_a_subdirectory_finds_the_project_above_it(copy_project):
    root = copy_project("asdf-demo")
    assert project.find(root / "src").root == root
    assert project.find(root / "src", search_parents=False) is None


def test_guile_module_roots_come_from_define_module(copy_project):
    root = copy_project("guile-demo")
    found = project.find(root)
    assert (found.kind, found.lisp) == ("guile", "guile")
    assert found.command(["guile", "-q"]) == ["guile", "-q", "-L", str(root / "src")]


def test_deps_edn_paths_go_in_front_of_the_configured_classpath(copy_project):
    root = copy_project("clj-deps")
    found = project.find(root)
    assert (found.kind, found.lisp) == ("deps.edn", "clojure")
    command = found.command(["java", "-cp", "/usr/share/java/clojure.jar", "clojure.main"])
    assert command == ["java", "-cp", f"{root / 'src'}:/usr/share/java/clojure.jar", "clojure.main"]
    assert "no Clojure CLI found" in found.summary   # Debian's `clojure` is not the official CLI


def test_a_directory_without_a_project_is_none(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "deep" / "a" / "b").mkdir(parents=True)
    (tmp_path / "deep" / "a" / "b" / "x.asd").write_text("(asdf:defsystem \"x\")")
    assert project.find(tmp_path, search_parents=False) is None


def test_explicit_project_with_nothing_there_is_a_clear_error(tmp_path):
    r = run("--project", str(tmp_path), "-e", "(+ 1 2)", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == (f"lispshell: no project in {tmp_path}: looked for *.asd, "
                                "deps.edn, project.clj and Guile modules (define-module)")
    assert "Traceback" not in r.stderr


def test_explicit_project_with_another_lisp_is_refused(copy_project, tmp_path):
    root = copy_project("guile-demo")
    r = run("--project", str(root), "--lisp", "sbcl", "-e", "(+ 1 2)", cwd=tmp_path)
    assert r.returncode == 2
    assert "is a guile project (guile); start it with --lisp guile" in r.stderr


def test_no_project_flag_starts_a_bare_lisp(copy_project):
    root = copy_project("guile-demo")
    r = run("--no-project", "-e", "(lisp-implementation-type)", cwd=root)
    assert r.returncode == 0, r.stderr
    assert r.stdout == '"SBCL"\n'


# --- starting the Lisp with it -----------------------------------------------------------------

def test_asdf_system_loads_in_the_started_sbcl(copy_project):
    root = copy_project("asdf-demo")
    r = run("-e", '(asdf:load-system "demo")', "-e", "(demo:greet)", cwd=root / "src")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == '"hello 42"'


def test_guile_project_modules_are_on_the_load_path(copy_project):
    root = copy_project("guile-demo")
    r = run("-e", "(use-modules (app util))", "-e", "(greet)", cwd=root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == '"hello 42"'


def test_deps_edn_source_paths_are_on_the_classpath(copy_project):
    root = copy_project("clj-deps")
    r = run("-e", "(require 'demo.core)", "-e", "(demo.core/greet)", cwd=root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == '"hello 42"'


def test_leiningen_project_starts_with_leins_classpath_then_from_the_cache(copy_project):
    assert shutil.which("lein"), "./dev test installs leiningen"
    root = copy_project("clj-lein")
    first = run("--project", str(root), "-e", "(require 'demo.core)", "-e", "(demo.core/greet)",
                cwd=root)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1] == '"hello 42"'
    assert "asking `lein classpath`" in first.stderr
    assert "Clojure project clj-lein (project.clj): classpath from `lein classpath`" in first.stderr
    again = run("--project", str(root), "-e", "(clojure-version)", cwd=root)
    assert again.returncode == 0, again.stderr
    assert again.stdout == '"1.11.1"\n'
    assert "asking" not in again.stderr        # the classpath came from the cache


def test_mcp_serves_the_project_found_in_its_root(copy_project):
    from mcp_harness import answer, connect, run as run_async

    root = copy_project("guile-demo")

    async def scenario():
        async with connect(root, "--allow-eval") as client:   # no --lisp: the project decides
            loaded = answer(await client.call_tool("eval", {"code": "(use-modules (app util))"}))
            assert loaded["ok"] is True, loaded
            greeted = answer(await client.call_tool("eval", {"code": "(greet)"}))
            assert greeted["ok"] is True and greeted["values"] == ['"hello 42"'], greeted
    run_async(scenario)


def test_mcp_project_flag_with_nothing_there_is_a_clear_start_up_error(tmp_path):
    r = subprocess.run([LISPSHELL, "mcp", "--project", str(tmp_path)], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().startswith(f"lispshell mcp: no project in {tmp_path}")
