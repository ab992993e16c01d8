"""Structural tools: forms by name (read_module, read_form, replace_form, insert_form,
delete_form, find_references, list_module_exports, check_syntax) and paredit edits (sexp_*).

Every tool works on a file (`file_path`, resolved only through `ctx.resolve_path`) or on a
string (`code`; the answer then carries the new `code`). Mutating tools take `dry_run`, and
`expected_hash` (the `hash` a read returned): a file that changed since is not edited. The
context also remembers the hash of each file these tools last read or wrote, and refuses an
edit when the file changed behind their back. The work itself is in lispshell.syntax.
"""
from __future__ import annotations

import copy
from pathlib import Path

from lispshell.syntax import address, forms, paredit, shapes, source_checks
from lispshell.workspace import edit as editing
from lispshell.syntax.cst import LineIndex, parse_later, parse_shared
from lispshell.syntax.errors import StructureError
from lispshell.syntax.limits import check_nesting
from lispshell.syntax.reading import read
from lispshell.syntax.dialects import DISPLAY_NAME, EXTENSIONS, resolve_dialect
from lispshell.syntax.repair import Decision, decide, edit_summary
from lispshell.syntax.validate import validate
from lispshell.workspace import writes
from lispshell.tools.registry import ToolContext, ToolError, register

# ---- schema pieces ---------------------------------------------------------------------------
# Every definition goes to the LLM on every request, and the model reads them all together. So
# the addressing arguments shared by most tools are explained ONCE, with their rules, in
# read_module (file_path, code, dialect, expected_hash), read_form (form_type, form_name,
# line) and sexp_show_structure (target, path); everywhere else they are bare types.

_EXPLAINED = {
    "file_path": "A Lisp source file; or give code",
    "code": "Source text instead of a file; edits then answer the new code",
    "dialect": "cl, scheme or clojure; default from the file's extension",
    "form_type": "Head of a top-level form: defun, define, defn...",
    "form_name": "Its name; name[N] is the N-th match from 0; CL defmethod: \"area (circle)\", "
                 "\"print-object :around (point t)\"",
    "line": "Breaks ties between matches; alone, picks the top-level form on that line",
    "target": "A node's source text (whitespace-insensitive), or the start of a list, "
              "e.g. \"(let (\"",
    "path": "Child indices, as printed here. In a top-level form [0] is its name (the head "
            "is skipped); in deeper lists index 0 is the head. With no form given, a first "
            "index picks the top-level form",
    "expected_hash": "The hash a read returned: the edit is refused if the file changed since",
}
_TYPES = {"file_path": {"type": "string"}, "code": {"type": "string"},
          "dialect": {"type": "string"}, "form_type": {"type": "string"},
          "form_name": {"type": "string"}, "line": {"type": "integer"},
          "target": {"type": "string"}, "path": {"type": "array", "items": {"type": "integer"}},
          "dry_run": {"type": "boolean"}, "expected_hash": {"type": "string"}}


def addressing(*names: str, explain: bool = False) -> dict:
    """Schema properties for the shared addressing arguments `names`, built fresh each time.
    With explain=True they carry their one-line descriptions (only in the tool that documents
    them; the others refer to it)."""
    props = {}
    for name in names:
        props[name] = copy.deepcopy(_TYPES[name])
        if explain and name in _EXPLAINED:
            props[name]["description"] = _EXPLAINED[name]
    return props


SOURCE = ("file_path", "code", "dialect")
FORM = ("form_type", "form_name", "line")
NODE = ("target", "path")
WRITE = ("dry_run", "expected_hash")
COUNT = {"count": {"type": "integer", "minimum": 1}}


def _schema(*parts: dict, required: tuple = ()) -> dict:
    props: dict = {}
    for p in parts:
        props.update(p)
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return schema


def _opt(args: dict, name: str, default):
    return default if args.get(name) is None else args[name]


# ---- sources -------------------------------------------------------------------------------------

def _dialect_for(args: dict, ctx: ToolContext, path: Path | None) -> str:
    name = args.get("dialect")
    try:
        if name:
            chosen = resolve_dialect(name)
            own = writes.name_dialect(path, ctx.extra.get("extensions")) \
                if path is not None else None
            if own is not None and own != chosen:
                # list_module_exports of a .lisp file read as Scheme answered `exports: []`
                raise ToolError("DIALECT_MISMATCH", f"{path.name} is a {DISPLAY_NAME[own]} "
                                f"file by its name, and dialect says {name!r}: leave "
                                "dialect out (the file's name decides)", field="dialect",
                                file_dialect=own)
            return chosen
        said = writes.name_dialect(path, ctx.extra.get("extensions")) if path is not None else None
        if said is not None:
            return said
        if ctx.dialect:
            return resolve_dialect(ctx.dialect)
    except ValueError as exc:
        raise ToolError("BAD_INPUT", str(exc))
    raise ToolError("BAD_INPUT", "say which dialect: pass dialect (cl, scheme or clojure)")


