"""Introspection code for the live-image tools (describe, symbol_value, macroexpand, apropos).

The rule: the model's text is never spliced into code. It travels as an escaped string
literal, and the Lisp reads it itself with read-time evaluation off:
- CL: `*read-eval*` nil AND a copy of the standard readtable in which `#` starts nothing
  (no `#.`, no `#S(...)` constructors, no user reader macros); unqualified names are read
  into a throw-away package and looked up with `find-symbol`, so nothing new is interned.
- Clojure: `*read-eval*` false AND `clojure.edn/read` (no `#=`, no `#java.Class[...]`
  constructors, no user tagged-literal readers); names are looked up in `ns-map` /
  `ns-interns`, never resolved in a way that loads or initialises a class.
- Guile: `read` has no read-time evaluation, but `read-hash-extend` can add `#` syntaxes that
  run code, so names and forms are read with `%read-hash-procedures` emptied, and `#` is
  refused in a name anyway except for the `#{...}#` symbol syntax.
`macroexpand` reads a whole form the same way (CL: the standard readtable without `#S`,
Clojure: no user data readers), then expands it: expanding runs the image's macros, which is
what the tool is for.
The result must be one symbol and nothing else (`foo) (delete-file "x") (` is refused).

The helpers are defined once per image, in their own package / namespace / module, by code
that is itself passed as a string (loaded from a string stream), so the person's package
never gets our symbols. Each call is one form that defines them if missing, then calls one.

Answers come back on standard output: a first line `@@lispshell <status>`, then the text.
"""
from __future__ import annotations

MARK = "@@lispshell "

