"""Repair unbalanced delimiters with the stack and the indentation together.

Stable API:

    r = repair(text, dialect)          # a `Repair`
    r.text, r.edits, r.level           # level: "certain" | "likely" | "guess"
    r.rule, r.trace, r.why             # the deciding rule, the rules that fired, their reason
    r.rivals                           # for a guess: other edit lists that fit as well
    describe_edits(text, r.edits)      # each edit as line:column and the closer added/removed

- Valid text comes back byte-identical, with no edits, `certain`.
- `edits` are `{"start", "end", "text"}` against the ORIGINAL text (insert: start == end;
  delete: text == ""), sorted by position, non-overlapping; `apply_edits(text, edits)` gives
  `r.text`.
- `level` says how sure the repair is (`evidence.py` defines the three levels; the tools and
  `check --fix=likely` apply `certain` and `likely`, `check --fix` only `certain`). Reader
  errors that are not about delimiters (bad # dispatch...) are not repaired: the text comes
  back unchanged, a `guess`. An unterminated string is closed at the end of the first line
  of the string the indentation points at, when one does (`_close_string`).
- Code written before levels unpacks `text, edits, confident = repair(...)`; `confident` is
  `level == "certain"`.

How: top-level forms start at column 0, so the text is cut into chunks at lines that start at
column 0; only chunks whose delimiters do not balance are touched. For each broken chunk a few
candidate repairs are built (missing closers where the indentation says a form ends, or at the
end; a wrong closer replaced, or the missing closer inserted before it; an extra closer
deleted) and scored: balanced first, then fewest edits, then fewest lines against the
indentation. The winner is then weighed (`evidence.weigh`).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache

from lispshell.syntax import evidence, limits, rules, shapes
from lispshell.syntax.dialects import CLOSER_OF, OPENER_OF, resolve_dialect
from lispshell.syntax.evidence import (  # noqa: F401 (re-exported)
    CERTAIN, GUESS, LEVELS, LIKELY, apply_edits)
from lispshell.syntax.layout import misplaced_forms
from lispshell.syntax.lexer import tokenize
from lispshell.syntax.reading import LineIndex, read, visual_width
from lispshell.syntax.validate import validate

CLOSE_FOR, OPEN_FOR = CLOSER_OF, OPENER_OF
_DELIMITER_PROBLEMS = {"UNCLOSED", "UNMATCHED_CLOSE", "MISMATCH"}
# Bounds on the search for equally good alternatives (each costs a re-read of the chunk).
MAX_ALTERNATIVES = 40
MAX_POSITIONS = 400
MAX_REFINE_TOKENS = 20_000


@dataclass
class Repair:
    """What `repair` answers: the repaired text, the edits, and how sure it is."""

    text: str
    edits: list
    level: str
    rule: str = ""                # the deciding rule's code (lispshell/syntax/rules.py)
    trace: tuple = ()             # the rules that fired, in order (rules.Step), `rule` too
    rivals: list = field(default_factory=list)   # guess: other edit lists that fit as well

    @property
    def why(self) -> str:
        """One line: what decided the level, derived from the trace (`rules.why`)."""
        return rules.why(self.trace)

    @property
    def confident(self) -> bool:
        return self.level == CERTAIN

    @property
    def applies(self) -> bool:
        """Is it written with no one asked (the form tools, the Claude Code hook): a change,
        decided by a rule whose measured precision clears the bar (`rules.unattended`).
        `check --fix=likely` writes every likely repair: the person chose it."""
        return bool(self.edits) and self.level in (CERTAIN, LIKELY) and \
            rules.unattended(self.rule)

    # repair() answered (text, edits, confident) before it had levels: keep that working
    def __iter__(self):
        return iter((self.text, self.edits, self.confident))

    def __getitem__(self, index):
        return (self.text, self.edits, self.confident)[index]

    def __len__(self) -> int:
        return 3


# Who writes a repair, and what each may write (`decide`):
POLICIES = {
    "certain": "the person ran `check --fix`: certain repairs only",
    "likely": "the person chose `check --fix=likely`: certain and likely repairs",
    "unattended": "nobody is asked (the Claude Code hook, the form tools): Repair.applies, "
                  "the rules measured at most 1% wrong",
}


@dataclass(frozen=True)
class Decision:
    """A repair of text that does not read, and whether `policy` writes it: the one place
    that decides for `check --fix`, the hook and the form tools."""
    repair: Repair | None      # None: repairing failed (a bug; the text is then left alone)
    reads: bool                # the repair changes something and its text reads
    writes: bool               # it reads, and the policy takes its level and rule

    @property
    def text(self) -> str:
        return self.repair.text


def decide(text: str, dialect: str, policy: str, **how) -> Decision:
    """Repair `text` (`how`: repair()'s arity, sbcl_source, path) and decide by `policy`, one
    of POLICIES. A repair that raises is no repair: nothing is written over it."""
    if policy not in POLICIES:
        raise ValueError(f"no repair policy {policy!r}: " + ", ".join(POLICIES))
    try:
        r = repair(text, dialect, **how)
    except Exception:     # a repair bug must leave the text as it is, never stop the caller
        return Decision(None, False, False)
    reads = bool(r.edits) and validate(r.text, dialect).ok
    writes = reads and (r.applies if policy == "unattended"
                        else r.level == CERTAIN or (policy == "likely" and r.level == LIKELY))
    return Decision(r, reads, writes)


def describe_edits(text: str, edits: list[dict], *, in_result: bool = False) -> list[dict]:
    """Each edit as the model and a person read it: 1-based line and column in `text`, and
    the closer inserted, removed or replaced ({"line", "col", "inserted"} etc.).

    in_result: the line and column in the repaired text instead (where an inserted closer
    now stands), for an answer that shows the repaired text rather than the original."""
    lines = LineIndex(apply_edits(text, edits) if in_result else text)
    out, shift = [], 0
    for e in sorted(edits, key=lambda e: (e["start"], e["end"])):
        line, col = lines.line_col(e["start"] + shift)
        if in_result:
            shift += len(e["text"]) - (e["end"] - e["start"])
        old = text[e["start"]:e["end"]]
        what = ({"inserted": e["text"]} if not old else {"removed": old} if not e["text"]
                else {"replaced": old, "by": e["text"]})
        out.append({"line": line, "col": col, **what})
    return out


def edit_summary(text: str, edits: list[dict], *, in_result: bool = False) -> list[str]:
    """`describe_edits` as short strings: ["2:11 inserted ')'", "5:3 removed ']'"]."""
    parts = []
    for d in describe_edits(text, edits, in_result=in_result):
        where = f"{d['line']}:{d['col']}"
        if "inserted" in d:
            parts.append(f"{where} inserted {d['inserted']!r}")
        elif "removed" in d:
            parts.append(f"{where} removed {d['removed']!r}")
        else:
            parts.append(f"{where} replaced {d['replaced']!r} by {d['by']!r}")
    return parts


@dataclass
class _Tok:
    code: str      # token code (see lexer.CODE_KIND)
    start: int
    end: int
    first: bool    # first token on its line
    col: int       # 0-based column of its start


@dataclass
class _Outcome:
    edits: list = field(default_factory=list)
    ambiguous: bool = False     # some edit had a equally good alternative position


TOO_MANY = rules.TOO_MANY


def _decided(text: str, edits: list, level: str, rule: str, detail: str = "",
             rivals=(), before=()) -> Repair:
    """A repair `rule` decided (naming `detail`), after the steps `before`."""
    return Repair(text, edits, level, rule, (*before, rules.Step(rule, detail)), list(rivals))


def repair(text: str, dialect: str, *, arity=None, sbcl_source: bool | None = None,
           path: str | None = None) -> Repair:
    """Repair the delimiters of `text`; see the module docstring.

    arity: name -> (fewest, most or None) arguments or None, e.g. from a running image's
    arglists; the form-shape test then also knows the functions it answers for.
    sbcl_source: is the text SBCL's own source, whose internal definers (`defknown`, a VOP's
    `:generator`...) have shapes of their own (shapes.py)? None: when `path` lies under an
    SBCL source tree or the text is in one of SBCL's packages (`shapes.is_sbcl_source`)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    dialect = resolve_dialect(dialect)
    if sbcl_source is None:
        sbcl_source = dialect == "cl" and shapes.is_sbcl_source(text, path)
    token = evidence.IMAGE_ARITY.set(arity)
    sbcl = shapes.SBCL_SOURCE.set(bool(sbcl_source))
    try:
        found = _repair(text, dialect)
    finally:
        shapes.SBCL_SOURCE.reset(sbcl)
        evidence.IMAGE_ARITY.reset(token)
    if found.rule in rules.DISABLED and found.level in rules.WRITES and found.edits:
        # a rule turned off (bench/repair_corpus.py --disable) writes nothing unattended
        return dataclasses.replace(found, level=GUESS,
                                   trace=(*found.trace, rules.Step("off", found.rule)))
    return found


