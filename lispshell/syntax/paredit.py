"""Paredit operations as text surgery at CST offsets.

Each operation takes the source, the resolved node and its options, and returns one `Edit`
(replace `source[start:end]` with `text`). Only whole nodes and delimiters move, and the
whitespace and comments between them are carried along, so the result is balanced by
construction and every atom and comment outside the edited node is kept. `lispshell.syntax
.edit` applies the Edit, re-indents the lines Emacs paredit re-indents after that operation
(`Edit.indent`) and checks the result parses.

The operations do what GNU Emacs paredit does (tests/test_paredit_emacs.py runs both on the
Lisp sources Debian installs), with these differences, where lispshell is right:
  - "head": a call (a round, unquoted list whose first element is a symbol, in a place where
    the dialect evaluates it: `shapes.child_role`) keeps its operator first. Backward slurp
    puts the pulled element right after it (`(a) (list b)` -> `(list (a) b)`), backward barf
    ejects the first element after it, so the two are inverses. A lambda list, a binding, a
    clause or any other data list behaves as paredit's (`keep_head` decides either way, and
    the answer's `rule` says which applied). unwrap keep=body, split clone_head and join
    drop_head use the head too.
  - Sibling operations (wrap, kill, raise, transpose, split) act on the node together with
    its reader prefixes (`'x`, `#+sbcl (f)`, `^meta form`), list operations on the list under
    them; a `#(` or `#{` opener moves whole.
  - Splicing a list under a quote (the quote would then apply to something else) and
    splitting before the first element (nothing would stay in the first list) are refused.
  - Spacing is what a person would type (`(env :type list)` after a kill, `() decls` after a
    barf), where Emacs leaves the characters around the moved text as they were.
"""
from __future__ import annotations

from dataclasses import dataclass

from lispshell.syntax import shapes
from lispshell.syntax.address import path_of, scope_children, snippet
from lispshell.syntax.cst import (
    LineIndex, Node, StructureError, atom_kind, head_of, inner, is_quoted, is_top_level, outer,
    parse, walk,
)
from lispshell.syntax.dialects import CLOSE_CHAR, OPEN_CHAR, delimiter_chars
from lispshell.syntax.lexer import tokenize

WRAPPERS = {"round": "paren", "square": "bracket", "curly": "brace"}


@dataclass
class Edit:
    start: int
    end: int
    text: str
    rule: str | None = None      # which convention decided, for the answer (keep_head)
    # The lines paredit re-indents after this operation, as (from, to) offsets in the new
    # text: the lines from the one holding `from` to the one holding `to`; () none (Emacs's
    # own kill-sexp and transpose-sexps re-indent nothing). None: the lines the edit
    # produced, its first excepted.
    indent: tuple | None = None


def _with_indentation(src: str, start: int, text: str) -> tuple[int, str]:
    """(start, text) grown back to the start of the line when only blanks stand before
    `start` on it: an operation after which paredit re-indents that line then edits it."""
    line_start = src.rfind("\n", 0, start) + 1
    if src[line_start:start].strip(" \t"):
        return start, text
    return line_start, src[line_start:start] + text


def _indent_sexp(start: int, text: str) -> tuple:
    """What Emacs's indent-sexp re-indents of the list `text` at `start` (in the new text):
    its lines after the first."""
    nl = text.find("\n")
    return (start + nl + 1, start + len(text)) if nl >= 0 else ()


def _s(node: Node, src: str, limit: int = 50) -> str:
    return snippet(node.text(src), limit)


def _ends_in_line_comment(fragment: str, dialect: str) -> bool:
    """True when `fragment` ends inside a `;` comment, so a closer after it needs a newline."""
    tokens, _ = tokenize(fragment, dialect)
    return bool(tokens) and tokens[-1].kind == "comment" and \
        fragment[tokens[-1].start:tokens[-1].end].startswith(";") and \
        fragment[tokens[-1].end:].strip(" \t") == ""


def _close_safely(fragment: str, dialect: str) -> str:
    return fragment + "\n" if _ends_in_line_comment(fragment, dialect) else fragment


