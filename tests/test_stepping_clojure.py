"""Clojure `,step` (issue 41, docs/debugging.md): the function instrumented from its source, a
level before each of its forms, its value said after; for the person in a real pty, and
through the session on a child and over nREPL. One image per place, shared by its tests (a JVM
starts slowly)."""
from __future__ import annotations


import pytest

from lispshell.lisp.session import LispSession
from pty_shell import Shell, steps as step_lines

PROMPT = "user>"
F = '(defn f [x] (println "a") (let [y (* x 2)] (+ y 1)) (str x))'
SUM = "(defn sum-to [n] (loop [i 0 acc 0] (if (< i n) (recur (inc i) (+ acc (* i 1))) acc)))"
G = "(defn g [x] (-> x inc (* 2)))"
BOOM = '(defn boom [x] (println "before") (/ x 0))'
FACT = "(defn fact [n] (if (<= n 1) 1 (* n (fact (dec n)))))"
# The functions' classes, as a function defined by defn has them: none left instrumented.
PLAIN = ("(mapv (fn [v] (boolean (:lispshell.step/stepped (meta @v)))) "
         "[#'f #'sum-to #'g #'boom #'fact])")


@pytest.fixture(scope="module")
def clojure_shell(tmp_path_factory):
    sh = Shell(tmp_path_factory.mktemp("step"), "--lisp", "clojure", "--no-llm", "--no-project")
    sh.expect(PROMPT, timeout=90)
    for form in (F, SUM, G, BOOM, FACT):
        sh.submit(form)
        sh.expect("#'user/")
    yield sh
    sh.close()


def test_step_shows_each_forms_value_of_a_three_form_defn(clojure_shell):
    sh = clojure_shell
    start = len(sh.text())
    sh.submit(",step (f 3)")
    sh.expect("; stepping (user/f 3)")
    sh.expect('; step: (println "a")')
    sh.expect("[1] " + PROMPT)
    sh.submit(",n")
    sh.expect('; (println "a") => nil')
    sh.expect("; step: (let [y (* x 2)] (+ y 1))")
    sh.submit(",n")
    sh.expect("; (let [y (* x 2)] (+ y 1)) => 7")
    sh.expect("; step: (str x)")
    sh.submit(",n")
    # (the call returns what its last form did: said in one line)
    sh.expect('; (str x) => "3" ... (user/f 3) => "3"')
    sh.expect('\n"3"\n' + PROMPT)
    steps = step_lines(sh.text()[start:], 'user>')
    assert len(steps) == 4, steps
    for printed in steps:
        assert len(printed) <= 4, printed       # the command's line and at most three more
    sh.submit(PLAIN)
    sh.expect("[false false false false false]")


def test_step_into_out_and_a_name_armed_for_its_next_call(clojure_shell):
    sh = clojure_shell
    sh.submit(",step f")
    sh.expect("; its next call steps")
    sh.expect("#'user/f")
    sh.submit("(f 4)")
    sh.expect('; step: (println "a")')
    sh.submit(",n")
    sh.expect("; step: (let [y (* x 2)] (+ y 1))")
    sh.submit(",s")                             # into the let: its forms one by one
    sh.expect("; step: (* x 2)")
    sh.submit(",s")
    sh.expect("; (* x 2) => 8")
    sh.expect("; step: (+ y 1)")
    sh.submit(",frame 0")                       # frame 0: the call, with the locals here
    sh.expect("Frame 0: (user/f 4)")
    sh.expect("y = 8")
    sh.submit("(* y 100)")                      # the locals are bound at a step
    sh.expect("\n800\n")
    sh.submit(",o")                             # out: the rest of f runs unstepped
    sh.expect('(user/f 4) => "4"')
    sh.expect('\n"4"\n' + PROMPT)
    sh.submit("(f 5)")                          # one call, one stepping: f is itself again
    sh.expect('a\n"5"\n' + PROMPT)


