"""What each Lisp *is*, one record per dialect: the single place per-Lisp facts live.

How lispshell *reaches* a Lisp is a transport (a pty child it starts: `session.py`; an nREPL,
Swank or Guile REPL-server connection: `nrepl.py`, `swank.py`, `guile_server.py`), kept apart
from the dialect, in the way pexpect's `replwrap` keeps one mechanism and describes each REPL
as data. Adding a fourth Lisp is one more record here (and its in-image code under `image/`).

The in-image code (`image/*-loop.*`, `*-introspect.*`, `*-project.*`) is named here; the forms
below that call it pass every argument as a string literal, never spliced as code (see
`introspect.py` for the reading rules they keep).

SBCL: the loop lives in its own package, %LISPSHELL. Conditions never reach the debugger: a
`handler-bind` on SERIOUS-CONDITION (which includes SB-SYS:INTERACTIVE-INTERRUPT, what SIGINT
signals) records type, message and a short backtrace, then unwinds to the loop.

Guile: the loop compiles each form that is more than a call on constants and variables, as the
stock REPL does (compiled speed, frames with line:column). Each compiled form is one more root
set of Guile's garbage collector, which aborts at 2,048 ("Too many root sets": the stock REPL
dies after about 1,900 forms), so past a budget the loop interprets (`primitive-eval`) and says
so once (image/guile-loop.scm, `compile?`). Errors are caught with a non-unwinding handler, and
wait in lispshell's own levels (as Guile's `[1]>` would, which never appears); breakpoints and
stepping are Guile's traps and VM hooks, served by the same levels.

Clojure: not /usr/bin/clojure (Debian's wrapper runs rlwrap, whose escape codes put readers out
of step) but clojure.main. SIGINT kills a JVM unless handled: the loop installs a handler that
stops the eval's thread (Thread.stop). Java counts characters in UTF-16 units, hence its
`code_length`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from lispshell.lisp.image import code as image_code


def _chars(text: str) -> int:
    return len(text)


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def string_literal(text: str) -> str:
    """`text` as a string literal that CL, Clojure and Guile all read back unchanged."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def guile_loop_applied(loop: str, arguments: str) -> str:
    """What starts Guile's loop (image/guile-loop.scm) in a stock REPL: the loop compiled at
    optimization level 1 (the REPL's own level, 2, takes some 4 s of CPU for it, against 0.2 s,
    and a loop waiting on its channel gains nothing from it), applied to `arguments`."""
    return (f"(((@ (system base compile) compile) (quote {loop}\n) #:env (current-module) "
            f"#:optimization-level 1) {arguments})\n")


