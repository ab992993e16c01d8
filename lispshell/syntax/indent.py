"""Standard Lisp indentation, applied to a range of lines only.

The rules are the common core of Emacs lisp-mode, scheme-mode and cljfmt:
  - `[...]`, `{...}`, quoted lists and lists whose head is itself a list: one column in
    from the opener (elements line up under the first one);
  - a call `(f a ...)`: arguments line up with the first argument when it is on the head's
    line, else one column in from the opener;
  - a form with a body (`defun`, `let`, `when`, `define`, `defn`...): after its N
    distinguished arguments, body lines get two columns in from the opener. Any `def...`
    head has a body from its first argument on, `with-...` / `do-...` after one.
Lines inside strings and block comments are never touched, `;;;` comment lines keep their
column, and a line whose indentation is already right is left byte for byte as it is.
"""
from __future__ import annotations

from lispshell.syntax.cst import LineIndex, Node, head_of, is_quoted, node_at, parse, visual_width

# head -> number of distinguished arguments before the body.
_COMMON = {"lambda": 1, "let": 1, "let*": 1, "when": 1, "unless": 1, "case": 1, "do": 2}
BODY = {
    "cl": {**_COMMON,
           "defun": 2, "defmacro": 2, "defgeneric": 2, "defclass": 2, "define-condition": 2,
           "deftype": 2, "defstruct": 1, "defpackage": 1, "flet": 1, "labels": 1,
           "macrolet": 1, "symbol-macrolet": 1, "progn": 0, "prog1": 1, "prog2": 2,
           "block": 1, "return-from": 1, "catch": 1, "dolist": 1, "dotimes": 1, "do*": 2,
           "ecase": 1, "ccase": 1, "typecase": 1, "etypecase": 1, "ctypecase": 1,
           "handler-case": 1, "handler-bind": 1, "restart-case": 1, "restart-bind": 1,
           "unwind-protect": 1, "destructuring-bind": 2, "multiple-value-bind": 2,
           "multiple-value-prog1": 1, "eval-when": 1, "tagbody": 0, "locally": 0,
           "progv": 2, "ignore-errors": 0, "print-unreadable-object": 1, "in-package": 0},
    "scheme": {**_COMMON,
               "define": 1, "define*": 1, "define-public": 1, "define-syntax": 1,
               "define-syntax-rule": 1, "define-record-type": 1, "define-module": 1,
               "define-library": 1, "define-values": 1, "lambda*": 1, "case-lambda": 0,
               "letrec": 1, "letrec*": 1, "let-values": 1, "let*-values": 1, "receive": 2,
               "begin": 0, "syntax-rules": 1, "syntax-case": 2, "with-syntax": 1,
               "parameterize": 1, "guard": 1, "match": 1, "catch": 1, "let-syntax": 1,
               "letrec-syntax": 1, "eval-when": 1, "library": 1, "dynamic-wind": 0,
               "with-exception-handler": 0, "call-with-input-file": 1,
               "call-with-output-file": 1, "call-with-values": 0, "unwind-protect": 1},
    "clojure": {"fn": 0, "let": 1, "loop": 1, "binding": 1, "with-open": 1, "with-redefs": 1,
                "when": 1, "when-not": 1, "when-let": 1, "when-some": 1, "when-first": 1,
                "if-let": 1, "if-some": 1, "doseq": 1, "dotimes": 1, "for": 1, "case": 1,
                "cond": 0, "cond->": 1, "cond->>": 1, "condp": 2, "do": 0, "try": 0, "catch": 2,
                "finally": 0, "ns": 1, "defprotocol": 1, "defrecord": 2, "deftype": 2,
                "reify": 1, "proxy": 2, "extend-protocol": 1, "extend-type": 1,
                "future": 0, "delay": 0, "locking": 1, "testing": 1, "letfn": 1,
                "comment": 0, "go": 0, "go-loop": 1, "thread": 0, "doto": 1, "as->": 2},
}


def body_args(head: str, dialect: str) -> int | None:
    """Distinguished arguments before the body of `head`, or None for a plain call."""
    name = head.lower() if dialect == "cl" else head
    for sep in ("::", ":", "/"):
        if sep in name[1:]:
            name = name.rsplit(sep, 1)[1]   # cl:defun, clojure.core/let
            break
    table = BODY.get(dialect, {})
    if name in table:
        return table[name]
    if name.startswith("def"):
        return 0
    if name.startswith(("with-", "do-")):
        return 1
    return None


