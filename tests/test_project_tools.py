"""The project tools on real Lisps started with a real project: load_file and load_system
(through the gate, compiler diagnostics as path:line:col), find_definition, who_calls,
who_references and list_package, checked against the project's files."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lispshell import config as config_mod

from lispshell.workspace import project
from lispshell.lisp.session import make_session
from lispshell.tools.gate import Decision, EvalGate
from lispshell.tools.registry import ToolContext, call_tool

PROJECTS = Path(__file__).parent / "projects"


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def col_of(path: Path, needle: str) -> int:
    return path.read_text().splitlines()[line_of(path, needle) - 1].index(needle) + 1


@pytest.fixture(scope="module")
def sbcl_project(tmp_path_factory):
    root = tmp_path_factory.mktemp("proj") / "asdf-demo"
    shutil.copytree(PROJECTS / "asdf-demo", root)
    found = project.find(root, search_parents=False)
    config = project.apply(found, config_mod.load(), "sbcl")
    session = make_session("sbcl", config)
    session.start()
    yield root, session
    session.close()


def ctx(session, root, gate=None):
    return ToolContext(session=lambda: session, gate=gate or EvalGate("yolo"), root=root,
                       eval_timeout=60.0)


def test_load_system_then_find_definition_and_callers(sbcl_project):
    root, session = sbcl_project
    core = root / "src" / "core.lisp"
    loaded = call_tool("load_system", {"name": "demo"}, ctx(session, root))
    assert loaded["ok"] is True, loaded
    assert loaded["finished"] is True and loaded["system"] == "demo"

    found = call_tool("find_definition", {"symbol": "demo:greet"}, ctx(session, root))
    assert found["ok"] is True, found
    [definition] = found["definitions"]
    assert definition["kind"] == "function"
    assert definition["file"] == str(core)
    assert definition["line"] == line_of(core, "(defun greet ()")
    assert definition["at"] == f"{core}:{definition['line']}:1"
    assert definition["form"].startswith("(defun greet ()") and "(twice 21)" in definition["form"]

    callers = call_tool("who_calls", {"symbol": "twice", "package": "demo"}, ctx(session, root))
    assert callers["ok"] is True, callers
    assert [c["name"] for c in callers["calls"]] == ["DEMO:GREET"]
    assert callers["calls"][0]["file"] == str(core)

    listing = call_tool("list_package", {"package": "demo"}, ctx(session, root))
    assert listing["ok"] is True, listing
    rows = {r["name"]: r for r in listing["names"]}
    assert sorted(rows) == ["AREA", "GREET", "TWICE"]
    assert rows["TWICE"]["kind"] == "function" and rows["TWICE"]["doc"] == "Two times X."
    assert rows["AREA"]["arglist"] == "(W H)"


def test_load_file_reports_each_warning_at_its_line_and_column(sbcl_project):
    root, session = sbcl_project
    extra = root / "src" / "extra.lisp"
    extra.write_text('(in-package "DEMO")\n\n(defun tripled (y)\n  (let ((unused 1))\n'
                     '    (* 3 (undefined-helper y))))\n')
    loaded = call_tool("load_file", {"file_path": str(extra)}, ctx(session, root))
    assert loaded["ok"] is True, loaded
    assert loaded["finished"] is True
    line, col = line_of(extra, "(unused 1)"), col_of(extra, "(unused 1)")
    assert (f"{extra}:{line}:{col}: style-warning: The variable UNUSED is defined but never "
            "used.") in loaded["diagnostics"]
    undefined = [d for d in loaded["diagnostics"] if "UNDEFINED-HELPER" in d]
    assert undefined == [f"{extra}:{line_of(extra, '(undefined-helper y)')}:"
                         f"{col_of(extra, '(undefined-helper y)')}: style-warning: undefined "
                         "function: DEMO::UNDEFINED-HELPER"]
    assert loaded["summary"] == "2 style-warnings"
    # loaded: the function exists now, and the person's package did not change
    after = session.eval("(not (null (fboundp 'demo::tripled)))")
    assert after.values == ["T"] and after.package == "CL-USER"


def test_load_file_with_a_read_error_says_where_and_does_not_load(sbcl_project):
    root, session = sbcl_project
    broken = root / "src" / "broken.lisp"
    # In a package of its own making: whether an earlier test (in this worker) loaded the
    # demo system does not matter.
    broken.write_text('(defpackage "LISPSHELL-TEST-BROKEN" (:use "CL"))\n'
                      '(in-package "LISPSHELL-TEST-BROKEN")\n(defun fine () 1)\n'
                      '(defun bad (x)\n  (+ x #<nope>))\n')
    loaded = call_tool("load_file", {"file_path": str(broken)}, ctx(session, root))
    assert loaded["ok"] is False
    error = loaded["error"]
    assert error["code"] == "LOAD_FAILED"
    assert error["finished"] is False
    [diagnostic] = [d for d in error["diagnostics"] if "read error" in d]
    assert diagnostic.startswith(f"{broken}:{line_of(broken, '#<nope>')}:")
    assert "illegal sharp macro character" in diagnostic
    assert session.eval('(let ((p (find-package "LISPSHELL-TEST-BROKEN"))) '
                        '(and p (fboundp (find-symbol "FINE" p))))').values == ["NIL"]


def test_load_file_goes_through_the_gate(sbcl_project):
    root, session = sbcl_project
    marker = root / "ran.txt"
    payload = root / "src" / "payload.lisp"
    payload.write_text(f'(with-open-file (s "{marker}" :direction :output) (write-line "x" s))\n')
    asked = []

    def confirm(code, index, total):
        asked.append(code)
        return Decision(False, code, "not now")

    refused = call_tool("load_file", {"file_path": str(payload)},
                        ctx(session, root, EvalGate("ask", confirm)))
    assert refused["error"]["code"] == "DECLINED"
    assert asked == [f'(load (compile-file "{payload}"))']
    assert not marker.exists()
    off = call_tool("load_file", {"file_path": str(payload)}, ctx(session, root, EvalGate("off")))
    assert off["error"]["code"] == "EVAL_OFF" and not marker.exists()
    nobody = call_tool("load_system", {"name": "demo"},
                       ToolContext(session=lambda: session, gate=None, root=root))
    assert nobody["error"]["code"] == "NOT_ALLOWED"


def test_look_ups_never_intern_and_say_what_is_missing(sbcl_project):
    root, session = sbcl_project
    missing = call_tool("find_definition", {"symbol": "no-such-thing-zz"}, ctx(session, root))
    assert missing["error"]["code"] == "NOT_FOUND"
    assert "No symbol named no-such-thing-zz" in missing["error"]["message"]
    assert session.eval('(find-symbol "NO-SUCH-THING-ZZ" "CL-USER")').values == ["NIL", "NIL"]
    injected = call_tool("find_definition", {"symbol": '#.(delete-file "x")'}, ctx(session, root))
    assert injected["error"]["code"] == "NOT_FOUND"
    no_package = call_tool("list_package", {"package": "nope-pkg"}, ctx(session, root))
    assert no_package["error"] == {"code": "NOT_FOUND", "message": "No package named nope-pkg."}


def test_load_file_outside_the_root_is_refused(sbcl_project, tmp_path):
    root, session = sbcl_project
    outside = tmp_path / "outside.lisp"
    outside.write_text("(defun outside () 1)\n")
    refused = call_tool("load_file", {"file_path": str(outside)}, ctx(session, root))
    assert refused["error"]["code"] == "OUTSIDE_ROOT"


@pytest.fixture(scope="module")
def project_session(tmp_path_factory):
    """`get(name)`: a copy of tests/projects/NAME and a Lisp started with it (started once)."""
    started = {}

    def get(name):
        if name not in started:
            root = tmp_path_factory.mktemp("proj") / name
            shutil.copytree(PROJECTS / name, root)
            found = project.find(root, search_parents=False)
            session = make_session(found.lisp, project.apply(found, config_mod.load(), found.lisp))
            session.start()
            started[name] = (root, session)
        return started[name]
    yield get
    for _, session in started.values():
        session.close()


def test_guile_load_file_find_definition_callers_and_module_names(project_session):
    root, session = project_session("guile-demo")
    util = root / "src" / "app" / "util.scm"
    loaded = call_tool("load_file", {"file_path": str(util)}, ctx(session, root))
    assert loaded["ok"] is True and loaded["finished"] is True, loaded
    assert "diagnostics" not in loaded

    found = call_tool("find_definition", {"symbol": "greet", "package": "(app util)"},
                      ctx(session, root))
    assert found["ok"] is True, found
    [definition] = found["definitions"]
    assert (definition["file"], definition["line"]) == (str(util), line_of(util, "(define (greet)"))
    assert definition["form"].startswith("(define (greet)")

    callers = call_tool("who_calls", {"symbol": "twice", "package": "(app util)"},
                        ctx(session, root))
    assert callers["ok"] is True, callers
    assert [(c["file"], c["line"]) for c in callers["calls"]] == \
        [(str(util), line_of(util, "(twice 21)"))]
    assert callers["calls"][0]["in"] == "define greet"

    listing = call_tool("list_package", {"package": "(app util)"}, ctx(session, root))
    assert [(r["name"], r["kind"], r["arglist"]) for r in listing["names"]] == \
        [("greet", "procedure", "()"), ("twice", "procedure", "(x)")]
    assert listing["names"][1]["doc"] == "Two times X."


def test_guile_load_file_places_its_warnings(project_session):
    root, session = project_session("guile-demo")
    extra = root / "src" / "app" / "extra.scm"
    extra.write_text("(define-module (app extra)\n  #:use-module (app util))\n\n"
                     "(define (thrice x)\n  (+ (twice x x) (undefined-helper x)))\n")
    loaded = call_tool("load_file", {"file_path": str(extra)}, ctx(session, root))
    assert loaded["ok"] is True, loaded
    line = line_of(extra, "(twice x x)")
    assert (f"{extra}:{line}:{col_of(extra, '(twice x x)')}: warning: possibly wrong number of "
            "arguments to `twice'") in loaded["diagnostics"]
    assert (f"{extra}:{line}:{col_of(extra, 'undefined-helper')}: warning: possibly unbound "
            "variable `undefined-helper'") in loaded["diagnostics"]
    assert session.eval("(module-name (current-module))").values == ["(guile-user)"]


def test_guile_load_file_with_a_syntax_error(project_session):
    root, session = project_session("guile-demo")
    bad = root / "src" / "app" / "bad.scm"
    bad.write_text("(define-module (app bad))\n(define (f x)\n  (let ((y)) x))\n")
    loaded = call_tool("load_file", {"file_path": str(bad)}, ctx(session, root))
    assert loaded["error"]["code"] == "LOAD_FAILED"
    assert loaded["error"]["diagnostics"] == [
        f"{bad}:{line_of(bad, '(let ((y))')}:{col_of(bad, '(let ((y))')}: error: let: bad let "
        "in form (let ((y)) x)"]


def test_clojure_load_file_find_definition_callers_and_namespace(project_session):
    root, session = project_session("clj-deps")
    core = root / "src" / "demo" / "core.clj"
    loaded = call_tool("load_file", {"file_path": str(core)}, ctx(session, root))
    assert loaded["ok"] is True and loaded["finished"] is True, loaded

    found = call_tool("find_definition", {"symbol": "demo.core/greet"}, ctx(session, root))
    assert found["ok"] is True, found
    [definition] = found["definitions"]
    assert (definition["file"], definition["line"], definition["kind"]) == \
        (str(core), line_of(core, "(defn greet"), "function")
    assert definition["form"].startswith("(defn greet")

    callers = call_tool("who_calls", {"symbol": "twice", "package": "demo.core"},
                        ctx(session, root))
    assert [(c["file"], c["line"]) for c in callers["calls"]] == \
        [(str(core), line_of(core, "(twice 21)"))]

    listing = call_tool("list_package", {"package": "demo.core"}, ctx(session, root))
    assert [(r["name"], r["arglist"], r["doc"]) for r in listing["names"]] == \
        [("greet", "([])", "A greeting that uses twice."), ("twice", "([x])", "Two times x.")]

    core_fn = call_tool("find_definition", {"symbol": "map"}, ctx(session, root))
    [inside_jar] = core_fn["definitions"]
    assert inside_jar["file"] == "clojure/core.clj" and "form" not in inside_jar

    not_a_var = call_tool("find_definition", {"symbol": "String"}, ctx(session, root))
    assert not_a_var["error"] == {"code": "NOT_FOUND",
                                  "message": "String names the class java.lang.String, not a var."}


def test_clojure_load_file_with_a_compiler_error(project_session):
    root, session = project_session("clj-deps")
    bad = root / "src" / "demo" / "bad.clj"
    bad.write_text("(ns demo.bad)\n\n(defn h [x]\n  (undefined-thing x))\n")
    loaded = call_tool("load_file", {"file_path": str(bad)}, ctx(session, root))
    assert loaded["error"]["code"] == "LOAD_FAILED"
    assert loaded["error"]["diagnostics"] == [
        f"{bad}:{line_of(bad, '(undefined-thing')}:{col_of(bad, '(undefined-thing')}: error: "
        "Unable to resolve symbol: undefined-thing in this context"]
    assert session.eval("(str *ns*)").values == ['"user"']


def test_load_commands_in_the_repl(tmp_path):
    from pty_shell import Shell

    root = tmp_path / "asdf-demo"
    shutil.copytree(PROJECTS / "asdf-demo", root)
    extra = root / "src" / "extra.lisp"
    extra.write_text('(in-package "DEMO")\n(defun tripled (y)\n  (let ((unused 1))\n'
                     '    (print :loading-extra)\n    (* 3 y)))\n(print :top-level-output)\n')
    sh = Shell(tmp_path, "--project", str(root))
    try:
        # A fresh clone is not trusted: the person trusts it from the REPL, once.
        sh.expect("ASDF project asdf-demo in")
        sh.expect("not trusted yet")
        sh.expect("CL-USER>")
        sh.submit(",trust")
        sh.expect("Trusted ASDF project asdf-demo")
        sh.expect("system demo on ASDF's registry")
        sh.expect("CL-USER>")
        sh.submit(",load-system demo")
        sh.expect("Loaded demo (no warnings).")
        sh.submit("(demo:greet)")
        sh.expect('"hello 42"')
        sh.submit(f",load {extra}")
        # the compiler's diagnostics, then the file's own output as it loads, streamed
        sh.expect(f"{extra}:{line_of(extra, '(unused 1)')}:{col_of(extra, '(unused 1)')}: "
                  "style-warning: The variable UNUSED is defined but never used.")
        sh.expect(":TOP-LEVEL-OUTPUT")
        sh.expect(f"Loaded {extra} (1 style-warning).")
        sh.submit("(demo::tripled 2)")
        sh.expect("6")
        sh.submit(",load /no/such/file.lisp")
        sh.expect("not loaded: /no/such/file.lisp: no such file: /no/such/file.lisp")
        sh.submit(",load")
        sh.expect("Usage: ,load FILE")
    finally:
        sh.close()


def test_eval_in_a_package_leaves_the_persons_current_one(sbcl_project, project_session):
    root, session = sbcl_project
    asked = []

    def confirm(code, index, total):
        asked.append(code)
        return Decision(True, code)

    gate = EvalGate("ask", confirm)
    call_tool("load_system", {"name": "demo"}, ctx(session, root))
    ran = call_tool("eval", {"code": "(package-name *package*)\n(twice 4)", "package": "demo"},
                    ctx(session, root, gate))
    assert ran["ok"] is True, ran
    assert ran["values"] == ["8"] and ran["evaluated_in"] == "demo"
    assert ran["package"] == "CL-USER"
    assert asked == [";; in demo\n(package-name *package*)\n(twice 4)"]
    missing = call_tool("eval", {"code": "1", "package": "nope"}, ctx(session, root))
    assert missing["ok"] is False and "No package named nope." in missing["error"]["message"]

    guile_root, guile = project_session("guile-demo")
    guile.eval("(use-modules (app util))")
    ran = call_tool("eval", {"code": "(define local 5) (twice local)", "package": "(app util)"},
                    ctx(guile, guile_root))
    assert ran["ok"] is True and ran["values"] == ["10"], ran
    assert guile.eval("(module-name (current-module))").values == ["(guile-user)"]
    assert guile.eval("(module-defined? (resolve-module '(app util)) 'local)").values == ["#t"]

    clj_root, clj = project_session("clj-deps")
    clj.eval("(require 'demo.core)")
    ran = call_tool("eval", {"code": "(str *ns*) (twice 3)", "package": "demo.core"},
                    ctx(clj, clj_root))
    assert ran["ok"] is True and ran["values"] == ["6"], ran
    assert clj.eval("(str *ns*)").values == ['"user"']


# ---------------------------------------------------------------- who_references
REFS = {
    "asdf-demo": ("src/refs.lisp", '(defpackage "REFS" (:use "CL"))\n(in-package "REFS")\n'
                  "(defvar *scale* 3)\n"
                  "(defun scaled (x)\n  (* *scale* x))\n(defun unrelated ()\n"
                  '  "*scale* in a string is not a reference" 1)\n', "*scale*", "refs",
                  "(defun scaled"),      # SBCL's xref knows the definition, not the use
    "guile-demo": ("src/app/refs.scm", "(define-module (app refs)\n  #:export (scale scaled))\n"
                   "(define scale 3)\n(define (scaled x)\n  (* scale x))\n(define (unrelated)\n"
                   '  ;; scale in a comment is not a reference\n  "scale" 1)\n', "scale",
                   "(app refs)", "(* scale x)"),
    "clj-deps": ("src/demo/refs.clj", "(ns demo.refs)\n(def scale 3)\n(defn scaled [x]\n"
                 "  (* scale x))\n(defn unrelated []\n  #_scale \"scale\" 1)\n", "scale",
                 "demo.refs", "(* scale x)"),
}


@pytest.mark.parametrize("name", list(REFS))
def test_who_references_finds_the_uses_of_a_global_variable(sbcl_project, project_session, name):
    """who_references: SBCL's xref (the referencing definition's line); Guile and Clojure by
    reading the loaded files' code (the use's own line), where strings, comments and discarded
    forms do not count, nor the definition itself."""
    root, session = sbcl_project if name == "asdf-demo" else project_session(name)
    rel, text, symbol, package, use = REFS[name]
    path = root / rel
    path.write_text(text)
    assert call_tool("load_file", {"file_path": str(path)}, ctx(session, root))["ok"]
    found = call_tool("who_references", {"symbol": symbol, "package": package},
                      ctx(session, root))
    assert found["ok"] is True, found
    assert [(r["file"], r["line"]) for r in found["references"]] == \
        [(str(path), line_of(path, use))], found
    missing = call_tool("who_references", {"symbol": "no-such-zz", "package": package},
                        ctx(session, root))
    assert missing["error"]["code"] == "NOT_FOUND", missing


# ---------------------------------------------------------------- every kind of definition
KINDS = {
    "asdf-demo": ("src/kinds.lisp", "kinds",
                  "(defpackage :kinds (:use :cl))\n(in-package :kinds)\n"
                  "(defmacro mac (x) `(list ,x))\n(defvar *var* 1)\n"
                  "(defclass cls () ((a :initarg :a)))\n(defgeneric gen (x))\n"
                  "(defmethod gen ((x cls)) 1)\n(defstruct stru a)\n(defconstant +k+ 3)\n",
                  {"mac": ("macro", "(defmacro mac"), "*var*": ("variable", "(defvar"),
                   "cls": ("class", "(defclass"), "stru": ("structure", "(defstruct"),
                   "+k+": ("constant", "(defconstant")}),
    "guile-demo": ("src/app/kinds.scm", "(app kinds)",
                   "(define-module (app kinds)\n  #:use-module (srfi srfi-9))\n"
                   "(define-syntax mac (syntax-rules () ((_ x) (list x))))\n(define var 1)\n"
                   "(define-record-type rec (make-rec a) rec? (a rec-a))\n",
                   {"mac": ("macro", "(define-syntax mac"), "var": ("variable", "(define var"),
                    "rec": (None, "(define-record-type")}),
    "clj-deps": ("src/demo/kinds.clj", "demo.kinds",
                 "(ns demo.kinds)\n(defmacro mac [x] `(list ~x))\n(def var 1)\n"
                 "(defprotocol Proto (pm [x]))\n(defrecord Rec [a])\n(deftype Typ [b])\n"
                 "(defmulti mm class)\n(defmethod mm String [x] 1)\n",
                 {"mac": ("macro", "(defmacro"), "var": ("variable", "(def var"),
                  "Proto": ("protocol", "(defprotocol"), "pm": ("protocol-method", "(defprotocol"),
                  "Rec": ("record", "(defrecord"), "Typ": ("type", "(deftype"),
                  "mm": ("multimethod", "(defmulti")}),
}


@pytest.mark.parametrize("name", list(KINDS))
def test_find_definition_of_every_kind(sbcl_project, project_session, name):
    """Macros, variables, constants, classes, structures, records, protocols and their methods,
    multimethods: each found at its line, with its form."""
    root, session = sbcl_project if name == "asdf-demo" else project_session(name)
    rel, package, text, expected = KINDS[name]
    path = root / rel
    path.write_text(text)
    assert call_tool("load_file", {"file_path": str(path)}, ctx(session, root))["ok"]
    for symbol, (kind, head) in expected.items():
        found = call_tool("find_definition", {"symbol": symbol, "package": package},
                          ctx(session, root))
        assert found["ok"] and found["definitions"], (symbol, found)
        first = found["definitions"][0]
        assert (first["file"], first["line"]) == (str(path), line_of(path, head)), (symbol, found)
        assert first["form"].startswith(head) and (kind is None or first["kind"] == kind), found
    if name == "asdf-demo":
        gen = call_tool("find_definition", {"symbol": "gen", "package": package},
                        ctx(session, root))["definitions"]
        assert [(d["kind"], d["line"]) for d in gen] == [
            ("generic-function", line_of(path, "(defgeneric")),
            ("method", line_of(path, "(defmethod"))]


def test_clojure_load_file_reports_reflection_warnings(project_session):
    root, session = project_session("clj-deps")
    path = root / "src" / "demo" / "reflect.clj"
    path.write_text("(ns demo.reflect)\n(set! *warn-on-reflection* true)\n"
                    "(defn size [x]\n  (.length x))\n")
    loaded = call_tool("load_file", {"file_path": str(path)}, ctx(session, root))
    assert loaded["ok"] and loaded["finished"], loaded
    assert loaded["diagnostics"] == [
        f"{path}:{line_of(path, '(.length x)')}:{col_of(path, '(.length x)')}: warning: "
        "Reflection warning: reference to field length can't be resolved."], loaded


INJECTIONS = {
    "asdf-demo": ("demo", ['#.(progn (with-open-file (s "{p}" :direction :output) (print 1 s)) '
                           "'greet)", 'greet) (with-open-file (s "{p}" :direction :output)) (']),
    "guile-demo": ("(app util)", ['#.(call-with-output-file "{p}" (lambda (o) (display 1 o)))',
                                  'greet) (call-with-output-file "{p}" display) (']),
    "clj-deps": ("demo.core", ['#=(spit "{p}" "1")', 'greet) (spit "{p}" "1") (']),
}


@pytest.mark.parametrize("name", list(INJECTIONS))
def test_project_look_ups_never_read_the_name(sbcl_project, project_session, name, tmp_path):
    """find_definition, who_calls, who_references and list_package split names and look them
    up: reader syntax in a name runs nothing and finds nothing."""
    root, session = sbcl_project if name == "asdf-demo" else project_session(name)
    package, attempts = INJECTIONS[name]
    mark = tmp_path / "pwned"
    for text in attempts:
        text = text.replace("{p}", str(mark))
        for tool in ("find_definition", "who_calls", "who_references"):
            answer = call_tool(tool, {"symbol": text, "package": package}, ctx(session, root))
            assert answer["ok"] is False and answer["error"]["code"] == "NOT_FOUND", (tool, answer)
        listed = call_tool("list_package", {"package": text}, ctx(session, root))
        assert listed["ok"] is False, listed
    assert not mark.exists(), "a look-up ran the model's text"


FAKE_QUICKLISP = """(require :asdf)
(defpackage "QL" (:use "CL") (:export "QUICKLOAD"))
(defvar ql::*fetched* '())
(defun ql:quickload (name &key silent)
  "Stands for Quicklisp: the release is 'downloaded' (defined in memory) and loaded."
  (declare (ignore silent))
  (push (string-downcase name) ql::*fetched*)
  (eval `(asdf:defsystem ,(string-downcase name)))
  (asdf:load-system name)
  (list name))
"""


@pytest.mark.parametrize("with_quicklisp", [True, False], ids=["quicklisp", "bare"])
def test_load_system_fetches_missing_dependencies_with_quicklisp(tmp_path, monkeypatch,
                                                                with_quicklisp):
    """With Quicklisp installed, a dependency ASDF cannot find is quickloaded (as quickload
    does), then the system loads with its own diagnostics; without, the missing one is named."""
    home = tmp_path / "home"
    home.mkdir()
    if with_quicklisp:
        (home / "quicklisp").mkdir()
        (home / "quicklisp" / "setup.lisp").write_text(FAKE_QUICKLISP)
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "asdf-demo"
    shutil.copytree(PROJECTS / "asdf-demo", root)
    asd = root / "demo.asd"
    asd.write_text(asd.read_text().replace(':serial t', ':serial t\n  :depends-on ("lispshell-fake-dep")', 1))
    found = project.find(root, search_parents=False)
    assert ("Quicklisp" in found.summary) is with_quicklisp
    session = make_session("sbcl", project.apply(found, config_mod.load(), "sbcl"))
    session.start()
    try:
        loaded = call_tool("load_system", {"name": "demo"}, ctx(session, root))
        if with_quicklisp:
            assert loaded["ok"] and loaded["finished"], loaded
            assert session.eval("ql::*fetched*").values == ['("lispshell-fake-dep")']
            assert session.eval("(demo:greet)").values == ['"hello 42"']
        else:
            assert loaded["ok"] is False and "lispshell-fake-dep" in loaded["error"]["message"], \
                loaded
    finally:
        session.close()


def test_load_system_lists_only_its_own_diagnostics(tmp_path):
    """A dependency compiled on the way (alexandria's "could not stack allocate" notes) is not
    the person's code: its diagnostics are counted, not listed as theirs (issue 23.13)."""
    dep = tmp_path / "deps" / "noisy"
    dep.mkdir(parents=True)
    (dep / "noisy.asd").write_text('(asdf:defsystem "noisy" :components ((:file "noisy")))\n')
    (dep / "noisy.lisp").write_text(
        "(defpackage :noisy (:use :cl) (:export #:add))\n(in-package :noisy)\n"
        "(defun add (a b) (declare (optimize speed)) (+ a b))\n")
    root = tmp_path / "mine"
    (root / "src").mkdir(parents=True)
    (root / "mine.asd").write_text('(asdf:defsystem "mine" :depends-on ("noisy") '
                                   ':components ((:file "src/mine")))\n')
    own = root / "src" / "mine.lisp"
    own.write_text("(defun mine-sum (x)\n  (let ((unused 1))\n    (noisy:add x x)))\n")
    session = make_session("sbcl", config_mod.load())
    session.start()
    try:
        session.eval("(require :asdf)")
        registry = f'(progn (setf asdf:*central-registry* (list #p"{dep}/" #p"{root}/")) t)'
        assert session.eval(registry).values == ["T"]
        loaded = call_tool("load_system", {"name": "mine"}, ctx(session, root))
        assert loaded["ok"] and loaded["finished"], loaded
        assert loaded["diagnostics"] == [
            f"{own}:{line_of(own, '(unused 1)')}:{col_of(own, '(unused 1)')}: style-warning: "
            "The variable UNUSED is defined but never used."], loaded
        assert loaded["summary"] == "1 style-warning"
        assert loaded["dependencies"].startswith(
            tuple(f"{n} compiler diagnostics from the dependencies" for n in range(1, 20))), loaded
        assert session.eval("(mine-sum 2)").values == ["4"]
    finally:
        session.close()


@pytest.mark.parametrize("lisp,suffix,code", [
    ("sbcl", ".lisp", "(defun ok () 1)\n\n(defun bad ()\n  (list 1 2)\n\n(defun later () 3)\n"),
    ("guile", ".scm", "(define (ok) 1)\n\n(define (bad)\n  (list 1 2)\n\n(define (later) 3)\n"),
    ("clojure", ".clj", "(defn ok [] 1)\n\n(defn bad []\n  (list 1 2)\n\n(defn later [] 3)\n"),
])
def test_load_of_a_file_that_ends_inside_a_form_names_the_open_form(tmp_path, lisp, suffix,
                                                                   code):
    """Each Lisp says only that the file ended (SBCL names its stream, Guile the end, Clojure
    a line): the diagnostic's path:line:col is the opener left open, with where its closer
    belongs (issue 23.13)."""
    path = tmp_path / f"open{suffix}"
    path.write_text(code)
    session = make_session(lisp, config_mod.load())
    session.start()
    try:
        loaded = call_tool("load_file", {"file_path": str(path)}, ctx(session, tmp_path))
    finally:
        session.close()
    assert loaded["ok"] is False and loaded["error"]["code"] == "LOAD_FAILED", loaded
    assert loaded["error"]["diagnostics"] == [
        f"{path}:3:1: error: read error: end of file inside the form whose '(' is never closed "
        "(the missing closer most likely belongs at line 4, column 13)"], loaded
