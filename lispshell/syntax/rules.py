"""The repair's rules, declared: each a code, a name, the stage it acts in, the level it gives,
what it checks and what it says.

As ruff's and clj-kondo's rules are: every verdict `repair` reaches names the rule that decided
it (`Repair.rule`), so `lispshell check --diff` says which rule fired (`[L01
indentation-decides]`), `lispshell check --explain CODE` prints its page, and
`bench/repair_corpus.py` counts per rule how often it decided and how often it was wrong
(`--disable CODE` turns a rule's writes into guesses, to measure what it is worth).

Contract of the trace: a verdict carries the rules that fired on it, in the order they fired
(`Step`: a code and the detail the rule names, such as the shape it found broken), and its
`why` is `why(trace)`, each step's `because` text joined: nothing else writes a reason. The
deciding rule (`Repair.rule`) is in the trace; the others are the steps that led to it (a
form shape found broken before the rule that demoted it) or that chose among ties after it.

Codes and stages: C certain (written by `check --fix`), L promote to likely (written by
`--fix=likely`, and by the form tools and the Claude Code hook when `unattended`), G demote:
the reasons a repair stays a guess (never written unattended: offered with its rivals), T
tie-break: among repairs that tie, which one is offered (the level stays a guess). A rule
whose level is `likely` may still give `guess` where the same test finds a second place (L03).

Measured precision is in docs/check-and-repair.md, per class of damage; the rules' own
per-rule figures are `bench/repair_corpus.py --per-rule`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

STAGES = {"C": "certain", "L": "promote", "G": "demote", "T": "tie-break"}
TOO_MANY = "too many delimiter problems to repair"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    level: str            # the level it gives: certain, likely or guess
    summary: str          # what it checks, one sentence
    example: str = ""     # damaged text it decides, as `in` -> `out`
    because: str = ""     # its part of a verdict's `why`; `{}` takes the step's detail

    @property
    def stage(self) -> str:
        return STAGES[self.code[0]]


class Step(NamedTuple):
    """One rule that fired on a verdict, and what it names (a broken shape, a count)."""
    code: str
    detail: str = ""


def why(trace) -> str:
    """A verdict's reason, from its trace: each step's `because`, in the order they fired.
    A step `("off", CODE)` says the deciding rule was turned off (`DISABLED`)."""
    parts = []
    for step in trace:
        if step.code == "off":
            parts[-1:] = [f"{parts[-1] if parts else ''} (rule {step.detail} is disabled)"]
            continue
        text = RULES[step.code].because
        parts.append(text.format(step.detail) if "{}" in text else text)
    return "; ".join(parts)


RULES: dict[str, Rule] = {r.code: r for r in (
    Rule("C00", "text-reads", "certain",
         "The text reads as it is: nothing to repair.",
         because="the text reads"),
    Rule("C01", "only-edit-reads", "certain",
         "A one-edit repair, and no other one-edit repair of the form reads (and no form is "
         "left an impossible shape).",
         "(defn f [x]\\n  (let [y (inc x))  ->  (let [y (inc x)]",
         because="no other one-edit repair reads"),
    Rule("L01", "indentation-decides", "likely",
         "Every inserted or removed closer sits in a line's closer trail, the result agrees "
         "with every line's indentation, keeps every shape, and no other trail placement does "
         "all that.",
         "(defun gamma (x)\\n  (- x 33)  ->  (- x 33))",
         because="the indentation decides"),
    Rule("L02", "shapes-decide", "likely",
         "The indentation's placement leaves a form of an impossible shape, and exactly one "
         "other place on the line keeps every shape.",
         because="the shapes decide: the indentation's placement breaks one ({}), and so "
                 "does every other place on the line but this one"),
    Rule("L03", "space-after-opener", "likely",
         "A blank right after an opener (`(fn [ body`): nobody types it, a closer was dropped "
         "there; a guess when two such places fit or the shapes do not decide.",
         because="a space after an opener: the closer dropped there"),
    Rule("L04", "stray-after-complete-form", "likely",
         "One closer too many after a complete form, and no other removal agrees better with "
         "the indentation.",
         because="a closer after a complete form; no other removal agrees better with the "
                 "indentation"),
    Rule("L05", "string-quote-at-line-end", "likely",
         "A string left open: its closing quote at the end of its first line is the only "
         "place after which the code reads and agrees with the indentation.",
         because="a string left open: its closing quote at the end of its first line is the "
                 "only place after which the code reads and agrees with the indentation"),
    Rule("L06", "indentation-over-a-midline-tie", "likely",
         "L01's test passes, and so does a place mid-line on the same line (it reads, agrees "
         "with the indentation and keeps every shape): the line end is taken, as the closers "
         "dropped at a form's end mostly were, but a closer dropped mid-line reads the same.",
         because="the indentation decides, though a place mid-line on the same line fits as "
                 "well"),
    Rule("G01", "too-much-to-weigh", "guess",
         "More edits or tokens than the weighing looks at.",
         because="too much to weigh"),
    Rule("G02", "nothing-reads", "guess",
         "No repair found that reads.",
         because="no repair found that reads"),
    Rule("G03", "shape-lines-alike", "guess",
         "The shapes pick a place, but the lines before it, written alike, pick another (or "
         "are written like the indentation's placement).",
         because="the lines before it, written alike, {}"),
    Rule("G04", "shape-if-else", "guess",
         "The shapes pick a place that leaves an `if` without the else a second closer moved "
         "on the line gives it.",
         because="a second closer moved on the line gives an `if` its else, which it has far "
                 "more often than not"),
    Rule("G05", "shape-library-together", "guess",
         "The one move breaks a library function's argument count; closers moved together "
         "keep it.",
         because="the library's argument counts choose closers moved together"),
    Rule("G06", "form-shape", "guess",
         "The indentation's placement leaves a form of an impossible shape: the first step of "
         "the shape rules (L02, G03-G05, G20), and a guess by itself when the shapes do not "
         "single out another place.",
         because="form shape: {}"),
    Rule("G07", "closer-mid-line", "guess",
         "A closer in the middle of a line: indentation cannot place it.",
         because="a closer in the middle of a line: indentation cannot place it"),
    Rule("G08", "disagrees-with-indentation", "guess",
         "The repaired form disagrees with the indentation.",
         because="the result disagrees with the indentation"),
    Rule("G09", "another-placement-fits", "guess",
         "Another placement of a closer fits the indentation as well.",
         because="another placement fits the indentation as well"),
    Rule("G10", "blanks-inside-lists", "guess",
         "A space after an opener, but the author writes blanks inside lists elsewhere too.",
         because="a space after an opener, and the author writes blanks inside lists "
                 "elsewhere too (before a closer, after another opener)"),
    Rule("G11", "open-tail-tie", "guess",
         "Several closers missing after the last one left: one may have stood earlier on its "
         "line, which reads, agrees and keeps every shape as well; a tie-break chooses.",
         because="the closers after the last one left are all missing, and one of them may "
                 "have stood earlier on its line: that reads, agrees with the indentation and "
                 "keeps every shape as well"),
    Rule("G12", "library-call-choice", "guess",
         "The library calls an operator with nothing where the line end gives it arguments "
         "(or the text's other calls give two closers mid-line): a guess of the two.",
         because="the closers after the last one left are all missing, and the indentation "
                 "places them at the line's end"),
    Rule("G13", "stray-earlier-one", "guess",
         "The closer one too many may be an earlier one.",
         because="the closer one too many may be an earlier one: removing that agrees better "
                 "with the indentation"),
    Rule("G14", "not-a-delimiter-problem", "guess",
         "The text does not read for another reason than its delimiters.",
         because="not a delimiter problem"),
    Rule("G15", "too-many-strays", "guess",
         "More closers that close nothing than the repair takes on.",
         because=TOO_MANY + " ({}): fix the first ones and repair again"),
    Rule("G16", "body-at-column-0", "guess",
         "A wrapper (`progn`, `eval-when`, `comment`) whose body sits at column 0: the "
         "indentation says nothing about where its forms end.",
         because="a form whose body sits at column 0"),
    Rule("G17", "string-quote-ambiguous", "guess",
         "A string left open, and the indentation does not single out where its quote goes.",
         because="a string left open: the indentation does not single out where it closes"),
    Rule("G18", "blank-line-style", "guess",
         "A blank line with blanks on it after the form: a dropped closer's line, or the "
         "file's own style.",
         because="a blank line with blanks on it after the form: a dropped closer's line or "
                 "the file's own, only the file's style says"),
    Rule("G19", "two-repairs-fit", "guess",
         "The search found two repairs that pass the same tests.",
         because="two repairs fit as well"),
    Rule("G20", "shape-keeping-placement", "guess",
         "A placement the indentation ranks lower keeps every shape the chosen one breaks.",
         because="a placement the indentation ranks lower keeps every shape"),
    # tie-breaks, in the order they are tried (evidence._choose): the first that prefers a
    # tie over the indentation's placement chooses what a guess offers
    Rule("T01", "library-counts-choose", "guess",
         "Among repairs that tie, one that keeps the argument counts of the library (Guile's "
         "modules, the JDK's constructors) where the indentation's placement breaks them.",
         because="the library's argument counts choose another ({})"),
    Rule("T02", "standard-keywords", "guess",
         "Common Lisp: the tie that gives a standard function the keyword arguments it takes, "
         "which the indentation's placement gives to an operator nothing here knows.",
         because="the standard function takes the keyword arguments"),
    Rule("T03", "printer-takes-stream", "guess",
         "Common Lisp: the tie that hands a printer the stream the indentation's placement "
         "hands to another call.",
         because="a printer takes the stream"),
    Rule("T04", "apply-takes-rest", "guess",
         "The tie that gives `apply` last the rest parameter the indentation's placement "
         "gives to another call.",
         because="apply takes the rest list last"),
    Rule("T05", "lines-alike", "guess",
         "The tie whose line is shaped like the lines right before it in the same list (rows "
         "of a table, a macro's clauses), when the indentation's placement is like none.",
         because="the lines before it, written alike, choose another"),
    Rule("T06", "forms-of-its-kind", "guess",
         "The tie whose last line is shaped like the last lines of the file's other forms "
         "with the same operator.",
         because="the file's other forms of its kind, written alike, choose another"),
    Rule("T07", "other-calls-choose", "guess",
         "The tie whose calls take the argument counts the text's other calls of the same "
         "functions take.",
         because="the text's other calls choose another"),
    Rule("T08", "if-has-else", "guess",
         "The tie that gives an `if` its else where the indentation's placement leaves it "
         "without one.",
         because="an `if` has an else far more often than not"),
    Rule("T09", "fold-takes-two", "guess",
         "The tie that gives a folding operator (`logand`, `/`) two arguments or more where "
         "the indentation's placement gives it one.",
         because="a fold takes two arguments or more"),
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
    lines += ["", f"Stage: {rule.stage}. It says: \"{rule.because.replace('{}', '...')}\""]
    if rule.stage == "tie-break":
        written = "never written unattended: it chooses which of repairs that tie a guess " \
            "offers first"
    elif rule.level == "guess":
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
