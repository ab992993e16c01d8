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

import re
from dataclasses import dataclass, field
from functools import lru_cache

from lispshell.syntax.dialects import CL, CLOJURE, SCHEME


@dataclass
class Arg:
    kind: str                 # list | vector | map | atom | string | other
    text: str = ""            # an atom's text
    elems: list = field(default_factory=list)     # a list's / vector's elements (Arg)
    rest: bool = False        # an atom naming a rest parameter: a list or seq, no number
    quotes: str = ""          # a quote prefix's: the symbol or number it quotes


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
    if len(args) == 1 and args[0].kind == "atom":
        return None          # `(setf foo)`: a function's name, written as data
    return None if args and len(args) % 2 == 0 else f"takes pairs, has {len(args)} argument(s)"


def _odd_min3(args):
    return None if len(args) >= 3 and len(args) % 2 == 1 else \
        f"takes a map and key/value pairs, has {len(args)} argument(s)"


def _no_list(a) -> bool:
    """A literal that is never a list: a string, number, keyword or character."""
    return a.kind == "string" or a.kind == "atom" and (
        a.text[:1].isdigit() or a.text.startswith((":", "#\\", "\\")))


def _last_is_a_list(args):
    """apply's last argument is a list: never a string, number, keyword or character."""
    last = args[-1] if args else None
    if last is not None and _no_list(last):
        return f"its last argument must be a list, not {last.text or 'a string'}"
    return None


def _maps_lists(args):
    """A mapping function's arguments after the function are lists (Scheme's `map` and
    `for-each`, CL's `mapcar`...; Scheme maps strings with `string-map`, CL with `map`):
    `(map uri-encode parts "/")` is `(map uri-encode parts)` with the separator after it."""
    literal = next((a for a in args[1:] if _no_list(a)), None)
    if literal is not None:
        return f"maps over lists, not {literal.text or 'a string'}"
    return None


# Legal with one argument, but nobody writes it (`(or x)` is `x`): 0.5-0.9% of the calls in
# SBCL's, Guile's and Clojure's sources, and `(when x)` with no body 0.1%.
_TWO_OR_MORE = {f: _count(2) for f in ("<", ">", "<=", ">=", "and", "or")}


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


def _case_keys_once(args):
    """CL `case`, `ecase`, `ccase`: each key once in the form (SBCL warns of a duplicate
    key: the later clause can never be taken). A closer put back too late inside a clause
    (`((t) t)` as `((t t))`) repeats one."""
    seen: set[str] = set()

    def key(a: Arg) -> str:
        return a.text if a.text.startswith("#\\") else a.text.lower()    # #\y is not #\Y

    for clause in args[1:]:
        if clause.kind != "list" or not clause.elems:
            continue
        keys = clause.elems[0]
        if keys.kind == "atom":
            names = [key(keys)] if key(keys) not in ("t", "otherwise") else []
        elif keys.kind == "list" and all(k.kind == "atom" for k in keys.elems):
            names = [key(k) for k in keys.elems]
        else:
            continue
        for name in names:
            if name in seen:
                return f"names the key {name} twice"
            seen.add(name)
    return None


def _cl_bindings(a: Arg) -> bool:
    """let bindings: symbols or (symbol [value]); a quoted form is none (`((srlt '(nil
    zool)) 'zool)` is the bindings with the body read into them)."""
    if not _is_list(a):
        return False
    return all(e.kind == "atom" or e.kind == "other" and e.text not in ("'", "`") or
               (e.kind == "list" and 1 <= len(e.elems) <= 2 and e.elems[0].kind != "list")
               for e in a.elems)


def _cl_lambda_list(a: Arg) -> bool:
    """defun lambda lists: symbols, then after a lambda-list keyword symbols or (var
    [default [supplied-p]]): a required parameter is a symbol (`(layout (wrapper-bitmap
    layout))` is a parameter list that swallowed the body)."""
    if not _is_list(a):
        return False
    required = True
    for e in a.elems:
        if e.kind == "atom" and e.text.startswith("&"):
            required = False
        elif not (e.kind in ("atom", "other") or
                  (not required and e.kind == "list" and 1 <= len(e.elems) <= 3)):
            return False
    return True


def _cl_lambda_list_keywords(a: Arg) -> str | None:
    """A CL lambda list (a function's or a macro's) holds no quoted datum, and its &rest or
    &body names one variable, then ends or goes on with another lambda-list keyword:
    `(&rest forms `(progn ,@forms))` is `(&rest forms)` with the body read into it."""
    if a.kind != "list":
        return None
    if any(e.kind == "other" and e.text in ("'", "`") for e in a.elems):
        return "a lambda list holds no quoted form"
    if any(e.kind == "other" for e in a.elems):
        return None                       # `#+sbcl`: how many follow is not known
    for i, e in enumerate(a.elems):
        if e.kind == "atom" and e.text.lower() in ("&rest", "&body"):
            after = a.elems[i + 1:i + 3]
            if not after or len(after) == 2 and not (
                    after[1].kind == "atom" and after[1].text.startswith("&")):
                return f"{e.text} names one variable"
    return None


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


# declarations that name variables or functions: each names one at least
_NAMING_DECLARATIONS = frozenset("""ignore ignorable special dynamic-extent inline notinline
maybe-inline""".split())


# CL's compound type specifiers and the most arguments each takes (CLHS 4.2.3); `*` stands
# for any of them
_CL_TYPE_ARGS = {"simple-array": 2, "array": 2, "vector": 2, "unsigned-byte": 1,
                 "signed-byte": 1, "integer": 2, "mod": 1, "not": 1, "satisfies": 1, "eql": 1,
                 "cons": 2, "complex": 1, "simple-vector": 1, "string": 1, "simple-string": 1,
                 "base-string": 1, "simple-base-string": 1, "bit-vector": 1,
                 "simple-bit-vector": 1, "float": 2, "short-float": 2, "single-float": 2,
                 "double-float": 2, "long-float": 2, "real": 2, "rational": 2}


def _cl_type(a: Arg) -> str | None:
    """A compound type specifier with more arguments than CL's takes: `(simple-array word
    (4) x)` is `(simple-array word (4))` with a closer put back too late. `(or ...)`, `(and
    ...)` and `(values ...)` hold types; others (a deftype's) are not known here."""
    if a.kind != "list" or not a.elems or a.elems[0].kind != "atom":
        return None
    head = a.elems[0].text.lower()
    if any(e.kind == "other" and (e.text.startswith(("#+", "#-")) or "@" in e.text)
           for e in a.elems):
        return None         # an element that may not be there, a splice of any number
    most = _CL_TYPE_ARGS.get(head)
    if most is not None and len(a.elems) - 1 > most:
        return f"the type ({head} ...) takes {most} argument(s) at most"
    if head in ("or", "and") and any(
            e.kind == "string" or e.kind == "list" and not e.elems or e.kind == "atom" and (
                e.text.startswith(":") or _CL_NUMBER.match(e.text)) for e in a.elems[1:]):
        # `(or symbol list :read-only t)`: a slot's options read into its type; `(or
        # classoid null ())`: a defknown's attributes, which follow nine `(or ...)` result
        # types in SBCL's sources (the empty type is written `nil`, but for parse-integer's
        # `(or integer null ())`)
        return f"({head} ...) holds types, not keywords, strings, numbers or ()"
    if head in ("or", "and", "values"):
        return next(filter(None, map(_cl_type, a.elems[1:])), None)
    return None


def _clause_types(args):
    """A typecase's clauses start with a type: `((array nil (*) string))` is `((array nil (*))
    string)` with a closer put back too late."""
    return next(filter(None, (_cl_type(c.elems[0]) for c in args[1:]
                              if c.kind == "list" and c.elems)), None)


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
        if head == "type" and len(spec.elems) == 2:
            return "(type ...) declares no variable"
        if head == "type" and len(spec.elems) > 1 and (why := _cl_type(spec.elems[1])):
            return why
        if head in ("type", "ftype") and len(spec.elems) < 2:
            return f"({head}) declares no type"
        if head == "ftype" and len(spec.elems) == 2:
            return "(ftype ...) declares no function"
        if head in _NAMING_DECLARATIONS and len(spec.elems) == 1:
            return f"({head}) names nothing"
        if head == "ftype" and len(spec.elems) > 1:
            ftype = spec.elems[1]
            if ftype.kind == "list" and len(ftype.elems) == 1 and \
                    ftype.elems[0].kind == "atom" and \
                    ftype.elems[0].text.lower() in ("function", "sfunction"):
                return "(ftype (function) ...) declares nothing: every function is one"
            why = _function_type(ftype)
            if why:
                return why
        for n in names:
            if n.kind == "list" and not (n.elems and n.elems[0].kind == "atom" and
                                         n.elems[0].text.lower() == "function"):
                return f"({head} ...) declares variables, not forms"
        if head in ("inline", "notinline", "maybe-inline") or \
                head == "ftype" and len(spec.elems) > 2:
            # a function's name is a symbol or `(setf symbol)` (SBCL's `(cas symbol)`
            # too): `(setf sap-ref-32le sap-ref-32be (setf sap-ref-32be))` is a closer put
            # back too late
            for n in spec.elems[1 if head != "ftype" else 2:]:
                if n.kind == "list" and not any(e.kind == "other" for e in n.elems) and not (
                        len(n.elems) == 2 and all(e.kind == "atom" for e in n.elems) and
                        n.elems[0].text.lower() in ("setf", "cas")):
                    return f"({head} ...) names functions: a symbol or (setf symbol)"
    return None


_CL_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eEdDfFsSlL][+-]?\d+)?(/\d+)?$")


