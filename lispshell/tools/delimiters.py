"""Tools registered by this module: push_delimiter, pop_delimiter, set_sentinel,
balance_and_resume, delimiter_batch.

Stateless: the client owns the stack (top last) and passes it in and out. With `docSlice`
(the text written since the last call) the stack advances over that text with the dialect's
lexer, so the client sends only the delta; `lexState` carries "inside a string/comment" to the
next call and `docHash` chains a hash over the slices. Tools never edit a document: fixes come
back as edits `{start, end, text}`. Same request, same answer, byte for byte.
"""
from __future__ import annotations

from lispshell.syntax import delimiters as core
from lispshell.syntax.delimiters import StackError
from lispshell.syntax.dialects import CLOSE_CHAR, DELIM_TYPES, OPEN_CHAR, resolve_dialect
from lispshell.syntax.lexer import LexState
from lispshell.syntax.errors import StructureError
from lispshell.tools.registry import ToolError, register

MAX_CURSOR = 1 << 53

_TYPE = {"type": "string", "enum": list(DELIM_TYPES)}
_STACK = {"type": "array", "items": _TYPE, "description": "open delimiters, top last"}
_CODES = {"stack": "INVALID_TYPE"}   # a stack item that is not a delimiter type, as before
_COMMON = {
    "docSlice": {"type": "object", "description":
                 "{text, start, end?}: the text written since your last call, starting at document "
                 "offset start. The stack advances over it (strings, comments, char literals "
                 "skipped), so send only the new part"},
    "lexState": {"type": "object", "description":
                 "lexState from the previous answer (the slice ended inside a string/comment)"},
    "docHash": {"type": "string", "description":
                "previous docHash (\"\" at document start); answered: sha256 of it + slice"},
    "dialect": {"type": "string", "description": "cl | scheme | clojure (default: the "
                "session's Lisp, else clojure)"},
}


def _stack(args) -> list:
    return core.check_stack(args.get("stack", []))


def _type(args, stack: list, field="type") -> str:
    try:
        return core.check_type(args.get(field), field)
    except StackError as err:
        err.stack = stack          # the error answer carries the client's stack, unchanged
        raise


def _cursor(value, field="cursor") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CURSOR:
        raise ToolError("BAD_CURSOR", f"{field} must be an integer from 0 to {MAX_CURSOR}",
                        field=field)
    return value


def _dialect(args, ctx) -> str:
    name = args.get("dialect") or getattr(ctx, "dialect", None) or "clojure"
    try:
        return resolve_dialect(name)
    except ValueError as exc:
        raise ToolError("BAD_INPUT", str(exc), field="dialect") from None


class _Slice:
    """A parsed docSlice with its lexer state and hash; `apply` advances a stack over it."""

    def __init__(self, args, ctx):
        raw = args.get("docSlice")
        self.present = raw is not None
        self.text, self.start = "", 0
        if self.present:
            if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
                raise ToolError("BAD_INPUT", "docSlice must be an object with a string text",
                                field="docSlice")
            self.text = raw["text"]
            start = raw.get("start", 0)
            if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start <= MAX_CURSOR:
                raise ToolError("BAD_CURSOR", "docSlice.start must be a non-negative integer",
                                field="docSlice.start")
            self.start = start
            end = raw.get("end")
            if end is not None and (isinstance(end, bool) or not isinstance(end, int)
                                    or end - start != len(self.text)):
                raise ToolError(
                    "BAD_INPUT", f"docSlice is inconsistent: end - start = {end} - {start} = "
                    f"{end - start if isinstance(end, int) else '?'}, but text has "
                    f"{len(self.text)} characters; send the text that spans start..end",
                    field="docSlice.end", start=start, end=end, text_length=len(self.text))
            if len(self.text) > core.MAX_SLICE:
                raise ToolError("BAD_INPUT", f"docSlice.text has {len(self.text)} characters, "
                                f"over the limit of {core.MAX_SLICE} (MAX_SLICE)",
                                limit="MAX_SLICE", max=core.MAX_SLICE)
        state = args.get("lexState")
        try:
            self.state = LexState.from_dict(state) if state is not None else None
        except ValueError as exc:
            raise ToolError("BAD_INPUT", str(exc), field="lexState") from None
        self.dialect = _dialect(args, ctx) if self.present else None
        self.hash = args.get("docHash")
        self.end_state = self.state
        self.events: list = []

    def apply(self, stack: list) -> list:
        if not self.present:
            return stack
        try:
            stack, self.end_state, self.events = core.scan_slice(
                stack, self.text, self.dialect, self.state, self.start)
        except ValueError as exc:       # a lexState that does not fit the dialect
            raise ToolError("BAD_INPUT", str(exc), field="lexState") from None
        return stack

    def extras(self) -> dict:
        out = {}
        if self.present:
            state = self.end_state or LexState()
            out["lexState"] = state.to_dict()
        if self.hash is not None:
            out["docHash"] = core.rolling_hash(self.hash, self.text) if self.present else self.hash
        return out