def test_recur_macros_errors_and_continue_while_stepping(clojure_shell):
    sh = clojure_shell
    sh.submit(",step (sum-to 3)")               # the if that recurs cannot stop: said
    sh.expect("; user/sum-to: 3 step points; not stopped at (it recurs): (if (< i n)")
    sh.expect("; step: (loop [i 0 acc 0]")
    sh.submit(",s")
    sh.expect("; step: (< i n)")
    sh.submit(",s")
    sh.expect("; (< i n) => true")
    sh.expect("; step: (* i 1)")
    sh.submit(",s")
    sh.expect("; step: (< i n)")                # the loop went round: recur still works
    sh.submit(",c")
    sh.expect("\n3\n" + PROMPT)
    sh.submit(",step (g 3)")                    # -> rewrites its forms: stepped whole
    sh.expect("; step: (-> x inc (* 2))  (a macro's form: stepped whole)")
    sh.submit(",n")
    sh.expect("; (-> x inc (* 2)) => 8")
    sh.expect("\n8\n" + PROMPT)
    sh.submit(",step (boom 3)")
    sh.expect('; step: (println "before")')
    sh.submit(",n")
    sh.expect("; step: (/ x 0)")
    sh.submit(",n")                             # the error takes Clojure's usual path
    sh.expect("java.lang.ArithmeticException: Divide by zero")
    sh.expect("\n" + PROMPT)
    sh.submit("(boom 3)")
    sh.expect('before\njava.lang.ArithmeticException')
    sh.submit(",step (fact 3)")
    sh.expect("; step: (if (<= n 1)")
    sh.submit(",abort")                         # leaves the call, and the stepping
    sh.expect("Back at the top level.")
    sh.submit(PLAIN)
    sh.expect("[false false false false false]")


def test_every_call_the_stepped_form_makes_steps(clojure_shell):
    """`,step (g (g 1))` steps the inner call, then the outer (its argument's call comes
    first), as SBCL's stepper steps the whole form; ,o and ,n in one call still stop in the
    next, and ,c runs on through all of them."""
    sh = clojure_shell
    sh.submit(",step (g (g 1))")
    sh.expect("; stepping (user/g 1)")
    sh.expect("; step: (-> x inc (* 2))")
    sh.submit(",o")
    sh.expect("; stepping (user/g 4)")
    sh.expect("; step: (-> x inc (* 2))")
    sh.submit(",n")
    sh.expect("; (-> x inc (* 2)) => 10")
    sh.expect("\n10\n" + PROMPT)
    sh.submit(",step (g (g 1))")
    sh.expect("; stepping (user/g 1)")
    sh.submit(",c")
    sh.expect("\n10\n" + PROMPT)
    assert "(user/g 4)" not in sh.text()[sh.text().rindex(",c"):]
    sh.submit(PLAIN)
    sh.expect("[false false false false false]")


def test_step_from_a_breakpoint(clojure_shell):
    sh = clojure_shell
    sh.submit(",break f")
    sh.expect("Breakpoint 1: a call of user/f")
    sh.submit("(f 6)")
    sh.expect("; break: (user/f 6)")
    sh.expect("[1] " + PROMPT)
    sh.submit(",step")                          # alone at a level: ,s, from here
    sh.expect("; stepping (user/f 6)")
    sh.expect('; step: (println "a")')
    sh.submit(",c")
    sh.expect('\n"6"\n' + PROMPT)
    sh.submit(",unbreak f")
    sh.expect("Removed breakpoint 1 on user/f.")
    sh.submit(PLAIN)
    sh.expect("[false false false false false]")


