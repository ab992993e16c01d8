"""The live-image tools on real SBCL, Guile and Clojure.

describe and symbol_value must never evaluate what the model sends: every injection payload
below would create a file if any of it ran, and each test checks the file system afterwards.
"""
from __future__ import annotations

import pytest

from lispshell import config as config_mod
from lispshell.lisp.session import make_session
from lispshell.tools.gate import Decision, EvalGate
from lispshell.tools.registry import ToolContext, call_tool

LISPS = ("sbcl", "guile", "clojure")


@pytest.fixture(scope="module")
def sessions():
    cfg = config_mod.load()
    started = {}
    for lisp in LISPS:
        started[lisp] = make_session(lisp, cfg)
        started[lisp].start(wait=False)  # the JVM boots while SBCL and Guile do
    yield started
    for s in started.values():
        s.close()


def ctx_for(session, gate=None):
    return ToolContext(session=lambda: session, gate=gate or EvalGate("ask"), eval_timeout=20.0)


def deleters(lisp: str, victim: str) -> list[str]:
    """The brief's own examples, aimed at a file that must survive."""
    v = victim
    if lisp == "sbcl":
        return [f'#.(delete-file "{v}")', f'foo) (delete-file "{v}") (']
    if lisp == "clojure":
        return [f'#=(clojure.java.io/delete-file "{v}")', f'foo) (clojure.java.io/delete-file "{v}") (',
                f'#=(java.io.File/.delete (java.io.File. "{v}"))']
    return [f'#.(delete-file "{v}")', f'foo) (delete-file "{v}") (']


def payloads(lisp: str, path: str) -> list[str]:
    p = path
    if lisp == "sbcl":
        return [
            f'#.(with-open-file (s "{p}" :direction :output) (write-line "x" s))',
            f'foo) (with-open-file (s "{p}" :direction :output) (write-line "x" s)) (',
            f'|foo) (with-open-file (s "{p}" :direction :output)|',
            f'#+#.(progn (open "{p}" :direction :output) :sbcl) car',
            f'car" (with-open-file (s "{p}" :direction :output) (write-line "x" s)) "',
            f'car\\" (open "{p}" :direction :output) \\"',
            f'(open "{p}" :direction :output)',
            f'cl-user::#.(open "{p}" :direction :output)',
            f'#S(pathname :name "{p}")',
        ]
    if lisp == "clojure":
        return [
            f'#=(spit "{p}" "x")',
            f'#=(clojure.core/spit "{p}" "x")',
            f'foo) (spit "{p}" "x") (',
            f'#java.io.FileWriter["{p}"]',
            f'map" (spit "{p}" "x") "',
            f'(spit "{p}" "x")',
            f'#_foo #=(spit "{p}" "x")',
            f'#lispshell/boom "{p}"',
        ]
    return [
        f'#.(call-with-output-file "{p}" (lambda (port) (display 1 port)))',
        f'foo) (call-with-output-file "{p}" (lambda (port) (display 1 port))) (',
        f'car" (call-with-output-file "{p}" (lambda (port) (display 1 port))) "',
        f'(call-with-output-file "{p}" (lambda (port) (display 1 port)))',
        '#%boom',  # a reader extension the person defined, which writes the file when read
        '#{car}# #%boom',
    ]


