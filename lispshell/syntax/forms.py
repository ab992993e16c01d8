"""Form-level operations: a module's outline, one form's text, replace/insert/delete by name,
symbol references and a module's exports. Pure functions on text and CST, like paredit.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lispshell.syntax.address import FormInfo, _unqualified, form_info, normalize
from lispshell.syntax.cst import LineIndex, Node, StructureError, inner, parse, walk
from lispshell.syntax.lexer import tokenize
from lispshell.syntax.paredit import Edit, _ends_in_line_comment, _spacing_for_delete
from lispshell.syntax.reading import read
from lispshell.syntax.repair import edit_summary
from lispshell.syntax import source_checks
from lispshell.syntax.validate import validate


# ---- reading --------------------------------------------------------------------------------

def outline(src: str, root: Node, dialect: str, max_lines: int = 5, broken=None) -> str:
    """One entry per top-level form: `L<first>-<last> text`, short forms in full, long ones as
    their first line followed by ` ...`; `broken(node)` marks forms that do not parse."""
    lines = LineIndex(src)
    out = []
    for node in root.code_children:
        first, last = lines.line(node.start), lines.line(node.end - 1)
        where = f"L{first}" if first == last else f"L{first}-{last}"
        text = node.text(src)
        if last - first + 1 <= max_lines:
            body = text.replace("\r\n", "\n")
        else:
            body = src[node.start:lines.line_end(first)].rstrip() + " ..."
        if broken is not None and broken(node):
            body += "   <- does not parse"
        out.append(f"{where} {body}")
    return "\n".join(out)


def leading_comment_start(src: str, root: Node, node: Node) -> int:
    """Where the comment block right above a top-level node starts (its own start if none).

    The block is the comments directly above, each first on its line, with no blank line
    between them and the form."""
    lines = LineIndex(src)
    kids = root.children
    i = kids.index(node)
    start = node.start
    while i > 0:
        prev = kids[i - 1]
        if prev.kind not in ("comment", "block_comment"):
            break
        pline = lines.line(prev.start)
        if src[lines.line_start(pline):prev.start].strip():
            break     # a trailing comment of the line above: it belongs to that line
        end_line = lines.line(max(prev.end - 1, prev.start))
        if lines.line(start) - end_line > 1:
            break     # a blank line separates them
        if prev.kind == "comment" and src.startswith(";;;", prev.start) and \
                src[prev.start:prev.end].strip(";").strip() == "":
            break
        start = prev.start
        i -= 1
    return start


# ---- files that do not parse ---------------------------------------------------------------------

@dataclass
class Chunk:
    """A stretch of a broken file from one column-0 form to the next."""
    start: int
    end: int
    error: StructureError | None     # None: this stretch parses


def recover(src: str, dialect: str) -> tuple[Node, list[Chunk]]:
    """Top-level forms of a file that does not parse as a whole.

    Top-level forms start in column 0, so the text is cut before every token that does;
    stretches that parse give their forms as usual, a broken one becomes a single "list" node
    (its head and name read from its first tokens) that read_form shows and replace_form or
    delete_form can replace. Returns a root whose children are those nodes, and the chunks."""
    reading = read(src, dialect)
    tokens, lines = reading.tokens, reading.lines
    # Column 0 is a line's first offset (any character before it has width): a set look-up,
    # where measuring each token's line prefix was quadratic on one long line.
    line_starts = set(lines.starts)
    starts = [t for t in tokens if t.start in line_starts and t.kind not in ("close",)]
    cuts = [t.start for t in starts if t.kind not in ("comment", "block_comment")] or [0]
    root = Node("root", 0, len(src))
    chunks = []
    bounds = cuts + [len(src)]
    if cuts[0] > 0:
        bounds = [0] + bounds
    for a, b in zip(bounds, bounds[1:]):
        piece = src[a:b]
        try:
            sub = parse(piece, dialect)
        except StructureError as exc:
            end = a + len(piece.rstrip())
            node = _broken_node(src, a, end, dialect)
            node.parent = root
            root.children.append(node)
            chunks.append(Chunk(a, end, exc))
            continue
        for child in sub.children:
            _shift(child, a)
            child.parent = root
            root.children.append(child)
        chunks.append(Chunk(a, b, None))
    return root, chunks


def _shift(node: Node, delta: int) -> None:
    for n in walk(node, skip_datum_comments=False):
        n.start += delta
        n.end += delta
        if n.open_end >= 0:
            n.open_end += delta
        if n.close_start >= 0:
            n.close_start += delta


def _broken_node(src: str, start: int, end: int, dialect: str) -> Node:
    """A stand-in list node for a broken form, with its first few tokens as children so that
    form_info can read its head and name: `(defun foo (x` -> head defun, name foo."""
    node = Node("list", start, end, open_end=start + 1, close_start=end, delim="paren")
    tokens, _ = tokenize(src[start:end], dialect)
    if not tokens or tokens[0].kind != "open":
        return node
    node.open_end = start + tokens[0].end
    depth = 0
    for t in list(tokens)[1:8]:
        if t.kind == "open":
            if depth == 0:
                child = Node("list", start + t.start, -1, parent=node,
                             open_end=start + t.end, delim=t.delim)
                node.children.append(child)
            elif depth == 1:
                leaf = Node("atom", start + t.start, start + t.end, parent=node.children[-1])
                node.children[-1].children.append(leaf)
            depth += 1
        elif t.kind == "close":
            depth -= 1
            if depth == 0 and node.children and node.children[-1].end < 0:
                node.children[-1].end = start + t.end
                node.children[-1].close_start = start + t.start
            if depth < 0:
                break
        elif t.kind in ("atom", "string", "char"):
            kind = "atom" if t.kind == "atom" else t.kind
            if depth == 0:
                node.children.append(Node(kind, start + t.start, start + t.end, parent=node))
            elif depth == 1 and node.children and node.children[-1].kind == "list":
                lst = node.children[-1]
                lst.children.append(Node(kind, start + t.start, start + t.end, parent=lst))
    for child in node.children:   # an unclosed inner list ends where the form does
        if child.end < 0:
            child.end = child.close_start = end
    return node


# ---- new source from the model ---------------------------------------------------------------

@dataclass
class Prepared:
    text: str
    forms: int
    repaired: dict | None     # what repair did, when it had to: {level, why, form, edits}
    notes: dict = field(default_factory=dict)   # what else was taken off or made ASCII, said


def prepare(new_source, dialect: str, decide=None, known: str = "") -> Prepared:
    """Validate new source as the dialect reads it; apply its repair if `decide` writes it
    (the "unattended" policy: certain, or likely by a rule measured at most 1% wrong), else
    refuse (any other repair is refused with its best candidate, so the model can take it
    or not).

    A Markdown fence around it is taken off, and typographic quotes outside strings made
    ASCII (when the result reads), each said in `notes`; a `#` dispatch the dialect does not
    read (`#t` in Common Lisp) is refused, unless `known` (the file's text) already uses it.
    `decide(text, dialect)` returns a `repair.Decision`."""
    if not isinstance(new_source, str) or not new_source.strip():
        raise StructureError("BAD_INPUT", "new_source is empty",
                             suggestion="To remove a form use delete_form")
    notes: dict = {}
    fence = source_checks.unfence(new_source)
    if fence is not None:
        new_source = fence.code
        notes["fence"] = fence.note()
        if not new_source.strip():
            raise StructureError("BAD_INPUT", "new_source holds only a Markdown fence, no code")
    text = new_source.strip("\r\n").rstrip()
    text = _dedent(text)
    if source_checks.smart_quotes(text, dialect):
        fixed = source_checks.ascii_quotes(text, dialect)
        said = source_checks.quote_note(text, dialect)
        if not validate(fixed, dialect).ok:
            raise StructureError("INVALID_SOURCE", f"new_source has {said}; nothing was changed. "
                                 "Write ASCII quotes (\" and ')", best_candidate=fixed[:2000])
        notes["smart_quotes"] = f"{said}: they were made ASCII (\" and ')"
        text = fixed
    note = None
    try:
        root = parse(text, dialect)
    except StructureError as exc:
        decision = decide(text, dialect) if decide else None
        fixed = decision.repair if decision else None
        reads = decision is not None and decision.reads
        if not (reads and decision.writes):
            # validate's report says more: the opener, where the missing closer belongs
            extra = {k: v for k, v in exc.extra.items() if k in ("line", "col")}
            message = f"new_source is not valid: {exc.message}; nothing was changed"
            if reads:
                sure = "only be a guess" if fixed.level == "guess" else \
                    f"be {fixed.level}, not sure enough to write unattended (rule {fixed.rule})"
                message += (f". A repair would {sure} ({fixed.why}): best_candidate "
                            "has it; send it back if it is what you meant")
                extra.update(level=fixed.level, best_candidate=fixed.text.strip("\r\n"),
                             candidate_edits=edit_summary(text, fixed.edits),
                             other_candidates=[edit_summary(text, r) for r in fixed.rivals])
            raise StructureError("INVALID_SOURCE", message, suggestion="Send the corrected form",
                                 details=validate(text, dialect).text, **extra)
        repaired_text = fixed.text.strip("\r\n").rstrip()
        note = {"level": fixed.level, "why": fixed.why, "form": repaired_text,
                "edits": edit_summary(text, fixed.edits, in_result=True)}
        text = repaired_text
        root = parse(text, dialect)
    n = len(root.code_children)
    if n == 0:
        raise StructureError("BAD_INPUT", "new_source has no form, only comments",
                             suggestion="To remove a form use delete_form")
    foreign = source_checks.foreign_syntax(text, dialect, known)
    if foreign:
        first = foreign[0]
        raise StructureError("INVALID_SOURCE", f"new_source does not read as the file's "
                             f"dialect: line {first['line']}, column {first['col']}: "
                             f"{first['message']}; nothing was changed", problems=foreign[:10],
                             suggestion="Send the form in the file's own syntax")
    return Prepared(text, n, note, notes)


def _dedent(text: str) -> str:
    """Drop indentation common to all lines but the first (models often send it)."""
    lines = text.split("\n")
    if len(lines) < 2:
        return text.lstrip(" \t")
    first = lines[0].lstrip(" \t")
    indents = [len(l) - len(l.lstrip(" ")) for l in lines[1:] if l.strip()]
    lead = len(lines[0]) - len(first)
    common = min([lead] + indents) if indents else lead
    rest = [l[common:] if l[:common].strip() == "" else l.lstrip(" ") for l in lines[1:]]
    return "\n".join([first] + rest)


# ---- editing by name --------------------------------------------------------------------------

def _before_rest_of_line(new: str, src: str, at: int, dialect: str) -> str:
    """`new` followed by a newline when it ends in a `;` comment and the line goes on after
    `at`: otherwise the comment would swallow the rest of the line."""
    eol = src.find("\n", at)
    rest = src[at:len(src) if eol < 0 else eol]
    return new + "\n" if rest.strip() and _ends_in_line_comment(new, dialect) else new


def replace(src: str, form: FormInfo, new: str, dialect: str) -> Edit:
    return Edit(form.node.start, form.node.end,
                _before_rest_of_line(new, src, form.node.end, dialect))


def insert(src: str, root: Node, anchor: FormInfo | None, position: str, new: str,
           dialect: str) -> Edit:
    lines = LineIndex(src)
    if position == "end" or anchor is None:
        body = src.rstrip()
        end = len(body)
        return Edit(end, len(src), ("\n\n" if body else "") + new + "\n")
    if position == "before":
        at = leading_comment_start(src, root, anchor.node)
        at = lines.line_start(lines.line(at)) if not src[lines.line_start(lines.line(at)):at].strip() else at
        return Edit(at, at, new + "\n\n")
    if position == "after":
        last = lines.line(anchor.node.end - 1)
        eol = lines.line_end(last)
        rest = src[anchor.node.end:eol]
        at = eol if not rest.strip() or rest.strip().startswith(";") else anchor.node.end
        return Edit(at, at, "\n\n" + _before_rest_of_line(new, src, at, dialect))
    raise StructureError("BAD_INPUT", "position must be before, after or end")


def delete(src: str, root: Node, form: FormInfo) -> Edit:
    """The form, its comment block and the rest of its line (a trailing comment)."""
    lines = LineIndex(src)
    start = leading_comment_start(src, root, form.node)
    end = form.node.end
    eol = lines.line_end(lines.line(end - 1))
    if src[end:eol].strip() == "" or src[end:eol].lstrip().startswith(";"):
        end = eol
    start, end = _spacing_for_delete(src, start, end)
    return Edit(start, end, "")


# ---- references and exports --------------------------------------------------------------------

def same_symbol(token: str, wanted: str, dialect: str) -> bool:
    if dialect == "cl":
        token, wanted = token.lower(), wanted.lower()
        token, wanted = token.replace("|", ""), wanted.replace("|", "")
    if token == wanted:
        return True
    if token.startswith(":") or wanted.startswith(":"):
        return False     # keywords are their own symbols
    qualified = any(s in wanted[1:] for s in ("::", ":", "/"))
    return not qualified and _unqualified(token) == wanted


def split_qualified(symbol: str, dialect: str) -> tuple[str | None, str]:
    """(package, name) of `pkg:name`, `pkg::name` (CL) or `ns/name` (Clojure); (None, symbol)
    for a name without one (keywords and Clojure's `/` itself included)."""
    if symbol.startswith(":") or dialect == "scheme":
        return None, symbol
    seps = ("::", ":") if dialect == "cl" else ("/",)
    for sep in seps:
        at = symbol.find(sep, 1)
        if at > 0 and at + len(sep) < len(symbol):
            return symbol[:at], symbol[at + len(sep):]
    return None, symbol


def _package_key(name: str, dialect: str) -> str:
    name = name.strip().strip('"')
    for p in ("#:", ":", "'"):
        if name.startswith(p):
            name = name[len(p):]
    return name.upper() if dialect == "cl" else name


def _package_at(top: Node, src: str, dialect: str) -> str | None:
    """The package a top-level form switches to: CL `(in-package x)`, Clojure `(ns x ...)`."""
    lst = inner(top)
    kids = lst.code_children if lst.kind == "list" else []
    if len(kids) < 2 or kids[0].kind != "atom":
        return None
    head = kids[0].text(src).lower()
    if (dialect == "cl" and _unqualified(head) == "in-package") or \
            (dialect == "clojure" and head == "ns"):
        return _package_key(inner(kids[1]).text(src), dialect)
    return None


def references(src: str, root: Node, dialect: str, symbol: str, limit: int = 200) -> tuple[list, int]:
    """Every atom naming `symbol` (not in strings, comments or `#_`/`#;` datums). A qualified
    `pkg:name` also counts `pkg::name` and the bare `name` where the file is in `pkg` (after
    its `in-package` or `ns`): the same symbol, as written in its own package."""
    lines = LineIndex(src)
    hits, total = [], 0
    package, bare = split_qualified(symbol, dialect)
    want_pkg = _package_key(package, dialect) if package else None
    current = None
    for top in root.code_children:
        switched = _package_at(top, src, dialect)
        if switched is not None:
            current = switched
        fi = form_info(top, src, dialect)
        label = fi.label if fi else None
        name_node = inner(fi.lst.code_children[1]) if fi and fi.defining and \
            len(fi.lst.code_children) > 1 else None
        for n in walk(top):
            if n.kind != "atom":
                continue
            token = n.text(src)
            if want_pkg is None:
                if not same_symbol(token, symbol, dialect):
                    continue
            else:
                pkg, name = split_qualified(token, dialect)
                if not same_symbol(name, bare, dialect) or \
                        (_package_key(pkg, dialect) if pkg else current) != want_pkg:
                    continue
            total += 1
            if len(hits) >= limit:
                continue
            ln = lines.line(n.start)
            line_text = src[lines.line_start(ln):lines.line_end(ln)].strip()
            hit = {"line": ln, "col": lines.line_col(n.start)[1], "form": label,
                   "text": line_text if len(line_text) <= 120 else line_text[:117] + "..."}
            if n is name_node or (name_node is not None and name_node.kind == "list"
                                  and _first_atom(name_node) is n):
                hit["definition"] = True
            hits.append(hit)
    return hits, total


def _first_atom(node: Node) -> Node | None:
    while node.kind == "list" and node.code_children:
        node = inner(node.code_children[0])
    return node if node.kind == "atom" else None


def _names(node: Node, src: str) -> list[tuple[str, Node]]:
    """Symbol names in an export list element: `(a b)`, `'(a b)`, `#:a`, `"A"`, `:a`."""
    node = inner(node)
    items = node.code_children if node.kind == "list" else [node]
    out = []
    for it in items:
        it = inner(it)
        if it.kind == "list":   # Guile (#:export ((internal . external))) renames
            kids = it.code_children
            if kids:
                out.append((kids[-1].text(src), it))
            continue
        t = it.text(src)
        if it.kind == "string":
            t = t[1:-1]
        for p in ("#:", ":"):
            if t.startswith(p):
                t = t[len(p):]
                break
        out.append((t, it))
    return out


def exports(src: str, root: Node, dialect: str) -> dict:
    lines = LineIndex(src)
    module = None
    found: list[dict] = []

    def add(name: str, node: Node, via: str):
        found.append({"name": name, "line": lines.line(node.start), "via": via})

    for top in root.code_children:
        fi = form_info(top, src, dialect)
        if fi is None:
            continue
        t = fi.type.lower() if dialect == "cl" else fi.type
        kids = fi.lst.code_children
        if dialect == "scheme":
            if t == "define-module" and len(kids) > 1:
                module = normalize(kids[1].text(src))
                for i, k in enumerate(kids[2:-1], start=2):
                    key = k.text(src)
                    if key in ("#:export", "#:export-syntax", "#:replace", "#:re-export",
                               "#:re-export-syntax"):
                        for name, n in _names(kids[i + 1], src):
                            add(name, n, key)
            elif t in ("export", "export-syntax", "re-export"):
                for k in kids[1:]:
                    for name, n in _names(k, src):
                        add(name, n, t)
            elif t in ("define-public", "define-syntax-public") and fi.name:
                add(fi.name, fi.node, t)
        elif dialect == "cl":
            if t == "defpackage" and len(kids) > 1:
                module = fi.name
                for opt in kids[2:]:
                    o = inner(opt)
                    ok = o.code_children if o.kind == "list" else []
                    if ok and ok[0].text(src).lower() == ":export":
                        for k in ok[1:]:
                            for name, n in _names(k, src):
                                add(name, n, ":export")
            elif t == "export" and len(kids) > 1:
                for name, n in _names(kids[1], src):
                    add(name, n, "export")
        else:
            if t == "ns" and fi.name:
                module = fi.name
            elif fi.defining and fi.name and t not in ("ns", "defn-", "defmethod", "deftest",
                                                       "defspec") and len(kids) > 1:
                meta = kids[1]
                if meta.kind == "prefixed" and ":private" in src[meta.start:inner(meta).start]:
                    continue
                add(_unqualified(fi.name), fi.node, t)
    return {"module": module, "exports": found, "count": len(found)}