def _no_keyword(a: Arg) -> bool:
    """A literal that is certainly no keyword (CL): a string, a number, a character, `nil`,
    `t`, a quoted or function-quoted form (`'x`, `#'f`). A variable may hold a keyword."""
    if a.kind == "string":
        return True
    if a.kind == "other":
        return a.text in ("'", "#'", "`")
    return a.kind == "atom" and (a.text.startswith("#\\") or a.text.lower() in ("nil", "t")
                                 or bool(_CL_NUMBER.match(a.text)))


def _member_keys(args):
    """CL `member`: an item, a list, then :key, :test or :test-not arguments; only a quoted
    form there is checked: `(member :a :b :c)` and `(member 1 2 4 8)` are type specifiers
    too, whose elements are never quoted."""
    for k in args[2::2]:
        if k.kind == "other" and k.text in ("'", "#'", "`"):
            return "takes keywords after its 2 positional arguments, not a literal that is none"
    if len(args) == 1 and args[0].kind == "other" and args[0].text in ("'", "`"):
        # a quoted item: a call, which takes a list too (`(member 'fubar)`)
        return "takes an item and a list, has 1 argument"
    return None


def _keys(required: int, keys: str):
    """A CL function with `required` positional parameters and then only &key ones (the
    standard's, SBCL's extensions for make-hash-table): after the positional arguments, a
    literal keyword it does not take, or one with no value, cannot be right. A key that is
    not a literal (`(apply ...)`-style variables, a feature expression) says nothing."""
    allowed = frozenset(keys.split()) | {":allow-other-keys"}

    def rule(args):
        rest = args[required:]
        for i in range(0, len(rest), 2):
            k = rest[i]
            if _no_keyword(k):
                return f"takes keywords after its {required} positional arguments, not a " \
                    "literal that is none"
            if k.kind != "atom" or not k.text.startswith(":"):
                return None
            if k.text.lower() not in allowed:
                return f"takes the keywords {' '.join(sorted(allowed))}, not {k.text}"
            if i + 1 == len(rest):
                return f"its keyword {k.text} has no value"
        return None
    return rule


_SEQ_KEYS = ":from-end :test :test-not :start :end :key"
_SEQ_IF_KEYS = ":from-end :start :end :key"
# {name: (its positional arguments, the keywords it takes after them)}
_CL_KEY_PARAMS = {
    **{f: (2, _SEQ_KEYS) for f in ("find", "position", "count")},
    **{f: (2, _SEQ_KEYS + " :count") for f in ("remove", "delete")},
    **{f: (2, _SEQ_IF_KEYS) for f in ("find-if", "find-if-not", "position-if",
                                      "position-if-not", "count-if", "count-if-not")},
    **{f: (2, _SEQ_IF_KEYS + " :count") for f in ("remove-if", "remove-if-not",
                                                  "delete-if", "delete-if-not")},
    **{f: (1, _SEQ_KEYS) for f in ("remove-duplicates", "delete-duplicates")},
    **{f: (2, ":key :test :test-not") for f in ("assoc", "rassoc", "adjoin", "union",
                                                "intersection", "set-difference",
                                                "subsetp", "nunion", "nintersection",
                                                "nset-difference")},
    **{f: (2, ":from-end :test :test-not :key :start1 :start2 :end1 :end2")
       for f in ("search", "mismatch")},
    "reduce": (2, ":key :from-end :start :end :initial-value"),
    "sort": (2, ":key"), "stable-sort": (2, ":key"),
    "fill": (2, ":start :end"), "replace": (2, ":start1 :end1 :start2 :end2"),
    "make-array": (1, ":element-type :initial-element :initial-contents :adjustable "
                   ":fill-pointer :displaced-to :displaced-index-offset"),
    "make-string": (1, ":element-type :initial-element"),
    "make-list": (1, ":initial-element"),
    "make-hash-table": (0, ":test :size :rehash-size :rehash-threshold :weakness "
                        ":synchronized :hash-function"),
    "parse-integer": (1, ":start :end :radix :junk-allowed"),
}
_CL_KEYED_FUNCTIONS = {**{f: _keys(n, keys) for f, (n, keys) in _CL_KEY_PARAMS.items()},
                       "member": _member_keys}


def standard_keywords(name: str, dialect: str) -> frozenset:
    """The keywords a Common Lisp standard function takes after its positional arguments
    (`position`: :from-end :test :test-not :start :end :key); empty when none is known."""
    if dialect != CL:
        return frozenset()
    entry = _CL_KEY_PARAMS.get(_name(name, dialect))
    return frozenset(entry[1].split()) if entry else frozenset()


_LAMBDA_WORDS = ("&optional", "&rest", "&key", "&allow-other-keys")


def _function_type_args(a: Arg) -> str | None:
    """The argument types of a `(function (ARG-TYPES) VALUES)` type: after `&rest`, one
    type and then only `&key`; after `&key`, `(keyword type)` lists (or
    `&allow-other-keys`)."""
    if a.kind != "list":
        return None
    section = None
    after_rest = 0
    for e in a.elems:
        if e.kind == "other":
            return None
        word = e.text.lower() if e.kind == "atom" else ""
        if word in _LAMBDA_WORDS:
            section, after_rest = word, 0
            continue
        if section == "&rest":
            after_rest += 1
            if after_rest > 1:
                return "a function type's &rest takes one type"
        elif section == "&key" and e.kind != "list":
            return "a function type's &key parameters are (keyword type)"
    return None


def _function_type(a: Arg) -> str | None:
    """`(function (ARG-TYPES) VALUES)`: two elements after `function` at most (and after
    SBCL's `sfunction`, the same type of a simple function)."""
    if a.kind != "list" or not a.elems or a.elems[0].kind != "atom" or \
            a.elems[0].text.lower() not in ("function", "sfunction"):
        return None
    if len(a.elems) > 3:
        return "(function (args) values) has no more than two elements"
    return _function_type_args(a.elems[1]) if len(a.elems) > 1 else None


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


def _goops_method(args):
    """GOOPS `(define-method (name param...) body...)`: a parameter is a symbol or `(name
    class)`."""
    if not args or args[0].kind != "list":
        return None
    for e in args[0].elems[1:]:
        if e.kind == "list" and len(e.elems) != 2:
            return "a specialized parameter is (name class)"
        if e.kind == "other":
            return None
    return None


def _scheme_define(args):
    # a dotted header (`(define (warn port . more))`) is a list whose length is not known,
    # but a header all the same
    if not args or not _known(args[0]) and not args[0].elems:
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
        return _clj_params(rest[0])
    if all(a.kind == "other" or (a.kind == "list" and a.elems and a.elems[0].kind in
                                  ("vector", "other")) for a in rest):
        for a in rest:
            if a.kind == "list" and a.elems[0].kind == "vector":
                why = _clj_params(a.elems[0])
                if why:
                    return why
        return None
    return "needs a parameter vector"


def _clj_params(vector: Arg, nested: bool = False) -> str | None:
    """A parameter vector holds symbols, `&`, and vectors or maps to destructure (a `^hint`
    before one is fine, and so is a template's `~name`; a nested vector's `:as name` too);
    never a call, a string, a keyword or a number; one parameter after `&` (and a nested
    vector's `:as name`); and no name twice (its vectors' included)."""
    for i, e in enumerate(vector.elems):
        if e.kind in ("list", "string") or \
                (e.kind == "other" and e.text not in ("^", "#^", "~", "~@")) \
                or (e.kind == "atom" and (e.text[:1] in ":0123456789\\\"" or
                                          e.text in ("nil", "true", "false"))
                    and not (nested and e.text == ":as")):
            return "its parameter vector holds something that is not a parameter"
        if e.kind == "vector" and _clj_params(e, True):
            return "its parameter vector holds something that is not a parameter"
    amp = next((i for i, e in enumerate(vector.elems) if e.kind == "atom" and e.text == "&"),
               None)
    if amp is not None and not any(e.kind == "other" for e in vector.elems):
        after = vector.elems[amp + 1:]
        if nested and len(after) == 3 and after[1].kind == "atom" and after[1].text == ":as":
            after = after[:1]
        if len(after) != 1:
            # Clojure refuses `[& args x]`: `(fn [& args x]` lost its closer after `args`
            return "its parameter vector takes one parameter after &"
    if not nested:
        names = [e for e in vector.elems if e.kind == "atom"] + \
            [n for e in vector.elems if e.kind == "vector" for n in e.elems if n.kind == "atom"]
        return _repeated(names)
    return None


def _repeated(params: list[Arg]) -> str | None:
    """A lambda list or parameter vector names each parameter once (Common Lisp and Scheme
    say so; Clojure lets the last one win, but nobody writes that). Names starting with `_`
    are the ignored ones, and `&`-words and `#:` keywords no names."""
    seen: set[str] = set()
    for p in params:
        t = p.text.lower() if p.kind == "atom" else ""
        if not t or t[0] in "_&#:." or t == ":as":
            continue
        if t in seen:
            return f"its parameters name {p.text} twice"
        seen.add(t)
    return None


def _lambda_list_once(at: int):
    """The list at argument `at` (a lambda list, Scheme's `(name . formals)`) names each
    parameter once (its own `(var default)` lists by their first element)."""
    def rule(args):
        if len(args) <= at or args[at].kind != "list":
            return None
        names = [e if e.kind == "atom" else e.elems[0] for e in args[at].elems
                 if e.kind == "atom" or e.kind == "list" and e.elems and
                 e.elems[0].kind == "atom"]
        return _repeated(names)
    return rule


def _clj_defn(args):
    if len(args) < 2:
        return f"takes a name and a body, has {len(args)} argument(s)"
    return _clj_fn_body(args[1:])


def _clj_fn(args):
    return _clj_fn_body(args[1:] if args and args[0].kind == "atom" else args)


_CL_DIRECTIVE = re.compile(r"~((?:[+-]?\d+|'.|[vV#])?(?:,(?:[+-]?\d+|'.|[vV#])?)*)([:@]*)(.)",
                           re.S)
_CL_CONSUMES = set("aAsSdDbBoOxXcCfFeEgG$rRwW")
_CL_NOTHING = set("%&|~tT\n()iI_")


