"""LispSession against real SBCL, Guile and Clojure: values, output, errors, REPL variables,
packages, unicode, standard input, completions. One child per Lisp for the whole module."""
from __future__ import annotations

import threading

import pytest

from conftest import started_sessions

from lispshell import config
from lispshell.lisp.session import LispSession, LispStartError, make_session

LISPS = ["sbcl", "guile", "clojure"]


@pytest.fixture(scope="module")
def sessions():
    """sessions(name): this module's one started session for that Lisp."""
    yield from started_sessions()


@pytest.fixture(params=LISPS)
def lisp(request, sessions):
    return sessions(request.param)


# Per dialect: code for the same idea.
CODE = {
    "sbcl": dict(add="(+ 1 2)", print5='(progn (princ "hi there") 5)',
                 div0="(/ 1 0)", div0_type="DIVISION-BY-ZERO",
                 define="(defun core-sq (x) (* x x))", call="(core-sq 12)",
                 stdin="(read-line)", uni='(concatenate (quote string) "héllo " "☃🐍")',
                 uni_value='"héllo ☃🐍"', print_uni='(progn (write-string "ünïcødé ☃🐍") (length "🐍"))'),
    "guile": dict(add="(+ 1 2)", print5='(begin (display "hi there") 5)',
                  div0="(/ 1 0)", div0_type="numerical-overflow",
                  define="(define (core-sq x) (* x x))", call="(core-sq 12)",
                  stdin="(read-char)", uni='(string-append "héllo " "☃🐍")',
                  uni_value='"héllo ☃🐍"', print_uni='(begin (display "ünïcødé ☃🐍") (string-length "🐍"))'),
    "clojure": dict(add="(+ 1 2)", print5='(do (print "hi there") 5)',
                    div0="(/ 1 0)", div0_type="java.lang.ArithmeticException",
                    define="(defn core-sq [x] (* x x))", call="(core-sq 12)",
                    stdin="(read-line)", uni='(str "héllo " "☃🐍")',
                    uni_value='"héllo ☃🐍"', print_uni='(do (print "ünïcødé ☃🐍") (.codePointCount "🐍" 0 2))'),
}


def test_value(lisp):
    r = lisp.eval(CODE[lisp.lisp]["add"])
    assert r.ok, r
    assert r.values == ["3"] and r.output == "" and r.error is None


def test_output_is_kept_apart_from_the_value(lisp):
    r = lisp.eval(CODE[lisp.lisp]["print5"])
    assert r.ok
    assert r.output == "hi there"
    assert r.values == ["5"]


def test_several_forms_give_the_last_forms_values(lisp):
    code = {"sbcl": "(defparameter *core-a* 40) (+ *core-a* 2)",
            "guile": "(define core-a 40) (+ core-a 2)",
            "clojure": "(def core-a 40) (+ core-a 2)"}[lisp.lisp]
    assert lisp.eval(code).values == ["42"]


@pytest.mark.parametrize("name,code,values", [
    ("sbcl", "(floor 7 2)", ["3", "1"]),
    ("sbcl", "(values)", []),
    ("sbcl", "(values 1 \"two\" :three)", ["1", '"two"', ":THREE"]),
    ("guile", "(values 1 \"two\" 'three)", ["1", '"two"', "three"]),
    ("guile", "(values)", []),
    ("guile", "(floor/ 7 2)", ["3", "1"]),
])
def test_multiple_values(sessions, name, code, values):
    assert sessions(name).eval(code).values == values


def test_error_is_reported_and_the_next_form_works(lisp):
    c = CODE[lisp.lisp]
    r = lisp.eval(c["div0"])
    assert not r.ok and r.values == []
    assert r.error.type == c["div0_type"]
    assert r.error.message
    assert not r.interrupted and not r.timed_out and not r.restarted
    assert lisp.eval(c["add"]).values == ["3"]


def test_read_errors_do_not_desynchronise(lisp):
    r = lisp.eval("(+ 1 2")
    assert r.error is not None
    r = lisp.eval(")")
    assert r.error is not None
    assert lisp.eval(CODE[lisp.lisp]["add"]).values == ["3"]


