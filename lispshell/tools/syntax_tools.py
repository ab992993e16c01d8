"""Tools registered by this module: validate_syntax, repair_syntax.

Pure functions of the text: nothing is evaluated and no Lisp is needed.
"""
from __future__ import annotations

from lispshell.syntax import source_checks
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


def unfenced(code: str) -> tuple[str, dict]:
    """The code inside a Markdown fence around all of it, and the note that says so."""
    fence = source_checks.unfence(code)
    return (fence.code, {"fence": fence.note()}) if fence is not None else (code, {})


def quote_problems(code: str, dialect: str) -> list[dict]:
    """Typographic quotes outside strings, as problems of the code: it reads, but not as
    meant (SBCL reads `“x` as a symbol)."""
    lines = source_checks.LineIndex(code)
    out = []
    for offset, char in source_checks.smart_quotes(code, dialect)[:MAX_ERRORS_SHOWN]:
        line, col = lines.line_col(offset)
        ascii_quote = '"' if char in "“”" else "'"
        out.append({"code": "SMART_QUOTE", "message": f"typographic quote {char} outside a "
                    f"string: the Lisp reads it as part of a symbol; write ASCII {ascii_quote}",
                    "offset": offset, "line": line, "col": col})
    return out


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
    code, notes = unfenced(args["code"])
    v = validate(code, dialect)
    out = {"ok": True, "valid": v.ok, "forms": v.forms, "report": v.text, **notes}
    if not v.ok:
        out["complete"] = v.complete
        out["errors"] = [p.to_dict() for p in v.errors[:MAX_ERRORS_SHOWN]]
        r = repair(code, dialect)
        if r.edits and validate(r.text, dialect).ok:
            changes = edit_summary(code, r.edits)
            out["repair"] = {"level": r.level, "edits": changes}
            out["report"] += f"\nRepair ({r.level}: {r.why}): {'; '.join(changes)}"
    else:
        quotes = quote_problems(code, dialect)
        if quotes:
            out.update(valid=False, errors=quotes,
                       report="✗ Syntax valid, but not as meant: "
                       + source_checks.quote_note(code, dialect),
                       repair={"level": "likely", "code": source_checks.ascii_quotes(code,
                                                                                     dialect)})
    if notes:
        out["report"] += "\nNote: " + notes["fence"]
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
    code, notes = unfenced(args["code"])
    dialect = _dialect(args, ctx)
    if not notes and validate(code, dialect).ok and source_checks.smart_quotes(code, dialect):
        fixed = source_checks.ascii_quotes(code, dialect)
        return {"ok": True, "changed": True, "valid": validate(fixed, dialect).ok,
                "level": "likely", "why": source_checks.quote_note(code, dialect)
                + ": made ASCII", "repaired": fixed, "report": validate(fixed, dialect).text}
    if notes:
        # the fence is the first repair: the code inside is what the model meant
        code = source_checks.ascii_quotes(code, dialect)
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
    if notes:
        out.update(changed=True, repaired=fixed, **notes)
    return out
