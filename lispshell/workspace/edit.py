"""Applying an Edit safely: newlines, re-indentation, a parse check, atomic file writes.

A `Source` is the text a tool works on, from a file or from a string. The text is kept as
it was read (CRLF included), so bytes outside an edit never change; inserted text gets the
file's own line ending. `apply` splices one Edit in, re-indents only the lines the edit
produced, and parses the result: an edit that would leave the text unbalanced never gets out.
`write` replaces the file through lispshell.workspace.files (inside the root, without following a
symlink swapped in, atomically, keeping mode, owner, links and extended attributes), after
checking that nobody changed the file since it was read.
"""
from __future__ import annotations

import bisect
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from lispshell.workspace import files
from lispshell.workspace.files import MAX_FILE_BYTES, digest  # noqa: F401 - part of this API
from lispshell.syntax.cst import LineIndex, StructureError, parse, parse_shared
from lispshell.syntax.indent import reindent
from lispshell.syntax.limits import check_nesting
from lispshell.syntax.paredit import Edit
from lispshell.syntax.reading import read

BOM = "\ufeff"


@dataclass
class Source:
    text: str
    dialect: str
    path: Path | None = None
    newline: str = "\n"
    bom: bool = False
    hash: str = ""
    mode: int | None = None
    root: Path | None = None   # the file was opened through this root, and is written so

    def encode(self, text: str) -> bytes:
        return ((BOM if self.bom else "") + text).encode("utf-8")