def _siblings(node: Node, src: str) -> tuple[Node, Node, list[Node], int]:
    o = outer(node)
    parent = o.parent
    kids = parent.code_children
    return o, parent, kids, kids.index(o)


def _as_list(node: Node, src: str, op: str) -> Node:
    lst = inner(node)
    if lst.kind != "list":
        raise StructureError(
            "NOT_A_LIST", f"Cannot {op}: {_s(node, src)!r} is a {atom_kind(lst, src)}, not a list",
            suggestion="Target the list itself (its text or path); sexp_get_enclosing "
                       "shows the list around a node")
    return lst


def _need_list_parent(o: Node, src: str, op: str, suggestion: str) -> Node:
    parent = o.parent
    if parent is None or parent.kind != "list":
        raise StructureError("TOP_LEVEL", f"Cannot {op}: {_s(o, src)!r} is a top-level form, "
                             "not inside a list", suggestion=suggestion)
    return parent


def _count(count) -> int:
    if count is None:
        return 1
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise StructureError("BAD_INPUT", "count must be a positive integer")
    return count


def _signed_count(count) -> int:
    if count is None:
        return 1
    if isinstance(count, bool) or not isinstance(count, int) or count == 0:
        raise StructureError("BAD_INPUT", "count must be a non-zero integer (negative: the "
                             "opposite operation)")
    return count


def _clamped(count: int, there: int, done: str) -> str | None:
    """As paredit does, a count larger than what there is takes what there is; the answer
    says so."""
    return f"count {count}: only {there} {done}" if count > there else None


def _spanning(old: str, new: str, start: int, end: int, rule: str | None) -> Edit:
    """The Edit that turns `old` into `new`, which differ only inside `new[start:end]`."""
    return Edit(start, len(old) - (len(new) - end), new[start:end], rule)


def _list_at(src: str, dialect: str, start: int | None = None, from_end: int | None = None
             ) -> Node:
    """The list that starts at `start` (or ends `from_end` characters before the end) in `src`
    parsed afresh: a repeated operation finds its list again after each step."""
    end = len(src) - from_end if from_end is not None else None
    for n in walk(parse(src, dialect)):
        if n.kind == "list" and (n.start == start if start is not None else n.end == end):
            return n
    raise StructureError("INTERNAL", "the list was lost between two steps")


_ARG_KIND = {"bracket": "vector", "brace": "map"}


def _role(lst: Node, src: str, dialect: str):
    """What the dialect says `lst` is where it stands (`shapes.child_role`): None for code."""
    chain = []
    n = lst
    while True:
        o = outer(n)
        if o.parent is None or o.parent.kind != "list":
            break
        chain.append((o.parent, o))
        n = o.parent
    role = None
    for parent, child in reversed(chain):
        if is_quoted(parent, src):
            return shapes.DATA
        kids = parent.code_children
        head = kids[0].text(src) if kids and kids[0].kind == "atom" else ""
        i = kids.index(child)
        prior = [shapes.Arg(_ARG_KIND.get(inner(k).delim, "list") if inner(k).kind == "list"
                            else "atom", k.text(src)) for k in kids[:i]]
        role = shapes.child_role(head, role, i, prior, dialect)
    return role


def _keeps_head(lst: Node, src: str, dialect: str, keep_head) -> tuple[Node | None, str]:
    """The head a backward slurp or barf keeps first, and the rule that decided."""
    head = head_of(lst, src)
    text = _s(lst, src, 30)
    if keep_head is not None:
        if keep_head and head is None:
            raise StructureError("BAD_INPUT", f"keep_head: {text!r} has no head symbol",
                                 suggestion="call again without keep_head")
        return (head if keep_head else None), f"keep_head={str(bool(keep_head)).lower()}"
    if head is None:
        return None, f"paredit: {text!r} has no operator"
    if _role(lst, src, dialect) in (None, shapes.THREADED):
        return head, (f"call: {text!r} is a call, so {head.text(src)!r} stays first "
                      "(keep_head=false moves it too)")
    return None, (f"paredit: {text!r} is data here (a lambda list, binding or clause), so its "
                  "first element moves too (keep_head=true keeps it)")