@dataclass(frozen=True)
class Dialect:
    name: str                      # what --lisp and ,lisp take: "sbcl"
    syntax: str                    # the syntax dialect (lispshell.syntax): "cl" | "scheme" | "clojure"
    display: str                   # for people: "SBCL"
    starting_package: str          # shown in the prompt until the image reports its own
    lexer: str                     # Pygments' name for the highlighter
    suffixes: tuple[str, ...]      # source file suffixes; the first names temporary files
    command: tuple[str, ...]       # how to start it as a child
    interrupt_type: str            # the error type the loop reports for an interrupted eval
    loop_file: str                 # image/ files: the framed read-eval-print loop,
    introspect_file: str           # the look-up helpers,
    project_file: str              # and the project helpers,
    observe_file: str              # loaded with them: trace and its log, time, profile
    code_length: Callable[[str], int]            # a request's length as the loop counts it
    _bootstrap: Callable[[str, str], str]        # (loop code, nonce) -> what starts the loop
    _introspect_call: Callable[[str, str, str, str], str]  # (setup, fn, literals, mark) -> form
    _project_call: Callable[[str, str, str], str]
    _in_package: Callable[[str, str], str]       # (package literal, code literal) -> form
    _load_file_shown: Callable[[str], str]       # (path literal) -> what the gate shows
    # (code) -> a form that runs code once and prints its time and allocation first
    _timed: Callable[[str], str]
    # (code, seconds literal, mode) -> a form that runs code under the profiler, prints the table
    _profiled: Callable[[str, str, str], str]
    # A form that returns no values gets "; No values", as SBCL's REPL says; Guile's REPL
    # prints nothing (after define, set!, (values)), and neither does lispshell there.
    says_no_values: bool = True
    # An error waits in a debug level, with frames (lispshell/lisp/levels.py).
    levels: bool = False
    # Without levels, the frame requests the loop still answers about the last error (it
    # unwound, but its captured stack is kept): Guile's backtrace and frame locals.
    last_error_frames: tuple[str, ...] = ()
    # `,step FORM`: the form that evaluates FORM ({code}) stepping, its steps levels whose
    # restarts `,s ,n ,o ,c` invoke (lispshell/lisp/levels.py); "": this Lisp cannot step.
    stepping: str = ""
    # Loads the person's init files as the Lisp's own REPL does, answering the names loaded
    # (lispshell starts the child with them off, to load them after its loop, where an error
    # in one is reported instead of ending the Lisp). "" : this Lisp has none.
    init_form: str = ""
    # Has systems that `,load-system` loads and completes (ASDF): its loop answers Y requests.
    systems: bool = False
    # The request kinds its loop answers (lispshell/lisp/protocol.py): E N C Q at least; Y with
    # `systems`; I F A T with `levels`; F alone with `last_error_frames`. (Clojure's loop
    # answers I F A T too, at a breakpoint's or a step's level: clojure-debug.clj; not declared, as no
    # error opens one.)
    requests: str = "ENCQ"
    # Forms as one form ("{}": the forms), for helpers that take a thunk (time, profile).
    sequence: str = "{}"
    # What `,inspect` with no form looks at: the REPL's last value ("" : this Lisp keeps none).
    last_value: str = ""
    # Why `,invoke` cannot work here (a Lisp without levels); "" when it has them.
    no_restarts: str = "This Lisp offers no restarts."
    # The person's init files as they are named to them ("" : none).
    init_files_shown: str = ""
    # A child's SIGINT names the request it is for: lispshell writes the request's id to the
    # file $LISPSHELL_INTERRUPT_FILE before each one, and the loop's handler acts only for
    # that request. Needed where the image handles a signal late, on a thread of its own
    # (the JVM, whenever a loaded machine gets to it): unnamed, a late one could stop the
    # next eval, and one handled before the loop has read its request would be lost.
    interrupt_names_request: bool = False
    # What `,profile` and the profile tool measure: "cpu", and "alloc" where the profiler can.
    profile_modes: tuple[str, ...] = ("cpu",)
    # apropos matches a regular expression (else a plain substring of the names).
    apropos_regex: bool = False
    # How load_file's compiler notes come back: "entries" (already parsed by the helper), or
    # the name of the text format tools/project_tools.py parses ("guile", "clojure").
    load_notes: str = "entries"
    # `,load` compiles the file alone (its project helper's compile-file-only), then loads the
    # result as the person's form, so that an error while loading waits in a level.
    loads_in_a_level: bool = False
    # "type: message" of the error a lone unbound symbol gets (a word of prose typed as Lisp).
    unbound_error: str = r"\AUNBOUND-VARIABLE: "
    # The command `,m` stands for: Guile's own REPL has `,m` for `,module`; elsewhere it is
    # the one command starting with m, `,macroexpand`.
    m_command: str = "macroexpand"
    # (name literal) -> a form that makes the module NAME current, as Guile's `,module NAME`
    # (it is made if it does not exist); None: this Lisp switches with its own form.
    _set_module: Callable[[str], str] | None = None

    def bootstrap(self, nonce: str) -> str:
        return self._bootstrap(image_code(self.loop_file), nonce)

    def introspect_form(self, function: str, *args: str, mark: str) -> str:
        """One form that defines the look-up helpers if this image lacks them, then calls
        `function` on `args`, each passed as a string literal, with the answer's header `mark`
        bound in this thread only (lispshell.lisp.introspect)."""
        return self._introspect_call(string_literal(image_code(self.introspect_file)), function,
                                     " ".join(string_literal(a) for a in args),
                                     string_literal(mark))

    def project_form(self, function: str, *args: str) -> str:
        setup = image_code(self.project_file) + "\n" + image_code(self.observe_file)
        return self._project_call(string_literal(setup), function,
                                  " ".join(string_literal(a) for a in args))

    def timed_form(self, code: str) -> str:
        """`code` (the person's or the approved model's form) run once, its real, run and GC
        time and bytes allocated printed before its values (lispshell/lisp/observe.py)."""
        return self._timed(code)

    def profiled_form(self, code: str, seconds: float, mode: str = "cpu") -> str:
        return self._profiled(code, string_literal(f"{seconds:g}"), mode)

    def in_package_form(self, package: str, code: str) -> str:
        """One form that evaluates `code` (all its forms, in order) with `package` current and
        leaves the person's own current package as it was."""
        return self._in_package(string_literal(package), string_literal(code))

    def load_file_shown(self, path: str) -> str:
        return self._load_file_shown(string_literal(path))

    def set_module_form(self, name: str) -> str | None:
        """The form that makes module `name` current (`,module NAME`), None if this Lisp has
        no such command (it switches with in-package, in-ns)."""
        return self._set_module(string_literal(name)) if self._set_module else None