def _cl_format_args(control: str) -> int | None:
    """How many arguments a CL / Guile format string consumes, when it is a simple one: `~a`,
    `~d`, `~5,'0d` consume one (and each `v` parameter one more), `~%`, `~&`, `~~`, `~t` none.
    An iteration `~{...~}` over one list argument consumes that list, whatever is inside it
    (`"~{~a~^.~}:~a"` two arguments); `~@{`, which iterates over the rest, is None. None for
    anything else that jumps, loops or chooses (`~[`, `~*`, `~?`, `~^`, `~:p`...)."""
    n = 0
    depth = 0                      # inside ~{ ... ~}: the list's elements, not arguments
    for m in _CL_DIRECTIVE.finditer(control):
        params, mods, ch = m.groups()
        if depth:
            depth += (ch == "{") - (ch == "}")
            continue
        n += params.lower().count("v")
        if ch == "{" and "@" not in mods:
            n += 1
            depth = 1
        elif ch in _CL_CONSUMES:
            n += 1
        elif ch in "pP" and ":" not in mods:
            n += 1
        elif ch not in _CL_NOTHING:
            return None
    return None if depth else n


def _java_format_args(control: str) -> int | None:
    """Clojure's format / printf: Java conversions `%s`, `%5.2f`...; `%%` and `%n` take none;
    None when an argument is named by position (`%1$s`) or reused (`%<s`)."""
    n = 0
    for m in re.finditer(r"%([-#+ 0,(<]*\d*(?:\.\d+)?\$?)([a-zA-Z%])", control):
        flags, ch = m.groups()
        if "$" in flags or "<" in flags:
            return None
        if ch not in "%n":
            n += 1
    return n


def _format(at: int, counter):
    """A format call whose control string is argument `at`: the arguments after it must be as
    many as its directives consume."""
    def rule(args):
        if len(args) <= at or args[at].kind != "string" or \
                any(a.kind == "other" for a in args[at + 1:]):
            return None
        want = counter(args[at].text[1:-1])
        have = len(args) - at - 1
        if want is None or want == have:
            return None
        return f"its format string takes {want} argument(s), has {have}"
    return rule


_ONE = _count(1, 1)
_TWO = _count(2, 2)


def _body(at: int):
    """A body after the first `at` arguments: a `let` or `loop` that binds and does nothing
    with its bindings (`(loop [x 1 y 2])`) is legal in CL and Clojure, but nobody writes
    one (3 in the 21,509 forms of SBCL's sources, each a template a macro completes later;
    none in Clojure's), and Scheme's `let` does not allow it."""
    def rule(args):
        if len(args) == at and (at == 0 or _known(args[at - 1])):
            return "binds and has no body"
        return None
    return rule

# SBCL's compiler's attributes of a known function (src/compiler/fun-info.lisp)
_IR1_ATTRIBUTES = frozenset("""call unwind any dx-safe foldable flushable unsafely-flushable
important-result movable predicate recursive always-translatable callee-omit-arg-count-check
commutative reoptimize-when-unlinking no-verify-arg-count fixed-args""".split())


def _defknown(args):
    """SBCL's `(defknown name (ARG-TYPES) RESULT-TYPE [(ATTRIBUTES)] &key ...)`: the argument
    types of a function type, a result type (`(defknown (logcount integer-length) (integer
    bit-index` lost its closer after `integer`, not at the end), attributes in a list
    (`(flushable)`, `()`), then keyword arguments. All 903 of SBCL's own read this way."""
    if len(args) < 3:
        return f"takes a name, argument types and a result type, has {len(args)} argument(s)"
    result = args[2]
    # none of SBCL's is a keyword or `()`: those are a keyword argument and the attributes
    # after a result type that lost its place (`(t sap alien-type t)\n  ())`)
    if result.kind == "atom" and result.text.startswith(":") or \
            result.kind == "list" and not result.elems:
        return "its result type is a type, not a keyword or ()"
    if result.kind == "list" and result.elems and all(
            e.kind == "atom" and e.text.lower() in _IR1_ATTRIBUTES for e in result.elems):
        return "its result type is a type, not attributes"
    if len(args) > 3 and args[3].kind not in ("list", "other") and \
            args[3].text.lower() != "nil":
        return "its attributes are a list"
    keys = args[4:]
    if not any(k.kind == "other" for k in keys) and (len(keys) % 2 or any(
            k.kind != "atom" or not k.text.startswith(":") for k in keys[::2])):
        return "after its attributes, keyword arguments"
    return _cl_type(result) or _function_type_args(args[1])


_ALIEN_STYLES = (":in", ":copy", ":out", ":in-out")


def _alien_routine_args(args):
    """SBCL's define-alien-routine: a name, a result type, then each argument `(name type
    [style])`, its style :in, :copy, :out or :in-out (SBCL signals "bogus argument style"
    for any other; a docstring or `&optional` may stand among them): `(handle unsigned
    (exit-code unsigned :out))` is two arguments with a closer put back too late."""
    types = args[1:2]
    for a in args[2:]:
        if a.kind != "list":
            continue
        if not 2 <= len(a.elems) <= 3:
            return "an argument is (name type [style])"
        if len(a.elems) == 3 and not (a.elems[2].kind == "atom" and
                                      a.elems[2].text.lower() in _ALIEN_STYLES):
            return "an argument's style is :in, :copy, :out or :in-out"
        types.append(a.elems[1])
    for t in types:
        if not (t.kind == "list" and t.elems and t.elems[0].kind == "atom"):
            continue
        head = t.elems[0].text.lower()
        # an alien pointer type is (* type), an integer type (signed [bits]): `(context (*
        # os-context-t (index int)))` is an argument swallowed by the type before it, `(size
        # (signed 64 :in-out))` a style
        if head == "*" and len(t.elems) != 2:
            return "an alien pointer type is (* type)"
        if head in ("signed", "unsigned", "integer", "boolean") and (
                len(t.elems) > 2 or len(t.elems) == 2 and _not_a_number(t.elems[1], CL)):
            return f"an alien integer type is ({head} [bits])"
    return None


