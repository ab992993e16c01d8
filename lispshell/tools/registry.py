"""The one registry of tools. The REPL's LLM and `lispshell mcp` both take their tools from here.

A tool is a name, a description, a JSON input schema, a handler and honest flags (read-only,
destructive, evaluates). Handlers take `(arguments, context)` and return a JSON-able dict;
`call_tool` turns every failure into `{"ok": false, "error": {code, message, ...}}`, so no
caller ever sees a traceback, whatever the input.
"""
from __future__ import annotations

import importlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from lispshell.syntax.errors import StructureError

# The modules that register tools, imported on first use so that `import lispshell` stays cheap.
TOOL_MODULES = (
    "lispshell.tools.delimiters",   # push/pop/sentinel/balance/batch
    "lispshell.tools.syntax_tools",  # validate_syntax (and repair)
    "lispshell.tools.structure",     # forms by name and paredit edits
    "lispshell.tools.live",          # eval, describe, symbol_value, macroexpand, apropos
    "lispshell.tools.debugging",     # backtrace, eval_in_frame, invoke_restart
    "lispshell.tools.project_tools",  # load_file, find_definition, who_calls, list_package...
    "lispshell.tools.observe",       # trace, trace_log, time, profile
)

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what the Anthropic API accepts
MAX_STRING = 8 * 1024 * 1024  # no single argument string may exceed this


class ToolError(StructureError):
    """A failure a tool reports to its caller: a stable code, a message, and any extra fields.

    The same type as the errors of `syntax/` (`syntax.errors.StructureError`), which tools
    let through: `call_tool` answers any of them with its `to_dict()`."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict
    handler: Callable[[dict, "ToolContext"], dict]
    group: str             # "delimiters" | "syntax" | "structure" | "live": config picks groups
    read_only: bool        # never changes a file or the image
    destructive: bool = False  # may change files or the image
    evaluates: bool = False    # runs code in the Lisp: always goes through the gate
    # field -> the error code of a value outside that field's enum (default BAD_INPUT), where
    # a tool promised its own stable code before the schema checked it
    error_codes: dict = field(default_factory=dict)

    def definition(self) -> dict:
        """The definition as the Anthropic Messages API takes it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass
class ToolContext:
    """What a call may use beyond its arguments. The REPL and the MCP server each build one."""

    session: Callable[[], Any] | None = None  # returns the live Lisp session, (re)starting it
    # returns the session if one is running now, else None, and never starts one; None here
    # means `session` itself never starts one (the REPL's, the tests')
    running: Callable[[], Any] | None = None
    gate: Any = None           # lispshell.tools.gate.EvalGate; None refuses every eval
    root: Path | None = None   # when set, file tools may only touch paths inside it
    dialect: str | None = None  # default dialect for text tools ("cl", "scheme", "clojure")
    eval_timeout: float = 30.0
    output_cap: int = 65536
    # An error of the model's eval waits in a debug level (the REPL, where a person is), or
    # is unwound at once (MCP, tests): lispshell/lisp/levels.py.
    keep_levels: bool = False
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        # The fence is the root's real path, fixed once: paths are checked against it resolved,
        # and files are opened below it component by component, so a root given through a
        # symlink (or as a str) refused every file.
        if self.root is not None:
            self.root = Path(self.root).resolve()

    def lisp(self):
        if self.session is None:
            raise ToolError("NO_LISP", "No Lisp is running here, so live-image tools are unavailable.")
        return self.session()

    def running_session(self):
        """The live session if one is running, else None: for what only helps when an image
        happens to be there (repair asking its arglists), and must not start one."""
        try:
            if self.running is not None:
                return self.running()
            return self.session() if self.session is not None else None
        except ToolError:
            return None

    def resolve_path(self, path: Any) -> Path:
        """An absolute path for a file tool, refused if it leaves `root` (also through symlinks).
        Every way a path can be malformed gets its own clear BAD_INPUT, never an exception."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise ToolError("BAD_INPUT", "file_path must be a non-empty string without NUL bytes")
        try:
            p = Path(path).expanduser()
        except RuntimeError:
            user = path[1:].split("/", 1)[0]
            raise ToolError("BAD_INPUT", f"file_path starts with ~{user}, and there is no such "
                            "user") from None
        if len(os.fsencode(str(p))) > 4095:
            raise ToolError("BAD_INPUT", "file_path is longer than the system allows (4095 bytes)")
        if any(len(os.fsencode(part)) > 255 for part in p.parts):
            raise ToolError("BAD_INPUT", "a name in file_path is longer than the system allows "
                            "(255 bytes)")
        try:
            if self.root is None:
                return p.resolve()
            root = self.root.resolve()
            resolved = (root / p).resolve() if not p.is_absolute() else p.resolve()
        except RuntimeError:           # Python's word for a symlink loop
            raise ToolError("BAD_INPUT", f"{path!r} is a symlink loop") from None
        except OSError as exc:
            raise ToolError("BAD_INPUT", f"cannot use {path!r}: {exc.strerror}") from None
        if resolved != root and root not in resolved.parents:
            raise ToolError("OUTSIDE_ROOT", f"{path!r} is outside the allowed root {str(root)!r}",
                            root=str(root))
        return resolved


_REGISTRY: dict[str, Tool] = {}
_loaded = False


def register(name: str, description: str, input_schema: dict, *, group: str, read_only: bool,
             destructive: bool = False, evaluates: bool = False,
             error_codes: dict | None = None):
    """Decorator: `@register("validate_syntax", "...", {...}, group="syntax", read_only=True)`."""
    if not NAME_PATTERN.match(name):
        raise ValueError(f"tool name {name!r} does not match {NAME_PATTERN.pattern}")

    def decorate(handler):
        if name in _REGISTRY:
            raise ValueError(f"tool {name!r} registered twice")
        # Closed: an argument the tool does not take is refused (validate_arguments), and the
        # schema says so to the model and to MCP clients.
        schema = {**input_schema, "additionalProperties": False} \
            if "additionalProperties" not in input_schema else input_schema
        _REGISTRY[name] = Tool(name, description, schema, handler, group, read_only,
                               destructive, evaluates, dict(error_codes or {}))
        return handler

    return decorate


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in TOOL_MODULES:
            importlib.import_module(module)


def _place(tool: Tool) -> int:
    module = getattr(tool.handler, "__module__", "")
    return TOOL_MODULES.index(module) if module in TOOL_MODULES else len(TOOL_MODULES)


def all_tools(groups: list[str] | None = None) -> list[Tool]:
    """Every registered tool, or only those in `groups`, in TOOL_MODULES' order and each
    module's own: the same list whichever module a process happened to import first (the
    fast MCP handshake and the SDK must list the tools alike)."""
    _load()
    ordered = sorted(_REGISTRY.values(), key=_place)     # stable: a module's own order stays
    return [t for t in ordered if groups is None or t.group in groups]


class ToolSpecError(ValueError):
    """A tool selection (`--tools`, `[mcp] tools`) naming a group or tool that does not exist."""


def select_tools(spec: str | list[str] | None) -> list[Tool]:
    """The tools a selection names, in registration order.

    `spec` is comma-separated (or a list): group names (`live`, `syntax`, `delimiters`,
    `structure`, ...), tool names, `all`, and `-NAME` to drop a group or a tool. A selection of
    drops only (`-structure`) starts from every tool; otherwise it starts from nothing and adds.
    None or empty selects every tool. Unknown names raise ToolSpecError, with the closest names.
    """
    tools = all_tools()
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec or [])]
    items = [s for s in items if s]
    if not items:
        return tools
    groups = {t.group for t in tools}
    names = {t.name for t in tools}

    def members(item: str) -> set[str]:
        if item == "all":
            return set(names)
        if item in groups:
            return {t.name for t in tools if t.group == item}
        if item in names:
            return {item}
        import difflib
        close = difflib.get_close_matches(item, sorted(groups | names), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ToolSpecError(f"unknown tool or group {item!r}{hint} (groups: "
                            f"{', '.join(sorted(groups))}; `all` is every tool)")

    chosen: set[str] = set() if any(not i.startswith("-") for i in items) else set(names)
    for item in items:
        if item.startswith("-"):
            chosen -= members(item[1:].strip())
        else:
            chosen |= members(item)
    return [t for t in tools if t.name in chosen]


def get_tool(name: str) -> Tool | None:
    _load()
    return _REGISTRY.get(name)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(where: str, value: Any, depth: int = 0) -> None:
    """A lone surrogate is not Unicode text: no file can hold it and no answer can echo it."""
    if isinstance(value, str):
        m = _SURROGATE.search(value)
        if m:
            raise ToolError("BAD_INPUT", f"{where} holds a lone surrogate (U+{ord(m.group()):04X} "
                            f"at index {m.start()}), which is not valid Unicode text",
                            field=where)
    elif depth < 50 and isinstance(value, dict):
        for k, v in value.items():
            _no_surrogates(f"{where}.{k}", v, depth + 1)
    elif depth < 50 and isinstance(value, list):
        for i, v in enumerate(value[:100_000]):
            _no_surrogates(f"{where}[{i}]", v, depth + 1)


def _json_safe(value: Any) -> Any:
    """The answer with any lone surrogate replaced (U+FFFD): it always encodes as UTF-8."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_json_safe(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


