"""Addressing: which node of a CST a tool call means.

Three ways, as in the paredit spec, applied in this order:
  1. `form_type` + `form_name` pick a top-level form (the scope). `name[N]` picks the N-th
     (0-based) of several matches; a CL `defmethod` is also named with its qualifiers and
     specializers, "area (circle)" or "print-object :around (point t)". With neither, the
     scope is the whole file (or, given only `line`, the top-level form on that line).
  2. `path`: child indices from the scope. Inside a top-level form whose head is a symbol the
     first index counts from the element after the head, so in `(defun f (x) body)` [0] is
     `f`, [1] is `(x)`, [2] is `body`; deeper indices count every element, the head is 0.
     In the whole-file scope the first index picks the top-level form.
  3. `target`: source text of the node, whitespace-normalised; exact matches first, then
     lists whose text starts with it (at least the opener and the first element).
     `line` breaks ties (closest start line wins).
Ambiguity lists every match (path, line, text); not found suggests the nearest names.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from lispshell.syntax.cst import (
    LineIndex, Node, StructureError, derived, head_of, inner, is_top_level, outer,
    peek, walk,
)

# Defining forms per dialect: the heads whose second element names what they define.
# Any other top-level form with a symbol head is still addressable by its head and second
# element (`in-package`, `use-modules`...), these just get named in listings and suggestions.
DEFINERS = {
    "cl": {
        "defun", "defmacro", "defvar", "defparameter", "defconstant", "defclass", "defmethod",
        "defgeneric", "defstruct", "defpackage", "define-condition", "deftype", "defsetf",
        "define-compiler-macro", "define-modify-macro", "define-setf-expander",
        "define-symbol-macro", "define-method-combination", "deftest", "defsuite",
    },
    "scheme": {
        "define", "define*", "define-public", "define-syntax", "define-syntax-rule",
        "define-record-type", "define-module", "define-macro", "define-inlinable",
        "define-values", "define-class", "define-method", "define-generic", "define-library",
        "define-syntax-parameter", "define-once", "define-immutable-record-type",
    },
    "clojure": {
        "defn", "defn-", "defmacro", "def", "defonce", "defprotocol", "defrecord", "deftype",
        "defmulti", "defmethod", "ns", "definterface", "defstruct", "deftest", "defspec",
    },
}
# Forms whose name is a whole list: `(define-module (foo bar))`, `(defun (setf x) ...)`.
_LIST_NAMED = {"define-module", "define-library"}


_SPACE = re.compile(r"\s")


def normalize(text: str) -> str:
    """Whitespace-normalised source: runs collapse to one space, none inside delimiters."""
    if _SPACE.search(text) is None:
        return text             # most names: nothing to normalise (a file's forms each ask)
    s = re.sub(r"\s+", " ", text.strip())
    s = re.sub(r"([(\[{]) ", r"\1", s)
    return re.sub(r" ([)\]}])", r"\1", s)


def snippet(text: str, limit: int = 60) -> str:
    s = normalize(text)
    return s if len(s) <= limit else s[:limit - 3] + "..."


@dataclass
class FormInfo:
    """A top-level form as the form tools see it."""
    node: Node          # the top-level node (with any reader prefix, e.g. `#+sbcl`)
    lst: Node           # the list under the prefixes
    type: str           # head symbol text, e.g. "defun"
    name: str | None    # display name, e.g. "area :around (circle)"
    keys: list[str]     # normalised names it answers to
    defining: bool      # the head is one of the dialect's defining forms

    @property
    def label(self) -> str:
        return f"{self.type} {self.name}" if self.name else self.type


def _fold(s: str, dialect: str) -> str:
    return s.lower() if dialect == "cl" else s


def _unqualified(sym: str) -> str:
    for sep in ("::", ":", "/"):
        if sep in sym[1:]:
            return sym.rsplit(sep, 1)[1]
    return sym


def form_info(node: Node, source: str, dialect: str) -> FormInfo | None:
    """FormInfo for a top-level node whose list has a symbol head, else None."""
    lst = inner(node)
    head = head_of(lst, source)
    if head is None:
        return None
    ftype = head.text(source)
    code = lst.code_children
    defining = _fold(_unqualified(ftype), dialect) in DEFINERS.get(dialect, ())
    if len(code) < 2:
        return FormInfo(node, lst, ftype, None, [], defining)
    name_node = inner(code[1])
    keys: list[str] = []
    if name_node.kind == "list" and _fold(ftype, dialect) not in _LIST_NAMED:
        first = name_node.code_children[0] if name_node.code_children else None
        if first is not None and first.text(source).lower() == "setf":
            name = normalize(name_node.text(source))     # (defun (setf foo) ...)
        else:
            # (define (f x) ...), curried (define ((f a) b) ...), (defstruct (point ...))
            probe = name_node
            while probe.kind == "list" and probe.code_children:
                probe = inner(probe.code_children[0])
            name = probe.text(source) if probe.kind != "list" else normalize(name_node.text(source))
    else:
        name = normalize(name_node.text(source))
        if name_node.kind == "list":
            keys.append(normalize(name_node.text(source))[1:-1])   # "foo bar" for (foo bar)
    keys.append(name)
    for prefix in ("#:", ":", "'"):
        if name.startswith(prefix) and len(name) > len(prefix):
            keys.append(name[len(prefix):])   # (defpackage #:foo) answers to "foo"
    display = name
    low = _fold(_unqualified(ftype), dialect)
    if low == "defmethod":
        extra, display = _method_keys(name, code[2:], source, dialect)
        keys.extend(extra)
    return FormInfo(node, lst, ftype, display, [_fold(normalize(k), dialect) for k in keys],
                    defining)


def _method_keys(name: str, rest: list[Node], source: str, dialect: str) -> tuple[list[str], str]:
    """Names a defmethod answers to, and its display name.

    CL: qualifiers then the lambda list: "area", "area :around", "area (circle t)",
    "area (circle)" (trailing t dropped), "area :around (circle)", "area ((c circle) x)".
    Clojure: the dispatch value: "area :circle".
    """
    if dialect != "cl":
        if rest:
            dispatch = normalize(rest[0].text(source))
            return [f"{name} {dispatch}"], f"{name} {dispatch}"
        return [], name
    quals: list[str] = []
    lambda_list = None
    for n in rest:
        if n.kind == "list":
            lambda_list = n
            break
        quals.append(n.text(source))
    keys: list[str] = []
    q = " ".join(quals)
    if q:
        keys.append(f"{name} {q}")
    if lambda_list is None:
        return keys, f"{name} {q}".strip()
    specs: list[str] = []
    for param in lambda_list.code_children:
        ptext = param.text(source)
        if ptext.startswith("&"):
            break
        pc = param.code_children if param.kind == "list" else []
        specs.append(normalize(pc[1].text(source)) if len(pc) >= 2 else "t")
    trimmed = list(specs)
    while trimmed and trimmed[-1].lower() == "t":
        trimmed.pop()
    variants = {f"({' '.join(specs)})", f"({' '.join(trimmed)})",
                normalize(lambda_list.text(source))}
    for v in variants:
        # "area (square)" means the primary method: a qualified one needs its qualifiers
        keys.append(f"{name} {q} {v}" if q else f"{name} {v}")
    display = " ".join(x for x in (name, q, f"({' '.join(specs)})") if x)
    return keys, display


def top_level_forms(root: Node, source: str, dialect: str) -> list[FormInfo]:
    """The forms with a type and name; kept with a shared tree (cst.derived): do not change
    the list."""
    return derived(root, ("forms", dialect), lambda: [
        fi for n in root.code_children if (fi := form_info(n, source, dialect))])


@lru_cache(maxsize=4096)    # asked for every top-level form of a file: heads repeat
def _type_matches(ftype: str, wanted: str, dialect: str) -> bool:
    a, b = _fold(ftype, dialect), _fold(wanted.strip(), dialect)
    if a == b:
        return True
    return a.lower() == b.lower() or _unqualified(a).lower() == _unqualified(b).lower()


def _listing(fi: FormInfo, lines: LineIndex, index: int, query: str | None) -> dict:
    entry = {"form": fi.label, "line": lines.line(fi.node.start)}
    if query:
        entry["form_name"] = f"{query}[{index}]"
    return entry


def find_form(root: Node, source: str, dialect: str, form_type: str | None,
              form_name: str | None, line: int | None = None) -> FormInfo:
    """The one top-level form that form_type/form_name (and `line` for ties) designate."""
    lines = LineIndex(source)
    index = None
    name = form_name.strip() if isinstance(form_name, str) else None
    if name:
        m = re.match(r"^(.*?)\s*\[(\d+)\]$", name)
        if m:
            name, index = m.group(1), int(m.group(2))
    wanted = normalize(name) if name else ""
    folded, lowered = _fold(wanted, dialect), wanted.lower()
    # Only the forms that may match are looked into: on a cold call (a text never seen) the
    # insides of a big file's forms are not built at all (cst.peek).
    forms = [fi for n, seen in first_tokens(root) if _may_match(seen, form_type, lowered, dialect)
             if (fi := form_info(n, source, dialect))]
    matches = [fi for fi in forms
               if (not form_type or _type_matches(fi.type, form_type, dialect))
               and (not name or folded in fi.keys
                    or lowered in [k.lower() for k in fi.keys])]
    what = snippet(" ".join(x for x in (form_type, form_name) if x), 80)
    if not matches and name and " " in name.strip():
        head, rest = name.strip().split(None, 1)
        named = [fi for fi in top_level_forms(root, source, dialect)
                 if _type_matches(fi.type, head, dialect)
                 and _fold(normalize(rest), dialect) in fi.keys]
        if named:
            # form_name "defun g" once got did_you_mean ["defun g"], the label just refused
            raise StructureError(
                "NOT_FOUND", f"form_name {snippet(name, 60)!r} starts with its definer: "
                f"give form_name {snippet(rest, 60)!r} (form_type {head!r} if it is needed)",
                did_you_mean=[normalize(rest)], form_type=named[0].type)
    if not matches:
        raise StructureError("NOT_FOUND", f"no top-level form {what!r}",
                             did_you_mean=_suggest_forms(top_level_forms(root, source, dialect),
                                                         form_type, name, dialect)
                             if len(what) < 80 else [])
    if index is not None:
        if index >= len(matches):
            raise StructureError(
                "NOT_FOUND", f"{what!r}: index [{index}] is out of range, "
                f"{len(matches)} form(s) match (indices start at 0)",
                matches=[_listing(fi, lines, i, name) for i, fi in enumerate(matches)])
        return matches[index]
    if len(matches) == 1:
        if line is not None and not _line_is_in(matches[0], root, lines, line):
            # delete_form {"form_name": "f", "line": 9} deleted f where line 9 is g's
            at = [fi.label for n in root.code_children
                  if lines.line(n.start) <= line <= lines.line(max(n.end - 1, n.start))
                  and (fi := form_info(n, source, dialect))]
            there = f"line {line} is in {at[0]!r}" if at else f"line {line} is not in it"
            raise StructureError(
                "LINE_MISMATCH", f"{what!r} is at lines {lines.line(matches[0].node.start)}-"
                f"{lines.line(max(matches[0].node.end - 1, 0))}, and {there}: say which is "
                "meant (drop line, or give the form_name of that line)",
                form_line=lines.line(matches[0].node.start), **({"line_form": at[0]} if at else {}))
        return matches[0]
    if line is not None:
        containing = [fi for fi in matches
                      if lines.line(fi.node.start) <= line <= lines.line(max(fi.node.end - 1, 0))]
        if len(containing) == 1:
            return containing[0]
        best = min(matches, key=lambda fi: abs(lines.line(fi.node.start) - line))
        return best
    raise StructureError(
        "AMBIGUOUS", f"{len(matches)} top-level forms match {what!r}",
        matches=[_listing(fi, lines, i, name) for i, fi in enumerate(matches)],
        hint="Add [N] to form_name (0-based), a defmethod's specializers, or 'line'")


def _line_is_in(fi: FormInfo, root: Node, lines: LineIndex, line: int) -> bool:
    """`line` falls within the form, or in the comments and blank lines just above it (which
    belong to it: delete_form takes its comment block along)."""
    start, end = lines.line(fi.node.start), lines.line(max(fi.node.end - 1, fi.node.start))
    if start <= line <= end:
        return True
    before = [n for n in root.code_children if n.end <= fi.node.start]
    above = lines.line(max(before[-1].end - 1, 0)) if before else 0
    return above < line < start


def first_tokens(root: Node) -> list[tuple[Node, tuple | None]]:
    """Each top-level node with what its first tokens say (cst.peek), kept with a shared tree:
    the next call on the text does not peek again."""
    return derived(root, "first tokens", lambda: [(n, peek(n)) for n in root.code_children])


def _may_match(seen: tuple | None, form_type: str | None, lowered: str, dialect: str) -> bool:
    """False when a top-level form's first tokens (`seen`, cst.peek) show that it cannot
    match (see find_form): its head is not of form_type, or an atom name that every key it
    answers to contains (with any of the prefixes "#:", ":" and "'" stripped) is not in the
    wanted name."""
    if seen is None:
        return True
    head, name = seen
    if not head or (form_type and not _type_matches(head, form_type, dialect)):
        return False
    if not lowered or name is None or _SPACE.search(name):
        return True
    return name.lower().lstrip("#:'") in lowered


def _suggest_forms(forms: list[FormInfo], form_type, name, dialect) -> list[str]:
    labels = [fi.label for fi in forms if fi.name]
    if not labels:
        return []
    query = " ".join(x for x in (form_type, name) if x)
    close = difflib.get_close_matches(query, labels, n=5, cutoff=0.5)
    if name:
        # Same name under another form type, or a close name of the asked type.
        by_name = difflib.get_close_matches(name, [fi.name for fi in forms if fi.name],
                                            n=5, cutoff=0.6)
        for fi in forms:
            if fi.name in by_name and fi.label not in close:
                close.append(fi.label)
    return close[:5]


# ---- nodes inside a scope ------------------------------------------------------------------

def scope_children(container: Node, source: str) -> tuple[list[Node], int]:
    """The elements a path index counts in `container`, and how many leading ones it skips."""
    if container.kind == "root":
        return container.code_children, 0
    lst = inner(container)
    if lst.kind != "list":
        return [], 0
    skip = 1 if is_top_level(lst) and head_of(lst, source) is not None else 0
    return lst.code_children, skip


def navigate(scope: Node, path: list, source: str) -> Node:
    cur = scope
    for depth, idx in enumerate(path):
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise StructureError("BAD_INPUT", "path must be a list of integers")
        kids, skip = scope_children(cur, source)
        if inner(cur).kind != "list" and cur.kind != "root":
            raise StructureError(
                "NOT_FOUND", f"path {path[:depth + 1]} goes into {snippet(cur.text(source))!r}, "
                "which is not a list", path=path)
        count = len(kids) - skip
        if idx < 0 or idx >= count:
            raise StructureError(
                "NOT_FOUND", f"path index {idx} at depth {depth} is out of range: "
                f"{snippet(cur.text(source), 40)!r} has {count} addressable element(s)"
                + (f" (0..{count - 1})" if count else ""), path=path)
        cur = kids[idx + skip]
    return cur


def path_of(node: Node, scope: Node, source: str) -> list[int] | None:
    """The path from `scope` to `node`, or None (outside the scope, or a top-level head)."""
    n = outer(node)
    path: list[int] = []
    while n is not scope:
        parent = n.parent
        if parent is None:
            return None
        kids, skip = scope_children(parent, source)
        idx = kids.index(n) - skip
        if idx < 0:
            return None
        path.append(idx)
        if parent.kind == "root":
            if scope.kind != "root":
                return None
            break
        n = outer(parent)
    return path[::-1]


@dataclass
class Resolved:
    node: Node
    scope: Node                 # the top-level node, or the root
    form: FormInfo | None       # the scoping form, if form_type/form_name/line chose one
    path: list[int] | None


def resolve(root: Node, source: str, dialect: str, args: dict, *, need_target: bool = True) -> Resolved:
    """The node that form_type/form_name/target/path/line designate (see module docstring)."""
    form_type, form_name = args.get("form_type"), args.get("form_name")
    target, path, line = args.get("target"), args.get("path"), args.get("line")
    form = None
    if form_type or form_name:
        form = find_form(root, source, dialect, form_type, form_name, line)
        scope = form.node
    elif line is not None and target is None and path is None:
        form = _form_at_line(root, source, dialect, line)
        scope = form.node
    else:
        scope = root
    if path is not None:
        if not isinstance(path, list):
            raise StructureError("BAD_INPUT", "path must be a list of integers, e.g. [2, 1]")
        if not path and scope is root and need_target:
            raise StructureError("BAD_INPUT", "path [] is the whole file: give the path of a "
                                 "form, e.g. [0], or form_type/form_name")
        node = navigate(scope, path, source)
    elif target is not None:
        node = find_target(scope, source, dialect, target, line, form)
    elif scope is not root:
        node = scope
    else:
        if need_target:
            raise StructureError("BAD_INPUT", "say which node: give form_type/form_name, "
                                 "target, path or line")
        node = root
    return Resolved(node, scope, form, path_of(node, scope, source) if node is not root else [])


def _form_at_line(root: Node, source: str, dialect: str, line: int) -> FormInfo:
    lines = LineIndex(source)
    for n in root.code_children:
        if lines.line(n.start) <= line <= lines.line(max(n.end - 1, n.start)):
            fi = form_info(n, source, dialect)
            if fi is None:
                lst = inner(n)
                fi = FormInfo(n, lst, "", None, [], False)
            return fi
    raise StructureError("NOT_FOUND", f"no top-level form covers line {line}",
                         lines=lines.line_count)


def find_target(scope: Node, source: str, dialect: str, target: str, line: int | None,
                form: FormInfo | None) -> Node:
    want = normalize(target)
    if not want:
        raise StructureError("BAD_INPUT", "target is empty")
    candidates = [n for n in walk(scope) if n.is_code]
    texts = [normalize(n.text(source)) for n in candidates]

    def prefix_ok(n: Node, t: str, w: str) -> bool:
        lst = inner(n)
        if lst.kind != "list" or not t.startswith(w):
            return False
        kids = lst.code_children
        minimum = normalize(source[n.start:kids[0].end]) if kids else t
        return len(w) >= len(minimum)

    matches = [n for n, t in zip(candidates, texts) if t == want]
    if not matches:
        matches = [n for n, t in zip(candidates, texts) if prefix_ok(n, t, want)]
    if not matches and dialect == "cl":   # the CL reader folds case: so do we, last
        lw = want.lower()
        matches = ([n for n, t in zip(candidates, texts) if t.lower() == lw]
                   or [n for n, t in zip(candidates, texts) if prefix_ok(n, t.lower(), lw)])
    # A prefixed node and its datum can both match (`'x` is not `x`, but `#+sbcl` prefix
    # matches can): keep the outermost of nested equal-start matches.
    lines = LineIndex(source)
    where = form.label if form else "the whole file"
    if not matches:
        raise StructureError("NOT_FOUND", f"no node matches target {snippet(target)!r} in {where}",
                             target=snippet(target, 200), searched_within=where,
                             did_you_mean=_suggest_nodes(candidates, texts, want, scope, source,
                                                         lines))
    if len(matches) > 1 and line is not None:
        dist = [abs(lines.line(n.start) - line) for n in matches]
        best = min(dist)
        matches = [n for n, d in zip(matches, dist) if d == best]
    if len(matches) > 1:
        raise StructureError(
            "AMBIGUOUS", f"{len(matches)} nodes match target {snippet(target)!r} in {where}",
            matches=[{"path": path_of(n, scope, source), "line": lines.line(n.start),
                      "text": snippet(n.text(source))} for n in matches[:20]],
            hint="Use 'path', add 'line', or quote more of the target")
    return matches[0]


def _suggest_nodes(candidates, texts, want, scope, source, lines) -> list[dict]:
    # Compare against each node's text cut to about the target's length, so a long form
    # whose head the model misquoted still scores.
    cut = [t[:len(want) + 10] for t in texts]
    close = difflib.get_close_matches(want, cut, n=3, cutoff=0.5)
    out, seen = [], set()
    for c in close:
        for n, t in zip(candidates, cut):
            if t == c and id(n) not in seen:
                seen.add(id(n))
                out.append({"text": snippet(n.text(source)), "line": lines.line(n.start),
                            "path": path_of(n, scope, source)})
                break
    return out
