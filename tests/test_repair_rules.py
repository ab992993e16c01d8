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
from lispshell.syntax.rules import why as rules_why

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


def _case_repairs():
    for section in re.split(r"^## ", CASES.read_text(), flags=re.M)[1:]:
        blocks = {kind: (arg, body[:-1]) for kind, arg, body in _BLOCK.findall(section)}
        dialect, damaged = blocks["in"]
        yield section.splitlines()[0], repair(damaged, dialect)


def test_every_rule_decides_a_case_and_each_case_names_its_rule():
    deciding: set[str] = set()
    chose: set[str] = set()
    for title, r in _case_repairs():
        assert r.rule in RULES, (title, r)
        deciding.add(r.rule)
        chose.update(step.code for step in r.trace if RULES[step.code].stage == "tie-break")
    # a tie-break decides which of the tied repairs a guess offers: a step of its trace
    assert set(RULES) - deciding - chose == set(NOT_REACHED), \
        "rules no case in tests/cases decides"


# Rules no repair has been found to reach: G09 is tested after the search, which ranks a
# second trail placement that agrees as well away before it, and after L03/G11's own ties;
# not one of 21,000 bench cases nor a fuzz of drops, kinds and strays reached it. Kept, as
# the guard it is; named here so that a case that reaches it is added, not missed.
NOT_REACHED = {"G09"}


def test_why_is_the_trace_read_out_and_names_every_rule_that_fired():
    for title, r in _case_repairs():
        codes = [step.code for step in r.trace]
        assert r.rule in codes, title
        assert r.why == rules_why(r.trace) and r.why, title
    # a tie on the last line (G11), broken by the library's count of missing-arg (T01)
    r = repair("(defun slot-spec ()\n  (list (missing-arg :type list", "cl")
    assert (r.level, r.rule, [step.code for step in r.trace]) == ("guess", "G11",
                                                                  ["G11", "T01"])
    assert r.text.endswith("(missing-arg) :type list))")
    assert r.why.startswith(RULES["G11"].because + "; the library's argument counts choose "
                            "another ((missing-arg ...) takes 0 argument(s)")
    # a shape broken (G06) is the step the shape rules start from (G04 here)
    r = repair("(define (mklst lst)\n  (if (not (list? lst) (list lst lst", "scheme")
    assert [step.code for step in r.trace] == ["G06", "G04"] and r.rule == "G04"
    assert r.why.startswith("form shape: (not ...) takes 1 argument(s), has 2; a second "
                            "closer moved on the line")


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
    assert "Stage: tie-break" in explain("t07") and "never written unattended" in explain("T07")
    r = subprocess.run([LISPSHELL, "check", "--explain", "X1"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "no repair rule 'X1'" in r.stderr and "L01" in r.stderr