_CL_RULES = {
    "if": _count(2, 3), "when": _count(2), "unless": _count(2),
    "let": _all(_count(1), _first(_cl_bindings, "a list of bindings"), _body(1)),
    "let*": _all(_count(1), _first(_cl_bindings, "a list of bindings"), _body(1)),
    "flet": _all(_count(1), _first(_cl_fbindings, "a list of (name lambda-list body)"),
                 _body(1)),
    "labels": _all(_count(1), _first(_cl_fbindings, "a list of (name lambda-list body)"),
                   _body(1)),
    "macrolet": _count(1),
    # the other special operators, known so that a text's calls of them count for no
    # function's (`(macrolet ((def ...)) (def 1 x) (def 2 y))` three times in a file did);
    # no rule: `(function int ...)` is an alien type, `(:results (block))` a VOP's syntax
    **{op: _count(0) for op in ("block", "catch", "eval-when", "function", "locally",
                                "multiple-value-call", "multiple-value-prog1", "progv",
                                "tagbody")},
    "symbol-macrolet": _all(_count(1), _first(_cl_bindings, "a list of bindings")),
    "defun": _all(_count(2), lambda a: None if len(a) < 2 or not _known(a[1]) or
                  _cl_lambda_list(a[1]) else "its second element must be a lambda list",
                  _lambda_list_once(1),
                  lambda a: _cl_lambda_list_keywords(a[1]) if len(a) > 1 else None),
    "defmacro": _all(_count(2), lambda a: None if len(a) < 2 or not _known(a[1]) or
                     _is_list(a[1]) else "its second element must be a lambda list",
                     lambda a: _cl_lambda_list_keywords(a[1]) if len(a) > 1 else None),
    "defmethod": _all(_count(2), _cl_defmethod), "declare": _cl_declare,
    "declaim": _cl_declare,
    "defknown": _defknown,
    "define-alien-routine": _alien_routine_args,
    "sb-alien:define-alien-routine": _alien_routine_args,
    # a lambda with no body returns nil: nobody writes one
    "lambda": _all(_count(2), _first(_is_list, "a lambda list"), _lambda_list_once(0)),
    "the": _all(_TWO, lambda a: _cl_type(a[0]) if a else None),
    "truly-the": _all(_TWO, lambda a: _cl_type(a[0]) if a else None),   # SBCL's, unchecked
    "setf": _pairs, "setq": _pairs, "psetf": _pairs, "psetq": _pairs,
    "cond": _clauses(), "case": _all(_count(1), _clauses(1), _case_keys_once),
    "ecase": _all(_count(1), _clauses(1), _case_keys_once),
    "ccase": _all(_count(1), _clauses(1), _case_keys_once),
    "typecase": _all(_count(1), _clauses(1), _clause_types),
    "etypecase": _all(_count(1), _clauses(1), _clause_types),
    "dolist": _all(_count(1), _first(_iteration_spec, "(var list [result])")),
    "dotimes": _all(_count(1), _first(_iteration_spec, "(var count [result])")),
    # with no body: none of SBCL's 382 destructuring-binds, one of its 1,290
    # multiple-value-binds, whose only body form follows a `#-` (uiop's launch-program):
    # `(destructuring-bind (value size constant)\n (cons ...))` lost a closer
    "multiple-value-bind": _all(_count(2), _first(
        lambda a: _is_list(a) and all(e.kind in ("atom", "other") for e in a.elems),
        "a list of variables"), _body(2)),
    "destructuring-bind": _all(_count(2), _first(_is_list, "a lambda list"), _body(2)),
    "quote": _ONE, "return-from": _count(1, 2), "return": _count(0, 1),
    "defvar": _count(1, 3), "defparameter": _count(2, 3), "defconstant": _count(2, 3),
    # SBCL's: a name, a value form (code, as defparameter's), a docstring
    "defglobal": _count(2, 3), "define-load-time-global": _count(2, 3),
    "defconstant-eqx": _count(3, 4),
    **{f: _ONE for f in ("not", "null", "car", "cdr", "first", "rest", "second", "third",
                         "cadr", "cddr", "caar", "cdar", "endp", "consp", "listp", "atom",
                         "symbolp", "stringp", "numberp", "integerp", "zerop", "plusp",
                         "minusp", "evenp", "oddp", "1+", "1-", "identity", "length",
                         "reverse", "nreverse", "symbol-name", "keywordp", "functionp")},
    # not cons, eql, member: `(cons integer)`, `(eql t)`, `(member :a)` are type specifiers
    **{f: _TWO for f in ("eq", "equal", "equalp", "nth", "nthcdr", "elt", "rplaca",
                         "rplacd")},
    "gethash": _count(2, 3), "funcall": _count(1), "assoc": _count(2),
    "apply": _all(_count(2), _last_is_a_list),
    **{f: _ONE for f in ("caddr", "cdddr", "cadddr", "fourth", "fifth", "char-code",
                         "code-char", "char-upcase", "char-downcase", "symbol-function",
                         "symbol-value", "symbol-package", "fboundp", "boundp", "class-of",
                         "type-of", "copy-list", "copy-seq", "copy-tree", "list-length",
                         "fill-pointer", "array-total-size", "array-rank", "realpart",
                         "imagpart", "abs", "signum", "sqrt", "isqrt", "exp", "pop",
                         "multiple-value-list", "go", "eval", "last-pair",
                         "make-symbol", "special-operator-p", "vectorp", "simple-vector-p",
                         "characterp", "hash-table-p", "hash-table-count", "arrayp",
                         "floatp", "rationalp", "packagep")},
    **{f: _TWO for f in ("svref", "schar", "char", "ash", "logbitp", "ldb", "byte",
                         "rem", "remhash", "maphash", "slot-value", "slot-boundp",
                         "nth-value", "expt", "ldiff", "tailp", "throw", "vector-push",
                         "array-dimension", "remf")},
    **{f: _count(1, 2) for f in ("floor", "ceiling", "truncate", "round", "last",
                                 "butlast", "incf", "decf", "log", "load-time-value",
                                 "macroexpand", "macroexpand-1", "intern", "find-symbol",
                                 "princ", "prin1", "print", "pprint", "write-char",
                                 "macro-function", "compile")},
    **{f: _count(2, 3) for f in ("getf", "get", "subseq", "vector-push-extend", "typep",
                                 "pairlis")},
    "dpb": _count(3, 3), "acons": _count(3, 3), "coerce": _TWO, "push": _TWO,
    "pushnew": _count(2),
    **{f: _all(_count(2), _maps_lists) for f in ("mapcar", "mapc", "mapcan")},
    "remove": _count(2), "delete": _count(2), "find": _count(2), "position": _count(2),
    "some": _count(2), "every": _count(2), "notany": _count(2),
    "sort": _count(2), "stable-sort": _count(2), "reduce": _count(2), "assert": _count(1),
    "unwind-protect": _count(1), "prog1": _count(1),
    "terpri": _count(0, 1), "make-instance": _count(1), "aref": _count(1),
    "logtest": _TWO, "formatter": _ONE,
    # also compound type specifiers ((cons integer), (eql :a), (mod 8)): never more than two
    "cons": _count(0, 2), "eql": _count(1, 2), "mod": _count(1, 2),
    "format": _all(_count(2), _format(1, _cl_format_args)),
    "error": _all(_count(1), _format(0, _cl_format_args)),
    "warn": _all(_count(1), _format(0, _cl_format_args)),
    # legal with one argument, but then always true: nobody writes that
    **_TWO_OR_MORE, "/=": _count(2),
}
for _f, _rule in _CL_KEYED_FUNCTIONS.items():
    _CL_RULES[_f] = _all(_CL_RULES[_f], _rule) if _f in _CL_RULES else _rule

def _module_options(args):
    """Guile's define-module: `#:autoload` takes a module name and a list of the names to
    load it for, each a list of symbols (`#:autoload (system base compile) (compile
    compile-file)`, not `#:autoload (system base compile (compile compile-file))`)."""
    for k, a in enumerate(args):
        if a.kind == "atom" and a.text in ("#:autoload", ":autoload"):
            if not all(len(args) > k + i and args[k + i].kind == "list" and
                       all(e.kind == "atom" for e in args[k + i].elems) for i in (1, 2)):
                return "#:autoload takes a module name and a list of names, each of symbols"
    return None


_SCHEME_RULES = {
    "define-module": _module_options,
    "if": _count(2, 3), "when": _count(2), "unless": _count(2),
    "define": _all(_scheme_define, _lambda_list_once(0)), "string-append": _count(2),
    "let": _scheme_let, "let*": _scheme_let, "letrec": _scheme_let, "letrec*": _scheme_let,
    "lambda": _all(_count(2), _lambda_list_once(0)), "set!": _TWO, "quote": _ONE,
    "cond": _clauses(), "case": _all(_count(1), _clauses(1)),
    # (ice-9 match): each clause a list, `(pattern body ...)` (`(match succ (0 1) (1 0)
    # param b a)` has three symbols for clauses)
    "match": _all(_count(1), _clauses(1)), "match-lambda": _clauses(),
    "match-lambda*": _clauses(),
    **{f: _ONE for f in ("not", "null?", "pair?", "car", "cdr", "cadr", "cddr", "caar",
                         "length", "reverse", "symbol?", "string?", "number?", "zero?",
                         "vector-length", "string-length", "list?")},
    **{f: _TWO for f in ("cons", "vector-ref", "list-ref", "string-ref")},
    "hash-ref": _count(2, 3),
    **{f: _ONE for f in ("caddr", "cdddr", "cdar", "last-pair", "symbol->string",
                         "string->symbol", "char->integer", "integer->char",
                         "exact->inexact", "inexact->exact", "list->vector", "list->string",
                         "bytevector-length", "abs", "1+", "1-",
                         "vector?", "procedure?", "char?", "boolean?", "bytevector?",
                         "struct-vtable", "hash-table?", "unspecified?", "eof-object?")},
    **{f: _TWO for f in ("eq?", "eqv?", "equal?", "set-car!", "set-cdr!", "assq", "assv",
                         "memq", "memv", "list-tail", "list-head", "quotient", "remainder",
                         "modulo", "expt", "ash", "logbit?", "struct-ref",
                         "bytevector-u8-ref", "hash-remove!")},
    **{f: _count(3, 3) for f in ("vector-set!", "string-set!", "hash-set!", "hashq-set!",
                                 "hashv-set!", "bytevector-u8-set!", "assq-set!",
                                 "assoc-set!", "struct-set!", "hash-create-handle!")},
    **{f: _count(2, 3) for f in ("hashq-ref", "hashv-ref", "assoc", "member", "substring")},
    **{f: _count(1, 2) for f in ("number->string", "string->number", "display", "write",
                                 "make-vector", "make-string", "make-list")},
    "newline": _count(0, 1), "bytevector-copy!": _count(2, 5),
    **{f: _all(_count(2), _maps_lists) for f in ("map", "for-each")},
    "apply": _all(_count(2), _last_is_a_list), "error": _count(1),
    "let-values": _all(
        _count(2), _first(lambda a: a.kind == "list" and all(
            e.kind == "other" or (e.kind == "list" and len(e.elems) == 2) for e in a.elems),
            "a list of (formals expression)")),
    "receive": _count(3), "@": _TWO, "@@": _TWO, "compose": _count(2),
    # (ice-9 peg): `(_ sym accum pat)` in string-peg.scm and using-parsers.scm
    "define-peg-pattern": _count(3, 3), "define-sexp-parser": _count(3, 3),
    "define-method": _goops_method,
    # syntax: one clause or more, `(formals body ...)` each
    "case-lambda": _count(1), "case-lambda*": _count(1),
    "format": _all(_count(1), _format(1, _cl_format_args)),
    "simple-format": _all(_count(2), _format(1, _cl_format_args)),
    **_TWO_OR_MORE,
}
_SCHEME_RULES["let*-values"] = _SCHEME_RULES["let-values"]
# R6RS (rnrs bytevectors) accessors: a bytevector and an index, an endianness unless
# native, and a value to set
for _size in ("16", "32", "64"):
    for _sign in "us":
        _f = f"bytevector-{_sign}{_size}"
        _SCHEME_RULES.update({_f + "-native-ref": _TWO, _f + "-native-set!": _count(3, 3),
                              _f + "-ref": _count(3, 3), _f + "-set!": _count(4, 4)})
for _f in ("bytevector-ieee-single", "bytevector-ieee-double"):
    _SCHEME_RULES.update({_f + "-native-ref": _TWO, _f + "-native-set!": _count(3, 3),
                          _f + "-ref": _count(3, 3), _f + "-set!": _count(4, 4)})
_SCHEME_RULES.update({"bytevector-s8-ref": _TWO, "bytevector-s8-set!": _count(3, 3)})

