"""How long `lispshell hook` takes on an edit of a file that is not Lisp (the common case: every
Edit/Write of a Claude Code session runs it). Target: under 50 ms, and the ratio to a bare
`python -c pass` in the same run shows what lispshell adds.

    .venv/bin/python bench/hook_latency.py [--runs N]

Fails (exit 1) when the hook printed anything or failed for the non-Lisp edit, or when a Lisp
file that does not read was not repaired (so the numbers are of the real hook, not a no-op).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def timed(cmd: list[str], stdin: str, runs: int) -> tuple[float, subprocess.CompletedProcess]:
    times, done = [], None
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), done


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        py, lisp = Path(tmp) / "tool.py", Path(tmp) / "a.lisp"
        py.write_text("print('hello')\n")
        lisp.write_text("(defun f (x)\n  (+ x 1)))\n")
        event = {"hook_event_name": "PostToolUse", "tool_name": "Edit", "cwd": tmp,
                 "tool_input": {"file_path": str(py), "old_string": "a", "new_string": "b"}}
        floor, _ = timed([sys.executable, "-c", "pass"], "", runs)
        quiet, done = timed([str(BIN / "lispshell"), "hook"], json.dumps(event), runs)
        if done.returncode or done.stdout or done.stderr:
            print(f"FAIL: the hook was not silent on a .py edit: {done}", file=sys.stderr)
            return 1
        event["tool_input"]["file_path"] = str(lisp)
        _, fixed = timed([str(BIN / "lispshell"), "hook"], json.dumps(event), 1)
        if "additionalContext" not in fixed.stdout or lisp.read_text() != "(defun f (x)\n  (+ x 1))\n":
            print(f"FAIL: the hook did not repair a Lisp file: {fixed}", file=sys.stderr)
            return 1
    print(f"python -c pass        {floor * 1000:6.1f} ms")
    print(f"lispshell hook (.py)  {quiet * 1000:6.1f} ms   {quiet / floor:.2f}x python   "
          f"target 50 ms: {'met' if quiet < 0.050 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
