"""The catalogue of the model's ordinary mistakes (tests/cases/mistakes.md, issue 45): every
call answers helpfully, never ok while doing something else than was asked, and a refusal
names the fix. Live cases run on one real SBCL; bench/model_mistakes.py counts the verdicts."""
from __future__ import annotations

import pytest

from lispshell import config as config_mod
from lispshell.lisp.session import make_session
from mistake_cases import LIVE_TOOLS, load, run

SHARED, CASES = load()


@pytest.fixture(scope="module")
def sbcl():
    session = make_session("sbcl", config_mod.load())
    session.start()
    yield session
    session.close()


@pytest.mark.parametrize("case", CASES, ids=[c.title for c in CASES])
def test_case(case, tmp_path, request):
    session = request.getfixturevalue("sbcl") if case.live else None
    verdict, failed, answer = run(case, SHARED, tmp_path / "root", session)
    assert verdict == "helpful", (verdict, failed, answer)


def test_the_catalogue_covers_every_kind_of_tool():
    tools = {c.tool for c in CASES}
    assert {"eval", "delete_form", "insert_form", "replace_form", "sexp_kill",
            "validate_syntax"} <= tools
    assert tools & LIVE_TOOLS and len(CASES) >= 50