def _repair(text: str, dialect: str) -> Repair:
    reading = read(text, dialect)
    if reading.ok:
        return _decided(text, [], CERTAIN, "C00")
    codes = {p.code for p in reading.problems}
    if "UNTERMINATED_STRING" in codes and codes <= {"UNTERMINATED_STRING", "UNCLOSED"}:
        closed = _close_string(text, dialect, reading)
        if closed is not None:
            return closed
    if any(p.code not in _DELIMITER_PROBLEMS for p in reading.problems):
        return _decided(text, [], GUESS, "G14")
    n = limits.stray_closers(reading.tokens)
    if n > limits.MAX_UNMATCHED:
        return _decided(text, [], GUESS, "G15", f"{n:,} closers that close nothing, over the "
                        f"limit of {limits.MAX_UNMATCHED:,}")
    toks = _annotate(text, reading.tokens, dialect)
    edits: list = []
    verdicts: list = []          # (the chunk's edits, its verdict)
    chunks = _chunks(toks)
    wrapper_edits: list = []
    wrapped = False
    for i, chunk in enumerate(chunks):
        if _balanced(chunk):
            continue
        if i + 1 < len(chunks) and not wrapper_edits and _is_wrapper(chunk) and \
                _owns_final_closer(chunk, chunks[-1]):
            # `(progn` / `(eval-when (...)` whose body sits at column 0 and ends with a closer
            # alone on a line at column 0: that closer is the wrapper's (a body at column 0
            # is closed that way), so the body form before it lost its own closer.
            chunks[-1] = chunks[-1][:-1]
            wrapped = True
            continue
        if i + 1 < len(chunks) and not wrapper_edits and _is_wrapper(chunk):
            # `(progn` / `(eval-when (...)` whose body sits at column 0 and whose closer is
            # missing: it closes after its last form, the last one left open after it (its
            # closers and the wrapper's were dropped together: forms after it in a file
            # are the file's), else after the last form of the text.
            body_end = next((c for c in reversed(chunks[i + 1:]) if not _balanced(c)), toks)
            wrapper_edits = _close_wrapper(text, chunk, body_end)
            wrapped = True
            continue
        verdict = _repair_chunk(text, chunk, dialect)
        edits.extend(verdict.edits)
        verdicts.append(verdict)
    edits.sort(key=lambda e: (e["start"], e["end"]))
    edits.extend(wrapper_edits)           # last: it closes around everything before it
    edits = _merge_inserts(edits)
    new_text = apply_edits(text, edits)
    if not validate(new_text, dialect).ok:
        return _decided(new_text, edits, GUESS, "G02")
    if wrapped:
        # the indentation of a body at column 0 says nothing about where its forms end
        return _decided(new_text, edits, GUESS, "G16")
    level = evidence.weakest(vd.level for vd in verdicts)
    decided = next((vd for vd in verdicts if vd.level == level), None)
    trace = decided.trace if decided is not None else ()
    rule = decided.rule if decided is not None else ""
    rivals = []
    for k, vd in enumerate(verdicts):
        if len(rivals) >= 3 or not vd.rivals:
            continue        # at most 3 verdicts get here: 100,000 stray closers stay linear
        # the other chunks' edits as they were, unmerged (`edits` merges closers inserted at
        # one place, which this chunk's own edits would no longer match)
        rest = [e for j, other in enumerate(verdicts) if j != k for e in other.edits]
        rivals.extend(_merge_inserts(sorted(rest + r + wrapper_edits,
                                            key=lambda e: (e["start"], e["end"])))
                      for r in vd.rivals)
    if not edits:
        return _decided(new_text, edits, GUESS, "G02", before=trace)
    return Repair(new_text, edits, level, rule, trace, rivals[:3])


MAX_STRING_TRIALS = 60        # strings tried for a missing closing quote (each a re-read)


