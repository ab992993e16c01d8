"""Regenerate lispshell/syntax/stdlib_arity.py: the argument counts of each dialect's standard
library, read from the Lisps installed here (SBCL's COMMON-LISP package, Guile's (guile)
module, Clojure's clojure.core functions). Repair's shape test uses them as it uses the
hand-written rules of shapes.py: a call with a count outside (fewest, most) cannot be right.
Three more tables only choose among ties (`shapes.library_arity`): SCHEME_LIBRARY, the
procedures Guile's other modules export, CL_LIBRARY, the functions SBCL's other packages
export, CLOJURE_LIBRARY, the public functions of clojure.jar's other namespaces, and
JAVA_CONSTRUCTORS, the public constructors of the JDK's common packages.

    .venv/bin/python bench/stdlib_arities.py [--only SCHEME_LIBRARY,JAVA_CONSTRUCTORS]

Left out: names that are also compound type specifiers in CL (`(mod 8)`, `(cons integer)`,
`(member :a)`...), entries that say nothing ((0, None)), and names shapes.py has rules for
(unless the table had them before the rule).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lispshell.syntax import shapes  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "lispshell", "syntax", "stdlib_arity.py")
CL_TYPE_NAMES = set("""and or not member eql satisfies mod values function cons rational
complex float string vector array bit integer signed-byte unsigned-byte real number character
list sequence pathname logical-pathname atom null simple-array simple-vector simple-string
bit-vector simple-bit-vector base-string simple-base-string short-float single-float
double-float long-float ratio fixnum bignum keyword symbol""".split())

CL_SCRIPT = """
(let ((*print-case* :downcase))
  (do-external-symbols (s :common-lisp)
    (when (and (fboundp s) (not (special-operator-p s)))
      (let* ((f (or (macro-function s) (fdefinition s)))
             (ll (ignore-errors (if (typep f 'generic-function)
                                    (sb-mop:generic-function-lambda-list f)
                                    (sb-kernel:%fun-lambda-list f)))))
        (when (and (listp ll) (null (cdr (last ll))))       ; a proper list
          (format t "~a~{ ~a~}~%" (string-downcase (symbol-name s))
                  (mapcar (lambda (x) (if (and (symbolp x) (char= (char (symbol-name x) 0) #\\&))
                                          (string-downcase (symbol-name x)) "p"))
                          ll)))))))
"""
# SBCL's other packages: each function or macro an SBCL package exports (its own symbols), but CL's
CL_LIBRARY_SCRIPT = """
(let ((*print-case* :downcase))
  (dolist (p (list-all-packages))
    (unless (member (package-name p) '("COMMON-LISP" "KEYWORD" "COMMON-LISP-USER")
                    :test #'string=)
      (do-external-symbols (s p)
        (when (and (eq (symbol-package s) p) (fboundp s) (not (special-operator-p s)))
          (let* ((f (or (macro-function s) (fdefinition s)))
                 (ll (ignore-errors (if (typep f 'generic-function)
                                        (sb-mop:generic-function-lambda-list f)
                                        (sb-kernel:%fun-lambda-list f)))))
            (when (and (listp ll) (null (cdr (last ll))))
              (format t "~a~{ ~a~}~%" (string-downcase (symbol-name s))
                      (mapcar (lambda (x) (if (and (symbolp x)
                                                   (char= (char (symbol-name x) 0) #\\&))
                                              (string-downcase (symbol-name x)) "p"))
                              ll)))))))))
"""
# (fewest optional rest?) of a procedure, over every clause of a case-lambda
# (procedure-minimum-arity reads only the first: intmap-fold's `(f map) | (f map seed) | ...`
# looked like two arguments); a procedure taking keywords has no most
GUILE_ARITY = """
(use-modules (system vm program))
(define (arity p)
  (let ((alists (false-if-exception (program-arguments-alists p))))
    (and (pair? alists)
         (let ((req (map (lambda (a) (length (assq-ref a 'required))) alists))
               (most (map (lambda (a) (+ (length (assq-ref a 'required))
                                         (length (assq-ref a 'optional)))) alists)))
           (list (apply min req) (- (apply max most) (apply min req))
                 (if (or-map (lambda (a) (or (assq-ref a 'rest)
                                             (pair? (or (assq-ref a 'keyword) '()))))
                             alists)
                     1 0))))))
"""
GUILE_SCRIPT = GUILE_ARITY + """
(module-for-each
 (lambda (sym var)
   (when (and (variable-bound? var) (procedure? (variable-ref var)))
     (let ((a (arity (variable-ref var))))
       (when a (format #t "~a ~a ~a ~a~%" sym (car a) (cadr a) (caddr a))))))
 (resolve-interface '(guile)))
"""
GUILE_LIBRARY_SCRIPT = GUILE_ARITY + """
(use-modules (ice-9 ftw))
(define (module-name-of file)
  (false-if-exception
   (call-with-input-file file
     (lambda (p)
       (let loop ((n 0))
         (let ((x (read p)))
           (cond ((or (eof-object? x) (> n 20)) #f)
                 ((and (pair? x) (eq? (car x) 'define-module)) (cadr x))
                 (else (loop (+ n 1))))))))))
(define files '())
(ftw (string-append (%package-data-dir) "/" (effective-version))
     (lambda (f st flag)
       (when (and (eq? flag 'regular) (string-suffix? ".scm" f)) (set! files (cons f files)))
       #t))
(for-each
 (lambda (f)
   (let* ((name (module-name-of f))
          (iface (and (list? name) (false-if-exception (resolve-interface name)))))
     (when iface
       (module-for-each
        (lambda (sym var)
          ;; a procedure exported under another name than its own (the assembler's
          ;; `(emit-instrument-entry* . emit-instrument-entry)`) is not what the module's
          ;; own code calls by that name
          (when (and (variable-bound? var) (procedure? (variable-ref var))
                     (eq? (procedure-name (variable-ref var)) sym))
            (let ((a (arity (variable-ref var))))
              (when a (format #t "~s ~a ~a ~a ~a~%" name sym (car a) (cadr a) (caddr a))))))
        iface))))
 (sort files string<?))
"""
# The public constructors of the JDK's common packages: `package Class fewest most-or--`
JDK_SCRIPT = """
(let [fs (java.nio.file.FileSystems/getFileSystem (java.net.URI/create "jrt:/"))
      pkgs ["java.lang" "java.io" "java.util" "java.util.concurrent" "java.util.concurrent.atomic"
            "java.util.concurrent.locks" "java.util.regex" "java.util.zip" "java.net" "java.nio"
            "java.nio.charset" "java.nio.file" "java.math" "java.text" "java.time" "java.lang.ref"
            "java.lang.reflect" "java.security"]]
  (doseq [p pkgs
          :let [dir (.getPath fs "/modules/java.base" (into-array String (.split p "\\\\.")))]
          :when (java.nio.file.Files/isDirectory dir (make-array java.nio.file.LinkOption 0))
          f (iterator-seq (.iterator (java.nio.file.Files/list dir)))
          :let [n (str (.getFileName f))]
          :when (and (.endsWith n ".class") (not (.contains n "$")))
          :let [c (try (Class/forName (str p "." (subs n 0 (- (count n) 6))) false
                                      (ClassLoader/getSystemClassLoader))
                       (catch Throwable _ nil))]
          :when (and c (java.lang.reflect.Modifier/isPublic (.getModifiers c)))
          :let [ctors (.getConstructors c)]
          :when (seq ctors)]
    (println p (.getSimpleName c) (apply min (map #(.getParameterCount %) ctors))
             (if (some #(.isVarArgs %) ctors)
               "-"
               (apply max (map #(.getParameterCount %) ctors))))))
"""
CLOJURE_SCRIPT = """
(doseq [[s v] (sort-by key (ns-publics 'clojure.core))]
  (let [m (meta v)]
    (when (and (:arglists m) (not (:macro m)) (fn? @v))
      (println (str s) (pr-str (:arglists m))))))
"""

# Clojure's other namespaces (those clojure.jar carries): each public function with its ns
CLOJURE_LIBRARY_SCRIPT = """
(doseq [n '[clojure.string clojure.set clojure.walk clojure.zip clojure.pprint clojure.java.io
            clojure.data clojure.edn clojure.test clojure.template clojure.repl clojure.reflect
            clojure.xml clojure.stacktrace clojure.instant clojure.datafy clojure.java.shell
            clojure.core.reducers clojure.core.protocols clojure.core.server clojure.main
            clojure.java.browse clojure.java.javadoc clojure.inspector clojure.uuid]]
  (try (require n) (catch Throwable _ nil))
  (when (find-ns n)
    (doseq [[s v] (sort-by key (ns-publics n))]
      (let [m (meta v)]
        (when (and (:arglists m) (not (:macro m)) (fn? @v))
          (println (str n) (str s) (pr-str (:arglists m))))))))
"""

# Names that a module commonly imported redefines (SRFI-19's current-time, sxml's filter...),
# or that code often binds as variables in a macro's own binding syntax (`(count (f x))`):
# seen wrongly judged in valid SBCL, Guile and Clojure sources
LEFT_OUT = {"cl": {"count"},
            "scheme": {"define!", "filter", "current-time", "system", "string-compare",
                       "kw-arg-ref", "vector->list", "version", "vector-fill!", "vector-copy",
                       "string-copy", "string->list"},
            "clojure": {"cat", "set"}}


def cl_table() -> dict:
    table = {}
    for line in _sbcl(CL_SCRIPT).splitlines():
        name, *params = line.split()
        if name not in CL_TYPE_NAMES:
            table[name] = _cl_arity(params)
    return table


def cl_library_table() -> dict:
    """Functions SBCL's other packages export (sb-ext, sb-thread, sb-kernel, sb-c...), each
    name with one argument count in all of them."""
    seen: dict[str, set] = {}
    for line in _sbcl(CL_LIBRARY_SCRIPT).splitlines():
        name, *params = line.split()
        seen.setdefault(name, set()).add(_cl_arity(params))
    return {name: arity for name, (arity, *more) in seen.items()
            if not more and name not in CL_TYPE_NAMES}


def _sbcl(script: str) -> str:
    return subprocess.run(["sbcl", "--noinform", "--non-interactive", "--eval",
                           f"(progn {script})"], capture_output=True, text=True,
                          check=True, timeout=300).stdout


def _clojure(script: str) -> str:
    jars = ":".join(f"/usr/share/java/{j}.jar" for j in
                    ("clojure", "spec.alpha", "core.specs.alpha"))
    return subprocess.run(["java", "-cp", jars, "clojure.main", "-e", script],
                          capture_output=True, text=True, check=True, timeout=300).stdout


def _cl_arity(params: list) -> tuple:
    """(fewest, most or None) arguments of a lambda list whose parameters print as `p`."""
    lo = hi = 0
    optional = skip = False
    for p in params:
        if skip:
            skip = False                   # the variable &whole or &environment binds
            continue
        if p in ("&whole", "&environment"):
            skip = True
            continue
        if p == "&optional":
            optional = True
        elif p == "&aux":
            break
        elif p.startswith("&"):            # &rest, &body, &key, &more
            return (lo, None)
        elif optional:
            hi += 1
        else:
            lo += 1
            hi += 1
    return (lo, hi)


def guile_table() -> dict:
    out = subprocess.run(["guile", "--no-auto-compile", "-c", GUILE_SCRIPT],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    table = {}
    for line in out.splitlines():
        name, req, opt, rest = line.split()
        table[name] = (int(req), None if rest == "1" else int(req) + int(opt))
    return table


def guile_library_table() -> dict:
    """Procedures exported by Guile's other modules, each name with one argument count in all
    the modules that export it (SRFI-1's filter and sxml's differ: neither is kept)."""
    out = subprocess.run(["guile", "--no-auto-compile", "-c", GUILE_LIBRARY_SCRIPT],
                         capture_output=True, text=True, check=True, timeout=600).stdout
    seen: dict[str, set] = {}
    for line in out.splitlines():
        *_, name, req, opt, rest = line.split()
        seen.setdefault(name, set()).add((int(req), None if rest == "1" else int(req) + int(opt)))
    return {name: arity for name, (arity, *more) in seen.items() if not more}


def jdk_table() -> dict:
    """`java.io.OutputStreamWriter` -> the fewest and most arguments its public constructors
    take (None: one takes varargs)."""
    out = subprocess.run(["java", "-cp", "/usr/share/java/clojure.jar", "clojure.main", "-e",
                          JDK_SCRIPT], capture_output=True, text=True, check=True,
                         timeout=300).stdout
    table, simple = {}, Counter()
    for line in out.splitlines():
        package, name, lo, hi = line.split()
        table[f"{package}.{name}"] = (int(lo), None if hi == "-" else int(hi))
        simple[name] += 1
    # a simple name two packages share says nothing without the text's imports
    return {q: v for q, v in table.items() if simple[q.rsplit(".", 1)[1]] == 1}


def clojure_table() -> dict:
    out = _clojure(CLOJURE_SCRIPT)
    table = {}
    for line in out.splitlines():
        name, arglists = line.split(" ", 1)
        arity = shapes.lambda_list_arity(f"({name} {arglists[1:-1]})", "clojure")
        if arity:
            table[name] = arity
    return table


def clojure_library_table() -> dict:
    """Functions the other namespaces clojure.jar carries make public (clojure.walk's walk,
    clojure.zip's node...), each name with one count in all of them."""
    out = _clojure(CLOJURE_LIBRARY_SCRIPT)
    seen: dict[str, set] = {}
    for line in out.splitlines():
        _, name, arglists = line.split(" ", 2)
        seen.setdefault(name, set()).add(
            shapes.lambda_list_arity(f"({name} {arglists[1:-1]})", "clojure"))
    return {name: arity for name, (arity, *more) in seen.items() if arity and not more}


def main() -> int:
    # --help says what this does instead of doing it: it rewrites a source file
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="CL,SCHEME,CLOJURE,SCHEME_LIBRARY,JAVA_CONSTRUCTORS,"
                                          "CL_LIBRARY,CLOJURE_LIBRARY",
                        help="the tables to read again (comma-separated); the file's others "
                             "are kept as they are: shapes.py learns rules for names after a "
                             "table is read, and reading it again would drop their counts")
    only = parser.parse_args().only.split(",")
    from lispshell.syntax import stdlib_arity as current
    readers = {"CL": cl_table, "SCHEME": guile_table, "CLOJURE": clojure_table,
               "SCHEME_LIBRARY": guile_library_table, "JAVA_CONSTRUCTORS": jdk_table,
               "CL_LIBRARY": cl_library_table, "CLOJURE_LIBRARY": clojure_library_table}
    unknown = set(only) - readers.keys()
    if unknown:
        parser.error(f"no table {', '.join(sorted(unknown))}; the tables: {', '.join(readers)}")
    tables = {var: read() if var in only else None for var, read in readers.items()}
    if tables["SCHEME_LIBRARY"] is not None:
        # a name (guile) binds is the (guile) one wherever a module does not import another
        guile = tables["SCHEME"] or current.SCHEME
        tables["SCHEME_LIBRARY"] = {k: v for k, v in tables["SCHEME_LIBRARY"].items()
                                    if k not in guile}
    if tables["CL_LIBRARY"] is not None:
        cl = tables["CL"] or current.CL
        tables["CL_LIBRARY"] = {k: v for k, v in tables["CL_LIBRARY"].items() if k not in cl}
    if tables["CLOJURE_LIBRARY"] is not None:
        core = tables["CLOJURE"] or current.CLOJURE
        tables["CLOJURE_LIBRARY"] = {k: v for k, v in tables["CLOJURE_LIBRARY"].items()
                                     if k not in core}
    dialect = {"CL": "cl", "SCHEME": "scheme", "CLOJURE": "clojure", "SCHEME_LIBRARY": "scheme",
               "JAVA_CONSTRUCTORS": "clojure", "CL_LIBRARY": "cl",
               "CLOJURE_LIBRARY": "clojure"}
    lines = ['"""Argument counts of each dialect\'s standard library: name -> (fewest, most or None).',
             "",
             "Generated by bench/stdlib_arities.py from the Lisps installed (SBCL's COMMON-LISP",
             "package, Guile's (guile) module, clojure.core; SCHEME_LIBRARY: the procedures",
             "Guile's other modules export, each name with one count in all of them;",
             "JAVA_CONSTRUCTORS: the public constructors of the JDK's common packages;",
             "CL_LIBRARY: the functions SBCL's other packages export, CLOJURE_LIBRARY those",
             "of the other namespaces clojure.jar carries, each name with one count in all of",
             "them); do not edit by hand.",
             '"""', ""]
    for var, table in tables.items():
        if table is None:
            table = kept = getattr(current, var, {})
        else:
            # a name the table had stays when shapes.py has learned a rule for it since:
            # evidence checks its count where the rule says nothing
            had = getattr(current, var, {})
            kept = {k: v for k, v in sorted(table.items())
                    if v != (0, None) and (k in had or not shapes.known(k, dialect[var]))
                    and k not in LEFT_OUT[dialect[var]]}
        lines.append(f"{var} = {{")
        for k, v in kept.items():
            lines.append(f"    {k!r}: {v!r},")
        lines.append("}")
        lines.append("")
        print(f"{var}: {len(table)} read, {len(kept)} kept" if var in only else
              f"{var}: {len(kept)} as they were")
    with open(OUT, "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
