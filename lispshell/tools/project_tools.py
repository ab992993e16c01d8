"""Project tools on the live image: load_file, load_system, find_definition, who_calls,
who_references, list_package.

Each works by evaluating one call of a helper that lives in the image (its code is
lispshell/lisp/image/<lisp>-project.{lisp,scm,clj}, defined once per image in its own package,
namespace or module). The model's text never becomes code: names and paths travel as string
literals and the helpers never READ them (names are split and looked up without interning).
A helper answers one string, JSON in ASCII, as the eval's value.

`load_file` and `load_system` run the project's code, so they go through the eval gate like
`eval`; the look-ups do not evaluate anything the model sent.

Positions come back the way each image knows them (SBCL: the character offset of the top-level
form plus the form path inside it; Guile and Clojure: line and column) and are turned into
1-based `path:line:col` here, with lispshell's own reader over the file.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lispshell.lisp.dialects import get_dialect
from lispshell.lisp.image import code
from lispshell.lisp.introspect import string_literal
from lispshell.syntax import cst
from lispshell.syntax.reading import LineIndex
from lispshell.tools.gate import require
from lispshell.tools.registry import ToolContext, ToolError, register

ANSWER_CAP = 4 * 1024 * 1024      # a helper's answer (JSON) is at most this long
FORM_LINES = 40                   # lines of a definition's form shown with it
MAX_XREF = 200                    # callers / references listed

_NAME = {"type": "string", "description": "One symbol, e.g. \"parse-line\", \"pkg:name\", "
                                          "\"my.ns/f\""}
_PACKAGE = {"type": "string"}


def helper_code(lisp: str) -> str:
    return code(get_dialect(lisp).project_file)


def helper_form(lisp: str, function: str, *args: str) -> str:
    """One form that defines the helpers if this image lacks them, then calls `function` on
    `args`, each a string literal."""
    try:
        return get_dialect(lisp).project_form(function, *args)
    except ValueError:
        raise ToolError("BAD_INPUT", f"project tools do not know the Lisp {lisp!r}") from None


def _decode(printed: str) -> Any:
    """The JSON a helper answered, from the printed string value (its only escapes are \\\\ and
    \\", since the JSON is ASCII without control characters)."""
    if len(printed) < 2 or printed[0] != '"' or printed[-1] != '"':
        raise ToolError("LISP_ERROR", "the image's helper answered something unexpected: "
                        + printed[:200])
    return json.loads(re.sub(r'\\(.)', r"\1", printed[1:-1]))


def call_helper(ctx: ToolContext, function: str, *args: str) -> tuple[dict, Any]:
    """(answer, eval result) of one helper call; raises ToolError for everything else.
    `ctx.extra["on_output"]`, when set, receives what the call prints as it comes (the REPL's
    `,load` streams a file's output to the person)."""
    session = ctx.lisp()
    form = helper_form(session.lisp, function, *args)
    on_output = ctx.extra.get("on_output")
    res = session.eval(form, timeout=ctx.eval_timeout, output_cap=ANSWER_CAP, history=False,
                       **({"on_output": on_output} if on_output else {}))
    if getattr(res, "timed_out", False):
        raise ToolError("TIMEOUT", f"No answer within {ctx.eval_timeout:g} s; interrupted.")
    if getattr(res, "interrupted", False):
        raise ToolError("INTERRUPTED", "The call was interrupted.")
    if res.error is not None:
        message = res.error.message.strip()
        raise ToolError("LISP_ERROR", message or str(res.error))
    if not res.values:
        raise ToolError("LISP_ERROR", "the image's helper answered nothing")
    return _decode(res.values[-1]), res


# ---------------------------------------------------------------------------- positions

def _text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset (the one rule: `syntax.reading`)."""
    return LineIndex(text).line_col(offset)


def _code_children(node) -> list:
    return node.code_children


def _node_at_path(text: str, dialect: str, offset: int | None, form_path: list[int]):
    """The node SBCL names by (top-level offset, form path), or None."""
    try:
        root = cst.parse(text, dialect)
    except Exception:  # noqa: BLE001 - a file that no longer reads just has no node
        return None
    tops = _code_children(root)
    node = None
    if offset is not None:
        node = next((t for t in tops if t.start <= offset < max(t.end, t.start + 1)), None)
        node = node or next((t for t in tops if t.start >= offset), None)
        steps = form_path[1:]
    elif form_path:
        node = tops[form_path[0]] if form_path[0] < len(tops) else None
        steps = form_path[1:]
    else:
        return None
    for index in steps:
        if node is None:
            break
        kids = _code_children(node)
        if node.kind == "prefixed":     # 'x reads as (quote x): index 1 is the datum
            node = kids[-1] if index == 1 and kids else None
            continue
        node = kids[index] if index < len(kids) else node
    return node


def _position(entry: dict, dialect: str) -> tuple[str | None, int | None, int | None, Any]:
    """(file, line, column, top-level node) of an entry the helper answered."""
    path = entry.get("file")
    if not isinstance(path, str):
        return None, None, None, None
    if isinstance(entry.get("line"), int):
        line = entry["line"]
        column = entry.get("column") if isinstance(entry.get("column"), int) else 1
        text = _text(path)
        top = None
        if text is not None:
            offset = _offset_of(text, line, column)
            top = _top_form_at(text, dialect, offset)
        return path, line, column, top
    text = _text(path)
    if text is None:
        return path, None, None, None
    offset = entry.get("offset") if isinstance(entry.get("offset"), int) else None
    if offset is not None and entry.get("precise"):
        line, column = _line_col(text, min(offset, len(text)))
        return path, line, column, _top_form_at(text, dialect, offset)
    node = _node_at_path(text, dialect, offset, list(entry.get("form_path") or []))
    if node is None:
        if offset is None:
            return path, None, None, None
        line, column = _line_col(text, offset)
        return path, line, column, _top_form_at(text, dialect, offset)
    line, column = _line_col(text, node.start)
    return path, line, column, _top_form_at(text, dialect, node.start)


def _offset_of(text: str, line: int, column: int) -> int:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    if not 1 <= line <= len(starts):
        return len(text)
    return min(starts[line - 1] + max(column - 1, 0), len(text))


def _top_form_at(text: str, dialect: str, offset: int):
    try:
        root = cst.parse(text, dialect)
    except Exception:  # noqa: BLE001
        return None
    for top in _code_children(root):
        if top.start <= offset < top.end:
            return (top, text)
    return None


def _form_text(top) -> str:
    if not top:
        return ""
    node, text = top
    lines = text[node.start:node.end].splitlines()
    if len(lines) > FORM_LINES:
        lines = lines[:FORM_LINES] + [f"... ({len(lines) - FORM_LINES} more lines; read_form "
                                      "shows the whole form)"]
    return "\n".join(lines)


def _inside_root(ctx: ToolContext, path: str) -> bool:
    if ctx.root is None:
        return True
    try:
        resolved = Path(path).resolve()
        root = ctx.root.resolve()
    except (OSError, RuntimeError):
        return False
    return resolved == root or root in resolved.parents


def _dialect(ctx: ToolContext) -> str:
    return ctx.lisp().dialect.syntax


def _defining_form(path: str, dialect: str, name: str) -> dict:
    """Line and column of the top-level form that defines `name` in the file (Guile knows a
    variable's module, not its line)."""
    from lispshell.syntax.address import top_level_forms

    text = _text(path)
    if text is None:
        return {}
    try:
        root = cst.parse(text, dialect)
    except Exception:  # noqa: BLE001
        return {}
    for info in top_level_forms(root, text, dialect):
        if info.defining and name in (info.keys or []):
            line, column = _line_col(text, info.node.start)
            return {"line": line, "column": column}
    return {}


def _located(ctx: ToolContext, entry: dict, *, with_form: bool) -> dict:
    if entry.get("locate") and isinstance(entry.get("file"), str):
        entry = dict(entry, **_defining_form(entry["file"], _dialect(ctx), entry["locate"]))
        entry.pop("locate")
    path, line, column, top = _position(entry, _dialect(ctx))
    out = {k: v for k, v in entry.items() if k not in ("file", "offset", "form_path", "line",
                                                       "column", "precise", "in_jar")
           and v not in (None, "")}
    if path:
        out["file"] = path
        if line is not None:
            out["line"], out["column"] = line, column
            out["at"] = f"{path}:{line}:{column}"
    if with_form and path and _inside_root(ctx, path):
        form = _form_text(top)
        if form:
            out["form"] = form
    return out


# ---------------------------------------------------------------------------- loading

_READ_ERROR = re.compile(r"READ error during [A-Z-]+:\s*(?P<what>.*?)\s*Line: \d+, Column: \d+, "
                         r"File-Position: (?P<offset>\d+)", re.S)


# How each Lisp says a file ended inside a form: SBCL names its stream, Guile the end's
# position and Clojure the line the form started on; none says which opener is unclosed.
_END_OF_INPUT = re.compile(r"end of file on|unexpected end of input|EOF while reading")


def _unclosed_opener(path: str, dialect: str) -> tuple[str, dict] | None:
    """(message, line and column) naming the opener left open when a file ends inside a form,
    from lispshell's own reading of the file (the one `validate_syntax` gives)."""
    from lispshell.syntax.validate import validate

    text = _text(path)
    if text is None:
        return None
    v = validate(text, dialect)
    if not v.unclosed or not v.errors:
        return None
    outer, first = v.unclosed[0], v.errors[0]
    opener = text[outer["offset"]]
    message = f"read error: end of file inside the form whose {opener!r} is never closed"
    if first.suggest_line:
        message += (f" (the missing closer most likely belongs at line {first.suggest_line}, "
                    f"column {first.suggest_col})")
    return message, {"line": outer["line"], "column": outer["col"]}


def _diagnostic(ctx: ToolContext, note: dict, loaded: str = "") -> str:
    """`path:line:col: severity: message` (path and position as far as the image knew them)."""
    note = dict(note)
    message = str(note.get("message", ""))
    read_error = _READ_ERROR.search(message)
    if read_error:   # SBCL says where the reader stopped only in the message's text
        note["offset"], note["form_path"] = int(read_error["offset"]), []
        message = "read error: " + read_error["what"]
        note["precise"] = True
    if _END_OF_INPUT.search(message) and isinstance(note.get("file"), str):
        unclosed = _unclosed_opener(note["file"], _dialect(ctx))
        if unclosed:
            message, position = unclosed
            note.update(position, offset=None, form_path=None)
    located = _located(ctx, note, with_form=False)
    message = " ".join(message.split())
    # A note of the whole compilation (SBCL's undefined functions, said at its end) has no
    # position: it belongs to the file loaded, not to "?".
    where = located.get("at") or located.get("file") or loaded or "?"
    return f"{where}: {note.get('severity', 'warning')}: {message}"


# Guile prints warnings and errors as `;;; FILE:LINE:COL: warning: ...` (line from 1, column
# from 0; FILE relative to the load path), some with `<unknown-location>`. Clojure prints
# reflection and boxed-math warnings on *err* as `Reflection warning, FILE:LINE:COL - ...`.
_GUILE_NOTE = re.compile(r"^(?:;;; )?(?P<where>\S+?):(?P<line>\d+):(?P<col>\d+): "
                         r"(?:(?P<sev>warning|error): )?(?P<msg>.*)$", re.M)
_GUILE_UNKNOWN = re.compile(r"^;;; <unknown-location>: (?P<sev>warning|error): (?P<msg>.*)$", re.M)
_CLOJURE_NOTE = re.compile(r"^(?P<kind>Reflection|Boxed math|Performance) warning, "
                           r"(?P<where>.+?):(?P<line>\d+):(?P<col>\d+) - (?P<msg>.*)$", re.M)
_QUOTED_NAME = re.compile(r"`([^`']+)'")


def _same_file(where: str, path: Path) -> str:
    return str(path) if str(path).endswith(where.lstrip("./")) else where


def _first_use(path: Path, dialect: str, name: str) -> dict:
    """Where `name` first occurs as code in the file (for warnings Guile cannot place)."""
    text = _text(str(path))
    if text is None:
        return {}
    try:
        root = cst.parse(text, dialect)
    except Exception:  # noqa: BLE001
        return {}
    for node in cst.walk(root):
        if node.kind == "atom" and text[node.start:node.end] == name:
            line, column = _line_col(text, node.start)
            return {"line": line, "column": column}
    return {}


def _normalize_load(lisp: str, path: Path, answer: dict) -> dict:
    """Guile's and Clojure's diagnostics come as text; SBCL's as entries. Make them entries."""
    kind = get_dialect(lisp).load_notes
    if kind == "entries":
        return answer
    notes = list(answer.get("notes") or [])
    text = str(answer.get("warnings") or "")
    if kind == "guile":
        if answer.get("error"):
            text += "\n" + str(answer["error"])
        for m in _GUILE_NOTE.finditer(text):
            if m["where"] == "<unknown-location>":
                continue
            severity = m["sev"] or "error"
            notes.append({"severity": severity, "message": m["msg"].strip(),
                          "file": _same_file(m["where"], path), "line": int(m["line"]),
                          "column": int(m["col"]) + 1})
        for m in _GUILE_UNKNOWN.finditer(text):
            entry = {"severity": m["sev"], "message": m["msg"].strip(), "file": str(path)}
            quoted = _QUOTED_NAME.search(m["msg"])
            if quoted:
                entry.update(_first_use(path, "scheme", quoted[1]))
            notes.append(entry)
        if answer.get("error") and not any(n["severity"] == "error" for n in notes):
            notes.append({"severity": "error", "message": " ".join(str(answer["error"]).split()),
                          "file": str(path)})
    else:
        for m in _CLOJURE_NOTE.finditer(text):
            notes.append({"severity": "warning", "message": f"{m['kind']} warning: {m['msg']}",
                          "file": _same_file(m["where"], path), "line": int(m["line"]),
                          "column": int(m["col"])})
    return dict(answer, notes=notes)


def _gate(ctx: ToolContext, shown: str) -> None:
    # (loading a file runs its code)
    if require(ctx, shown, "Not loaded", "The person declined to load this.") != shown:
        raise ToolError("DECLINED", "The person edited the load request instead of approving "
                        "it; nothing was loaded. Ask what they want, or use eval.")


def _load_answer(ctx: ToolContext, answer: dict, res: Any, what: dict) -> dict:
    diagnostics = [_diagnostic(ctx, n, what.get("file", "")) for n in answer.get("notes") or []]
    result: dict[str, Any] = dict(what)
    result["finished"] = bool(answer.get("finished"))
    if diagnostics:
        result["diagnostics"] = diagnostics
    counts: dict[str, int] = {}
    for note in answer.get("notes") or []:
        counts[note.get("severity", "warning")] = counts.get(note.get("severity", "warning"), 0) + 1
    result["summary"] = ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in counts.items()) \
        or "no warnings"
    if answer.get("dependency_notes"):
        result["dependencies"] = (f"{answer['dependency_notes']} compiler diagnostics from the "
                                  "dependencies compiled on the way, not listed")
    if res.output:
        from lispshell.tools.caps import OUTPUT_CAP, head_tail
        result["output"], cut = head_tail(res.output, OUTPUT_CAP)
        if cut:
            result["output_cut"] = f"{cut} characters cut from the middle of the output"
    if answer.get("error"):
        result["error_text"] = answer["error"]
    if not result["finished"] or answer.get("compile_failed"):
        message = answer.get("error") or "the compiler reported errors; the file was not loaded" \
            if not result["finished"] else "compiled with errors (loaded; see diagnostics)"
        raise ToolError("LOAD_FAILED", str(message), **{k: v for k, v in result.items()
                                                       if k != "summary"})
    return result


def compile_only(ctx: ToolContext, path: Path) -> dict:
    """The person's `,load` at a Lisp whose errors wait in a level (SBCL): the file compiled,
    its diagnostics as `load_file` gives them, and `fasl`, the compiled file the REPL then loads
    as a form of theirs (so an error while loading waits, as SLIME's C-c C-l). The fasl is the
    caller's to delete. Raises ToolError."""
    answer, res = call_helper(ctx, "compile-file-only", str(path))
    notes = answer.get("notes") or []
    counts: dict[str, int] = {}
    for note in notes:
        counts[note.get("severity", "warning")] = counts.get(note.get("severity", "warning"), 0) + 1
    return {"fasl": answer.get("fasl"), "error": answer.get("error"),
            "compile_failed": bool(answer.get("compile_failed")),
            "diagnostics": [_diagnostic(ctx, n, str(path)) for n in notes],
            "summary": ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in counts.items())
            or "no warnings"}