def _file_path(raw, ctx: ToolContext) -> Path:
    """The file a file_path names, with the mistakes that once got "say which dialect" (a
    directory, a URI, a space around the name) named as what they are."""
    if isinstance(raw, str) and raw.lower().startswith("file://"):
        from urllib.parse import unquote, urlparse

        raise ToolError("BAD_INPUT", f"file_path is a URI: give the path itself, "
                        f"{unquote(urlparse(raw).path)!r}", field="file_path")
    path = ctx.resolve_path(raw)
    shown = raw if len(raw) <= 80 else raw[:77] + "..."
    if raw != raw.strip() and not path.exists():
        raise ToolError("BAD_INPUT", f"file_path {shown!r} has a space at its start or end, and "
                        f"no such file exists: did you mean {raw.strip()[:80]!r}?",
                        field="file_path")
    if path.is_dir():
        raise ToolError("BAD_INPUT", f"{shown!r} is a directory: give one Lisp "
                        "file in it (find_references also searches a folder)", field="file_path")
    return path


def _hashes(ctx: ToolContext) -> dict:
    return ctx.extra.setdefault("structure_hashes", {})


def _source(args: dict, ctx: ToolContext, *, writing: bool = False) -> editing.Source:
    has_file, has_code = args.get("file_path") is not None, args.get("code") is not None
    if has_file == has_code:
        raise ToolError("BAD_INPUT", "give exactly one of file_path or code")
    if has_code:
        return editing.from_code(args["code"], _dialect_for(args, ctx, None))
    path = _file_path(args["file_path"], ctx)
    if writing:
        _may_write(path, args, ctx)
    if not path.exists() and not path.is_symlink():     # before "say which dialect"
        raise ToolError("NOT_FOUND", f"no such file: {address.snippet(args['file_path'], 80)!r}",
                        field="file_path")
    src = editing.load(path, _dialect_for(args, ctx, path), ctx.root)
    known = _hashes(ctx).get(str(path))
    expected = args.get("expected_hash")
    if writing and expected and expected != src.hash:
        raise ToolError("STALE", f"{args['file_path']} changed since you read it (hash "
                        f"{expected}, now {src.hash}); nothing was changed",
                        hash=src.hash, suggestion="Read the form again, then retry")
    if writing and not expected and known and known != src.hash:
        raise ToolError("STALE", f"{args['file_path']} changed since it was last read here "
                        f"(now {src.hash}); nothing was changed", hash=src.hash,
                        suggestion="Read it again (read_form or read_module), or pass the "
                        "current hash as expected_hash")
    if not writing:
        _hashes(ctx)[str(path)] = src.hash
    return src


def _may_write(path: Path, args: dict, ctx: ToolContext) -> writes.Verdict:
    """lispshell.workspace.writes' verdict on the model writing `path`; its refusals as ToolErrors."""
    from lispshell.workspace import project

    startup: frozenset = frozenset()
    if writes.name_dialect(path, ctx.extra.get("extensions")) == "clojure":
        startup = project.startup_files(project.clojure_project(path.parent, ctx.root))
    try:
        return writes.check(path, root=ctx.root,
                            extensions=ctx.extra.get("extensions"), project_startup=startup)
    except writes.WriteRefused as exc:
        raise ToolError(exc.code, exc.message)


def _approved(src: editing.Source, new_text: str, args: dict, ctx: ToolContext) -> None:
    """A file that runs at start is written only with the person's yes (the gate shows the
    diff); the refusal says who refused, as eval's does."""
    verdict = _may_write(src.path, args, ctx)      # again: the answer counts at the write
    if not verdict.startup:
        return
    from lispshell.show import visible
    from lispshell.tools.gate import Edit, unified_diff

    shown = str(src.path)
    edit = Edit(shown, verdict.startup, unified_diff(shown, src.text, new_text))
    if ctx.gate is None:
        raise ToolError("NEEDS_PERSON", f"{visible(shown)} runs at start ({verdict.startup}); "
                        "it is changed only with the person's yes, and no one is here to ask. "
                        "Nothing was changed.")
    decision = ctx.gate.decide_edit(edit)
    if decision.approved:
        return
    if not decision.by_person:
        raise ToolError("NEEDS_PERSON" if decision.refusal == "NOT_ALLOWED" else decision.refusal,
                        f"{visible(shown)} runs at start ({verdict.startup}); it is changed only "
                        f"with the person's yes: {decision.reason} Nothing was changed.")
    reason = f" Reason: {decision.reason}" if decision.reason else ""
    raise ToolError("DECLINED", f"The person declined this change to {visible(shown)} (it runs "
                    f"at start). Nothing was changed.{reason}")