def _slice_then_op(args, ctx, op: str):
    """push/pop: the slice (if any) is the text of the delimiter being written."""
    stack = _stack(args)
    kind = _type(args, stack)
    _cursor(args.get("cursor"))
    sl = _Slice(args, ctx)
    new = sl.apply(stack)
    delims = [e for e in sl.events]
    if not delims:
        new = core.push(new, kind) if op == "push" else core.pop(new, kind)
    else:
        last_op, last_kind, at = delims[-1]
        if last_op != op or last_kind != kind:
            want = (OPEN_CHAR if op == "push" else CLOSE_CHAR)[kind]
            got = (OPEN_CHAR if last_op == "push" else CLOSE_CHAR)[last_kind]
            raise ToolError("MISMATCH", f"docSlice's last delimiter is {got!r} (offset {at}), "
                            f"but type says {op} {kind} {want!r}", expected=kind,
                            found=last_kind, at=at, stack=stack)
    return {"ok": True, "stack": new, **sl.extras()}


# push and pop take the same arguments: the stack, a delimiter type, and the common options.
_STACK_OP = {"type": "object", "required": ["stack", "type"],
             "properties": {"stack": _STACK,
                            "type": {"type": "string", "description": "paren | bracket | brace"},
                            "cursor": {"type": "integer", "description": "where you wrote it (info)"},
                            **_COMMON}}


@register(
    "push_delimiter",
    "Push an opening delimiter (paren ( | bracket [ | brace {) onto your stack and get the new "
    "stack. Optional docSlice: the text you just wrote; the stack then advances over it.",
    _STACK_OP,
    group="delimiters", read_only=True, error_codes=_CODES)
def push_delimiter(args, ctx):
    return _slice_then_op(args, ctx, "push")


@register(
    "pop_delimiter",
    "Close the top of your stack: type is the closer you are about to write. Fails with "
    "MISMATCH (expected = what the top needs) or UNDERFLOW, stack unchanged, so you can fix "
    "the closer before writing it.",
    _STACK_OP,
    group="delimiters", read_only=True, error_codes=_CODES)
def pop_delimiter(args, ctx):
    return _slice_then_op(args, ctx, "pop")


@register(
    "set_sentinel",
    "Set the sentinel: the document offset where you are generating. Answers it back.",
    {"type": "object", "required": ["cursor"],
     "properties": {"cursor": {"type": "integer", "description": "document offset, >= 0"}}},
    group="delimiters", read_only=True, error_codes=_CODES)
def set_sentinel(args, ctx):
    return {"ok": True, "sentinel": _cursor(args.get("cursor"))}


@register(
    "balance_and_resume",
    "At a boundary (end of a defn/let/top-level form): mode assert-empty answers balanced "
    "true iff the stack (after docSlice) is empty, else MISMATCH with what is still open. "
    "mode suggest-fix answers fix.edits inserting the missing closers at the sentinel (or, "
    "when docSlice holds whole forms, where the indentation says each form ends) and "
    "fix.newStack; apply the edits instead of guessing closers.",
    {"type": "object", "required": ["stack", "sentinel", "mode"],
     "properties": {"stack": _STACK, "sentinel": {"type": "integer"},
                    "mode": {"type": "string", "enum": ["assert-empty", "suggest-fix"]},
                    **_COMMON}},
    group="delimiters", read_only=True, error_codes=_CODES)
def balance_and_resume(args, ctx):
    stack = _stack(args)
    sentinel = _cursor(args.get("sentinel"), "sentinel")
    mode = args.get("mode")
    if mode not in ("assert-empty", "suggest-fix"):
        raise ToolError("BAD_INPUT", "mode must be assert-empty or suggest-fix", field="mode")
    if args.get("docSlice") is not None and not (args.get("dialect")
                                                  or getattr(ctx, "dialect", None)) \
            and _reads_differently(args, ctx, stack):
        # The default (Clojure) read balanced CL `(list #\( #| ( |# 1)` as one paren short and
        # told the model to add a closer: where the dialect decides, it must be said.
        raise ToolError("BAD_INPUT", "say which dialect the docSlice is: pass dialect (cl, "
                        "scheme or clojure); characters such as #\\( and \\( and comments "
                        "such as #| |# read differently in each", field="dialect")
    sl = _Slice(args, ctx)
    if sl.present and mode == "suggest-fix" and not stack and (sl.state is None or sl.state
                                                                == LexState()):
        repaired = _repair_slice(sl, sentinel)
        if repaired is not None:
            return {**repaired, **sl.extras()}
    new = sl.apply(stack)
    if mode == "assert-empty":
        if new:
            raise ToolError("MISMATCH", f"{len(new)} delimiter(s) still open; close them with "
                            f"{core.closers(new)!r}", expected=new[-1], stack=new,
                            balanced=False, closers=core.closers(new))
        return {"ok": True, "balanced": True, "stack": [], **sl.extras()}
    text = core.closers(new)
    edits = [{"start": sentinel, "end": sentinel, "text": text}] if text else []
    return {"ok": True, "balanced": not new, "fix": {"edits": edits, "newStack": []},
            **sl.extras()}