SBCL = Dialect(
    name="sbcl", syntax="cl", display="SBCL", starting_package="CL-USER", lexer="common-lisp",
    suffixes=(".lisp", ".cl", ".asd", ".lsp"),
    command=("sbcl", "--noinform", "--no-sysinit", "--no-userinit", "--disable-debugger"),
    interrupt_type="SB-SYS:INTERACTIVE-INTERRUPT",
    loop_file="sbcl-loop.lisp", introspect_file="sbcl-introspect.lisp",
    project_file="sbcl-project.lisp", observe_file="sbcl-observe.lisp", code_length=_chars,
    _bootstrap=lambda loop, nonce: (
        loop + "\n" + image_code("sbcl-debug.lisp")
        + f'\n(in-package "COMMON-LISP-USER")\n(%lispshell::main "{nonce}")\n'),
    # One compilation unit: a helper may call one defined further down, and SBCL would
    # otherwise print an undefined-function warning into the output `,inspect` shows. Loaded
    # again (redefinitions unsaid) when the function is missing: an image lispshell connects
    # to may hold the helpers of an older lispshell.
    _introspect_call=lambda setup, fn, lits, mark: (
        '(progn (unless (let ((p (find-package "LISPSHELL.INTROSPECT"))) '
        f'(and p (fboundp (find-symbol "{fn.upper()}" p)) (find-symbol "*MARK*" p))) '
        '(let ((*package* (or (find-package "LISPSHELL.INTROSPECT") '
        '(make-package "LISPSHELL.INTROSPECT" :use (list "CL"))))) '
        '(handler-bind ((style-warning (function muffle-warning))) '
        f'(with-compilation-unit () (load (make-string-input-stream {setup})))))) '
        f'(progv (list (find-symbol "*MARK*" "LISPSHELL.INTROSPECT")) (list {mark}) '
        f'(funcall (find-symbol "{fn.upper()}" "LISPSHELL.INTROSPECT") {lits})))'),
    _project_call=lambda setup, fn, lits: (
        '(progn (unless (let ((p (find-package "LISPSHELL.PROJECT"))) '
        f'(and p (fboundp (find-symbol "{fn.upper()}" p)))) '
        '(let ((*package* (or (find-package "LISPSHELL.PROJECT") '
        '(make-package "LISPSHELL.PROJECT" :use (list "CL"))))) '
        '(handler-bind ((style-warning (function muffle-warning))) '
        f'(with-compilation-unit () (load (make-string-input-stream {setup})))))) '
        f'(funcall (find-symbol "{fn.upper()}" "LISPSHELL.PROJECT") {lits}))'),
    _in_package=lambda pkg, text: (
        "(let ((*package* (or (find-package " + pkg + ") (find-package (string-upcase "
        + pkg + ")) (error \"No package named ~A.\" " + pkg + ")))) "
        "(with-input-from-string (s " + text + ") (let ((vals nil) (eof (list nil))) "
        "(loop for form = (read s nil eof) until (eq form eof) "
        "do (setf vals (multiple-value-list (eval form)))) (values-list vals))))"),
    _load_file_shown=lambda path: f"(load (compile-file {path}))",
    _timed=lambda code: f'(funcall (find-symbol "TIMED" "LISPSHELL.PROJECT") (lambda () {code}\n))',
    _profiled=lambda code, seconds, mode: (
        f'(funcall (find-symbol "PROFILED" "LISPSHELL.PROJECT") (lambda () {code}\n) '
        f'{seconds} :{mode})'),
    levels=True, systems=True, requests="ENCYIFATQ",
    sequence="(progn\n{}\n)", last_value="*", no_restarts="", init_files_shown="~/.sbclrc",
    profile_modes=("cpu", "alloc"), loads_in_a_level=True,
    # STEP's own form (SBCL); the line break keeps a comment at FORM's end from eating ")".
    stepping="(step {code}\n)",
    init_form=('(let ((loaded (quote ()))) '
               '(dolist (f (list (sb-impl::sysinit-pathname) (sb-impl::userinit-pathname)) '
               '(format nil "~{~a~^, ~}" (reverse loaded))) '
               '(when (and f (probe-file f)) (load f) (push (namestring f) loaded))))'),
)