def test_backtrace_names_the_failing_function(lisp):
    code = {"sbcl": '(defun core-inner () (error "deep trouble")) (defun core-outer () (core-inner) 1) (core-outer)',
            "guile": '(define (core-inner) (error "deep trouble")) (core-inner)',
            "clojure": '(defn core-inner [] (throw (ex-info "deep trouble" {:k 1}))) (defn core-outer [] (core-inner) 1) (core-outer)'}
    r = lisp.eval(code[lisp.lisp])
    assert "deep trouble" in r.error.message
    if lisp.lisp == "sbcl":
        assert any("CORE-INNER" in f for f in r.error.backtrace)
        assert any("CORE-OUTER" in f for f in r.error.backtrace)
    if lisp.lisp == "clojure":
        assert r.error.type == "clojure.lang.ExceptionInfo" and "{:k 1}" in r.error.message
        assert any("core-inner" in f for f in r.error.backtrace)


def test_definitions_persist(lisp):
    c = CODE[lisp.lisp]
    assert lisp.eval(c["define"]).ok
    assert lisp.eval(c["call"]).values == ["144"]


def test_unicode_in_code_values_and_output(lisp):
    c = CODE[lisp.lisp]
    assert lisp.eval(c["uni"]).values == [c["uni_value"]]
    r = lisp.eval(c["print_uni"])
    assert r.output == "ünïcødé ☃🐍"
    assert r.values == ["1"]


def test_code_reading_standard_input_sees_end_of_file(lisp):
    r = lisp.eval(CODE[lisp.lisp]["stdin"])
    if lisp.lisp == "sbcl":
        assert r.error.type == "END-OF-FILE"
    elif lisp.lisp == "guile":
        assert r.values == ["#<eof>"]
    else:
        assert r.values == ["nil"]
    assert lisp.eval("(+ 40 2)").values == ["42"]


def test_sbcl_never_enters_the_debugger(sessions):
    lisp = sessions("sbcl")
    for code in ["(break)", "(invoke-debugger (make-condition 'simple-error :format-control \"x\"))",
                 "(cerror \"go on\" \"continuable\")", "(signal 'error)"]:
        r = lisp.eval(code)
        assert r.error is not None, code
        assert lisp.eval("(+ 1 1)").values == ["2"]
    # A warning is printed output, not an error.
    r = lisp.eval('(progn (warn "careful") 7)')
    assert r.values == ["7"] and "careful" in r.output


def test_guile_errors_never_open_the_nested_debugger(sessions):
    lisp = sessions("guile")
    for code in ['(error "boom" 1)', "(car 5)", "undefined-variable-here", "(throw 'my-key 1 2)",
                 "(raise-exception 42)"]:
        r = lisp.eval(code)
        assert r.error is not None, code
        assert "[1]>" not in r.output
        assert lisp.eval("(+ 1 1)").values == ["2"]
    assert lisp.eval('(error "boom" 1 2)').error.message == "boom 1 2"


def test_cl_repl_variables(sessions):
    lisp = sessions("sbcl")
    lisp.eval("(+ 1 2)")
    lisp.eval("(* 10 10)")
    assert lisp.eval("(list * **)").values == ["(100 3)"]
    assert lisp.eval("***").values == ["3"]
    lisp.eval("(floor 7 2)")
    assert lisp.eval("/").values == ["(3 1)"]


def test_clojure_repl_variables(sessions):
    lisp = sessions("clojure")
    lisp.eval("(+ 1 2)")
    lisp.eval("(* 10 10)")
    assert lisp.eval("[*1 *2]").values == ["[100 3]"]
    assert lisp.eval("*3").values == ["3"]
    lisp.eval('(throw (Exception. "kept in *e"))')
    assert lisp.eval("(.getMessage *e)").values == ['"kept in *e"']


def test_package_changes_are_tracked(lisp):
    name = lisp.lisp
    start = {"sbcl": "CL-USER", "guile": "(guile-user)", "clojure": "user"}[name]
    assert lisp.package == start
    switch = {"sbcl": '(defpackage "CORE-PKG" (:use "CL")) (in-package "CORE-PKG")',
              "guile": "(define-module (core pkg))",
              "clojure": "(ns core.pkg)"}[name]
    expect = {"sbcl": "CORE-PKG", "guile": "(core pkg)", "clojure": "core.pkg"}[name]
    define = {"sbcl": "(defvar *here* 1)", "guile": "(define here 1)", "clojure": "(def here 1)"}[name]
    back = {"sbcl": "(in-package :cl-user)",
            "guile": "(set-current-module (resolve-module '(guile-user)))",
            "clojure": "(in-ns 'user)"}[name]
    r = lisp.eval(switch)
    assert r.ok and r.package == expect and lisp.package == expect
    assert lisp.eval(define).ok
    r = lisp.eval(back)
    assert r.package == start and lisp.package == start
    qualified = {"sbcl": "core-pkg::*here*", "guile": "(@@ (core pkg) here)", "clojure": "core.pkg/here"}[name]
    assert lisp.eval(qualified).values == ["1"]


