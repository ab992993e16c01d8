"""What each dialect's special forms, standard macros and best-known functions look like.

Repair uses this to tell a closer that was dropped mid-line from one dropped at a line end:
both leave text the indentation cannot tell apart, but a closer put back in the wrong place
usually leaves a form of the wrong shape (`(if (null x nil (car x)))`: an `if` with one
argument, a `null` with three). A shape rule only ever says "this cannot be right"; what it
does not know (a prefixed datum, a reader conditional, an unknown head) passes.

    problem(head, args, dialect) -> str | None

`head` is the operator's name as written (package prefix and case ignored in CL); `args` are
the elements after it, each an `Arg`. The answer is a short reason, or None when the shape is
fine or unknown.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lispshell.syntax.dialects import CL, CLOJURE, SCHEME


@dataclass
class Arg:
    kind: str                 # list | vector | map | atom | string | other
    text: str = ""            # an atom's text
    elems: list = field(default_factory=list)     # a list's / vector's elements (Arg)


def _count(lo: int, hi: int | None = None):
    """Between lo and hi arguments (hi None: no upper bound)."""
    def rule(args):
        if len(args) < lo or (hi is not None and len(args) > hi):
            want = f"{lo}" if lo == hi else f"{lo} or more" if hi is None else f"{lo}-{hi}"
            return f"takes {want} argument(s), has {len(args)}"
        return None
    return rule


def _even(args):
    return None if len(args) % 2 == 0 else f"takes pairs, has {len(args)} argument(s)"


def _pairs(args):
    return None if args and len(args) % 2 == 0 else f"takes pairs, has {len(args)} argument(s)"


def _odd_min3(args):
    return None if len(args) >= 3 and len(args) % 2 == 1 else \
        f"takes a map and key/value pairs, has {len(args)} argument(s)"


def _is_list(a: Arg) -> bool:
    return a.kind == "list" or (a.kind == "atom" and a.text.lower() in ("nil", "()"))


def _known(a: Arg) -> bool:
    return a.kind != "other"


def _all(*rules):
    def rule(args):
        for r in rules:
            why = r(args)
            if why:
                return why
        return None
    return rule


def _first(pred, what):
    """The first argument must satisfy `pred`."""
    def rule(args):
        if args and _known(args[0]) and not pred(args[0]):
            return f"its first argument must be {what}"
        return None
    return rule


def _clauses(start: int = 0):
    """Every argument from `start` on is a non-empty list (cond / case clauses)."""
    def rule(args):
        for a in args[start:]:
            if _known(a) and not (a.kind == "list" and a.elems):
                return "each clause must be a list"
        return None
    return rule


def _cl_bindings(a: Arg) -> bool:
    """let bindings: symbols or (symbol [value])."""
    if not _is_list(a):
        return False
    return all(e.kind in ("atom", "other") or
               (e.kind == "list" and 1 <= len(e.elems) <= 2 and e.elems[0].kind != "list")
               for e in a.elems)


def _cl_lambda_list(a: Arg) -> bool:
    """defun lambda lists: symbols or (var [default [supplied-p]])."""
    if not _is_list(a):
        return False
    return all(e.kind in ("atom", "other") or (e.kind == "list" and 1 <= len(e.elems) <= 3)
               for e in a.elems)


def _cl_fbindings(a: Arg) -> bool:
    """flet / labels / macrolet: ((name lambda-list body...)...)."""
    if not _is_list(a):
        return False
    return all(e.kind == "other" or (e.kind == "list" and len(e.elems) >= 2 and
                                     _known(e.elems[1]) and _is_list(e.elems[1]))
               for e in a.elems)


def _cl_defmethod(args):
    """defmethod: name, qualifiers, then a specialized lambda list whose required
    parameters are symbols or (symbol specializer)."""
    rest = args[1:]
    while rest and rest[0].kind == "atom":
        rest = rest[1:]                      # :around, :before...
    if not rest or not _known(rest[0]):
        return None
    if rest[0].kind != "list":
        return "needs a lambda list"
    for e in rest[0].elems:
        if e.kind == "atom" and e.text.startswith("&"):
            break
        if e.kind == "list" and len(e.elems) > 2:
            return "a required parameter is (name specializer)"
    return None


def _cl_declare(args):
    """declare: declaration specifiers; type / ignore declarations name variables."""
    for spec in args:
        if not _known(spec):
            continue
        if spec.kind != "list" or not spec.elems:
            return "each declaration must be a list"
        head = spec.elems[0].text.lower() if spec.elems[0].kind == "atom" else ""
        names = spec.elems[2:] if head == "type" else spec.elems[1:] \
            if head in ("ignore", "ignorable", "special", "dynamic-extent") else []
        for n in names:
            if n.kind == "list" and not (n.elems and n.elems[0].kind == "atom" and
                                         n.elems[0].text.lower() == "function"):
                return f"({head} ...) declares variables, not forms"
    return None


def _iteration_spec(a: Arg) -> bool:
    """dolist / dotimes: (var form [result])."""
    return a.kind == "list" and 2 <= len(a.elems) <= 3


def _scheme_bindings(a: Arg) -> bool:
    """(name value) pairs; an atom among them passes (`...` in a syntax-rules template)."""
    return a.kind == "list" and all(
        e.kind in ("other", "atom") or (e.kind == "list" and len(e.elems) == 2)
        for e in a.elems)


def _scheme_let(args):
    if args and args[0].kind == "atom":         # named let: name, bindings, body
        if len(args) < 3:
            return f"a named let takes a name, bindings and a body, has {len(args)} argument(s)"
        return None if not _known(args[1]) or _scheme_bindings(args[1]) else \
            "its bindings must be a list of (name value)"
    if len(args) < 2:
        return f"takes bindings and a body, has {len(args)} argument(s)"
    return None if not _known(args[0]) or _scheme_bindings(args[0]) else \
        "its bindings must be a list of (name value)"


def _scheme_define(args):
    if not args or not _known(args[0]):
        return None
    if args[0].kind == "atom":
        return None if len(args) <= 2 else f"(define name value) has {len(args)} argument(s)"
    return None if len(args) >= 2 else "(define (name args) body) has no body"


def _vector(a: Arg) -> bool:
    return a.kind == "vector"


def _even_vector(a: Arg) -> bool:
    return a.kind == "vector" and len(a.elems) % 2 == 0


def _clj_fn_body(args):
    """What follows the name (and docstring / attribute map) of defn and fn: a parameter
    vector and a body, or lists that each start with a parameter vector."""
    rest = list(args)
    while rest and rest[0].kind in ("string", "map"):
        rest = rest[1:]
    if not rest or not _known(rest[0]):
        return None if rest else "has no parameter vector"
    if rest[0].kind == "vector":
        return None
    if all(a.kind == "other" or (a.kind == "list" and a.elems and a.elems[0].kind in
                                  ("vector", "other")) for a in rest):
        return None
    return "needs a parameter vector"


def _clj_defn(args):
    if len(args) < 2:
        return f"takes a name and a body, has {len(args)} argument(s)"
    return _clj_fn_body(args[1:])


def _clj_fn(args):
    return _clj_fn_body(args[1:] if args and args[0].kind == "atom" else args)


_ONE = _count(1, 1)
_TWO = _count(2, 2)

_CL_RULES = {
    "if": _count(2, 3), "when": _count(1), "unless": _count(1),
    "let": _all(_count(1), _first(_cl_bindings, "a list of bindings")),
    "let*": _all(_count(1), _first(_cl_bindings, "a list of bindings")),
    "flet": _all(_count(1), _first(_cl_fbindings, "a list of (name lambda-list body)")),
    "labels": _all(_count(1), _first(_cl_fbindings, "a list of (name lambda-list body)")),
    "defun": _all(_count(2), lambda a: None if len(a) < 2 or not _known(a[1]) or
                  _cl_lambda_list(a[1]) else "its second element must be a lambda list"),
    "defmacro": _all(_count(2), lambda a: None if len(a) < 2 or not _known(a[1]) or
                     _is_list(a[1]) else "its second element must be a lambda list"),
    "defmethod": _all(_count(2), _cl_defmethod), "declare": _cl_declare,
    "lambda": _first(_is_list, "a lambda list"),
    "setf": _pairs, "setq": _pairs, "psetf": _pairs, "psetq": _pairs,
    "cond": _clauses(), "case": _all(_count(1), _clauses(1)),
    "ecase": _all(_count(1), _clauses(1)), "typecase": _all(_count(1), _clauses(1)),
    "etypecase": _all(_count(1), _clauses(1)),
    "dolist": _all(_count(1), _first(_iteration_spec, "(var list [result])")),
    "dotimes": _all(_count(1), _first(_iteration_spec, "(var count [result])")),
    "multiple-value-bind": _all(_count(2), _first(_is_list, "a list of variables")),
    "destructuring-bind": _all(_count(2), _first(_is_list, "a lambda list")),
    "quote": _ONE, "return-from": _count(1, 2), "return": _count(0, 1),
    "defvar": _count(1, 3), "defparameter": _count(2, 3), "defconstant": _count(2, 3),
    **{f: _ONE for f in ("not", "null", "car", "cdr", "first", "rest", "second", "third",
                         "cadr", "cddr", "caar", "cdar", "endp", "consp", "listp", "atom",
                         "symbolp", "stringp", "numberp", "integerp", "zerop", "plusp",
                         "minusp", "evenp", "oddp", "1+", "1-", "identity", "length",
                         "reverse", "nreverse", "symbol-name", "keywordp", "functionp")},
    # not cons, eql, member: `(cons integer)`, `(eql t)`, `(member :a)` are type specifiers
    **{f: _TWO for f in ("eq", "equal", "equalp", "nth", "nthcdr", "elt", "rplaca",
                         "rplacd")},
    "gethash": _count(2, 3), "funcall": _count(1), "apply": _count(2), "assoc": _count(2),
}

_SCHEME_RULES = {
    "if": _count(2, 3), "when": _count(1), "unless": _count(1),
    "define": _scheme_define,
    "let": _scheme_let, "let*": _scheme_let, "letrec": _scheme_let, "letrec*": _scheme_let,
    "lambda": _count(2), "set!": _TWO, "quote": _ONE,
    "cond": _clauses(), "case": _all(_count(1), _clauses(1)),
    **{f: _ONE for f in ("not", "null?", "pair?", "car", "cdr", "cadr", "cddr", "caar",
                         "length", "reverse", "symbol?", "string?", "number?", "zero?",
                         "vector-length", "string-length", "list?")},
    **{f: _TWO for f in ("cons", "vector-ref", "list-ref", "string-ref")},
    "hash-ref": _count(2, 3),
}

_CLOJURE_RULES = {
    "if": _count(2, 3), "if-not": _count(2, 3), "when": _count(1), "when-not": _count(1),
    **{f: _all(_count(1), _first(_even_vector, "a vector of pairs"))
       for f in ("let", "loop", "binding", "with-open", "doseq", "for", "with-redefs")},
    **{f: _all(_count(1), _first(lambda a: a.kind == "vector" and len(a.elems) == 2,
                                 "a vector of one pair"))
       for f in ("when-let", "if-let", "when-some", "if-some", "dotimes")},
    "defn": _clj_defn, "defn-": _clj_defn, "defmacro": _clj_defn, "fn": _clj_fn,
    "cond": _even, "quote": _ONE,
    **{f: _ONE for f in ("not", "first", "rest", "next", "second", "count", "nil?", "some?",
                         "empty?", "seq", "inc", "dec", "zero?", "last", "butlast", "keys",
                         "vals", "deref", "pos?", "neg?", "even?", "odd?", "ffirst", "name")},
    **{f: _TWO for f in ("cons", "contains?")},
    "get": _count(2, 3), "nth": _count(2, 3), "assoc": _odd_min3,
}

_RULES = {CL: _CL_RULES, SCHEME: _SCHEME_RULES, CLOJURE: _CLOJURE_RULES}


def known(head: str, dialect: str) -> bool:
    """Does this module have a rule for `head`?"""
    return _name(head, dialect) in _RULES[dialect]


def _name(head: str, dialect: str) -> str:
    name = head
    if dialect == CL:
        name = head.lower()
        if name.startswith(("cl:", "common-lisp:")):
            name = name.split(":", 1)[1]
    elif dialect == CLOJURE and name.startswith("clojure.core/"):
        name = name[len("clojure.core/"):]
    return name


def problem(head: str, args: list[Arg], dialect: str) -> str | None:
    """Why a form with operator `head` and arguments `args` cannot be right, or None."""
    rule = _RULES[dialect].get(_name(head, dialect))
    return rule(args) if rule else None


# --- arglists from a live image -----------------------------------------------------------------

def lambda_list_arity(arglist: str, dialect: str) -> tuple[int, int | None] | None:
    """(fewest, most or None) arguments from an image's arglist line, as lispshell's
    introspection prints it: SBCL `(name a &optional b &rest c)`, Guile `(name a #:optional b
    . rest)`, Clojure `(name [a] [a b & more])`. None when it cannot be told (a macro shown as
    `(name ...)`, anything that does not read)."""
    from lispshell.syntax.lexer import tokenize      # shapes is a table; only this reads text

    tokens, _ = tokenize(arglist, dialect)
    depth, items, groups = 0, [], []
    for j, c in enumerate(tokens.codes):
        if c in ";b":
            continue
        if c in "([{":
            depth += 1
            if depth == 2:
                items.append("(list)")
                if c == "[":
                    groups.append([])
            continue
        if c in ")]}":
            depth -= 1
            continue
        text = tokens.text_of(j)
        if depth == 1:
            items.append(text)
        elif depth == 2 and groups and dialect == CLOJURE:
            groups[-1].append(text)
    if dialect == CLOJURE:
        if not groups:
            return None
        counts = [_clojure_params(g) for g in groups]
        return min(lo for lo, _ in counts), (None if any(hi is None for _, hi in counts)
                                             else max(hi for _, hi in counts))
    params = items[1:]
    if "..." in params:
        return None
    required = optional = 0
    mode = "required"
    skip = False
    for p in params:
        low = p.lower()
        if skip:
            skip = False
        elif low in ("&whole", "&environment"):
            skip = True
        elif low in ("&optional", "#:optional"):
            mode = "optional"
        elif low in ("&rest", "&body", "&key", "#:key", "#:rest", "."):
            return required, None
        elif low == "&aux":
            break
        elif low.startswith("&"):
            return None                  # a lambda-list keyword not known here
        elif mode == "required":
            required += 1
        else:
            optional += 1
    return required, required + optional


def _clojure_params(group: list[str]) -> tuple[int, int | None]:
    if "&" in group:
        return group.index("&"), None
    return len(group), len(group)
