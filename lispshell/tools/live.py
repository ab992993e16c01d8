"""Tools on the live image: eval (through the gate), describe, symbol_value, macroexpand, apropos.

`eval` is the only one that runs the model's code, and it always asks `ctx.gate` first. The
others never evaluate the model's text: it reaches the Lisp as an escaped string literal and is
read there with read-time evaluation off (see `lispshell.lisp.introspect`).
"""
from __future__ import annotations

import re
from typing import Any

from lispshell.lisp.introspect import call_form
from lispshell.syntax import source_checks
from lispshell.syntax.validate import validate
from lispshell.tools.caps import (EVAL_CODE_CAP, LOOKUP_ARG_CAP, LOOKUP_CAP, OUTPUT_CAP,  # noqa: F401
                                  RECORD_CAP, VALUE_CAP)
from lispshell.tools.caps import cap as _cap, head_tail as _head_tail
from lispshell.tools.gate import require
from lispshell.tools.registry import ToolContext, ToolError, register

DECLINED = "The person declined to evaluate this code."


# Every definition goes to the LLM on every request: `package` and `symbol` are explained once,
# in describe (the model reads all the definitions together), and are bare types elsewhere.
_PACKAGE = {"type": "string"}
_PACKAGE_EXPLAINED = {"type": "string", "description": "CL package, Clojure namespace or Guile "
                      "module, e.g. \"(ice-9 match)\", to read names in; default: the current one"}




def eval_result(res: Any, timeout: float | None = None, text_cap: int = OUTPUT_CAP) -> dict:
    """The dict an eval answers (the model's and, recorded, the person's): output, all values,
    the error, and what was cut or interrupted, said plainly. Printed output beyond `text_cap`
    characters is cut in the middle (every request carries the whole history)."""
    out: dict[str, Any] = {}
    notes = []
    if res.output:
        out["output"], cut = _head_tail(res.output, text_cap)
        if cut:
            notes.append(f"{cut} characters cut from the middle of the output")
    if getattr(res, "output_dropped", 0):
        notes.append(f"{res.output_dropped} more characters of output were printed but not kept "
                     "for you (output cap); the person saw them")
    if notes:
        out["output_cut"] = "; ".join(notes)
    values, cut = [], 0
    for v in res.values or []:
        v, n = _cap(v, min(VALUE_CAP, text_cap))
        values.append(v)
        cut += n
    if values:
        out["values"] = values
    if cut:
        out["values_cut"] = f"{cut} characters of printed values were cut"
    error = None
    if getattr(res, "timed_out", False):
        limit = f" of {timeout:g} s" if timeout else ""
        error = {"code": "TIMEOUT", "message": f"The evaluation exceeded the time limit{limit} and "
                                               f"was interrupted; the image is still running."}
    elif getattr(res, "interrupted", False):
        error = {"code": "INTERRUPTED", "message": "The evaluation was interrupted."}
    elif res.error is not None and getattr(res.error, "type", "") == "LISPSHELL-BREAK":
        # A breakpoint stopped a call (lispshell/lisp/levels.py): the call, then its arguments.
        error = {"code": "BREAKPOINT", "message": "A breakpoint stopped this call: "
                 + res.error.message.replace("\n", "; ")}
        if not getattr(res, "level", 0):
            error["message"] += (". Nobody is here to step (MCP, a batch run): the call was "
                                 "left at once and the evaluation ended there; clear_breakpoint "
                                 "removes the breakpoint.")
    elif res.error is not None and getattr(res.error, "type", "") == "LISPSHELL-STEP":
        error = {"code": "STEP", "message": f"Stepping stopped before {res.error.message}"}
        if not getattr(res, "level", 0):
            error["message"] += ". Nobody is here to step: the evaluation was left there."
    elif res.error is not None:
        e = res.error
        error = {"code": "LISP_ERROR", "type": getattr(e, "type", "") or "error",
                 "message": getattr(e, "message", "") or str(e)}
    reads = getattr(res, "input_refused", 0)
    if reads and not getattr(res, "timed_out", False):
        # The code read standard input: nobody can type into a model's (or MCP's) eval, so
        # each read got end of file at once. Said as the outcome, whatever the code did next.
        said = (f"The code read from standard input ({reads} time{'s' if reads > 1 else ''}); "
                "nobody can type into your evaluation, so each read got end of file at once. "
                "Pass the input in the code instead (with-input-from-string in Common Lisp "
                "and Guile, with-in-str in Clojure), or ask the person to "
                "run it at their prompt, where they can answer it.")
        error = {"code": "NEEDS_INPUT", "message": said,
                 **({"lisp_error": {k: v for k, v in error.items() if k != "code"}}
                    if error is not None else {})}
    if getattr(res, "restarted", False):
        out["note"] = ("The Lisp process died during this evaluation and was restarted; "
                       "earlier definitions are gone.")
    if getattr(res, "package", None):
        out["package"] = res.package
    if error is not None and getattr(res, "level", 0):
        error["debug_level"] = res.level
        error["restarts"] = [f"{n}: [{r.partition(chr(9))[0]}] {r.partition(chr(9))[2]}"
                             for n, r in enumerate(getattr(res.error, "restarts", []))]
        error["waits"] = (
            "The call waits in debug level %d: backtrace shows it with its arguments by name "
            "(frame 0's locals), eval runs with them bound, invoke_restart CONTINUE runs the "
            "call and RETURN-VALUE (with value) returns a value instead." % res.level
            if error["code"] == "BREAKPOINT" else
            "The error waits in debug level %d with its stack: backtrace shows "
            "its frames and locals; after the missing piece is defined, "
            "invoke_restart (e.g. CONTINUE) retries where it failed." % res.level)
    out = {"ok": error is None, **({"error": error} if error else {}), **out}
    return out


