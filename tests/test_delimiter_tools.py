"""The delimiter stack tools, through call_tool as the LLM and MCP clients call them."""
from __future__ import annotations

import hashlib
import itertools
import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from lispshell.syntax.delimiters import MAX_DEPTH, MAX_OPS, MAX_SLICE, rolling_hash
from lispshell.tools import ToolContext, call_tool, get_tool, result_text

TYPES = ["paren", "bracket", "brace"]
CHAR = {"(": "paren", ")": "paren", "[": "bracket", "]": "bracket", "{": "brace", "}": "brace"}


def call(name, **args):
    return call_tool(name, args)


def test_tools_are_registered_read_only_in_their_groups():
    for name in ("push_delimiter", "pop_delimiter", "set_sentinel", "balance_and_resume",
                 "delimiter_batch"):
        tool = get_tool(name)
        assert tool.group == "delimiters" and tool.read_only and not tool.evaluates
        assert len(tool.description) < 400
    for name in ("validate_syntax", "repair_syntax"):
        assert get_tool(name).group == "syntax" and get_tool(name).read_only


# --- the spec's examples ------------------------------------------------------------------------

def test_push_and_pop_as_in_the_spec():
    assert call("push_delimiter", stack=["paren", "brace"], type="paren", cursor=214) == \
        {"ok": True, "stack": ["paren", "brace", "paren"]}
    assert call("pop_delimiter", stack=["paren", "brace", "paren"], type="paren", cursor=300) == \
        {"ok": True, "stack": ["paren", "brace"]}


def test_pop_mismatch_leaves_the_stack_unchanged():
    r = call("pop_delimiter", stack=["paren"], type="brace")
    assert r["ok"] is False
    assert r["error"]["code"] == "MISMATCH"
    assert r["error"]["expected"] == "paren" and r["error"]["found"] == "brace"
    assert r["error"]["stack"] == ["paren"]


def test_underflow_at_the_first_pop():
    r = call("pop_delimiter", stack=[], type="paren")
    assert r["error"]["code"] == "UNDERFLOW" and r["error"]["stack"] == []


def test_set_sentinel():
    assert call("set_sentinel", cursor=320) == {"ok": True, "sentinel": 320}
    assert call("set_sentinel", cursor=-1)["error"]["code"] == "BAD_CURSOR"
    assert call("set_sentinel", cursor=2 ** 80)["error"]["code"] == "BAD_CURSOR"
    assert call("set_sentinel", cursor="12")["ok"] is False


def test_balance_assert_empty_is_balanced_iff_the_stack_is_empty():
    assert call("balance_and_resume", stack=[], sentinel=320, mode="assert-empty") == \
        {"ok": True, "balanced": True, "stack": []}
    r = call("balance_and_resume", stack=["paren", "bracket"], sentinel=320, mode="assert-empty")
    assert r["ok"] is False and r["error"]["code"] == "MISMATCH"
    assert r["error"]["stack"] == ["paren", "bracket"] and r["error"]["closers"] == "])"


def test_suggest_fix_returns_closers_as_an_edit_at_the_sentinel():
    r = call("balance_and_resume", stack=["paren"], sentinel=320, mode="suggest-fix",
             docSlice={"text": "(inc 1", "start": 310, "end": 316})
    assert r["ok"] and r["balanced"] is False
    assert r["fix"] == {"edits": [{"start": 320, "end": 320, "text": "))"}], "newStack": []}
    r = call("balance_and_resume", stack=[], sentinel=5, mode="suggest-fix")
    assert r["balanced"] is True and r["fix"]["edits"] == []


def test_suggest_fix_over_whole_forms_places_closers_by_indentation():
    text = "(defn f [x]\n  (let [y 1\n        z 2\n    (+ x y z)))"
    r = call("balance_and_resume", stack=[], sentinel=len(text), mode="suggest-fix",
             dialect="clojure", docSlice={"text": text, "start": 100})
    assert r["ok"] and r["balanced"] is False
    assert r["fix"]["edits"] == [{"start": 100 + text.index(" 2") + 2,
                                  "end": 100 + text.index(" 2") + 2, "text": "]"}]