_CLOJURE_RULES = {
    "if": _count(2, 3), "if-not": _count(2, 3), "when": _count(2), "when-not": _count(2),
    "apply": _all(_count(2), _last_is_a_list), "print-method": _TWO, "print-dup": _TWO,
    **{f: _all(_count(1), _first(_even_vector, "a vector of pairs"), _body(1))
       for f in ("let", "loop", "binding", "with-open", "doseq", "for", "with-redefs")},
    **{f: _all(_count(1), _first(lambda a: a.kind == "vector" and len(a.elems) == 2,
                                 "a vector of one pair"))
       for f in ("when-let", "if-let", "when-some", "if-some", "dotimes")},
    "defn": _clj_defn, "defn-": _clj_defn, "defmacro": _clj_defn, "definline": _clj_defn,
    "fn": _clj_fn, "fn*": _clj_fn,
    # Java methods that take no argument in every class that has them: only the target
    **{"." + m: _ONE for m in ("toString", "hashCode", "getClass", "length", "size",
                               "isEmpty", "getName", "getSimpleName", "getMessage", "getCause",
                               "iterator", "hasNext", "trim", "intern",
                               "getFileName", "getLineNumber", "getClassName",
                               "getMethodName", "getStackTrace", "keySet", "entrySet",
                               # java.lang.reflect's Class, Method, Field, Constructor
                               "getModifiers", "getParameterTypes", "getReturnType",
                               "getExceptionTypes", "getDeclaringClass", "getSuperclass",
                               "getInterfaces", "getComponentType", "isArray", "isInterface",
                               "getKey")},
    # ... and those that take exactly one in every class that has them
    **{"." + m: _TWO for m in ("equals", "compareTo", "isInstance", "isAssignableFrom",
                               "setAccessible", "containsKey", "charAt", "contains",
                               "setLength", "deleteCharAt")},
    # ... and those that take one or more in every class that has them (java.io's write,
    # Appendable's append, a collection's add and put): never the target alone
    **{"." + m: _count(2) for m in ("write", "append", "add", "put", "startsWith",
                                    "endsWith", "substring", "indexOf", "lastIndexOf",
                                    "nth")},
    # String's, StringBuilder's and Map's replace: two or three
    ".replace": _count(3),
    # (comp f) is f: nobody writes it, as nobody writes (or x)
    "comp": _count(2),
    # `(. target member args*)` and `(.. target member more*)`: a target and a member at
    # least; `(new Class args*)` a class
    ".": _count(2), "..": _count(2), "new": _count(1),
    # the compiler refuses any other count ("throw expects a single Throwable instance")
    "throw": _ONE,
    "cond": _even, "quote": _ONE,
    **{f: _even for f in ("hash-map", "sorted-map", "array-map")},    # keys and values
    **{f: _ONE for f in ("not", "first", "rest", "next", "second", "count", "nil?", "some?",
                         "empty?", "seq", "inc", "dec", "zero?", "last", "butlast", "keys",
                         "vals", "deref", "pos?", "neg?", "even?", "odd?", "ffirst", "name")},
    **{f: _TWO for f in ("cons", "contains?")},
    "get": _count(2, 3), "nth": _count(2, 3), "assoc": _odd_min3,
    "format": _all(_count(1), _format(0, _java_format_args)),
    "printf": _all(_count(1), _format(0, _java_format_args)),
    **_TWO_OR_MORE,
}

_RULES = {CL: _CL_RULES, SCHEME: _SCHEME_RULES, CLOJURE: _CLOJURE_RULES}


def known(head: str, dialect: str) -> bool:
    """Does this module have a rule for `head`?"""
    return _name(head, dialect) in _RULES[dialect]


def unknown_definer(head: str, dialect: str) -> bool:
    """A `def...` or `define-...` form this module has no rule for (`defprinter`,
    `define-alien-type-class`): its elements are its own syntax, seldom calls."""
    name = _name(head, dialect)
    if dialect == CL:
        name = unpackaged(name)
    return name.startswith(("def", "define-")) and name not in _RULES[dialect]


def unpackaged(name: str) -> str:
    """A CL symbol's name without its package (`sb-xc:defmacro` is a defmacro here); a
    keyword keeps its colon (`:results`, `:default-initargs` name no function or definer)."""
    return name if name.startswith(":") else name.rsplit(":", 1)[-1]


def _name(head: str, dialect: str) -> str:
    name = head
    if dialect == CL:
        name = head.lower()
        if name.startswith(("cl:", "common-lisp:")):
            name = name.split(":", 1)[1]
    elif dialect == CLOJURE and name.startswith("clojure.core/"):
        name = name[len("clojure.core/"):]
    return name


def stdlib_arity(head: str, dialect: str) -> tuple[int, int | None] | None:
    """(fewest, most or None) arguments of a function of the dialect's standard library
    (`stdlib_arity.py`, read from SBCL's COMMON-LISP package, Guile's (guile) module and
    clojure.core), or None."""
    from lispshell.syntax import stdlib_arity      # a table: loaded when first needed

    table = {CL: stdlib_arity.CL, SCHEME: stdlib_arity.SCHEME,
             CLOJURE: stdlib_arity.CLOJURE}[dialect]
    return table.get(_name(head, dialect))


def library_arity(head: str, dialect: str) -> tuple[int, int | None] | None:
    """(fewest, most or None) arguments of a procedure one of Guile's other modules exports
    (`stdlib_arity.SCHEME_LIBRARY`: each name with one count in all of them), of a function
    one of SBCL's other packages exports (`stdlib_arity.CL_LIBRARY`: `sb-sys:sap+`,
    `sb-kernel:dd-name`; by its name, with or without a package), of a public function of
    clojure.jar's other namespaces (`stdlib_arity.CLOJURE_LIBRARY`: clojure.walk's `walk`,
    `str/join`), or of the
    public constructors of a class of the JDK's common packages (`OutputStreamWriter.` or
    `java.io.OutputStreamWriter.`; `stdlib_arity.JAVA_CONSTRUCTORS`), or None. A text need
    not import that module or class, and may define its own: evidence for choosing among
    ties, never more."""
    from lispshell.syntax import stdlib_arity

    if dialect == SCHEME:
        return stdlib_arity.SCHEME_LIBRARY.get(head)
    if dialect == CL:
        # (:info x) in a define-vop is data, not sb-c's `info`
        return stdlib_arity.CL_LIBRARY.get(unpackaged(head).lower())
    if dialect == CLOJURE and head.endswith(".") and len(head) > 1:
        name = head[:-1]
        return stdlib_arity.JAVA_CONSTRUCTORS.get(name) or \
            stdlib_arity.JAVA_CONSTRUCTORS.get(_jdk_simple_names().get(name, ""))
    if dialect == CLOJURE:
        ns, _, name = head.rpartition("/")
        if ns[:1].isupper() or "." in name:
            return None                    # a Java class's static method, a constructor
        return stdlib_arity.CLOJURE_LIBRARY.get(name)
    return None


@lru_cache(maxsize=1)
def _jdk_simple_names() -> dict:
    """`OutputStreamWriter` -> `java.io.OutputStreamWriter` (the generator keeps simple names
    unique)."""
    from lispshell.syntax import stdlib_arity

    return {q.rsplit(".", 1)[1]: q for q in stdlib_arity.JAVA_CONSTRUCTORS}


# not CL's *: (* char) is an alien pointer type, (simple-array t (*)) a dimension
_NUMERIC = {CL: frozenset("""+ - / < > <= >= = /= 1+ 1- min max logior logand logxor logeqv
                          lognot ash""".split()),
            SCHEME: frozenset("+ - * / < > <= >= = 1+ 1- min max".split()),
            CLOJURE: frozenset("""+ - * / < > <= >= inc dec +' -' *' inc' dec' quot rem mod
                               bit-and bit-or bit-xor bit-and-not bit-shift-left
                               bit-shift-right unsigned-bit-shift-right max min ==""".split())}
_NOT_NUMBERS = {CL: ("t", "nil"), SCHEME: ("#t", "#f", "#true", "#false"),
                CLOJURE: ("nil", "true", "false")}


def _not_a_number(a: Arg, dialect: str) -> bool:
    """A literal that is certainly no number: a string, keyword, character or boolean, or a
    quoted symbol (`(logior (ash hi 32) lo 'double-float)`)."""
    if a.kind == "string" or a.quotes and not _CL_NUMBER.match(a.quotes):
        return True
    if a.kind != "atom":
        return False
    t = a.text.lower() if dialect == CL else a.text
    return t in _NOT_NUMBERS[dialect] or t.startswith((":", "#\\", "#:")) or \
        (dialect == CLOJURE and t.startswith("\\"))


# --- bodies ---------------------------------------------------------------------------------------

# Where the body of a form starts (its index among the arguments), for forms whose body is a
# sequence of forms evaluated for their effect but the last. A docstring may open the body
# of a definition or lambda (CL, Guile); a tagbody's atoms are go tags, so `do`, `dolist`,
# `prog` and CL's `loop` are left out.
_CL_BODY_AT = {"progn": 0, "lambda": 1, "let": 1, "let*": 1, "flet": 1, "labels": 1,
               "macrolet": 1, "symbol-macrolet": 1, "when": 1, "unless": 1, "defun": 2,
               "defmacro": 2, "multiple-value-bind": 2, "destructuring-bind": 2,
               "block": 1, "catch": 1, "unwind-protect": 1, "with-slots": 2,
               "handler-bind": 1}
_SCHEME_BODY_AT = {"begin": 0, "lambda": 1, "lambda*": 1, "let*": 1, "letrec": 1,
                   "letrec*": 1, "when": 1, "unless": 1, "let-values": 1, "let*-values": 1,
                   "parameterize": 1, "with-fluids": 1}
_CLJ_BODY_AT = {"do": 0, "let": 1, "loop": 1, "binding": 1, "with-open": 1, "when-let": 1,
                "when-some": 1, "when-first": 1, "doseq": 1, "dotimes": 1, "when": 1,
                "when-not": 1, "locking": 1, "with-redefs": 1}
SCHEME_DEFINES = ("define", "define*", "define-public", "define-inlinable")
_DOCSTRING_BODIES = {"lambda", "lambda*", "defun", "defmacro", *SCHEME_DEFINES}