# Problems after which the Lisp would run only part of the code: its reader takes the forms
# before the stray closer, runs them, then fails (`(defparameter *ec* 42))` bound *ec* and
# answered "unmatched close parenthesis"; the model retried and ran it twice). Unknown `#`
# dispatch and character names are left to the Lisp: its readtable may define them.
_PARTIAL = ("UNMATCHED_CLOSE", "MISMATCH")
SHOWN_CODE_CAP = 2000    # the repaired code is offered back only when it is this short


def _check_complete(code: str, lisp: str, what: str = "nothing was run") -> None:
    """Refuse code that does not read as exactly the forms it holds, before anyone is asked
    to approve it and before any of it runs: code that stops mid-form, and code with a closer
    that closes nothing or the wrong opener. The answer says where, and offers the repair
    when one is certain or likely."""
    v = validate(code, lisp)
    if v.complete and not any(p.code in _PARTIAL for p in v.errors):
        return
    if not v.complete:
        raise ToolError("INCOMPLETE", f"The code stops in the middle of a form (an unclosed "
                        f"delimiter or string); {what}. Fix it (validate_syntax helps) and "
                        "try again.", details=v.text, **_offer_repair(code, lisp))
    p = next(p for p in v.errors if p.code in _PARTIAL)
    raise ToolError("UNBALANCED", f"The code does not read as whole forms: line {p.line}, "
                    f"column {p.col}: {p.message}; {what} (not even the forms before it). "
                    "Remove or fix that closer and try again.", details=v.text,
                    line=p.line, col=p.col, **_offer_repair(code, lisp))


def _check_quotes(code: str, lisp: str, what: str = "nothing was run") -> None:
    """Typographic quotes outside strings read as parts of symbols: `(format t “x” x)` would
    run and fail on an unbound `“X`, or worse, succeed on something else."""
    if source_checks.smart_quotes(code, lisp):
        fixed = source_checks.ascii_quotes(code, lisp)
        raise ToolError("SMART_QUOTES", f"The code has {source_checks.quote_note(code, lisp)}; "
                        f"{what}. Write ASCII quotes (\" and ') and try again.",
                        **({"repaired_code": fixed} if len(fixed) <= SHOWN_CODE_CAP else {}))


def _check_foreign(code: str, lisp: str) -> None:
    """Another dialect's literal (`#t` in Common Lisp): the reader stops there, after running
    the forms before it. Only literals with a known spelling in this dialect are refused; an
    unknown `#` dispatch may be the image's own reader macro."""
    foreign = [f for f in source_checks.foreign_syntax(code, lisp) if "fix" in f]
    if foreign:
        f = foreign[0]
        raise ToolError("FOREIGN_SYNTAX", f"line {f['line']}, column {f['col']}: "
                        f"{f['message']}; nothing was run", problems=foreign[:10])


def _offer_repair(code: str, lisp: str) -> dict:
    from lispshell.syntax.repair import edit_summary, repair

    try:
        r = repair(code, lisp)
    except Exception:        # a repair bug must not hide the refusal itself
        return {}
    if not r.edits or r.level == "guess" or not validate(r.text, lisp).ok:
        return {}
    offer = {"repair": {"level": r.level, "changes": edit_summary(code, r.edits)}}
    if len(r.text) <= SHOWN_CODE_CAP:
        offer["repaired_code"] = r.text
    return offer


