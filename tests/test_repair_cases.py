"""tests/cases/repair.md: damaged source in, repaired source and level of evidence out."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from lispshell.syntax.repair import apply_edits, repair
from lispshell.syntax.validate import validate

CASES = Path(__file__).parent / "cases" / "repair.md"
_BLOCK = re.compile(r"^```(in|out|also) ?(\S*)\n(.*?)^```$", re.M | re.S)


def _cases():
    text = CASES.read_text()
    out = []
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        title = section.splitlines()[0]
        blocks = {kind: (arg, body[:-1]) for kind, arg, body in _BLOCK.findall(section)}
        out.append(pytest.param(blocks, id=title))
    return out


@pytest.mark.parametrize("blocks", _cases())
def test_case(blocks):
    dialect, damaged = blocks["in"]
    level, expected = blocks["out"]
    r = repair(damaged, dialect)
    assert (r.text, r.level) == (expected, level), r.why
    assert apply_edits(damaged, r.edits) == r.text
    if r.edits and r.rule != "G02":       # G02: no repair found that reads
        assert validate(r.text, dialect).ok
    if "also" in blocks:
        assert blocks["also"][1] in [apply_edits(damaged, e) for e in r.rivals]


def test_the_file_has_every_level():
    levels = {p.values[0]["out"][0] for p in _cases()}
    assert levels == {"certain", "likely", "guess"}