def _prefix_guard(lst: Node, src: str, op: str) -> None:
    if lst.parent is not None and lst.parent.kind == "prefixed":
        p = lst.parent
        raise StructureError(
            "PREFIXED", f"Cannot {op}: the list sits under the reader prefix "
            f"{src[p.start:p.open_end]!r}, which would then apply to something else",
            suggestion="Edit the elements inside it instead, or replace the whole form")


# ---- tier 1 ---------------------------------------------------------------------------------

def wrap(src: str, node: Node, dialect: str, count=1, wrapper="round", head=None) -> Edit:
    count = _count(count)
    wrapper = wrapper or "round"
    if wrapper not in WRAPPERS:
        raise StructureError("BAD_INPUT", "wrapper must be round, square or curly")
    delim = WRAPPERS[wrapper]
    if OPEN_CHAR[delim] not in delimiter_chars(dialect):
        raise StructureError("BAD_INPUT", f"{wrapper} brackets are not lists in {dialect}",
                             suggestion="use wrapper \"round\"")
    o, parent, kids, i = _siblings(node, src)
    rule = _clamped(count, len(kids) - i, "wrapped")
    count = min(count, len(kids) - i)
    first, last = kids[i], kids[i + count - 1]
    lead = ""
    if head:
        from lispshell.syntax.cst import parse  # local: parse is only needed to check `head`
        head = head.strip()
        try:
            parse(head, dialect)
        except StructureError as exc:
            raise StructureError("BAD_INPUT", f"head is not balanced source: {exc.message}")
        if _ends_in_line_comment(head, dialect):
            raise StructureError("BAD_INPUT", "head must not end with a comment")
        lead = head + " "
    text = OPEN_CHAR[delim] + lead + src[first.start:last.end] + CLOSE_CHAR[delim]
    return Edit(first.start, last.end, text, rule, _indent_sexp(first.start, text))


def unwrap(src: str, node: Node, dialect: str, keep="all") -> Edit:
    lst = _as_list(node, src, "unwrap")
    if keep not in (None, "all", "body"):
        raise StructureError("BAD_INPUT", "keep must be \"all\" or \"body\"")
    _prefix_guard(lst, src, "unwrap")
    start = lst.open_end
    if keep == "body":
        kids = lst.code_children
        if not kids:
            raise StructureError("EMPTY", f"Cannot unwrap keep=body: {_s(lst, src)!r} is empty",
                                 suggestion="use keep \"all\" or sexp_kill")
        start = kids[0].end
    body = src[start:lst.close_start].strip()
    if not body:
        return kill(src, lst, dialect)   # nothing left: remove the list and its spacing
    return Edit(lst.start, lst.end, _close_safely(body, dialect))


def raise_(src: str, node: Node, dialect: str, count=1) -> Edit:
    count = _count(count)
    o, parent, kids, i = _siblings(node, src)
    parent = _need_list_parent(o, src, "raise",
                               "To replace a whole top-level form use replace_form")
    if i + count > len(kids):
        raise StructureError("NO_SIBLING", f"Cannot raise {count} elements from {_s(o, src)!r}: "
                             f"only {len(kids) - i} from there to the end of its list",
                             suggestion=f"use count <= {len(kids) - i}")
    raised = src[o.start:kids[i + count - 1].end]
    # paredit re-indents the raised text when it spans lines, its first line included
    start, text = _with_indentation(src, parent.start, raised)
    return Edit(start, parent.end, text,
                indent=(start, start + len(text)) if "\n" in raised else ())


def _taker(lst: Node, forward: bool) -> Node | None:
    """The list that takes the next (previous) element when `lst` slurps: `lst` itself, or,
    when it is the last (first) element of its list, the nearest list around it that is not,
    as paredit climbs out (`(x (a (b c)) d)` slurping in `(b c)` -> `(x (a (b c) d))`)."""
    n = lst
    while True:
        o = outer(n)
        parent = o.parent
        if parent is None:
            return None
        kids = parent.code_children
        i = kids.index(o)
        if (i + 1 < len(kids)) if forward else (i > 0):
            return n
        if parent.kind != "list":
            return None
        n = parent


