"""Benchmark: repair of LLM-typical delimiter damage, ours vs parinfer's indent mode.

Corpus: top-level forms from the Lisp sources Debian installs: SBCL's (`apt-get install
sbcl-source`, /usr/share/sbcl-source), Guile's /usr/share/guile/3.0/**/*.scm and the .clj files
inside /usr/share/java/clojure.jar. Each sampled form is damaged one way:

  last-k         the last k closers of the form dropped (k = 1..4) wherever they stand: in
                 its final closer run, at the end of earlier lines or mid-line; a third of
                 the cases from each dialect, reported per dialect too
  trail-end-k    the last k closers dropped (k = 1..4), all from the form's final closer run
  trail-lines    the last k closers dropped, some of which ended other lines
  trail-midline  the last k closers dropped, some of which sat mid-line
  wrong-kind     one ] or } (or a ) next to them) replaced by another kind (Clojure)
  extra-end      one extra closer appended at the end
  drop-line-end  one closer dropped inside the form where it ended its line
  drop-mid-line  one closer dropped inside the form where more code followed it on its line

For each class: how often the repair restores the exact original; the share of repairs at each
level of evidence (certain / likely / guess, docs/check-and-repair.md) and how many of those
were wrong; what `check --fix` (certain only) and `check --fix=likely` would write, and how
many written files would not be the original (per dialect, also how many of those hold the
original's very tokens, a closer on another line: the same code, laid out otherwise; they
still count as wrong). parinfer runs via node in the same run and is
counted as "written" when it reports success (`npm install --prefix bench parinfer`;
bench/node_modules is gitignored).

With --image-arglists the Common Lisp cases are repaired as the form tools repair them with
an SBCL image running: knowing the arglists of every function and macro in SBCL's own image
(the corpus is SBCL's source, so that is the image its code runs in).

With --in-file each damaged form is also repaired inside the file it came from, every other
form of the file intact, as `lispshell check FILE` repairs it: what the file's other
definitions and calls say about its functions (`evidence.text_arities`) is then known. Those
figures are printed beside the lone-form ones (forms of a file that does not read as a whole
are left out of them). --dump PATH writes each case not restored exactly, one JSON a line.

With --midline-ties it also counts, per class, the `likely` repairs for which a closer moved
to an earlier place on its own line passes every test as well (`evidence.same_line_rivals`):
what demoting all of those to `guess` would do to what `--fix=likely` writes. That is the
price of "no `likely` ever wrong" on closers dropped mid-line.

    .venv/bin/python bench/repair_corpus.py [--per-class N] [--seed S] [--no-parinfer]
                                            [--image-arglists] [--midline-ties]
                                            [--in-file] [--dump PATH] [--only CLASS,...]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import time
import zipfile
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lispshell.syntax import evidence  # noqa: E402
from lispshell.syntax.lexer import tokenize  # noqa: E402
from lispshell.syntax.shapes import lambda_list_arity  # noqa: E402
from lispshell.syntax.repair import repair  # noqa: E402
from lispshell.syntax.validate import top_level_forms, validate  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLOSERS = ")]}"


# The untuned corpus: libraries Debian packages that no rule was developed on. Kept apart from
# the tuning corpus above, and never used to develop a rule: rules are developed on the tuned
# corpus and judged on this one (docs/check-and-repair.md). Installed by
#   apt-get install cl-alexandria cl-ppcre cl-babel cl-iterate cl-closer-mop cl-cffi \
#     cl-trivial-gray-streams guile-library guile-json libcore-match-clojure \
#     libdata-json-clojure libcore-async-clojure libtools-reader-clojure \
#     libmath-combinatorics-clojure
UNTUNED_CL = ("alexandria", "babel", "cl-cffi", "cl-ppcre", "cl-trivial-gray-streams",
              "closer-mop", "iterate")
UNTUNED_GUILE = ("guile-library", "guile-json")
UNTUNED_JARS = ("core.match", "data.json", "core.async", "tools.reader", "math.combinatorics")
CORPUS = "tuned"


def sbcl_source(dialect: str) -> bool | None:
    """The tuned corpus's Common Lisp is SBCL's own source, a path under an SBCL source tree
    (shapes.is_sbcl_source), whose internal definers' shapes then apply, in a lone form as in
    its file; elsewhere `repair` recognises it from the text (None)."""
    return True if CORPUS == "tuned" and dialect == "cl" else None


def _package_files(package: str, suffix: str) -> list[str]:
    try:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True,
                                timeout=60).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(p for p in listed if p.endswith(suffix) and os.path.isfile(p))


def sources():
    """(dialect, text) for every source file of the corpus (`CORPUS`: tuned or untuned)."""
    if CORPUS == "untuned":
        yield from _untuned_sources()
        return
    for path in sorted(glob.glob("/usr/share/sbcl-source/**/*.lisp", recursive=True)):
        yield "cl", _read(path)
    for path in sorted(glob.glob("/usr/share/guile/3.0/**/*.scm", recursive=True)):
        yield "scheme", _read(path)
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        for name in sorted(jar.namelist()):
            if name.endswith(".clj"):
                yield "clojure", jar.read(name).decode("utf-8", "replace")


def _read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def _untuned_sources():
    for name in UNTUNED_CL:
        for path in sorted(glob.glob(f"/usr/share/common-lisp/source/{name}/**/*.lisp",
                                     recursive=True)):
            yield "cl", _read(path)
    for package in UNTUNED_GUILE:
        for path in _package_files(package, ".scm"):
            yield "scheme", _read(path)
    for name in UNTUNED_JARS:
        path = f"/usr/share/java/{name}.jar"
        if not os.path.isfile(path):
            continue
        with zipfile.ZipFile(path) as jar:
            for member in sorted(jar.namelist()):
                if member.endswith((".clj", ".cljc")):
                    yield "clojure", jar.read(member).decode("utf-8", "replace")


def forms(max_chars=6000):
    """(dialect, form text, where) for valid multi-line top-level forms with a few closers;
    where is (the text of its file, the form's start): the file the form is repaired in by
    --in-file, None when that file does not read as a whole."""
    for dialect, text in sources():
        whole = text if validate(text, dialect).ok else None
        for start, end in top_level_forms(text, dialect):
            form = text[start:end]
            if "\n" not in form or len(form) > max_chars:
                continue
            line_start = text.rfind("\n", 0, start) + 1
            if start != line_start:          # keep forms that start at column 0
                continue
            yield dialect, form, (whole, start) if whole is not None else None


def closers(form, dialect):
    """(start, char, where) of each closer: where is end (final run), line-end or mid-line."""
    tokens, _ = tokenize(form, dialect)
    codes, starts, ends = tokens.codes, tokens.starts, tokens.ends
    out = []
    n = len(codes)
    for j, c in enumerate(codes):
        if c not in CLOSERS:
            continue
        k = j + 1
        while k < n and codes[k] in CLOSERS and "\n" not in form[ends[k - 1]:starts[k]]:
            k += 1
        if k == n:
            where = "end"
        elif "\n" in form[ends[k - 1]:starts[k]] or codes[k] in ";":
            where = "line-end"
        else:
            where = "mid-line"
        out.append((starts[j], form[starts[j]], where))
    return out


def drop(form, positions):
    for p in sorted(positions, reverse=True):
        form = form[:p] + form[p + 1:]
    return form


def make_cases(per_class: int, seed: int):
    rng = random.Random(seed)
    pool = list(forms())
    rng.shuffle(pool)
    cases = defaultdict(list)
    for dialect, form, where in pool:
        cl = closers(form, dialect)
        if len(cl) < 2:
            continue
        for k in (1, 2, 3, 4):
            cls = "last-%d" % k
            if len(cl) >= k + 1 and len(cases[cls]) < per_class and \
                    sum(c[0] == dialect for c in cases[cls]) < -(-per_class // 3):
                cases[cls].append((dialect, form, drop(form, [p for p, _, _ in cl[-k:]]), where))
        for k in (1, 2, 3, 4):
            if len(cl) < k + 1:
                break
            last = cl[-k:]
            wheres = {w for _, _, w in last}
            cls = ("trail-end-%d" % k if wheres == {"end"} else
                   "trail-midline" if "mid-line" in wheres else "trail-lines")
            if len(cases[cls]) < per_class:
                cases[cls].append((dialect, form, drop(form, [p for p, _, _ in last]), where))
        inner = [c for c in cl if c[2] != "end"]
        line_end = [c for c in inner if c[2] == "line-end"]
        mid = [c for c in inner if c[2] == "mid-line"]
        if line_end and len(cases["drop-line-end"]) < per_class:
            p = rng.choice(line_end)[0]
            cases["drop-line-end"].append((dialect, form, drop(form, [p]), where))
        if mid and len(cases["drop-mid-line"]) < per_class:
            p = rng.choice(mid)[0]
            cases["drop-mid-line"].append((dialect, form, drop(form, [p]), where))
        if len(cases["extra-end"]) < per_class:
            cases["extra-end"].append((dialect, form, form + cl[-1][1], where))
        if dialect == "clojure" and len(cases["wrong-kind"]) < per_class:
            typed = [c for c in cl if c[1] in "]}"] or cl
            p, ch, _ = rng.choice(typed)
            other = rng.choice([x for x in CLOSERS if x != ch])
            cases["wrong-kind"].append((dialect, form, form[:p] + other + form[p + 1:], where))
        if all(len(cases[c]) >= per_class for c in CLASSES if c != "wrong-kind") and \
                len(cases["wrong-kind"]) >= per_class:
            break
    return cases


LAST = ["last-1", "last-2", "last-3", "last-4"]
CLASSES = LAST + ["trail-end-1", "trail-end-2", "trail-end-3", "trail-end-4", "trail-lines",
           "trail-midline", "wrong-kind", "extra-end", "drop-line-end", "drop-mid-line"]


# Every fbound symbol of the image with its lambda list, as lispshell's arglist helper prints
# it: `(name . lambda-list)` with bare symbol names.
SBCL_ARGLISTS = """
(defun bare (tree)
  (cond ((or (null tree) (keywordp tree)) tree)
        ((symbolp tree) (make-symbol (symbol-name tree)))
        ((consp tree) (cons (bare (car tree)) (bare (cdr tree))))
        (t tree)))
(let ((*print-case* :downcase) (*print-pretty* nil) (*print-gensym* nil)
      (*print-length* 30) (*print-level* 3))
  (do-all-symbols (s)
    (when (and (fboundp s) (not (special-operator-p s)))
      (let* ((f (or (macro-function s) (fdefinition s)))
             (ll (ignore-errors (if (typep f 'generic-function)
                                    (sb-mop:generic-function-lambda-list f)
                                    (sb-kernel:%fun-lambda-list f)))))
        (when (listp ll)
          (write-line (prin1-to-string (bare (cons s ll)))))))))
"""


def sbcl_arities():
    """name -> (fewest, most) for every function and macro of a fresh SBCL image; names that
    mean different things in different packages are left out."""
    proc = subprocess.run(["sbcl", "--noinform", "--non-interactive", "--eval",
                           "(progn " + SBCL_ARGLISTS + ")"], capture_output=True, text=True,
                          check=True, timeout=300)
    table: dict = {}
    for line in proc.stdout.splitlines():
        name = line[1:].split(" ", 1)[0].rstrip(")")
        arity = lambda_list_arity(line, "cl")
        if name in table and table[name] != arity:
            arity = None
        table[name] = arity
    table = {k: v for k, v in table.items() if v is not None}
    if len(table) < 1000:
        raise SystemExit(f"SBCL gave only {len(table)} arglists")
    return table


def _same_code(text, original, dialect):
    """Do two texts hold the same tokens, only the blanks between them differing (a closer
    on the line before the one it stood alone on)?"""
    def tokens(t):
        return [(k.kind, t[k.start:k.end]) for k in tokenize(t, dialect)[0]]
    return tokens(text) == tokens(original)


def run_parinfer(texts):
    """parinfer.indentMode on each text, via node, in one process."""
    script = (
        "const p=require('parinfer');let s='';process.stdin.on('data',d=>s+=d);"
        "process.stdin.on('end',()=>{const a=JSON.parse(s);const t0=Date.now();"
        "const r=a.map(x=>{try{const o=p.indentMode(x,{});return [o.success,o.text]}"
        "catch(e){return [false,x]}});"
        "process.stdout.write(JSON.stringify({ms:Date.now()-t0,r}))});")
    env = dict(os.environ, NODE_PATH=os.path.join(HERE, "node_modules"))
    proc = subprocess.run(["node", "-e", script], input=json.dumps(texts).encode(),
                          capture_output=True, env=env, check=True)
    out = json.loads(proc.stdout)
    return out["r"], out["ms"] / 1000


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=1900)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-parinfer", action="store_true")
    ap.add_argument("--image-arglists", action="store_true",
                    help="repair Common Lisp cases knowing a running SBCL's arglists")
    ap.add_argument("--only", help="comma-separated classes to run (default: all)")
    ap.add_argument("--in-file", action="store_true",
                    help="also repair each damaged form inside its file, the others intact")
    ap.add_argument("--in-file-only", action="store_true", help="only inside its file")
    ap.add_argument("--dump", metavar="PATH",
                    help="write each case not restored exactly to PATH, one JSON a line")
    ap.add_argument("--midline-ties", action="store_true",
                    help="count likely repairs a same-line mid-line place fits as well")
    ap.add_argument("--corpus", choices=("tuned", "untuned"), default="tuned",
                    help="tuned: SBCL's, Guile's and Clojure's own sources, which the rules "
                         "were developed on; untuned: Debian-packaged libraries none of them "
                         "was developed on (UNTUNED_* above), to judge them")
    ap.add_argument("--per-rule", action="store_true",
                    help="per repair rule (lispshell/syntax/rules.py): the cases it decided, "
                         "how many at each level, and the wrong ones among those written")
    ap.add_argument("--disable", metavar="CODE,...",
                    help="turn these rules' writes into guesses, to measure what each is worth")
    args = ap.parse_args(argv)
    global CORPUS
    CORPUS = args.corpus
    if args.disable:
        from lispshell.syntax import rules
        unknown = [c for c in args.disable.split(",") if c.strip().upper() not in rules.RULES]
        if unknown:
            ap.error(f"--disable: no rule {', '.join(unknown)} (lispshell check --explain CODE)")
        rules.DISABLED.update(c.strip().upper() for c in args.disable.split(","))
    ties: list = []
    decided: list = []          # the rule of each case, in `flat` order (alone)
    if args.midline_ties:
        weigh = evidence.weigh

        def weigh_and_look(text, chunk, edits, dialect):
            verdict = weigh(text, chunk, edits, dialect)
            if verdict.level == "likely" and \
                    evidence.same_line_rivals(text, chunk, verdict.edits, dialect):
                ties.append(True)
            return verdict
        evidence.weigh = weigh_and_look
    cl_arity = None
    if args.image_arglists:
        table = sbcl_arities()
        print(f"SBCL image: {len(table)} arglists")

        def cl_arity(name):
            return table.get(name.rsplit(":", 1)[-1].lower())
    t0 = time.perf_counter()
    cases = make_cases(args.per_class, args.seed)
    total = sum(len(v) for v in cases.values())
    print(f"corpus: {total} damaged forms built in {time.perf_counter() - t0:.1f}s")
    if not total:
        print("no corpus: apt-get install sbcl-source guile-3.0 clojure" if CORPUS == "tuned"
              else "no corpus: apt-get install the packages named above UNTUNED_CL in "
                   "bench/repair_corpus.py", file=sys.stderr)
        return 1
    only = args.only.split(",") if args.only else CLASSES
    flat = [(cls, d, orig, dmg, where) for cls in CLASSES if cls in only
            for d, orig, dmg, where in cases.get(cls, [])]
    dump = open(args.dump, "w") if args.dump else None
    t0 = time.perf_counter()

    def run(in_file: bool):
        """(exact, level) and tied of each case, repaired alone or inside its file."""
        ours, tied = [], []
        for cls, dialect, orig, dmg, where in flat:
            ties.clear()
            after = ""
            if in_file and where is not None:
                text, start = where
                before, after = text[:start], text[start + len(orig):]
                r = repair(before + dmg + after, dialect,
                           arity=cl_arity if dialect == "cl" else None,
                           sbcl_source=sbcl_source(dialect))
                exact = r.text == text
                got = r.text[len(before):len(r.text) - len(after)] \
                    if r.text.startswith(before) and r.text.endswith(after) else None
            else:
                r = repair(dmg, dialect, arity=cl_arity if dialect == "cl" else None,
                           sbcl_source=sbcl_source(dialect))
                exact, got = r.text == orig, r.text
            ours.append((exact, r.level,
                         exact or _same_code(r.text, text if in_file and where else orig,
                                             dialect)))
            if not in_file:
                decided.append(r.rule)
            tied.append(bool(ties) and r.level == "likely")
            if dump and not exact:
                dump.write(json.dumps({"class": cls, "dialect": dialect, "in_file": in_file,
                                       "level": r.level, "why": r.why, "original": orig,
                                       "damaged": dmg, "repaired": got,
                                       # what follows the form in its file, and the repair
                                       # of both when it moved a closer past the form
                                       "after": after[:300],
                                       "repaired_region": None if got is not None or not after
                                       else r.text[len(before):len(before) + len(dmg) + 300]})
                           + "\n")
        return ours, tied

    if args.in_file_only:
        args.in_file = True
        ours, tied = [(False, "guess")] * len(flat), [False] * len(flat)
    else:
        ours, tied = run(False)
    ours_time = time.perf_counter() - t0
    in_file = None
    if args.in_file:
        t0 = time.perf_counter()
        in_file = run(True)[0]
        file_time = time.perf_counter() - t0
    theirs = None
    if not args.no_parinfer:
        results, pin_time = run_parinfer([dmg for _, _, _, dmg, _ in flat])
        theirs = [(text == orig, ok) for (ok, text), (_, _, orig, _, _) in zip(results, flat)]
    print(f"ours: {ours_time:.1f}s" + (f", in its file: {file_time:.1f}s" if in_file else "")
          + (f", parinfer: {pin_time:.1f}s" if theirs else ""))
    print("level columns: share of cases at that level (wrong ones among them); --fix writes "
          "certain, --fix=likely certain and likely: share written (wrong files written)")
    head = (f"{'class':15} {'cases':>6} {'exact':>7} {'certain':>13} {'likely':>13} "
            f"{'guess':>13} {'--fix':>13} {'--fix=likely':>13}")
    if theirs:
        head += f" {'parinfer exact':>15} {'parinfer written':>17}"
    print(head)
    by = defaultdict(list)
    for i, (cls, *_rest) in enumerate(flat):
        by[cls].append(i)

    def share(res, idx, pick):
        chosen = [i for i in idx if pick(i)]
        wrong = sum(not res[i][0] for i in chosen)
        return f"{100 * len(chosen) / len(idx):6.1f}% ({wrong:3})"

    def class_row(res, cls, idx, label):
        n = len(idx)
        exact = sum(res[i][0] for i in idx)
        row = f"{label:15} {n:6} {100 * exact / n:6.1f}%"
        for level in ("certain", "likely", "guess"):
            row += " " + share(res, idx, lambda i, lv=level: res[i][1] == lv).rjust(13)
        row += " " + share(res, idx, lambda i: res[i][1] == "certain").rjust(13)
        row += " " + share(res, idx, lambda i: res[i][1] in ("certain", "likely")).rjust(13)
        return row

    for cls in CLASSES:
        idx = by.get(cls, [])
        if not idx:
            continue
        row = class_row(ours, cls, idx, cls)
        if theirs:
            n = len(idx)
            pe = sum(theirs[i][0] for i in idx)
            pw = sum(theirs[i][1] for i in idx)
            pww = sum(theirs[i][1] and not theirs[i][0] for i in idx)
            row += f" {100 * pe / n:14.1f}% {100 * pw / n:9.1f}% ({pww:4})"
        print(row)
    if in_file:
        print("\nthe same damaged forms repaired inside their files (the other forms intact), "
              "as `lispshell check` repairs them:")
        for cls in CLASSES:
            idx = [i for i in by.get(cls, []) if flat[i][4] is not None]
            if idx:
                print(class_row(in_file, cls, idx, cls))
    settings = ([] if args.in_file_only else [("alone", ours)]) + \
        ([("in file", in_file)] if in_file else [])
    print("\nper dialect: exact, and what --fix=likely writes (wrong among its writes):")
    for cls in LAST:
        for dialect in ("cl", "scheme", "clojure"):
            for label, res in settings:
                idx = [i for i in by.get(cls, []) if flat[i][1] == dialect and
                       (label == "alone" or flat[i][4] is not None)]
                if not idx:
                    continue
                exact = sum(res[i][0] for i in idx)
                written = [i for i in idx if res[i][1] in ("certain", "likely")]
                wrong = sum(not res[i][0] for i in written)
                layout = sum(not res[i][0] and res[i][2] for i in written)
                print(f"{cls:8} {dialect:8} {label:8} {len(idx):6} exact "
                      f"{100 * exact / len(idx):5.1f}%   --fix=likely writes "
                      f"{100 * len(written) / len(idx):5.1f}%, wrong {wrong:4} = "
                      f"{100 * wrong / max(1, len(written)):4.1f}% of its writes, "
                      f"{layout} of them the same code laid out otherwise")
    if args.midline_ties:
        print("\nlikely repairs that a mid-line place on the same line fits as well (wrong "
              "among them), and --fix=likely if they were guesses instead:")
        for cls in CLASSES:
            idx = by.get(cls, [])
            if not idx:
                continue
            n = len(idx)
            t = [i for i in idx if tied[i]]
            t_wrong = sum(not ours[i][0] for i in t)
            kept = [i for i in idx if ours[i][1] in ("certain", "likely") and not tied[i]]
            k_wrong = sum(not ours[i][0] for i in kept)
            print(f"{cls:15} tied {100 * len(t) / n:5.1f}% ({t_wrong:4} wrong)   "
                  f"--fix=likely would write {100 * len(kept) / n:5.1f}% ({k_wrong:4} wrong)")
    if args.per_rule:
        from lispshell.syntax.rules import RULES
        print("\nper rule (cases repaired alone): decided, and among its certain and likely "
              "repairs (what is written unattended) the wrong ones")
        table: dict = defaultdict(lambda: [0, 0, 0])
        for (exact, level, _), rule in zip(ours, decided):
            row = table[rule]
            row[0] += 1
            if level in ("certain", "likely"):
                row[1] += 1
                row[2] += not exact
        for code in sorted(table, key=lambda c: (c[:1] != "C", c[:1] != "L", c)):
            n, written, wrong = table[code]
            name = RULES[code].name if code in RULES else "?"
            print(f"{code:4} {name:28} decided {n:6}   written {written:6}   wrong {wrong:4}"
                  f" = {100 * wrong / max(1, written):5.2f}% of its writes")
    # valid input must come back byte-identical (parinfer rewrites some valid forms)
    valid = [(d, orig) for _, d, orig, _, _ in flat[:: max(1, len(flat) // 3000)]]
    same = sum(repair(orig, d).text == orig for d, orig in valid)
    line = f"valid forms unchanged: ours {same}/{len(valid)}"
    if theirs:
        res, _ = run_parinfer([orig for _, orig in valid])
        line += f", parinfer {sum(t == orig for (_, t), (_, orig) in zip(res, valid))}/{len(valid)}"
    print(line)
    return 0 if same == len(valid) else 1


if __name__ == "__main__":
    sys.exit(main())