def in_package(lisp: str, package: str, code: str) -> str:
    """One form that evaluates `code` (all its forms, in order) with `package` (a CL package,
    Guile module such as "(app util)", or Clojure namespace) current, and leaves the person's
    own current package as it was. The code travels as a string literal and is read there."""
    from lispshell.lisp.dialects import get_dialect

    try:
        return get_dialect(lisp).in_package_form(package, code)
    except ValueError:
        raise ToolError("BAD_INPUT", f"eval in a package is not known for {lisp!r}") from None


@register(
    "eval",
    "Evaluate code in the person's live Lisp image: printed output, all values, or the error. "
    "Each call may need the person's approval; a refusal, or code the person edited first, is "
    "stated in the result. Changes the image (definitions persist). Time-limited.",
    {"type": "object",
     "properties": {"code": {"type": "string", "description": "one or more complete forms"},
                    "package": {"type": "string", "description": "run there instead of the "
                                "current package (theirs stays current)"}},
     "required": ["code"]},
    group="live", read_only=False, destructive=True, evaluates=True)
def eval_tool(args: dict, ctx: ToolContext) -> dict:
    code = args["code"]
    if not code.strip():
        raise ToolError("BAD_INPUT", "code is empty")
    if len(code) > EVAL_CODE_CAP:
        raise ToolError("TOO_LARGE", f"the code is {len(code):,} characters long, over the limit "
                        f"of {EVAL_CODE_CAP:,} for eval; nothing was evaluated. Write it to a "
                        "file and load it with load_file", limit=EVAL_CODE_CAP)
    session = ctx.lisp()
    fence = source_checks.unfence(code)
    if fence is not None and fence.code.strip():
        code = fence.code         # the model meant the code inside: said in the answer
    _check_complete(code, session.dialect.syntax)
    _check_quotes(code, session.dialect.syntax)
    _check_foreign(code, session.dialect.syntax)
    package = (args.get("package") or "").strip()
    # The person sees where it will run; `;;` is a comment in all three Lisps.
    shown = code if not package else f";; in {package}\n{code}"
    approved = ran = require(ctx, shown, "The code was not evaluated", DECLINED)
    if package and ran.startswith(shown.split("\n", 1)[0] + "\n"):
        ran = ran.split("\n", 1)[1]        # the header we added is not code
    to_eval = in_package(session.lisp, package, ran) if package else ran
    before = session.level
    res = session.eval(to_eval, timeout=ctx.eval_timeout, output_cap=ctx.output_cap,
                       keep_levels=ctx.keep_levels)
    # The person stopped the model's turn: its eval is unwound, not kept waiting where it
    # stopped (an error is kept: that is what the person asks the model about).
    while getattr(res, "interrupted", False) and session.level > before:
        session.leave_level()
        res.level = session.level
    result = eval_result(res, ctx.eval_timeout)
    if package:
        result["evaluated_in"] = package
    if fence is not None:
        result["fence"] = fence.note()
    if approved != shown:
        result["edited"] = "The person edited the code before it ran: `ran` is what ran."
        result["ran"] = ran
    return result


def _introspect(function: str, text: str, args: dict, ctx: ToolContext) -> tuple[str, str]:
    if not isinstance(text, str) or not text.strip():
        raise ToolError("BAD_INPUT", "the name or form is empty")
    if len(text) > LOOKUP_ARG_CAP:     # no name or macro form is that long; sending it is slow
        raise ToolError("TOO_LARGE", f"the name or form is {len(text)} characters long, over "
                        f"the limit of {LOOKUP_ARG_CAP} for a look-up", limit=LOOKUP_ARG_CAP)
    session = ctx.lisp()
    look = call_form(session.lisp, function, text, args.get("package") or "")
    # A look-up must not shift the person's `*` / `*1` history: they did not type it.
    # The whole answer is read (its length is checked), then cut for the model.
    res = session.eval(look.form, timeout=ctx.eval_timeout, output_cap=LOOKUP_CAP, history=False)
    if getattr(res, "timed_out", False):
        raise ToolError("TIMEOUT", f"No answer within {ctx.eval_timeout:g} s; interrupted.")
    answer = look.answer(res.output)
    if answer is None:
        e = res.error
        message = f"{getattr(e, 'type', '')}: {getattr(e, 'message', '')}" if e else "no answer"
        raise ToolError("LISP_ERROR", f"The Lisp could not answer: {message}")
    status, body = answer
    body, cut = _head_tail(body.rstrip(), max(ctx.output_cap, 1000))
    if cut:
        body += f"\n[{cut} characters of the answer were cut]"
    if status in ("ok", "not_macro"):
        return status, body
    raise ToolError(status.upper(), body)