def _close_string(text: str, dialect: str, reading) -> Repair | None:
    """A string whose closing quote is missing (a docstring left open on its line) swallows
    the code after it up to the next quote, and the reader reports the last string, left
    open at the end, far from the place. Each string that runs over a line break may be the
    one: its quote goes at the end of its first line. The places where the whole text then
    reads are weighed by the indentation (the lines after the string are code, indented as
    such): `likely` when exactly one agrees with every line and leaves no definition inside
    another or inside a string; a `guess` when several do; None when none does (a string
    that swallows `(def b ...` at column 0 is no place, and the reader's report stands).
    """
    tokens = reading.tokens
    trials = []
    for j, code in enumerate(tokens.codes):
        if code in "sS" and "\n" in text[tokens.starts[j]:tokens.ends[j]]:
            line_end = text.index("\n", tokens.starts[j])
            at = len(text[:line_end].rstrip(" \t\r"))
            if at > tokens.starts[j] + 1:          # not right after the opening quote
                trials.append(at)
    if len(trials) > MAX_STRING_TRIALS:
        return None
    scored = []
    for at in trials:
        edits = [{"start": at, "end": at, "text": '"'}]
        fixed = apply_edits(text, edits)
        if not read(fixed, dialect).ok:
            continue
        fixed_tokens = read(fixed, dialect).tokens
        toks = _annotate(fixed, fixed_tokens, dialect)
        bad = sum(_misindented(c) for c in _chunks(toks)) + \
            2 * len(misplaced_forms(fixed, dialect)) + \
            2 * _swallowed_forms(fixed, fixed_tokens)
        scored.append((bad, at, edits, fixed))
    if not scored:
        return None
    scored.sort(key=lambda s: s[0])
    bad, _, edits, fixed = scored[0]
    rivals = [s[2] for s in scored[1:] if s[0] == bad][:3]
    if bad:
        return None         # no place the code agrees with: the reader's own report stands
    if not rivals:
        return _decided(fixed, edits, LIKELY, "L05")
    return _decided(fixed, edits, GUESS, "G17", rivals=rivals)


def _swallowed_forms(text: str, tokens) -> int:
    """Lines inside strings that start a form at column 0: a top-level form swallowed by a
    string, which the indentation of code says nothing about (the string hides it)."""
    n = 0
    for j, code in enumerate(tokens.codes):
        if code in "sS":
            n += text.count("\n(", tokens.starts[j], tokens.ends[j])
    return n


def _is_wrapper(chunk: list[_Tok]) -> bool:
    """A chunk left open whose outer form has at most two children, all starting on its first
    line. The second may run over several lines (`(macrolet ((def ...)\n ...))`) when it is
    complete and only the outer form is left open."""
    if _underflows(chunk) or _depth_after(chunk) <= 0:
        return False
    outer = next((k for k, t in enumerate(chunk) if t.code in "([{"), None)
    if outer is None:
        return False
    only_outer_open = _depth_after(chunk) == 1
    depth, children = 0, 0
    for t in chunk[outer + 1:]:
        if t.first and (depth == 0 or not only_outer_open):
            return False
        if depth == 0 and t.code not in ")]}":
            children += 1
        depth += 1 if t.code in "([{" else -1 if t.code in ")]}" else 0
    return children <= 2


def _owns_final_closer(wrapper: list[_Tok], last: list[_Tok]) -> bool:
    """Does the wrapper, left open by one form, own the closer that ends the text alone on
    a line at column 0 (while the last chunk reads balanced only thanks to it)?"""
    stack = []
    for t in wrapper:
        if t.code in "([{":
            stack.append(t.code)
        elif t.code in ")]}" and stack:
            stack.pop()
    end = last[-1]
    return (len(stack) == 1 and len(last) > 1 and end.first and end.col == 0
            and end.code == CLOSE_FOR[stack[0]] and _balanced(last))


def _close_wrapper(text: str, chunk: list[_Tok], toks: list[_Tok]) -> list[dict]:
    """The closers of a wrapper left open, after `toks` (its last form, or the text)."""
    stack = []
    for t in chunk:
        if t.code in "([{":
            stack.append(t)
        elif t.code in ")]}" and stack:
            stack.pop()
    # after the last code token of the text, or on the line of its own left empty for it
    holes = _closer_holes(text, toks, wrapper=True, alone=_alone(text, chunk))
    end = holes[-1][0] if holes else toks[-1].end
    return [{"start": end, "end": end, "text": "".join(CLOSE_FOR[o.code] for o in reversed(stack))}]


def _merge_inserts(edits: list[dict]) -> list[dict]:
    """One edit for closers inserted at the same place (`))` rather than `)` twice)."""
    out: list[dict] = []
    for e in edits:
        if out and e["start"] == e["end"] == out[-1]["start"] == out[-1]["end"]:
            out[-1] = {**out[-1], "text": out[-1]["text"] + e["text"]}
        else:
            out.append(dict(e))
    return out


# --- tokens with line information ----------------------------------------------------------------

def _annotate(text: str, tokens, dialect: str) -> list[_Tok]:
    """Code tokens (comments dropped) with their column and whether they start their line.

    One pass with the line start carried along (no per-token scan back to the line start,
    which would be quadratic on one long line); tabs count to the next multiple of 8.
    """
    out = []
    line_start, seen, prev_end = 0, 0, -1
    line_has_tab = "\t" in text[:text.find("\n") if "\n" in text else len(text)]
    for code, start, end in zip(tokens.codes, tokens.starts, tokens.ends):
        nl = text.rfind("\n", seen, start)
        if nl >= 0:
            line_start = nl + 1
            line_end = text.find("\n", line_start)
            line_has_tab = "\t" in text[line_start:line_end if line_end >= 0 else len(text)]
        seen = max(seen, start)
        first = prev_end < line_start
        prev_end = end
        if code in ";b":
            continue
        col = visual_width(text[line_start:start]) if line_has_tab else start - line_start
        out.append(_Tok(code, start, end, first, col))
    return out


def _chunks(toks: list[_Tok]) -> list[list[_Tok]]:
    """Cut at tokens that start a line at column 0 (not closers, not strings); glue a chunk to
    the one before it when that one is left open and this one starts by closing (odd
    indentation). A string in column 0 is no form's start: it is a docstring some libraries
    write there (`(define-class-with-docs <c> ()` then `"The base class..."` at column 0), and
    cutting at it made the form's repair close it before its docstring, "certain"."""
    chunks: list[list[_Tok]] = []
    for t in toks:
        if not chunks or (t.first and t.col == 0 and t.code not in ")]}sS"):
            chunks.append([t])
        else:
            chunks[-1].append(t)
    # A form whose body has lines at column 0 (a `(progn` or `(comment` wrapper, `#+nil`
    # blocks) spans several chunks: one is left open and a later one closes too much. Glue
    # the open chunk and everything up to the one that underflows.
    # A glued chunk that still closes more than it opened closes a wrapper opened before
    # too (`#.(when p\n'(progn\n(defun ...)\n))`: the `'(progn` and the `#.(when` on lines of
    # their own): glue the chunk left open before it as well.
    merged: list[list[_Tok]] = []
    open_at: list[int] = []             # indexes in `merged` of the chunks left open
    for chunk in chunks:
        if open_at and _underflows(chunk):
            glued = [t for c in merged[open_at[-1]:] for t in c] + chunk
            del merged[open_at.pop():]
            while _depth_after(glued) < 0 and open_at:
                glued = [t for c in merged[open_at[-1]:] for t in c] + glued
                del merged[open_at.pop():]
            merged.append(glued)
            open_at = [len(merged) - 1] if _depth_after(glued) > 0 else []
            continue
        merged.append(chunk)
        if _depth_after(chunk) > 0 and not _underflows(chunk):
            open_at.append(len(merged) - 1)
    return merged


