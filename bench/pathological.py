"""Pathological input against ordinary code, per byte, in the same run (issue 16).

    .venv/bin/python bench/pathological.py

For each tool and each pathological input (thousands of unclosed `(`, deeply nested pairs,
8 MB of `(`, a million `(`, a million stray `)`), the time per byte is compared with the same tool on ordinary Lisp
code (lispshell's own in-image .lisp files, repeated to the same size range). Each must be
within 2x of ordinary code per byte, or refused at once (TOO_DEEP / TOO_LARGE, under a second
and a half). The run fails (exit 1) when one is neither, or when a tool did not really work on
the ordinary code (its answer was an error).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lispshell.tools.registry import call_tool  # noqa: E402

IMAGE = Path(__file__).resolve().parent.parent / "lispshell" / "lisp" / "image"
ORDINARY = "\n".join(p.read_text() for p in sorted(IMAGE.glob("*.lisp")))
REFUSED = {"TOO_DEEP", "TOO_LARGE"}
QUICK = 1.5        # seconds: "at once", for a refusal

CASES = [   # (tool, extra arguments, pathological code)
    ("read_module", {}, "(" * 10_000),
    ("read_module", {}, "(" * 100_000),
    ("sexp_wrap", {"path": [0]}, "(" * 30_000 + ")" * 30_000),
    ("validate_syntax", {}, "(" * 8_000_000),
    ("repair_syntax", {}, "(" * 1_000_000),
    ("check_syntax", {}, "(" * 100_000),
    # Stray closers nest nothing, so the depth limit does not refuse them: a million took
    # minutes in repair (quadratic) and read_module (each token's line prefix measured).
    ("validate_syntax", {}, ")" * 1_000_000),
    ("repair_syntax", {}, ")" * 1_000_000),
    ("read_module", {}, ")" * 1_000_000),
    ("check_syntax", {}, ")" * 1_000_000),
]
ORDINARY_ARGS = {"sexp_wrap": {"form_type": "defun", "form_name": "json", "target": "(with-output-to-string (out) (json-write x out))"}}


def timed(tool: str, args: dict) -> tuple[float, dict]:
    t = time.perf_counter()
    result = call_tool(tool, args)
    return time.perf_counter() - t, result


def main() -> int:
    failed = False
    print(f"ordinary code: {len(ORDINARY):,} characters of lispshell's own .lisp files")
    print(f"{'tool':<16} {'input':>12} {'s':>8} {'µs/KB':>9} {'ordinary µs/KB':>15} {'ratio':>6}  verdict")
    per_byte: dict[str, float] = {}
    for tool, extra, code in CASES:
        if tool not in per_byte:
            args = {"code": ORDINARY, "dialect": "cl", **ORDINARY_ARGS.get(tool, extra)}
            seconds, result = min(timed(tool, args) for _ in range(3))
            if not result.get("ok", False) and tool not in ("validate_syntax", "check_syntax"):
                print(f"{tool}: did not work on ordinary code: {result.get('error')}")
                return 1
            per_byte[tool] = seconds / len(ORDINARY)
        seconds, result = timed(tool, {"code": code, "dialect": "cl", **extra})
        ratio = (seconds / len(code)) / per_byte[tool]
        code_ = (result.get("error") or {}).get("code")
        if code_ in REFUSED:
            verdict = "refused at once" if seconds < QUICK else "refused, but SLOW"
            failed |= seconds >= QUICK
        else:
            verdict = "within 2x" if ratio <= 2 else "TOO SLOW"
            failed |= ratio > 2
        print(f"{tool:<16} {len(code):>12,} {seconds:>8.3f} {seconds / len(code) * 1e9:>9.1f} "
              f"{per_byte[tool] * 1e9:>15.1f} {ratio:>6.2f}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