# ---------------------------------------------------------------------------- Common Lisp
CL_SETUP = r'''
(defun emit (status &optional (body ""))
  (format t "@@lispshell ~a~%~a" status body)
  (finish-output)
  (values))

(defun safe-readtable ()
  ;; '#' starts nothing here: no #. (read-eval), no #S(...) constructors, no user macros.
  (let ((rt (copy-readtable nil)))
    (set-macro-character #\# (lambda (stream char)
                               (declare (ignore stream char))
                               (error "# reader syntax is not accepted in a symbol name"))
                         t rt)
    rt))

(defun form-readtable ()
  ;; The standard syntax (not the person's reader macros, which may run code when read),
  ;; with #. off (*read-eval* nil, bound by the caller) and #S(...) refused: it calls a
  ;; structure constructor, whose slot initforms may do anything.
  (let ((rt (copy-readtable nil)))
    (set-dispatch-macro-character #\# #\S (lambda (stream char arg)
                                             (declare (ignore stream char arg))
                                             (error "#S(...) is not read here"))
                                  rt)
    ;; #n= / #n# build circular forms, on which expansion may never end.
    (dolist (ch '(#\= #\#))
      (set-dispatch-macro-character #\# ch (lambda (stream char arg)
                                             (declare (ignore stream arg))
                                             (error "#~a is not read here" char))
                                    rt))
    rt))

(defun blank-from (string start)
  (not (find-if-not (lambda (ch) (member ch '(#\Space #\Tab #\Newline #\Return #\Page)))
                    string :start start)))

(defun target-package (name)
  (if (or (null name) (string= name ""))
      *package*
      (or (find-package name) (find-package (string-upcase name)))))

(defun qualifier-end (name)
  "(values start-of-symbol-part package-part) for PKG:NAME or PKG::NAME (a colon outside
|...|), or (values 0 nil) for an unqualified name."
  (let ((quoted nil))
    (dotimes (i (length name) (values 0 nil))
      (let ((ch (char name i)))
        (cond ((char= ch #\\) (incf i))
              ((char= ch #\|) (setf quoted (not quoted)))
              ((and (char= ch #\:) (not quoted))
               (return (values (if (and (< (1+ i) (length name)) (char= (char name (1+ i)) #\:))
                                   (+ i 2)
                                   (1+ i))
                               (subseq name 0 i)))))))))

(defun read-name (name package)
  "(values symbol status message): STATUS is ok, unknown, not_symbol or bad_name.
The name is read into a throw-away package and looked up with FIND-SYMBOL, so nothing is
interned anywhere, also for PKG::NAME (which the reader would intern in PKG)."
  (let ((tmp (make-package (format nil "LISPSHELL.READ-~d" (random 1000000000)) :use nil)))
    (unwind-protect
         (handler-case
             (multiple-value-bind (start qualifier) (qualifier-end name)
               (let ((home (cond ((null qualifier) package)
                                 ((string= qualifier "") (find-package "KEYWORD"))
                                 (t (let ((p (read-part qualifier tmp)))
                                      (and (symbolp p)
                                           (or (find-package (symbol-name p))
                                               (find-package (string-upcase (symbol-name p))))))))))
                 (multiple-value-bind (object end) (read-part (subseq name start) tmp)
                   (cond ((null home)
                          (values nil "unknown" (format nil "no package named ~a" qualifier)))
                         ((not (symbolp object))
                          (values nil "not_symbol" (format nil "~s does not read as a symbol" name)))
                         ((not (blank-from (subseq name start) end))
                          (values nil "not_symbol" "more than one datum: give exactly one symbol"))
                         ((or (null (symbol-package object)) (eq (symbol-package object) tmp))
                          (multiple-value-bind (symbol found) (find-symbol (symbol-name object) home)
                            (if found
                                (values symbol "ok" "")
                                (values nil "unknown"
                                        (format nil "no symbol named ~a is accessible in package ~a"
                                                (symbol-name object) (package-name home))))))
                         (t (values object "ok" ""))))))
           (error (e) (values nil "bad_name" (princ-to-string e))))
      (delete-package tmp))))

(defun read-part (text tmp)
  "One datum of TEXT, read with nothing but symbols and numbers possible, into TMP."
  (let ((*read-eval* nil) (*readtable* (safe-readtable)) (*package* tmp) (*read-suppress* nil))
    (if (find #\: text)
        (error "more than one package marker in a symbol name")
        (read-from-string text))))

(defmacro with-name ((symbol name package-name) &body body)
  `(let ((pkg (target-package ,package-name)))
     (if (null pkg)
         (emit "unknown_package" (format nil "no package named ~a" ,package-name))
         (multiple-value-bind (,symbol status message) (read-name ,name pkg)
           (if (string/= status "ok")
               (emit status message)
               (let ((*package* pkg)) ,@body))))))

(defun describe-name (name package-name)
  (with-name (symbol name package-name)
    (emit "ok" (with-output-to-string (*standard-output*)
                 (let ((*print-length* 20) (*print-level* 4))
                   (describe symbol))))))

(defun value-of-name (name package-name)
  (with-name (symbol name package-name)
    (if (boundp symbol)
        (let ((value (symbol-value symbol)))
          (emit "ok" (format nil "~s~%~a"
                             (type-of value)
                             (let ((*print-length* 50) (*print-level* 6) (*print-circle* t)
                                   (*print-readably* nil))
                               (prin1-to-string value)))))
        (emit "unbound" (format nil "~s has no global value (unbound)~:[~; but names a ~
                                     function or macro~]" symbol (fboundp symbol))))))

(defparameter *never-expanded*
  '("DEFMACRO" "DEFINE-COMPILER-MACRO" "DEFINE-SYMBOL-MACRO" "DEFINE-SETF-EXPANDER" "DEFSETF"
    "DEFINE-MODIFY-MACRO" "DEFINE-METHOD-COMBINATION" "MACROLET" "SYMBOL-MACROLET" "EVAL-WHEN"
    "LOAD-TIME-VALUE")
  "Operators that define or bind macros or evaluate at expansion time: refused, not expanded.")

(defun present-symbols (package)
  (let ((seen (make-hash-table :test 'eq)))
    (do-symbols (s package seen)
      (when (eq (symbol-package s) package) (setf (gethash s seen) t)))))

(defun new-symbols (package before)
  "The symbols present in PACKAGE now that were not in BEFORE."
  (let ((new '()))
    (do-symbols (s package new)
      (when (and (eq (symbol-package s) package) (not (gethash s before)))
        (pushnew s new)))))

(defun expand (text package-name)
  "One step of expansion of a form whose operator is a macro defined in the image: its
expander gets the arguments as data. Defining or binding macros, an operator the image does not
define, and reader tricks are refused; nothing the form names is interned."
  (let ((package (target-package package-name)))
    (if (null package)
        (emit "unknown_package" (format nil "no package named ~a" package-name))
        (handler-case
            (let* ((before (present-symbols package))
                   (form nil) (end 0) (read-created '()))
              (unwind-protect
                   (let ((*package* package) (*read-eval* nil) (*readtable* (form-readtable)))
                     (unwind-protect (multiple-value-setq (form end) (read-from-string text))
                       ;; what reading interned goes again once the expansion is printed
                       (setf read-created (new-symbols package before)))
                     (let ((op (and (consp form) (car form))))
                       (cond ((not (blank-from text end))
                              (emit "bad_form" "more than one form: give exactly one"))
                             ((not (consp form))
                              (emit "refused" "give one macro form, (operator argument...)"))
                             ((not (and op (symbolp op)))
                              (emit "refused" "the operator is not a symbol"))
                             ((member (symbol-name op) *never-expanded* :test #'string=)
                              (emit "refused" (format nil "~a defines or binds macros (or runs ~
                                      code when expanded): it is not expanded" op)))
                             ((special-operator-p op)
                              (emit "not_macro" (let ((*print-case* :downcase))
                                                  (prin1-to-string form))))
                             ((macro-function op)
                              (emit "ok" (let ((*print-case* :downcase) (*print-right-margin* 100))
                                           (with-output-to-string (s)
                                             (pprint (macroexpand-1 form) s)))))
                             ((fboundp op)
                              (emit "not_macro" (let ((*print-case* :downcase))
                                                  (prin1-to-string form))))
                             (t (emit "refused" (format nil "~a is not defined in the image: ~
                                                             only macros it defines are expanded"
                                                        op))))))
                (dolist (s read-created) (unintern s package))))
          (error (e) (emit "error" (princ-to-string e)))))))

(defun apropos* (pattern package-name)
  (let ((package (and package-name (string/= package-name "")
                      (target-package package-name))))
    (if (and package-name (string/= package-name "") (null package))
        (emit "unknown_package" (format nil "no package named ~a" package-name))
        (let* ((symbols (apropos-list pattern package))
               (n (length symbols)))
          (emit "ok"
                (with-output-to-string (s)
                  (dolist (symbol (subseq symbols 0 (min n 100)))
                    (format s "~s~:[~; function~]~:[~; macro~]~:[~; variable~]~%"
                            symbol (and (fboundp symbol) (not (macro-function symbol)))
                            (macro-function symbol) (boundp symbol)))
                  (when (> n 100) (format s "... and ~d more~%" (- n 100)))))))))
'''