def _depths(chunk) -> tuple[int, int]:
    """The nesting depth after the chunk, and the lowest depth reached on the way."""
    depth = lowest = 0
    for t in chunk:
        if t.code in "([{":
            depth += 1
        elif t.code in ")]}":
            depth -= 1
            lowest = min(lowest, depth)
    return depth, lowest


def _depth_after(chunk) -> int:
    return _depths(chunk)[0]


def _underflows(chunk) -> bool:
    """A closer with nothing open: the chunk closes more than it opened at some point."""
    return _depths(chunk)[1] < 0


def _balanced(chunk) -> bool:
    stack = []
    for t in chunk:
        if t.code in "([{":
            stack.append(t.code)
        elif t.code in ")]}":
            if not stack or stack.pop() != OPEN_FOR[t.code]:
                return False
    return not stack


# --- one chunk -------------------------------------------------------------------------------------

def _repair_chunk(text: str, chunk: list[_Tok], dialect: str) -> evidence.Verdict:
    with evidence.walks():        # one walk per candidate, shared by the search and the rules
        return _search_and_weigh(text, chunk, dialect)


def _search_and_weigh(text: str, chunk: list[_Tok], dialect: str) -> evidence.Verdict:
    candidates = []
    holes = _closer_holes(text, chunk)

    comments = _comment_lines(text, chunk[-1].end, evidence.chunk_end(text, chunk))

    def final(stack):
        return _final_positions(text, chunk, stack, sorted(holes + comments))

    def blank_lines(start, end):
        return sorted(_blank_lines(text, start, end) + _comment_lines(text, start, end))

    plain = [_greedy(chunk, False, iom, final) for iom in (False, True)]
    # The forms a plain pass leaves open are those whose closers were dropped at the end;
    # letting the indentation close only those keeps a loosely indented line elsewhere in the
    # form from moving closers that were never missing.
    only_missing = [_greedy(chunk, True, iom, final, blank_lines=blank_lines,
                            only={e["_opener"] for e in p.edits if "_opener" in e})
                    for iom, p in zip((False, True), plain)]
    by_indent = [_greedy(chunk, True, iom, final, blank_lines=blank_lines)
                 for iom in (False, True)]
    runs = [(out, True) for out in only_missing + by_indent] + [(out, False) for out in plain]
    best_line_end = _best_line_end(chunk, plain[0])
    if best_line_end is not None:
        runs.append((best_line_end, True))     # last: it wins only when strictly better
    best_removal = _best_removal(text, chunk, plain[0])
    if best_removal is not None:
        # first: it is only found when it agrees better with the indentation than the plain
        # removal by parinfer's rule, which `_misindented` (the rank below) does not apply
        runs.insert(0, (best_removal, True))
    for out, indent in runs:
        fixed = _apply_to_chunk(text, chunk, out.edits, dialect)
        if fixed is None:
            continue
        balanced, misindented, _ = fixed
        # rank: reads, then fewest edits, then fewest lines against the indentation (the
        # original may itself be loosely indented: a smaller repair beats a tidier
        # reshuffle, and among equal ones the one that adds no odd line wins)
        candidates.append((not balanced, len(out.edits), misindented, out, indent))
    if not candidates:
        return evidence.decided(GUESS, [], "G02")
    candidates.sort(key=lambda c: c[:3])
    best = candidates[0]
    best_key = best[:3]
    # another candidate as good as the best, but with a different result: ambiguous
    rivals = [c for c in candidates[1:] if c[:3] == best_key and
              _edit_key(c[3].edits) != _edit_key(best[3].edits)]
    unbalanced, _, inconsistent, outcome, _ = best
    edits = outcome.edits
    if not (unbalanced or inconsistent):
        edits = _refine(text, chunk, edits, dialect)
    edits = [{k: v for k, v in e.items() if not k.startswith("_")} for e in edits]
    verdict = evidence.weigh(text, chunk, edits, dialect)
    if verdict.level == GUESS and verdict.trace[0].code == "G06":     # a shape it breaks
        verdict = _shape_keeping(text, chunk, candidates, verdict, dialect)
    if verdict.level != GUESS and _hole_by_style(text, chunk):
        return evidence.decided(GUESS, verdict.edits, "G18", rivals=verdict.rivals,
                                 before=verdict.trace)
    if verdict.level != GUESS:
        # the search itself may have found another repair that scores the same: a rival if
        # it passes the same tests
        for c in rivals:
            other = [{k: v for k, v in e.items() if not k.startswith("_")} for e in c[3].edits]
            if evidence.also_fits(text, chunk, other, verdict.edits, dialect):
                return evidence.decided(GUESS, verdict.edits, "G19", rivals=[other],
                                         before=verdict.trace)
    return verdict


def _shape_keeping(text, chunk, candidates, verdict, dialect):
    """The best repair breaks a shape: the search's other candidates (ranked as before:
    reads, fewest edits, fewest lines against the indentation) that keep every shape, if
    one agrees better with the indentation than what `evidence.weigh` found instead (a
    closer moved mid-line or to an earlier line, which may add a line against it), or that
    found nothing: a guess either way. A loosely indented form (`(and (p x)` with the next
    clause indented left of the `and`) makes the indentation's placement `(and (p x))`, and
    the one line it leaves the author's way is only found by moving a closer to a line
    before, mid-line; the shapes say the closers were all at the end, where a line as
    loose as that one is left too. Of equally many lines against the indentation, the
    placement with fewer closers mid-line wins: the indentation says nothing there."""
    def cost(edits):
        # lines against the indentation, then closers put mid-line (where it says nothing)
        bad = evidence.disagreements_if_kept(text, chunk, edits, dialect)
        return None if bad is None else \
            (bad, sum(not evidence.in_trail(text, chunk, e) for e in edits))

    found = cost(verdict.edits)
    for unbalanced, size, _, outcome, _ in candidates[1:]:
        if unbalanced or size > len(verdict.edits):
            continue
        edits = [{k: v for k, v in e.items() if not k.startswith("_")}
                 for e in outcome.edits]
        mine = cost(edits)
        if mine is not None and (found is None or mine < found) and \
                evidence.same_forms(text, chunk, edits, verdict.edits):
            return evidence.decided(GUESS, edits, "G20",
                                     rivals=[verdict.edits] + verdict.rivals[:2],
                                     before=verdict.trace)
    return verdict


