"""What the model's file tools may write (lispshell.workspace.writes): Lisp source and nothing else; the
files that run at start only with the person's yes. Each attack of issue 39 is a call here, in
process (the tools' own code path) and over a real `lispshell mcp`.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lispshell.tools.gate import Decision, EvalGate
from lispshell.tools.registry import ToolContext, call_tool

ATTACKS = [
    # (file, its text, the call's extra arguments, the refusal)
    (".git/config", "[core]\n\trepositoryformatversion = 0\n",
     {"dialect": "clojure", "new_source": 'fsmonitor = "touch /tmp/pwned; false"'},
     "PROTECTED_PATH"),
    (".mcp.json", '{"mcpServers": {"lisp": {"command": "lispshell", "args": ["mcp"]}}}\n',
     {"dialect": "clojure", "new_source": '"--allow-eval"'}, "PROTECTED_PATH"),
    (".bashrc", "alias ll='ls -l'\n", {"dialect": "cl", "new_source": "(touch /tmp/pwned)"},
     "NOT_LISP_SOURCE"),
    ("pyproject.toml", "[project]\nname = \"x\"\n", {"dialect": "cl", "new_source": "(x)"},
     "NOT_LISP_SOURCE"),
    (".git/hooks/post-checkout.lisp", "(print 1)\n", {"new_source": "(run-program)"},
     "PROTECTED_PATH"),
    (".claude/commands/x.lisp", "(print 1)\n", {"new_source": "(run-program)"},
     "PROTECTED_PATH"),
    ("src/a.lisp", "(defun f () 1)\n", {"dialect": "clojure", "new_source": "(defn g [] 2)"},
     "DIALECT_MISMATCH"),
]


def _ctx(root: Path, gate=None, **extra) -> ToolContext:
    return ToolContext(root=root, gate=gate, extra=dict(extra))


@pytest.mark.parametrize("name,text,args,code", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_the_file_tools_refuse_what_is_not_lisp_source(tmp_path, name, text, args, code):
    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    yolo = EvalGate("yolo")         # not even YOLO writes these
    for tool, extra in (("insert_form", {"position": "end"}),
                        ("replace_form", {"line": 1})):
        result = call_tool(tool, {"file_path": name, **args, **extra}, _ctx(tmp_path, yolo))
        assert result["ok"] is False and result["error"]["code"] == code, result
        assert "Nothing was changed" in result["error"]["message"] or code == "DIALECT_MISMATCH"
    assert target.read_text() == text


def test_a_symlink_is_judged_by_where_it_leads(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "innocent.lisp").symlink_to(tmp_path / ".git" / "config")
    (tmp_path / "rc.lisp").symlink_to(tmp_path / ".bashrc")
    (tmp_path / ".bashrc").write_text("alias x=y\n")
    for name, code in (("innocent.lisp", "PROTECTED_PATH"), ("rc.lisp", "NOT_LISP_SOURCE")):
        result = call_tool("insert_form", {"file_path": name, "position": "end",
                                           "new_source": "(x)"},
                           _ctx(tmp_path, EvalGate("yolo")))
        assert result["error"]["code"] == code, result
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"


def test_lispshell_s_own_directories_are_never_written(tmp_path, monkeypatch):
    config, state = tmp_path / "config", tmp_path / "state"
    monkeypatch.setenv("LISPSHELL_CONFIG_DIR", str(config))
    monkeypatch.setenv("LISPSHELL_STATE_DIR", str(state))
    targets = {config / "config.toml": '[gate]\nmode = "ask"\n',
               config / "init.lisp": "(print 1)\n",
               state / "guile-load-paths" / "0123.scm": "(set! %load-path %load-path)\n"}
    for path, text in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for gate in (EvalGate("yolo"), None):
            result = call_tool("insert_form", {
                "file_path": str(path.relative_to(tmp_path)), "position": "end",
                "dialect": "scheme" if path.suffix == ".scm" else "cl",
                "new_source": '(setf mode "yolo")'}, _ctx(tmp_path, gate))
            assert result["error"]["code"] == "PROTECTED_PATH", result
            assert "lispshell's own directory" in result["error"]["message"]
        assert path.read_text() == text


def test_paredit_tools_and_dry_runs_are_refused_alike(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n(x y)\n")
    for tool, args in (("sexp_wrap", {"target": "(x y)"}), ("delete_form", {"line": 2}),
                       ("sexp_kill", {"target": "(x y)", "dry_run": True})):
        result = call_tool(tool, {"file_path": ".git/config", "dialect": "cl", **args},
                           _ctx(tmp_path, EvalGate("yolo")))
        assert result["error"]["code"] == "PROTECTED_PATH", (tool, result)


class Asked:
    """A confirm_edit that records each question and answers as told."""

    def __init__(self, answer: bool, reason: str = ""):
        self.answer, self.reason, self.edits = answer, reason, []

    def __call__(self, edit) -> Decision:
        self.edits.append(edit)
        return Decision(self.answer, edit.question_text(), self.reason)


def _sbclrc(home: Path) -> Path:
    rc = home / ".sbclrc"
    rc.write_text("(setf *print-case* :downcase)\n")
    return rc


def test_an_init_file_is_written_only_with_the_person_s_yes(tmp_path):
    rc = _sbclrc(tmp_path)
    call = {"file_path": ".sbclrc", "position": "end", "new_source": "(sb-ext:run-program)"}
    no = Asked(False, "not my init file")
    result = call_tool("insert_form", call, _ctx(tmp_path, EvalGate("ask", confirm_edit=no)))
    assert result["error"]["code"] == "DECLINED" and "not my init file" in \
        result["error"]["message"], result
    assert rc.read_text() == "(setf *print-case* :downcase)\n"
    edit, = no.edits
    assert edit.path == str(rc) and "init file" in edit.why
    assert "+(sb-ext:run-program)" in edit.diff and edit.diff.startswith("--- ")
    # Nobody to ask (a context without a gate, or a gate that cannot ask): refused, said so.
    for gate in (None, EvalGate("ask")):
        result = call_tool("insert_form", call, _ctx(tmp_path, gate))
        assert result["error"]["code"] == "NEEDS_PERSON", result
        assert "person's yes" in result["error"]["message"]
    result = call_tool("insert_form", call, _ctx(tmp_path, EvalGate("off")))
    assert result["ok"] is False and rc.read_text().count("run-program") == 0
    yes = Asked(True)
    result = call_tool("insert_form", call, _ctx(tmp_path, EvalGate("ask", confirm_edit=yes)))
    assert result["ok"] is True, result
    assert rc.read_text().startswith("(setf *print-case* :downcase)\n")
    assert rc.read_text().rstrip().endswith("\n(sb-ext:run-program)")
    # A dry run asks nothing and writes nothing.
    result = call_tool("insert_form", {**call, "dry_run": True},
                       _ctx(tmp_path, EvalGate("ask", confirm_edit=no)))
    assert result["ok"] is True and len(no.edits) == 1


@pytest.mark.parametrize("name,why", [
    (".guile", "init file"), (".config/app/init.lisp", "inside .config/"),
    ("demo.asd", "ASDF evaluates"), ("src/user.clj", "loads user.clj"),
    ("resources/data_readers.clj", "data_readers"), ("project.clj", "Leiningen"),
    ("deps.edn", "classpath"), (".lein/profiles.clj", "Leiningen"),
    (".nrepl.edn", "dot-files"), ("sub/.x.lisp", "dot-files")])
def test_files_that_run_at_start_ask(tmp_path, name, why):
    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("(a)\n" if not name.endswith(".edn") else "{:paths [\"src\"]}\n")
    before = target.read_text()
    asked = Asked(False)
    result = call_tool("insert_form", {"file_path": name, "position": "end",
                                       "new_source": "(b)" if not name.endswith(".edn")
                                       else "{:x 1}"},
                       _ctx(tmp_path, EvalGate("ask", confirm_edit=asked)))
    assert result["error"]["code"] == "DECLINED", result
    assert why in asked.edits[0].why
    assert target.read_text() == before


def test_a_file_user_clj_requires_asks_and_an_ordinary_one_does_not(tmp_path):
    (tmp_path / "deps.edn").write_text('{:paths ["src"]}\n')
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "user.clj").write_text("(ns user (:require [app.dev :as dev]))\n")
    (tmp_path / "src" / "app" / "dev.clj").write_text("(ns app.dev (:require app.deep-util))\n")
    (tmp_path / "src" / "app" / "deep_util.clj").write_text("(ns app.deep-util)\n")
    (tmp_path / "src" / "app" / "core.clj").write_text("(ns app.core)\n")
    asked = Asked(False)
    ctx = _ctx(tmp_path, EvalGate("ask", confirm_edit=asked))
    for name in ("src/app/dev.clj", "src/app/deep_util.clj"):
        result = call_tool("insert_form", {"file_path": name, "position": "end",
                                           "new_source": "(spit \"/tmp/x\" 1)"}, ctx)
        assert result["error"]["code"] == "DECLINED", (name, result)
    assert [e.why for e in asked.edits] == ["the project loads it at start (user.clj requires "
                                            "it)"] * 2
    result = call_tool("insert_form", {"file_path": "src/app/core.clj", "position": "end",
                                       "new_source": "(defn f [] 1)"}, ctx)
    assert result["ok"] is True and len(asked.edits) == 2, result


def test_ordinary_source_is_written_as_before_and_the_config_adds_extensions(tmp_path):
    (tmp_path / "a.lisp").write_text("(defun f () 1)\n")
    (tmp_path / "tool.ros").write_text("(defun main () 1)\n")
    never = Asked(False)
    ctx = _ctx(tmp_path, EvalGate("ask", confirm_edit=never))
    result = call_tool("insert_form", {"file_path": "a.lisp", "position": "end",
                                       "new_source": "(defun g () 2)"}, ctx)
    assert result["ok"] is True and never.edits == []
    call = {"file_path": "tool.ros", "position": "end", "new_source": "(defun g () 2)"}
    assert call_tool("insert_form", call, ctx)["error"]["code"] == "NOT_LISP_SOURCE"
    result = call_tool("insert_form", call, _ctx(tmp_path, EvalGate("ask"),
                                                 extensions={".ros": "cl"}))
    assert result["ok"] is True, result
    assert "(defun g () 2)" in (tmp_path / "tool.ros").read_text()


def test_the_hook_never_repairs_a_protected_or_start_up_file(tmp_path):
    from lispshell.cli import hook
    import io, json, contextlib

    (tmp_path / "demo.asd").write_text('(asdf:defsystem "demo"\n')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        hook.run(json.dumps({"tool_input": {"file_path": "demo.asd"}, "cwd": str(tmp_path)}))
    said = json.loads(out.getvalue())
    assert said["decision"] == "block" and "runs at start" in said["reason"], said
    assert (tmp_path / "demo.asd").read_text() == '(asdf:defsystem "demo"\n'


# --- over a real MCP server ---------------------------------------------------------------------

def test_over_mcp_git_config_is_refused_and_an_init_file_asks_the_person(tmp_path):
    from mcp_harness import answer, connect, run as run_async

    (tmp_path / ".git").mkdir()
    git_config = tmp_path / ".git" / "config"
    git_config.write_text("[core]\n\tbare = false\n")
    rc = _sbclrc(tmp_path)
    asked: list[str] = []

    def elicit(message: str) -> str:
        asked.append(message)
        return "decline" if len(asked) == 1 else "accept"

    async def scenario():
        async with connect(tmp_path, "--lisp", "none") as client:       # no elicitation
            got = answer(await client.call_tool("insert_form", {
                "file_path": ".git/config", "dialect": "clojure", "position": "end",
                "new_source": 'fsmonitor = "touch /tmp/pwned; false"'}))
            assert got["error"]["code"] == "PROTECTED_PATH", got
            got = answer(await client.call_tool("insert_form", {
                "file_path": ".sbclrc", "position": "end", "new_source": "(print :pwned)"}))
            assert got["error"]["code"] == "NEEDS_PERSON", got
        async with connect(tmp_path, "--lisp", "none", elicit=elicit) as client:
            call = {"file_path": ".sbclrc", "position": "end",
                    "new_source": "(print\u00a0:pwned)"}
            got = answer(await client.call_tool("insert_form", call))
            assert got["error"]["code"] == "DECLINED", got
            assert rc.read_text().count("pwned") == 0
            got = answer(await client.call_tool("insert_form", call))
            assert got["ok"] is True, got
    run_async(scenario)
    assert git_config.read_text() == "[core]\n\tbare = false\n"
    assert "runs code at start" in asked[0] and "+(print<U+00A0>:pwned)" in asked[0], asked[0]
    assert rc.read_text().endswith("(print\u00a0:pwned)\n")


# --- the gate has no lookalikes; data never prints raw escapes ---------------------------------

@pytest.mark.parametrize("code,shown", [
    ("(when\u00a0nil (delete-file \"x\"))", "(when<U+00A0>nil (delete-file \"x\"))"),
    ("(when\u3000nil x)", "(when<U+3000>nil x)"),
    ("(when\u202fnil x)", "(when<U+202F>nil x)"),
    ("(when\u3164nil x)", "(when<U+3164>nil x)"),
    ("(run)\u037e looks commented", "(run)<U+037E> looks commented"),
    ("\uff08car x\uff09", "<U+FF08>car x<U+FF09>"),
    ("(format t \u201cx is ~a\u201d x)", "(format t <U+201C>x is ~a<U+201D> x)"),
    ("(\u03bb (x) x)", "(\u03bb (x) x)"),                          # other scripts stay
    ("(print \"a\u00a0b \u201cq\u201d\") ; caf\u00e9\u3000ok", None),  # strings, comments stay
])
def test_lookalikes_outside_strings_and_comments_are_written_out(code, shown):
    from lispshell.llm.render import summarize
    from lispshell.mcp.consent import confirm_message
    from lispshell.tools.gate import visible_code

    assert visible_code(code, "cl") == (shown or code)
    message = confirm_message(code, "sbcl", 1, 1)
    assert (shown or code) in message
    assert ("lookalike" in message) == (shown is not None and shown != code)
    if shown and shown != code:
        call, _, _ = summarize("eval", {"code": code}, {"ok": True}, 200)
        assert "<U+" in call, call


def test_file_names_with_escapes_print_visibly(tmp_path):
    import subprocess

    from conftest import LISPSHELL

    osc52 = "notes\x1b]52;c;cHduZWQ=\x1b\\.lisp"
    (tmp_path / osc52).write_text("(a\n")
    r = subprocess.run([LISPSHELL, "check", "."], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert "\x1b" not in r.stdout + r.stderr and "notes^[]52;c;cHduZWQ=^[\\.lisp" in r.stdout, r
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "zz\x1b[1A\x1b[2K.asd").write_text('(asdf:defsystem "zz")\n')
    env = dict(os.environ)
    for args in (["trust", str(repo)], ["trust", "--list"]):
        r = subprocess.run([LISPSHELL, *args], capture_output=True, text=True, timeout=60,
                           env=env)
        assert r.returncode == 0 and "\x1b" not in r.stdout + r.stderr, r
        assert "zz^[[1A^[[2K.asd" in r.stdout, r.stdout
    (tmp_path / "w\x1b[2Kx.lisp").write_text("(defun f () 1)\n")
    result = call_tool("insert_form", {"file_path": "w\x1b[2Kx.lisp", "position": "end",
                                       "new_source": "(defun g () 2)"}, _ctx(tmp_path))
    assert result["ok"] is True, result
    r = subprocess.run([LISPSHELL, "undo", "--list"], capture_output=True, text=True,
                       timeout=60)
    assert "w^[[2Kx.lisp" in r.stdout and "\x1b" not in r.stdout, r


def test_over_mcp_the_eval_question_writes_out_a_no_break_space(tmp_path):
    from mcp_harness import answer, connect, run as run_async

    asked: list[str] = []

    def elicit(message: str) -> str:
        asked.append(message)
        return "decline"

    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", elicit=elicit) as client:
            got = answer(await client.call_tool("eval", {"code": "(when\u00a0nil (print 1))"}))
            assert got["error"]["code"] == "DECLINED", got
    run_async(scenario)
    assert "(when<U+00A0>nil (print 1))" in asked[0] and "\u00a0" not in asked[0], asked


def test_a_hard_linked_file_is_judged_by_every_name(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("(x)\n")
    os.link(tmp_path / ".git" / "config", tmp_path / "innocent.lisp")
    (tmp_path / "pair.lisp").write_text("(y)\n")
    os.link(tmp_path / "pair.lisp", tmp_path / "twin.lisp")
    call = {"position": "end", "new_source": "(z)"}
    result = call_tool("insert_form", {"file_path": "innocent.lisp", **call},
                       _ctx(tmp_path, EvalGate("yolo")))
    assert result["error"]["code"] == "PROTECTED_PATH", result
    assert "a hard link" in result["error"]["message"]
    assert (tmp_path / ".git" / "config").read_text() == "(x)\n"
    result = call_tool("insert_form", {"file_path": "pair.lisp", **call},
                       _ctx(tmp_path, EvalGate("ask")))
    assert result["ok"] is True and "(z)" in (tmp_path / "twin.lisp").read_text(), result