@pytest.mark.parametrize("lisp", LISPS)
def test_injection_payloads_do_nothing(sessions, lisp, tmp_path):
    session = sessions[lisp]
    target = tmp_path / "pwned.txt"
    if lisp == "guile":  # a person's own reader extension that has a side effect when read
        r = session.eval(f'(read-hash-extend #\\% (lambda (c port) (call-with-output-file '
                         f'"{target}" (lambda (p) (display 1 p))) (quote boom)))')
        assert r.error is None
    if lisp == "clojure":  # and a data reader with a side effect
        r = session.eval(f'(alter-var-root (var *data-readers*) assoc (quote lispshell/boom) '
                         f'(fn [x] (spit "{target}" "x") x))')
        assert r.error is None
    ctx = ctx_for(session)
    victim = tmp_path / "x"
    victim.write_text("keep me")
    for payload in payloads(lisp, str(target)) + deleters(lisp, str(victim)):
        for tool in ("describe", "symbol_value"):
            result = call_tool(tool, {"symbol": payload}, ctx)
            assert result["ok"] is False, (tool, payload, result)
            assert result["error"]["code"] in ("BAD_NAME", "NOT_SYMBOL", "UNKNOWN"), result
            assert not target.exists() and victim.exists(), (tool, payload)
        result = call_tool("macroexpand", {"form": payload}, ctx)
        assert not target.exists() and victim.exists(), ("macroexpand", payload, result)
    assert session.eval("(+ 40 2)").values == ["42"]  # alive, and not left in a debugger


DEFINE = {"sbcl": "(defparameter *answer* 42)", "guile": "(define answer 42)",
          "clojure": "(def answer 42)"}
NAME = {"sbcl": "*answer*", "guile": "answer", "clojure": "answer"}
UNBOUND = {"sbcl": "(defvar *no-value*)", "guile": "(define-once no-value (if #f #f))",
           "clojure": "(declare no-value)"}
FUNCTION = {"sbcl": "mapcar", "guile": "map", "clojure": "map"}
QUALIFIED = {"sbcl": ("sb-ext:*posix-argv*", None), "guile": ("match", "(ice-9 match)"),
             "clojure": ("clojure.string/join", None)}
MACRO_FORM = {"sbcl": "(when a b)", "guile": "(when a b)", "clojure": "(when a b)"}


@pytest.mark.parametrize("lisp", LISPS)
def test_describe_and_value_of_real_names(sessions, lisp):
    session = sessions[lisp]
    ctx = ctx_for(session)
    assert session.eval(DEFINE[lisp]).error is None
    value = call_tool("symbol_value", {"symbol": NAME[lisp]}, ctx)
    assert value["ok"] and value["value"].strip() == "42", value

    described = call_tool("describe", {"symbol": FUNCTION[lisp]}, ctx)
    assert described["ok"] and described["description"], described

    name, package = QUALIFIED[lisp]
    args = {"symbol": name, **({"package": package} if package else {})}
    qualified = call_tool("describe", args, ctx)
    assert qualified["ok"], qualified

    unknown = call_tool("describe", {"symbol": "no-such-thing-here"}, ctx)
    assert not unknown["ok"] and unknown["error"]["code"] == "UNKNOWN"
    assert "no-such-thing-here" in unknown["error"]["message"].lower()

    function_value = call_tool("symbol_value", {"symbol": FUNCTION[lisp]}, ctx)
    if lisp == "sbcl":  # a function name has no value in a Lisp-2
        assert function_value["error"]["code"] == "UNBOUND"

    bad_package = call_tool("describe", {"symbol": "x", "package": "no-such-package-xyz"}, ctx)
    assert bad_package["error"]["code"] == "UNKNOWN_PACKAGE"

    expansion = call_tool("macroexpand", {"form": MACRO_FORM[lisp]}, ctx)
    assert expansion["ok"] and "if" in expansion["expansion"], expansion

    found = call_tool("apropos", {"pattern": "string-up" if lisp != "clojure" else "upper-case"}, ctx)
    assert found["ok"] and found["symbols"], found


def test_unbound_variable_is_said_plainly(sessions):
    session = sessions["sbcl"]
    assert session.eval(UNBOUND["sbcl"]).error is None
    result = call_tool("symbol_value", {"symbol": "*no-value*"}, ctx_for(session))
    assert result["error"]["code"] == "UNBOUND" and "unbound" in result["error"]["message"]


def test_clojure_unbound_var(sessions):
    session = sessions["clojure"]
    assert session.eval(UNBOUND["clojure"]).error is None
    result = call_tool("symbol_value", {"symbol": "no-value"}, ctx_for(session))
    assert result["error"]["code"] == "UNBOUND"