def _best_line_end(chunk: list[_Tok], plain: _Outcome) -> _Outcome | None:
    """When one closer is missing, the line end where inserting it leaves the fewest lines
    against the indentation (the latest of equals).

    The indentation-driven pass closes every form a line starts left of, which in a loosely
    indented form adds edits elsewhere; a single closer dropped at a line end is better
    found by trying each line end and counting the lines that then disagree with it.
    """
    inserts = [e for e in plain.edits if e["start"] == e["end"]]
    if len(plain.edits) != 1 or len(inserts) != 1 or len(chunk) > MAX_REFINE_TOKENS:
        return None
    ends = [t.end for t, nxt in zip(chunk, chunk[1:]) if nxt.first]
    if len(ends) > MAX_POSITIONS:
        return None
    best = None
    for at in ends:
        trial = [{**inserts[0], "start": at, "end": at}]
        balanced, misindented = _check_virtual(chunk, trial)
        if balanced and (best is None or misindented <= best[0]):
            best = (misindented, trial)
    if best is None:
        return None
    return _Outcome(edits=best[1])


def _best_removal(text: str, chunk: list[_Tok], plain: _Outcome) -> _Outcome | None:
    """When one closer is one too many, the closer at the end of a line before one that
    disagrees with the indentation whose removal leaves the fewest such lines (the latest of
    equals), if fewer than removing the closer the plain pass found.

    A plain pass removes the closer that finds nothing open, the form's last; but a closer
    typed too early in the middle of a form ends a form there, and the lines after it, still
    indented as that form's body, say so (parinfer's rule: a line is not deeper than a form
    the closers just before it closed). As `_best_line_end` does for a dropped closer, try
    the closers of those lines' trails and count the lines that then disagree."""
    if len(plain.edits) != 1 or len(chunk) > MAX_REFINE_TOKENS:
        return None
    e = plain.edits[0]
    if e["start"] == e["end"] or e["text"]:
        return None
    edits = [{k: v for k, v in e.items() if not k.startswith("_")}]
    judged = evidence.judged(text, chunk, edits)
    if not judged.reads or not judged.disagreements:
        return None
    char = text[e["start"]:e["end"]]
    trials = [[{"start": t.start, "end": t.end, "text": ""}]
              for line in sorted(set(judged.bad_lines))[:MAX_ALTERNATIVES]
              for t in evidence.trail_closers(chunk, line - 1)
              if t.start < e["start"] and text[t.start:t.end] == char]
    best = (judged.disagreements, None)
    for trial in trials:
        j = evidence.judged(text, chunk, trial)
        if j.reads and j.forms == judged.forms and j.disagreements <= best[0] and \
                (best[1] is not None or j.disagreements < best[0]):
            best = (j.disagreements, trial)
    return None if best[1] is None else _Outcome(edits=best[1])


def _refine(text: str, chunk: list[_Tok], edits: list[dict], dialect: str):
    """Look for the same edit elsewhere on its line giving an equally good result.

    A missing closer could have sat after any token of the line where the indentation says
    it belongs; an extra closer could be any closer of its line. When another position also
    reads and agrees with the indentation, prefer one that gives the line the same shape as
    another line of the form (sibling clauses and bindings are written alike); otherwise keep
    the line end. (How sure the result is, is `evidence.weigh`'s to say.)
    """
    edits = list(edits)
    if len(edits) > MAX_ALTERNATIVES or len(chunk) > MAX_REFINE_TOKENS:
        return edits                      # too much to weigh: keep it
    for idx in range(len(edits)):
        e = edits[idx]
        if e["start"] != e["end"] and e["text"]:
            continue                      # a replaced closer: its rivals were weighed already
        alternatives = _alternatives(text, chunk, e)
        if len(alternatives) > MAX_POSITIONS:
            continue
        base = _apply_to_chunk(text, chunk, edits, dialect)
        options = []
        for alt in alternatives:
            trial = edits[:idx] + [alt] + edits[idx + 1:]
            balanced, misindented = _check_virtual(chunk, trial)
            if balanced and not misindented:
                piece = _apply_to_chunk(text, chunk, trial, dialect)[2]
                if piece != base[2]:
                    options.append((alt, piece))
            if len(options) > MAX_ALTERNATIVES:
                break
        if not options:
            continue
        line_start = text.rfind("\n", 0, e["start"]) + 1
        same_line = [alt for alt, _ in options if alt["start"] >= line_start]
        choice = _sibling_shape_choice(text, chunk, edits, idx, same_line)
        if choice is not None:
            edits[idx] = choice
    return edits


def _alternatives(text: str, chunk: list[_Tok], e: dict) -> list[dict]:
    """Every other place the same edit could go.

    An inserted closer could follow any token between its opener and where it was put (a
    closer dropped mid-line, or at the end of an earlier line, leaves text that reads the
    same way); a deleted closer could be any other closer of the same character.
    """
    if e["start"] == e["end"]:
        lo = e.get("_opener", chunk[0].start)
        return [{**e, "start": t.end, "end": t.end} for t in chunk
                if lo <= t.start and t.end < e["start"]]
    char = text[e["start"]:e["end"]]
    return [{"start": t.start, "end": t.end, "text": ""} for t in chunk
            if t.start != e["start"] and text[t.start:t.end] == char]


def _check_virtual(chunk: list[_Tok], edits: list[dict]) -> tuple[bool, int]:
    """(balanced, count of misindented lines) of the chunk after `edits`, without re-reading it.

    Same rules as `_balanced` and `_misindented`, on the token list with closers inserted,
    deleted or replaced; columns after a change on the same line shift by its length.
    """
    inserts: dict[int, list[str]] = {}
    deleted, replaced = set(), {}
    for e in edits:
        if e["start"] == e["end"]:
            inserts.setdefault(e["start"], []).extend(e["text"].strip())
        elif not e["text"]:
            deleted.add(e["start"])
        else:
            replaced[e["start"]] = e["text"]
    points = sorted(inserts)
    k = 0
    stack: list[tuple[str, int]] = []
    closed_once, misindented, shift = False, 0, 0

    def close(char: str) -> bool:
        nonlocal closed_once
        if not stack or CLOSE_FOR[stack[-1][0]] != char:
            return False
        stack.pop()
        if not stack:
            closed_once = True
        return True

    for t in chunk:
        while k < len(points) and points[k] <= t.start:
            for char in inserts[points[k]]:
                if not close(char):
                    return False, 1
                if not t.first:
                    shift += 1
            k += 1
        if t.first:
            shift = 0
        if t.start in deleted:
            shift -= t.end - t.start
            continue
        code = replaced.get(t.start, t.code)
        if t.first and code not in ")]}":
            if stack and stack[-1][1] >= t.col:
                misindented += 1
            elif not stack and closed_once:
                misindented += 1
        if code in "([{":
            stack.append((code, t.col + shift))
        elif code in ")]}":
            if not close(code):
                return False, 1
    for point in points[k:]:
        for char in inserts[point]:
            if not close(char):
                return False, 1
    return not stack, misindented