def _slurp_steps(src: str, lst: Node, dialect: str, count: int, forward: bool,
                 keep_head=None) -> Edit:
    """`count` slurps, one element each, as paredit repeats them, until there is nothing more
    to take."""
    text, cur, rule, span, indent = src, lst, None, None, None
    tail = len(src) - lst.end
    for step in range(count):
        if step:
            cur = _list_at(text, dialect, start=lst.start) if forward else \
                _list_at(text, dialect, from_end=tail)
        taker = _taker(cur, forward)
        if taker is None:
            if step:
                done = _spanning(src, text, *span, "; ".join(filter(None, [
                    rule, _clamped(count, step, "slurped")])))
                done.indent = indent
                return done
            raise StructureError(
                "NO_SIBLING", f"Cannot slurp {'forward' if forward else 'backward'}: no "
                f"sibling {'after' if forward else 'before'} {_s(outer(lst), src)!r} nor any "
                "list around it", suggestion="Nothing to take: it is the "
                f"{'last' if forward else 'first'} element all the way up")
        if forward:
            ed = _slurp_forward_one(text, taker, dialect)
        else:
            ed = _slurp_backward_one(text, taker, dialect, keep_head)
        if taker is not cur:
            ed.rule = "; ".join(filter(None, [
                f"nothing {'after' if forward else 'before'} {_s(cur, text, 30)!r}: the list "
                f"around it, {_s(taker, text, 30)!r}, took the next element, as paredit does",
                ed.rule]))
        rule = ed.rule or rule
        text, span = _applied(text, ed, span)
        # A step keeps the text before its list's closer, so where the first step began
        # re-indenting holds; each step re-indents up to its closer.
        if forward and ed.indent:
            indent = (indent[0] if indent else ed.indent[0], ed.indent[1])
        elif not forward:
            indent = ed.indent      # the last list slurped into holds all the others
    done = _spanning(src, text, *span, rule)
    done.indent = indent
    return done


def _applied(text: str, ed: Edit, span: tuple[int, int] | None) -> tuple[str, tuple[int, int]]:
    """`text` with `ed` applied, and the span of everything changed so far in the new text
    (so that the lines re-indented are all the lines the steps rewrote)."""
    new_end = ed.start + len(ed.text)
    if span is not None:
        a, b = span
        b = b + new_end - ed.end if b >= ed.end else max(b, new_end)
        span = (min(a, ed.start), max(b, new_end))
    return text[:ed.start] + ed.text + text[ed.end:], span or (ed.start, new_end)


def slurp_forward(src: str, node: Node, dialect: str, count=1) -> Edit:
    count = _signed_count(count)
    lst = _as_list(node, src, "slurp forward")
    if count < 0:
        return barf_forward(src, lst, dialect, -count)
    return _slurp_steps(src, lst, dialect, count, True)


def _slurp_forward_one(src: str, lst: Node, dialect: str) -> Edit:
    o, parent, kids, i = _siblings(lst, src)
    last = kids[i + 1]
    body = src[lst.start:lst.close_start]
    moved = src[lst.end:last.end]
    if not src[lst.open_end:lst.close_start].strip():
        body, moved = src[lst.start:lst.open_end], moved.lstrip()
    elif not body[-1].isspace() and not moved[0].isspace():
        moved = " " + moved
    text = body + moved + src[lst.close_start:lst.end]
    # paredit re-indents from where the closer was to where it is now
    return Edit(lst.start, last.end, text,
                indent=(lst.start + len(body), lst.start + len(text)))


def slurp_backward(src: str, node: Node, dialect: str, count=1, keep_head=None) -> Edit:
    count = _signed_count(count)
    lst = _as_list(node, src, "slurp backward")
    if count < 0:
        return barf_backward(src, lst, dialect, -count, keep_head)
    return _slurp_steps(src, lst, dialect, count, False, keep_head)


