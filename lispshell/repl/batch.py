"""Non-interactive use: `lispshell -e FORM` and `lispshell < file`.

Forms are read with the project's reader and evaluated one at a time, in order, like
`sbcl < file`. Printed output and values go to standard output as plain text (one value per
line); errors, syntax problems and notices go to standard error. The exit status is 0 when every
form succeeded, 1 when any failed (an error, a syntax problem, an interrupt), 2 when the Lisp
could not be started. No prompt-toolkit and no rich on this path: it must start fast and print
text a script can read.

Standard input: code that reads it (`(read-line)`) reads the process's own standard input,
a line at a time, after `-e` (`echo hi | lispshell -e '(read-line)'`, as `sbcl --eval`);
when the forms themselves came from standard input, nothing is left of it and the code gets
end of file, as it does when standard input is closed.
"""
from __future__ import annotations

import re
import sys
from typing import IO

from lispshell.lisp.dialects import get_dialect
from lispshell.repl.forms import split_forms


class _Printer:
    """Writes a form's output as it streams, remembering whether the last line was finished."""

    def __init__(self, out: IO[str], err: IO[str]):
        self.out, self.err = out, err
        self.at_line_start = True

    def output(self, chunk: str) -> None:
        if chunk:
            self.out.write(chunk)
            self.out.flush()
            self.at_line_start = chunk.endswith("\n")

    def finish_line(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.at_line_start = True

    def error(self, text: str) -> None:
        self.finish_line()
        self.out.flush()
        self.err.write(text.rstrip("\n") + "\n")
        self.err.flush()


BATCH_FRAMES = 12          # an uncaught error's frames printed, innermost first


def _frames(err, printer: _Printer) -> None:
    """The error's frames, innermost first and bounded, as `sbcl --script` and `guile -c`
    print a backtrace (the loops already leave lispshell's own frames out)."""
    frames = list(getattr(err, "backtrace", None) or [])
    if not frames:
        return
    printer.error("Backtrace (innermost first):")
    for line in frames[:BATCH_FRAMES]:
        printer.error("  " + line)
    if len(frames) > BATCH_FRAMES:
        printer.error(f"  ... {len(frames) - BATCH_FRAMES} more frames")


def show_result(result, printer: _Printer, streamed: bool) -> bool:
    """Print one EvalResult; True when the form succeeded."""
    if not streamed and result.output:
        printer.output(result.output)
    err = result.error
    if result.output_dropped and not streamed:
        printer.error(f"lispshell: {result.output_dropped} characters of output were not kept")
    if result.restarted:
        printer.error("lispshell: " + (err.message if err is not None else
                      "the Lisp process died; a fresh one was started"))
    elif result.interrupted:
        printer.error("lispshell: evaluation interrupted")
    elif result.timed_out:
        printer.error("lispshell: " + (err.message if err is not None else "evaluation timed out"))
    elif err is not None:
        printer.error(f"{err.type}: {err.message}" if err.type else err.message)
        _frames(err, printer)
    else:
        printer.finish_line()
        for value in result.values:
            printer.out.write(value + "\n")
        printer.out.flush()
    return bool(result.ok)


class LispExited(Exception):
    """The code made the Lisp exit: the run ends there, with the Lisp's status (`sbcl < file`)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def stdin_lines():
    """`on_input` for a batch run whose standard input is not the forms: its next line, or
    None (end of file) when it ends or there is none."""
    try:
        line = sys.stdin.readline() if sys.stdin is not None else ""
    except (OSError, ValueError, UnicodeDecodeError):
        line = ""
    return line or None


def no_input():
    """`on_input` when the forms were standard input: nothing is left to read."""
    return None


def evaluate_text(session, text: str, lisp: str, printer: _Printer, source: str,
                  on_input=no_input) -> bool:
    """Evaluate every form of `text` in order; False if any failed or the text has a problem."""
    from lispshell.lisp.session import PERSON_VALUE_CAP

    forms, problem = split_forms(text, get_dialect(lisp).syntax)
    ok = True
    for form in forms:
        streamed = False

        def on_output(chunk: str) -> None:
            nonlocal streamed
            streamed = True
            printer.output(chunk)

        result = session.eval(form, timeout=None, on_output=on_output,
                              value_cap=PERSON_VALUE_CAP, on_input=on_input)
        if result.exit_code is not None:
            printer.finish_line()
            raise LispExited(result.exit_code)
        ok = show_result(result, printer, streamed) and ok
        if result.interrupted and not result.timed_out:
            return False  # the person pressed Ctrl-C: stop, as a shell script would
    if problem is not None:
        # `<stdin>:LINE:COL: message`, as `lispshell check` and compilers print it, so that
        # editors and CI logs can jump to it.
        printer.error(problem.describe(text, source))
        ok = False
    return ok


def _run(texts: list[tuple[str, str]], lisp: str, config: dict, target=None,
         out: IO[str] | None = None, err: IO[str] | None = None, on_input=no_input) -> int:
    """`target` (a connection.Target): evaluate in that running image instead of a child;
    it is disconnected at the end and keeps running."""
    printer = _Printer(out or sys.stdout, err or sys.stderr)
    try:
        if target is not None:
            from lispshell.lisp.connection import connect_session
            session = connect_session(target, config)
        else:
            from lispshell.lisp.session import make_session
            from lispshell.lisp.session import init_failure
            session = make_session(lisp, config)
            session.start(wait=True)
            if init_failure(session):
                printer.error(f"lispshell: {init_failure(session)}")
    except Exception as exc:  # a missing binary, a bad command in the config, nothing listening
        printer.error(f"lispshell: {exc}" if target is not None
                      else f"lispshell: cannot start {lisp}: {exc}")
        return 2
    try:
        ok = True
        for source, text in texts:
            ok = evaluate_text(session, text, lisp, printer, source, on_input) and ok
        return 0 if ok else 1
    except LispExited as exc:
        return exc.code
    except KeyboardInterrupt:
        printer.error("lispshell: interrupted")
        return 130
    finally:          # a closed pipe (`| head`) ends the run in cli.main, after this
        session.close()


def run_forms(forms: list[str], lisp: str, config: dict, target=None) -> int:
    """`lispshell -e FORM -e FORM`: evaluate each, print its results, exit."""
    for form in forms:
        # `-e ',help'` means the REPL's command; to CL and Guile it is a reader error, to
        # Clojure (where a comma is whitespace) the symbol `help`.
        command = re.match(r"\s*,([A-Za-z][\w-]*)\s*(\S.*)?$", form, re.S)
        if command:
            print(f"lispshell: ,{command.group(1)} is a REPL command; -e takes Lisp forms "
                  "(commands work at the interactive prompt: run lispshell without -e)",
                  file=sys.stderr)
            return 2
    return _run([(f"-e #{i}", form) for i, form in enumerate(forms, 1)], lisp, config, target,
                on_input=stdin_lines)


def run_stream(stream: IO[str], lisp: str, config: dict, target=None) -> int:
    """`lispshell < file`: evaluate every form read from `stream`, in order."""
    try:
        text = stream.read()
    except UnicodeDecodeError as exc:
        print(f"lispshell: standard input is not UTF-8 text: {exc}", file=sys.stderr)
        return 2
    return _run([("<stdin>", text)], lisp, config, target)
