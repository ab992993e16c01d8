"""The repair's rules, declared: each a code, a name, the level it gives and what it says.

As ruff's and clj-kondo's rules are: every verdict `repair` reaches names the rule that decided
it (`Repair.rule`), so `lispshell check --diff` says which rule fired (`[L01
indentation-decides]`), `lispshell check --explain CODE` prints its page, and
`bench/repair_corpus.py` counts per rule how often it decided and how often it was wrong
(`--disable CODE` turns a rule's writes into guesses, to measure what it is worth).

Codes: C certain (written by `check --fix`), L likely (written by `--fix=likely`, the form tools
and the Claude Code hook), G guess (never written unattended: offered with its rivals). A rule
whose level is `likely` may still give `guess` where the same test finds a second place (L03).

Measured precision is in docs/check-and-repair.md, per class of damage; the rules' own
per-rule figures are `bench/repair_corpus.py --per-rule`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    level: str            # the level it gives: certain, likely or guess
    summary: str          # what it checks, one sentence
    example: str = ""     # damaged text it decides, as `in` -> `out`


RULES: dict[str, Rule] = {r.code: r for r in (
    Rule("C00", "text-reads", "certain",
         "The text reads as it is: nothing to repair."),
    Rule("C01", "only-edit-reads", "certain",
         "A one-edit repair, and no other one-edit repair of the form reads (and no form is "
         "left an impossible shape).",
         "(defn f [x]\\n  (let [y (inc x))  ->  (let [y (inc x)]"),
    Rule("L01", "indentation-decides", "likely",
         "Every inserted or removed closer sits in a line's closer trail, the result agrees "
         "with every line's indentation, keeps every shape, and no other trail placement does "
         "all that.",
         "(defun gamma (x)\\n  (- x 33)  ->  (- x 33))"),
    Rule("L02", "shapes-decide", "likely",
         "The indentation's placement leaves a form of an impossible shape, and exactly one "
         "other place on the line keeps every shape."),
    Rule("L03", "space-after-opener", "likely",
         "A blank right after an opener (`(fn [ body`): nobody types it, a closer was dropped "
         "there; a guess when two such places fit or the shapes do not decide."),
    Rule("L04", "stray-after-complete-form", "likely",
         "One closer too many after a complete form, and no other removal agrees better with "
         "the indentation."),
    Rule("L05", "string-quote-at-line-end", "likely",
         "A string left open: its closing quote at the end of its first line is the only "
         "place after which the code reads and agrees with the indentation."),
    Rule("L06", "indentation-over-a-midline-tie", "likely",
         "L01's test passes, and so does a place mid-line on the same line (it reads, agrees "
         "with the indentation and keeps every shape): the line end is taken, as the closers "
         "dropped at a form's end mostly were, but a closer dropped mid-line reads the same."),
    Rule("G01", "too-much-to-weigh", "guess",
         "More edits or tokens than the weighing looks at."),
    Rule("G02", "nothing-reads", "guess",
         "No repair found that reads."),
    Rule("G03", "shape-lines-alike", "guess",
         "The shapes pick a place, but the lines before it, written alike, pick another."),
    Rule("G04", "shape-if-else", "guess",
         "The shapes pick a place that leaves an `if` without the else a second closer moved "
         "on the line gives it."),
    Rule("G05", "shape-library-together", "guess",
         "The one move breaks a library function's argument count; closers moved together "
         "keep it."),
    Rule("G06", "form-shape", "guess",
         "The indentation's placement leaves an impossible shape and the shapes do not single "
         "out another place."),
    Rule("G07", "closer-mid-line", "guess",
         "A closer in the middle of a line: indentation cannot place it."),
    Rule("G08", "disagrees-with-indentation", "guess",
         "The repaired form disagrees with the indentation."),
    Rule("G09", "another-placement-fits", "guess",
         "Another placement of a closer fits the indentation as well."),
    Rule("G10", "blanks-inside-lists", "guess",
         "A space after an opener, but the author writes blanks inside lists elsewhere too."),
    Rule("G11", "open-tail-tie", "guess",
         "Several closers missing after the last one left: one may have stood earlier on its "
         "line, which reads, agrees and keeps every shape as well; a tie-break chooses."),
    Rule("G12", "library-call-choice", "guess",
         "The library calls an operator with nothing where the line end gives it arguments "
         "(or the text's other calls give two closers mid-line): a guess of the two."),
    Rule("G13", "stray-earlier-one", "guess",
         "The closer one too many may be an earlier one."),
    Rule("G14", "not-a-delimiter-problem", "guess",
         "The text does not read for another reason than its delimiters."),
    Rule("G15", "too-many-strays", "guess",
         "More closers that close nothing than the repair takes on."),
    Rule("G16", "body-at-column-0", "guess",
         "A wrapper (`progn`, `eval-when`, `comment`) whose body sits at column 0: the "
         "indentation says nothing about where its forms end."),
    Rule("G17", "string-quote-ambiguous", "guess",
         "A string left open, and the indentation does not single out where its quote goes."),
    Rule("G18", "blank-line-style", "guess",
         "A blank line with blanks on it after the form: a dropped closer's line, or the "
         "file's own style."),
    Rule("G19", "two-repairs-fit", "guess",
         "The search found two repairs that pass the same tests."),
    Rule("G20", "shape-keeping-placement", "guess",
         "A placement the indentation ranks lower keeps every shape the chosen one breaks."),
)}

WRITES = ("certain", "likely")

# What writes without the person (the Claude Code hook, the form tools' repair of the model's
# source) asks of a rule: at most 1 wrong in 100 of its writes on code no rule was developed
# on. Measured by `.venv/bin/python bench/repair_corpus.py --corpus untuned --per-class 300
# --no-parinfer --seed 1 --per-rule` (cases decided, wrong among them); a likely rule not
# measured there does not write unattended. `check --fix=likely` is the person's own choice
# and writes every likely repair.
UNATTENDED_BAR = 0.01
MEASURED = {"C01": (409, 0), "L01": (1258, 6), "L02": (233, 13), "L03": (20, 0),
            "L04": (9, 0), "L06": (1540, 118)}


def unattended(code: str) -> bool:
    """May a repair this rule decided be written with no one asked?"""
    rule = RULES.get(code)
    if rule is None or rule.level == "guess" or code in DISABLED:
        return False
    if rule.level == "certain":
        return True
    decided, wrong = MEASURED.get(code, (0, 0))
    return decided > 0 and wrong <= UNATTENDED_BAR * decided
# Rules whose certain and likely repairs are turned into guesses (bench/repair_corpus.py
# --disable CODE measures what a rule is worth); empty in use.
DISABLED: set[str] = set()


def explain(code: str) -> str:
    """The page `lispshell check --explain CODE` prints."""
    rule = RULES.get(code.strip().upper())
    if rule is None:
        raise KeyError(code)
    lines = [f"{rule.code} {rule.name} ({rule.level})", "", rule.summary]
    if rule.example:
        lines += ["", "Example: " + rule.example.replace("\\n", "\n  ")]
    if rule.level == "guess":
        written = "never written unattended: offered with its rivals"
    elif rule.level == "certain":
        written = "written by `check --fix`, `--fix=likely`, the form tools and the hook"
    elif unattended(rule.code):
        written = "written by `check --fix=likely`, the form tools and the hook"
    else:
        written = ("written by `check --fix=likely` only: its precision on code no rule was "
                   "developed on is under the bar for writing with no one asked, so the form "
                   "tools and the hook offer it instead")
    lines += ["", f"Its repairs are {written}."]
    if rule.code in MEASURED:
        decided, wrong = MEASURED[rule.code]
        lines.append(f"Measured on the untuned corpus: {wrong} wrong of {decided} "
                     f"({100 * wrong / decided:.2f}%).")
    return "\n".join(lines)


def label(code: str) -> str:
    """`[L01 indentation-decides]`, for one line of output."""
    rule = RULES.get(code)
    return f"[{code} {rule.name}]" if rule else ""