class Gate:
    def __init__(self, decision):
        self.decision = decision
        self.asked = []

    def __call__(self, code, index, total):
        self.asked.append(code)
        return self.decision(code)


def test_eval_is_gated_refused_edited_and_capped(sessions, tmp_path):
    session = sessions["sbcl"]
    target = tmp_path / "made.txt"
    code = f'(with-open-file (s "{target}" :direction :output) (write-line "x" s))'

    refuse = Gate(lambda c: Decision(False, c, "not today"))
    result = call_tool("eval", {"code": code}, ctx_for(session, EvalGate("ask", refuse)))
    assert refuse.asked == [code] and not target.exists()
    assert result["error"]["code"] == "DECLINED"
    assert result["error"]["message"] == "The person declined to evaluate this code. Reason: not today"

    edit = Gate(lambda c: Decision(True, "(+ 1 2)", edited=True))
    result = call_tool("eval", {"code": code}, ctx_for(session, EvalGate("ask", edit)))
    assert result["values"] == ["3"] and result["ran"] == "(+ 1 2)" and not target.exists()
    assert "edited" in result["edited"]

    ctx = ctx_for(session, EvalGate("yolo"))
    ctx.eval_timeout = 1.0
    slow = call_tool("eval", {"code": "(sleep 10)"}, ctx)
    assert slow["error"]["code"] == "TIMEOUT" and "interrupted" in slow["error"]["message"]

    ctx.output_cap = 1000
    ctx.eval_timeout = 20.0
    loud = call_tool("eval", {"code": '(dotimes (i 2000) (write-line "0123456789"))'}, ctx)
    assert "not kept for you" in loud["output_cut"] and len(loud["output"]) <= 1100

    from lispshell.tools.live import eval_result
    ctx.output_cap = 100000
    long = session.eval('(dotimes (i 3000) (format t "line ~d~%" i))')
    recorded = eval_result(long, text_cap=4000)
    assert len(recorded["output"]) < 4100 and "cut from the middle" in recorded["output_cut"]
    assert recorded["output"].startswith("line 0") and "line 2999" in recorded["output"]

    error = call_tool("eval", {"code": '(error "boom ~a" 7)'}, ctx)
    assert error["ok"] is False and error["error"]["code"] == "LISP_ERROR"
    assert "boom 7" in error["error"]["message"]
    assert session.eval("(+ 1 1)").values == ["2"]


def test_eval_refuses_incomplete_code_before_asking(sessions):
    asked = Gate(lambda c: Decision(True, c))
    result = call_tool("eval", {"code": "(+ 1 (* 2"}, ctx_for(sessions["sbcl"], EvalGate("ask", asked)))
    assert result["error"]["code"] == "INCOMPLETE" and asked.asked == []


@pytest.mark.parametrize("lisp", ["sbcl", "guile", "clojure"])
def test_eval_of_more_than_a_megabyte_is_refused_at_once(sessions, lisp):
    """Sending 8 MB would overrun the eval's time limit (Guile reads it for seconds): refused
    before the person is asked, the image untouched."""
    asked = Gate(lambda c: Decision(True, c))
    code = "(list " + "1 " * (1024 * 1024) + ")"
    result = call_tool("eval", {"code": code}, ctx_for(sessions[lisp], EvalGate("ask", asked)))
    assert result["error"]["code"] == "TOO_LARGE" and asked.asked == []
    assert "load_file" in result["error"]["message"]
    assert sessions[lisp].eval("(+ 1 1)").values == ["2"]


@pytest.mark.parametrize("lisp,first,last", [("sbcl", "(* 6 7)", "*"), ("clojure", "(* 6 7)", "*1")])
def test_look_ups_leave_the_persons_repl_history_alone(sessions, lisp, first, last):
    """After the person's `(* 6 7)`, the model's describe/symbol_value must not become `*`."""
    session = sessions[lisp]
    assert session.eval(first).values == ["42"]
    ctx = ctx_for(session)
    function, variable = (("car", "*print-base*") if lisp == "sbcl"
                          else ("clojure.core/first", "clojure.core/*clojure-version*"))
    assert call_tool("describe", {"symbol": function}, ctx)["ok"] is True
    assert call_tool("symbol_value", {"symbol": variable}, ctx)["ok"] is True
    assert session.eval(last).values == ["42"]