def _finish(src: editing.Source, change: editing.Change, args: dict, ctx: ToolContext,
            operation: str, **extra) -> dict:
    region = {"start_line": change.start_line, "end_line": change.end_line,
              "text": change.region}
    if args.get("dry_run"):
        return {"operation": operation, "dry_run": True,
                "would_change": change.new_text != src.text,
                "original": change.original, "preview": change.region,
                "changed_region": {"start_line": change.start_line,
                                   "end_line": change.end_line}, **extra}
    result = {"operation": operation, "changed_region": region, **extra}
    if src.path is None:
        result["code"] = ((editing.BOM if src.bom else "") + change.new_text)
        return result
    _approved(src, change.new_text, args, ctx)
    new_hash = editing.write(src, change.new_text, tool=operation)
    _hashes(ctx)[str(src.path)] = new_hash
    # The next call on this file finds its tree, its forms' first tokens and its nesting
    # checked.
    text, dialect = change.new_text, src.dialect
    parse_later(text, dialect, lambda root: (check_nesting(text, dialect, "the file"),
                                             address.first_tokens(root)))
    result.update(file_path=args["file_path"], hash=new_hash,
                  bytes=len(src.encode(change.new_text)))
    return result


class FormTree:
    """The top-level forms of a source for the form tools. A file that does not parse still
    has them (recovered from column-0 forms), so a broken form can be read, replaced or
    deleted; `problem` then says what is wrong and `broken` which forms are."""

    def __init__(self, src: editing.Source):
        self.src = src
        self.problem = None
        self.broken: set[int] = set()
        try:
            self.root = parse_shared(src.text, src.dialect)
        except StructureError:
            self.root, chunks = forms.recover(src.text, src.dialect)
            first = validate(src.text, src.dialect).errors
            self.problem = first[0].to_dict() if first else {"message": "does not parse"}
            self.broken = {c.start for c in chunks if c.error}

    @property
    def ok(self) -> bool:
        return self.problem is None

    def is_broken(self, node) -> bool:
        return node.start in self.broken

    def note(self) -> dict:
        if self.ok:
            return {}
        p = self.problem
        where = f" at line {p['line']}, column {p['col']}" if "line" in p else ""
        return {"syntax_error": f"{p['message']}{where}",
                "broken_forms": sorted(address.LineIndex(self.src.text).line(b)
                                       for b in self.broken)}

    def after(self, change: editing.Change) -> dict:
        """What to tell the model about the file's syntax after an edit of a broken file."""
        if self.ok:
            return {}
        v = validate(change.new_text, self.src.dialect)
        if v.ok:
            return {"syntax": "the file parses now"}
        p = v.errors[0]
        return {"syntax_error": f"the file still does not parse: {p.message} at line "
                                f"{p.line}, column {p.col}"}


# ---- repair, called through one small seam ---------------------------------------------------

def _decide(text: str, dialect: str, ctx: ToolContext | None = None) -> Decision:
    """The repair of text that does not read, decided as nobody-asked writes it (a repair
    that fails is none: the edit is then refused cleanly). With a context whose image is
    running, the form-shape test also knows the arities of the image's functions."""
    return decide(text, dialect, "unattended",
                  arity=_image_arity(ctx, dialect) if ctx else None)


MAX_ARGLIST_LOOKUPS = 50     # per repair: each is one eval in the image


def _image_arity(ctx: ToolContext, dialect: str):
    """name -> (fewest, most or None) arguments from the running image's arglists (read by
    name, never evaluated), or None when no image of this dialect is running: none is ever
    started for this, and a busy image answers nothing (try_eval)."""
    session = ctx.running_session()
    try:
        if session is None or resolve_dialect(session.lisp) != dialect:
            return None
    except (ValueError, AttributeError):
        return None
    from lispshell.lisp.introspect import call_form

    cache: dict = {}

    def arity(name: str):
        if name not in cache and len(cache) < MAX_ARGLIST_LOOKUPS:
            cache[name] = None
            try:
                look = call_form(session.lisp, "arglist", name, "")
                res = session.try_eval(look.form, timeout=5.0)
            except Exception:
                res = None
            answer = look.answer(res.output) if res is not None and res.error is None \
                else None
            if answer and answer[0] == "ok":
                cache[name] = shapes.lambda_list_arity(answer[1].split("\n", 1)[0], dialect)
        return cache.get(name)
    return arity


def _validate(text: str, dialect: str) -> dict:
    v = validate(text, dialect)
    return {"valid": v.ok, "forms": v.forms, "errors": [p.to_dict() for p in v.errors],
            "text": v.text}


