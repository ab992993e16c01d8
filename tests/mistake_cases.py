"""The catalogue of the model's ordinary mistakes (tests/cases/mistakes.md): reading it, running
one case, and judging the answer as helpful, vague or silently wrong.

Used by tests/test_model_mistakes.py (every case must be helpful) and bench/model_mistakes.py
(the counts over the whole catalogue). A case is a call as a model makes it, the files it acts
on, and what a right answer holds; see the head of the catalogue for the notation.

Judging:
  helpful   every expectation holds: the answer does what was meant, or refuses and names
            the fix (the `says` lines);
  wrong     the call changed a file or the image in a way the case does not expect, or
            answered ok where a refusal was expected, or its ok answer misses what was asked
            (silently wrong: the model is told it worked);
  vague     refused, but not with the expected code or without naming the fix.
"""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

CATALOGUE = Path(__file__).parent / "cases" / "mistakes.md"
_BLOCK = re.compile(r"^```(file|call|expect|after|lisp) ?(\S*)\n(.*?)^```$", re.M | re.S)


@dataclass
class Case:
    title: str
    tool: str
    args: dict
    expect: list[str]
    files: dict = field(default_factory=dict)    # name -> text before the call
    after: dict = field(default_factory=dict)    # name -> text the call must leave
    setup: list[str] = field(default_factory=list)   # Lisp code run in the image first

    @property
    def live(self) -> bool:
        return bool(self.setup) or any(e.startswith("image ") for e in self.expect) or \
            self.tool in LIVE_TOOLS


LIVE_TOOLS = {"eval", "describe", "symbol_value", "macroexpand", "apropos", "find_definition",
              "who_calls", "who_references", "list_package", "load_file", "load_system"}


def _blocks(text: str) -> list[tuple[str, str, str]]:
    return [(kind, arg, body[:-1] if body.endswith("\n") else body)
            for kind, arg, body in _BLOCK.findall(text)]


def load(path: Path = CATALOGUE, *, with_generated: bool = True) -> tuple[dict, list[Case]]:
    """The shared files and image setup (the section `## Shared`), and every case: the
    catalogue's own, then the generated ones."""
    sections = re.split(r"^## ", path.read_text(), flags=re.M)[1:]
    shared = {"files": {}, "setup": []}
    cases = []
    for section in sections:
        title = section.splitlines()[0].strip()
        blocks = _blocks(section)
        if title == "Shared":
            for kind, arg, body in blocks:
                if kind == "file":
                    shared["files"][arg] = body + "\n"
                elif kind == "lisp":
                    shared["setup"].append(body)
            continue
        case = Case(title, "", {}, [])
        for kind, arg, body in blocks:
            if kind == "file":
                case.files[arg] = body + "\n"
            elif kind == "after":
                case.after[arg] = body + "\n"
            elif kind == "lisp":
                case.setup.append(body)
            elif kind == "call":
                case.tool, case.args = arg, json.loads(body)
            elif kind == "expect":
                case.expect = [ln.strip() for ln in body.splitlines() if ln.strip()]
        if not case.tool or not case.expect:
            raise ValueError(f"case {title!r} needs a call and an expect block")
        cases.append(case)
    return shared, cases + (generated() if with_generated else [])


# Generated cases: the same mistakes over every tool that can make them, so a tool added
# later is covered the day it is added (the registry is the list).
_CAMEL = ("dry_run", "file_path", "form_name", "form_type", "new_source", "expected_hash",
          "keep_head", "clone_head", "drop_head", "allow_rename", "max_lines", "show_paths")
_SAMPLE = {"boolean": True, "integer": 2, "string": "g", "array": [0]}


def _base(tool) -> dict | None:
    """Arguments that make a call of `tool` on the shared d.lisp valid, or None to skip it."""
    props = tool.input_schema.get("properties", {})
    if tool.group == "delimiters" or tool.name in ("set_sentinel",):
        return None
    if "file_path" not in props:
        return {"code": "(f)"} if "code" in props else None
    args = {"file_path": "d.lisp"}
    if "symbol" in props:
        args["symbol"] = "f"
    if "form_name" in props:
        args["form_name"] = "g"
    if "target" in props:
        args["target"] = "(+ y 1)"
    if "new_source" in props:
        args["new_source"] = "(defun g (y) y)"
    return args


