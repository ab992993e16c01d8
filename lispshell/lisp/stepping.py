"""Stepping by instrumenting the function (Clojure: a child and nREPL), as CIDER's `#dbg` does.

`,step f` arms the function f: its source is instrumented in the image (image/clojure-step.clj)
so that its next call stops before each of its forms in a level (LISPSHELL-STEP, restarts
STEP-CONTINUE, STEP-INTO, STEP-NEXT, STEP-OUT, RETURN-VALUE, ABORT: `levels.STEP_RESTARTS` are
what `,s ,n ,o ,c` invoke); when that call ends the original function is back. `,step (f ARGS)`
arms f and evaluates the call. `step_form` does the arming at once (a quiet eval that says
plainly why it cannot: no source, a macro, not a defn) and answers the form the caller then
evaluates as the person's.

The source: the file's, at the var's line, for a var loaded from a file; for a function
defined at the prompt, the text of the defn the person (or the model) evaluated in this
session, which the session keeps here (`remember`, called by each transport's eval).
"""
from __future__ import annotations

import re

from lispshell.lisp.dialects import string_literal
from lispshell.lisp.image import code as image_code
from lispshell.lisp.levels import STEP_RESTARTS

FORMS = {
    "clojure": {
        # The helpers are loaded at the first ,step (compiling them costs a JVM at start about
        # a tenth of its boot), hence the resolve: the form is compiled before they exist.
        "prepare": ("(do (when-not (resolve (quote lispshell.step/armed-var)) "
                    "(binding [*ns* *ns*] (load-string {setup}))) "
                    "((resolve (quote lispshell.step/prepare)) {text} {sources}))"),
        "setup": "clojure-step.clj",
        "call": "(lispshell.step/run (var {var}) (fn [] {code}\n))",
        "name": "(lispshell.step/armed-var (var {var}))",
    },
}

# A top-level form that defines a function (its name after any metadata), or that changes the
# namespace the forms after it are evaluated in.
_DEFINES = re.compile(r"\(\s*(?:defn-?|def)\s+(?:\^(?:\{[^{}]*\}|[^\s{}]+)\s+)*"
                      r"([^\s()\[\]{}\"^;@~`']+)")
_NAMESPACE = re.compile(r"\(\s*(?:ns\s+|in-ns\s+')\s*([^\s()\[\]{}\"^;@~`']+)")
KEPT = 500          # definitions kept per session (the newest)


def remember(session, code: str, package: str) -> None:
    """Keep the text of each top-level defn in `code`, evaluated from namespace `package`,
    by its qualified name (a later definition of the same name replaces it)."""
    if session.lisp not in FORMS or "(def" not in code:
        return
    from lispshell.syntax.reading import read

    kept = session.__dict__.setdefault("_definitions", {})
    ns = package or "user"
    for start, end in read(code, "clojure").spans:
        text = code[start:end]
        moved = _NAMESPACE.match(text)
        if moved:
            ns = moved.group(1)
            continue
        defined = _DEFINES.match(text)
        if defined:
            name = defined.group(1)
            key = name if "/" in name else f"{ns}/{name}"
            kept.pop(key, None)
            kept[key] = text
            while len(kept) > KEPT:
                kept.pop(next(iter(kept)))


def step_form(session, code: str) -> str:
    """Arm the function `code` names (`f`) or calls (`(f ARGS)`); the form to evaluate as the
    person's: the call (it steps) or, for a name, one that says it is armed. ValueError says
    why it cannot."""
    forms = FORMS[session.lisp]
    kept = session.__dict__.get("_definitions", {})
    # The image keeps what it was sent (for ,s into another function): only what it lacks goes,
    # all of it again to a new image.
    generation, sent = session.__dict__.get("_definitions_sent", (None, {}))
    if generation != session.generation:
        sent = {}
    new = {k: v for k, v in kept.items() if sent.get(k) != v}
    sources = "{" + " ".join(f"{string_literal(k)} {string_literal(v)}"
                             for k, v in new.items()) + "}"
    setup = string_literal(image_code(forms["setup"]))
    result = session.eval(forms["prepare"].format(setup=setup, text=string_literal(code),
                                                  sources=sources),
                          timeout=None, history=False, keep_levels=True)
    session._definitions_sent = (session.generation, {**sent, **new})
    if result.error is not None:
        message = re.sub(r' \{(:why "[^"]*")?\}\Z', "", result.error.message or result.error.type)
        raise ValueError(message[:1].lower() + message[1:].rstrip("."))
    var = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    if not var:
        raise ValueError("the image did not say which function it armed")
    code = code.strip()
    if code.startswith("("):
        return forms["call"].format(var=var, code=code)
    return forms["name"].format(var=var)


def step(session, how: str, **kw):
    """At a step: into | next | out | continue, its restart invoked. At a breakpoint, into steps
    through the call (its function armed first); the others run it (over, out, continue).
    Elsewhere said plainly: stepping starts with `,step`."""
    if how not in STEP_RESTARTS:
        raise ValueError(f"step how? one of {', '.join(STEP_RESTARTS)}")
    waiting = session.waiting
    if how == "into" and getattr(waiting, "type", "") == "LISPSHELL-BREAK":
        # From a breakpoint: its function armed, then its STEP-INTO runs the call stepped.
        call = (waiting.message or "").split("\n", 1)[0]
        name = call[1:].split(" ", 1)[0].rstrip(")") if call.startswith("(") else ""
        if name:
            step_form(session, name)
    index = session._restart_named(STEP_RESTARTS[how])
    if index is not None:
        return session.invoke_restart(index, **kw)
    if how != "into" and session.level:         # over, out of, past a breakpoint's call: run it
        return session.continue_level(**kw)
    if session.level:
        raise ValueError("this level is not a step nor a breakpoint: on Clojure stepping starts "
                         "with ,step f (its next call) or ,step (f ARGS), or ,s at a breakpoint")
    raise ValueError("nothing is being stepped: ,step (f ARGS) steps the call of f, ,step f "
                     "its next call")
