;;; The look-up helpers (describe, symbol_value, macroexpand, apropos) for Guile, loaded once
;;; per image as (lispshell introspect). See lispshell/lisp/introspect.py for the rules they keep.
(define-module (lispshell introspect)
  #:use-module (ice-9 session)
  #:use-module (ice-9 pretty-print)
  #:use-module (ice-9 textual-ports)
  #:use-module (ice-9 documentation)
  #:export (answer-mark describe-name value-of-name expand apropos* arglist inspect-form inspect-part
            inspect-back))

;; The answer's header, parameterized by each call to a mark of its own
;; (lispshell/lisp/introspect.py): a thread left running sees only this default.
(define answer-mark (make-parameter "@@lispshell "))

(define (emit status body)
  (display (string-append (answer-mark) status " " (number->string (string-length body)) "\n"
                          body (answer-mark)))
  (force-output)
  (if #f #f))

(define (clip s n)
  (if (> (string-length s) n)
      (string-append (substring s 0 n) "... [cut]")
      s))

;; Values are printed bounded: at most N characters are ever built (a huge list costs no
;; more than its first N characters), and a value nested deeper than Guile's C `write` can
;; recurse (it kills the process at some 50,000 levels) goes to the Scheme-level truncated
;; printer, as the loop does (lispshell/lisp/image/guile-loop.scm, depth-kind).
(define (depth-kind v limit)
  (define (walk seen)
    (let loop ((todo (list (cons v 0))) (budget 1000000) (deep #f) (shared #f))
      (if (or (null? todo) (zero? budget))
          (and deep (if (or shared (zero? budget)) 'deep-shared 'deep))
          (let* ((x (caar todo)) (d (cdar todo)) (rest (cdr todo))
                 (deep (or deep (> d limit))))
            (cond ((and deep (not seen)) 'deep)
                  ((and seen (or (pair? x) (vector? x)) (hashq-ref seen x))
                   (loop rest (- budget 1) deep #t))
                  ((pair? x)
                   (when seen (hashq-set! seen x #t))
                   (loop (cons* (cons (car x) (+ d 1)) (cons (cdr x) d) rest) (- budget 1)
                         deep shared))
                  ((vector? x)
                   (when seen (hashq-set! seen x #t))
                   (let add ((i (- (min 1000 (vector-length x)) 1)) (rest rest))
                     (if (< i 0)
                         (loop rest (- budget 1) deep shared)
                         (add (- i 1) (cons (cons (vector-ref x i) (+ d 1)) rest)))))
                  (else (loop rest (- budget 1) deep shared)))))))
  (and (walk #f) (walk (make-hash-table))))

(define (printed v n)
  (if (depth-kind v 10000)
      (call-with-output-string (lambda (p) (truncated-print v p #:width (min n 10000))))
      (let ((acc (open-output-string)) (count 0))
        (define (put s)
          (let ((room (- n count)))
            (when (> (string-length s) room)
              (display (substring s 0 (max room 0)) acc)
              (set! count n)
              (throw 'lispshell-enough))
            (set! count (+ count (string-length s)))
            (display s acc)))
        (let ((cut (catch 'lispshell-enough
                     (lambda ()
                       (let ((port (make-soft-port
                                    (vector (lambda (c) (put (string c))) put #f #f #f) "w")))
                         (setvbuf port 'none)
                         (write v port)
                         #f))
                     (lambda _ #t))))
          (string-append (get-output-string acc) (if cut "... [cut]" ""))))))

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
                                    "arguments: " (call-shape sym v) "\n"
                                    (let ((d (doc-of v)))
                                      (if d (string-append "doc: " d "\n") ""))))
                    (else (string-append (symbol->string sym) " is a variable\n"
                                         "type: " (type-name v) "\n"
                                         "value: " (printed v 2000) "\n"))))))))))

(define (value-of-name s modname cur)
  (with-name s modname cur
    (lambda (sym mod var)
      (cond
        ((not var) (emit "unknown" (string-append "nothing named " (symbol->string sym)
                                                  " is visible in " (object->string (module-name mod)))))
        ((not (variable-bound? var)) (emit "unbound" (string-append (symbol->string sym) " is unbound")))
        ((macro? (variable-ref var)) (emit "not_variable" (string-append (symbol->string sym) " is a macro, not a variable")))
        (else (let ((v (variable-ref var)))
                (emit "ok" (string-append (type-name v) "\n" (printed v 20000)))))))))

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

(define (doc-of proc)
  ;; Guile's primitives (string-append, hash-ref...) keep their documentation in a file that
  ;; only (ice-9 documentation) reads: procedure-documentation alone has none for them.
  (or (procedure-documentation proc)
      (let ((d (false-if-exception (object-documentation proc))))
        (and (string? d) d))))

(define (first-doc-line doc)
  ;; The first line of text, past that file's "- Scheme Procedure: name args" headers.
  (let loop ((lines (string-split doc #\newline)))
    (if (null? lines)
        ""
        (let ((t (string-trim-both (car lines))))
          (if (or (string-null? t) (string-prefix? "- " t))
              (loop (cdr lines))
              t)))))

;; A primitive's arguments are all `_` to procedure-arguments; its documentation's header
;; "- Scheme Procedure: hash-ref table key [dflt]" names them. Written as the lambda list the
;; rest of the hint uses, "(hash-ref table key #:optional dflt)", since repair reads arities
;; from it (lispshell.syntax.shapes.lambda_list_arity).
(define (header-arglist doc)
  (let ((prefix "- Scheme Procedure: ")
        (line (car (string-split doc #\newline))))
    (and (string-prefix? prefix line)
         (let loop ((words (string-tokenize (substring line (string-length prefix))))
                    (optional? #f) (out '()))
           (if (null? words)
               (string-append "(" (string-join (reverse out) " ") ")")
               (let* ((w (car words))
                      (opens (and (not optional?) (string-index w #\[)))
                      (bare (string-delete (lambda (c) (memv c '(#\[ #\]))) w)))
                 (loop (cdr words) (or optional? opens)
                       (cond ((string-null? bare) out)
                             (opens (cons bare (cons "#:optional" out)))
                             (else (cons bare out))))))))))

(define (call-shape sym proc)
  ;; "(twice x)": the names the person's define gave, a primitive's from its documentation,
  ;; else what procedure-arguments knows.
  (let ((formals (procedure-property proc 'lispshell-formals)))
    (or (header-arglist (or (doc-of proc) ""))
        (and formals (object->string (cons sym formals)))
        (object->string (lambda-list sym proc)))))

(define (lambda-list sym proc)
  ;; (name required... #:optional o... #:key k... . rest), from procedure-arguments.
  (let* ((args (procedure-arguments proc))
         (get (lambda (key) (or (assq-ref args key) '())))
         (rest (assq-ref args 'rest))
         (keys (map (lambda (k) (if (pair? k) (car k) k)) (get 'keyword)))
         (head (append (list sym) (get 'required)
                       (if (null? (get 'optional)) '() (cons #:optional (get 'optional)))
                       (if (null? keys) '() (cons #:key keys)))))
    (if rest (append head rest) head)))

(define (arglist s modname cur)
  ;; For the REPL's toolbar: the procedure's lambda list, then the first line of its doc.
  (with-name s modname cur
    (lambda (sym mod var)
      (let ((v (and var (variable-bound? var) (variable-ref var))))
        (cond
          ((macro? v) (emit "ok" (string-append "(" (symbol->string sym) " ...)\nsyntax")))
          ((procedure? v)
           (emit "ok" (string-append (call-shape sym v) "\n"
                                     (first-doc-line (or (doc-of v) "")))))
          (else (emit "unknown" (string-append (symbol->string sym) " is not a procedure"))))))))

;;; ,inspect: the person's own FORM (they typed it: it is evaluated), then its parts, one
;;; "label<TAB>value" line each after a "type<TAB>value" header.
(define (one-line v)
  (let ((s (printed v 2000)))
    (string-map (lambda (c) (if (char=? c #\newline) #\space c)) s)))

(define (indexed items)
  (let loop ((items items) (i 0) (out '()))
    (if (or (null? items) (= i 5000))
        (reverse out)
        (loop (cdr items) (+ i 1) (cons (cons (number->string i) (car items)) out)))))

(define (procedure-parts p)
  ;; What Geiser's and SLIME's inspectors show of a procedure: name, arguments, documentation
  ;; and where it was defined (compiled procedures keep their source; interpreted ones do not).
  (let ((source (false-if-exception (car ((@ (system vm program) program-sources) p)))))
    (list (cons "name" (or (procedure-name p) '<anonymous>))
          (cons "arguments" (or (false-if-exception ((@ (system vm program) program-lambda-list) p))
                                '<unknown>))
          (cons "documentation" (or (procedure-documentation p) '<none>))
          (cons "source" (if (and source ((@ (system vm program) source:file) source))
                             (format #f "~a:~a" ((@ (system vm program) source:file) source)
                                     ((@ (system vm program) source:line-for-user) source))
                             '<unknown>)))))

(define (parts-of v)
  (cond
    ((procedure? v) (procedure-parts v))
    ((hash-table? v) (hash-map->list (lambda (k x) (cons (one-line k) x)) v))
    ((record? v)
     (let ((rtd (record-type-descriptor v)))
       (map (lambda (f) (cons (symbol->string f) ((record-accessor rtd f) v)))
            (record-type-fields rtd))))
    ((list? v) (indexed v))
    ((pair? v) (list (cons "car" (car v)) (cons "cdr" (cdr v))))
    ((vector? v) (indexed (vector->list v)))
    (else '())))

(define shown-parts #())    ; the parts the last table showed, so that ,inspect N opens part N
(define inspected '())      ; from the object ,inspect FORM showed to this one, newest first

(define (show-parts v)
  (let ((parts (parts-of v)))
    (set! shown-parts (list->vector (map cdr parts)))
    (emit "ok" (string-append
                 (if (record? v)
                     (symbol->string (record-type-name (record-type-descriptor v)))
                     (type-name v))
                 "\t" (one-line v) "\n"
                 (string-concatenate
                   (map (lambda (p) (string-append (car p) "\t" (one-line (cdr p)) "\n"))
                        parts))))))

(define (inspect-form code modname cur)
  (catch #t
    (lambda () (let ((v (eval-string code cur)))
                 (set! inspected (list v))
                 (show-parts v)))
    (lambda (key . args)
      (emit "error" (one-line (cons key args))))))

(define (inspect-part index modname cur)
  (let ((n (string->number index)))
    (if (and (exact-integer? n) (< -1 n (vector-length shown-parts)))
        (begin (set! inspected (cons (vector-ref shown-parts n) inspected))
               (show-parts (vector-ref shown-parts n)))
        (emit "error" (string-append "No part " index ": the last table has "
                                     (number->string (vector-length shown-parts)))))))

(define (inspect-back ignored modname cur)
  (if (and (pair? inspected) (pair? (cdr inspected)))
      (begin (set! inspected (cdr inspected))
             (show-parts (car inspected)))
      (emit "error" "This is the object ,inspect FORM showed: there is none before it")))