def _same_line_alternatives(text: str, chunk: list[_Tok], e: dict) -> list[dict]:
    """The same edit at the other plausible places of its line."""
    line_start = text.rfind("\n", 0, e["start"]) + 1
    if e["start"] == e["end"]:            # an insertion: after any earlier token of the line
        return [{"start": t.end, "end": t.end, "text": e["text"]} for t in chunk
                if line_start <= t.start and t.end < e["start"]]
    char = text[e["start"]:e["end"]]      # a deletion: any other same closer of the line
    line_end = text.find("\n", e["start"])
    line_end = len(text) if line_end < 0 else line_end
    return [{"start": t.start, "end": t.end, "text": ""} for t in chunk
            if line_start <= t.start < line_end and t.start != e["start"]
            and text[t.start:t.end] == char]


def _sibling_shape_choice(text, chunk, edits, idx, options):
    """The option for edits[idx] whose edited line looks like a neighbouring code line of the
    form (`evidence.line_shape`), if only it does."""
    def shape_matches(trial, at: int) -> bool:
        vt = evidence.virtual(text, chunk, trial)
        line = max((v.line for v in vt if not v.inserted and v.start < at), default=0)
        mine = evidence.line_shape(vt, line)
        # only telling shapes, and only the neighbouring code lines: sibling clauses and
        # bindings sit next to each other
        if not mine or not evidence.telling(mine):
            return False
        last = max(v.line for v in vt)
        before = next((x for k in range(line - 1, -1, -1)
                       if (x := evidence.line_shape(vt, k)) != ()), None)
        after = next((x for k in range(line + 1, last + 1)
                      if (x := evidence.line_shape(vt, k)) != ()), None)
        return mine in (before, after)

    e = edits[idx]
    if shape_matches(edits, e["start"]):
        return None
    matching = [alt for alt in options
                if shape_matches(edits[:idx] + [alt] + edits[idx + 1:], alt["start"])]
    return matching[0] if len(matching) == 1 else None


def _edit_key(edits) -> tuple:
    return tuple((e["start"], e["end"], e["text"]) for e in sorted(
        edits, key=lambda e: (e["start"], e["end"], e["text"])))


def _apply_to_chunk(text, chunk, edits, dialect):
    """(balanced, count of misindented lines, text) of the chunk after `edits`."""
    # the piece runs to the last edit too: closers put on lines of their own after the last
    # code token must not read the same as closers right after it
    start = chunk[0].start
    end = max([chunk[-1].end] + [e["end"] for e in edits])
    local = [{"start": e["start"] - start, "end": e["end"] - start, "text": e["text"]}
             for e in edits]
    piece = apply_edits(text[start:end], local)
    # keep the chunk's real columns: prefix with the text of its first line before it
    line_start = text.rfind("\n", 0, start) + 1
    lead = " " * (start - line_start)
    tokens, state = tokenize(lead + piece, dialect)
    toks = _annotate(lead + piece, tokens, dialect)
    return _balanced(toks), _misindented(toks), piece


def _misindented(toks: list[_Tok]) -> int:
    """How many lines disagree with the structure: a line inside a form must be indented deeper
    than each form still open around it, and nothing but the first form of a chunk starts
    with no form open. A count, not a yes/no: a loosely indented original has a few such
    lines whatever the repair, and the right repair adds none."""
    stack: list[int] = []          # columns of open openers
    closed_once = False
    bad = 0
    for t in toks:
        if t.first and t.code not in ")]}":
            if stack and stack[-1] >= t.col:
                bad += 1
            elif not stack and closed_once:
                bad += 1
        if t.code in "([{":
            stack.append(t.col)
        elif t.code in ")]}":
            if stack:
                stack.pop()
            if not stack:
                closed_once = True
    return bad


@dataclass
class _Open:
    tok: _Tok


def _blank_lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(offset of its end, column) of each blank line that keeps an indentation, among the
    lines that start after `start` and end by `end`.

    A closer alone on its line leaves such a line behind when it is dropped."""
    out = []
    line_start = text.find("\n", start, end) + 1
    while line_start > 0:
        line_end = text.find("\n", line_start, end)
        line = text[line_start:line_end if line_end >= 0 else end]
        if line_end < 0 and end < len(text):
            break                         # the line goes on past `end`: not blank
        if line and line.strip(" \t") == "":
            out.append((line_start + len(line), visual_width(line)))
        line_start = line_end + 1
    return out


_COMMENT_LINE = re.compile(r"^([ \t]*)#\|[^\n]*?\|#[ \t]*$", re.M)


def _comment_lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(offset of its end, column) of each line between `start` and `end` (code tokens: only
    blanks and comments between them) that holds a block comment alone, indented deeper than
    a list: its closer came after it (`()\n  #|:derive-type ...|#)`: all ten of SBCL's such
    lines inside a list are). Like a blank line, closers go there (`_place_in_holes`)."""
    return [(m.end(), visual_width(m.group(1)))
            for m in _COMMENT_LINE.finditer(text, start, end)]


def _hole_by_style(text: str, chunk: list[_Tok]) -> bool:
    """Is the one blank line with blanks on it after the form, in a text with more than
    the form, the closers' line or the file's own only by the file's style
    (`_blanks_of_its_own`), with no sign in the form itself (`_closer_holes`)? In SBCL's,
    Guile's and Clojure's files, one in five such placements was wrong either way: a guess."""
    limit = evidence.chunk_end(text, chunk)
    if chunk[0].start == 0 and limit == len(text):
        return False                      # the form alone: nothing else leaves blanks
    end = chunk[-1].end
    holes = _blank_lines(text, end, limit)
    if len(holes) != 1 or any(t.first and t.code in ")]}" for t in chunk):
        return False
    between = text[end:holes[0][0]]
    return ";" not in between and "#|" not in between