def _body_start(name: str, args: list[Arg], dialect: str) -> int | None:
    """The index in `args` where the form's body starts, or None for a form not known to
    have one."""
    if dialect == CL:
        return _CL_BODY_AT.get(name)
    if dialect == SCHEME:
        if name == "let":                                  # named let: name, bindings, body
            return 2 if args and args[0].kind == "atom" else 1
        if name in SCHEME_DEFINES and args and args[0].kind == "list":
            return 1
        return _SCHEME_BODY_AT.get(name)
    if name in ("fn", "defn", "defn-", "defmacro", "definline"):
        # after the name, docstring and attribute map, the parameter vector (one arity only)
        k = 1 if name != "fn" or (args and args[0].kind == "atom") else 0
        while k < len(args) and args[k].kind in ("string", "map"):
            k += 1
        return k + 1 if k < len(args) and args[k].kind == "vector" else None
    return _CLJ_BODY_AT.get(name)


def _dead_atom(name: str, args: list[Arg], dialect: str) -> str | None:
    """A symbol, number, keyword or string in a body, not in its last place: evaluated for
    nothing. Nobody writes that, but a closer put back too late leaves it: `(fn [x] (prn x)
    x form)` for `(fn [x] (prn x) x) form`, `(binding [a 1] (f) args)` for `(binding [a 1]
    (f)) args`. A docstring may open the body of a definition."""
    at = _body_start(name, args, dialect)
    if at is None:
        return None
    body = args[at:]
    if dialect == CL and name in _DOCSTRING_BODIES:
        # declarations and a docstring open the body, in any order: `(defun f (x) (declare
        # (type fixnum x)) "doc" ...)`
        k, doc = 0, False
        while k < len(body) - 1 and (
                body[k].kind == "string" and not doc or
                body[k].kind == "list" and body[k].elems and body[k].elems[0].kind == "atom"
                and body[k].elems[0].text.lower() == "declare"):
            doc = doc or body[k].kind == "string"
            k += 1
        body = body[k:]
    elif body and body[0].kind == "string" and name in _DOCSTRING_BODIES and \
            dialect != CLOJURE:
        body = body[1:]
    for a in body[:-1]:
        if a.kind == "string" or (a.kind == "atom" and a.text not in ("...", "_")):
            return f"evaluates {a.text or 'a string'} for nothing in its body"
        if a.kind != "atom" and _no_effect(a, dialect):
            return "evaluates a form that does nothing (a datum, a comparison, arithmetic) " \
                "for nothing in its body"
    return None


_CONDITIONALS = frozenset(("if", "when", "unless", "when-not", "if-not"))
_COMPARISONS = {CL: frozenset("< > <= >= = /= eq eql equal equalp".split()),
                SCHEME: frozenset("< > <= >= = eq? eqv? equal?".split()),
                CLOJURE: frozenset("< > <= >= = == not= identical?".split())}


def _no_effect(a: Arg, dialect: str) -> bool:
    """A Clojure vector or map of constants and symbols, or an `if`/`when` whose every branch
    is such a datum: its value is all it has, so it does nothing but in a body's last place.
    A closer put back too early leaves one there: `(if (not continue) [acc context])` then
    `(recur ...)` for the `if`'s else branch indented at the `if`'s own column. So does a
    comparison (`<`, `=`, `eq?`...): nobody compares for the effects of what is compared,
    and a closer put back too late leaves one before the form it swallowed: `(fn [_] (<
    (rand) prob) coll)` for `(fn [_] (< (rand) prob)) coll` (one form of SBCL's, Guile's
    and Clojure's 28,428 has one, in SBCL's tests of code coverage). So does arithmetic
    (`+`, `1+`, `max`...: `(lambda (_ count) (1+ count) set)` for `(lambda (_ count) (1+
    count)) set`; none of the 28,428 has one)."""
    if a.kind in ("string", "atom"):
        return a.kind == "string" or a.text not in ("...", "_", "&")
    if a.kind in ("vector", "map") and dialect == CLOJURE:
        return all(_no_effect(e, dialect) for e in a.elems)
    if a.kind == "list" and len(a.elems) >= 3 and a.elems[0].kind == "atom" and \
            _name(a.elems[0].text, dialect) in _CONDITIONALS:
        return all(_no_effect(e, dialect) for e in a.elems[2:])
    if a.kind == "list" and len(a.elems) >= 2 and a.elems[0].kind == "atom" and \
            (_name(a.elems[0].text, dialect) in _COMPARISONS[dialect] or
             _name(a.elems[0].text, dialect) in _NUMERIC[dialect] or
             # CL's `*` of two numbers or more (of one, it may be an alien pointer type)
             dialect == CL and len(a.elems) >= 3 and _name(a.elems[0].text, dialect) == "*"):
        return True
    if a.kind == "list" and len(a.elems) >= 3 and a.elems[0].kind == "atom" and \
            _name(a.elems[0].text, dialect) in _LETS[dialect]:
        # a `let` whose body does nothing: its bindings are computed to be thrown away
        # (`(let [[r c] (f x)] (if c [r]))` then `(recur ...)`: nobody binds names to use
        # them in nothing); a closer put back too early leaves one before the form it ended
        name = _name(a.elems[0].text, dialect)
        at = _body_start(name, a.elems[1:], dialect)
        body = a.elems[1 + at:] if at is not None else []
        return bool(body) and all(_no_effect(e, dialect) for e in body)
    return False


_LETS = {CL: frozenset(("let", "let*")), SCHEME: frozenset(("let", "let*", "letrec", "letrec*")),
         CLOJURE: frozenset(("let",))}


def problem(head: str, args: list[Arg], dialect: str) -> str | None:
    """Why a form with operator `head` and arguments `args` cannot be right, or None."""
    name = _name(head, dialect)
    rule = _RULES[dialect].get(name)
    why = rule(args) if rule else None
    if not why and dialect == CLOJURE and len(name) > 1 and name[0] in ":." and \
            name[1] != ".":
        # `(:key m)` / `(:key m default)` looks a key up; `(.method target args...)` needs a
        # target
        why = _count(1, 2)(args) if name[0] == ":" else _count(1)(args)
    if not why:
        why = _dead_atom(name, args, dialect)
    if not why and dialect == CLOJURE:
        why = _clj_functional(name, args)
    if not why and dialect == CLOJURE and name.endswith(".") and \
            name.removeprefix("java.lang.")[:-1] in _JAVA_THROWABLES and len(args) > 2:
        # the public constructors of java.lang's exceptions and errors take a message and a
        # cause at most (`(String)`, `(String, Throwable)`, `(Throwable)`, a number for the
        # index ones): `(IllegalArgumentException. (str "no method: " m) " for: " c)` is a
        # closer put back too early inside it
        why = f"{name} takes 2 arguments at most, has {len(args)}"
    if not why and name in _NUMERIC[dialect] and \
            any(_not_a_number(a, dialect) for a in args):
        why = "takes numbers, has a literal that is not one"
    if not why and name in _NUMERIC[dialect]:
        # a rest parameter holds the arguments left over, a list (a seq or nil in Clojure),
        # never a number: `(+ x y more)` for `[x y & more]` is `(+ x y)` with `more` after
        rest = next((a for a in args if a.rest), None)
        if rest is not None:
            why = f"takes numbers, has the rest parameter {rest.text}"
    if not why and name in _IDENTITY[dialect] and len(args) == 1 and args[0].kind != "other":
        # the sum, product, greatest or least of one number is that number: nobody writes
        # it, and a closer put back too early leaves one (`(+ offset) 16` for `(+ offset
        # 16)`); none of the 28,428 forms of SBCL's, Guile's and Clojure's sources has one
        # outside quoted data (nor, of 36,666, a max or min)
        why = "of one number is that number"
    if why and dialect == CL and args and args[0].kind == "atom" and \
            args[0].text.startswith(":"):
        return None          # `(length :scs (any-reg))`: a keyword list in a macro's syntax
    return why


# not CL's `*`, as in _NUMERIC
_IDENTITY = {CL: frozenset(("+", "max", "min")), SCHEME: frozenset(("+", "*", "max", "min")),
             CLOJURE: frozenset(("+", "*", "+'", "*'", "max", "min"))}


# java.lang's exceptions and errors (Clojure names them without a package)
_JAVA_THROWABLES = frozenset("""Throwable Exception RuntimeException Error
IllegalArgumentException IllegalStateException UnsupportedOperationException
ArithmeticException NullPointerException ClassCastException IndexOutOfBoundsException
ArrayIndexOutOfBoundsException StringIndexOutOfBoundsException NumberFormatException
ClassNotFoundException InterruptedException CloneNotSupportedException SecurityException
NegativeArraySizeException ArrayStoreException NoSuchFieldException NoSuchMethodException
IllegalAccessException InstantiationException AssertionError StackOverflowError
OutOfMemoryError LinkageError""".split())

# clojure.core functions whose last argument is a collection (with a function before it; a
# lone function is a transducer), and those whose only or last argument always is one
_CLJ_COLL_LAST = frozenset("""map mapv filter filterv remove reduce mapcat keep some every?
not-any? sort-by group-by take-while drop-while partition-by run! reduce-kv""".split())
_CLJ_COLL_ONLY = frozenset("sort count first seq vec set into".split())
# clojure.core functions that, given only a function, return a transducer
CLJ_TRANSDUCERS = frozenset("""map filter remove mapcat keep keep-indexed map-indexed
take-while drop-while partition-by""".split())


def _clj_functional(name: str, args: list[Arg]) -> str | None:
    """A function literal `(fn ...)` where a collection goes (`(sort (fn [x y] ...))`: a
    closer put back too late, `coll` swallowed into the fn's body); `(partial f ...)` given
    as many arguments as f takes at most, or more (a function of no argument at best:
    nobody writes `(partial instance? Class x)`)."""
    last = args[-1] if args else None
    if last is not None and last.kind == "list" and last.elems and \
            last.elems[0].kind == "atom" and last.elems[0].text in ("fn", "fn*") and \
            (name in _CLJ_COLL_ONLY or name in _CLJ_COLL_LAST and len(args) >= 2):
        return "its last argument is a collection, not a function"
    if name == "partial" and args and args[0].kind == "atom":
        arity = stdlib_arity(args[0].text, CLOJURE) if not known(args[0].text, CLOJURE) \
            else None
        if arity and arity[1] is not None and len(args) - 1 >= arity[1]:
            return f"{args[0].text} takes at most {arity[1]}, partial gives it {len(args) - 1}"
    return None


