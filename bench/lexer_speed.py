"""Benchmark: lexer and validate throughput on real Lisp sources, against baselines measured
in the same run on the same bytes.

Sources: SBCL's (/usr/share/sbcl-source, `apt-get install sbcl-source`; skipped if absent),
Guile's /usr/share/guile/3.0/**/*.scm, the .clj files inside /usr/share/java/clojure.jar.

Baselines: a plain `re.finditer` over a two-alternative token regex (the cost of the regex
engine alone, no Lisp knowledge) and a naive char-by-char lexer loop (strings, comments,
parens,
atoms, emitting each token). Ours: `tokenize` (kinds and spans; Token objects are built lazily), `tokenize` plus
materializing every Token, `read` (the one reading: tokens, each closer's opener, top-level
forms), `validate`, and the time to validate 1 MB.

`read` caches its readings; every timed run starts with the cache emptied, so each one does
the whole work. The run fails (exit 1) if the work did not really happen: a timed read or
validate that did not lex the whole text (a cache answering instead of the code), a reading
whose pairs or forms do not check out, or a validate that found no forms. The rows are timed
in turns (each round times every row once, the best round counts), so a machine whose load
changes during the run slows every row alike and the ratios hold.

With --against REV (a git revision of this repository), the `validate` of that revision runs
in the same rounds on the same bytes (its syntax/ package is loaded under another name), and
the run prints how fast ours is against it: the before/after of a change, measured together.

    .venv/bin/python bench/lexer_speed.py [--repeat N] [--against REV]
"""
from __future__ import annotations

import argparse
import atexit
import gc
import glob
import importlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lispshell.syntax import reading  # noqa: E402
from lispshell.syntax.lexer import tokenize  # noqa: E402
from lispshell.syntax.validate import validate  # noqa: E402


def corpus() -> list[tuple[str, str]]:
    out = []
    sbcl = sorted(glob.glob("/usr/share/sbcl-source/**/*.lisp", recursive=True))
    if sbcl:
        out.append(("cl", "".join(_read(p) for p in sbcl)))
    out.append(("scheme", "".join(_read(p) for p in sorted(
        glob.glob("/usr/share/guile/3.0/**/*.scm", recursive=True)))))
    with zipfile.ZipFile("/usr/share/java/clojure.jar") as jar:
        out.append(("clojure", "".join(jar.read(n).decode("utf-8", "replace")
                                       for n in sorted(jar.namelist()) if n.endswith(".clj"))))
    return out


def _read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace") + "\n"


_PLAIN = re.compile(r"\s*(?:[()\[\]{}]|[^\s()\[\]{}]+)")


def baseline_regex(text, dialect):
    n = 0
    for _ in _PLAIN.finditer(text):
        n += 1
    return n


def baseline_char_loop(text, dialect):
    """A naive char-by-char lexer: one Python step per character, emitting (kind, start, end)
    for parens, strings, ; comments and atoms (no # dispatch, no block comments)."""
    tokens = []
    append = tokens.append
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\n\r\f,":
            i += 1
        elif ch in "()[]{}":
            append(("delim", i, i + 1))
            i += 1
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            append(("string", i, j + 1))
            i = j + 1
        elif ch == ";":
            j = i
            while j < n and text[j] != "\n":
                j += 1
            append(("comment", i, j))
            i = j
        else:
            j = i
            while j < n and text[j] not in " \t\n\r\f,()[]{}\";":
                j += 2 if text[j] == "\\" else 1
            append(("atom", i, j))
            i = j
    return len(tokens)


def ours_tokenize(text, dialect):
    return len(tokenize(text, dialect)[0])


def ours_tokenize_materialized(text, dialect):
    return len(list(tokenize(text, dialect)[0]))


def ours_read(text, dialect):
    return len(reading.read(text, dialect).partner)


def ours_validate(text, dialect):
    return validate(text, dialect).forms


def check_reading(text, dialect) -> list[str]:
    """What is wrong with the reading of a real source: every pair an opener and a closer of
    the same kind, in order, and forms that cover only code."""
    reading._CACHE.clear()
    r = reading.read(text, dialect)
    codes, partner = r.codes, r.partner
    bad = [j for j, p in enumerate(partner) if p >= 0 and (
        partner[p] != j or (codes[min(j, p)], codes[max(j, p)]) not in
        (("(", ")"), ("[", "]"), ("{", "}")))]
    out = [f"{dialect}: {len(bad)} tokens paired wrongly"] if bad else []
    if len(r.spans) < 100:
        out.append(f"{dialect}: only {len(r.spans)} top-level forms read")
    if len(r.tokens) < len(text) / 50:
        out.append(f"{dialect}: only {len(r.tokens)} tokens in {len(text)} characters")
    return out


_LEXED = []                           # the length of every text `read` lexed


def _counting_tokenize(text, dialect, state=None):
    _LEXED.append(len(text))
    return tokenize(text, dialect, state)


reading.tokenize = _counting_tokenize
_CACHES = [reading._CACHE]            # the readings kept, ours and the other revision's
_LEXING = {ours_read, ours_validate}  # the runs that must lex the whole text once


