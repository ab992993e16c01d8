"""Tools registered by this module: validate_syntax, repair_syntax.

Pure functions of the text: nothing is evaluated and no Lisp is needed.
"""
from __future__ import annotations

from lispshell.syntax.dialects import resolve_dialect
from lispshell.syntax.repair import TOO_MANY, edit_summary, repair
from lispshell.syntax.validate import validate
from lispshell.tools.registry import ToolError, register

MAX_ERRORS_SHOWN = 5

_DIALECT = {"type": "string", "description": "cl | scheme | clojure (or sbcl, guile, clj, a "
            "file name); default: the session's Lisp, else cl"}


def _dialect(args, ctx) -> str:
    name = args.get("dialect") or getattr(ctx, "dialect", None) or "cl"
    try:
        return resolve_dialect(name)
    except ValueError as exc:
        raise ToolError("BAD_INPUT", str(exc), field="dialect") from None


@register(
    "validate_syntax",
    "Check that code reads (delimiters, strings, comments, # syntax, character names) "
    "without evaluating it. Use before saving or evaluating. Answers valid, forms, and a "
    "report with line/column of each problem, of the opener still open or mismatched, and "
    "the delimiter repair with its level (certain, likely or guess).",
    {"type": "object", "required": ["code"],
     "properties": {"code": {"type": "string", "description": "the code to check"},
                    "dialect": _DIALECT}},
    group="syntax", read_only=True)
def validate_syntax(args, ctx):
    dialect = _dialect(args, ctx)
    v = validate(args["code"], dialect)
    out = {"ok": True, "valid": v.ok, "forms": v.forms, "report": v.text}
    if not v.ok:
        out["complete"] = v.complete
        out["errors"] = [p.to_dict() for p in v.errors[:MAX_ERRORS_SHOWN]]
        r = repair(args["code"], dialect)
        if r.edits and validate(r.text, dialect).ok:
            changes = edit_summary(args["code"], r.edits)
            out["repair"] = {"level": r.level, "edits": changes}
            out["report"] += f"\nRepair ({r.level}: {r.why}): {'; '.join(changes)}"
    return out


@register(
    "repair_syntax",
    "Repair unbalanced delimiters in code: missing closers go where the indentation says "
    "the form ends, a wrong closer kind is corrected, an extra closer removed. Answers the "
    "repaired code, the edits {start, end, text} against your code, changes as line:column, "
    "and level: certain, likely (the indentation decides) or guess (check it; rivals lists "
    "other fits). Valid code comes back unchanged.",
    {"type": "object", "required": ["code"],
     "properties": {"code": {"type": "string", "description": "the code to repair"},
                    "dialect": _DIALECT}},
    group="syntax", read_only=True)
def repair_syntax(args, ctx):
    code = args["code"]
    dialect = _dialect(args, ctx)
    r = repair(code, dialect)
    fixed = r.text
    after = validate(fixed, dialect)
    out = {"ok": True, "changed": fixed != code, "valid": after.ok, "level": r.level,
           "why": r.why}
    if fixed != code:
        out["repaired"] = fixed
        out["edits"] = r.edits
        out["changes"] = edit_summary(code, r.edits)
        if r.rivals:
            out["rivals"] = [edit_summary(code, e) for e in r.rivals]
    out["report"] = after.text if after.ok or fixed != code else validate(code, dialect).text
    if not after.ok and fixed == code:
        out["note"] = (r.why if r.why.startswith(TOO_MANY) else
                       "not a delimiter problem this tool can repair; see the report")
    return out
