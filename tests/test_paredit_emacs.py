"""lispshell's paredit operations beside GNU Emacs paredit, the reference people know.

Positions are drawn (seeded, so every run draws the same) from the Lisp sources Debian
installs: SLIME's swank in Common Lisp, Guile's own modules, the sources in Clojure's jar.
Each case is one top-level form, one node in it and one operation; Emacs runs the paredit
command with point where a person would put it (one batch, one Emacs), lispshell runs its
operation on the same node, and the two texts are compared token by token, with which
tokens start a line (the spacing inside a line and the depth of indentation are each side's
own: see docs/structure.md). The cases where lispshell is right and Emacs is not are
counted apart (`documented`), and everything else must agree 99% of the time.

Then the whitespace is counted too: among the cases that agree, how many give the same text
byte for byte once Emacs's leftovers are tidied (`tidy`: the blanks a person would not type),
so the re-indentation after each operation (which lines, to which column) is compared. Common
Lisp and Scheme must agree at least 88% of the time; Clojure is shown only, since Emacs here has
no Clojure indenter (`lisp-data-mode` indents `[...]` and `{...}` as calls).
"""
from __future__ import annotations

import glob
import json
import random
import re
import shutil
import subprocess
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from lispshell.syntax import paredit
from lispshell.syntax.cst import StructureError, head_of, inner, outer, parse, walk
from lispshell.workspace.edit import apply, from_code
from lispshell.syntax.lexer import tokenize

EMACS = shutil.which("emacs")
HERE = Path(__file__).parent
pytestmark = pytest.mark.skipif(
    EMACS is None or not glob.glob("/usr/share/emacs/site-lisp/elpa/paredit-*"),
    reason="needs emacs-nox and elpa-paredit (./dev test installs them)")

CLOJURE_JAR = "/usr/share/java/clojure.jar"
SOURCES = {
    "cl": ["/usr/share/common-lisp/source/slime/swank.lisp",
           "/usr/share/common-lisp/source/slime/swank/backend.lisp",
           "/usr/share/common-lisp/source/slime/swank/sbcl.lisp",
           "/usr/share/common-lisp/source/slime/contrib/swank-arglists.lisp",
           "/usr/share/common-lisp/source/slime/contrib/swank-fancy-inspector.lisp"],
    "scheme": ["/usr/share/guile/3.0/ice-9/boot-9.scm", "/usr/share/guile/3.0/srfi/srfi-1.scm",
               "/usr/share/guile/3.0/ice-9/match.upstream.scm",
               "/usr/share/guile/3.0/ice-9/format.scm", "/usr/share/guile/3.0/ice-9/ftw.scm"],
    "clojure": ["clojure/core.clj", "clojure/string.clj", "clojure/set.clj",
                "clojure/test.clj", "clojure/pprint/dispatch.clj", "clojure/walk.clj"],
}

