"""Every example of the paredit spec (shared/spec/paredit-tools.md), before and after, in each
dialect where it applies, run through the registered tools on `code`."""
from __future__ import annotations

import pytest

from lispshell.tools.registry import ToolContext, call_tool


def run(tool: str, code: str, dialect: str, **args) -> dict:
    result = call_tool(tool, {"code": code, "dialect": dialect, **args}, ToolContext())
    assert result["ok"], result
    return result


def edit(tool: str, code: str, dialect: str, **args) -> str:
    return run(tool, code, dialect, **args)["code"]


# (dialect, before, arguments, after) per example; Scheme and Clojure spell the same programs
# with their own forms (define/defn, begin/do, vectors for Clojure bindings).
WRAP_PROGN = [
    ("cl", "(defun handle (items) (process-item item))",
     dict(form_type="defun", form_name="handle", target="(process-item item)", head="progn"),
     "(defun handle (items) (progn (process-item item)))"),
    ("scheme", "(define (handle items) (process-item item))",
     dict(form_type="define", form_name="handle", target="(process-item item)", head="begin"),
     "(define (handle items) (begin (process-item item)))"),
    ("clojure", "(defn handle [items] (process-item item))",
     dict(form_type="defn", form_name="handle", target="(process-item item)", head="do"),
     "(defn handle [items] (do (process-item item)))"),
]

WRAP_THREE_BODY_FORMS = [
    ("cl", "(defun handle (items) (a) (b) (c))",
     dict(form_type="defun", form_name="handle", path=[2], count=3, head="let ()"),
     "(defun handle (items) (let () (a) (b) (c)))"),
    # In (define (handle items) ...) the name and lambda list are one element: body is [1].
    ("scheme", "(define (handle items) (a) (b) (c))",
     dict(form_type="define", form_name="handle", path=[1], count=3, head="let ()"),
     "(define (handle items) (let () (a) (b) (c)))"),
    ("clojure", "(defn handle [items] (a) (b) (c))",
     dict(form_type="defn", form_name="handle", path=[2], count=3, head="let []"),
     "(defn handle [items] (let [] (a) (b) (c)))"),
]

UNWRAP_PROGN = [
    ("cl", "(defun f () (progn (step-1) (step-2)))",
     dict(target="(progn (step-1) (step-2))", keep="body"), "(defun f () (step-1) (step-2))"),
    ("scheme", "(define (f) (begin (step-1) (step-2)))",
     dict(target="(begin (step-1) (step-2))", keep="body"), "(define (f) (step-1) (step-2))"),
    ("clojure", "(defn f [] (do (step-1) (step-2)))",
     dict(target="(do (step-1) (step-2))", keep="body"), "(defn f [] (step-1) (step-2))"),
]

RAISE = [
    ("cl", "(defun check (x) (if condition (do-thing) nil))",
     dict(target="(do-thing)", form_type="defun", form_name="check"),
     "(defun check (x) (do-thing))"),
    ("scheme", "(define (check x) (if condition (do-thing) #f))",
     dict(target="(do-thing)", form_type="define", form_name="check"),
     "(define (check x) (do-thing))"),
    ("clojure", "(defn check [x] (if condition (do-thing) nil))",
     dict(target="(do-thing)", form_type="defn", form_name="check"),
     "(defn check [x] (do-thing))"),
]

SLURP_FORWARD = [
    ("cl", "(defun process () (let ((x 1))) (use-x x))",
     dict(form_type="defun", form_name="process", target="(let ((x 1)))"),
     "(defun process () (let ((x 1)) (use-x x)))"),
    ("scheme", "(define (process) (let ((x 1))) (use-x x))",
     dict(form_type="define", form_name="process", target="(let ((x 1)))"),
     "(define (process) (let ((x 1)) (use-x x)))"),
    ("clojure", "(defn process [] (let [x 1]) (use-x x))",
     dict(form_type="defn", form_name="process", target="(let [x 1])"),
     "(defn process [] (let [x 1] (use-x x)))"),
]

SLURP_BACKWARD = [
    ("cl", "(defun f () (compute-value) (list result))", dict(target="(list result)"),
     "(defun f () (list (compute-value) result))"),
    ("scheme", "(define (f) (compute-value) (list result))", dict(target="(list result)"),
     "(define (f) (list (compute-value) result))"),
    ("clojure", "(defn f [] (compute-value) (list result))", dict(target="(list result)"),
     "(defn f [] (list (compute-value) result))"),
]

BARF_FORWARD = [
    ("cl", "(let ((x 1)) (compute) (cleanup))", dict(target="(let ((x 1))"),
     "(let ((x 1)) (compute)) (cleanup)"),
    ("scheme", "(let ((x 1)) (compute) (cleanup))", dict(target="(let ((x 1))"),
     "(let ((x 1)) (compute)) (cleanup)"),
    ("clojure", "(let [x 1] (compute) (cleanup))", dict(target="(let [x 1]"),
     "(let [x 1] (compute)) (cleanup)"),
]