@register(
    "load_file",
    "Load a source file into the live image (compiled where the dialect compiles), after "
    "edits, to check that it compiles and loads: each compiler warning and error as "
    "path:line:col. Runs the file's code: each call may need the person's approval.",
    {"type": "object", "properties": {"file_path": {"type": "string"}},
     "required": ["file_path"]},
    group="project", read_only=False, destructive=True, evaluates=True)
def load_file_tool(args: dict, ctx: ToolContext) -> dict:
    path = ctx.resolve_path(args["file_path"])
    if not path.is_file():
        raise ToolError("NOT_FOUND", f"no such file: {args['file_path']}")
    lisp = ctx.lisp().lisp
    shown = get_dialect(lisp).load_file_shown(str(path))
    _gate(ctx, shown)
    answer, res = call_helper(ctx, "load-file", str(path))
    return _load_answer(ctx, _normalize_load(lisp, path, answer), res, {"file": str(path)})


@register(
    "load_system",
    "Load an ASDF system (Common Lisp) into the live image, with each compiler warning as "
    "path:line:col. Runs the system's code: each call may need the person's approval.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    group="project", read_only=False, destructive=True, evaluates=True)
def load_system_tool(args: dict, ctx: ToolContext) -> dict:
    name = args["name"].strip()
    if not name:
        raise ToolError("BAD_INPUT", "name is empty")
    if not ctx.lisp().dialect.systems:
        raise ToolError("BAD_INPUT", "load_system loads ASDF systems (Common Lisp); in this "
                        "Lisp load files with load_file or require namespaces/modules with eval")
    _gate(ctx, f"(asdf:load-system {string_literal(name)})")
    answer, res = call_helper(ctx, "load-system", name)
    return _load_answer(ctx, answer, res, {"system": name})


# ---------------------------------------------------------------------------- look-ups

@register(
    "find_definition",
    "Where a function, macro, variable, class or method is defined, read from the live image "
    "(never evaluates): file, line and the form itself.",
    {"type": "object", "properties": {"symbol": _NAME, "package": _PACKAGE},
     "required": ["symbol"]},
    group="project", read_only=True)
def find_definition_tool(args: dict, ctx: ToolContext) -> dict:
    answer, _ = call_helper(ctx, "definitions", args["symbol"], args.get("package") or "")
    said, instead = where_looked(ctx, args, bool(answer.get("error"))
                                 or not answer.get("definitions"))
    if instead is not None:
        answer, _ = call_helper(ctx, "definitions", instead, "")
    if answer.get("error"):
        raise ToolError("NOT_FOUND", answer["error"], **said)
    found = [_located(ctx, d, with_form=True) for d in answer.get("definitions") or []]
    result = {"symbol": answer.get("symbol", args["symbol"]), "definitions": found, **said}
    if not found:
        result["note"] = ("The image knows no source location for this symbol (defined at the "
                          "prompt, or built in without sources).")
    return result


def homes(ctx: ToolContext, symbol: str) -> dict | None:
    """Where a name given without a package lives (SBCL): {package, here, meaning, homes},
    `homes` the other packages' symbols of that name that mean something. None where this
    is not known (another Lisp, a qualified name, any failure): a hint, never an error."""
    try:
        if ctx.lisp().dialect.syntax != "cl" or ":" in symbol.strip()[1:] or not symbol.strip():
            return None
        answer, _ = call_helper(ctx, "homes", symbol.strip(), "")
    except ToolError:
        return None
    return None if answer.get("error") else answer


def where_looked(ctx: ToolContext, args: dict, found_nothing: bool) -> tuple[dict, str | None]:
    """For a look-up without a package: where it looked and where else the name lives, and
    the one other symbol to answer for instead when this package's found nothing (`who_calls
    f` from CL-USER answered `calls: []` while DEMO::F had a caller)."""
    if args.get("package"):
        return {}, None
    seen = homes(ctx, args["symbol"])
    if not seen:
        return {}, None
    said = {"looked_in": seen["package"]}
    others = [h for h in seen.get("homes") or [] if isinstance(h, str)]
    if others:
        said["also_in"] = others
    # a name that means something here was what was asked for, even with nothing found
    found_nothing = found_nothing and seen.get("meaning") is not True
    if found_nothing and len(others) == 1:
        said["note"] = (f"{args['symbol']} found nothing in {seen['package']}; answered for "
                        f"{others[0]}, the one other symbol of that name that is defined")
        return said, others[0]
    if found_nothing and others:
        said["note"] = (f"{args['symbol']} found nothing in {seen['package']}; the name is "
                        "defined in the packages of also_in: give package")
    return said, None


def _who(ctx: ToolContext, relation: str, args: dict) -> dict:
    answer, _ = call_helper(ctx, "who", relation, args["symbol"], args.get("package") or "")
    entries = [] if answer.get("error") else answer.get("xref") or []
    said, instead = where_looked(ctx, args, not entries and not answer.get("scan"))
    if instead is not None:
        answer, _ = call_helper(ctx, "who", relation, instead, "")
        entries = [] if answer.get("error") else answer.get("xref") or []
    elif answer.get("error"):
        raise ToolError("NOT_FOUND", answer["error"], **said)
    # SBCL's database has an entry per call site: DEMO::G came twice. Each caller is listed
    # once, at its first site, with how many it has.
    firsts: dict = {}
    for e in entries:
        key = (e.get("name"), e.get("file")) if e.get("name") else json.dumps(e, sort_keys=True)
        if key in firsts:
            firsts[key]["sites"] = firsts[key].get("sites", 1) + 1
        else:
            firsts[key] = dict(e)
    entries = list(firsts.values())
    if answer.get("scan"):    # the image gave the files to scan; the structural reader scans them
        entries = _scan_references(ctx, answer, relation)
    located = [_located(ctx, e, with_form=False) for e in entries[:MAX_XREF]]
    result = {"symbol": answer.get("symbol", args["symbol"]), relation: located, **said}
    if len(entries) > MAX_XREF:
        result["cut"] = f"{len(entries) - MAX_XREF} more not listed"
    if answer.get("how"):
        result["how"] = answer["how"]
    return result


_DECLARATIONS = frozenset({"define-module", "ns", "defpackage", "use-modules", "in-package",
                           "export", "define-library", "import"})


def _scan_references(ctx: ToolContext, answer: dict, relation: str) -> list[dict]:
    """Guile and Clojure keep no cross-reference database: the image names the source files
    of what is loaded, and lispshell's reader finds the symbol as code in them (strings,
    comments and `#_`/`#;` data skipped). A call is the symbol at the head of a list; the
    definition's own name is not a reference."""
    from lispshell.syntax.dialects import resolve_dialect
    from lispshell.syntax.address import form_info
    from lispshell.syntax.forms import same_symbol

    names = [n for n in answer.get("names") or [] if isinstance(n, str) and n]
    out: list[dict] = []
    for path in answer.get("scan") or []:
        text = _text(path)
        if text is None:
            continue
        dialect = resolve_dialect(path) or _dialect(ctx)
        try:
            root = cst.parse(text, dialect)
        except Exception:  # noqa: BLE001 - a file that does not read has no references
            continue
        for top in _code_children(root):
            info = form_info(top, text, dialect)
            if info and info.type in _DECLARATIONS:
                continue      # export lists name the symbol; they neither call nor use it
            defined = info.lst.code_children[1] if info and info.defining and \
                len(info.lst.code_children) > 1 else None
            if defined is not None and defined.kind == "list" and defined.code_children:
                defined = defined.code_children[0]       # (define (name args) ...)
            for node in cst.walk(top):
                if node.kind != "atom" or node is defined:
                    continue
                token = text[node.start:node.end]
                if not any(same_symbol(token, name, dialect) for name in names):
                    continue
                parent = node.parent
                is_call = (parent is not None and parent.kind == "list"
                           and bool(parent.code_children) and parent.code_children[0] is node
                           and not cst.is_quoted(parent, text))
                if relation == "calls" and not is_call:
                    continue
                line, column = _line_col(text, node.start)
                line_text = text.splitlines()[line - 1].strip() if text else ""
                out.append({"file": path, "line": line, "column": column,
                            "in": info.label if info else "", "text": line_text[:160]})
    return out


@register(
    "who_calls",
    "The functions that call a function, from the live image (SBCL's cross-reference "
    "database; Guile and Clojure: the loaded sources, read). Never evaluates.",
    {"type": "object", "properties": {"symbol": _NAME, "package": _PACKAGE},
     "required": ["symbol"]},
    group="project", read_only=True)
def who_calls_tool(args: dict, ctx: ToolContext) -> dict:
    return _who(ctx, "calls", args)


@register(
    "who_references",
    "The code that references a global variable or constant, like who_calls. Never evaluates.",
    {"type": "object", "properties": {"symbol": _NAME, "package": _PACKAGE},
     "required": ["symbol"]},
    group="project", read_only=True)
def who_references_tool(args: dict, ctx: ToolContext) -> dict:
    return _who(ctx, "references", args)


@register(
    "list_package",
    "The exported (public) names of a CL package, Clojure namespace or Guile module, each with "
    "its kind, arglist and first documentation line. Never evaluates.",
    {"type": "object", "properties": {"package": {"type": "string"}}, "required": ["package"]},
    group="project", read_only=True)
def list_package_tool(args: dict, ctx: ToolContext) -> dict:
    answer, _ = call_helper(ctx, "package-names", args["package"])
    if answer.get("error"):
        raise ToolError("NOT_FOUND", answer["error"])
    return answer
