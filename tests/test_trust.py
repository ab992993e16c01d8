"""A cloned directory must not run itself: project trust (docs/projects.md, docs/security.md).

Each hostile project below leaves a marker file when any of its code runs. Untrusted, nothing of
it runs through `lispshell`, `lispshell -e` or `lispshell mcp`; trusted, it runs only what the
person chose (never in place of the Lisp's own modules); changed since, it asks again.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import LISPSHELL
from lispshell.workspace import project, trust


def run(*args: str, cwd: Path, timeout: float = 240, env: dict | None = None):
    return subprocess.run([LISPSHELL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=env or dict(os.environ))


def _clojure_repo(root: Path, marker: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "deps.edn").write_text('{:paths ["src"]}\n')
    (root / "src" / "demo").mkdir(parents=True)
    (root / "src" / "user.clj").write_text(f'(ns user)\n(spit "{marker}" "user.clj ran")\n')
    (root / "src" / "demo" / "core.clj").write_text('(ns demo.core)\n(defn greet [] "hi")\n')
    return root


def test_an_untrusted_clojure_project_starts_bare_and_says_how_to_trust_it(tmp_path):
    marker = tmp_path / "ran"
    root = _clojure_repo(tmp_path / "clone", marker)
    r = run("-e", "(+ 1 2)", cwd=root)
    assert r.returncode == 0 and r.stdout == "3\n", r.stderr
    assert not marker.exists(), "src/user.clj ran in an untrusted project"
    assert "not trusted yet, so none of its code runs" in r.stderr
    assert f"lispshell trust {root}" in r.stderr

    t = run("trust", cwd=root / "src")
    assert t.returncode == 0, t.stderr
    assert "deps.edn" in t.stdout and "src/user.clj" in t.stdout
    r = run("-e", "(require 'demo.core)", "-e", "(demo.core/greet)", cwd=root)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == '"hi"', r.stderr
    assert marker.read_text() == "user.clj ran"        # trusted: Clojure's own start-up runs

    marker.unlink()
    (root / "src" / "user.clj").write_text(f'(ns user)\n(spit "{marker}" "changed")\n')
    r = run("-e", "(+ 1 2)", cwd=root)
    assert r.returncode == 0 and r.stdout == "3\n"
    assert not marker.exists()
    assert "it was trusted, but src/user.clj changed since" in r.stderr

    assert run("trust", "--revoke", cwd=root).returncode == 0
    assert str(root) not in trust.records()


def test_leiningen_is_not_asked_for_an_untrusted_projects_classpath(tmp_path):
    """`lein classpath` evaluates project.clj: an untrusted one is never handed to it."""
    marker = tmp_path / "ran"
    root = tmp_path / "clone"
    (root / ".git").mkdir(parents=True)
    (root / "project.clj").write_text(f'(spit "{marker}" "project.clj ran")\n'
                                      '(defproject demo "0.1.0" :dependencies [])\n')
    r = run("-e", "(+ 1 2)", cwd=root)
    assert r.returncode == 0 and r.stdout == "3\n", r.stderr
    assert not marker.exists()
    assert "asking `lein classpath`" not in r.stderr
    assert "Clojure project clone (project.clj) in" in r.stderr


def test_a_guile_project_never_replaces_guiles_own_modules(tmp_path):
    marker = tmp_path / "ran"
    root = tmp_path / "clone"
    (root / ".git").mkdir(parents=True)
    shadow = root / "src" / "language" / "scheme" / "compile-tree-il.scm"
    shadow.parent.mkdir(parents=True)
    shadow.write_text("(define-module (language scheme compile-tree-il))\n"
                      f'(call-with-output-file "{marker}" (lambda (p) (display "ran" p)))\n')
    (root / "src" / "app").mkdir()
    (root / "src" / "app" / "util.scm").write_text(
        "(define-module (app util) #:export (greet))\n(define (greet) \"hello\")\n")
    r = run("-e", "(+ 1 2)", cwd=root)
    assert r.returncode == 0 and r.stdout == "3\n", r.stderr
    assert "Guile project clone" in r.stderr and "not trusted" in r.stderr
    assert run("trust", cwd=root).returncode == 0
    # Trusted, the project's modules are found, after Guile's own: compiling a form loads
    # Guile's compile-tree-il, never the project's.
    r = run("-e", "(use-modules (app util))", "-e", "(greet)",
            "-e", "(compile '(+ 1 2) #:to 'value)", cwd=root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-2:] == ['"hello"', "3"]
    assert not marker.exists(), "the project's compile-tree-il.scm replaced Guile's"


def test_sbclS_contrib_is_loaded_from_sbcl_never_from_the_projects_registry(tmp_path):
    """A trusted ASDF project puts its directory on ASDF's registry; lispshell's own
    `(require :sb-introspect)` (the first find_definition) must still load SBCL's contrib."""
    from mcp_harness import answer, connect, run as run_async

    marker = tmp_path / "ran"
    root = tmp_path / "clone"
    (root / ".git").mkdir(parents=True)
    (root / "demo.asd").write_text('(asdf:defsystem "demo")\n')
    (root / "sb-introspect.asd").write_text(
        f'(with-open-file (s "{marker}" :direction :output :if-exists :supersede) '
        '(write-string "ran" s))\n(asdf:defsystem "sb-introspect")\n')
    trust.grant(project.find(root))

    async def scenario():
        async with connect(root) as client:
            found = answer(await client.call_tool("find_definition", {"symbol": "car",
                                                                      "package": "CL"}))
            assert found["ok"] is True, found
    run_async(scenario)
    assert not marker.exists(), "the project's sb-introspect.asd was loaded"


