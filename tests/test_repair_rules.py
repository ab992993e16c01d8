"""The repair's rules as declared units (lispshell/syntax/rules.py): every verdict names a
declared rule, every declared rule is reached from the code, every rule that writes decides a
case in tests/cases/repair.md, and `lispshell check` names and explains them."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import LISPSHELL
from lispshell.syntax import repair as repair_module
from lispshell.syntax.repair import repair
from lispshell.syntax.rules import DISABLED, RULES, explain

SYNTAX = Path(repair_module.__file__).parent
CASES = Path(__file__).parent / "cases" / "repair.md"
_BLOCK = re.compile(r"^```(in|out|also) ?(\S*)\n(.*?)^```$", re.M | re.S)


def _used_codes() -> set[str]:
    """Every rule code the pipeline's modules name (rules.py, which declares them, aside)."""
    return {code for path in SYNTAX.glob("*.py") if path.name != "rules.py"
            for code in re.findall(r'"([CLGT]\d\d)"', path.read_text())}


def test_every_rule_the_code_names_is_declared_and_every_declared_rule_is_used():
    used = _used_codes()
    assert used - set(RULES) == set(), "verdicts name rules nobody declared"
    assert set(RULES) - used == set(), "declared rules no verdict names"
    for code, rule in RULES.items():
        assert rule.code == code and rule.summary and rule.because
        assert rule.level in ("certain", "likely", "guess")
        assert (code[0], rule.level) in {("C", "certain"), ("L", "likely"), ("G", "guess"),
                                         ("T", "guess")}


def test_every_rule_that_writes_decides_a_case_and_each_case_names_its_rule():
    deciding: dict[str, int] = {}
    for section in re.split(r"^## ", CASES.read_text(), flags=re.M)[1:]:
        blocks = {kind: (arg, body[:-1]) for kind, arg, body in _BLOCK.findall(section)}
        dialect, damaged = blocks["in"]
        r = repair(damaged, dialect)
        assert r.rule in RULES, (section.splitlines()[0], r)
        deciding[r.rule] = deciding.get(r.rule, 0) + 1
    writers = {code for code, rule in RULES.items() if rule.level in ("certain", "likely")}
    assert writers - set(deciding) == set(), "rules that write unattended with no case"


def test_a_disabled_rule_writes_nothing():
    text = "(defun gamma (x)\n  (- x 33)"
    assert (repair(text, "cl").level, repair(text, "cl").rule) == ("likely", "L01")
    DISABLED.add("L01")
    try:
        r = repair(text, "cl")
        assert r.level == "guess" and "L01 is disabled" in r.why
    finally:
        DISABLED.discard("L01")


def test_check_names_the_rule_and_explains_it(tmp_path):
    (tmp_path / "g.lisp").write_text("(defun gamma (x)\n  (- x 33)")
    r = subprocess.run([LISPSHELL, "check", "--diff", "g.lisp"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert "(repaired: likely, the indentation decides; written by --fix=likely) " \
           "[L01 indentation-decides]" in r.stdout, r
    r = subprocess.run([LISPSHELL, "check", "--fix=likely", "g.lisp"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert "g.lisp: fixed (1 edit, likely) [L01 indentation-decides]" in r.stdout, r
    r = subprocess.run([LISPSHELL, "check", "--explain", "l02"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("L02 shapes-decide (likely)"), r
    assert explain("C01").startswith("C01 only-edit-reads (certain)")
    r = subprocess.run([LISPSHELL, "check", "--explain", "X1"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "no repair rule 'X1'" in r.stderr and "L01" in r.stderr