def _slurp_backward_one(src: str, lst: Node, dialect: str, keep_head=None) -> Edit:
    o, parent, kids, i = _siblings(lst, src)
    first = kids[i - 1]
    region = src[first.start:o.start]
    moved = region.rstrip()
    sep = region[len(moved):] or " "
    if _ends_in_line_comment(moved, dialect) and "\n" not in sep:
        sep = "\n"
    opener = src[o.start:lst.open_end]       # reader prefixes + opener: "'(" "#(" "("
    closer = src[lst.close_start:lst.end]
    head, rule = _keeps_head(lst, src, dialect, keep_head)
    if head is not None:
        after_head = src[head.end:lst.close_start]
        rest = after_head.lstrip()
        gap = after_head[:len(after_head) - len(rest)] or " "
        lead = src[lst.open_end:head.end] + gap
    else:
        rest = src[lst.open_end:lst.close_start].lstrip()
        lead = ""
    tail = sep + rest if rest else ("\n" if _ends_in_line_comment(moved, dialect) else "")
    # paredit re-indents the line of the new opener and the whole list
    start, text = _with_indentation(src, first.start, opener + lead + moved + tail + closer)
    return Edit(start, lst.end, text, rule, (start, start + len(text)))


def barf_forward(src: str, node: Node, dialect: str, count=1) -> Edit:
    count = _signed_count(count)
    lst = _as_list(node, src, "barf forward")
    if count < 0:
        return slurp_forward(src, lst, dialect, -count)
    kids = lst.code_children
    if not kids:
        raise StructureError("EMPTY", f"Cannot barf: {_s(lst, src)!r} is empty",
                             suggestion="Nothing to push out; slurp instead")
    if count > len(kids):
        raise StructureError("BAD_INPUT", f"Cannot barf {count}: {_s(lst, src)!r} has only "
                             f"{len(kids)} element(s)", suggestion=f"use count <= {len(kids)}")
    prev_end = kids[-count - 1].end if len(kids) > count else lst.open_end
    ejected = _close_safely(src[prev_end:lst.close_start].rstrip(), dialect)
    if ejected and not ejected[0].isspace():
        ejected = " " + ejected
    new = src[lst.start:prev_end] + src[lst.close_start:lst.end] + ejected
    # paredit re-indents the elements pushed out, from the line the first one starts on
    end = lst.start + len(new)
    return Edit(lst.start, lst.end, new,
                indent=(end - len(ejected.lstrip()), end) if ejected.strip() else ())


def barf_backward(src: str, node: Node, dialect: str, count=1, keep_head=None) -> Edit:
    count = _signed_count(count)
    lst = _as_list(node, src, "barf backward")
    if count < 0:
        return slurp_backward(src, lst, dialect, -count, keep_head)
    o = outer(lst)
    head, rule = _keeps_head(lst, src, dialect, keep_head)
    kids = lst.code_children
    avail = kids[1:] if head is not None else kids
    if not avail:
        raise StructureError(
            "EMPTY", f"Cannot barf backward: {_s(lst, src)!r} has no element"
            + (" after its head" if head is not None else ""),
            suggestion="Nothing to push out; slurp instead" + (
                "; keep_head=false pushes the head out too" if head is not None else ""))
    if count > len(avail):
        raise StructureError("BAD_INPUT", f"Cannot barf {count}: only {len(avail)} element(s) "
                             "can be pushed out", suggestion=f"use count <= {len(avail)}")
    first = avail[0]
    nxt = avail[count] if len(avail) > count else None
    if nxt is not None:
        ejected = src[first.start:nxt.start]
        rest = src[nxt.start:lst.close_start]
    else:
        ejected = _close_safely(src[first.start:lst.close_start].rstrip(), dialect)
        ejected += "" if ejected.endswith("\n") else " "
        rest = ""
    opener = src[o.start:lst.open_end]
    closer = src[lst.close_start:lst.end]
    lead = ""
    if head is not None:
        gap = src[head.end:first.start]
        lead = src[lst.open_end:head.end] + (gap if rest else _close_safely(gap.rstrip(), dialect))
    # paredit re-indents the elements pushed out, the list's line and the list
    start, text = _with_indentation(src, o.start, ejected + opener + lead + rest + closer)
    return Edit(start, lst.end, text, rule, (start, start + len(text)))


