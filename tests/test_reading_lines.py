"""Parts of a reading computed the cheap way answer as the plain way: LineIndex before its
table of line starts is built (a few lines asked, counted from the nearest known line) as
after; the prefix tokens and the missing datums as a regex over the token codes."""
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


def test_prefixes_right_before_a_closer_are_missing_datums_as_the_codes_say():
    """Reading.prefixes (found from the lengths between them) and the missing-datum check on
    them give what a regex over the token codes gives, in every dialect."""
    import re

    from lispshell.syntax import reading

    rnd = random.Random(24)
    pieces = {"cl": ["'", "`", ",", ",@", "#+", "#'", "(", ")", "x", ";c\n", "#|b|#", " "],
              "scheme": ["'", "#;", "(", ")", "[", "]", "x", ";c\n", "#|b|#", " ", "#'"],
              "clojure": ["'", "^", "#_", "@", "~", "(", ")", "[", "]", "{", "}", "x",
                          ";c\n", " ", "#'"]}
    for dialect, parts in pieces.items():
        for _ in range(300):
            text = " ".join(rnd.choice(parts) for _ in range(rnd.randint(0, 25)))
            r = reading.Reading(text, dialect, *reading.tokenize(text, dialect))
            codes = r.tokens.codes
            assert r.prefixes == [m.start() for m in re.finditer("[pd]", codes)]
            missing = [p[0] for p in r.delimiter_problems if p[2] == "MISSING_DATUM"]
            assert missing == [m.end() - 1 for m in re.finditer(r"[pd][;b]*[)\]}]", codes)]