def _closer_holes(text: str, chunk: list[_Tok], wrapper: bool = False,
                  alone: bool | None = None) -> list[tuple[int, int]]:
    """(offset, column) of the lines after the chunk's last code token where dropped closers
    most likely sat on lines of their own, up to the next line that starts in column 0
    (`evidence.chunk_end`).

    Blank lines that keep an indentation (see `_blank_lines`). The line after the last code
    line left empty counts as one at column 0 only with evidence that the form closes on a
    line of its own: its last code line ends with a comment, it has other lines that start
    with a closer, or it is a wrapper whose body sits at column 0. Otherwise a line break
    there is just the end of a form, and the closers go on the last code line.

    Before another form (not at the end of the text) a file often has a blank line of its
    own, spaces left on it or not: there blank lines count only in a form that has other
    lines starting with a closer, after a comment (ending the last code line or on lines
    of its own), or when there are two of them; or when the file has no other blank line
    with blanks on it (then only a guess, `_hole_by_style`); the empty line only after such
    a comment when two empty lines follow or the file puts none between forms
    (`_separates_forms`), or when two empty lines follow in a file that closes forms alone
    in column 0 (`_closes_alone`). Before all these, the file's other forms of the same kind
    (`_kin_close_alone`) decide, either way. At the end of a text of more than the form, only
    an empty line left before its final newline is a closer's line (a wrapper's aside).
    """
    end = chunk[-1].end
    limit = evidence.chunk_end(text, chunk)
    own_line_closers = any(t.first and t.code in ")]}" for t in chunk)
    last = limit == len(text)
    if alone is None:
        alone = _alone(text, chunk)
    nl = text.find("\n", end, limit)
    last_code_line = text[end:nl if nl >= 0 else limit]
    comment_ends_code_line = ";" in last_code_line or "#|" in last_code_line
    holes = _blank_lines(text, end, limit)
    # a comment line after the last code line, then a blank one: the closer came after the
    # comment (`;;(:use ...)\n  )`)
    comment_before_hole = bool(holes) and (";" in text[end:holes[0][0]] or
                                           "#|" in text[end:holes[0][0]])
    if not (own_line_closers or comment_before_hole or len(holes) > 1 or
            not _blanks_of_its_own(text, chunk[0].start, limit)):
        holes = []
    if wrapper and not holes and nl >= 0 and _INDENTED_COMMENT.match(text, nl + 1, limit):
        # `) ; end PROGN` without its closer: a comment indented after a body at column 0
        # stood after the wrapper's closer (47 such lines in SBCL's sources, and one comment
        # indented before a lone closer)
        return [(nl + 1, 0)]
    if not holes and nl >= 0 and (last and text.endswith("\n") or text[nl + 1] == "\n"):
        two_empty = not last and text.startswith("\n", nl + 2)
        kin = None if wrapper else _kin_close_alone(text, chunk)
        # a closer dropped alone on a file's last line leaves an empty line before the
        # file's final newline; `name\n` at the end of more than the form ended `name)\n`
        # (a wrapper whose body sits at column 0 closes alone, final newline or not)
        room = not last or alone or wrapper or text.startswith("\n", nl + 1)
        after_comment = comment_ends_code_line and \
            (last or two_empty or not _separates_forms(text))
        # a library is a file, which ends with a newline: only an empty line before it
        # says the closer stood alone (a library alone in its file is no lone form)
        library = _wraps_library(text, chunk) and text.startswith("\n", nl + 1)
        by_style = (last and (own_line_closers or wrapper or library)) or \
            (two_empty and (_closes_alone(text) or wrapper))
        if (kin and room) or (kin is None and (after_comment or (room and by_style))):
            # the first empty line before the next form, or the text's last line; a file
            # ends with a newline, so when more than the form ends in an empty line, the
            # closer's line is the one before that newline (a lone form ends where its
            # last line does, but a library is a file), unless the file's forms of its kind
            # close right after their last line
            holes.append((nl + 1 if not last or kin else len(text) - 1
                          if text.endswith("\n\n") and (not alone or library) else len(text), 0))
    return holes


_BLANK_LINE = re.compile(r"^[ \t]+\r?$", re.M)
_INDENTED_COMMENT = re.compile(r"[ \t]+(?:;|#\|)")
_FORM_START = re.compile(r"^[(\[{]", re.M)


# forms that hold a whole library, as a file's namespace: half of Guile's R6RS libraries
# close alone in column 0 (`  (define (f x) ...))\n)`), and none of the others is followed
# by an empty line at the file's end, which is what one closed alone leaves when it loses
# its closer
_LIBRARY_WRAPPERS = frozenset({"library", "define-library"})


def _wraps_library(text: str, chunk: list[_Tok]) -> bool:
    """Is the chunk an R6RS `library` or R7RS `define-library` form starting in column 0?"""
    return len(chunk) > 1 and chunk[0].col == 0 and chunk[0].code == "(" and \
        text[chunk[1].start:chunk[1].end] in _LIBRARY_WRAPPERS


def _alone(text: str, chunk: list[_Tok]) -> bool:
    """Does no top-level form start before the chunk (comments and `#+nil` aside)?"""
    return _FORM_START.search(text, 0, chunk[0].start) is None


def _blanks_of_its_own(text: str, start: int, limit: int) -> bool:
    """Does the text before `start` (the damaged form) or from `limit` (the next form) have
    blank lines with blanks left on them? Then one after the form is as likely the file's
    own as the line of a dropped closer."""
    return _BLANK_LINE.search(text, 0, start) is not None or \
        _BLANK_LINE.search(text, limit) is not None


_FORM_AFTER_EMPTY = re.compile(r"[)\]}][ \t]*(?:;[^\n]*)?\n[ \t]*\r?\n[(\[{]")
_FORM_AFTER_FORM = re.compile(r"[)\]}][ \t]*(?:;[^\n]*)?\n[(\[{]")


@lru_cache(maxsize=8)
def _separates_forms(text: str) -> bool:
    """Does the text put an empty line between a form's end and the next form at least as
    often as it starts the next one right after? Then a form's last line ending with a
    comment (`(g x)) ; done`) and one empty line before the next form is how the file
    writes it, not the place of a closer dropped after the comment (which leaves two)."""
    return len(_FORM_AFTER_EMPTY.findall(text)) >= len(_FORM_AFTER_FORM.findall(text))


# a closer alone in column 0 after an indented line: a wrapper whose body sits at column 0
# (a Clojure `(comment` block at a file's end) closes alone whatever the file's style
_ALONE = re.compile(r"^[ \t]+\S[^\n]*\n[)\]}][ \t]*\r?$", re.M)
_AFTER_CODE = re.compile(r"^[ \t]*[^\s;]", re.M)      # a later line with code on it
_TWO_EMPTY = re.compile(r"\n\r?\n\r?\n[^\s]")


@lru_cache(maxsize=8)
def _closes_alone(text: str) -> bool:
    """Does the text close top-level forms with a closer alone in column 0 (`  (newline)\n)`)
    at least as often as it puts two empty lines before a line in column 0 (a form, a
    comment)? Then two empty lines after a
    form, where one is the file's own, are the line its dropped closer stood on. Only a
    closer after an indented line counts, and not the one that ends the text: one after a
    line at column 0 closes a wrapper (`(comment\n(f 1)\n)`), and so, most often, does a
    file's last closer alone (a `(comment` block at its end, closed alone so that forms can
    be added above it): neither says how the file closes its definitions."""
    ends = [m.end() for m in _ALONE.finditer(text)]
    alone = len(ends) - (bool(ends) and not _AFTER_CODE.search(text, ends[-1]))
    return alone > 0 and alone >= len(_TWO_EMPTY.findall(text))


