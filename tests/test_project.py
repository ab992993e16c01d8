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
from lispshell.workspace import project, trust

PROJECTS = Path(__file__).parent / "projects"


@pytest.fixture
def copy_project(tmp_path):
    """A clone of tests/projects/NAME (a repository: it has .git), trusted unless asked not to
    be, as the person would after `lispshell trust` (test_trust.py covers the untrusted side)."""
    def copy(name: str, trusted: bool = True) -> Path:
        target = tmp_path / name
        shutil.copytree(PROJECTS / name, target)
        (target / ".git").mkdir()
        if trusted:
            trust.grant(project.find(target))
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
    joined = " ".join(command)
    assert f'(sb-ext:parse-native-namestring "{root}/")' in joined
    assert "asdf:*system-definition-search-functions*" in joined
    assert "ASDF project asdf-demo" in found.summary and ",load-system demo" in found.summary


def test_a_subdirectory_finds_the_project_above_it(copy_project):
    root = copy_project("asdf-demo")
    assert project.find(root / "src").root == root
    assert project.find(root / "src", search_parents=False) is None


def test_guile_module_roots_come_from_define_module(copy_project):
    root = copy_project("guile-demo")
    found = project.find(root)
    assert (found.kind, found.lisp) == ("guile", "guile")
    assert found.paths == (root / "src",)
    # Appended to the load path (-L would put it in front of Guile's own modules).
    command = project.prepare(found, {}).command(["guile", "-q"])
    assert command[:3] == ["guile", "-q", "-l"]
    assert Path(command[3]).read_text() == \
        f'(set! %load-path (append %load-path (list "{root / "src"}")))\n'


def test_deps_edn_paths_go_after_the_configured_classpath(copy_project):
    root = copy_project("clj-deps")
    found = project.prepare(project.find(root), {})
    assert (found.kind, found.lisp) == ("deps.edn", "clojure")
    command = found.command(["java", "-cp", "/usr/share/java/clojure.jar", "clojure.main"])
    assert command == ["java", "-cp", f"/usr/share/java/clojure.jar:{root / 'src'}", "clojure.main"]
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


def test_mcp_project_notice_names_the_tool_not_the_repl_command(copy_project):
    root = copy_project("asdf-demo")
    r = run("mcp", "--tools", "syntax", cwd=root, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "ASDF project asdf-demo" in r.stderr and "`load_system` (name demo)" in r.stderr
    assert ",load-system" not in r.stderr


def test_mcp_project_flag_with_nothing_there_is_a_clear_start_up_error(tmp_path):
    r = subprocess.run([LISPSHELL, "mcp", "--project", str(tmp_path)], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().startswith(f"lispshell mcp: no project in {tmp_path}")


# --- what the person has installed, and the configurable commands ------------------------------

def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_quicklisp_is_loaded_first_when_the_person_has_it(copy_project, tmp_path):
    root = copy_project("asdf-demo")
    home = tmp_path / "home"
    (home / "quicklisp").mkdir(parents=True)
    (home / "quicklisp" / "setup.lisp").write_text(
        "(defvar cl-user::*lispshell-quicklisp* (* 6 7))\n")
    r = subprocess.run([LISPSHELL, "--project", str(root), "-e", "cl-user::*lispshell-quicklisp*",
                        "-e", '(asdf:load-system "demo")', "-e", "(demo:greet)"], cwd=root,
                       capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, HOME=str(home)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "42" and r.stdout.splitlines()[-1] == '"hello 42"'
    assert "system demo on ASDF's registry and Quicklisp" in r.stderr


def test_the_official_clojure_cli_gives_the_classpath_with_dependencies(copy_project, tmp_path):
    """deps.edn with the official `clojure` CLI installed: its `-Spath` is the classpath, so
    dependencies it resolved (here a directory standing for a fetched library) are there."""
    root = copy_project("clj-deps")
    dep = tmp_path / "m2" / "lib"
    (dep / "fetched").mkdir(parents=True)
    (dep / "fetched" / "dep.clj").write_text("(ns fetched.dep)\n(defn answer [] (* 6 7))\n")
    bin_dir = tmp_path / "bin"
    # The official CLI is a script that knows -Spath (Debian's wrapper does not).
    _script(bin_dir / "clojure", f'[ "$1" = -Spath ] && echo "{root}/src:{dep}" && exit 0\n'
                                 "exit 1\n")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    r = subprocess.run([LISPSHELL, "--project", str(root), "-e", "(require 'fetched.dep)",
                        "-e", "(fetched.dep/answer)", "-e", "(require 'demo.core)",
                        "-e", "(demo.core/greet)"], cwd=root, capture_output=True, text=True,
                       timeout=240, stdin=subprocess.DEVNULL, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-3:] == ["42", "nil", '"hello 42"'], r.stdout
    assert "Clojure project clj-deps (deps.edn): classpath from `clojure -Spath`" in r.stderr


def test_the_classpath_commands_are_configurable(copy_project, tmp_path):
    lein_root = copy_project("clj-lein")
    deps_root = copy_project("clj-deps")
    count = tmp_path / "asked"
    lein = _script(tmp_path / "bin" / "my-lein",
                   f'echo x >> "{count}"\necho "Retrieving..." \necho "/cp/a:/cp/b"\n')
    cli = _script(tmp_path / "bin" / "my-cli", 'echo "/deps/cp"\n')
    config = {"project": {"lein_classpath": f"{lein} classpath", "clojure_classpath": [str(cli)]}}
    for _ in range(2):
        found = project.prepare(project.find(lein_root), config)
        assert found.classpath == "/cp/a:/cp/b"      # the last line: lein's own chatter skipped
        assert f"classpath from `{lein} classpath`" in found.summary
    assert count.read_text() == "x\n", "asked once, then cached until project.clj changes"
    (lein_root / "project.clj").write_text((lein_root / "project.clj").read_text() + "\n")
    project.prepare(project.find(lein_root), config)
    assert count.read_text() == "x\nx\n"
    found = project.prepare(project.find(deps_root), config)
    assert found.classpath == "/deps/cp" and f"classpath from `{cli}`" in found.summary
    missing = project.prepare(project.find(lein_root),
                              {"project": {"lein_classpath": ["no-such-lein-zz"]}})
    assert missing.classpath == str(lein_root / "src")
    assert "Leiningen not installed" in missing.summary


def test_project_detection_can_be_turned_off(copy_project):
    root = copy_project("guile-demo")
    config_dir = root.parent / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text("[project]\ndetect = false\n")
    r = subprocess.run([LISPSHELL, "-e", "(lisp-implementation-type)"], cwd=root,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, LISPSHELL_CONFIG_DIR=str(config_dir)))
    assert r.returncode == 0 and r.stdout == '"SBCL"\n', r.stderr
