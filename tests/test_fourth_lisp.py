"""A fourth Lisp is one record and its image files: a copy of lispshell with a record for
"tiny" (a stand-in Lisp: Guile running the smallest loop that speaks the framed protocol,
tests/fourth_lisp/tiny-loop.scm) and that loop file added, nothing else changed, starts it,
evaluates and completes through the REPL in a real terminal."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import lispshell
from pty_shell import Shell

RECORD = '''
from dataclasses import replace  # noqa: E402

TINY = replace(GUILE, name="tiny", display="Tiny", loop_file="tiny-loop.scm", requests="ENCQ",
               last_error_frames=(), init_form="", init_files_shown="")

'''


def test_a_fourth_lisp_needs_only_its_record_and_its_loop(tmp_path):
    copy = tmp_path / "pkg" / "lispshell"
    shutil.copytree(Path(lispshell.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    dialects = copy / "lisp" / "dialects.py"
    text = dialects.read_text()
    at = text.index("# Every record above")
    dialects.write_text(text[:at] + RECORD.lstrip() + text[at:])
    shutil.copy(Path(__file__).parent / "fourth_lisp" / "tiny-loop.scm",
                copy / "lisp" / "image" / "tiny-loop.scm")
    sh = Shell(tmp_path, "--lisp", "tiny", "--no-llm", "--no-project",
               command=[sys.executable, "-m", "lispshell"],
               env={"PYTHONPATH": str(copy.parent)}, cwd=tmp_path)
    try:
        sh.expect("(guile-user)>", timeout=60)
        sh.submit("(define (tiny-twice x) (* 2 x))")
        sh.expect("(guile-user)>")
        sh.submit("(tiny-twice 21)")
        sh.expect("42")
        sh.expect("(guile-user)>")
        sh.send("(string-ap\t")
        sh.expect("string-append")
    finally:
        sh.close()
