"""`lispshell hook`: Claude Code's PostToolUse hook for the agent's own edits of Lisp files.

Claude Code runs it after its Edit, Write and MultiEdit tools with the hook's JSON on standard
input (`tool_name`, `tool_input.file_path`, ...). For a Lisp file that no longer reads, the
repair lispshell is sure enough of is written back (journaled: `lispshell undo` puts it back)
and the agent is told exactly what changed; when only a guess is possible the hook blocks with
`path:line:col` and the best candidate, so the model fixes it at once. Anything else (another
kind of file, a file that reads, a payload that is not about a file) is silent, exit 0, fast:
nothing but the table of Lisp file extensions is imported before the extension is known.

settings.json:
  {"hooks": {"PostToolUse": [{"matcher": "Edit|Write|MultiEdit",
                              "hooks": [{"type": "command", "command": "lispshell hook"}]}]}}
"""
from __future__ import annotations

import json
import os
import sys

from lispshell.syntax.dialects import EXTENSIONS    # a table, no other imports

# The hook writes what the "unattended" policy takes (lispshell/workspace/fix.py): certain
# repairs, and likely ones whose rule's measured precision clears the bar (syntax/rules.py).


def _say(payload: dict) -> int:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
    return 0


# A file with more unmatched delimiters than this is not one edit gone wrong: the repair's
# search grows with the damage (seconds per hundred), and Claude Code gives a hook 60 s.
MAX_DAMAGE = 12


def run(stdin: str) -> int:
    try:
        event = json.loads(stdin)
    except (ValueError, RecursionError):
        return 0                  # not a hook payload (or one nested past reading): not ours
    tool_input = event.get("tool_input") if isinstance(event, dict) else None
    path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(path, str) or not _usable(path) \
            or os.path.splitext(path)[1].lower() not in EXTENSIONS:
        return 0
    cwd = event.get("cwd")
    if not isinstance(cwd, str) or not _usable(cwd) or not os.path.isabs(cwd):
        cwd = None
    if not os.path.isabs(path):
        if cwd is None:
            return 0              # relative to nothing we know
        path = os.path.join(cwd, path)

    from pathlib import Path

    from lispshell.workspace import files
    from lispshell.syntax.dialects import resolve_dialect
    from lispshell.syntax.reading import read
    from lispshell.syntax.validate import validate

    try:
        data, _ = files.read_file(Path(path))
        text = data.decode("utf-8")
    except (files.FileError, UnicodeDecodeError):
        return 0                  # gone, a directory, not text: not ours to judge
    dialect = resolve_dialect(path)
    checked = validate(text, dialect)
    if checked.ok:
        return 0
    first = checked.errors[0]
    from lispshell.show import visible
    where = visible(f"{path}:{first.line}:{first.col}: {first.message}. ")
    # Only the project's files are written: a payload naming /etc/x.lisp, ../elsewhere or a
    # path through a symlinked directory is judged, never repaired (files refuses OUTSIDE_ROOT).
    root = Path(os.path.realpath(cwd)) if cwd else None
    if root is None or not _inside(Path(path), root):
        return _say({"decision": "block",
                     "reason": where + "Not repaired: the file is outside the project "
                                       f"({cwd or 'no working directory given'}), where lispshell "
                                       "writes nothing. Fix the delimiters yourself."})
    reading = read(text, dialect)
    damage = len(reading.unclosed) + len(reading.delimiter_problems)
    if damage > MAX_DAMAGE:
        return _say({"decision": "block",
                     "reason": where + f"Not repaired: {damage} delimiters are unmatched, more "
                                       "than one edit's damage. Fix the delimiters yourself "
                                       "(`lispshell check --diff` shows candidates)."})
    from lispshell.syntax.repair import edit_summary
    from lispshell.syntax.rules import label as rule_label
    from lispshell.workspace.fix import fix_file

    fixed = fix_file(path, data, dialect, "unattended", root=root, tool="lispshell hook")
    r = fixed.decision.repair
    if r is None:
        return _say({"decision": "block", "reason": where + "Not repaired: fix it yourself."})
    level = r.level
    changes = edit_summary(text, r.edits)
    if fixed.refused:
        return _say({"decision": "block",
                     "reason": where + f"Not repaired: {fixed.refused} The repair would be: "
                                       + "; ".join(changes) + ". Make it yourself."})
    if fixed.failed:
        return _say({"decision": "block",
                     "reason": f"{path} does not read ({checked.errors[0].message}), and "
                               f"lispshell could not write its repair: {fixed.failed}"})
    if fixed.written:
        note = (f"lispshell repaired {path} after your edit ({level}): " + "; ".join(changes)
                + f". The file reads now; `lispshell undo {path}` puts your version back.")
        return _say({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                            "additionalContext": note}})
    if not changes:               # nothing to propose: an unterminated string or comment...
        return _say({"decision": "block",
                     "reason": where + f"Not repaired ({r.why}): fix it yourself."})
    what = "a guess" if level == "guess" else \
        f"{level} but not sure enough to write unattended ({rule_label(r.rule)})"
    return _say({"decision": "block",
                 "reason": where + f"Not repaired, {what} ({r.why}); best guess: "
                                   f"{'; '.join(changes)}. Fix the delimiters yourself."})


def _usable(path: str) -> bool:
    """A path the OS can take: no NUL, nothing that does not encode (a lone surrogate)."""
    if "\0" in path:
        return False
    try:
        os.fsencode(path)
    except UnicodeError:
        return False
    return True


def _inside(path, root) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    if argv:                      # Claude Code runs it bare; a person asking gets the doc
        print("usage: lispshell hook < HOOK_JSON\n\n" + __doc__.split("\n\n", 1)[0],
              file=sys.stdout if argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv[0] in ("-h", "--help") else 2
    return run(sys.stdin.read())