def _reads_differently(args: dict, ctx, stack: list) -> bool:
    """Whether the three dialects' readers advance the stack over the slice differently."""
    seen = set()
    for dialect in ("cl", "scheme", "clojure"):
        try:
            seen.add(tuple(_Slice({**args, "dialect": dialect}, ctx).apply(list(stack))))
        except StructureError as exc:       # ToolError and the stack's own errors
            seen.add(exc.code)
    return len(seen) > 1


def _repair_slice(sl: _Slice, sentinel: int) -> dict | None:
    """suggest-fix over whole forms: repair the slice text with stack and indentation."""
    try:
        from lispshell.syntax.repair import repair
    except ImportError:
        return None
    r = repair(sl.text, sl.dialect)
    shifted = [{"start": e["start"] + sl.start, "end": e["end"] + sl.start, "text": e["text"]}
               for e in r.edits]
    sl.end_state = None
    return {"ok": True, "balanced": not r.edits, "confident": r.confident, "level": r.level,
            "fix": {"edits": shifted, "newStack": []}}


@register(
    "delimiter_batch",
    "Apply ops to your stack in one call: {op: push|pop, type} or {op: pushMany|popMany, "
    "types: [...]} (popMany in closing order). All or nothing: the first bad op fails the "
    "batch with its index, stack unchanged.",
    {"type": "object", "required": ["stack", "ops"],
     "properties": {"stack": _STACK,
                    "ops": {"type": "array", "items": {"type": "object"},
                            "description": f"at most {core.MAX_OPS}"},
                    **_COMMON}},
    group="delimiters", read_only=True, error_codes=_CODES)
def delimiter_batch(args, ctx):
    stack = _stack(args)
    ops = args.get("ops")
    if len(ops) > core.MAX_OPS:
        raise ToolError("BAD_INPUT", f"{len(ops)} ops exceed the limit of {core.MAX_OPS} "
                        f"(MAX_OPS)", limit="MAX_OPS", max=core.MAX_OPS, stack=stack)
    sl = _Slice(args, ctx)
    work = list(sl.apply(stack))  # a copy: the ops below change it in place
    for index, op in enumerate(ops):
        try:
            _batch_op(work, op)
        except StackError as err:
            extra = {k: v for k, v in err.to_dict().items() if k not in ("code", "message",
                                                                        "stack")}
            raise ToolError(err.code, f"ops[{index}]: {err.message}", index=index,
                            **({"op": op} if len(repr(op)) < 200 else {}),
                            **extra, stackAtFailure=list(work), stack=stack) from None
    return {"ok": True, "stack": work, **sl.extras()}


def _check_kind(kind, where: str, work: list) -> str:
    if kind not in DELIM_TYPES:
        raise StackError("INVALID_TYPE", f"{where} must be paren, bracket or brace, not "
                         f"{core._show(kind)}", work)
    return kind


def _push(work: list, kind: str) -> None:
    if len(work) >= core.MAX_DEPTH:
        raise StackError("BAD_INPUT", f"push would exceed the stack depth limit of "
                         f"{core.MAX_DEPTH} (MAX_DEPTH)", work, limit="MAX_DEPTH",
                         max=core.MAX_DEPTH)
    work.append(kind)


def _pop(work: list, kind: str) -> None:
    if not work or work[-1] != kind:
        core.pop(work, kind)      # raises UNDERFLOW or MISMATCH with the right message
    work.pop()


def _batch_op(work: list, op) -> None:
    """Apply one op to `work` in place; on failure `work` is as it was before this op."""
    if not isinstance(op, dict) or op.get("op") not in ("push", "pop", "pushMany", "popMany"):
        raise StackError("BAD_INPUT", "each op must be {op: push|pop|pushMany|popMany, ...}",
                         work)
    name = op["op"]
    if name in ("push", "pop"):
        kind = _check_kind(op.get("type"), "type", work)
        (_push if name == "push" else _pop)(work, kind)
        return
    kinds = op.get("types")
    if not isinstance(kinds, list):
        raise StackError("BAD_INPUT", f"{name} needs types: an array of paren|bracket|brace",
                         work)
    if len(kinds) > core.MAX_OPS:
        raise StackError("BAD_INPUT", f"{name} has {len(kinds)} types, over the limit of "
                         f"{core.MAX_OPS} (MAX_OPS)", work, limit="MAX_OPS", max=core.MAX_OPS)
    for i, kind in enumerate(kinds):
        _check_kind(kind, f"types[{i}]", work)
    before = len(work)
    snapshot = work[:] if name == "popMany" else None
    for i, kind in enumerate(kinds):
        try:
            (_push if name == "pushMany" else _pop)(work, kind)
        except StackError as err:
            if snapshot is None:          # put the stack back as it was before this op
                del work[before:]
            else:
                work[:] = snapshot
            raise StackError(err.code, f"types[{i}]: {err.message}", list(work),
                             **{**err.extra, "typeIndex": i}) from None
