#!/usr/bin/env python3
"""The repair's every answer on the bench's cases, kept, to prove a refactor changes nothing.

    .venv/bin/python bench/repair_golden.py --write bench/golden/repair.jsonl
    .venv/bin/python bench/repair_golden.py --check bench/golden/repair.jsonl
    .venv/bin/python bench/repair_golden.py --check bench/golden/repair-untuned.jsonl \
        --corpus untuned

The cases are bench/repair_corpus.py's (tuned corpus, --per-class 60, --seed 1, every class;
--corpus untuned for the other one: its answers are kept too, digests only, so that a
refactor is proved on code no rule was developed on without anyone reading its cases). The
tuned corpus's Common Lisp is repaired as SBCL's own source (repair_corpus.sbcl_source).
For each: the damaged text's digest, and what `repair` answered: the repaired text's digest,
the level and the rule. `--check` repairs the same
cases again and fails (exit 1) when any answer differs, listing the first ones: a refactor
commit must pass it; a commit that changes behaviour says so, with its measured effect
(bench/repair_corpus.py), and writes the file anew. Also fails when the cases themselves
differ (another corpus version installed): then there is nothing to compare.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import repair_corpus  # noqa: E402
from lispshell.syntax.repair import repair  # noqa: E402


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def answers(per_class: int, seed: int) -> list[dict]:
    out = []
    cases = repair_corpus.make_cases(per_class, seed)
    for cls in repair_corpus.CLASSES:
        for n, (dialect, _orig, damaged, _where) in enumerate(cases.get(cls, [])):
            r = repair(damaged, dialect, sbcl_source=repair_corpus.sbcl_source(dialect))
            out.append({"case": f"{cls}/{n}", "dialect": dialect, "damaged": _digest(damaged),
                        "repaired": _digest(r.text), "level": r.level, "rule": r.rule})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="FILE")
    mode.add_argument("--check", metavar="FILE")
    ap.add_argument("--per-class", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", choices=("tuned", "untuned"), default="tuned")
    args = ap.parse_args()
    repair_corpus.CORPUS = args.corpus
    now = answers(args.per_class, args.seed)
    if not now:
        print("no corpus: see bench/repair_corpus.py", file=sys.stderr)
        return 1
    if args.write:
        Path(args.write).parent.mkdir(parents=True, exist_ok=True)
        with open(args.write, "w") as f:
            for a in now:
                f.write(json.dumps(a, sort_keys=True) + "\n")
        print(f"{len(now)} answers written to {args.write}")
        return 0
    kept = [json.loads(line) for line in Path(args.check).read_text().splitlines() if line]
    if [(k["case"], k["damaged"]) for k in kept] != [(a["case"], a["damaged"]) for a in now]:
        print("the cases differ from those kept (another corpus or settings): nothing to "
              "compare; write the file anew from the commit before the change", file=sys.stderr)
        return 1
    changed = [(k, a) for k, a in zip(kept, now) if k != a]
    print(f"{len(now)} answers compared, {len(changed)} changed")
    for k, a in changed[:20]:
        print(f"  {a['case']} ({a['dialect']}): {k['level']} {k['rule']} {k['repaired']} -> "
              f"{a['level']} {a['rule']} {a['repaired']}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