def test_batch_as_in_the_spec_and_all_or_nothing():
    ops = [{"op": "push", "type": "paren"}, {"op": "push", "type": "bracket"},
           {"op": "pop", "type": "bracket"}, {"op": "pop", "type": "paren"}]
    assert call("delimiter_batch", stack=[], ops=ops) == {"ok": True, "stack": []}
    r = call("delimiter_batch", stack=["brace"], ops=[
        {"op": "pushMany", "types": ["paren", "bracket"]},
        {"op": "popMany", "types": ["bracket", "brace"]}])
    err = r["error"]
    assert err["code"] == "MISMATCH" and err["index"] == 1 and err["typeIndex"] == 1
    assert err["stack"] == ["brace"]                       # the client's stack, unchanged
    assert err["stackAtFailure"] == ["brace", "paren", "bracket"]   # before the failing op


# --- docSlice, lexState, docHash ----------------------------------------------------------------

def test_doc_slice_skips_strings_comments_and_chars():
    r = call("push_delimiter", stack=[], type="paren", dialect="clojure",
             docSlice={"text": '(str "(" \\( ; (\n #"[" (', "start": 0})
    assert r["ok"] and r["stack"] == ["paren", "paren"]


def test_a_slice_may_end_inside_a_string_and_resume():
    r1 = call("push_delimiter", stack=[], type="paren", dialect="cl",
              docSlice={"text": '(format t "a (b', "start": 0})
    assert r1["stack"] == ["paren"]              # the ( inside the string does not count
    r1 = call("delimiter_batch", stack=[], ops=[], dialect="cl",
              docSlice={"text": '(format t "a (b', "start": 0})
    assert r1["stack"] == ["paren"] and r1["lexState"]["mode"] == "string"
    r2 = call("pop_delimiter", stack=r1["stack"], type="paren", dialect="cl",
              lexState=r1["lexState"], docSlice={"text": ') c")', "start": 15})
    assert r2 == {"ok": True, "stack": [], "lexState": {"mode": "code", "depth": 0, "carry": ""}}


def test_doc_hash_chains_over_slices():
    h0 = ""
    r = call("delimiter_batch", stack=[], ops=[], docHash=h0, docSlice={"text": "(a", "start": 0})
    want = "sha256:" + hashlib.sha256(b"\0(a").hexdigest()
    assert r["docHash"] == want == rolling_hash("", "(a")
    r2 = call("pop_delimiter", stack=r["stack"], type="paren", docHash=r["docHash"],
              docSlice={"text": " b)", "start": 2})
    assert r2["docHash"] == rolling_hash(want, " b)")
    assert call("set_sentinel", cursor=1) == {"ok": True, "sentinel": 1}


def test_slice_errors_say_where():
    r = call("delimiter_batch", stack=[], ops=[], dialect="clojure",
             docSlice={"text": "(let [x 1)", "start": 40})
    err = r["error"]
    assert err["code"] == "MISMATCH" and err["at"] == 49 and err["expected"] == "bracket"
    assert err["stack"] == []


# --- limits and bad input: BAD_INPUT naming the limit, never a traceback --------------------------

def test_limits_answer_bad_input_naming_the_limit():
    r = call("delimiter_batch", stack=[], ops=[{"op": "push", "type": "paren"}] * (MAX_OPS + 1))
    assert r["error"]["code"] == "BAD_INPUT" and r["error"]["limit"] == "MAX_OPS"
    r = call("push_delimiter", stack=["paren"] * MAX_DEPTH, type="paren")
    assert r["error"]["code"] == "BAD_INPUT" and r["error"]["limit"] == "MAX_DEPTH"
    r = call("delimiter_batch", stack=[], ops=[], docSlice={"text": "(" * (MAX_SLICE + 1)})
    assert r["error"]["code"] == "BAD_INPUT" and r["error"]["limit"] == "MAX_SLICE"