# ---- form tools ----------------------------------------------------------------------------------

@register("read_module",
          "Outline of a Lisp file or code: one line per top-level form with its line numbers; "
          "forms of up to max_lines lines in full, longer ones as their first line + ' ...'. "
          "Answers the file's hash; edits answer the new one.",
          _schema(addressing(*SOURCE, explain=True),
                  {"max_lines": {"type": "integer", "minimum": 1, "description": "Default 5"}}),
          group="structure", read_only=True)
def read_module(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx)
    tree = FormTree(src)
    max_lines = _opt(args, "max_lines", 5)
    if max_lines < 1:
        raise ToolError("BAD_INPUT", "max_lines must be a positive integer")
    return {"hash": src.hash, "dialect": src.dialect, "forms": len(tree.root.code_children),
            "text": forms.outline(src.text, tree.root, src.dialect, max_lines,
                                  broken=tree.is_broken), **tree.note()}


@register("read_form",
          "Full text of one top-level form, with its line range and the file's hash. Every "
          "tool picks a form with form_type/form_name/line this way.",
          _schema(addressing(*SOURCE), addressing(*FORM, explain=True)),
          group="structure", read_only=True)
def read_form(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx)
    tree = FormTree(src)
    fi = _form(tree.root, src, args)
    lines = read(src.text, src.dialect).lines     # kept with the text's reading
    result = {"form": fi.label, "start_line": lines.line(fi.node.start),
              "end_line": lines.line(fi.node.end - 1), "text": fi.node.text(src.text),
              "hash": src.hash}
    if tree.is_broken(fi.node):
        result["broken"] = "this form does not parse: fix it with replace_form"
    return result


def _form(root, src: editing.Source, args: dict, *, required: bool = True):
    if not (args.get("form_type") or args.get("form_name")):
        if args.get("line") is not None:
            return address._form_at_line(root, src.text, src.dialect, args["line"])
        if not required:
            return None
        raise ToolError("BAD_INPUT", "give form_type and/or form_name (or line)")
    return address.find_form(root, src.text, src.dialect, args.get("form_type"),
                             args.get("form_name"), args.get("line"))


def _new_source(args: dict, src: editing.Source, ctx: ToolContext) -> forms.Prepared:
    return forms.prepare(args.get("new_source"), src.dialect,
                         lambda text, dialect: _decide(text, dialect, ctx), known=src.text)


def _repair_note(prep: forms.Prepared) -> dict:
    """What the model must check when its new_source was changed: a repair's level, the
    repaired form as written and each edit as line:column in that form; a fence taken off;
    quotes made ASCII."""
    return {**({"repaired": prep.repaired} if prep.repaired else {}), **prep.notes}


NEW_SOURCE = {"new_source": {"type": "string", "description": "The complete new form(s)"}}


def _definitions(text: str, dialect: str) -> list[address.FormInfo]:
    """The defining forms of (prepared, parsing) new source."""
    try:
        root = forms.parse(text, dialect)
    except StructureError:
        return []
    return [fi for n in root.code_children
            if (fi := address.form_info(n, text, dialect)) and fi.defining and fi.name]


def _base_name(fi: address.FormInfo, dialect: str) -> str:
    """The name a definition gives, without a method's qualifiers and specializers."""
    name = fi.name or ""
    if address._fold(address._unqualified(fi.type), dialect) in ("defmethod",):
        name = name.split(" ", 1)[0]
    return address._fold(address._unqualified(name), dialect)


def _check_same_definition(fi: address.FormInfo, prep: forms.Prepared, src: editing.Source,
                           args: dict) -> None:
    """replace_form replaces a whole definition: new source that does not define the same
    name (a body sent alone, or another name) would drop the definition, so it is refused
    unless the model says allow_rename."""
    if not (fi.defining and fi.name) or args.get("allow_rename"):
        return
    new = _definitions(prep.text, src.dialect)
    if any(_base_name(n, src.dialect) == _base_name(fi, src.dialect) for n in new):
        return
    shown = address.snippet(prep.text, 60)
    if not new:
        raise ToolError("NOT_A_DEFINITION", f"new_source {shown!r} is not a definition, and "
                        f"replace_form replaces the whole {fi.label!r}: the file would lose it. "
                        f"Send the whole ({fi.type} {_base_name(fi, src.dialect)} ...) form; to "
                        "change one part inside it, use a sexp_* tool with target. "
                        "allow_rename: true replaces it anyway; nothing was changed")
    raise ToolError("NOT_A_DEFINITION", f"new_source defines {new[0].label!r}, not "
                    f"{fi.label!r}: the file would lose {fi.label!r}. To rename it, pass "
                    "allow_rename: true; nothing was changed")


