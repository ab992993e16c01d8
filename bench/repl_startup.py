"""Time from `lispshell` to a usable prompt, and to the first answer, under a real pty.

    .venv/bin/python bench/repl_startup.py [--runs N] [--lisp sbcl]

Measured in the same run, for comparison:
  python    the interpreter alone starting under a pty (`python -c 'print(1)'`), the floor
            for any Python program;
  lisp      the stock Lisp REPL printing its first prompt (`sbcl --noinform`: `* `).
lispshell must show its prompt within 250 ms on SBCL (the issue's target): the child Lisp and
the LLM side load behind the prompt, so this is Python, prompt-toolkit and rich importing.
"first answer" adds typing `(+ 1 2)` at once and waiting for `3`, which includes the Lisp boot.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

VENV_BIN = Path(sys.executable).parent
STOCK = {"sbcl": (["sbcl", "--noinform", "--no-sysinit", "--no-userinit"], "* "),
         "guile": (["guile", "-q", "--no-auto-compile"], "> "),
         "clojure": (["java", "-cp", "/usr/share/java/clojure.jar", "clojure.main"], "=> ")}
PROMPT = {"sbcl": "CL-USER", "guile": "guile-user", "clojure": "user"}


def timed_spawn(argv: list[str], wanted: str, env: dict, then: tuple[str, str] | None = None):
    """Seconds until `wanted` is printed, and until the regex then[1] after sending then[0]."""
    start = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(40, 120), encoding="utf-8",
                          timeout=60)
    child.expect_exact(wanted)
    first = time.perf_counter() - start
    second = None
    if then:
        child.send(then[0])
        child.expect(then[1])
        second = time.perf_counter() - start
    child.terminate(force=True)
    child.close()
    return first, second


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--lisp", default="sbcl", choices=sorted(STOCK))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lispshell-bench-") as tmp:
        measure(args, Path(tmp))


def measure(args, tmp: Path) -> None:
    """Time the runs with state and config kept in `tmp` (removed afterwards)."""
    env = dict(os.environ, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1",
               LISPSHELL_STATE_DIR=str(tmp / "state"), LISPSHELL_CONFIG_DIR=str(tmp / "config"))
    env = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}

    python, lisp, prompt, answer = [], [], [], []
    stock_argv, stock_prompt = STOCK[args.lisp]
    for _ in range(args.runs):
        python.append(timed_spawn([sys.executable, "-c", "print('ready')"], "ready", env)[0])
        lisp.append(timed_spawn(stock_argv, stock_prompt, env)[0])
        p, a = timed_spawn([str(VENV_BIN / "lispshell"), "--lisp", args.lisp], PROMPT[args.lisp],
                           env, then=("(+ 1 2)\r", r"\x1b\[[0-9;]*m3\x1b\[0m"))
        prompt.append(p)
        answer.append(a)

    def ms(xs):
        return statistics.median(xs) * 1000

    base_py, base_lisp = ms(python), ms(lisp)
    print(f"{args.runs} runs, medians ({args.lisp}):")
    print(f"  python alone            {base_py:7.1f} ms")
    print(f"  stock {args.lisp} prompt{'':<{11 - len(args.lisp)}}{base_lisp:7.1f} ms")
    print(f"  lispshell prompt        {ms(prompt):7.1f} ms   {ms(prompt) / base_py:4.1f}x python, "
          f"{ms(prompt) / base_lisp:4.1f}x stock {args.lisp}  (target < 250 ms: "
          f"{'met' if ms(prompt) < 250 else 'MISSED'})")
    print(f"  lispshell first answer  {ms(answer):7.1f} ms   {ms(answer) / base_lisp:4.1f}x stock "
          f"{args.lisp} prompt")


if __name__ == "__main__":
    main()