def reindent(text: str, dialect: str, first_line: int, last_line: int,
             root: Node | None = None) -> str:
    """`text` with lines first_line..last_line (1-based) re-indented; all else unchanged.

    `root` is the text's CST when the caller has it already."""
    root = root if root is not None else parse(text, dialect)
    lines = LineIndex(text)
    last_line = min(last_line, lines.line_count)
    delta: dict[int, int] = {}
    new_indent: dict[int, tuple[int, str]] = {}   # line -> (offset of first char, indent)

    def col(offset: int) -> int:
        return lines.width(offset) + delta.get(lines.line(offset), 0)

    for ln in range(max(first_line, 1), last_line + 1):
        start, end = lines.line_start(ln), lines.line_end(ln)
        p = start
        while p < end and text[p] in " \t":
            p += 1
        if p >= end or text.startswith(";;;", p):
            continue
        want = _column_for(root, text, dialect, p, col)
        if want is None:
            continue
        have = visual_width(text[start:p])
        if want != have:   # a line already in the right column (tabs or not) stays as it is
            delta[ln] = want - have
            new_indent[ln] = (p, " " * want)
    if not new_indent:
        return text
    out, pos = [], 0
    for ln in sorted(new_indent):
        p, indent = new_indent[ln]
        out.append(text[pos:lines.line_start(ln)])
        out.append(indent)
        pos = p
    out.append(text[pos:])
    return "".join(out)


def _column_for(root: Node, text: str, dialect: str, p: int, col) -> int | None:
    """The column the line whose first character is at `p` should start at, or None."""
    n = node_at(root, p)
    if n.start < p and n.kind in ("string", "char", "atom", "block_comment", "comment"):
        return None   # the line continues a multi-line token
    container = n.parent if n.start == p and n.kind != "root" else n
    while container.kind not in ("list", "root"):
        container = container.parent
    if container.kind == "root":
        return 0
    lst = container
    if p >= lst.close_start:
        code_before = len(lst.code_children)
    else:
        code_before = sum(1 for c in lst.code_children if c.start < p)
    base = col(lst.open_end - 1)    # the column of the delimiter character itself
    code = lst.code_children
    below = _below_first_line(lst, text, p, col)
    if lst.delim != "paren" or is_quoted(lst, text) or code_before == 0 \
            or text[lst.start:lst.open_end] != "(":   # #( vectors, #?( reader conditionals
        return base + 1 if below is None else below
    head = code[0]
    if head.kind == "list" or (head.kind == "prefixed"):
        return col(head.start)
    sym = head_of(lst, text)
    spec = body_args(sym.text(text), dialect) if sym is not None else None
    if sym is not None and _local_definition(lst, text, dialect):
        spec = 1
    if sym is not None and spec is not None:
        n_args = spec
        if dialect == "scheme" and sym.text(text) == "let" and len(code) > 1 \
                and code[1].kind == "atom":
            n_args = 2   # named let: (let loop ((i 0)) body)
        if code_before > n_args:
            return base + 2
        if dialect != "clojure":
            return base + 4   # a distinguished argument on its own line
    # A plain call (or a distinguished argument): line up with the first argument if it
    # sits on the head's line, else one column in.
    if below is not None:
        return below
    if len(code) > 1 and code[1].start < p and \
            text.count("\n", head.start, code[1].start) == 0:
        return col(code[1].start)
    return base + 1


def _below_first_line(lst: Node, text: str, p: int, col) -> int | None:
    """Where Emacs lines an element up when the element before it does not sit on the list's
    first line: under the first element of that element's line, as the person put it (None:
    the element before is on the first line, or there is none)."""
    before = [c for c in lst.code_children if c.end <= p]
    if not before:
        return None
    line_start = text.rfind("\n", 0, before[-1].start) + 1
    if line_start <= lst.start:
        return None
    return col(next(c for c in before if c.start >= line_start).start)


# Forms whose elements are themselves definitions or clauses with a body:
# (flet ((h (x) body)) ...), (handler-case expr (error (e) body)), (reify P (m [this] body)).
_DEFINITION_LISTS = {"cl": {"flet", "labels", "macrolet"}, "clojure": {"letfn"}, "scheme": set()}
_CLAUSE_FORMS = {"cl": {"handler-case", "restart-case"},
                 "clojure": {"reify", "deftype", "defrecord", "defprotocol", "extend-type",
                             "extend-protocol", "proxy", "definterface"},
                 "scheme": set()}


def _head_name(lst: Node | None, text: str, dialect: str) -> str | None:
    if lst is None or lst.kind != "list":
        return None
    h = head_of(lst, text)
    if h is None:
        return None
    name = h.text(text)
    return name.lower() if dialect == "cl" else name


def _local_definition(lst: Node, text: str, dialect: str) -> bool:
    """True when `lst` is a local function definition or a clause with a body."""
    parent = lst.parent
    if parent is None or parent.kind != "list":
        return False
    if _head_name(parent, text, dialect) in _CLAUSE_FORMS.get(dialect, ()):
        kids = parent.code_children
        return len(kids) > 1 and kids[1] is not lst
    grand = parent.parent
    if grand is not None and grand.kind == "list" and \
            _head_name(grand, text, dialect) in _DEFINITION_LISTS.get(dialect, ()):
        kids = grand.code_children
        return len(kids) > 1 and kids[1] is parent
    return False