def _with_ellipses(elems: list[Arg]):
    """Each element of a pattern or template but the ellipses, with how many ellipses
    follow it (`(x ... ...)`: x under two)."""
    for i, e in enumerate(elems):
        if e.kind == "atom" and e.text == "...":
            continue
        n = 0
        while i + 1 + n < len(elems) and elems[i + 1 + n].kind == "atom" and \
                elems[i + 1 + n].text == "...":
            n += 1
        yield e, n


def _ellipsis_depths(a: Arg, depth: int, literals: set, out: dict) -> None:
    """Each pattern variable of a `syntax-rules` pattern and how many ellipses follow it."""
    if a.kind == "atom":
        if a.text not in ("...", "_", ".") and a.text not in literals:
            out.setdefault(a.text, depth)
        return
    for e, n in _with_ellipses(a.elems):
        _ellipsis_depths(e, depth + n, literals, out)


def _too_shallow(a: Arg, depth: int, depths: dict) -> str | None:
    """A pattern variable used in a template under fewer ellipses than in its pattern."""
    if a.kind == "atom":
        if depths.get(a.text, 0) > depth:
            return a.text
        return None
    elems = a.elems
    if elems and elems[0].kind == "atom" and elems[0].text == "...":
        return None                       # (... ...): an escaped ellipsis
    for e, n in _with_ellipses(elems):
        name = _too_shallow(e, depth + n, depths)
        if name:
            return name
    return None


def ellipsis_problem(head: str, args: list[Arg]) -> str | None:
    """Scheme `syntax-rules` and `define-syntax-rule`: each clause a pattern and a template
    (R7RS 4.3.2), and a pattern variable followed by an
    ellipsis in its pattern (`(m (name kw ...) ...)`: `name` once, `kw` twice) stands in
    the template under at least as many ellipses (R7RS 4.3.2; Guile refuses the macro):
    `(begin (define-primitive primitive kw ... ...))` uses `primitive` under none."""
    if any(a.kind == "other" for a in args):
        return None
    clauses: list = []
    literals: set = set()
    if head == "define-syntax-rule" and len(args) >= 2 and args[0].kind == "list":
        clauses = [(args[0], args[1:])]
    elif head == "syntax-rules" and args and args[0].kind == "list":
        if any(c.kind == "list" and len(c.elems) != 2 for c in args[1:]):
            # `((_ arg expr expr))` lost the pattern's closer after `expr`, not at the end
            return "has clauses of a pattern and a template"
        literals = {e.text for e in args[0].elems if e.kind == "atom"}
        clauses = [(c.elems[0], c.elems[1:]) for c in args[1:]
                   if c.kind == "list" and len(c.elems) == 2 and c.elems[0].kind == "list"]
    for pattern, templates in clauses:
        depths: dict = {}
        _ellipsis_depths(Arg("list", "", pattern.elems[1:]), 0, literals, depths)
        for t in templates:
            name = _too_shallow(t, 0, depths)
            if name:
                return f"uses the pattern variable {name} under fewer ellipses than its pattern"
    return None


def feature_problem(elems: list[Arg]) -> str | None:
    """A CL feature expression after `#+` / `#-`: (and|or|not feature...), features being
    symbols or such lists; never a number or a string."""
    if not elems or elems[0].kind != "atom" or \
            elems[0].text.lower().lstrip(":") not in ("and", "or", "not"):
        return "a feature expression starts with and, or or not"
    for e in elems[1:]:
        if e.kind == "string" or (e.kind == "atom" and e.text.isdigit()):
            return "a feature expression holds features, not numbers or strings"
    return None


# (ice-9 peg)'s patterns of a fixed count (ice-9/peg/codegen.scm); `and` and `or` take any
_PEG_ARGS = {"*": 1, "+": 1, "?": 1, "followed-by": 1, "not-followed-by": 1, "ignore": 1,
             "capture": 1, "range": 2}


# R6RS's and R7RS's import sets that narrow another: the fewest and most elements after
# the head, and what they are
_IMPORT_SETS = {"only": (2, None, "an import set and the names it imports"),
                "except": (2, None, "an import set and the names it leaves out"),
                "prefix": (2, 2, "an import set and a prefix"),
                "rename": (2, None, "an import set and (from to) pairs"),
                "library": (1, 1, "a library reference")}    # R6RS's (library reference)


def _import_set(elems: list[Arg]) -> str | None:
    """An import set: a library's name, whose first element is a name, or one that narrows
    another. `(only (guile set-car! set-cdr!))` imports nothing: nobody writes it, and it
    is `(only (guile) set-car! set-cdr!)` with a closer put back too late."""
    if not elems or any(e.kind == "other" for e in elems):
        return None
    if elems[0].kind != "atom":
        return "an import set starts with a name"
    head = elems[0].text
    if head not in _IMPORT_SETS:
        # a library's name: no module of Guile's has a part like `set-car!`, `null?` or
        # `%read-line`, which are what an `only` lists after it
        if any(e.kind == "atom" and (e.text.endswith(("!", "?")) or e.text.startswith("%"))
               for e in elems):
            return "a library's name holds no such name"
        return None
    least, most, what = _IMPORT_SETS[head]
    if len(elems) - 1 < least or most is not None and len(elems) - 1 > most:
        return f"takes {what}"
    if head == "rename" and any(e.kind != "list" or len(e.elems) != 2 for e in elems[2:]):
        return f"takes {what}"
    return None


def role_problem(role: str | None, elems: list[Arg], dialect: str) -> str | None:
    """What a list's role says it must be: a Clojure method (name [params] body) has a
    parameter vector."""
    if role == "fbinding" and dialect == CLOJURE and len(elems) > 1 and \
            elems[1].kind == "vector":
        return _clj_params(elems[1])
    if role == "import-set" and dialect == SCHEME:
        return _import_set(elems)
    if role == "peg" and dialect == SCHEME and elems and elems[0].kind == "atom" and \
            not any(e.kind == "other" for e in elems):
        want = _PEG_ARGS.get(elems[0].text)
        if want is not None and len(elems) - 1 != want:
            return f"is a PEG pattern that takes {want}, has {len(elems) - 1}"
    if role == "cl-type" and dialect == CL:
        # `'(or (simple-array * (*)) list extended-sequence)`, a deftype's expansion
        return _cl_type(Arg("list", "", elems))
    if role == "slot" and dialect == CL and elems and not any(e.kind == "other" for e in elems):
        # defstruct's (name [initform [:type type] [:read-only flag]]): `(value (missing-arg
        # :type t` lost missing-arg's closer, not value's (`(value) (missing-arg :type t)`
        # would be a slot whose initform is :type, with an option missing its value)
        options = elems[2:]
        if elems[0].kind != "atom" or elems[0].text.startswith(":"):
            return "a structure slot is (name [initform] options...)"
        if len(options) % 2 or any(k.kind != "atom" or not k.text.startswith(":")
                                   for k in options[::2]):
            return "a structure slot's options are :keyword value pairs"
        types = [v for k, v in zip(options[::2], options[1::2]) if k.text.lower() == ":type"]
        return next(filter(None, map(_cl_type, types)), None)
    if role == "signature" and dialect == CLOJURE:
        # a protocol's or an interface's method: a name, parameter vectors, a docstring
        # last; `(^{:added "1.3"} diff-similar [a b] "doc")` lost its map's closer after
        # the "doc", not after `[a b]`
        if any(e.kind == "other" for e in elems):
            return None
        sigs = elems[1:-1] if len(elems) > 2 and elems[-1].kind == "string" else elems[1:]
        if not elems or elems[0].kind != "atom" or not sigs or \
                any(v.kind != "vector" for v in sigs):
            return "a method signature is (name [params]... \"doc\")"
        return next(filter(None, map(_clj_params, sigs)), None)
    return None


# --- where a list is not a call ------------------------------------------------------------------

# A list's role, from the form around it: None for an ordinary call, DATA for a list that is
# not code at all (a lambda list, a type specifier, a slot spec: nothing in it is checked),
# or a word for a list that is not a call itself but holds code (a `let` binding, a `cond`
# clause): it is not checked, its elements are. THREADED: a call inside `->`, which gets one
# argument more than it shows.
DATA, THREADED = "data", "threaded"
_CL_LAMBDA_AT = {"defun": 2, "defmacro": 2, "define-compiler-macro": 2, "deftype": 2,
                 "defgeneric": 2, "define-setf-expander": 2, "define-modify-macro": 2,
                 "defsetf": 2, "lambda": 1, "destructuring-bind": 1,
                 "multiple-value-bind": 1, "multiple-value-setq": 1, "the": 1,
                 "check-type": 2, "named-lambda": 2, "with-slots": 1, "with-accessors": 1}
_CL_ALL_DATA = frozenset("""declare declaim proclaim defstruct defpackage in-package
define-condition defclass deftype""".split())
# keyword-headed options whose elements are code: a VOP's generator, an instruction's emitter,
# a condition's report, a class's default initargs (`(:results (r :scs (descriptor-reg)))` and
# the others are data)
_CL_KEYWORD_CODE = frozenset(":generator :emitter :report :default-initargs".split())
# (SBCL's binding* binds `((min max) (values ...))` as let-values does)
_CL_BINDINGS = frozenset("let let* prog prog* symbol-macrolet compiler-let progv "
                         "handler-bind binding*".split())
