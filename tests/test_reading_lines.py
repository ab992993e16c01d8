"""LineIndex answers the same before its table of line starts is built (a few lines asked,
counted from the nearest known line) as after."""
from __future__ import annotations

import random

from lispshell.syntax.reading import LineIndex


def _table(text: str) -> LineIndex:
    lines = LineIndex(text)
    lines.starts        # noqa: B018 (built now)
    return lines


def test_lines_asked_before_the_table_match_the_table():
    rnd = random.Random(24)
    for _ in range(200):
        text = "".join(rnd.choice(["a", "b\t", "\n", "\r\n", "é", "\n\n"])
                       for _ in range(rnd.randint(0, 60)))
        lazy, full = LineIndex(text), _table(text)
        for _ in range(rnd.randint(1, LineIndex.PROBES + 5)):
            offset = rnd.randint(0, len(text) + 2)
            ask = rnd.choice(["line", "line_col", "width", "line_start", "line_end",
                              "line_text"])
            if ask in ("line_start", "line_end", "line_text"):
                line = rnd.randint(1, full.line_count)
                assert getattr(lazy, ask)(line) == getattr(full, ask)(line), (text, ask, line)
            else:
                assert getattr(lazy, ask)(offset) == getattr(full, ask)(offset), (text, ask,
                                                                                  offset)
        assert lazy.line_count == full.line_count