# ---- arguments against the schema ------------------------------------------------------------
# Every schema is closed (`additionalProperties: false`, added at registration): an argument
# the tool does not take is refused before the tool runs, never dropped. A dropped `dryRun`
# wrote the file, a dropped `pkg` ran the code in CL-USER, a dropped `after` appended at the
# end: each answered ok and did what the model did not mean.

# Names models use for an argument, by the real name they mean. An entry only applies to a
# tool that has the real argument.
_ALIASES = {
    "dry_run": ("dryrun", "preview", "dry", "simulate", "whatif", "noop", "check_only",
                "checkonly"),
    "package": ("pkg", "in_package", "inpackage", "ns", "namespace", "module", "in_ns"),
    "dialect": ("lang", "language", "lisp", "syntax", "dialect_name"),
    "file_path": ("path", "file", "filename", "filepath", "file_name", "uri", "url",
                  "source_file", "document"),
    "count": ("n", "times", "repeat", "num", "number", "amount", "howmany", "how_many", "k"),
    "target": ("expr", "expression", "node", "sexp", "selector", "form", "match", "text",
               "subform", "at"),
    "new_source": ("source", "new_code", "replacement", "body", "new_text", "content",
                   "new_form", "text", "code", "definition", "newsource"),
    "code": ("source", "text", "form", "expr", "expression", "program", "input", "content",
             "sexp"),
    "form": ("code", "expr", "expression", "source", "sexp"),
    "symbol": ("name", "sym", "function", "fn", "identifier", "var", "variable", "symbol_name"),
    "form_name": ("name", "function", "fn", "definition", "def", "symbol", "function_name"),
    "form_type": ("type", "kind", "definer", "head"),
    "expected_hash": ("hash", "sha", "sha256", "file_hash"),
    "pattern": ("query", "regex", "search", "substring", "name", "term"),
    "keep": ("keep_body", "body_only", "drop_head"),
    "line": ("line_number", "lineno", "row", "at_line"),
}
# Arguments whose meaning needs two real ones: the fix is spelled out with the model's value.
_POSITIONAL = ("after", "before")


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower().replace("-", "_")