_CL_FBINDINGS = frozenset("flet labels macrolet".split())
_CL_KEYED = frozenset("case ecase ccase typecase etypecase ctypecase".split())
_CL_CLAUSE_DEFS = frozenset("handler-case restart-case".split())     # (name (vars) body)
# (object stream &key type identity) and the like: a list of forms, no call
_CL_SPEC_FIRST = frozenset("print-unreadable-object pprint-logical-block".split())
_SCHEME_LAMBDA_AT = {"define": 1, "define*": 1, "lambda": 1, "lambda*": 1,
                     "define-public": 1, "define-inlinable": 1, "define-syntax-rule": 1,
                     "receive": 1, "call-with-values": -1, "define-record-type": 99}
_SCHEME_BINDINGS = frozenset("let let* letrec letrec* let-values let*-values fluid-let "
                             "parameterize with-fluids let-syntax letrec-syntax".split())
_CLJ_METHODS = frozenset("reify deftype defrecord extend-type extend-protocol proxy "
                         "defprotocol definterface letfn".split())
_CLJ_THREADING = frozenset("-> ->> some-> some->> cond-> cond->> doto".split())


def child_role(head: str, role: str | None, index: int, prior: list, dialect: str):
    """The role of the list that is element `index` (0 is the head) of a list whose head is
    `head` ("" when it has none) and whose own role is `role`; `prior` its elements so far."""
    name = _name(head, dialect) if head else ""
    if dialect == CL:
        name = unpackaged(name)
    if role == DATA:
        return DATA
    if role in ("fbinding", "clause-def"):                # (name lambda-list body...)
        return DATA if index == 1 else None
    if role == "signature":                              # (name [params]... doc?)
        return DATA
    if role == "keyed":                                  # (keys body...)
        return DATA if index == 0 else None
    if role == "cl-type":
        return DATA
    if role == "slot":                   # (name initform &key type read-only): code, types
        return None if index == 1 else DATA
    if role == "class-slots":
        return "keyed-slot"
    if role == "keyed-slot":             # (name :initform form :type type ...): the form is code
        before = prior[index - 1] if 0 < index <= len(prior) else None
        return None if before is not None and before.kind == "atom" and \
            before.text.lower() in (":initform", "#:init-form") else DATA
    if role == "peg":
        return "peg"
    if role == "declaration":
        return "import-set" if index >= 1 and prior and prior[0].kind == "atom" and \
            prior[0].text == "import" else DATA
    if role == "import-set":          # (only (rnrs) car): the import set it narrows
        return "import-set" if index == 1 else DATA
    if role == "bindings":
        return "binding"
    if role == "binding" and index == 0:
        return DATA                   # let-values' formals: `(((min max) (range x)))`
    if role == "fbindings":
        return "fbinding"
    if role == "methods":
        return "fbinding"
    if dialect == CL:
        if name == "defknown" and index in (1, 2, 3):
            return DATA     # SBCL's (defknown name (arg-types) result-type (attributes) ...)
        if name == "define-alien-routine" and index >= 1:
            return DATA               # a name, a result type, (name type [style]) arguments
        if name in ("defclass", "define-condition") and index == 3:
            return "class-slots"      # each slot's :initform is code
        if name == "defstruct" and index >= 2:
            return "slot"             # a slot's initform is code (the rest of it data)
        if name == "deftype" and index >= 3:
            return "cl-type"          # its body: a type specifier (quoted, most often)
        if name in _CL_KEYWORD_CODE:
            return None               # (:generator 2 (inst ...)): a VOP's code
        if name == ":method":         # defgeneric's (:method qualifiers... (params) body...)
            return DATA if all(a.kind == "atom" for a in prior[1:]) else None
        if name in _CL_ALL_DATA and index >= 1 or name.startswith(":"):
            return DATA               # (:translate (setf foo)): a keyword heads no call
        at = _CL_LAMBDA_AT.get(name)
        if at is not None and index in (1, at):
            return DATA               # the lambda list, and a name such as (setf foo)
        if name == "defmethod" and index >= 1 and all(a.kind == "atom" for a in prior[1:]):
            return DATA               # the name, qualifiers and specialized lambda list
        if name in _CL_BINDINGS and index == 1:
            return "bindings"
        if name in _CL_FBINDINGS and index == 1:
            return "fbindings"
        if name in ("do", "do*"):
            return "bindings" if index == 1 else "clause" if index == 2 else None
        if name.startswith(("do-", "dolist", "dotimes", "dovector", "dohash", "with-")) and \
                index == 1 or name in _CL_SPEC_FIRST and index == 1:
            return "clause"           # (var list [result]), (stream ...) and the like
        if name in ("deftest", "define-test") and index >= 2:
            return None               # rt's, prove's, rove's, lisp-unit's tests: forms
        if unknown_definer(name, CL) and index in (1, 2):
            return DATA               # an unknown definer: (defthing name (lambda list) ...)
        if name in _CL_KEYED and index >= 2:
            return "keyed"
        if name == "cond" and index >= 1:
            return "clause"
        if name in _CL_CLAUSE_DEFS and index >= 2:
            return "clause-def"
        if name == "function" and index == 1:
            return DATA
        return None
    if dialect == SCHEME:
        at = _SCHEME_LAMBDA_AT.get(name)
        if at is not None and (index == at or at == 99 and index >= 1):
            return DATA
        if name.startswith("define") and index == 1:
            return DATA               # (define-folder (name args) ...): a definer's header
        if name in ("define-peg-pattern", "define-sexp-parser") and index >= 2:
            return "peg"              # (ice-9 peg)'s patterns: `(* x)` repeats, `(+ x)` too
        if name == "define-class" and index >= 2:
            # GOOPS: superclasses, then slot and class options; a slot's #:init-form is code
            return DATA if index == 2 else "keyed-slot"
        if name in _SCHEME_BINDINGS:
            named = len(prior) > 1 and prior[1].kind == "atom"
            if index == (2 if named else 1):
                return "bindings"
        if name == "do":
            return "bindings" if index == 1 else "clause" if index == 2 else None
        if name == "import" and index >= 1:
            return "import-set"
        if name == "library" and index == 3 or name == "define-library" and index >= 2:
            return "declaration"      # (import ...), (export ...), (begin ...)
        if name in ("define-module", "use-modules", "export", "library",
                    "define-library", "re-export", "cond-expand") and index >= 1:
            return DATA
        if name in ("case", "match", "match-lambda") and index >= 2:
            return "keyed"
        if name == "cond" and index >= 1:
            return "clause"
        if name in ("case-lambda", "case-lambda*", "match-lambda*") and index >= 1:
            return "keyed"
        return None
    if name == "letfn" and index == 1:
        return "methods"              # [(f [x] body) ...]
    if name in ("defprotocol", "definterface") and index >= 1:
        return "signature"            # (method [this x] [this x y] "doc"): no body
    if name in _CLJ_METHODS and name != "letfn" and index >= 1:
        return "fbinding"             # (method [this x] body)
    if name in _CLJ_THREADING and index >= 2:
        return THREADED
    if name == "." and index == 2 or name == ".." and index >= 2:
        return DATA                   # (. Var (find sym)): a Java method, not clojure.core's
    if name in ("ns", "quote", "comment", "as->", "condp") and index >= 1:
        return DATA
    if name == "case" and index >= 2:
        return DATA
    return None


_CLJ_LET_LIKE = frozenset("""let let* loop binding when-let if-let when-some if-some for doseq
dotimes with-open with-local-vars with-redefs""".split())
_CLJ_FN_LIKE = frozenset("fn fn* defn defn- defmacro definline".split())


def binds(kind: str, head: str, role: str | None, index: int, prior: list, dialect: str,
          parent_role: str | None, top: bool) -> str | None:
    """Which elements of a new list name local functions or variables that a call in the
    form may then have as its head, so that the global function of that name says nothing
    about the call's arguments: "all", "rest" (all but the first), "first", "even" (a
    Clojure binding vector's names), or None. The list is element `index` of a list headed
    by `head`, whose role is `parent_role`; `kind` list, vector or map; its own role is `role` (`child_role`); `top`: that
    list is a top-level form. Common Lisp keeps functions apart from variables, so only
    `flet`, `labels` and `macrolet` names shadow there; in Scheme and Clojure parameters
    and bindings do too (`[sc test key]` makes `(test x 0)` no call of clojure.core's
    one-argument `test`)."""
    name = _name(head, dialect) if head else ""
    if role == "fbinding":
        # CL flet/labels and Clojure letfn: (name params body); not reify's methods
        return "first" if parent_role in ("fbindings", "methods") else None
    if dialect == CL:
        return None
    if dialect == SCHEME:
        if kind != "list":
            return None
        if role == "binding":
            return "first"
        if role == DATA and index == 1 and name in ("lambda", "lambda*", "receive"):
            return "all"
        if role == DATA and index == 1 and name in ("define", "define*", "define-public",
                                                     "define-inlinable"):
            return "rest" if top else "all"   # a top-level define's name is global
        return None
    if kind != "vector":
        return None
    if parent_role == "fbinding" and index == 1:
        return "all"                          # a letfn function's or a method's parameters
    if index == 0 and not head and not prior:
        return "all"                          # ([x y] body): one arity of fn or defn
    if name in _CLJ_LET_LIKE and index == 1:
        return "even"
    if name in _CLJ_FN_LIKE and all(a.kind in ("atom", "string", "map") for a in prior[1:]):
        return "all"
    return None


def params_with_rest(kind: str, head: str, index: int, prior: list, dialect: str,
                     bound: str | None) -> bool:
    """Is the new list (element `index` of a list headed by `head`; `bound` what
    `binds` says it binds) a parameter list whose rest parameter, after `&` (Clojure) or
    `.` (Scheme), gets the arguments left over as a list? Common Lisp is left out: its
    `let` bindings are not followed (`binds`), so a rebound `&rest` name would pass."""
    name = _name(head, dialect) if head else ""
    if dialect == CLOJURE:
        return kind == "vector" and bound == "all"
    if dialect == SCHEME:
        return kind == "list" and bound in ("all", "rest") and \
            name in ("lambda", "define", "define-public", "define-inlinable")
    return False


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