_NAME = {"type": "string"}
_NAME_EXPLAINED = {"type": "string",
                   "description": "One symbol, e.g. \"mapcar\", \"pkg:name\", \"clojure.string/join\""}


def _elsewhere(function: str, args: dict, ctx: ToolContext) -> tuple[str, str, dict]:
    """A look-up by a name without a package, which also says where else the name lives when
    the current package's symbol means nothing: "no symbol named G in CL-USER" with no hint
    sent the model guessing while DEMO::G was defined."""
    try:
        status, text = _introspect(function, args["symbol"], args, ctx)
        failed = None
    except ToolError as exc:
        failed, status, text = exc, "", ""
    if args.get("package") or (failed is not None and failed.code in ("TIMEOUT", "TOO_LARGE",
                                                                      "BAD_INPUT", "NO_LISP")):
        if failed is not None:
            raise failed
        return status, text, {}
    from lispshell.tools.project_tools import homes

    seen = homes(ctx, args["symbol"]) if isinstance(args["symbol"], str) else None
    others = [h for h in (seen or {}).get("homes") or [] if isinstance(h, str)]
    if seen and others and seen.get("meaning") is not True:
        hint = (f"{args['symbol']} means nothing in {seen['package']}, where this looked; "
                f"defined as {', '.join(others[:5])}: give package, or the qualified name")
        if failed is not None:
            failed.message += f". {hint}"
            failed.extra.update(looked_in=seen["package"], also_in=others)
            raise failed
        return status, text, {"looked_in": seen["package"], "also_in": others, "note": hint}
    if failed is not None:
        raise failed
    return status, text, {}


@register(
    "describe",
    "Describe a symbol in the live image (kind, arglist, documentation) without evaluating "
    "anything.",
    {"type": "object", "properties": {"symbol": _NAME_EXPLAINED, "package": _PACKAGE_EXPLAINED},
     "required": ["symbol"]},
    group="live", read_only=True)
def describe_tool(args: dict, ctx: ToolContext) -> dict:
    _, text, said = _elsewhere("describe-name", args, ctx)
    return {"description": text, **said}


@register(
    "symbol_value",
    "The current global value of a variable in the live image, printed (length-limited), "
    "without evaluating anything.",
    {"type": "object", "properties": {"symbol": _NAME, "package": _PACKAGE}, "required": ["symbol"]},
    group="live", read_only=True)
def symbol_value_tool(args: dict, ctx: ToolContext) -> dict:
    _, text, said = _elsewhere("value-of-name", args, ctx)
    type_name, _, value = text.partition("\n")
    return {"type": type_name, "value": value, **said}


@register(
    "macroexpand",
    "Expand a macro form one step in the live image and return the pretty-printed expansion. "
    "Only macros the image defines; never evaluates (forms that define or bind macros are "
    "refused).",
    {"type": "object",
     "properties": {"form": {"type": "string", "description": "one form, e.g. \"(when x y)\""},
                    "package": _PACKAGE},
     "required": ["form"]},
    group="live", read_only=True)
def macroexpand_tool(args: dict, ctx: ToolContext) -> dict:
    form = args["form"]
    if form.strip() and len(form) <= LOOKUP_ARG_CAP:   # (else _introspect refuses it)
        # the answer eval gives, not the image's raw reader error
        _check_complete(form, ctx.lisp().dialect.syntax, "nothing was expanded")
    status, text = _introspect("expand", form, args, ctx)
    result = {"expansion": text.strip()}
    if status == "not_macro":
        result["note"] = "The form is not a macro call; it is returned unchanged."
    return result


_REGEX_CHARS = re.compile(r"[\^$*+?\[\]\\|(){}]")


@register(
    "apropos",
    "Symbols in the live image whose names contain a pattern, a plain substring (Guile: a "
    "regular expression); at most 100.",
    {"type": "object",
     "properties": {"pattern": {"type": "string"},
                    "package": {"type": "string", "description": "Only this CL package or "
                                "Clojure namespace; default: all"}},
     "required": ["pattern"]},
    group="live", read_only=True)
def apropos_tool(args: dict, ctx: ToolContext) -> dict:
    _, text = _introspect("apropos*", args["pattern"], args, ctx)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    result = {"symbols": lines}
    if not ctx.lisp().dialect.apropos_regex and _REGEX_CHARS.search(args["pattern"]):
        # `^def.*x$` answered [] without a word: it was looked for as written
        result["note"] = ("apropos matches a plain substring of the names, not a regular "
                          "expression: the pattern was looked for as written; give a piece "
                          "of the name, e.g. \"def\"")
    return result