def _duplicates(prep: forms.Prepared, root, src: editing.Source, replaced=None) -> dict:
    """A note when new source defines what the file already defines (another form than the
    one replaced): the model should know there are now two."""
    lines = LineIndex(src.text)
    have = {}
    for fi in address.top_level_forms(root, src.text, src.dialect):
        if fi.defining and fi.name and (replaced is None or fi.node is not replaced.node):
            have.setdefault(address._fold(fi.label, src.dialect), lines.line(fi.node.start))
    said = [f"{n.label} (already at line {have[address._fold(n.label, src.dialect)]})"
            for n in _definitions(prep.text, src.dialect)
            if address._fold(n.label, src.dialect) in have]
    if not said:
        return {}
    return {"duplicate": "the file already defines " + ", ".join(said) + ": it now has two "
            "definitions, and the later one wins when it is loaded; replace_form or "
            "delete_form the old one if that was meant"}


@register("replace_form",
          "Replace a whole top-level form with new_source, also one that does not parse. "
          "Unbalanced new_source is repaired when the evidence is certain or likely; "
          "repaired.edits say what changed (line:column in repaired.form). A guess is "
          "refused with best_candidate. dry_run previews any edit.",
          _schema(addressing(*SOURCE, *FORM), NEW_SOURCE, addressing("dry_run"),
                  addressing("expected_hash", explain=True),
                  {"allow_rename": {"type": "boolean", "description": "new_source may define "
                                    "another name (default: refused)"}},
                  required=("new_source",)),
          group="structure", read_only=False, destructive=True)
def replace_form(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx, writing=True)
    tree = FormTree(src)
    fi = _form(tree.root, src, args)
    prep = _new_source(args, src, ctx)
    _check_same_definition(fi, prep, src, args)
    change = editing.apply(src, forms.replace(src.text, fi, prep.text, src.dialect), whole=tree.ok)
    return _finish(src, change, args, ctx, "replace_form", **_repair_note(prep),
                   **_duplicates(prep, tree.root, src, fi), **tree.after(change))


@register("insert_form",
          "Insert new_source as top-level form(s) before or after the form given, or at the "
          "end. Checked like replace_form.",
          _schema(addressing(*SOURCE, *FORM), NEW_SOURCE,
                  {"position": {"type": "string", "enum": ["before", "after", "end"],
                                "description": "Default: after the form if given, else end"}},
                  addressing(*WRITE), required=("new_source",)),
          group="structure", read_only=False, destructive=True)
def insert_form(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx, writing=True)
    tree = FormTree(src)
    root = tree.root
    anchor = _form(root, src, args, required=False)
    position = args.get("position") or ("after" if anchor else "end")
    if position != "end" and anchor is None:
        raise ToolError("BAD_INPUT", f"position {position!r} needs an anchor: give "
                        "form_type/form_name")
    prep = _new_source(args, src, ctx)
    ed = forms.insert(src.text, root, anchor, position, prep.text, src.dialect)
    change = editing.apply(src, ed, whole=tree.ok)
    return _finish(src, change, args, ctx, "insert_form", **_repair_note(prep),
                   **_duplicates(prep, root, src), **tree.after(change))


@register("delete_form",
          "Delete a top-level form and the comment block directly above it.",
          _schema(addressing(*SOURCE, *FORM, *WRITE)), group="structure", read_only=False,
          destructive=True)
def delete_form(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx, writing=True)
    tree = FormTree(src)
    fi = _form(tree.root, src, args)
    change = editing.apply(src, forms.delete(src.text, tree.root, fi), whole=tree.ok)
    return _finish(src, change, args, ctx, "delete_form", deleted=fi.label, **tree.after(change))


MAX_REF_FILES = 500


@register("find_references",
          "Where a symbol occurs as code (not in strings or comments) in a file, a folder of "
          "Lisp files, or code: line, column, enclosing top-level form, the line's text.",
          _schema({"file_path": {"type": "string", "description": "File or folder"}},
                  addressing("code", "dialect"),
                  {"symbol": {"type": "string", "description": "Unqualified also matches "
                              "pkg:name and ns/name"}}, required=("symbol",)),
          group="structure", read_only=True)