def _short(value: Any, limit: int = 60) -> str:
    """A value for a message, never echoed whole: an argument may be a megabyte."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def suggest_argument(tool: Tool, name: str, value: Any = None) -> tuple[list[str], str]:
    """The real arguments of `tool` that an unknown argument `name` most likely means, and a
    sentence with the fix (empty when there is none to say)."""
    import difflib

    props = tool.input_schema.get("properties", {})
    if name.lower() in _POSITIONAL and "position" in props:
        fix = {"position": name.lower()}
        if isinstance(value, str):
            fix["form_name"] = value
        return ["position", "form_name"], (f"To insert {name.lower()} a form, give position "
                                           f"and form_name: {_short(fix, 100)}")
    if _squash(name) == "keepbody" and props.get("keep", {}).get("enum"):
        return ["keep"], 'To drop the operator and keep the body, give keep: "body"'
    found: list[str] = []
    snake, squashed = _snake(name), _squash(name)
    for real in props:
        if snake == real or squashed == _squash(real):
            found.append(real)          # dryRun, dry-run, filePath, newSource
    for real, aliases in _ALIASES.items():
        if real in props and real not in found and (snake in aliases or squashed in aliases
                                                     or squashed in map(_squash, aliases)):
            found.append(real)
    if not found:
        by_key = {_squash(p): p for p in props}
        found = [by_key[k] for k in difflib.get_close_matches(squashed, list(by_key), n=2,
                                                               cutoff=0.6)]
    return found, ""


def _type_words(schema: dict) -> str:
    t = schema.get("type")
    types = t if isinstance(t, list) else [t] if t else []
    words = {"array": "a list", "object": "an object", "string": "a string",
             "integer": "an integer", "number": "a number", "boolean": "true or false",
             "null": "null"}
    text = " or ".join(words.get(x, x) for x in types)
    items = schema.get("items", {}).get("type") if schema.get("type") == "array" else None
    if items:
        text = f"a list of {words.get(items, items).split(' ', 1)[-1]}s"
    return text


# Type mistakes with a known cause: the sentence that names the fix.
def _type_hint(tool: Tool, field: str, value: Any) -> str:
    props = tool.input_schema.get("properties", {})
    if field == "path" and isinstance(value, str) and "file_path" in props:
        return ("path is a node's child indices, e.g. [2, 1] (sexp_show_structure prints "
                "them); the file goes in file_path")
    if field == "line" and isinstance(value, str) and value.strip().isdigit():
        return f"line is a number: give {int(value.strip())}, not a string"
    if isinstance(value, str) and value.strip().lower() in ("true", "false") \
            and props.get(field, {}).get("type") == "boolean":
        return f"{field} is a JSON boolean: give {value.strip().lower()}, not a string"
    return ""


def _validator(tool: Tool):
    from jsonschema import Draft202012Validator

    cached = _VALIDATORS.get(tool.name)
    if cached is None or cached[0] is not tool.input_schema:
        cached = (tool.input_schema, Draft202012Validator(tool.input_schema))
        _VALIDATORS[tool.name] = cached
    return cached[1]


_VALIDATORS: dict[str, tuple] = {}


def _schema_error(tool: Tool, error) -> ToolError:
    """One jsonschema error as the model reads it: the field, what it must be, the fix; the
    model's value is never echoed whole."""
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    field = str(error.absolute_path[0]) if error.absolute_path else where
    kind, schema = error.validator, error.schema
    if kind == "type":
        message = f"{where} must be {_type_words(schema)}"
        hint = _type_hint(tool, where, error.instance) if where == field else ""
        if hint:
            message += f": {hint}"
    elif kind == "enum":
        message = f"{where} must be one of {', '.join(map(str, schema['enum']))} (got " \
                  f"{_short(error.instance)})"
    elif kind == "minimum" and schema["minimum"] == 1:
        message = f"{where} must be a positive integer (got {_short(error.instance)})"
    elif kind == "minimum":
        message = f"{where} must be at least {schema['minimum']} (got {_short(error.instance)})"
    elif kind == "maximum":
        message = f"{where} must be at most {schema['maximum']} (got {_short(error.instance)})"
    elif kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        message = f"{where}: missing required field {missing!r}"
    elif kind == "additionalProperties":
        message = f"{where} takes only {', '.join(sorted(schema.get('properties', {})))}"
    else:
        message = f"{where} does not fit the tool's schema ({kind})"
    code = tool.error_codes.get(field, "BAD_INPUT") if kind == "enum" else "BAD_INPUT"
    return ToolError(code, message, field=field)


def validate_arguments(tool: Tool, arguments: Any) -> dict:
    """The arguments checked against the tool's closed schema, before the tool runs: unknown
    ones are refused (UNKNOWN_ARGUMENT, naming the closest real ones), then missing ones, then
    types, enums and bounds (BAD_INPUT naming the field). An optional argument given as null
    counts as not given. Nothing runs unless all of it holds."""
    if not isinstance(arguments, dict):
        raise ToolError("BAD_INPUT", "arguments must be a JSON object")
    for name, value in arguments.items():
        _no_surrogates(str(name), value)
    schema = tool.input_schema
    props = schema.get("properties", {})
    unknown = [str(k) for k in arguments if k not in props]
    if unknown:
        raise _unknown_error(tool, unknown, arguments)
    for name in schema.get("required", []):
        if name not in arguments or arguments[name] is None:
            raise ToolError("BAD_INPUT", f"missing required field {name!r}", field=name)
    args = {k: v for k, v in arguments.items() if v is not None}
    errors = sorted(_validator(tool).iter_errors(args),
                    key=lambda e: (len(e.absolute_path), str(list(e.absolute_path))))
    if errors:
        raise _schema_error(tool, errors[0])
    for name, value in args.items():
        if isinstance(value, str) and len(value) > MAX_STRING:
            raise ToolError("BAD_INPUT", f"{name} is longer than the limit of {MAX_STRING} "
                            "characters", field=name, limit=MAX_STRING)
    return args