@pytest.mark.parametrize("args,code", [
    ({"stack": [], "type": "curly"}, "INVALID_TYPE"),
    ({"stack": ["paren", "angle"], "type": "paren"}, "INVALID_TYPE"),
    ({"stack": "paren", "type": "paren"}, "BAD_INPUT"),
    ({"type": "paren"}, "BAD_INPUT"),
    ({"stack": [], "type": "paren", "docSlice": "("}, "BAD_INPUT"),
    ({"stack": [], "type": "paren", "docSlice": {"text": "(", "start": -3}}, "BAD_CURSOR"),
    ({"stack": [], "type": "paren", "docSlice": {"text": "("}, "lexState": {"mode": "x"}},
     "BAD_INPUT"),
    ({"stack": [], "type": "paren", "docSlice": {"text": "("}, "dialect": "cobol"}, "BAD_INPUT"),
])
def test_bad_input_gets_a_stable_code(args, code):
    r = call_tool("push_delimiter", args)
    assert r["ok"] is False and r["error"]["code"] == code


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=4) |
                       st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)
FIELDS = st.fixed_dictionaries({}, optional={
    "stack": JSONISH | st.lists(st.sampled_from(TYPES + ["x"]), max_size=5),
    "type": JSONISH | st.sampled_from(TYPES), "cursor": JSONISH, "sentinel": JSONISH,
    "mode": JSONISH | st.sampled_from(["assert-empty", "suggest-fix"]), "ops": JSONISH,
    "docSlice": JSONISH | st.fixed_dictionaries({"text": st.text(max_size=10)}),
    "lexState": JSONISH, "docHash": JSONISH, "dialect": JSONISH | st.sampled_from(["cl", "scheme"])})


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["push_delimiter", "pop_delimiter", "set_sentinel", "balance_and_resume",
                        "delimiter_batch"]), FIELDS)
def test_any_input_gets_an_answer_never_a_traceback(name, args):
    r = call_tool(name, args)
    assert r["ok"] in (True, False)
    if not r["ok"]:
        assert r["error"]["code"] in ("MISMATCH", "UNDERFLOW", "INVALID_TYPE", "BAD_CURSOR",
                                      "BAD_INPUT", "UNKNOWN_ARGUMENT"), r
    json.dumps(r)


# --- properties and tables ----------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.recursive(st.just([]), lambda inner: st.lists(
    st.tuples(st.sampled_from(TYPES), inner), max_size=3).map(
    lambda kids: [x for t, sub in kids for x in [("push", t)] + sub + [("pop", t)]]),
    max_leaves=30))
def test_matched_sequences_end_empty(seq):
    ops = [{"op": op, "type": t} for op, t in seq]
    assert call("delimiter_batch", stack=[], ops=ops) == {"ok": True, "stack": []}
    stack = []
    for op, t in seq:
        r = call(f"{op}_delimiter", stack=stack, type=t)
        assert r["ok"]
        stack = r["stack"]
    assert stack == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TYPES), min_size=1, max_size=20), st.data())
def test_any_out_of_order_close_is_a_mismatch_with_the_stack_unchanged(stack, data):
    wrong = data.draw(st.sampled_from([t for t in TYPES if t != stack[-1]]))
    r = call("pop_delimiter", stack=list(stack), type=wrong)
    assert r["error"]["code"] == "MISMATCH" and r["error"]["stack"] == stack
    assert r["error"]["expected"] == stack[-1] and r["error"]["found"] == wrong


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["push_delimiter", "pop_delimiter", "delimiter_batch",
                        "balance_and_resume"]), FIELDS)
def test_replaying_a_request_gives_the_same_bytes(name, args):
    assert result_text(call_tool(name, args)) == result_text(call_tool(name, args))


@pytest.mark.parametrize("text", ["".join(p) for n in range(1, 5)
                                  for p in itertools.product("()[]{}", repeat=n)])
