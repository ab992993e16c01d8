"""Benchmark: lexer and validate throughput on real Lisp sources, against baselines measured
in the same run on the same bytes.

Sources: SBCL's (/usr/share/sbcl-source, `apt-get install sbcl-source`; skipped if absent),
Guile's /usr/share/guile/3.0/**/*.scm, the .clj files inside /usr/share/java/clojure.jar.

Baselines: a plain `re.finditer` over a two-alternative token regex (the cost of the regex
engine alone, no Lisp knowledge) and a naive char-by-char lexer loop (strings, comments,
parens,
atoms, emitting each token). Ours: `tokenize` (kinds and spans; Token objects are built lazily), `tokenize` plus
materializing every Token, `validate`, and the time to validate 1 MB.

    .venv/bin/python bench/lexer_speed.py [--repeat N]
"""
from __future__ import annotations

import argparse
import gc
import glob
import os
import re
import sys
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

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


def ours_validate(text, dialect):
    return validate(text, dialect).forms


def best_time(fn, text, dialect, repeat):
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn(text, dialect)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    runs = [("baseline: re.finditer, 2 alternatives", baseline_regex),
            ("baseline: char-by-char lexer", baseline_char_loop),
            ("tokenize", ours_tokenize),
            ("tokenize + build every Token", ours_tokenize_materialized),
            ("validate", ours_validate)]
    print(f"{'':40}" + "".join(f"{d:>12}" for d, _ in corpus_cache()))
    print(f"{'size (MB)':40}" + "".join(f"{len(t) / 1e6:12.2f}" for _, t in corpus_cache()))
    rates = {}
    for name, fn in runs:
        row = []
        for dialect, text in corpus_cache():
            t = best_time(fn, text, dialect, args.repeat)
            rates[(name, dialect)] = len(text) / t / 1e6
            row.append(f"{rates[(name, dialect)]:9.1f} MB/s")
        print(f"{name:40}" + "".join(f"{r:>12}" for r in row))
    for name in ("tokenize", "validate"):
        ratios = [rates[(name, d)] / rates[("baseline: char-by-char lexer", d)]
                  for d, _ in corpus_cache()]
        print(f"{name + ' / char-by-char lexer':40}" + "".join(f"{r:11.1f}x" for r in ratios))
    for dialect, text in corpus_cache():
        mb = text[:1_000_000]
        t = best_time(ours_validate, mb, dialect, args.repeat)
        print(f"validate 1 MB of {dialect:8}: {t * 1000:6.1f} ms")
    return 0


_CORPUS = None


def corpus_cache():
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = corpus()
    return _CORPUS


if __name__ == "__main__":
    sys.exit(main())