TRANSPOSE = [(d, "(list alpha beta)", dict(target="alpha"), "(list beta alpha)")
             for d in ("cl", "scheme", "clojure")]

SPLIT = [
    ("cl", "(progn (step-1) (step-2) (step-3) (step-4))",
     dict(target="(step-3)", clone_head=True),
     "(progn (step-1) (step-2)) (progn (step-3) (step-4))"),
    ("scheme", "(begin (step-1) (step-2) (step-3) (step-4))",
     dict(target="(step-3)", clone_head=True),
     "(begin (step-1) (step-2)) (begin (step-3) (step-4))"),
    ("clojure", "(do (step-1) (step-2) (step-3) (step-4))",
     dict(target="(step-3)", clone_head=True),
     "(do (step-1) (step-2)) (do (step-3) (step-4))"),
]

JOIN = [
    ("cl", "(progn (a) (b)) (progn (c) (d))", dict(target="(progn (a) (b))", drop_head=True),
     "(progn (a) (b) (c) (d))"),
    ("scheme", "(begin (a) (b)) (begin (c) (d))", dict(target="(begin (a) (b))", drop_head=True),
     "(begin (a) (b) (c) (d))"),
    ("clojure", "(do (a) (b)) (do (c) (d))", dict(target="(do (a) (b))", drop_head=True),
     "(do (a) (b) (c) (d))"),
]

EXAMPLES = [("sexp_wrap", *e) for e in WRAP_PROGN + WRAP_THREE_BODY_FORMS] + \
    [("sexp_unwrap", *e) for e in UNWRAP_PROGN] + [("sexp_raise", *e) for e in RAISE] + \
    [("sexp_slurp_forward", *e) for e in SLURP_FORWARD] + \
    [("sexp_slurp_backward", *e) for e in SLURP_BACKWARD] + \
    [("sexp_barf_forward", *e) for e in BARF_FORWARD] + \
    [("sexp_transpose", *e) for e in TRANSPOSE] + [("sexp_split", *e) for e in SPLIT] + \
    [("sexp_join", *e) for e in JOIN]


@pytest.mark.parametrize("tool,dialect,before,args,after", EXAMPLES,
                         ids=[f"{e[0]}-{e[1]}-{i}" for i, e in enumerate(EXAMPLES)])
def test_spec_example(tool, dialect, before, args, after):
    assert edit(tool, before, dialect, **args) == after


@pytest.mark.parametrize("tool,dialect,before,args,after", EXAMPLES,
                         ids=[f"{e[0]}-{e[1]}-{i}" for i, e in enumerate(EXAMPLES)])
def test_spec_example_dry_run_changes_nothing(tool, dialect, before, args, after):
    result = run(tool, before, dialect, dry_run=True, **args)
    assert "code" not in result
    assert result["would_change"] is True
    assert result["preview"] == after      # one-line examples: the region is the whole text
    assert result["original"] == before


def test_barf_backward_is_the_inverse_of_slurp_backward():
    # The spec: barf-backward pushes "its first child (after the operator)" out leftward.
    after = "(defun f () (list (compute-value) result))"
    assert edit("sexp_barf_backward", after, "cl", target="(list (compute-value) result)") == \
        "(defun f () (compute-value) (list result))"


def test_kill_removes_whole_sexps():
    assert edit("sexp_kill", "(list a b c)", "cl", target="b") == "(list a c)"
    assert edit("sexp_kill", "(list a b c)", "cl", target="b", count=2) == "(list a)"


# 4.3: the path example, (defun process-request (req) (let ((conn (get-connection))) ...))
PROCESS_REQUEST = "(defun process-request (req) (let ((conn (get-connection))) (handle conn req)))"


@pytest.mark.parametrize("path,text", [
    ([0], "process-request"), ([1], "(req)"),
    ([2], "(let ((conn (get-connection))) (handle conn req))"), ([2, 0], "let"),
    ([2, 1], "((conn (get-connection)))"), ([2, 1, 0], "(conn (get-connection))"),
    ([2, 2], "(handle conn req)"),
])
def test_path_example(path, text):
    # Read the node itself: wrapping it with dry_run previews exactly its text in the wrapper.
    preview = run("sexp_wrap", PROCESS_REQUEST, "cl", form_type="defun",
                  form_name="process-request", path=path, dry_run=True)["preview"]
    assert f"({text})" in preview


def test_show_structure_gives_the_spec_paths():
    tree = run("sexp_show_structure", PROCESS_REQUEST, "cl", form_type="defun",
               form_name="process-request")["tree"]
    for line in ("[0] process-request  symbol", "[1] (req)  list", "[1,0] req  symbol",
                 "[2,0] let  symbol", "[2,1] ((conn (get-connection)))  list",
                 "[2,2] (handle conn req)  list"):
        assert line in tree, tree