# (name, lispshell operation, its options, Emacs command, Emacs argument, where point goes:
# "in" just inside the target list, "at" before the target, "after" right after it).
OPS = [
    ("slurp-forward", paredit.slurp_forward, {}, "paredit-forward-slurp-sexp", None, "in"),
    ("slurp-forward 2", paredit.slurp_forward, {"count": 2}, "paredit-forward-slurp-sexp", 2,
     "in"),
    ("slurp-forward -1", paredit.slurp_forward, {"count": -1}, "paredit-forward-slurp-sexp",
     -1, "in"),
    ("slurp-backward", paredit.slurp_backward, {}, "paredit-backward-slurp-sexp", None, "in"),
    ("slurp-backward 2", paredit.slurp_backward, {"count": 2}, "paredit-backward-slurp-sexp",
     2, "in"),
    ("barf-forward", paredit.barf_forward, {}, "paredit-forward-barf-sexp", None, "in"),
    ("barf-forward 2", paredit.barf_forward, {"count": 2}, "paredit-forward-barf-sexp", 2,
     "in"),
    ("barf-forward -1", paredit.barf_forward, {"count": -1}, "paredit-forward-barf-sexp", -1,
     "in"),
    ("barf-backward", paredit.barf_backward, {}, "paredit-backward-barf-sexp", None, "in"),
    ("barf-backward -1", paredit.barf_backward, {"count": -1}, "paredit-backward-barf-sexp",
     -1, "in"),
    ("splice", paredit.unwrap, {}, "paredit-splice-sexp", None, "in"),
    ("splice-killing-backward", paredit.splice_killing, {"direction": "backward"},
     "paredit-splice-sexp-killing-backward", None, "at"),
    ("splice-killing-forward", paredit.splice_killing, {"direction": "forward"},
     "paredit-splice-sexp-killing-forward", None, "at"),
    ("raise", paredit.raise_, {}, "paredit-raise-sexp", None, "at"),
    ("raise 2", paredit.raise_, {"count": 2}, "paredit-raise-sexp", 2, "at"),
    ("wrap", paredit.wrap, {}, "paredit-wrap-round", None, "at"),
    ("wrap 2", paredit.wrap, {"count": 2}, "paredit-wrap-round", 2, "at"),
    ("kill", paredit.kill, {}, "kill-sexp", None, "at"),
    ("kill 2", paredit.kill, {"count": 2}, "kill-sexp", 2, "at"),
    ("transpose", paredit.transpose, {}, "transpose-sexps", 1, "after"),
    ("split", paredit.split, {}, "paredit-split-sexp", None, "at"),
    ("join", paredit.join, {}, "paredit-join-sexps", None, "after"),
    ("convolute", paredit.convolute, {}, "paredit-convolute-sexp", 1, "at"),
]
LIST_OPS = {"in"}
ON_LISTS = {"join"}     # sibling operations whose target must be a list
PER_OP = 36          # cases per operation and dialect: 23 x 36 x 3, about 2,500 in all
MAX_FORM = 4000      # characters: a form longer than this is skipped (it costs, it adds little)


def _texts(dialect: str) -> list[str]:
    if dialect == "clojure":
        if not Path(CLOJURE_JAR).exists():
            return []
        with zipfile.ZipFile(CLOJURE_JAR) as jar:
            return [jar.read(name).decode("utf-8") for name in SOURCES[dialect]
                    if name in jar.namelist()]
    return [Path(p).read_text(encoding="utf-8") for p in SOURCES[dialect] if Path(p).exists()]


def _forms(dialect: str) -> list[str]:
    forms = []
    for text in _texts(dialect):
        root = parse(text, dialect)
        for node in root.code_children:
            line_start = text.rfind("\n", 0, node.start) + 1
            if inner(node).kind == "list" and node.start == line_start and \
                    node.end - node.start <= MAX_FORM:
                forms.append(node.text(text))
    return forms