def test_what_cannot_be_stepped_is_said(clojure_shell):
    sh = clojure_shell
    sh.submit(",n")
    sh.expect("Nothing is being stepped: ,step (f ARGS) steps the call of f")
    sh.submit(",step (when 1 2)")
    sh.expect("When is a macro: ,step (f ARGS) steps the call of the function f")
    sh.submit(",step (map inc [1])")
    sh.expect("Clojure.core/map is Clojure's own")
    sh.submit(",step (nope 1)")
    sh.expect("Nope is not a function defined in user")
    sh.submit("(def k (partial + 1))")
    sh.expect("#'user/k")
    sh.submit(",step (k 1)")
    sh.expect("The source of user/k is not a defn of it")
    sh.submit("(eval (read-string \"(defn hidden [x] (inc x))\"))")
    sh.expect("#'user/hidden")
    sh.submit(",step (hidden 1)")               # defined by code, not typed: no source kept
    sh.expect("No source for user/hidden")
    sh.submit("(defn prim ^long [^long n] (inc n))")
    sh.expect("#'user/prim")
    sh.submit(",step (prim 1)")
    sh.expect("User/prim has a primitive signature")
    sh.submit("(map inc [1 2])")                # and nothing was left instrumented
    sh.expect("(2 3)")


def test_step_in_the_repl_over_nrepl(tmp_path):
    from lisp_servers import Server

    srv = Server("nrepl", tmp_path).start()
    sh = Shell(tmp_path, "--connect", srv.url, "--no-llm")
    try:
        sh.expect("Connected to " + srv.url, timeout=120)
        sh.submit(F)
        sh.expect("#'user/f")
        sh.submit(",step (f 3)")
        sh.expect('; step: (println "a")')
        sh.expect("[1] " + PROMPT)
        sh.submit(",n")
        sh.expect('; (println "a") => nil')
        sh.expect("; step: (let [y (* x 2)] (+ y 1))")
        sh.submit("(+ x 10)")
        sh.expect("\n13\n")
        sh.submit(",n")
        sh.expect("; (let [y (* x 2)] (+ y 1)) => 7")
        sh.expect("; step: (str x)")
        sh.submit(",n")
        sh.expect('; (str x) => "3" ... (user/f 3) => "3"')
        sh.expect('\n"3"\n')
        sh.expect(PROMPT)
        sh.submit("(f 4)")                          # itself again
        sh.expect('a\n"4"\n')
    finally:
        sh.close()
        srv.kill()


# -- the session, on a child and over nREPL -------------------------------------------------------