def generated() -> list[Case]:
    from lispshell.tools.registry import all_tools

    out = []
    for tool in all_tools():
        props = tool.input_schema.get("properties", {})
        base = _base(tool)
        if base is None:
            continue
        for real in _CAMEL:
            if real not in props:
                continue
            camel = real.split("_")[0] + "".join(w.title() for w in real.split("_")[1:])
            args = dict(base)
            value = args.pop(real, _SAMPLE.get(props[real].get("type"), "x"))
            args[camel] = value
            expect = ["error UNKNOWN_ARGUMENT", f"says {real}"]
            if "file_path" in base:
                expect.append("unchanged d.lisp")
            out.append(Case(f"{tool.name} with {camel} names {real} (generated)", tool.name,
                            args, expect))
        if tool.name.startswith("sexp_") and not tool.read_only:
            args = {k: v for k, v in base.items() if k != "target"}
            out.append(Case(f"{tool.name} without a target changes nothing (generated)",
                            tool.name, args, ["error BAD_INPUT target", "unchanged d.lisp"]))
            out.append(Case(f"{tool.name} given path as a file names file_path (generated)",
                            tool.name, {**{k: v for k, v in base.items() if k != "file_path"},
                                        "path": "d.lisp"},
                            ["error BAD_INPUT file_path"]))
    return out


def _image_value(session, code: str) -> str:
    res = session.eval(code, timeout=20.0, history=False)
    if res.error is not None:
        return f"error: {res.error.message}"
    return (res.values or [""])[-1]


def run(case: Case, shared: dict, folder: Path, session=None) -> tuple[str, list[str], dict]:
    """Run one case in a fresh `folder` (the tools' root); its verdict, what failed, the answer."""
    from lispshell.tools.gate import EvalGate
    from lispshell.tools.registry import ToolContext, call_tool

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    files = {**shared["files"], **case.files}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    if case.live:
        for code in shared["setup"] + case.setup:
            res = session.eval(code, timeout=30.0, history=False)
            if res.error is not None:
                raise RuntimeError(f"setup of {case.title!r} failed: {res.error.message}")
    ctx = ToolContext(session=(lambda: session) if session is not None else None,
                      gate=EvalGate("yolo"), root=folder, eval_timeout=20.0)
    answer = call_tool(case.tool, case.args, ctx)
    text = json.dumps(answer, ensure_ascii=False)
    failed, side_effect = [], False
    for line in case.expect:
        word, _, rest = line.partition(" ")
        if word == "ok":
            good = answer.get("ok") is True
        elif word == "error":
            code, _, say = rest.partition(" ")
            good = answer.get("ok") is False and answer["error"].get("code") == code and \
                say in text
        elif word == "says":
            good = rest in text
        elif word == "lacks":
            good = rest not in text
        elif word == "unchanged":       # unchanged d.lisp: the call left the file as it was
            good = (folder / rest).read_text() == files[rest]
            side_effect |= not good
        elif word == "shorter":         # shorter N: the answer's JSON is under N characters
            good = len(text) < int(rest)
        elif word == "image":           # image CODE => VALUE, evaluated after the call
            code, _, value = rest.partition(" => ")
            good = _image_value(session, code) == value.strip()
            side_effect |= not good
        else:
            raise ValueError(f"case {case.title!r}: unknown expectation {line!r}")
        if not good:
            failed.append(line)
    for name, text_after in case.after.items():
        if (folder / name).read_text() != text_after:
            failed.append(f"after {name}")
            side_effect = True
    if not failed:
        return "helpful", [], answer
    if side_effect or answer.get("ok") is True:
        return "wrong", failed, answer
    return "vague", failed, answer