def test_completions_come_from_the_live_image(lisp):
    name = lisp.lisp
    define = {"sbcl": "(defun zqx-completion-target () 1)",
              "guile": "(define (zqx-completion-target) 1)",
              "clojure": "(defn zqx-completion-target [] 1)"}[name]
    lisp.eval(define)
    assert "zqx-completion-target" in lisp.completions("zqx-comp")
    assert lisp.completions("zqx-no-such-prefix") == []
    builtin = {"sbcl": ("mapc", "mapcar"), "guile": ("string-app", "string-append"),
               "clojure": ("mapc", "mapcat")}[name]
    assert builtin[1] in lisp.completions(builtin[0])


def test_completions_answer_empty_at_once_while_busy(lisp):
    loop = {"sbcl": "(sleep 0.6)", "guile": "(usleep 600000)", "clojure": "(Thread/sleep 600)"}[lisp.lisp]
    results = {}
    t = threading.Thread(target=lambda: results.setdefault("r", lisp.eval(loop)))
    t.start()
    try:
        for _ in range(200):
            if lisp.busy:
                break
            threading.Event().wait(0.005)
        assert lisp.busy
        assert lisp.completions("ma") == []
    finally:
        t.join()
    assert results["r"].ok
    assert lisp.completions("ma")  # and answers again once idle


def test_make_session_uses_the_config(tmp_path, monkeypatch):
    monkeypatch.setenv("LISPSHELL_CONFIG_DIR", str(tmp_path))
    cfg = config.load({"session": {"eval_timeout": 7.5, "output_cap": 1000}})
    s = make_session("guile", cfg)
    assert s.command[0] == "guile" and s.eval_timeout == 7.5 and s.output_cap == 1000
    with pytest.raises(ValueError):
        make_session("cobol", cfg)


def test_a_command_that_cannot_start_is_a_clear_error():
    s = LispSession("sbcl", ["/nonexistent/sbcl-binary"])
    with pytest.raises(LispStartError) as info:
        s.start()
    assert "sbcl" in str(info.value)
    s.close()
    s = LispSession("sbcl", ["sh", "-c", "echo not a lisp; exit 3"])
    with pytest.raises(LispStartError) as info:
        s.eval("(+ 1 2)")
    assert "not a lisp" in str(info.value)
    s.close()


def test_history_false_leaves_the_repl_variables_alone(sessions):
    cl = sessions("sbcl")
    cl.eval("(+ 1 2)")
    r = cl.eval("(list 'look-up)", history=False)
    assert r.values == ["(LOOK-UP)"]
    assert cl.eval("*").values == ["3"]
    clj = sessions("clojure")
    clj.eval("(+ 1 2)")
    assert clj.eval("(str :look-up)", history=False).values == ['":look-up"']
    assert clj.eval("(throw (Exception. \"quiet\"))", history=False).error is not None
    assert clj.eval("*1").values == ["3"]
    assert clj.eval("(some-> *e .getMessage)").values != ['"quiet"']
    assert sessions("guile").eval("(+ 1 2)", history=False).values == ["3"]


def test_an_error_in_an_sbcl_thread_ends_only_that_thread(sessions):
    lisp = sessions("sbcl")
    pid = lisp.pid
    r = lisp.eval('(sb-thread:join-thread (sb-thread:make-thread (lambda () (error "in a thread")) '
                  ':name "worker") :default :failed)')
    assert r.values[0] == ":FAILED"
    assert "in a thread" in r.output
    assert lisp.pid == pid and lisp.eval("(+ 1 2)").values == ["3"]


def test_a_lone_surrogate_in_code_does_not_desynchronise(lisp):
    r = lisp.eval('"a\ud800b"')
    assert r.values == ['"a?b"']
    assert lisp.eval("(+ 1 2)").values == ["3"]