# ---------------------------------------------------------------------------- Clojure
CLJ_SETUP = r'''
(ns lispshell.introspect
  (:require [clojure.edn :as edn] [clojure.string :as str] [clojure.repl] [clojure.pprint]))

(defn emit [status body]
  (print (str "@@lispshell " status "\n" body))
  (flush)
  nil)

(defn type-name [x] (if (nil? x) "nil" (.getName (class x))))

(defn read-name [s]
  ;; *read-eval* false and EDN: no #=, no #java.Class[...] constructors, no user tag readers.
  (binding [*read-eval* false]
    (let [r (java.io.PushbackReader. (java.io.StringReader. s))
          x (edn/read {:eof ::eof
                       :default (fn [tag _] (throw (ex-info (str "tagged literal #" tag
                                                                 " is not a symbol") {})))}
                      r)
          more (slurp r)]
      (cond (= x ::eof) [:bad_name "empty name"]
            (not (symbol? x)) [:not_symbol (str (pr-str s) " does not read as a symbol")]
            (not (str/blank? (str/replace more "," ""))) [:not_symbol "more than one datum: give exactly one symbol"]
            :else [:ok x]))))

(defn target-ns [nsname cur]
  (if (str/blank? nsname) cur (find-ns (symbol nsname))))

(defn lookup [sym ns]
  ;; ns-map / ns-interns only: nothing is loaded, no class is initialised.
  (if-let [q (namespace sym)]
    (when-let [n (or (find-ns (symbol q)) (get (ns-aliases ns) (symbol q)))]
      (get (ns-interns n) (symbol (name sym))))
    (or (get (ns-map ns) sym)
        (when (str/includes? (name sym) ".")
          (try (Class/forName (name sym) false (.getContextClassLoader (Thread/currentThread)))
               (catch Throwable _ nil))))))

(defn with-name [s nsname cur f]
  (try
    (if-let [ns (target-ns nsname cur)]
      (let [[status x] (read-name s)]
        (if (not= status :ok)
          (emit (name status) x)
          (f x ns (lookup x ns))))
      (emit "unknown_package" (str "no namespace named " nsname)))
    (catch Throwable e (emit "bad_name" (or (.getMessage e) (str (class e)))))))

(defn describe-name [s nsname cur]
  (with-name s nsname cur
    (fn [sym ns v]
      (cond
        (var? v)
        (let [m (meta v)]
          (emit "ok" (str (pr-str v) (when (:macro m) " (macro)") "\n"
                          (when-let [a (:arglists m)] (str "arglists: " (pr-str a) "\n"))
                          (when-let [d (:doc m)] (str "doc: " d "\n"))
                          (if (bound? v) (str "value type: " (type-name @v) "\n") "unbound\n")
                          (when (:file m) (str "defined at: " (:file m) ":" (:line m) "\n")))))
        (class? v) (emit "ok" (str "class " (.getName ^Class v) "\n"))
        (special-symbol? sym) (emit "ok" (str sym " is a special form\n"))
        :else (emit "unknown" (str "nothing named " sym " in namespace " (ns-name ns)))))))

(defn value-of-name [s nsname cur]
  (with-name s nsname cur
    (fn [sym ns v]
      (cond
        (and (var? v) (bound? v))
        (let [value @v]  ; read before binding the printer variables (they may be asked for)
          (emit "ok" (str (type-name value) "\n"
                          (binding [*print-length* 50 *print-level* 6] (pr-str value)))))
        (var? v) (emit "unbound" (str (pr-str v) " is unbound"))
        (class? v) (emit "not_variable" (str sym " names a class, not a var"))
        (special-symbol? sym) (emit "not_variable" (str sym " is a special form, not a var"))
        :else (emit "unknown" (str "nothing named " sym " in namespace " (ns-name ns)))))))

(def never-expanded
  ;; Macros that define things (definline even evaluates its body while expanding) or build
  ;; classes while expanding: refused, not expanded. Every def... macro is refused too.
  #{"proxy" "gen-class" "gen-interface" "ns" "reify" "extend-type" "extend-protocol"
    "import" "refer-clojure" "with-loading-context"})

(defn refused? [op]
  (let [n (name op)]
    (or (str/starts-with? n "def") (contains? never-expanded n))))

(defn expand [s nsname cur]
  ;; One step of a macro the image defines, its arguments as data: the macro's own function
  ;; is called with the form, as macroexpand-1 would, after the checks below.
  (try
    (if-let [ns (target-ns nsname cur)]
      ;; no #= (read-eval off), no record/constructor syntax (refused when read-eval is off),
      ;; and no user tagged-literal readers (they are functions that could do anything)
      (binding [*read-eval* false *ns* ns *data-readers* {} *default-data-reader-fn* nil]
        (let [r (java.io.PushbackReader. (java.io.StringReader. s))
              form (read r)
              more (slurp r)
              op (when (seq? form) (first form))
              v (when (symbol? op) (lookup op ns))]
          (cond
            (not (str/blank? (str/replace more "," "")))
            (emit "bad_form" "more than one form: give exactly one")
            (not (seq? form)) (emit "refused" "give one macro form, (operator argument...)")
            (not (symbol? op)) (emit "refused" "the operator is not a symbol")
            (special-symbol? op) (emit "not_macro" (pr-str form))
            (not (var? v))
            (emit "refused" (str op " is not defined in " (ns-name ns)
                                 ": only macros the image defines are expanded"))
            (not (:macro (meta v))) (emit "not_macro" (pr-str form))
            (refused? (:name (meta v)))
            (emit "refused" (str op " defines things (or runs code when expanded): it is not expanded"))
            :else
            (let [e (apply @v form nil (rest form))]
              (emit "ok" (binding [*print-length* 200 *print-level* 30]
                           (with-out-str (clojure.pprint/pprint e))))))))
      (emit "unknown_package" (str "no namespace named " nsname)))
    (catch Throwable e (emit "error" (or (.getMessage e) (str (class e)))))))

(defn apropos* [pattern nsname cur]
  (try
    (let [found (sort-by str (clojure.repl/apropos pattern))
          found (if (str/blank? nsname) found (filter #(= (namespace %) nsname) found))
          n (count found)]
      (emit "ok" (str (str/join "\n" (take 100 found)) "\n"
                      (when (> n 100) (str "... and " (- n 100) " more\n")))))
    (catch Throwable e (emit "error" (or (.getMessage e) (str (class e)))))))
'''