def _newline_of(text: str) -> str:
    """CRLF for a file whose every line ends in CRLF. A file that mixes endings gets no
    conversion at all: the bare \n of text moved inside it cannot be told from ours."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") else "\n"


def from_code(code: str, dialect: str) -> Source:
    bom = code.startswith(BOM)
    text = code[1:] if bom else code
    return Source(text, dialect, None, _newline_of(text), bom, digest(code.encode("utf-8")))


def load(path: Path, dialect: str, root: Path | None = None) -> Source:
    try:
        data, st = files.read_file(path, root)
    except files.FileError as exc:
        raise StructureError(exc.code, exc.message)
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StructureError("BAD_ENCODING", f"{path} is not UTF-8 (byte {exc.start})")
    check_nesting(decoded, dialect, str(path))
    bom = decoded.startswith(BOM)
    text = decoded[1:] if bom else decoded
    return Source(text, dialect, path, _newline_of(text), bom, digest(data),
                  stat.S_IMODE(st.st_mode), root)


def parse_source(src: Source):
    """The CST of a source (shared: see cst.parse_shared), or an error that points at
    check_syntax."""
    try:
        return parse_shared(src.text, src.dialect)
    except StructureError as exc:
        where = f"{src.path}" if src.path else "the code"
        raise StructureError("UNBALANCED", f"{where} does not parse: {exc.message}",
                             suggestion="Fix it first: check_syntax shows the error and a "
                             "repair; read_form and replace_form work on a broken form",
                             **{k: v for k, v in exc.extra.items() if k in ("line", "col")})


def with_newlines(text: str, newline: str) -> str:
    """`text` with its bare `\n` line endings turned into `newline` (the file's own).

    Existing `\r\n` stay as they are: text moved within a file keeps its bytes, even in a
    file that mixes line endings."""
    if newline == "\n":
        return text
    return re.sub(r"(?<!\r)\n", "\r\n", text)


@dataclass
class Change:
    new_text: str
    start_line: int        # 1-based, in the new text
    end_line: int
    region: str            # lines start_line..end_line of the new text
    original: str          # the lines the edit replaced, from the old text
    old_start_line: int
    old_end_line: int


def _lines(text: str, lines: LineIndex, first: int, last: int) -> str:
    return text[lines.line_start(first):lines.line_end(last)]


def apply(src: Source, edit: Edit, *, indent: bool = True, whole: bool = True) -> Change:
    """Splice `edit` into `src.text`, re-indent the lines it produced, check it parses.

    whole=False is for a file that did not parse before (form tools replacing a broken form):
    only the new piece is checked and indented, on its own, at the column it lands in."""
    old = src.text
    # Lines are counted in the old text (its reading's, kept): the new text is the same
    # up to edit.start, and indexing a big new text costs a millisecond a time.
    old_lines = read(old, src.dialect).lines
    piece = with_newlines(edit.text, src.newline)
    if not whole:
        piece = _indent_alone(piece, old_lines.width(edit.start), src.dialect) \
            if indent else piece
    new = old[:edit.start] + piece + old[edit.end:]
    first = old_lines.line(edit.start)
    last = first + piece.count("\n")
    if piece.endswith("\n") and last > first:
        last -= 1    # a trailing newline ends the edited region, it does not open a line
    lo, hi = first + 1, last    # the lines re-indented
    if edit.indent is not None:       # the lines paredit would re-indent (or none)
        lo, hi = (_new_line(old_lines, edit, at) for at in edit.indent) \
            if edit.indent else (1, 0)
        # but never a line that starts before the edit: the bytes outside it stay as they are
        lo = max(lo, first if old_lines.line_start(first) == edit.start else first + 1)
    if whole:
        try:
            # Only the top-level forms the edit touched are read again (a whole big file
            # costs ~0.1 s to parse): the rest of the text read before and did not change.
            a, b = _touched_forms(old, src.dialect, edit.start, edit.end)
            b += len(piece) - (edit.end - edit.start)
            root = parse(new[a:b], src.dialect)
            if indent and hi >= lo:
                # Only leading whitespace of lines that start outside any token changes:
                # the structure just checked stays as it is.
                above = old_lines.line(a) - 1
                new = new[:a] + reindent(new[a:b], src.dialect, lo - above, hi - above,
                                         root) + new[b:]
                first, last = min(first, lo), max(last, hi)   # show what was re-indented
        except StructureError as exc:  # a bug of ours: never let it reach the file
            raise StructureError("INTERNAL", f"the edit would leave the text unbalanced "
                                 f"({exc.message}); nothing was changed")
    rows = new[old_lines.line_start(first):].split("\n", last - first + 1)[:last - first + 1]
    while len(rows) > 1 and not rows[-1].strip():
        rows.pop()   # blank separator lines are not worth showing
    last = first + len(rows) - 1
    region = "\n".join(rows)
    if rows[-1].endswith("\r"):
        region = region[:-1]     # as LineIndex.line_end: a CRLF line ends before its \r
    o_first, o_last = old_lines.line(edit.start), old_lines.line(max(edit.end - 1, edit.start))
    return Change(new, first, last, region, _lines(old, old_lines, o_first, o_last), o_first,
                  o_last)


def _new_line(old_lines: LineIndex, edit: Edit, at: int) -> int:
    """The line of offset `at` of the text the edit makes (edit.text spliced in over
    edit.start..end, before its newlines are the file's: that changes no line number)."""
    text = edit.text
    if at <= edit.start:
        return old_lines.line(at)
    if at <= edit.start + len(text):
        return old_lines.line(edit.start) + text.count("\n", 0, at - edit.start)
    shift = len(text) - (edit.end - edit.start)
    return old_lines.line(at - shift) + text.count("\n") - \
        old_lines.text.count("\n", edit.start, edit.end)


def _touched_forms(text: str, dialect: str, start: int, end: int) -> tuple[int, int]:
    """The span of `text` (which parses) made of the whole top-level items that the edit of
    start..end touches, from the start of a line: read on its own, it reads as it does in the
    text (each top-level item starts where the reader is at the top level, outside any
    token). (0, len(text)) when no such span is smaller."""
    try:
        items = parse_shared(text, dialect).children
    except StructureError:
        return 0, len(text)
    a, b = start, end
    at = bisect.bisect_right([c.end for c in items], start)
    for c in items[at:]:
        if c.start >= max(end, start + 1):
            break
        a, b = min(a, c.start), max(b, c.end)
    if a and text[a - 1] != "\n":
        return 0, len(text)
    return a, b


def _indent_alone(piece: str, column: int, dialect: str) -> str:
    """`piece` re-indented as if it started at `column` (it must parse on its own)."""
    padded = " " * column + piece
    try:
        out = reindent(padded, dialect, 2, padded.count("\n") + 1)
    except StructureError as exc:
        raise StructureError("INTERNAL", f"the new text does not parse ({exc.message}); "
                             "nothing was changed")
    return out[column:]


def write(src: Source, new_text: str, tool: str = "") -> str:
    """Write `new_text` over the file `src` was read from; the new hash. Refused (STALE) if
    the file changed since it was read, as late as the write allows. `tool` names the change
    in the undo journal."""
    assert src.path is not None
    try:
        return files.write_file(src.path, src.encode(new_text), src.root, expected=src.hash,
                                tool=tool)
    except files.FileError as exc:
        if exc.code == "STALE":
            raise StructureError("STALE", exc.message, suggestion="Read it again and retry")
        raise StructureError(exc.code, exc.message)
