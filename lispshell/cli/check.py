"""`lispshell check [--fix[=likely]] [--diff] [--dialect D] PATH... | -`: a Lisp syntax linter.

Prints `path:line:col: message` for each problem (editors and pre-commit read that), and
exits 0 when everything reads, 1 when some input still has syntax errors, 2 on a usage or
I/O error. `--fix` rewrites a file (atomically: temporary file + rename, mode kept) only when
the repair is `certain` (a pre-commit hook must never guess); `--fix=likely` also writes
`likely` repairs; `--diff` shows the repair as a unified diff with its level. `-` reads
standard input; with `--fix` the (repaired or unchanged) text goes to standard output and the
diagnostics to standard error. Directories are searched for Lisp files by extension.
"""
from __future__ import annotations

import argparse
import bisect
import difflib
import os
import sys
from pathlib import Path

from lispshell.workspace.fix import fix_file
from lispshell.show import say
from lispshell.syntax.dialects import CLOSE_CHAR, EXTENSIONS, OPEN_CHAR, resolve_dialect
from lispshell.syntax.layout import misplaced_forms
from lispshell.syntax.reading import NAME_OF, LineIndex, read
from lispshell.syntax.repair import CERTAIN, LIKELY, apply_edits, decide, edit_summary
from lispshell.syntax.rules import label as rule_label
from lispshell.syntax.validate import validate

USAGE_ERROR = 2
# Source files are kilobytes; far beyond that is not code to check, and `check - < /dev/urandom`
# must end instead of growing without bound.
MAX_INPUT_BYTES = 64 * 2**20
FIX_LEVELS = (CERTAIN, LIKELY)     # --fix=LEVEL: syntax.repair.POLICIES says what each writes


class _Usage(Exception):
    pass