# ---------------------------------------------------------------------------- Guile
GUILE_SETUP = r'''
(define-module (lispshell introspect)
  #:use-module (ice-9 session)
  #:use-module (ice-9 pretty-print)
  #:use-module (ice-9 textual-ports)
  #:export (describe-name value-of-name expand apropos*))

(define (emit status body)
  (display (string-append "@@lispshell " status "\n" body))
  (force-output)
  (if #f #f))

(define (clip s n)
  (if (> (string-length s) n)
      (string-append (substring s 0 n) "... [cut]")
      s))

(define (safe-read port)
  ;; Without the person's read-hash-extend procedures (they may run code when read).
  (with-fluids ((%read-hash-procedures '()))
    (read port)))

(define (read-name s)
  ;; Guile's reader has no read-time evaluation, but read-hash-extend can add # syntaxes
  ;; that run code: '#' is refused except in the #{...}# symbol syntax.
  (let ((t (string-trim-both s)))
    (if (and (string-index t #\#)
             (not (and (string-prefix? "#{" t) (string-suffix? "}#" t)
                       (not (string-index (substring t 2 (- (string-length t) 2)) #\#)))))
        (values #f "bad_name" "# reader syntax is not accepted in a symbol name")
        (let* ((port (open-input-string s))
               (x (safe-read port))
               (more (get-string-all port)))
          (cond ((eof-object? x) (values #f "bad_name" "empty name"))
                ((not (symbol? x))
                 (values #f "not_symbol" (string-append (object->string s) " does not read as a symbol")))
                ((not (string-null? (string-trim-both (if (eof-object? more) "" more))))
                 (values #f "not_symbol" "more than one datum: give exactly one symbol"))
                (else (values x "ok" "")))))))

(define (module-name-of s)
  (map string->symbol
       (filter (lambda (p) (not (string-null? p)))
               (string-split (string-trim-both s (lambda (c) (memv c '(#\( #\) #\space)))) #\space))))

(define (target-module name cur)
  (if (string-null? (string-trim-both name))
      cur
      ;; no autoload: looking a module up must not load its code
      (resolve-module (module-name-of name) #f #f #:ensure #f)))

(define (with-name s modname cur k)
  (catch #t
    (lambda ()
      (let ((mod (target-module modname cur)))
        (if (not mod)
            (emit "unknown_package" (string-append "no module named " modname))
            (call-with-values (lambda () (read-name s))
              (lambda (sym status message)
                (if (not (string=? status "ok"))
                    (emit status message)
                    (k sym mod (module-variable mod sym))))))))
    (lambda (key . args)
      (emit "bad_name" (object->string (cons key args))))))

(define (type-name v)
  (cond ((boolean? v) "boolean") ((integer? v) "integer") ((number? v) "number")
        ((string? v) "string") ((symbol? v) "symbol") ((keyword? v) "keyword")
        ((char? v) "char") ((null? v) "empty list") ((list? v) "list") ((pair? v) "pair")
        ((vector? v) "vector") ((hash-table? v) "hash table") ((procedure? v) "procedure")
        ((macro? v) "macro") (else "object")))

(define (describe-name s modname cur)
  (with-name s modname cur
    (lambda (sym mod var)
      (cond
        ((not var) (emit "unknown" (string-append "nothing named " (symbol->string sym)
                                                  " is visible in " (object->string (module-name mod)))))
        ((not (variable-bound? var)) (emit "ok" (string-append (symbol->string sym) " is defined but unbound\n")))
        (else
          (let ((v (variable-ref var)))
            (emit "ok"
                  (cond
                    ((macro? v) (string-append (symbol->string sym) " is a macro\n"))
                    ((procedure? v)
                     (string-append (symbol->string sym) " is a procedure\n"
                                    "arguments: " (object->string (procedure-arguments v)) "\n"
                                    (let ((d (procedure-documentation v)))
                                      (if d (string-append "doc: " d "\n") ""))))
                    (else (string-append (symbol->string sym) " is a variable\n"
                                         "type: " (type-name v) "\n"
                                         "value: " (clip (object->string v) 2000) "\n"))))))))))

(define (value-of-name s modname cur)
  (with-name s modname cur
    (lambda (sym mod var)
      (cond
        ((not var) (emit "unknown" (string-append "nothing named " (symbol->string sym)
                                                  " is visible in " (object->string (module-name mod)))))
        ((not (variable-bound? var)) (emit "unbound" (string-append (symbol->string sym) " is unbound")))
        ((macro? (variable-ref var)) (emit "not_variable" (string-append (symbol->string sym) " is a macro, not a variable")))
        (else (let ((v (variable-ref var)))
                (emit "ok" (string-append (type-name v) "\n" (clip (object->string v) 20000)))))))))

(define never-expanded
  ;; They define or bind macros: refused, not expanded. Core syntax (let-syntax, eval-when,
  ;; define-syntax...) is refused anyway: only plain macros are expanded.
  '(define-syntax-rule define-macro defmacro define-syntax-parameter syntax-parameterize
    define-syntax let-syntax letrec-syntax eval-when))

(define (expand s modname cur)
  ;; One step of a macro the image defines: its transformer gets the form as data. Expanding
  ;; a whole form with `macroexpand` would also evaluate the right-hand sides of let-syntax
  ;; and define-syntax inside it, which is running the model's code.
  (catch #t
    (lambda ()
      (let ((mod (target-module modname cur)))
        (if (not mod)
            (emit "unknown_package" (string-append "no module named " modname))
            (let* ((port (open-input-string s))
                   (form (safe-read port))
                   (more (get-string-all port))
                   (op (and (pair? form) (car form)))
                   (var (and (symbol? op) (module-variable mod op)))
                   (m (and var (variable-bound? var) (variable-ref var))))
              (cond
                ((not (string-null? (string-trim-both (if (eof-object? more) "" more))))
                 (emit "bad_form" "more than one form: give exactly one"))
                ((not (pair? form)) (emit "refused" "give one macro form, (operator argument...)"))
                ((not (symbol? op)) (emit "refused" "the operator is not a symbol"))
                ((memq op never-expanded)
                 (emit "refused" (string-append (symbol->string op)
                                                " defines or binds macros: it is not expanded")))
                ((not m)
                 (emit "refused" (string-append (symbol->string op) " is not defined in "
                                                (object->string (module-name mod))
                                                ": only macros the image defines are expanded")))
                ((not (macro? m)) (emit "not_macro" (object->string form)))
                ((not (eq? (macro-type m) 'macro))
                 (emit "refused" (string-append (symbol->string op)
                                                " is core syntax, not a macro to expand")))
                (else
                 (let ((e (syntax->datum ((macro-transformer m) (datum->syntax #f form)))))
                   (emit "ok" (with-output-to-string (lambda () (pretty-print e)))))))))))
    (lambda (key . args)
      (emit "error" (object->string (cons key args))))))

(define (apropos* pattern modname cur)
  (catch #t
    (lambda ()
      (let* ((found (apropos-internal pattern))
             (n (length found)))
        (emit "ok" (string-append
                     (string-join (map object->string (list-head found (min n 100))) "\n")
                     "\n"
                     (if (> n 100) (string-append "... and " (number->string (- n 100)) " more\n") "")))))
    (lambda (key . args)
      (emit "error" (object->string (cons key args))))))
'''