def timed(fn, text, dialect) -> float:
    """One run of `fn` on an empty cache; raises if it did not lex the whole text itself."""
    for cache in _CACHES:             # the work itself, never a cached reading
        cache.clear()
    gc.collect()
    del _LEXED[:]
    t0 = time.perf_counter()
    fn(text, dialect)
    t = time.perf_counter() - t0
    if fn in _LEXING and _LEXED != [len(text)]:
        raise SystemExit(f"FAILED: {fn.__name__} on {dialect} lexed {_LEXED}, not the "
                         f"{len(text)} characters once")
    return t


def best_times(fns, text, dialect, repeat) -> list[float]:
    """The best time of each of `fns` over `repeat` rounds that run them in turn."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], timed(fn, text, dialect))
    return best


def validate_at(rev: str):
    """`validate` as it was at git revision `rev`: its lispshell/syntax loaded as a package
    of another name (lispshell_at_rev), so both run in this process."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    tar = subprocess.run(["git", "-C", root, "archive", rev, "lispshell/syntax"],
                         capture_output=True, check=True).stdout
    where = tempfile.mkdtemp(prefix="lexer_speed_")
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(where, filter="data")
    package = os.path.join(where, "lispshell_at_rev")
    os.rename(os.path.join(where, "lispshell"), package)
    open(os.path.join(package, "__init__.py"), "w").close()
    for base, _, names in os.walk(package):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as f:
                    source = f.read().replace("lispshell.", "lispshell_at_rev.")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(source)
    sys.path.insert(0, where)
    old = importlib.import_module("lispshell_at_rev.syntax.validate").validate

    def theirs_validate(text, dialect):
        return old(text, dialect).forms
    try:        # a revision with the one reading caches it too: empty it, count its lexing
        their_reading = importlib.import_module("lispshell_at_rev.syntax.reading")
    except ImportError:
        return theirs_validate
    their_tokenize = their_reading.tokenize

    def counting(text, dialect, state=None):
        _LEXED.append(len(text))
        return their_tokenize(text, dialect, state)
    their_reading.tokenize = counting
    _CACHES.append(their_reading._CACHE)
    _LEXING.add(theirs_validate)
    return theirs_validate


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", metavar="REV", help="also time validate as it was at REV")
    args = ap.parse_args(argv)
    runs = [("baseline: re.finditer, 2 alternatives", baseline_regex),
            ("baseline: char-by-char lexer", baseline_char_loop),
            ("tokenize", ours_tokenize),
            ("tokenize + build every Token", ours_tokenize_materialized),
            ("read", ours_read),
            ("validate", ours_validate)]
    theirs = validate_at(args.against) if args.against else None
    if theirs is not None:
        runs.append((f"validate at {args.against}", theirs))
    print(f"{'':40}" + "".join(f"{d:>12}" for d, _ in corpus_cache()))
    print(f"{'size (MB)':40}" + "".join(f"{len(t) / 1e6:12.2f}" for _, t in corpus_cache()))
    rates = {}
    for dialect, text in corpus_cache():
        times = best_times([fn for _, fn in runs], text, dialect, args.repeat)
        for (name, _), t in zip(runs, times):
            rates[(name, dialect)] = len(text) / t / 1e6
    for name, fn in runs:
        print(f"{name:40}" + "".join(f"{rates[(name, d)]:7.1f} MB/s" for d, _ in corpus_cache()))
    for name in ("tokenize", "read", "validate"):
        ratios = [rates[(name, d)] / rates[("baseline: char-by-char lexer", d)]
                  for d, _ in corpus_cache()]
        print(f"{name + ' / char-by-char lexer':40}" + "".join(f"{r:11.1f}x" for r in ratios))
    for name in ("read", "validate"):         # what the walk costs on top of the lexer
        ratios = [rates[(name, d)] / rates[("tokenize", d)] for d, _ in corpus_cache()]
        print(f"{name + ' / tokenize (speed)':40}" + "".join(f"{r:11.2f}x" for r in ratios))
    if theirs is not None:
        ratios = [rates[("validate", d)] / rates[(f"validate at {args.against}", d)]
                  for d, _ in corpus_cache()]
        print(f"{'validate / validate at ' + args.against:40}"
              + "".join(f"{r:11.2f}x" for r in ratios))
    failures = []
    for dialect, text in corpus_cache():
        mb = text[:1_000_000]
        fns = [ours_validate, baseline_char_loop] + ([theirs] if theirs else [])
        t, base, *before = best_times(fns, mb, dialect, args.repeat)
        print(f"validate 1 MB of {dialect:8}: {t * 1000:6.1f} ms "
              f"({t / base:.2f}x the char-by-char lexer's {base * 1000:.1f} ms"
              + (f"; {before[0] * 1000:.1f} ms at {args.against}" if before else "") + ")")
        failures += check_reading(text, dialect)
        if not validate(text, dialect).forms:
            failures.append(f"{dialect}: validate found no forms")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


_CORPUS = None


def corpus_cache():
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = corpus()
    return _CORPUS


if __name__ == "__main__":
    sys.exit(main())