def test_mcp_in_an_untrusted_project_serves_a_bare_lisp_and_says_so(tmp_path):
    from mcp_harness import answer, connect, run as run_async

    marker = tmp_path / "ran"
    root = _clojure_repo(tmp_path / "clone", marker)

    async def scenario():
        async with connect(root, "--allow-eval") as client:
            assert "bare Lisp, without the project" in client.instructions
            assert f"lispshell trust {root}" in client.instructions
            assert ",trust" not in client.instructions     # no REPL to type it in
            result = answer(await client.call_tool("eval", {"code": "(+ 1 2)"}))
            assert result["values"] == ["3"], result
            assert "not trusted yet" in result["project"]
            # Text tools are not about the image: they carry no notice.
            checked = answer(await client.call_tool("validate_syntax", {"code": "(a)"}))
            assert "project" not in checked
    run_async(scenario)
    assert not marker.exists()


def test_a_start_up_file_the_model_edits_asks_for_trust_again(tmp_path):
    """A model cannot run code in the next session by editing src/user.clj through lispshell's
    own file tools: with no one to ask, the edit is refused; when it is let through (a server
    the person started with --allow-eval), the next start is bare and names the change."""
    from mcp_harness import answer, connect, run as run_async

    marker = tmp_path / "ran"
    root = _clojure_repo(tmp_path / "clone", marker)
    (root / "src" / "user.clj").write_text("(ns user)\n")
    trust.grant(project.find(root))
    call = {"file_path": "src/user.clj", "position": "end",
            "new_source": f'(spit "{marker}" "the model\'s code ran")'}

    async def scenario():
        async with connect(root, "--lisp", "none") as client:
            refused = answer(await client.call_tool("insert_form", call))
            assert refused["error"]["code"] == "NEEDS_PERSON", refused
            assert (root / "src" / "user.clj").read_text() == "(ns user)\n"
        async with connect(root, "--lisp", "none", "--allow-eval") as client:
            edited = answer(await client.call_tool("insert_form", call))
            assert edited["ok"] is True, edited
    run_async(scenario)
    r = run("-e", "(+ 1 2)", cwd=root)
    assert r.returncode == 0 and r.stdout == "3\n", r.stderr
    assert "src/user.clj changed since" in r.stderr
    assert "changed through lispshell: src/user.clj by insert_form" in r.stderr
    assert not marker.exists()
    r = run("trust", "--diff", str(root), cwd=tmp_path)
    assert r.returncode == 0 and "src/user.clj: changed by insert_form:" in r.stdout, r
    assert "--- src/user.clj (trusted)" in r.stdout and "+(spit" in r.stdout, r.stdout


def test_a_parent_without_a_repository_is_not_a_project(tmp_path):
    """A shared /tmp or a downloads folder holding someone's .asd is not the project of a
    directory below it."""
    shared = tmp_path / "downloads"
    (shared / "mine").mkdir(parents=True)
    (shared / "evil.asd").write_text('(asdf:defsystem "evil")\n')
    assert project.find(shared / "mine") is None
    (shared / ".git").mkdir()                       # a repository: its root speaks for it
    assert project.find(shared / "mine").root == shared


def test_a_directory_anyone_can_write_to_is_never_a_project(tmp_path):
    shared = tmp_path / "shared"
    (shared / "mine").mkdir(parents=True)
    (shared / ".git").mkdir()
    (shared / "evil.asd").write_text('(asdf:defsystem "evil")\n')
    shared.chmod(0o1777)
    assert project.find(shared / "mine") is None
    assert project.search_chain(shared / "mine") == [shared / "mine"]


def test_only_the_directory_and_its_parents_count_not_a_project_below(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "demo.asd").write_text('(asdf:defsystem "demo")\n')
    assert project.find(tmp_path) is None
    assert project.find(tmp_path / "proj").root == tmp_path / "proj"