def test_every_short_mix_of_delimiters_against_an_oracle(text):
    stack, expect = [], None
    for i, ch in enumerate(text):
        if ch in "([{":
            stack.append(CHAR[ch])
        elif not stack:
            expect = ("UNDERFLOW", i)
            break
        elif stack[-1] != CHAR[ch]:
            expect = ("MISMATCH", i)
            break
        else:
            stack.pop()
    r = call("delimiter_batch", stack=[], ops=[], dialect="clojure",
             docSlice={"text": text, "start": 0})
    if expect is None:
        assert r == {"ok": True, "stack": stack,
                     "lexState": {"mode": "code", "depth": 0, "carry": ""}}
    else:
        assert r["error"]["code"] == expect[0] and r["error"]["at"] == expect[1]
        assert r["error"]["stack"] == []
    ops = [{"op": "push" if c in "([{" else "pop", "type": CHAR[c]} for c in text]
    b = call("delimiter_batch", stack=[], ops=ops)
    if expect is None:
        assert b["stack"] == stack
    else:
        assert b["error"]["code"] == expect[0] and b["error"]["index"] == expect[1]


@pytest.mark.parametrize("depth", [1024, 100_000])
def test_deep_stacks(depth):
    kinds = [TYPES[i % 3] for i in range(depth)]
    r = call("delimiter_batch", stack=[], ops=[{"op": "pushMany", "types": kinds}])
    assert r["ok"] and r["stack"] == kinds
    r = call("delimiter_batch", stack=r["stack"],
             ops=[{"op": "popMany", "types": list(reversed(kinds))}])
    assert r == {"ok": True, "stack": []}
    text = "".join({"paren": "(", "bracket": "[", "brace": "{"}[k] for k in kinds)
    r = call("balance_and_resume", stack=[], sentinel=depth, mode="suggest-fix",
             dialect="clojure", lexState={"mode": "code"}, docSlice={"text": text, "start": 0})
    closers = "".join({"paren": ")", "bracket": "]", "brace": "}"}[k] for k in reversed(kinds))
    assert r["fix"]["edits"] == [{"start": depth, "end": depth, "text": closers}]


def test_random_ops_against_an_oracle():
    rng = random.Random(7)
    for _ in range(300):
        stack, ops, expect = [], [], None
        for i in range(rng.randint(1, 30)):
            op = rng.choice(["push", "pop", "pop"]) if stack else rng.choice(["push", "pop"])
            t = rng.choice(TYPES)
            ops.append({"op": op, "type": t})
            if expect:
                continue
            if op == "push":
                stack.append(t)
            elif not stack:
                expect = ("UNDERFLOW", i)
            elif stack[-1] != t:
                expect = ("MISMATCH", i)
            else:
                stack.pop()
        r = call("delimiter_batch", stack=[], ops=ops)
        if expect:
            assert (r["error"]["code"], r["error"]["index"]) == expect
        else:
            assert r["stack"] == stack


def test_the_default_dialect_is_the_sessions():
    r = call_tool("delimiter_batch", {"stack": [], "ops": [], "docSlice": {"text": "[a"}},
                  ToolContext(dialect="cl"))
    assert r["stack"] == []                          # in CL, [ is a symbol constituent
    r = call_tool("delimiter_batch", {"stack": [], "ops": [], "docSlice": {"text": "[a"}})
    assert r["stack"] == ["bracket"]                 # no session: Clojure


def test_an_inconsistent_doc_slice_is_refused_with_the_numbers():
    """The spec's own example sends "(inc 1" (6 characters) for 310..320: neither at the
    sentinel nor anywhere else is a closer placed; the answer says which numbers disagree."""
    from lispshell.tools.registry import call_tool

    r = call_tool("balance_and_resume", {"stack": [], "sentinel": 320, "mode": "suggest-fix",
                                         "dialect": "clojure",
                                         "docSlice": {"text": "(inc 1", "start": 310, "end": 320}})
    assert r["ok"] is False and r["error"]["code"] == "BAD_INPUT"
    assert "end - start = 320 - 310 = 10, but text has 6 characters" in r["error"]["message"]
    ok = call_tool("balance_and_resume", {"stack": [], "sentinel": 316, "mode": "suggest-fix",
                                          "dialect": "clojure",
                                          "docSlice": {"text": "(inc 1", "start": 310, "end": 316}})
    assert ok["ok"] is True and ok["fix"]["edits"] == [{"start": 316, "end": 316, "text": ")"}]