@pytest.mark.parametrize("lisp", ["sbcl", "guile"])
def test_the_helpers_load_silently_in_a_fresh_image(lisp):
    """The first look-up of an image defines the helpers: nothing of that reaches the screen
    (`,inspect` shows what its form printed, so SBCL's undefined-function warnings for a helper
    defined further down did)."""
    from lispshell.lisp.introspect import MARK, call_form
    from lispshell.lisp.session import LispSession

    with LispSession(lisp) as session:
        look = call_form(lisp, "inspect-form", "(list 1 2)", "")
        out = session.eval(look.form).output
        assert out.startswith(look.mark) and look.mark.startswith(MARK), out[:600]
        assert "\n1\t2\n" in out or "\n0\t1\n" in out, out


def test_sbcl_helpers_of_an_older_lispshell_are_loaded_again():
    """An image lispshell connects to may hold the helpers an older lispshell defined: a helper
    function it lacks is defined by loading them again, quietly."""
    from lispshell.lisp.introspect import call_form
    from lispshell.lisp.session import LispSession

    with LispSession("sbcl") as session:
        look = call_form("sbcl", "inspect-form", "(list 1 2)", "")
        assert session.eval(look.form).output.startswith(look.mark)
        assert session.eval("(fmakunbound (find-symbol \"INSPECT-PART\" "
                            "\"LISPSHELL.INTROSPECT\"))").error is None
        look = call_form("sbcl", "inspect-part", "1", "")
        out = session.eval(look.form).output
        assert out.startswith(look.mark) and "warning" not in out.lower(), out[:600]


def test_guile_primitives_have_their_documentation():
    """string-append, hash-ref... are documented in the file (ice-9 documentation) reads:
    the toolbar's hint and describe show it."""
    from lispshell.lisp.introspect import call_form
    from lispshell.lisp.session import LispSession

    def ask(name):
        look = call_form("guile", "arglist", name, "")
        return look.answer(session.eval(look.form).output)

    with LispSession("guile") as session:
        hint = ask("hash-ref")
        assert hint == ("ok", "(hash-ref table key #:optional dflt)\nLook up KEY in the hash table TABLE, "
                              "and return the value (if any)"), hint
        # the hint's first line is what repair reads arities from
        from lispshell.syntax.shapes import lambda_list_arity
        for name, arity in (("hash-ref", (2, 3)), ("string-index", (2, 4)),
                            ("string-append", (0, None)), ("list-tail", (2, 2))):
            answer = ask(name)
            assert lambda_list_arity(answer[1].split("\n")[0], "scheme") == arity, answer
        own = session.eval('(define (twice x) "Twice X." (* 2 x))')
        assert own.error is None
        hint = ask("twice")
        assert hint == ("ok", "(twice x)\nTwice X."), hint      # the names, not (twice a)
        assert session.eval("(define* (opt a #:optional (b 2) #:key c) a) "
                            "(define lam (lambda (p . q) p))").error is None
        for name, arglist in (("opt", "(opt a #:optional (b 2) #:key c)"), ("lam", "(lam p . q)")):
            hint = ask(name)
            assert hint == ("ok", arglist + "\n"), hint
        ctx = ToolContext(session=lambda: session, eval_timeout=20.0)
        described = call_tool("describe", {"symbol": "string-append"}, ctx)
        assert "arguments: (string-append . args)\ndoc: - Scheme Procedure: string-append" \
            in described["description"], described
        described = call_tool("describe", {"symbol": "twice"}, ctx)
        assert "arguments: (twice x)\ndoc: Twice X." in described["description"], described
