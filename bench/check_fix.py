#!/usr/bin/env python3
"""What `lispshell check --fix=likely` costs per damaged file, and that the cost stays linear.

    .venv/bin/python bench/check_fix.py [--sizes 250 1000 4000] [--seed 1]

Files are top-level forms of the Lisp sources Debian installs (bench/repair_corpus.py's
corpus: Guile's modules, Clojure's jar, SBCL's sources when `sbcl-source` is installed), one
form per file, each damaged as LLMs damage code (the last closer, or the last two, dropped),
in one folder per size. One `lispshell check --fix=likely -q FOLDER` process per folder (its
undo journal in the run's temporary folder: --fix journals every write, and the journal keeps
the last 500, so the first 500 writes of a state folder cost a little less than later ones);
the start of the command (the same run on an empty folder) is taken away, and what is left is
divided by the number of files. Fails when a folder's check did not repair most files (it
must have done the work it is timed for) or when the cost per file grows more than 1.5x
from the smallest folder to the largest (not linear).

    .venv/bin/python bench/check_fix.py --cpu [--runs 3]

--cpu times the repair itself, in this process and in CPU seconds (`time.process_time`),
which a machine shared with other work changes far less than the wall clock of a check
process: the largest size's damaged forms repaired one after another, and a file of about
1,000 lines (Guile's forms in a row, the last closer of the middle one dropped). To compare
two commits, run it alternately from exports of each (`PYTHONPATH=EXPORT python
EXPORT/bench/check_fix.py --cpu`).
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from repair_corpus import closers, drop, forms  # noqa: E402
from lispshell.syntax.dialects import resolve_dialect  # noqa: E402
from lispshell.syntax.validate import validate  # noqa: E402

SUFFIX = {"cl": ".lisp", "scheme": ".scm", "clojure": ".clj"}
LISPSHELL = [sys.executable, "-m", "lispshell", "check", "--fix=likely", "-q"]


def damaged(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pool = list(forms())
    rng.shuffle(pool)
    out = []
    for dialect, form, _ in pool:     # (the third: where the form stands in its file)
        cl = closers(form, dialect)
        if len(cl) < 3:
            continue
        out.append((dialect, drop(form, [p for p, _, _ in cl[-rng.choice((1, 2)):]])))
        if len(out) == n:
            return out
    raise SystemExit(f"the corpus has only {len(out)} forms to damage")


def check(folder: Path) -> None:
    # The undo journal of this run is its own, not the person's.
    env = dict(os.environ, LISPSHELL_STATE_DIR=str(folder.parent / "state"),
               LISPSHELL_CONFIG_DIR=str(folder.parent / "config"))
    subprocess.run(LISPSHELL + [str(folder)], capture_output=True, cwd=folder.parent, env=env)


def timed_check(folder: Path, runs: int = 3) -> float:
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        check(folder)
        elapsed = time.perf_counter() - t0
        best = elapsed if best is None else min(best, elapsed)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 1000, 4000])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu", action="store_true",
                    help="CPU seconds of the repair in this process (see the docstring)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if args.cpu:
        return cpu(args)
    with tempfile.TemporaryDirectory(prefix="lispshell-check-fix-") as tmp:
        return run(args, Path(tmp))


def thousand_line_file() -> str:
    """Guile's forms in a row up to 1,000 lines, the last closer of the middle one dropped."""
    chunks, lines = [], 0
    for dialect, form, _ in forms():
        if dialect != "scheme":
            continue
        chunks.append(form)
        lines += form.count("\n") + 2
        if lines >= 1000:
            break
    mid = len(chunks) // 2
    chunks[mid] = drop(chunks[mid], [closers(chunks[mid], "scheme")[-1][0]])
    return "\n\n".join(chunks) + "\n"


def cpu(args) -> int:
    from lispshell.syntax.repair import repair

    cases = damaged(max(args.sizes), args.seed)
    big = thousand_line_file()
    for _ in range(args.runs):
        t0 = time.process_time()
        for dialect, text in cases:
            repair(text, resolve_dialect(dialect))
        forms_s = time.process_time() - t0
        t0 = time.process_time()
        for _ in range(5):
            level = repair(big, "scheme").level
        big_ms = (time.process_time() - t0) / 5 * 1000
        print(f"{len(cases):,} damaged forms: {forms_s:.2f} s CPU "
              f"({forms_s / len(cases) * 1000:.1f} ms a form); a {big.count(chr(10)):,}-line "
              f"file: {big_ms:.0f} ms CPU ({level})")
    return 0


def run(args, tmp: Path) -> int:
    cases = damaged(max(args.sizes), args.seed)
    empty = tmp / "empty"
    empty.mkdir()
    start = timed_check(empty)
    print(f"load average {os.getloadavg()[0]:.2f}; `lispshell check` on an empty folder: "
          f"{start * 1000:.0f} ms (taken away below)")
    failed, per_file = False, []
    for n in args.sizes:
        folder = tmp / f"files-{n}"
        folder.mkdir()
        for i, (dialect, text) in enumerate(cases[:n]):
            (folder / f"f{i}{SUFFIX[dialect]}").write_text(text)
        t0 = time.perf_counter()
        check(folder)
        elapsed = time.perf_counter() - t0
        fixed = sum(validate(p.read_text(), resolve_dialect(str(p))).ok
                    for p in folder.iterdir())
        ms = (elapsed - start) / n * 1000
        per_file.append(ms)
        print(f"  {n:6,} damaged files: {elapsed:6.2f} s, {ms:5.2f} ms per file, "
              f"{fixed:,} read after the fix ({fixed / n:.0%})")
        if fixed < n * 0.8:
            print(f"FAIL: only {fixed} of {n} files were repaired")
            failed = True
    growth = per_file[-1] / per_file[0]
    print(f"cost per file, largest folder / smallest: {growth:.2f}x (linear: at most 1.5x)")
    return 1 if failed or growth > 1.5 else 0


if __name__ == "__main__":
    sys.exit(main())