def _walk_through(s):
    assert s.capabilities.stepping
    for form in (F, SUM, FACT):
        assert s.eval(form).ok
    r = s.eval(s.step_form("(f 3)"), keep_levels=True)
    assert r.error.type == "LISPSHELL-STEP" and r.error.message == '(println "a")', r
    assert r.level == 1 and "; stepping (user/f 3)" in r.output
    assert [loc.name for loc in s.frame_locals(0)] == ["x"]
    assert s.backtrace()[0].call == "(user/f 3)"
    r = s.step("next")
    assert r.error.message == "(let [y (* x 2)] (+ y 1))", r
    assert 'a\n; (println "a") => nil\n' in r.output
    r = s.step("into")
    assert r.error.message == "(* x 2)"
    assert s.eval("(+ x 1)", keep_levels=True).values == ["4"]
    r = s.continue_level()
    assert r.values == ['"3"'] and s.level == 0 and "=>" not in r.output, r
    # recursion: into the inner call, out of it, back in the outer one
    r = s.eval(s.step_form("(fact 3)"), keep_levels=True)
    assert r.error.message == "(if (<= n 1) 1 (* n (fact (dec n))))"
    for _ in range(4):
        r = s.step("into")
    assert r.error.message == "(dec n)", r
    r = s.step("next")                         # the inner call starts: its first form
    assert r.error.message == "(if (<= n 1) 1 (* n (fact (dec n))))", r
    assert "; stepping (user/fact 2)" in r.output, r
    assert [loc.value for loc in s.frame_locals(0)] == ["2"]
    r = s.step("out")                          # back in (fact 3): its value said there
    assert "(user/fact 2) => 2" in r.output, r
    r = s.step("continue") if s.level else r
    assert r.values == ["6"] and s.level == 0, r
    # a step's restarts, RETURN-VALUE included, as the model's tools see them
    s.eval(s.step_form("(sum-to 3)"), keep_levels=True)
    assert s.step("into").error.message == "(< i n)"
    names = [x.split("\t")[0] for x in s.restarts]
    assert names == ["STEP-CONTINUE", "STEP-INTO", "STEP-NEXT", "STEP-OUT", "RETURN-VALUE",
                     "ABORT"], names
    r = s.return_value("false")                # (< i n) is false at once: the loop ends
    assert "(returned: not run)" in r.output and r.values == ["0"], r
    left = s.eval(PLAIN.replace(" #'g #'boom", ""))
    assert left.values == ["[false false false]"], left
    # an eval that keeps no level (MCP, a batch run) leaves the stepping at once
    r = s.eval(s.step_form("(f 2)"))
    assert r.error.type == "LISPSHELL-STEP" and s.level == 0, r
    assert s.eval("(f 2)").values == ['"2"']
    # ,s into a call of another function of the person's steps inside it (as SBCL's into)
    assert s.eval("(defn g2 [a] (let [b (* a 2)] (+ b 1)))").ok
    assert s.eval('(defn f2 [x] (+ (g2 x) (count "ab")))').ok
    assert s.eval('(eval (read-string "(defn h2 [x] (inc x))"))').ok     # no source kept
    assert s.eval("(defn k2 [x] (h2 x))").ok
    assert s.eval(s.step_form("(f2 3)"), keep_levels=True).error.message == \
        '(+ (g2 x) (count "ab"))'
    assert s.step("into").error.message == "(g2 x)"
    r = s.step("into")
    assert r.error.message == "(let [b (* a 2)] (+ b 1))" and "; stepping (user/g2 3)" in r.output
    r = s.step("out")                          # out of g2: back in f2, g2's value said
    assert r.error.message == '(count "ab")' and "(user/g2 3) => 7" in r.output, r
    assert s.continue_level().values == ["9"]
    assert s.eval(s.step_form("(k2 3)"), keep_levels=True).error.message == "(h2 x)"
    r = s.step("into")
    assert "; (h2 x) => 4  (user/h2 not stepped: no source)" in r.output, r
    assert r.values == ["4"] and s.level == 0
    assert s.eval("(mapv (fn [v] (boolean (:lispshell.step/stepped (meta @v)))) "
                  "[#'f2 #'g2 #'k2 #'h2])").values == ["[false false false false]"]
    # a breakpoint on a stepped function: its hit first, then the steps; both outlive nothing
    s.set_breakpoint("f")
    assert s.eval(s.step_form("(f 1)"), keep_levels=True).error.type == "LISPSHELL-BREAK"
    assert s.continue_level().error.message == '(println "a")'
    assert s.continue_level().values == ['"1"'] and s.level == 0
    assert s.eval(s.step_form("f")).ok                 # armed, then a breakpoint set and
    s.set_breakpoint("f")                              # cleared: still armed, and then not
    s.clear_breakpoint("f")
    assert s.eval("(f 6)", keep_levels=True).error.type == "LISPSHELL-STEP"
    assert s.continue_level().values == ['"6"']
    assert s.eval(PLAIN.replace(" #'g #'boom", "")).values == ["[false false false]"]
    assert s.eval(s.step_form("f")).ok                 # armed, then redefined: disarmed
    assert s.eval("(defn f [x] (* x 100))").ok
    assert s.eval("(f 2)", keep_levels=True).values == ["200"] and s.level == 0
    # ,s at a breakpoint steps through its call (the function armed for it), ,n runs it
    s.set_breakpoint("f")
    assert s.eval("(f 3)", keep_levels=True).error.type == "LISPSHELL-BREAK"
    r = s.step("into")
    assert r.error.type == "LISPSHELL-STEP" and r.error.message == "(* x 100)", r
    assert s.continue_level().values == ["300"] and s.level == 0
    assert s.eval("(f 4)", keep_levels=True).error.type == "LISPSHELL-BREAK"
    assert s.step("next").values == ["400"] and s.level == 0
    assert [p.name for p in s.clear_breakpoint("f")] == ["user/f"]


