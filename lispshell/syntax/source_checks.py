"""What a model's source can hold that balance does not catch. Pure functions of text.

Stable API:

    unfence(text) -> Fence | None
        A Markdown code fence around the whole text (```lisp ... ```), or only its opening or
        closing line: the code inside and the fence's language tag. The model meant the code
        inside; callers take it off and say so.
    smart_quotes(text, dialect) -> list[(offset, char)]
        Typographic quotes (“ ” ‘ ’) outside strings and comments: the Lisp reads them as
        parts of symbols (SBCL reads `“x` as a symbol), so code with them is not what was meant.
    ascii_quotes(text, dialect) -> str
        The text with those quotes made ASCII: “ ” become ", ‘ becomes ', a ’ closing a ‘ goes.
    foreign_syntax(text, dialect, known="") -> list[dict]
        `#` dispatches the dialect does not read (`#t` in Common Lisp...), each with its line,
        column, message and, when one is known, the dialect's own spelling; a dispatch that
        `known` (the file the text goes into) already uses is taken as the file's own reader
        macro and not reported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from lispshell.syntax.dialects import DISPLAY_NAME, resolve_dialect
from lispshell.syntax.reading import LineIndex, read

_FENCE = re.compile(r"\A\s*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*\n(.*?)\n?[ \t]*\1[ \t]*\s*\Z",
                    re.S)


@dataclass
class Fence:
    code: str
    lang: str

    def note(self) -> str:
        tag = f"```{self.lang}" if self.lang else "```"
        return (f"the text held a Markdown fence ({tag}): the code inside it was used; send "
                "code without the fence")


# Half a fence: a model cut off, or one that put only the opening line.
_OPENING = re.compile(r"\A\s*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[ \t]*\n")
_CLOSING = re.compile(r"\n[ \t]*(`{3,}|~{3,})[ \t]*\s*\Z")


def unfence(text: str) -> Fence | None:
    if not isinstance(text, str) or not ("```" in text or "~~~" in text):
        return None
    m = _FENCE.match(text)
    if m is not None:
        return Fence(m.group(3), m.group(2))
    opening, closing = _OPENING.match(text), _CLOSING.search(text)
    if opening is None and closing is None:
        return None
    start = opening.end() if opening else 0
    end = closing.start() if closing and closing.start() >= start else len(text)
    return Fence(text[start:end], opening.group(2) if opening else "")


_SMART = "“”‘’"
_CODE_KINDS = ("atom", "prefix", "char")


def smart_quotes(text: str, dialect: str) -> list[tuple[int, str]]:
    if not any(q in text for q in _SMART):
        return []
    found = []
    for tok in read(text, dialect).tokens:
        if tok.kind in ("atom", "prefix"):
            for i in range(tok.start, tok.end):
                if text[i] in _SMART:
                    found.append((i, text[i]))
    return found


def ascii_quotes(text: str, dialect: str) -> str:
    at = dict(smart_quotes(text, dialect))
    out, open_single = [], False
    for i, ch in enumerate(text):
        q = at.get(i)
        if q in ("“", "”"):
            out.append('"')
        elif q == "‘":
            out.append("'")
            open_single = True
        elif q == "’":
            if open_single:
                open_single = False       # ‘x’ is 'x: the closing one goes
            else:
                out.append("'")
        else:
            out.append(ch)
    return "".join(out)


def quote_note(text: str, dialect: str) -> str:
    lines = LineIndex(text)
    places = smart_quotes(text, dialect)
    where = ", ".join("%d:%d" % lines.line_col(o) for o, _ in places[:5])
    more = f" and {len(places) - 5} more" if len(places) > 5 else ""
    return (f"typographic quotes outside strings at {where}{more} (line:column): the Lisp reads "
            "them as parts of symbols, not as quotes")


# The spelling each dialect has for another dialect's literal.
_OWN_SPELLING = {
    "cl": {"#t": "t", "#f": "nil", "#true": "t", "#false": "nil", "#nil": "nil"},
    "clojure": {"#t": "true", "#f": "false", "#true": "true", "#false": "false"},
}


def foreign_syntax(text: str, dialect: str, known: str = "") -> list[dict]:
    dialect = resolve_dialect(dialect)      # "sbcl" is "cl" here
    r = read(text, dialect)
    out = []
    if dialect == "clojure":
        # Clojure reads Scheme's #t as a tagged literal: "No reader function for tag t"
        lines = LineIndex(text)
        for tok in r.tokens:
            word = text[tok.start:tok.end]
            if tok.kind == "prefix" and word.lower() in _OWN_SPELLING["clojure"] and \
                    not re.search(re.escape(word) + r"(?![\w-])", known):
                line, col = lines.line_col(tok.start)
                own = _OWN_SPELLING["clojure"][word.lower()]
                out.append({"line": line, "col": col, "text": word, "fix": own,
                            "message": f"{word} is not Clojure syntax (a tagged literal with no "
                                       f"reader): write {own}"})
    for p in r.problems:
        if p.code not in ("BAD_DISPATCH", "BAD_CHARACTER"):
            continue
        m = re.match(r"#\\?[^\s()\[\]{}\"';`,]*", text[p.offset:])
        word = m.group() if m else text[p.offset:p.offset + 2]
        if known and word and re.search(re.escape(word) + r"(?![\w-])", known):
            continue        # the file already uses it: its readtable knows it
        entry = {"line": p.line, "col": p.col, "text": word[:40],
                 "message": f"{word[:40]} is not {DISPLAY_NAME.get(dialect, dialect)} syntax"}
        own = _OWN_SPELLING.get(dialect, {}).get(word.lower())
        if own:
            entry["message"] += f": write {own}"
            entry["fix"] = own
        out.append(entry)
    return out
