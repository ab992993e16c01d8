"""The benches' inputs, built as the benches build them: a bench is run by hand, so a change of
a shared part (bench/repair_corpus.py's corpus) that breaks one would otherwise go unseen until
someone measures. Timing is never asserted here (bench/ measures it)."""
from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_check_fix_damages_the_forms_it_times():
    sys.path.insert(0, str(BENCH))
    try:
        import check_fix
    finally:
        sys.path.remove(str(BENCH))
    from lispshell.syntax.validate import validate

    cases = check_fix.damaged(30, 1)
    assert len(cases) == 30
    assert {d for d, _ in cases} <= {"cl", "scheme", "clojure"}
    # each one damaged: a closer or two dropped, so it no longer reads
    assert all(not validate(text, dialect).ok for dialect, text in cases)
