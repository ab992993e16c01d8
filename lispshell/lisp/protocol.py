r"""The framed loop protocol, in one place: what lispshell sends the loop it typed into a Lisp
(image/*-loop.*), and what every answer may hold. session.py speaks it over a pty channel (a
child) or a socket channel (Guile's REPL server); tests/test_wire_protocol.py drives each loop
through every request kind its dialect declares (`Dialect.requests`).

A request is a header line and a body:  <kind><length> <id>\n<text>
  `length` counts the body as the loop reads it (characters, or UTF-16 units on the JVM:
  `Dialect.code_length`), so a body of any size and content arrives whole; `id` is random
  (session.py `_send`), so code left running in the image cannot end the next answer.

An answer is what the code printed, then fields, each a marker (RS + the session's nonce) and a
one-letter tag; the last is D, the request's id and a newline. Nothing needs escaping: the
marker is secret, and a field ends where the next marker begins.

While a request runs the loop may ask for a line of standard input (tag I, no body); lispshell
replies with `i<length> <id>\n<line>` (length 0: end of file) or `x0 <id>\n` (Ctrl-C at the
input line). A reply when no read waits is ignored (it raced with an interrupt).
"""
from __future__ import annotations

# kind: what it asks, and its body. Every loop answers every request it does not know with an
# answer all the same (P and D at least): an unknown kind never hangs the session.
REQUESTS = {
    "E": "evaluate the forms of the body; the REPL variables move (* ** *** / *1 *2 *3 *e)",
    "N": "evaluate as E, leaving the REPL variables alone (look-ups, the editor's questions)",
    "C": "completions of the body (a prefix): one V each",
    "Y": "ASDF system names starting with the body (,load-system): one V each",
    "I": "invoke restart N of the waiting error: body `N [FORM]`, FORM answering what it asks",
    "F": "a frame request on the waiting (or last) error: `bt`, `locals N`, `source N`, "
         "`eval N CODE`, `restart N`",
    "A": "leave the innermost debug level (,abort)",
    "T": "leave every debug level (,top)",
    "Q": "quit the loop: a child exits; on Guile's server only this client ends",
}

# Replies to an I field, sent while the request runs.
INPUT_REPLIES = {
    "i": "a line of standard input (newline included); an empty body is end of file",
    "x": "Ctrl-C at the input line: the reading code is interrupted (SBCL: a level whose "
         "CONTINUE asks again)",
}

# tag: what the field holds. Output is what comes before the first marker.
ANSWERS = {
    "V": "a value, printed (one per value of the last form; a completion; a frame line)",
    "E": "an error's type (condition class, exception class, Guile key)",
    "M": "the error's message",
    "B": "one backtrace frame of the error, the person's frames only",
    "R": "one restart of the waiting error: NAME, a tab, its description (SBCL, Guile; Clojure "
         "at a breakpoint)",
    "L": "how many debug levels are open after this request (SBCL, Guile, Clojure at a "
         "breakpoint; absent: none)",
    "P": "the current package, module or namespace",
    "I": "the code reads standard input: reply with i or x (no body)",
    "D": "the end: the request's id and a newline",
}