def test_stepping_on_a_clojure_child_session():
    with LispSession("clojure") as s:
        _walk_through(s)


def test_stepping_over_nrepl(tmp_path):
    from lisp_servers import Server
    from lispshell.lisp.connection import connect_session

    srv = Server("nrepl", tmp_path).start()
    try:
        c = connect_session(srv.url, {})
        try:
            _walk_through(c)
            # a stepped call on another thread waits there, listed, and is entered
            assert c.eval(c.step_form("f")).ok
            assert c.eval("(def go (promise)) (def fut (future @go (f 7)))").ok
            assert c.eval("(deliver go true)").ok
            listed = []
            for _ in range(100):
                listed = c.other_debuggers
                if listed:
                    break
                c.eval("(Thread/sleep 50)")
            # (f as _walk_through left it: redefined, its new source kept)
            assert listed and listed[0][2] == "(* x 100)", listed
            assert c.enter_thread(0).type == "LISPSHELL-STEP"
            assert c.eval("(* x 2)", keep_levels=True).values == ["14"]
            c.continue_level()
            assert c.eval("@fut").values == ["700"] and c.level == 0
        finally:
            c.close()
    finally:
        srv.kill()


def test_the_model_reads_a_clojure_step_and_steps_with_a_restart():
    from lispshell.tools.gate import EvalGate
    from lispshell.tools.registry import ToolContext, call_tool

    with LispSession("clojure") as s:
        ctx = ToolContext(session=lambda: s, gate=EvalGate("yolo"), keep_levels=True)
        assert s.eval(F).ok
        code = s.step_form("(f 3)")
        assert s.eval(code, keep_levels=True).level == 1
        bt = call_tool("backtrace", {}, ctx)
        assert bt["condition"]["type"] == "LISPSHELL-STEP", bt
        assert bt["condition"]["message"] == '(println "a")'
        assert bt["frames"][0] == {"index": 0, "call": "(user/f 3)", "locals": {"x": "3"}}, bt
        assert call_tool("eval_in_frame", {"frame": 0, "code": "(* x 3)"}, ctx)["values"] == ["9"]
        nxt = call_tool("invoke_restart", {"restart": 2}, ctx)        # STEP-NEXT
        assert nxt["error"]["code"] == "STEP", nxt
        assert "(let [y (* x 2)] (+ y 1))" in nxt["error"]["message"]
        done = call_tool("invoke_restart", {"restart": 0}, ctx)       # STEP-CONTINUE
        assert done["values"] == ['"3"'] and s.level == 0, done


def test_a_function_loaded_from_a_file_steps_from_its_source(tmp_path):
    path = tmp_path / "stepped.clj"
    path.write_text('(ns stepped)\n\n;; a comment\n(defn twice\n  "Doc."\n  [n]\n'
                    '  (let [m (* n 2)]\n    (inc m)))\n\n'
                    '(defn lam [xs]\n  (mapv #(* % 2)\n        xs))\n', encoding="utf-8")
    with LispSession("clojure") as s:
        assert s.eval(f'(load-file "{path}")').ok
        r = s.eval(s.step_form("(stepped/twice 5)"), keep_levels=True)
        assert r.error.message == "(let [m (* n 2)] (inc m))", r
        assert s.step("into").error.message == "(* n 2)"
        r = s.step("next")
        assert r.error.message == "(inc m)" and "; (* n 2) => 10" in r.output, r
        assert [(loc.name, loc.value) for loc in s.frame_locals(0)] == [("m", "10"), ("n", "5")]
        assert s.continue_level().values == ["11"] and s.level == 0
        # each form as it is written (on one line), not as the reader made it
        r = s.eval(s.step_form("(stepped/lam [1])"), keep_levels=True)
        assert r.error.message == "(mapv #(* % 2) xs)", r
        assert s.step("into").error.message == "(* % 2)"
        assert s.continue_level().values == ["[2]"]