GUILE = Dialect(
    name="guile", syntax="scheme", display="Guile", starting_package="(guile-user)",
    lexer="scheme", suffixes=(".scm", ".ss", ".sld", ".sls"),
    command=("guile", "--no-auto-compile", "-q"), interrupt_type="interrupt",
    loop_file="guile-loop.scm", introspect_file="guile-introspect.scm",
    project_file="guile-project.scm", observe_file="guile-observe.scm", code_length=_chars,
    levels=True, requests="ENCIFATQ",
    sequence="(begin\n{}\n)", init_files_shown="~/.guile", apropos_regex=True,
    load_notes="guile", no_restarts="",
    # The loop is a procedure of the nonce: applied to it.
    _bootstrap=lambda loop, nonce: guile_loop_applied(loop, f'"{nonce}"'),
    _introspect_call=lambda setup, fn, lits, mark: (
        '(let ((m (or (let ((m (resolve-module (quote (lispshell introspect)) #f #f #:ensure #f))) '
        f'(and m (module-variable m (quote {fn})) (module-variable m (quote answer-mark)) m)) '
        f'(begin (eval-string {setup}) '
        '(resolve-module (quote (lispshell introspect)) #f #f #:ensure #f))))) '
        f'(parameterize (((module-ref m (quote answer-mark)) {mark})) '
        f'((module-ref m (quote {fn})) {lits} (current-module))))'),
    _project_call=lambda setup, fn, lits: (
        "((module-ref (or (resolve-module '(lispshell project) #f #f #:ensure #f) "
        f"(begin (save-module-excursion (lambda () (eval-string {setup}))) "
        "(resolve-module '(lispshell project) #f #f #:ensure #f))) "
        f"'{fn}) {lits})"),
    _in_package=lambda pkg, text: (
        "(let ((m (resolve-module (map string->symbol (string-tokenize (string-trim-both "
        + pkg + " (char-set #\\( #\\))))) #f #f #:ensure #f))) (if m (eval-string "
        + text + " m) (error (string-append \"No module named \" " + pkg + "))))"),
    _load_file_shown=lambda path: f"(load-compiled (compile-file {path}))",
    _timed=lambda code: (f"((module-ref (resolve-module '(lispshell project)) 'timed) "
                         f"(lambda () {code}\n))"),
    _profiled=lambda code, seconds, mode: (
        f"((module-ref (resolve-module '(lispshell project)) 'profiled) (lambda () {code}\n) "
        f"{seconds})"),
    says_no_values=False, unbound_error=r"\Aunbound-variable: ",
    m_command="module",
    # The loop's stepper (image/guile-loop.scm `step-thunk`), found by its thread.
    stepping=("((hashq-ref (module-ref (resolve-module '(lispshell debug)) 'loops) "
              "((@ (ice-9 threads) current-thread))) \"step\" (lambda () {code}\n))"),
    # `,m (ice-9 match)` and `,m ice-9 match` both name (ice-9 match), as in Guile's REPL.
    _set_module=lambda name: (
        "(let* ((text (string-trim-both " + name + ")) "
        "(name (false-if-exception (with-input-from-string (if (string-prefix? \"(\" text) "
        "text (string-append \"(\" text \")\")) read)))) "
        "(if (and (list? name) (pair? name) (and-map symbol? name)) "
        "(begin (set-current-module (resolve-module name)) (if #f #f)) "
        "(scm-error 'misc-error #f \"~a is not a module name: ,module (ice-9 match) names one\" "
        "(list text) #f)))"),
    init_form=('(let ((f (string-append (or (getenv "HOME") "") "/.guile"))) '
               '(if (file-exists? f) (begin (primitive-load f) f) ""))'),
)