def splice_killing(src: str, node: Node, dialect: str, direction="backward") -> Edit:
    """paredit's splice-sexp-killing-backward/forward: the list around the target loses its
    delimiters and the elements before the target (backward) or the target and the elements
    after it (forward)."""
    if direction not in ("backward", "forward"):
        raise StructureError("BAD_INPUT", "direction must be \"backward\" or \"forward\"")
    o = outer(node)
    lst = _need_list_parent(o, src, "splice", "Target an element inside the list")
    _prefix_guard(lst, src, "splice")
    if direction == "backward":
        kept = src[o.start:lst.close_start].strip()
    else:
        kept = src[lst.open_end:o.start].strip()
    if not kept:
        return kill(src, lst, dialect)
    return Edit(outer(lst).start, lst.end, _close_safely(kept, dialect))


def convolute(src: str, node: Node, dialect: str) -> Edit:
    """paredit's convolute-sexp: the elements before the target leave its list, which is
    spliced into the list around it, and that list is wrapped in a new list headed by them:
    `(let ((x 5)) (frob (zwonk)) (wibble))` at `(zwonk)` ->
    `(frob (let ((x 5)) (zwonk) (wibble)))`."""
    o = outer(node)
    inner_list = _need_list_parent(o, src, "convolute", "Target an element of a list that is "
                                   "itself inside a list")
    outer_list = _need_list_parent(outer(inner_list), src, "convolute",
                                   "The list around the target must itself be inside a list")
    _prefix_guard(inner_list, src, "convolute")
    kids = inner_list.code_children
    if kids.index(o) == 0:
        raise StructureError("EMPTY", f"Cannot convolute at {_s(o, src)!r}: nothing before it "
                             "in its list to wrap the list around it with",
                             suggestion="Target a later element: the ones before it become "
                                        "the new head")
    before = src[inner_list.open_end:o.start]
    lead = _close_safely(before.strip(), dialect)
    rest = _close_safely(src[o.start:inner_list.close_start].rstrip(), dialect)
    io = outer(inner_list)
    body = src[outer_list.start:io.start] + rest + src[io.end:outer_list.end]
    opener = src[inner_list.start:inner_list.open_end]
    closer = src[inner_list.close_start:inner_list.end]
    # The line break before the target stays where it was, between the new head and the body.
    sep = "" if lead.endswith("\n") else "\n" if "\n" in before[len(before.rstrip()):] else " "
    text = opener + lead + sep + body + closer
    return Edit(outer_list.start, outer_list.end, text,
                indent=_indent_sexp(outer_list.start, text))


# ---- tier 2 ---------------------------------------------------------------------------------

def kill(src: str, node: Node, dialect: str, count=1) -> Edit:
    count = _count(count)
    o, parent, kids, i = _siblings(node, src)
    if i + count > len(kids):
        raise StructureError("NO_SIBLING", f"Cannot kill {count} elements from {_s(o, src)!r}: "
                             f"only {len(kids) - i} from there to the end of its list",
                             suggestion=f"use count <= {len(kids) - i}")
    start, end = kids[i].start, kids[i + count - 1].end
    return Edit(*_spacing_for_delete(src, start, end, dialect), "", indent=())