def string_literal(text: str) -> str:
    """`text` as a string literal that CL, Clojure and Guile all read back unchanged."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def call_form(lisp: str, function: str, *args: str) -> str:
    """One form that defines the helpers if this image lacks them, then calls `function` on
    `args`, each passed as a string literal (never spliced as code)."""
    lits = " ".join(string_literal(a) for a in args)
    if lisp == "sbcl":
        return ('(progn (unless (find-package "LISPSHELL.INTROSPECT") '
                '(let ((*package* (make-package "LISPSHELL.INTROSPECT" :use (list "CL")))) '
                f'(load (make-string-input-stream {string_literal(CL_SETUP)})))) '
                f'(funcall (find-symbol "{function.upper()}" "LISPSHELL.INTROSPECT") {lits}))')
    if lisp == "clojure":
        fn = function
        return ('(do (when-not (and (find-ns (quote lispshell.introspect)) '
                f'(ns-resolve (quote lispshell.introspect) (quote {fn}))) '
                f'(binding [*ns* *ns*] (load-string {string_literal(CLJ_SETUP)}))) '
                f'((ns-resolve (quote lispshell.introspect) (quote {fn})) {lits} *ns*))')
    if lisp == "guile":
        return ('((module-ref (or (let ((m (resolve-module (quote (lispshell introspect)) #f #f #:ensure #f))) '
                f'(and m (module-variable m (quote {function})) m)) '
                f'(begin (eval-string {string_literal(GUILE_SETUP)}) '
                '(resolve-module (quote (lispshell introspect)) #f #f #:ensure #f))) '
                f'(quote {function})) {lits} (current-module))')
    raise ValueError(f"unknown Lisp {lisp!r}")


def parse_answer(output: str) -> tuple[str, str] | None:
    """(status, text) from the helper's output, or None when it printed no answer."""
    at = output.rfind(MARK)
    if at < 0:
        return None
    rest = output[at + len(MARK):]
    status, _, text = rest.partition("\n")
    return status.strip(), text