def find_references(args: dict, ctx: ToolContext) -> dict:
    symbol = args["symbol"].strip()
    said = {}
    for prefix in ("#'", "'", "`", "@", "#:"):
        if symbol.startswith(prefix) and len(symbol) > len(prefix):
            # `#'f` or `'f` counted 0 where f occurs: the prefix is not part of the name
            said["searched_for"] = (f"{symbol[len(prefix):]} ({prefix} is a reader prefix, "
                                    "not part of the name)")
            symbol = symbol[len(prefix):]
            break
    if not symbol:
        raise ToolError("BAD_INPUT", "symbol is empty")
    if args.get("file_path") is not None and args.get("code") is None:
        path = ctx.resolve_path(args["file_path"])
        try:
            is_dir = path.is_dir()
        except OSError as exc:
            raise ToolError("BAD_INPUT", f"cannot use {args['file_path']!r}: {exc.strerror}")
        if is_dir:
            return {**_references_in_folder(path, args, ctx, symbol), **said}
    src = _source(args, ctx)
    tree = FormTree(src)
    hits, total = forms.references(src.text, tree.root, src.dialect, symbol)
    result = {"symbol": symbol, "count": total, "references": hits, **said,
              **_qualified_note(symbol, src.dialect)}
    if not tree.ok:
        result.update(tree.note(), partial="forms that do not parse were not searched")
    if total > len(hits):
        result["truncated"] = f"showing {len(hits)} of {total}"
    if src.path is not None:
        result["hash"] = src.hash
    return result


def _qualified_note(symbol: str, dialect: str) -> dict:
    package, name = forms.split_qualified(symbol, dialect)
    if package is None:
        return {}
    return {"counted": f"{symbol} as written with its package, and {name} written bare in "
                       f"code after (in-package {package}) or (ns {package})"}


def _references_in_folder(folder: Path, args: dict, ctx: ToolContext, symbol: str) -> dict:
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in EXTENSIONS
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    hits, total, skipped = [], 0, []
    for p in files[:MAX_REF_FILES]:
        try:
            p = ctx.resolve_path(str(p))   # a symlink may lead out of the root
            if not p.is_file():
                continue
            src = editing.load(p, _dialect_for(args, ctx, p), ctx.root)
            root = editing.parse_source(src)
        except StructureError:       # ToolError included
            skipped.append(str(p.relative_to(folder)) if p.is_relative_to(folder) else str(p))
            continue
        found, n = forms.references(src.text, root, src.dialect, symbol,
                                    limit=max(0, 200 - len(hits)))
        total += n
        rel = str(p.relative_to(folder)) if p.is_relative_to(folder) else str(p)
        hits.extend({"file": rel, **h} for h in found)
    result = {"symbol": symbol, "count": total, "references": hits,
              "files_searched": min(len(files), MAX_REF_FILES), **_qualified_note(symbol, "cl")}
    if total > len(hits):
        result["truncated"] = f"showing {len(hits)} of {total}"
    if len(files) > MAX_REF_FILES:
        result["files_skipped"] = len(files) - MAX_REF_FILES
    if skipped:
        result["unreadable"] = skipped[:20]
    return result


@register("list_module_exports",
          "Public API of a module: Guile define-module #:export, export and define-public; CL "
          "defpackage :export and export; Clojure public vars (not defn- or ^:private).",
          _schema(addressing(*SOURCE)), group="structure", read_only=True)
def list_module_exports(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx)
    tree = FormTree(src)
    return {**forms.exports(src.text, tree.root, src.dialect), **tree.note()}


@register("check_syntax",
          "Check that a file or code reads (delimiters, strings, comments), never evaluating. "
          "Errors come with line and column, plus a repaired version and its repair_level: "
          "certain, likely (the indentation decides) or guess.",
          _schema(addressing(*SOURCE)), group="structure", read_only=True)
def check_syntax(args: dict, ctx: ToolContext) -> dict:
    from lispshell.tools.syntax_tools import quote_problems, unfenced

    src = _source(args, ctx)
    inside, notes = unfenced(src.text)
    if notes and src.path is None:      # the model's own text: it meant the code inside
        src = editing.from_code(inside, src.dialect)
    elif notes:                         # a file that really holds the fence: not Lisp
        result = _validate(src.text, src.dialect)
        result.update(valid=False, repaired_source=inside, repair_level="likely",
                      repairs=["the Markdown fence around the file's code removed"],
                      fence="the file is wrapped in a Markdown fence: repaired_source is the "
                            "code inside it", hash=src.hash)
        return result
    result = {**_validate(src.text, src.dialect), **notes}
    quotes = quote_problems(src.text, src.dialect) if result["valid"] else []
    if quotes:
        result.update(valid=False, errors=quotes,
                      text="✗ Syntax valid, but not as meant: "
                      + source_checks.quote_note(src.text, src.dialect),
                      repaired_source=source_checks.ascii_quotes(src.text, src.dialect),
                      repairs=[source_checks.quote_note(src.text, src.dialect)
                               + ": made ASCII"], repair_level="likely")
    if not result["valid"] and not quotes:
        decision = _decide(src.text, src.dialect, ctx)
        fixed = decision.repair
        if decision.reads:
            result["repaired_source"] = fixed.text
            result["repairs"] = edit_summary(src.text, fixed.edits)
            result["repair_level"] = fixed.level
            result["repair_why"] = fixed.why
            if fixed.rivals:
                result["other_repairs"] = [edit_summary(src.text, r) for r in fixed.rivals]
        else:
            result["repaired_source"] = None
            result["repairs"] = "no repair found: fix it by hand at the position shown"
    if src.path is not None:
        result["hash"] = src.hash
    return result


