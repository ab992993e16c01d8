"""No unused imports, undefined names or syntax errors anywhere (ruff's pyflakes rules)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pyflakes_rules_pass():
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run([str(ruff), "check", "--select", "F,E9", "--no-cache",
                           "lispshell", "tests", "bench"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_lisp_code_lispshell_ships_reads_cleanly():
    """The in-image loops and helpers are real Lisp files: `lispshell check` passes on them."""
    from conftest import LISPSHELL

    image = ROOT / "lispshell" / "lisp" / "image"
    files = sorted(p.name for p in image.iterdir() if p.suffix in (".lisp", ".scm", ".clj"))
    for lisp in ("sbcl", "guile", "clojure"):    # loop, introspect, project (+ transport helpers)
        assert [f.split("-")[0] for f in files].count(lisp) >= 3, files
    r = subprocess.run([LISPSHELL, "check", str(image)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