def test_show_structure_depth_and_switches():
    tree = run("sexp_show_structure", PROCESS_REQUEST, "cl", form_type="defun",
               form_name="process-request", depth=1)["tree"]
    assert "[2] (let" in tree and "[2,0]" not in tree
    bare = run("sexp_show_structure", PROCESS_REQUEST, "cl", form_type="defun",
               form_name="process-request", depth=1, show_paths=False, show_text=False)["tree"]
    assert "[" not in bare.split("\n", 1)[1] and "process-request" not in bare.split("\n", 1)[1]


def test_get_enclosing_output():
    code = "(defun h (req) (if (valid-p req) (process req) (error-response 400)))"
    r = run("sexp_get_enclosing", code, "cl", form_type="defun", form_name="h",
            target="(process req)")
    assert r["enclosing_text"] == "(if (valid-p req) (process req) (error-response 400))"
    assert r["enclosing_path"] == [2]
    assert r["enclosing_kind"] == "list"
    assert r["head"] == "if"
    assert r["child_index"] == 2          # if=0, (valid-p req)=1, (process req)=2
    assert r["sibling_count"] == 4
    up2 = run("sexp_get_enclosing", code, "cl", target="(process req)", levels=2)
    assert up2["head"] == "defun" and up2["enclosing_path"] == [0]   # whole-file scope
    assert up2["top_level"] is True


def test_workflow_example_process_order():
    code = ("(defun process-order (order)\n"
            "  (validate order)\n"
            "  (db:insert order)\n"
            "  (notify-success order))\n")
    tree = run("sexp_show_structure", code, "cl", form_type="defun", form_name="process-order",
               depth=3)["tree"]
    for line in ("[0] process-order  symbol", "[1] (order)  list",
                 "[2] (validate order)  list", "[3] (db:insert order)  list",
                 "[4] (notify-success order)  list"):
        assert line in tree
    step2 = edit("sexp_wrap", code, "cl", form_type="defun", form_name="process-order",
                 target="(db:insert order)", head="handler-case")
    assert "  (handler-case (db:insert order))\n" in step2
    step3 = edit("sexp_slurp_forward", step2, "cl", form_type="defun",
                 form_name="process-order", target="(handler-case (db:insert order))")
    assert step3 == ("(defun process-order (order)\n"
                     "  (validate order)\n"
                     "  (handler-case (db:insert order)\n"
                     "    (notify-success order)))\n")


def test_success_response_has_changed_region():
    code = "(defun process ()\n  (let ((x 1)))\n  (use-x x))\n"
    r = run("sexp_slurp_forward", code, "cl", form_type="defun", form_name="process",
            target="(let ((x 1)))")
    assert r["operation"] == "sexp_slurp_forward"
    assert r["changed_region"] == {"start_line": 2, "end_line": 3,
                                   "text": "  (let ((x 1))\n    (use-x x)))"}


def test_ambiguous_target_lists_every_match():
    code = "(defun f ()\n  (if (a) (b))\n  (g (if (c) (d))))"
    r = call_tool("sexp_raise", {"code": code, "dialect": "cl", "target": "(if"}, ToolContext())
    assert not r["ok"] and r["error"]["code"] == "AMBIGUOUS"
    assert r["error"]["matches"] == [
        {"path": [0, 2], "line": 2, "text": "(if (a) (b))"},
        {"path": [0, 3, 1], "line": 3, "text": "(if (c) (d))"}]
    assert "path" in r["error"]["hint"] and "line" in r["error"]["hint"]
    # `line` breaks the tie
    assert edit("sexp_raise", code, "cl", target="(if", line=3) == \
        "(defun f ()\n  (if (a) (b))\n  (if (c) (d)))"


def test_target_not_found():
    r = call_tool("sexp_raise", {"code": PROCESS_REQUEST, "dialect": "cl",
                                 "form_type": "defun", "form_name": "process-request",
                                 "target": "(nonexistent-form)"}, ToolContext())
    err = r["error"]
    assert err["code"] == "NOT_FOUND"
    assert err["target"] == "(nonexistent-form)"
    assert err["searched_within"] == "defun process-request"


def test_structural_impossibility_slurp_with_no_next_sibling():
    r = call_tool("sexp_slurp_forward", {"code": "(defun f () (a) (b))", "dialect": "cl",
                                         "target": "(b)"}, ToolContext())
    err = r["error"]
    assert err["code"] == "NO_SIBLING"
    assert err["message"].startswith("Cannot slurp forward: no sibling after")
    assert err["target_path"] == [0, 3]
    assert "last element" in err["suggestion"]