# ---- paredit tools ------------------------------------------------------------------------------

def _repaired_head(head: str, dialect: str, ctx: ToolContext) -> tuple[str, dict]:
    """A wrap head that does not read, repaired when the repair is certain or likely (else
    left for the paredit op to refuse)."""
    if validate(head, dialect).ok:
        return head, {}
    bare = head.strip()
    if bare[:1] in "([{" and bare[1:].strip() and validate(bare[1:], dialect).ok:
        # "(progn" is the new list's start written with its opener: the head is "progn".
        # Repairing it to "(progn)" wrapped the target as ((progn) x), labelled certain.
        return bare[1:].strip(), {"head": f"head {address.snippet(head, 40)!r} was taken as "
                                          f"{address.snippet(bare[1:], 40)!r}: the new list's "
                                          "opener is sexp_wrap's to write"}
    decision = _decide(head, dialect, ctx)
    fixed = decision.repair
    if not decision.reads:
        return head, {}
    if not decision.writes:
        raise ToolError("INVALID_SOURCE", f"head does not read, and its repair is "
                        f"{fixed.level}, not sure enough to write unattended ({fixed.why}; "
                        f"rule {fixed.rule}): nothing was changed. best_candidate has it; send "
                        "it as head if it is what you meant", best_candidate=fixed.text,
                        candidate_edits=edit_summary(head, fixed.edits))
    return fixed.text, {"repaired": {"level": fixed.level, "why": fixed.why, "head": fixed.text,
                                     "edits": edit_summary(head, fixed.edits, in_result=True)}}


def _need_node(name: str, args: dict) -> None:
    """A structural edit names its node. With only a form given, these tools once acted on
    the whole top-level form: a kill meant for `(+ y 1)` deleted the defun, a slurp pulled the
    next defun in, and the file still read, so nothing caught it. The whole form is still
    there for the asking, as path []."""
    if args.get("target") is None and args.get("path") is None:
        form = " ".join(str(args[k]) for k in ("form_type", "form_name") if args.get(k))
        inside = f" inside {address.snippet(form, 40)!r}" if form else ""
        raise ToolError("BAD_INPUT", f"{name} needs the node it acts on{inside}: give target "
                        "(its source text, e.g. \"(+ y 1)\") or path (sexp_show_structure "
                        "prints paths); path [] with form_name is the whole top-level form. "
                        "Nothing was changed", field="target")


def _paredit(name: str, description: str, op, options: dict | None = None):
    """Register one mutating sexp_* tool: resolve the node, run `op`, apply, write."""
    options = options or {}

    def handler(args: dict, ctx: ToolContext) -> dict:
        _need_node(name, args)
        src = _source(args, ctx, writing=True)
        root = editing.parse_source(src)
        resolved = address.resolve(root, src.text, src.dialect, args)
        kwargs = {k: args[k] for k in options if args.get(k) is not None}
        note = {}
        if isinstance(kwargs.get("head"), str):       # new source: repaired as new_source is
            kwargs["head"], note = _repaired_head(kwargs["head"], src.dialect, ctx)
        try:
            ed = op(src.text, resolved.node, src.dialect, **kwargs)
        except StructureError as exc:
            if resolved.path is not None:
                exc.extra.setdefault("target_path", resolved.path)
            raise
        change = editing.apply(src, ed)
        if ed.rule:
            note["rule"] = ed.rule
        return _finish(src, change, args, ctx, name, **note)

    register(name, description, _schema(addressing(*SOURCE, *FORM, *NODE), options,
                                        addressing(*WRITE)),
             group="structure", read_only=False, destructive=True)(handler)
    return handler


_paredit("sexp_wrap", "Wrap the target node (and count-1 following siblings) in a new list, "
         "optionally starting with head, e.g. \"progn\" or \"let ()\".", paredit.wrap,
         {**COUNT, "wrapper": {"type": "string", "enum": ["round", "square", "curly"],
                               "description": "Default round"},
          "head": {"type": "string"}})
_paredit("sexp_unwrap", "Remove the target list's delimiters, splicing its elements into the "
         "parent; keep \"body\" also drops its first element (the operator).", paredit.unwrap,
         {"keep": {"type": "string", "enum": ["all", "body"], "description": "Default all"}})
_paredit("sexp_raise", "Replace the list enclosing the target with the target (and count-1 "
         "following siblings).", paredit.raise_, COUNT)
