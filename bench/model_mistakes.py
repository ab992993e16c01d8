#!/usr/bin/env python3
"""The model's ordinary mistakes: how every call of the catalogue is answered.

    .venv/bin/python bench/model_mistakes.py [--source DIR] [--show vague,wrong]

The catalogue is tests/cases/mistakes.md (issue 45): calls as a model makes them (unknown
arguments, a paredit tool without its target, an eval with an extra closer, new source in a
Markdown fence or with smart quotes, look-ups without a package...), each with the files it
acts on and what a right answer holds. Every call goes through `call_tool`, as the REPL's model
and `lispshell mcp` make it; the live ones on one real SBCL. Each answer is counted as
  helpful   it does what was meant, or refuses naming the fix;
  vague     it refuses, but not with the expected code or without naming the fix;
  wrong     silently wrong: a file or the image changed otherwise than the case expects, or
            the answer is ok where the call did not do what was asked.
The run fails (exit 1) when any answer is silently wrong, or when the vague ones are a tenth
of the calls or more. `--source DIR` runs the same catalogue against another checkout's
lispshell (e.g. main before a change: the catalogue's "before" column).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=ROOT,
                        help="the checkout whose lispshell answers (default: this one)")
    parser.add_argument("--show", default="vague,wrong",
                        help="verdicts whose cases are listed (comma-separated)")
    opts = parser.parse_args()
    sys.path.insert(0, str(opts.source.resolve()))
    sys.path.insert(1, str(ROOT / "tests"))
    state = tempfile.mkdtemp(prefix="mistakes-state-")
    os.environ["LISPSHELL_STATE_DIR"] = state      # the undo journal of these edits only

    from mistake_cases import load, run
    from lispshell import config as config_mod
    from lispshell.lisp.session import make_session

    shared, cases = load()
    session = None
    if any(c.live for c in cases):
        session = make_session("sbcl", config_mod.load())
        session.start()
    counts = {"helpful": 0, "vague": 0, "wrong": 0}
    shown = set(opts.show.split(","))
    try:
        with tempfile.TemporaryDirectory(prefix="mistakes-") as tmp:
            for i, case in enumerate(cases):
                try:
                    verdict, failed, answer = run(case, shared, Path(tmp) / f"case{i}", session)
                except Exception as exc:  # noqa: BLE001 - a crash is a wrong answer
                    verdict, failed, answer = "wrong", [f"{type(exc).__name__}: {exc}"], {}
                counts[verdict] += 1
                if verdict in shown:
                    error = answer.get("error", {}) if isinstance(answer, dict) else {}
                    said = error.get("message") or ("ok" if answer.get("ok") else "")
                    print(f"{verdict:7}  {case.title}\n         missed: {'; '.join(failed)}"
                          f"\n         answer: {said[:160]}")
    finally:
        if session is not None:
            session.close()
    total = len(cases)
    print(f"\n{total} calls: {counts['helpful']} helpful, {counts['vague']} vague, "
          f"{counts['wrong']} silently wrong  (lispshell from {opts.source})")
    return 1 if counts["wrong"] or counts["vague"] * 10 >= total else 0


if __name__ == "__main__":
    sys.exit(main())
