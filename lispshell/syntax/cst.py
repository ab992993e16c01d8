"""A concrete syntax tree with exact spans, built on the project's lexer.

Every node records `start`/`end` offsets into the text it was parsed from, and the tree keeps
comments as nodes; whitespace is simply the gap between nodes. So `text[node.start:node.end]`
is always the node's exact source, and joining the root's children with their gaps gives back
the text byte for byte (`print_tree`). Edits are text surgery at these offsets.

Node kinds:
  root            the whole text; children are the top-level items
  list            opener token (`(`, `[`, `{`, `#(`, `#?(`...) + children + closer
  atom | string | char                leaves (symbols, numbers, keywords; strings; characters)
  prefixed        reader prefix (`'` `` ` `` `,` `,@` `#'` `@` `^` `#+` ...) + its datum(s)
  comment | block_comment             `;` line comments, `#|...|#` (and Guile `#!...!#`)
  datum_comment   `#;` / `#_` + the datum it comments out (the whole node is a comment)

"Code" nodes are the ones a reader sees as data: list, atom, string, char, prefixed.
The parser is iterative, so deeply nested input does not hit Python's recursion limit.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from queue import SimpleQueue
from threading import Event, Lock, Thread

from lispshell.syntax.dialects import DELIM_OF_CHAR
from lispshell.syntax.errors import StructureError  # noqa: F401 (its home before errors.py)
from lispshell.syntax.reading import LineIndex, read, visual_width  # noqa: F401 (re-exported)

CODE_KINDS = frozenset({"list", "atom", "string", "char", "prefixed"})
TRIVIA_KINDS = frozenset({"comment", "block_comment", "datum_comment"})

# Reader prefixes that take two datums: Clojure metadata (`^meta target`) and CL feature
# expressions (`#+feature form`) when the lexer emits the feature as a separate datum.
_TWO_DATUM_PREFIXES = frozenset({"^", "#^", "#+", "#-"})
# Prefixes after which a list is data, not a call (its first element is no operator).
QUOTE_PREFIXES = frozenset({"'", "`", "#'"})

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*([eEdDfFsSlL][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|\d+/\d+"
                     r"|\d+[MN]|0[xX][0-9a-fA-F]+)$|^#[xXoObBeEiI]|^#\d+[rR]")


class Node:
    """One node of the tree. A plain class with slots: files have 100k+ nodes."""

    __slots__ = ("kind", "start", "end", "parent", "children", "open_end", "close_start",
                 "delim")

    def __init__(self, kind: str, start: int, end: int, parent: "Node | None" = None,
                 children: "list[Node] | None" = None, open_end: int = -1,
                 close_start: int = -1, delim: str | None = None):
        self.kind = kind
        self.start = start
        self.end = end
        self.parent = parent
        self.children = [] if children is None else children
        self.open_end = open_end        # list: end of the opener; prefixed: end of the prefix
        self.close_start = close_start  # list: start of the closer
        self.delim = delim              # list: paren | bracket | brace

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.start}, {self.end})"

    @property
    def is_code(self) -> bool:
        return self.kind in CODE_KINDS

    @property
    def code_children(self) -> list["Node"]:
        return [c for c in self.children if c.kind in CODE_KINDS]

    def text(self, source: str) -> str:
        return source[self.start:self.end]


class _Frame:
    """An open list or prefix waiting for its closer or its datum(s)."""

    __slots__ = ("node", "needs", "prefix_text")

    def __init__(self, node: Node, needs: int = 0, prefix_text: str = ""):
        self.node = node
        self.needs = needs          # prefix frames: datums still to come; lists: 0
        self.prefix_text = prefix_text


def parse(text: str, dialect: str) -> Node:
    """The CST of `text`. Raises StructureError(code="UNBALANCED", line=, col=) on bad input."""
    reading = read(text, dialect)
    tokens, state, lines = reading.tokens, reading.state, reading.lines
    root = Node("root", 0, len(text))
    stack: list[_Frame] = [_Frame(root)]

    def fail(message: str, offset: int, **extra):
        line, col = lines.line_col(offset)
        raise StructureError("UNBALANCED", f"{message} at line {line}, column {col}",
                             line=line, col=col, offset=offset, **extra)

    def attach(node: Node, is_datum: bool) -> None:
        # Attach `node` to the innermost open frame; completing a prefix may cascade outward.
        while True:
            frame = stack[-1]
            node.parent = frame.node
            frame.node.children.append(node)
            if frame.node.kind in ("list", "root") or not is_datum:
                return
            frame.needs -= 1
            if frame.needs > 0:
                return
            stack.pop()
            done = frame.node
            done.end = node.end
            node = done
            is_datum = done.kind != "datum_comment"

    for tok in tokens:
        kind = tok.kind
        if kind == "open":
            node = Node("list", tok.start, -1, open_end=tok.end, delim=tok.delim)
            stack.append(_Frame(node))
        elif kind == "close":
            frame = stack[-1]
            if frame.node.kind == "root":
                fail(f"unmatched closing {text[tok.start:tok.end]!r}", tok.start)
            if frame.node.kind != "list":
                fail(f"{frame.prefix_text!r} is followed by nothing before "
                     f"{text[tok.start:tok.end]!r}", frame.node.start)
            if frame.node.delim != tok.delim:
                opener = text[frame.node.start:frame.node.open_end]
                ol, oc = lines.line_col(frame.node.start)
                fail(f"{text[tok.start:tok.end]!r} closes {opener!r} opened at line {ol}, "
                     f"column {oc}", tok.start)
            stack.pop()
            node = frame.node
            node.close_start, node.end = tok.start, tok.end
            attach(node, True)
        elif kind in ("prefix", "datum_comment"):
            ptext = text[tok.start:tok.end]
            node_kind = "datum_comment" if kind == "datum_comment" else "prefixed"
            needs = 2 if node_kind == "prefixed" and ptext in _TWO_DATUM_PREFIXES else 1
            node = Node(node_kind, tok.start, -1, open_end=tok.end)
            stack.append(_Frame(node, needs, ptext))
        elif kind in ("comment", "block_comment"):
            attach(Node(kind, tok.start, tok.end), False)
        else:  # atom, string, char, and anything else the lexer calls a leaf
            leaf = kind if kind in ("string", "char") else "atom"
            attach(Node(leaf, tok.start, tok.end), True)

    unterminated = _unterminated(state)
    if unterminated:
        last = tokens[-1] if tokens else None
        fail(f"unterminated {unterminated}", last.start if last else len(text))
    if len(stack) > 1:
        frame = stack[-1]
        if frame.node.kind == "list":
            opener = text[frame.node.start:frame.node.open_end]
            fail(f"{opener!r} is never closed", frame.node.start)
        fail(f"{frame.prefix_text!r} is followed by nothing", frame.node.start)
    return root


# ---- the same tree, built as it is visited -----------------------------------------------------
# A tool call on a big file needs the top-level forms (their heads and names) and the insides
# of one or two of them; building every node costs ten times the reading. So a shared tree is
# built one level at a time from the reading (`read` pairs every opener with its closer): each
# list node knows its span from its two tokens and builds its children the first time they
# are asked for. The nodes are those `parse` builds, field for field.

_LEAF_KIND = {"s": "string", "S": "string", "c": "char", "C": "char"}   # other leaves: atom
_TRIVIA_KIND = {";": "comment", "b": "block_comment", "B": "block_comment"}
_CHILDREN = Node.__dict__["children"]   # the slot itself, under _LazyList's property
_EXPANDING = Lock()                     # two threads may visit one shared tree


class _LazyList(Node):
    """A list node whose `children` slot holds (reading, first token, closer token) until the
    children are first asked for; it is then an ordinary Node."""

    __slots__ = ()

    @property
    def children(self) -> list[Node]:
        with _EXPANDING:
            kids = _CHILDREN.__get__(self, Node)
            if type(kids) is tuple:
                kids = _level(*kids, self)
                _CHILDREN.__set__(self, kids)
                self.__class__ = Node
        return kids

    @children.setter
    def children(self, value) -> None:
        _CHILDREN.__set__(self, value)


def parse_lazy(text: str, dialect: str) -> Node:
    """parse(text, dialect), each list's children built when first visited: the same nodes
    and the same StructureError. Lists never built cost nothing."""
    reading = read(text, dialect)
    if not _reads_whole(reading):
        return parse(text, dialect)     # raises what parse says is wrong
    root = Node("root", 0, len(text))
    _CHILDREN.__set__(root, _level(reading, 0, len(reading.tokens), root))
    return root


def _reads_whole(reading) -> bool:
    """True when `parse` would build a tree of the text: every list closed by its own kind of
    closer, nothing unterminated, every prefix given its datum(s) before a closer or the end
    (a wider check than the reading's, which looks only at a prefix right before a closer)."""
    if reading.delimiter_problems or reading.unclosed or _unterminated(reading.state):
        return False
    codes, partner, tokens = reading.tokens.codes, reading.partner, reading.tokens
    n = len(codes)
    past: dict[int, int] = {}       # prefix token -> the token after its datum(s)
    # the last prefix first, so that the prefixes inside a prefix's datum are measured already
    for j in reversed(reading.prefixes):
        needs = 2 if codes[j] == "p" and tokens.text_of(j) in _TWO_DATUM_PREFIXES else 1
        i = j + 1
        while needs:
            if i >= n:
                return False
            c = codes[i]
            if c in "([{":
                i, needs = partner[i] + 1, needs - 1
            elif c in ")]}":
                return False
            elif c in "pd":
                i = past[i]
                needs -= c == "p"       # a datum comment's datum is no datum
            elif c in _TRIVIA_KIND:
                i += 1
            else:
                i, needs = i + 1, needs - 1
        past[j] = i
    return True


def _level(reading, first: int, stop: int, container: Node) -> list[Node]:
    """The nodes of tokens first..stop-1 (one list's insides, or the whole text), as children
    of `container`: what parse attaches there, each list in them a _LazyList."""
    tokens, partner = reading.tokens, reading.partner
    codes, ends, start_of = tokens.codes, tokens.ends, tokens.start_of
    out: list[Node] = []
    frames: list = []               # open prefixes: [node, datums still needed]
    j = first
    while j < stop:
        c = codes[j]
        if c == "p" or c == "d":
            if c == "d":
                frames.append([Node("datum_comment", start_of(j), -1, open_end=ends[j]), 1])
            else:
                needs = 2 if tokens.text_of(j) in _TWO_DATUM_PREFIXES else 1
                frames.append([Node("prefixed", start_of(j), -1, open_end=ends[j]), needs])
            j += 1
            continue
        if c in "([{":
            k = partner[j]
            # (a closer is one character: it starts one before its end)
            node = _LazyList("list", start_of(j), ends[k], None, (reading, j + 1, k), ends[j],
                             ends[k] - 1, DELIM_OF_CHAR[c])
            j = k + 1
            is_datum = True
        elif c in _TRIVIA_KIND:
            node = Node(_TRIVIA_KIND[c], start_of(j), ends[j])
            j += 1
            is_datum = False
        else:
            node = Node(_LEAF_KIND.get(c, "atom"), start_of(j), ends[j])
            j += 1
            is_datum = True
        while frames:       # as parse's attach: completing a prefix may complete the outer
            frame = frames[-1]
            node.parent = frame[0]
            frame[0].children.append(node)
            if not is_datum:
                break
            frame[1] -= 1
            if frame[1] > 0:
                break
            frames.pop()
            frame[0].end = node.end
            node = frame[0]
            is_datum = node.kind != "datum_comment"
        else:
            node.parent = container
            out.append(node)
    return out


def peek(node: Node) -> tuple[str, str | None] | None:
    """(head, name) of a list not built yet, from its first tokens, without building it: head
    the text of its first token when that is an atom ("" when the list surely has no symbol
    head), name the text of the next token when that is an atom too (else None). None when it
    cannot tell (built already, not a list, a datum comment in the way): build it and look."""
    unbuilt = _CHILDREN.__get__(node, Node) if type(node) is _LazyList else None
    if type(unbuilt) is not tuple:      # (another thread may have just built it)
        return None
    reading, j, closer = unbuilt
    codes, text_of = reading.tokens.codes, reading.tokens.text_of
    found: list = []
    while j < closer and len(found) < 2:
        c = codes[j]
        if c == "d":
            return None
        if c not in _TRIVIA_KIND:
            if c not in "axA":
                break
            found.append(text_of(j))
        j += 1
    if not found:
        return "", None
    return found[0], found[1] if len(found) > 1 else None


# ---- one tree per text, shared ------------------------------------------------------------------
# Every structural tool call reads its file afresh and needs its tree (built as visited, see
# above: the reading is most of a call on a text never seen). The trees of the last texts are
# kept, keyed by the text itself: a file changed by anyone is another text, so a tree is never
# stale, and a file read again unchanged (the next call, in the REPL or in `lispshell mcp`)
# gets its tree back. What is worked out from a tree (the top-level forms) is kept with it.

_SHARED: OrderedDict = OrderedDict()    # (text, dialect) -> (root, derived results)
_SHARED_CHARS = 6_000_000               # a tree and its reading hold 25x its text (45x once
                                        # every list is built): keep a few big ones
_SHARED_LOCK = Lock()                   # the REPL's threads and MCP's may call at once


_PENDING: dict = {}                     # (text, dialect) -> Event: parse_later at work


def parse_shared(text: str, dialect: str) -> Node:
    """`parse(text, dialect)`, the same tree for the same text while it is kept: callers must
    not change it (make edits as text, as every tool does; `forms.recover` moves nodes, so it
    parses its own)."""
    key = (text, dialect)
    with _SHARED_LOCK:
        pending = _PENDING.get(key)
    if pending is not None:
        pending.wait()                  # being parsed already (parse_later): take that tree
    with _SHARED_LOCK:
        hit = _SHARED.get(key)
        if hit is not None:
            _SHARED.move_to_end(key)
            return hit[0]
    return _keep(key, parse_lazy(text, dialect))


def _keep(key, root: Node) -> Node:
    with _SHARED_LOCK:
        _SHARED[key] = (root, {})
        held = sum(len(k[0]) for k in _SHARED)
        while len(_SHARED) > 1 and held > _SHARED_CHARS:
            held -= len(_SHARED.popitem(last=False)[0][0])
    return root


def derived(root: Node, name, compute):
    """compute(), kept with `root` when it is a shared tree (which never changes), so the next
    call on the same text does not work it out again."""
    with _SHARED_LOCK:
        kept = next((d for r, d in reversed(_SHARED.values()) if r is root), None)
        if kept is not None and name in kept:
            return kept[name]
    value = compute()
    if kept is not None:
        with _SHARED_LOCK:
            kept[name] = value
    return value


def parse_later(text: str, dialect: str, then=None) -> None:
    """Build the tree of `text` in the background, for the next parse_shared of it: a file the
    tools just wrote is a new text, and the next call on it comes after the model's turn,
    seconds later. A call that comes sooner waits for this parse rather than doing its own.
    then(root), if given, runs there once the tree is kept (what else the next call will want
    of the text). One worker thread for all (starting a thread per write cost the writer
    5-10 ms of waiting for the GIL)."""
    global _worker
    key = (text, dialect)
    with _SHARED_LOCK:
        if key in _SHARED or key in _PENDING:
            return
        _PENDING[key] = Event()
        if _worker is None:
            _worker = Thread(target=_parse_in_background, daemon=True,
                             name="lispshell-parse-later")
            _worker.start()
    _LATER.put((key, then))


def settle() -> None:
    """Wait until every parse_later asked for so far has landed."""
    with _SHARED_LOCK:
        pending = list(_PENDING.values())
    for done in pending:
        done.wait()


_LATER: SimpleQueue = SimpleQueue()
_worker: Thread | None = None


def _parse_in_background() -> None:
    while True:
        key, then = _LATER.get()
        try:
            root = _keep(key, parse_lazy(*key))
            if then is not None:
                then(root)
        except Exception:   # (StructureError too) the next call parses it again and says
            pass            # what is wrong; the worker outlives any one text
        finally:
            with _SHARED_LOCK:
                done = _PENDING.pop(key)
            done.set()


def _unterminated(state) -> str | None:
    """What the lexer's end state says is left open ("string", "block comment"), if anything."""
    if state is None or not getattr(state, "unterminated", False):
        return None
    return {"string": "string", "block_comment": "block comment", "hash_bang": "#! comment",
            "symbol": "|symbol|"}.get(getattr(state, "mode", ""), "character")


def print_tree(root: Node, text: str) -> str:
    """Rebuild the source from the tree: leaves and delimiters from their spans, gaps verbatim."""
    out: list[str] = []
    pos = 0

    def emit(upto: int) -> None:
        nonlocal pos
        if upto < pos:  # spans overlap or run backwards: the tree is not a faithful cover
            raise ValueError(f"span out of order at offset {upto} (already at {pos})")
        out.append(text[pos:upto])
        pos = upto

    stack = [(root, 0)]
    # Walk iteratively; every byte is emitted exactly once, in order.
    while stack:
        node, i = stack.pop()
        if i < len(node.children):
            stack.append((node, i + 1))
            child = node.children[i]
            if child.children:
                emit(child.start)
                stack.append((child, 0))
            else:
                emit(child.end)
        else:
            emit(node.end)
    return "".join(out)


# ---- navigation helpers -------------------------------------------------------------------

def outer(node: Node) -> Node:
    """The node as a sibling in its list: climbs out of the prefixes that wrap it."""
    while node.parent is not None and node.parent.kind == "prefixed":
        node = node.parent
    return node


def inner(node: Node) -> Node:
    """The datum under any prefixes: `'(a b)` -> `(a b)`, `#+sbcl (f)` -> `(f)`."""
    while node.kind == "prefixed" and node.code_children:
        node = node.code_children[-1]
    return node


def enclosing_list(node: Node) -> Node | None:
    """The list that holds `node` as one of its elements, or None at top level."""
    parent = outer(node).parent
    return parent if parent is not None and parent.kind == "list" else None


def is_top_level(node: Node) -> bool:
    o = outer(node)
    return o.parent is not None and o.parent.kind == "root"


def is_symbol_atom(node: Node, source: str) -> bool:
    if node.kind != "atom":
        return False
    t = source[node.start:node.end]
    return not (t.startswith((":", "#:", "\"")) or _NUMBER.match(t))


def atom_kind(node: Node, source: str) -> str:
    if node.kind != "atom":
        if node.kind == "list":
            return {"paren": "list", "bracket": "vector", "brace": "map"}.get(node.delim, "list")
        return node.kind
    t = source[node.start:node.end]
    if t.startswith((":", "#:")):
        return "keyword"
    if _NUMBER.match(t):
        return "number"
    return "symbol"


def is_quoted(lst: Node, source: str) -> bool:
    """True when the list sits under `'`, `` ` `` or `#'`: data, so it has no operator."""
    p = lst.parent
    while p is not None and p.kind == "prefixed":
        if source[p.start:p.open_end] in QUOTE_PREFIXES:
            return True
        p = p.parent
    return False


def head_of(lst: Node, source: str) -> Node | None:
    """The operator of a round, unquoted list whose first element is a symbol, else None."""
    if lst.kind != "list" or lst.delim != "paren" or is_quoted(lst, source):
        return None
    if source[lst.start:lst.open_end] != "(":
        return None  # `#(` vectors, `#?(` reader conditionals: no operator
    code = lst.code_children
    if code and is_symbol_atom(code[0], source):
        return code[0]
    return None


def walk(node: Node, skip_datum_comments: bool = True):
    """Every node under `node` (itself included), depth first, in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if skip_datum_comments and n.kind == "datum_comment":
            continue
        stack.extend(reversed(n.children))


def node_at(root: Node, offset: int) -> Node:
    """The innermost node whose span contains `offset` (the root if none)."""
    node = root
    while True:
        for child in node.children:
            if child.start <= offset < child.end:
                node = child
                break
        else:
            return node