SIGNED = {"count": {"type": "integer", "description": "Default 1; negative: the opposite op"}}
KEEP_HEAD = {"keep_head": {"type": "boolean", "description": "Keep the operator first; "
                           "default: only in a call"}}
_paredit("sexp_slurp_forward", "Pull the next count sibling(s) into the target list (none left: "
         "the nearest enclosing list that has one takes it).",
         paredit.slurp_forward, SIGNED)
_paredit("sexp_slurp_backward", "Pull the previous count sibling(s) into the target list (after "
         "a call's operator).", paredit.slurp_backward, {**SIGNED, **KEEP_HEAD})
_paredit("sexp_barf_forward", "Push the last count element(s) of the target list out after it.",
         paredit.barf_forward, SIGNED)
_paredit("sexp_barf_backward", "Push the first count element(s) (after a call's operator) of "
         "the target list out before it.", paredit.barf_backward, {**SIGNED, **KEEP_HEAD})
_paredit("sexp_splice_killing", "Splice the list around the target into its parent, deleting "
         "the elements before the target (backward) or the target and those after (forward).",
         paredit.splice_killing, {"direction": {"type": "string",
                                                "enum": ["backward", "forward"]}})
_paredit("sexp_convolute", "Elements before the target leave its list (spliced) and wrap "
         "the list around it: (let (b) (f (g))) at (g) -> (f (let (b) (g))).", paredit.convolute)
_paredit("sexp_kill", "Delete the target node and count-1 following siblings.", paredit.kill,
         COUNT)
_paredit("sexp_transpose", "Swap the target node with its next sibling.", paredit.transpose)
_paredit("sexp_split", "Split the list enclosing the target in two; the target starts the "
         "second list. clone_head repeats the head symbol in it.", paredit.split,
         {"clone_head": {"type": "boolean"}})
_paredit("sexp_join", "Join the target list with the next sibling list of the same kind; "
         "drop_head drops the second list's first element.", paredit.join,
         {"drop_head": {"type": "boolean"}})


@register("sexp_show_structure",
          "Tree of a top-level form (or the file) to depth: one line per node with its path, "
          "text, kind and line. Every sexp_* tool acts on the node given this way: a form "
          "(as read_form), then path or target inside it.",
          _schema(addressing(*SOURCE, *FORM), addressing(*NODE, explain=True), {
              "depth": {"type": "integer", "minimum": 1, "description": "Default 4"},
              "show_paths": {"type": "boolean", "description": "Default true"},
              "show_text": {"type": "boolean", "description": "Default true"}}),
          group="structure", read_only=True)
def sexp_show_structure(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx)
    root = editing.parse_source(src)
    resolved = address.resolve(root, src.text, src.dialect, args, need_target=False)
    node = resolved.node
    tree = paredit.show_structure(
        src.text, node, depth=_opt(args, "depth", 4),
        show_paths=args.get("show_paths", True) is not False,
        show_text=args.get("show_text", True) is not False,
        base_path=resolved.path if node is not resolved.scope else [])
    result = {"tree": tree}
    if resolved.form is not None:
        result["form"] = resolved.form.label
    if src.path is not None:
        result["hash"] = src.hash
    return result


@register("sexp_get_enclosing",
          "The list enclosing the target, levels up (default 1): its text, path, kind, head, "
          "the child's index in it and its element count.",
          _schema(addressing(*SOURCE, *FORM, *NODE),
                  {"levels": {"type": "integer", "minimum": 1}}),
          group="structure", read_only=True)
def sexp_get_enclosing(args: dict, ctx: ToolContext) -> dict:
    src = _source(args, ctx)
    root = editing.parse_source(src)
    resolved = address.resolve(root, src.text, src.dialect, args)
    result = paredit.get_enclosing(src.text, resolved.node, resolved.scope,
                                   _opt(args, "levels", 1))
    if src.path is not None:
        result["hash"] = src.hash
    return result


@register("undo_edit",
          "Undo the last change lispshell's tools (or `lispshell check --fix`, or its Claude Code "
          "hook) made to a file: the file gets back the bytes it had before. Refused if the "
          "file changed since lispshell wrote it.",
          _schema(addressing("file_path"), required=("file_path",)),
          group="structure", read_only=False, destructive=True)
def undo_edit(args: dict, ctx: ToolContext) -> dict:
    from lispshell.workspace import journal
    from lispshell.workspace import undo as undoing

    path = ctx.resolve_path(args["file_path"])
    try:
        done = undoing.undo(path, ctx.root)
    except journal.UndoError as exc:
        raise ToolError(exc.code, exc.message)
    except OSError as exc:
        raise ToolError("IO_ERROR", f"the undo journal cannot be read: {exc.strerror}")
    _hashes(ctx)[str(path)] = done["restored_hash"]
    return {**done, "file_path": args["file_path"]}