@pytest.mark.parametrize("bad", ["../elsewhere", "/etc"])
def test_deps_edn_paths_outside_the_project_are_ignored(tmp_path, bad):
    root = tmp_path / "clone"
    (root / ".git").mkdir(parents=True)
    (root / "deps.edn").write_text(f'{{:paths ["src" "{bad}"]}}\n')
    assert project.find(root).paths == (root / "src",)


def test_trust_cli_says_what_it_cannot_do(tmp_path):
    r = run("trust", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 1 and "no project in" in r.stderr
    r = run("trust", "--revoke", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 1 and "was not trusted" in r.stderr
    r = run("trust", "--bogus", cwd=tmp_path)
    assert r.returncode == 2


# --- what trust covers: what the build tool really loads (issue 39) ------------------------------

def _lein_project(root: Path, extra: str = "") -> Path:
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "project.clj").write_text(f'(defproject demo "0.1.0" {extra})\n')
    return root


@pytest.mark.parametrize("extra,planted", [
    ("", "test/user.clj"),                          # lein's default :test-paths
    ("", "resources/user.clj"),                     # and :resource-paths
    ("", "dev-resources/data_readers.clj"),         # the default dev profile's
    (':source-paths ["lib"]', "lib/user.clj"),
    (':profiles {:dev {:resource-paths ["res-dev"]}}', "res-dev/user.cljc"),
    ("", "src/data_readers.clj"),                   # #= in it evaluates while reading
])
def test_a_start_up_file_anywhere_lein_puts_on_the_classpath_asks_again(tmp_path, extra,
                                                                         planted):
    root = _lein_project(tmp_path / "p", extra)
    trust.grant(project.find(root))
    assert trust.check(project.find(root)).trusted
    (root / planted).parent.mkdir(parents=True, exist_ok=True)
    (root / planted).write_text('(spit "/tmp/pwned" 1)\n')
    verdict = trust.check(project.find(root))
    assert not verdict.trusted and planted in verdict.changed, verdict


def test_deps_edn_aliases_jars_and_what_user_clj_requires_are_covered(tmp_path):
    root = tmp_path / "d"
    (root / "src" / "app").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "lib").mkdir()
    (root / "deps.edn").write_text('{:paths ["src" "lib/tools.jar"] '
                                   ':aliases {:dev {:extra-paths ["dev-src"]}}}\n')
    (root / "lib" / "tools.jar").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (root / "src" / "user.clj").write_text("(ns user (:require [app.dev]))\n")
    (root / "src" / "app" / "dev.clj").write_text("(ns app.dev)\n")
    trust.grant(project.find(root))
    for change in (lambda: (root / "lib" / "tools.jar").write_bytes(b"PK another jar"),
                   lambda: (root / "src" / "app" / "dev.clj").write_text("(ns app.dev) (x)\n"),
                   lambda: ((root / "dev-src").mkdir(), (root / "dev-src" / "user.clj")
                            .write_text("(x)\n"))):
        change()
        verdict = trust.check(project.find(root))
        assert not verdict.trusted, verdict
        trust.grant(project.find(root))


def test_trust_is_refused_while_another_user_can_write_what_starts(tmp_path):
    root = _lein_project(tmp_path / "w")
    (root / "src" / "user.clj").write_text("(ns user)\n")
    trust.grant(project.find(root))
    os.chmod(root / "src", 0o777)
    verdict = trust.check(project.find(root))
    assert not verdict.trusted and verdict.exposed == ("src: writable by every user",), verdict
    with pytest.raises(trust.TrustError, match="src: writable by every user.*chmod go-w"):
        trust.grant(project.find(root))
    r = run("trust", str(root), cwd=tmp_path)
    assert r.returncode == 1 and "src: writable by every user" in r.stderr, r
    r = run("-e", "(+ 1 2)", "--lisp", "clojure", cwd=root)
    assert r.stdout == "3\n" and "another user can change what this project runs" in r.stderr
    os.chmod(root / "src", 0o755)
    assert trust.check(project.find(root)).trusted


def test_sbcl_s_own_modules_are_never_found_in_a_trusted_project(tmp_path):
    """A trusted ASDF project's own sb-posix.asd is not what `(require :sb-posix)` loads."""
    root = tmp_path / "a"
    root.mkdir()
    (root / ".git").mkdir()
    marker = tmp_path / "pwned"
    (root / "demo.asd").write_text('(asdf:defsystem "demo")\n')
    (root / "sb-posix.asd").write_text(f'(with-open-file (s "{marker}" :direction :output) '
                                       '(write-line "x" s))\n(asdf:defsystem "sb-posix")\n')
    trust.grant(project.find(root))
    r = run("-e", "(progn (require :sb-posix) :loaded)", "-e",
            '(integerp (funcall (read-from-string "sb-posix:getpid")))', "-e",
            '(namestring (asdf:system-source-file "demo"))', cwd=root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [":LOADED", "T", f'"{root}/demo.asd"'], r.stdout
    assert not marker.exists()