def _candidates(form: str, dialect: str, where: str,
                lists_only: bool = False) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each node an operation of this kind can target in `form`: every
    element of a list below the top; for list operations, the lists among them."""
    root = parse(form, dialect)
    out = []
    for node in walk(root):
        if not node.is_code or node.kind == "prefixed":
            continue
        o = outer(node)
        if o.parent is None or o.parent.kind != "list":
            continue
        if (where in LIST_OPS or lists_only) and node.kind != "list":
            continue
        out.append((o.start, o.end, o.kind) if where not in LIST_OPS
                   else (node.start, node.end, node.kind))
    return out


def _node(root, start: int, end: int, kind: str):
    for node in walk(root):
        if node.start == start and node.end == end and node.kind == kind:
            return node
    raise AssertionError("node not found again")


def draw_cases() -> list[dict]:
    cases = []
    for dialect in SOURCES:
        forms = _forms(dialect)
        if not forms:
            continue
        rng = random.Random(f"paredit-{dialect}")
        for name, _op, options, command, arg, where in OPS:
            drawn = 0
            while drawn < PER_OP:
                form = rng.choice(forms)
                cands = _candidates(form, dialect, where, name in ON_LISTS)
                if not cands:
                    continue
                start, end, kind = rng.choice(cands)
                if where == "in":
                    node = _node(parse(form, dialect), start, end, kind)
                    point = node.open_end
                else:
                    point = start if where == "at" else end
                cases.append({"dialect": dialect, "op": name, "form": form, "start": start,
                              "end": end, "kind": kind, "point": point})
                drawn += 1
    return cases


def run_emacs(cases: list[dict], tmp: Path) -> list[str | None]:
    spec = {name: (command, arg) for name, _op, _o, command, arg, _w in OPS}
    batch = [{"text": c["form"], "mode": c["dialect"], "point": c["point"] + 1,
              "command": spec[c["op"]][0], "arg": spec[c["op"]][1]} for c in cases]
    (tmp / "in.json").write_text(json.dumps(batch), encoding="utf-8")
    subprocess.run([EMACS, "-Q", "--batch", "-l", str(HERE / "paredit_emacs.el"),
                    str(tmp / "in.json"), str(tmp / "out.json")],
                   check=True, capture_output=True, timeout=600)
    out = json.loads((tmp / "out.json").read_text(encoding="utf-8"))
    # A command that changes nothing but indentation (paredit slurping at the end of the
    # outermost list) is a refusal, as lispshell answers it.
    return [None if text is None or shape(text, c["dialect"]) == shape(c["form"], c["dialect"])
            else text for c, text in zip(cases, out)]


def run_lispshell(case: dict, **extra) -> str | None:
    spec = {name: (op, options) for name, op, options, _c, _a, _w in OPS}
    op, options = spec[case["op"]]
    src = from_code(case["form"], case["dialect"])
    node = _node(parse(src.text, src.dialect), case["start"], case["end"], case["kind"])
    try:
        return apply(src, op(src.text, node, src.dialect, **options, **extra)).new_text
    except StructureError:
        return None


def shape(text: str | None, dialect: str):
    """The tokens of `text` and which of them start a line: what the comparison looks at. A
    closer at the start of a line counts as the end of the line before, and a line break right
    after an opener does not count (Emacs leaves `(f\n  )` after a kill, `(a\n) (b` after a
    split and `(\n  setq` after joining `()` with the next list; a person does not)."""
    if text is None:
        return None
    tokens, _ = tokenize(text, dialect)
    out = []
    pending = False
    for i in range(len(tokens)):
        pending |= "\n" in text[tokens.ends[i - 1] if i else 0:tokens.starts[i]]
        closer = tokens.codes[i] in ")]}"
        after_opener = i > 0 and tokens.codes[i - 1] in "([{"
        out.append((tokens.text_of(i), pending and not closer and not after_opener))
        pending = pending and closer
    return out


_INSIDE_OPENER = re.compile(r"([(\[{]) +(?=\S)")
_BEFORE_CLOSER = re.compile(r"(?<=\S) +([)\]}])")
_GLUED = re.compile(r"([)\]}])(?=[^\s)\]}])")


def tidy(text: str) -> str:
    """`text` without the blanks Emacs leaves and a person does not type: at the end of a line,
    just inside a delimiter (`( x`, `x )`), none after a closer (`()x`). The indentation of each
    line is kept: that is what the whitespace comparison looks at. (Approximate: strings are
    not told apart, which both sides share.)"""
    lines = []
    for line in text.split("\n"):
        body = line.strip()
        indentation = line[:len(line) - len(line.lstrip())]
        body = _GLUED.sub(r"\1 ", _BEFORE_CLOSER.sub(r"\1", _INSIDE_OPENER.sub(r"\1", body)))
        lines.append(indentation + body if body else "")
    return "\n".join(lines)


def documented(case: dict, ours: str | None, theirs: str | None) -> str | None:
    """Which documented case (docs/structure.md) a disagreement is, or None."""
    dialect, form = case["dialect"], case["form"]
    root = parse(form, dialect)
    node = _node(root, case["start"], case["end"], case["kind"])
    lst = inner(node)
    parent = outer(node).parent
    around = [lst, *lst.code_children] + ([parent, *parent.code_children]
                                          if parent is not None and parent.kind == "list" else [])
    for n in around:
        if n.kind == "prefixed" and form[n.start:n.open_end] in ("#+", "#-", "^", "#^"):
            return "a #+feature or ^meta prefix and its form are one element"
        m = inner(n)
        if m.kind == "list" and m.open_end - m.start > 1:
            return "a #( #{ #?( opener moves whole"
    op = case["op"]
    if op.startswith(("slurp", "barf")):
        n = lst
        while n is not None:
            if n.parent is not None and n.parent.kind == "prefixed":
                return "a reader prefix moves with its list's opener"
            n = n.parent
    spliced = lst if op == "splice" else parent
    if ours is None and op.startswith(("splice", "convolute", "split")) and \
            spliced is not None and \
            spliced.parent is not None and spliced.parent.kind == "prefixed":
        return "splicing or splitting a list under a reader prefix is refused"
    if ours is None and op == "convolute" and parent is not None and \
            parent.code_children.index(outer(node)) == 0:
        return "convolute with nothing before the target is refused"
    if ours is None and op == "split" and parent is not None and \
            parent.code_children.index(outer(node)) == 0:
        return "splitting before the first element is refused"
    if op.startswith(("slurp-backward", "barf-backward")) and head_of(lst, form) is not None \
            and shape(run_lispshell(case, keep_head=False), dialect) == shape(theirs, dialect):
        return "the operator of a call stays first"
    return None


def _where_they_differ(ours: str | None, theirs: str | None) -> str:
    if ours is None or theirs is None:
        return f"lispshell: {'refused' if ours is None else 'did it'}; " \
               f"emacs: {'refused' if theirs is None else 'did it'}"
    a = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y),
             min(len(ours), len(theirs)))
    return f"lispshell: {ours[max(0, a - 40):a + 60]!r}\nemacs:     " \
           f"{theirs[max(0, a - 40):a + 60]!r}"


def test_paredit_agrees_with_emacs(tmp_path):
    cases = draw_cases()
    assert len(cases) > 1500, "the sources this test draws from are missing"
    theirs = run_emacs(cases, tmp_path)
    tally = Counter()
    kinds = Counter()
    same_text = Counter()      # dialect -> agreeing cases whose whole text is the same
    agreeing = Counter()       # dialect -> agreeing cases
    wrong = []
    for case, emacs in zip(cases, theirs):
        ours = run_lispshell(case)
        if shape(ours, case["dialect"]) == shape(emacs, case["dialect"]):
            tally["agree"] += 1
            agreeing[case["dialect"]] += 1
            if ours is None or tidy(ours) == tidy(emacs):
                same_text[case["dialect"]] += 1
            continue
        why = documented(case, ours, emacs)
        if why:
            kinds[why] += 1
            tally["documented"] += 1
        else:
            tally["disagree"] += 1
            wrong.append((case["dialect"], case["op"], case["form"][case["start"]:case["end"]],
                          ours, emacs))
    judged = tally["agree"] + tally["disagree"]
    rate = tally["agree"] / judged
    print(f"\nagree {tally['agree']}/{judged} = {rate:.2%}; documented {dict(kinds)}")
    by_op = Counter((d, op) for d, op, *_ in wrong)
    for d, op, target, ours, emacs in wrong[:40]:
        print(f"--- {d} {op} on {target[:50]!r}\n{_where_they_differ(ours, emacs)}")
    assert rate >= 0.99, f"{rate:.1%} agreement; disagreements by operation: {dict(by_op)}"
    spaced = {d: same_text[d] / agreeing[d] for d in agreeing}
    print("with the whitespace counted: " + ", ".join(
        f"{d} {same_text[d]}/{agreeing[d]} = {spaced[d]:.1%}" for d in agreeing))
    for d in ("cl", "scheme"):
        if d in spaced:
            assert spaced[d] >= 0.88, f"{d}: {spaced[d]:.1%} of the agreeing cases have the " \
                "same text once Emacs's leftover blanks are tidied"
    # The documented cases are a small known share (about 15%): a classifier that swallowed
    # real disagreements would show here.
    assert tally["documented"] < 0.2 * len(cases), dict(kinds)