def _spacing_for_delete(src: str, start: int, end: int,
                        dialect: str | None = None) -> tuple[int, int]:
    """Widen [start, end) so that deleting it leaves tidy spacing (whole lines go entirely)."""
    line_start = src.rfind("\n", 0, start) + 1
    eol = src.find("\n", end)
    eol = len(src) if eol < 0 else eol
    if src[line_start:start].strip() == "" and src[end:eol].strip() == "":
        new_start, new_end = line_start, min(eol + 1, len(src))
        # Do not leave two blank lines where there was one on each side.
        prev_blank = line_start == 0 or src[src.rfind("\n", 0, line_start - 1) + 1:line_start].strip() == ""
        next_eol = src.find("\n", new_end)
        next_line = src[new_end:len(src) if next_eol < 0 else next_eol]
        if prev_blank and new_end < len(src) and next_line.strip() == "":
            new_end = len(src) if next_eol < 0 else next_eol + 1
        return new_start, new_end
    j = end
    while j < len(src) and src[j] in " \t":
        j += 1
    if j < len(src) and src[j] not in "\r\n)]}":
        return start, j
    k = start
    while k > line_start and src[k - 1] in " \t":
        k -= 1
    if k == line_start and j < len(src) and src[j] in ")]}" and dialect:
        # The node began its line and a closer follows: pull the closer up to the previous
        # line, `(f\n  x)` -> `(f)`, unless that line ends in a comment that would swallow it.
        m = k
        while m > 0 and src[m - 1] in " \t\r\n":
            m -= 1
        if m > 0 and not _ends_in_line_comment(src[src.rfind("\n", 0, m) + 1:m], dialect):
            return m, j
    return k, end


def transpose(src: str, node: Node, dialect: str) -> Edit:
    o, parent, kids, i = _siblings(node, src)
    if i + 1 >= len(kids):
        hint = (f"target the element before it, {_s(kids[i - 1], src)!r}, to swap the last two"
                if i > 0 else "it has no sibling to swap with")
        raise StructureError("NO_SIBLING", f"Cannot transpose: no sibling after {_s(o, src)!r}",
                             suggestion=hint)
    a, b = kids[i], kids[i + 1]
    return Edit(a.start, b.end, b.text(src) + src[a.end:b.start] + a.text(src), indent=())


def split(src: str, node: Node, dialect: str, clone_head=False) -> Edit:
    o = outer(node)
    lst = _need_list_parent(o, src, "split", "Target an element inside the list to split")
    _prefix_guard(lst, src, "split")
    kids = lst.code_children
    i = kids.index(o)
    head = head_of(lst, src)
    if clone_head and head is None:
        raise StructureError("BAD_INPUT", f"Cannot clone the head: {_s(lst, src)!r} has no "
                             "head symbol", suggestion="call again without clone_head")
    lowest = 2 if head is not None and clone_head else 1
    if i < lowest:
        raise StructureError(
            "BAD_SPLIT", f"Cannot split before {_s(o, src)!r}: nothing would stay in the first "
            "list", suggestion="Target a later element: the split point starts the second list")
    prev = kids[i - 1]
    opener, closer = src[lst.start:lst.open_end], src[lst.close_start:lst.end]
    gap = src[prev.end:o.start] or " "
    second = opener + (head.text(src) + " " if clone_head else "") + src[o.start:lst.close_start]
    first_part = src[lst.start:prev.end] + closer + gap
    return Edit(lst.start, lst.end, first_part + second + closer,
                indent=_indent_sexp(lst.start + len(first_part), second + closer))


def join(src: str, node: Node, dialect: str, drop_head=False) -> Edit:
    first = _as_list(node, src, "join")
    o1, parent, kids, i = _siblings(first, src)
    if i + 1 >= len(kids):
        raise StructureError("NO_SIBLING", f"Cannot join: nothing after {_s(o1, src)!r}",
                             suggestion="Target the first of two adjacent lists")
    o2 = kids[i + 1]
    second = inner(o2)
    if second.kind != "list" or o2 is not second:
        raise StructureError("NOT_A_LIST", f"Cannot join: the next element {_s(o2, src)!r} is "
                             "not a plain list", suggestion="Both elements must be lists")
    op1, op2 = src[first.start:first.open_end], src[second.start:second.open_end]
    if op1 != op2:
        raise StructureError("MISMATCH", f"Cannot join a {op1!r} list with a {op2!r} list",
                             suggestion="sexp_join joins two lists of the same kind")
    start2 = second.open_end
    if drop_head:
        k2 = second.code_children
        if not k2:
            raise StructureError("EMPTY", "Cannot drop the head: the second list is empty")
        start2 = k2[0].end
    content = src[start2:second.close_start].strip()
    body = src[first.start:first.close_start]
    trimmed = body.rstrip()
    gap = src[o1.end:o2.start]  # may hold comments: they move inside the joined list
    if not content:
        # A line comment in the gap ends with its newline, so the closer stays code.
        new = body + (gap if gap.strip() else "") + src[first.close_start:first.end]
    else:
        sep = gap if gap.strip() or "\n" in gap else " "
        if trimmed == op1 and not gap.strip():
            sep = ""
        elif _ends_in_line_comment(trimmed, dialect) and "\n" not in sep:
            sep = "\n"
        new = trimmed + sep + _close_safely(content, dialect) + src[first.close_start:first.end]
    return Edit(first.start, second.end, new, indent=_indent_sexp(first.start, new))