def _unknown_error(tool: Tool, unknown: list[str], arguments: dict) -> ToolError:
    shown = [n if len(n) <= 40 else n[:37] + "..." for n in unknown[:5]]
    suggestions: dict[str, list[str]] = {}
    fixes = []
    for name, label in zip(unknown, shown):
        found, fix = suggest_argument(tool, name, arguments.get(name))
        if found:
            suggestions[label] = found
        if fix:
            fixes.append(fix)
    parts = []
    for label in shown:
        if label in suggestions:
            joint = " + " if label.lower() in _POSITIONAL else " or "
            parts.append(f"{label!r} (did you mean {joint.join(suggestions[label])}?)")
        else:
            parts.append(repr(label))
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    what = "nothing was run" if tool.evaluates else "nothing was changed" \
        if not tool.read_only else "the tool did not run"
    message = (f"{tool.name} takes no argument {', '.join(parts)}{more}; {what}. "
               f"Its arguments: {', '.join(sorted(tool.input_schema.get('properties', {}))) or 'none'}")
    if fixes:
        message += ". " + "; ".join(fixes)
    return ToolError("UNKNOWN_ARGUMENT", message, unknown=shown,
                     did_you_mean=suggestions, field=shown[0])


# Source text arguments: refused at once when nested absurdly deep (lispshell.syntax.limits).
_SOURCE_ARGUMENTS = ("code", "new_source", "form")


def _check_nesting(args: dict, context: ToolContext | None) -> None:
    from lispshell.syntax.dialects import resolve_dialect
    from lispshell.syntax.limits import check_nesting

    for key in _SOURCE_ARGUMENTS:
        text = args.get(key)
        if not isinstance(text, str):
            continue
        try:
            dialect = resolve_dialect(args.get("dialect") or (context and context.dialect)
                                      or "cl")
        except ValueError:
            dialect = "cl"
        check_nesting(text, dialect, key)


def call_tool(name: str, arguments: dict, context: ToolContext | None = None) -> dict:
    """Run a tool by name. Always answers a JSON-able dict with "ok"; never raises for bad input."""
    tool = get_tool(name) if isinstance(name, str) else None
    if tool is None:
        return {"ok": False, "error": {"code": "UNKNOWN_TOOL", "message": f"no tool named {name!r}",
                                       "tools": sorted(_REGISTRY)}}
    try:
        args = validate_arguments(tool, arguments)
        _check_nesting(args, context)
        result = tool.handler(args, context or ToolContext())
        result = dict(result)
        result.setdefault("ok", True)
    except StructureError as exc:         # ToolError, and any error of syntax/ let through
        result = {"ok": False, "error": exc.to_dict()}
    except RecursionError:
        result = {"ok": False, "error": {"code": "TOO_DEEP", "message": "input nested too deeply"}}
    except Exception as exc:  # a bug of ours: say so plainly, without a traceback
        result = {"ok": False, "error": {"code": "INTERNAL",
                                         "message": f"{name} failed: {type(exc).__name__}: {exc}"}}
    return _json_safe(_not_echoed(result, arguments))


ECHO_CAP = 1000    # an argument longer than this is never sent back whole


def _not_echoed(result: dict, arguments: Any) -> dict:
    """The answer without any long argument echoed whole (a 1 MB form_name came back in its
    refusal): in an error, wherever it appears; in an ok answer, a field that is the argument
    itself."""
    if not isinstance(arguments, dict):
        return result
    long = [v for v in arguments.values() if isinstance(v, str) and len(v) > ECHO_CAP]
    if not long:
        return result

    def cut(value: Any, anywhere: bool) -> Any:
        if isinstance(value, str):
            for arg in long:
                if value == arg or (anywhere and arg in value):
                    value = value.replace(arg, f"{arg[:60]}... [{len(arg):,} characters, as "
                                               "sent]")
            return value
        if isinstance(value, dict):
            return {k: cut(v, anywhere) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v, anywhere) for v in value]
        return value

    return cut(result, result.get("ok") is False)


def result_text(result: dict) -> str:
    """The text form of a result that the LLM and MCP clients read: compact JSON, UTF-8 kept."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