@lru_cache(maxsize=8)
def _top_form_ends(text: str) -> list[tuple[int, str, bool | None]]:
    """(start, head, closes alone) of each form of more than one line that starts a line in
    column 0 with a symbol (`evidence.top_forms`): is its last code line (comments and
    blank lines after it aside) only closers in column 0 (True) or code (False)? None for a
    closer indented alone."""
    out = []
    for start, limit, head in evidence.top_forms(text):
        lines = [code for code in (line.split(";", 1)[0].rstrip()
                                   for line in text[start:limit].split("\n")) if code.strip()]
        if head and len(lines) > 1:
            last = lines[-1]
            out.append((start, head, False if last.strip(" \t)]}") else
                        True if last[0] in ")]}" else None))
    return out


def _kin_close_alone(text: str, chunk: list[_Tok]) -> bool | None:
    """Do the file's other forms with the form's head (`define`, `run-test`) close alone in
    column 0 (True) or on their last line (False), at least four in five of them that do
    either? None with fewer than two such or no such majority. Guile's SXML tests close
    each `(let` alone and each `(define` on its last line, in one file: a file's habit is
    its kind of form's."""
    if chunk[0].col != 0 or len(chunk) < 2:
        return None
    head = text[chunk[1].start:chunk[1].end]
    kin = [alone for start, h, alone in _top_form_ends(text)
           if h == head and start != chunk[0].start]
    alone, inline = kin.count(True), kin.count(False)
    return True if alone >= 2 and alone >= 4 * inline else \
        False if inline >= 2 and inline >= 4 * alone else None


def _final_positions(text: str, chunk: list[_Tok], stack: list, holes) -> list[int]:
    """Where each form still open at the end of the chunk closes, innermost first.

    After the last code token, or in the holes after it (see `_place_in_holes`). Trailing
    blanks on that line (`(f x) )))`) say the closers of the forms opened on the last line
    came before the blanks and the others after them: at the end of the text; before
    another form only in a file that ends lines with `) )))` at least as often as with
    closers and trailing blanks (which files have of their own after a form's closers), or
    in a form that puts blanks before closers elsewhere (`generator-fn ] ]`).
    """
    end = chunk[-1].end
    nl = text.find("\n", end)
    line_end = len(text) if nl < 0 else nl
    tail = text[end:line_end]
    if not holes and tail and tail.strip(" \t") == "" and \
            (nl < 0 or _spaced_closers(text) or _spaces_its_closers(text, chunk)):
        line_start = text.rfind("\n", 0, end) + 1
        return [end if o.tok.start >= line_start else line_end for o in reversed(stack)]
    return _place_in_holes(end, stack, holes)


def _spaces_its_closers(text: str, chunk: list[_Tok]) -> bool:
    """Does the form itself put a blank before a closer in the middle of a line (`[ [ char
    params ] ]`)? Then the blank at the end of its last line is that author's too, before
    the closers that were dropped after it."""
    return any(t.code in ")]}" and not t.first and text[t.start - 1:t.start] in (" ", "\t")
               for t in chunk)


_SPACED_RUN = re.compile(r"[)\]}][ \t]+[)\]}]+\r?$", re.M)
_TRAILING_BLANKS = re.compile(r"[)\]}][ \t]+\r?$", re.M)


@lru_cache(maxsize=8)
def _spaced_closers(text: str) -> bool:
    """Does the text end lines with closers a blank apart (`x)) )))`) at least as often as
    with closers followed by blanks and nothing else?"""
    spaced = len(_SPACED_RUN.findall(text))
    return spaced > 0 and spaced >= len(_TRAILING_BLANKS.findall(text))


def _place_in_holes(end: int, stack: list, holes) -> list[int]:
    """Where each form of `stack` closes, innermost first: after the code token ending at
    `end`, or in one of the blank lines after it that dropped closers left (`holes`).

    A closer alone on its line closes forms opened left of its column (the top-level form at
    column 0), so each form goes to the last hole right of its opener, or right after the code
    when none is (a form opened further right closed on the code line, before the holes).
    """
    out, pos = [], end
    for o in reversed(stack):
        fits = [at for at, col in holes if o.tok.col < col or col == o.tok.col == 0]
        if fits:
            pos = max(pos, fits[-1])
        out.append(pos)
    return out


def _greedy(chunk: list[_Tok], indent: bool, insert_on_mismatch: bool,
            final=None, only: set[int] | None = None, blank_lines=None) -> _Outcome:
    """One pass over the chunk that keeps a stack and fixes what it meets.

    indent: close forms where a line starts at or left of their opener's column (the closer
    goes right after the previous code token); else only at the end.
    insert_on_mismatch: at a wrong closer whose kind matches the opener below the top, insert
    the top's closer before it (a dropped closer) instead of replacing it (a wrong kind).
    only: the openers (by start offset) the indentation may close; None for all.
    final: stack -> where each form still open at the end closes (innermost first).
    blank_lines: (start, end) -> the blank lines between where the indentation closes forms
    (closers dropped from lines of their own go there).
    """
    out = _Outcome()
    stack: list[_Open] = []
    last_end = chunk[0].start

    def close_top(at: int) -> None:
        o = stack.pop()
        out.edits.append({"start": at, "end": at, "text": CLOSE_FOR[o.tok.code],
                          "_opener": o.tok.start})

    for t in chunk:
        c = t.code
        if indent and t.first and c not in ")]}":
            k = len(stack)
            while k and stack[k - 1].tok.col >= t.col and (
                    only is None or stack[k - 1].tok.start in only):
                k -= 1
            if k < len(stack):
                holes = blank_lines(last_end, t.start) if blank_lines else []
                for at in _place_in_holes(last_end, stack[k:], holes):
                    close_top(at)
        if c in "([{":
            stack.append(_Open(t))
        elif c in ")]}":
            if not stack:
                out.edits.append({"start": t.start, "end": t.end, "text": ""})
                continue
            want = CLOSE_FOR[stack[-1].tok.code]
            if c != want:
                below = stack[-2].tok.code if len(stack) >= 2 else None
                if insert_on_mismatch and below and CLOSE_FOR[below] == c:
                    close_top(t.start)                   # the dropped closer goes here
                else:
                    out.edits.append({"start": t.start, "end": t.end, "text": want})
            stack.pop()
        last_end = t.end
    # forms still open at the end: where `final(stack)` says (innermost first), else at the end
    positions = final(stack) if final is not None else [last_end] * len(stack)
    for at in positions:
        close_top(at)
    return out