class _FixLevel(argparse.Action):
    """`--fix` alone means certain; `--fix=likely` is split off before argparse sees it (an
    optional value would swallow the path after a bare `--fix`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.fix = CERTAIN


def _split_fix_level(argv: list[str]) -> tuple[list[str], str | None]:
    out, level = [], None
    for arg in argv:
        if arg == "--":
            out.extend(argv[len(out):])
            break
        if arg.startswith("--fix="):
            level = arg.split("=", 1)[1]
            if level not in FIX_LEVELS:
                raise _Usage(f"--fix={level}: use --fix (certain repairs only) or "
                             f"--fix=likely")
            out.append("--fix")
        else:
            out.append(arg)
    return out, level


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Usage(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="lispshell check",
                usage="lispshell check [--fix[=likely]] [--diff] [--dialect D] [-q] PATH... | -",
                description="Check that Lisp source reads: "
                "delimiters, strings, comments, # syntax. Nothing is evaluated.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories; - for stdin")
    p.add_argument("--explain", metavar="CODE",
                   help="print what repair rule CODE (L01, C01, G08...) decides, and exit")
    p.add_argument("--fix", nargs=0, action=_FixLevel, default=None, metavar="",
                   help="write repairs back: --fix only certain ones, --fix=likely also "
                   "likely ones")
    p.add_argument("--diff", action="store_true", help="show the repair as a unified diff")
    p.add_argument("--dialect", help="cl, scheme or clojure (default: from each file's "
                   "extension; required for -)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing, only exit status")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        argv, level = _split_fix_level(argv)
        args = parser.parse_args(argv)
        if args.fix and level:
            args.fix = level
        forced = resolve_dialect(args.dialect) if args.dialect else None
        if args.explain:
            return _explain(args.explain)
        if not args.paths:
            raise _Usage("give a PATH (or - for standard input)")
    except _Usage as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        print(parser.format_usage().rstrip(), file=sys.stderr)
        return USAGE_ERROR
    except ValueError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    checker = _Checker(args, forced)
    for path in args.paths:
        checker.check_path(path)
    if checker.io_error:
        return USAGE_ERROR
    return 1 if checker.invalid else 0


def _explain(code: str) -> int:
    from lispshell.syntax.rules import RULES, explain

    try:
        say(explain(code))
    except KeyError:
        say(f"lispshell check: no repair rule {code!r}; the rules: "
            + ", ".join(f"{r.code} {r.name}" for r in RULES.values()), file=sys.stderr)
        return USAGE_ERROR
    return 0


class _Checker:
    def __init__(self, args, forced_dialect):
        self.args = args
        self.forced = forced_dialect
        self.invalid = False
        self.io_error = False

    def say(self, line: str, err: bool = False) -> None:
        if not self.args.quiet:
            say(line, file=sys.stderr if err else sys.stdout, flush=True)

    def check_path(self, path: str) -> None:
        if path == "-":
            self.check_stdin()
        elif os.path.isdir(path):
            tree = os.path.realpath(path)
            for found in sorted(_lisp_files(path)):
                self.check_file(found, from_dir=True, tree=tree)
        else:
            self.check_file(path)

    def check_stdin(self) -> None:
        if not self.forced:
            self.say("lispshell check: error: reading - needs --dialect (cl, scheme or "
                     "clojure)", err=True)
            self.io_error = True
            return
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            self.say(f"lispshell check: error: standard input is larger than "
                     f"{MAX_INPUT_BYTES // 2**20} MiB: not checked", err=True)
            self.io_error = True
            return
        text = data.decode("utf-8", "surrogateescape")
        decision = self.check_text("<stdin>", text, self.forced, to_stderr=self.args.fix)
        if self.args.fix:
            out = decision.text if decision is not None else text
            sys.stdout.buffer.write(out.encode("utf-8", "surrogateescape"))
            sys.stdout.flush()

    def check_file(self, path: str, from_dir: bool = False, tree: str | None = None) -> None:
        """`tree`: the directory `path` was found in; --fix writes nothing outside it (a
        symlink in a cloned tree pointing at ~/.sbclrc is checked, never written through)."""
        if not os.path.exists(path):
            # said before the file type: a mistyped name is the likelier mistake
            self.say(f"{path}: error: no such file or directory", err=True)
            self.io_error = True
            return
        try:
            dialect = self.forced or resolve_dialect(path)
        except ValueError:
            self.say(f"{path}: error: unknown file type: pass --dialect (cl, scheme or "
                     f"clojure)", err=True)
            self.io_error = True
            return
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            self.say(f"{path}: error: cannot read: {exc.strerror or exc}", err=True)
            self.io_error = True
            return
        if len(data) > MAX_INPUT_BYTES:
            self.say(f"{path}: error: larger than {MAX_INPUT_BYTES // 2**20} MiB: not checked",
                     err=True)
            self.io_error = True
            return
        text = data.decode("utf-8", "surrogateescape")
        decision = self.check_text(path, text, dialect, path=path)
        if decision is not None and self.args.fix:
            # through a symlink, not over it; refused if the file changed since it was read
            tool = "lispshell check --fix" + ("=likely" if self.args.fix == LIKELY else "")
            fixed = fix_file(path, data, dialect, self.policy, decision=decision, tool=tool,
                             root=Path(tree) if tree is not None else None)
            if fixed.failed:
                self.say(f"{path}: error: cannot write: {fixed.failed}", err=True)
                self.io_error = True

    @property
    def policy(self) -> str:
        """What --fix writes (syntax.repair.POLICIES); without --fix, what it would."""
        return "likely" if self.args.fix == LIKELY else "certain"

    def check_text(self, name: str, text: str, dialect: str, to_stderr: bool = False,
                   path: str | None = None):
        """Report problems; return the repair's Decision when --fix writes it, else None.
        `path`: the file's, so that the repair knows SBCL's own source by where it lies."""
        v = validate(text, dialect)
        misplaced = misplaced_forms(text, dialect)   # reads, but the layout says it is wrong
        if v.ok and not misplaced:
            return None
        if v.ok:
            self.invalid = True
            for p in misplaced:
                self.say(f"{name}:{p.line}:{p.col}: {p.message}", err=to_stderr)
            if self.args.fix:
                self.say(f"{name}: not fixed: the text reads as it is; move the closer",
                         err=to_stderr)
            return None
        decision = decide(text, dialect, self.policy, path=path)
        r, reads = decision.repair, decision.reads
        if r is None:
            self.invalid = True
            for p in v.errors:
                self.say(f"{name}:{p.line}:{p.col}: {_describe(p, v.errors)}", err=to_stderr)
            return None
        if self.args.diff and reads:
            writer = ("--fix" if r.level == CERTAIN else "--fix=likely" if r.level == LIKELY
                      else None)
            label = f"written by {writer}" if writer else "--fix leaves it"
            self.say(f"--- {name}\n+++ {name} (repaired: {r.level}, {r.why}; {label}) "
                     f"{rule_label(r.rule)}".rstrip(), err=to_stderr)
            diff = difflib.unified_diff(text.splitlines(keepends=True),
                                        r.text.splitlines(keepends=True), n=2)
            lines = list(diff)[2:]
            self.say("".join(lines).rstrip("\n"), err=to_stderr)
            self.say("\n".join(f"# {c}" for c in edit_summary(text, r.edits)), err=to_stderr)
        if self.args.fix and decision.writes:
            n = len(r.edits)
            self.say(f"{name}: fixed ({n} edit{'s' if n != 1 else ''}, {r.level}) "
                     f"{rule_label(r.rule)}".rstrip(), err=to_stderr)
            return decision
        self.invalid = True
        # The places come from the repair when it reads, so the message and --diff name the
        # same place (the reader's own hint is a cruder indentation rule that can disagree).
        placed = _placed(text, dialect, r.edits, v.errors) if reads else None
        for line, col, message in placed or [(p.line, p.col, _describe(p, v.errors))
                                             for p in v.errors]:
            self.say(f"{name}:{line}:{col}: {message}", err=to_stderr)
        for p in misplaced:
            self.say(f"{name}:{p.line}:{p.col}: {p.message}", err=to_stderr)
        if self.args.fix:
            if not reads:
                why = "no delimiter repair applies"
            elif r.level == LIKELY:
                why = f"the repair is likely ({r.why}): --fix=likely writes it (see --diff)"
            else:
                why = f"the repair is a guess ({r.why}; see --diff)"
            self.say(f"{name}: not fixed: {why}", err=to_stderr)
        return None


def _describe(p, problems) -> str:
    """One line per problem: the message plus where the opener is and where a closer goes
    (not when an unterminated string or comment swallowed the rest: no closer can help)."""
    text = p.message
    if p.code == "UNCLOSED" and any(q.code.startswith("UNTERMINATED") for q in problems):
        text = f"unclosed {OPEN_CHAR[p.expected]!r} opened here"
    elif p.code == "UNCLOSED":
        text = (f"unclosed {OPEN_CHAR[p.expected]!r} opened here; the missing {CLOSE_CHAR[p.expected]!r} "
                f"most likely belongs at line {p.suggest_line}, column {p.suggest_col}")
    return text



def _placed(text: str, dialect: str, edits: list, problems) -> list:
    """(line, col, message) for each edit of a repair that reads, worded as the problem it
    fixes: the opener left unclosed and where the repair puts its closer, the closer one too
    many, the closer of the wrong kind, the string left open and where it closes."""
    lines = LineIndex(text)
    edits = sorted(edits, key=lambda e: (e["start"], e["end"]))
    original = read(text, dialect)
    fixed = read(apply_edits(text, edits), dialect)
    deltas = [len(e["text"]) - (e["end"] - e["start"]) for e in edits]

    def back(q: int) -> int:
        """A position of the repaired text in the original (never inside an edit: openers
        and string openings are never edited)."""
        shift = 0
        for e, d in zip(edits, deltas):
            if q < e["start"] + shift:
                break
            shift += d
        return q - shift

    def token_at(r, offset: int) -> int:
        return bisect.bisect_left(r.tokens.starts, offset)

    out, shift = [], 0
    for e, delta in zip(edits, deltas):
        added, old = e["text"], text[e["start"]:e["end"]]
        ll, lc = lines.line_col(e["start"])
        if not old and added == '"':
            # a string closed: the string token of the repaired text that ends there
            # (the token that starts last at or before the inserted quote: its string)
            j = bisect.bisect_right(fixed.tokens.starts, e["start"] + shift) - 1
            sl, sc = lines.line_col(back(fixed.tokens.starts[j]))
            out.append((sl, sc, (f"unterminated string (it starts here): its closing '\"' is "
                                 f"most likely missing at line {ll}, column {lc} (the lines "
                                 f"after it are code, indented as such)")))
        elif not old:
            # the outermost form the inserted closers close
            j = token_at(fixed, e["start"] + shift + len(added) - 1)
            o = fixed.partner[j]
            ol, oc = lines.line_col(back(fixed.tokens.starts[o]))
            out.append((ol, oc, (f"unclosed {fixed.tokens.text_of(o)[-1]!r} opened here; "
                                 f"the missing {added!r} most likely belongs at line {ll}, "
                                 f"column {lc}")))
        elif not added:
            j = token_at(original, e["start"])
            o = original.partner[j]
            if o < 0:
                message = (f"unmatched close {NAME_OF[old[-1]]} {old!r}: nothing is open here "
                           f"(remove it)")
            else:
                ol, oc = lines.line_col(original.tokens.starts[o])
                message = (f"{old!r} is one too many (remove it): it ends the form opened at "
                           f"line {ol}, column {oc} before the lines indented as its body")
            out.append((ll, lc, message))
        else:
            p = next((p for p in problems if p.offset == e["start"]), None)
            out.append((ll, lc, _describe(p, problems) if p is not None else
                        f"{old!r} should be {added!r}"))
        shift += delta
    return out


def _lisp_files(root: str):
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            path = os.path.join(base, name)
            # Regular files only: a named pipe found in a folder would wait for a writer forever.
            if os.path.splitext(name)[1].lower() in EXTENSIONS and os.path.isfile(path):
                yield path


if __name__ == "__main__":
    sys.exit(main())