CLOJURE = Dialect(
    name="clojure", syntax="clojure", display="Clojure", starting_package="user",
    lexer="clojure", suffixes=(".clj", ".cljc", ".edn"),
    command=("java", "-cp", "/usr/share/java/clojure.jar", "clojure.main"),
    interrupt_type="interrupt", interrupt_names_request=True,
    loop_file="clojure-loop.clj", introspect_file="clojure-introspect.clj",
    project_file="clojure-project.clj", observe_file="clojure-observe.clj",
    code_length=_utf16_units,
    sequence="(do\n{}\n)", last_value="*1", load_notes="clojure",
    no_restarts="Clojure exceptions have no restarts; ,inspect *e shows the last exception's "
                "message, ex-data and cause.",
    # The error helpers first: a top-level `do` compiles its forms one at a time, so the loop
    # can name lispshell.errors/describe. The loop is compiled in a namespace of its own: the
    # classes its `proxy`s make are interned where they are compiled, never in `user`.
    _bootstrap=lambda loop, nonce: (
        "(do (binding [*ns* *ns*] (load-string "
        + string_literal(image_code("clojure-errors.clj")) + ") (load-string "
        + string_literal(image_code("clojure-debug.clj")) + ")) "
        "((binding [*ns* (create-ns (quote lispshell.loop))] (clojure.core/refer (quote clojure.core)) "
        "(eval (read-string " + string_literal(loop) + f'))) "{nonce}"))\n'),
    _introspect_call=lambda setup, fn, lits, mark: (
        '(do (when-not (and (find-ns (quote lispshell.introspect)) '
        f'(ns-resolve (quote lispshell.introspect) (quote {fn})) '
        '(ns-resolve (quote lispshell.introspect) (quote *mark*))) '
        f'(binding [*ns* *ns*] (load-string {setup}))) '
        f'(with-bindings {{(ns-resolve (quote lispshell.introspect) (quote *mark*)) {mark}}} '
        f'((ns-resolve (quote lispshell.introspect) (quote {fn})) {lits} *ns*)))'),
    _project_call=lambda setup, fn, lits: (
        "(do (when-not (find-ns 'lispshell.project) "
        f"(binding [*ns* *ns*] (load-string {setup}))) "
        f"((ns-resolve 'lispshell.project '{fn}) {lits}))"),
    _in_package=lambda pkg, text: (
        "(binding [*ns* (or (find-ns (symbol " + pkg + ")) (throw (ex-info (str \"No "
        "namespace named \" " + pkg + " \".\") {})))] (load-string " + text + "))"),
    _load_file_shown=lambda path: f"(load-file {path})",
    _timed=lambda code: f"((ns-resolve 'lispshell.project 'timed) (fn [] {code}\n))",
    _profiled=lambda code, seconds, mode: (
        f"((ns-resolve 'lispshell.project 'profiled) (fn [] {code}\n) {seconds})"),
    unbound_error=r": Unable to resolve symbol: ",
)

# Every record above: a fourth Lisp is one more record and its image files
# (tests/test_fourth_lisp.py).
DIALECTS: dict[str, Dialect] = {d.name: d for d in list(globals().values())
                                if isinstance(d, Dialect)}
NAMES = tuple(DIALECTS)


def get_dialect(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown Lisp {name!r}: expected one of {', '.join(NAMES)}") from None