# ---- tier 3: queries ------------------------------------------------------------------------

def kind_label(node: Node, src: str) -> str:
    if node.kind == "prefixed":
        return f"{src[node.start:node.open_end]} {kind_label(inner(node), src)}"
    if node.kind == "list":
        opener = src[node.start:node.open_end]
        if opener == "#{":
            return "set"
        if opener.startswith("#?"):
            return "reader-conditional"
        if opener.startswith("#") and opener.endswith("("):
            return "vector"
    return atom_kind(node, src)


def show_structure(src: str, scope: Node, depth=4, show_paths=True, show_text=True,
                   max_entries=300, base_path: list[int] | None = None) -> str:
    """An indented outline of `scope`: one line per element with its path, text and kind.

    Paths start with `base_path` (the path of `scope` itself when it is a sub-node)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise StructureError("BAD_INPUT", "depth must be a positive integer")
    lines = LineIndex(src)
    out: list[str] = []
    if scope.kind != "root":
        out.append(f"{_s(scope, src, 60)}  L{lines.line(scope.start)}-{lines.line(scope.end - 1)}")
    shown = 0
    more = 0
    stack: list[tuple[Node, list[int]]] = []

    def children(container: Node, path: list[int]):
        kids, skip = scope_children(container, src)
        return [(k, path + [j - skip]) for j, k in enumerate(kids) if j >= skip]

    base = list(base_path or [])
    stack.extend(reversed(children(scope, base)))
    last_line = None
    while stack:
        node, path = stack.pop()
        if shown >= max_entries:
            more += 1
            continue
        shown += 1
        parts = ["  " * (len(path) - len(base) - 1)]
        if show_paths:
            parts.append("[" + ",".join(map(str, path)) + "] ")
        if show_text:
            parts.append(_s(node, src, 60) + "  ")
        parts.append(kind_label(node, src))
        ln = lines.line(node.start)
        if ln != last_line:
            parts.append(f"  L{ln}")
            last_line = ln
        out.append("".join(parts))
        if len(path) - len(base) < depth and inner(node).kind == "list":
            stack.extend(reversed(children(node, path)))
    if more:
        out.append(f"... {more} more element(s): narrow with form_type/form_name or depth")
    return "\n".join(out)


def get_enclosing(src: str, node: Node, scope: Node, levels=1) -> dict:
    if isinstance(levels, bool) or not isinstance(levels, int) or levels < 1:
        raise StructureError("BAD_INPUT", "levels must be a positive integer")
    child = outer(node)
    for n in range(levels):
        parent = child.parent
        if parent is None or parent.kind != "list":
            raise StructureError(
                "TOP_LEVEL", f"{_s(child, src)!r} is a top-level form: nothing encloses it"
                + (f" ({n} level(s) up)" if n else ""),
                suggestion="Use a smaller 'levels'" if n else "It is already the outermost form")
        child_of = child
        child = outer(parent)
    lst = inner(child)
    kids, skip = scope_children(child, src)
    head = head_of(lst, src)
    text = child.text(src)
    lines = LineIndex(src)
    result = {
        "enclosing_text": text if len(text) <= 4000 else text[:4000] + " ...[truncated]",
        "enclosing_path": path_of(child, scope, src),
        "enclosing_kind": kind_label(child, src),
        "head": head.text(src) if head is not None else None,
        "child_index": kids.index(child_of) - skip if child_of in kids else None,
        "sibling_count": len(kids) - skip,
        "line": lines.line(child.start),
    }
    if is_top_level(lst):
        result["top_level"] = True
    return result
