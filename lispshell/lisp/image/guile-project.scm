;;; lispshell's project helpers for Guile: load a file with its compiler warnings, find
;;; definitions, the source files to scan for callers, and a module's public names. Defined
;;; once per image as the module (lispshell project) (see lispshell/tools/project_tools.py).
;;;
;;; Every entry point takes strings and answers one string: JSON, ASCII only. Names are never
;;; READ: string->symbol makes the symbol, and module-variable looks it up without defining it.

(define-module (lispshell project)
  #:use-module (system base compile)
  #:use-module (system vm program)
  #:use-module (ice-9 match)
  #:use-module ((srfi srfi-1) #:select (delete-duplicates))
  #:export (load-file definitions who package-names))

;;; ------------------------------------------------------------------------------- JSON

(define (hex4 code port)
  (let ((digits (number->string code 16)))
    (display "\\u" port)
    (display (make-string (- 4 (string-length digits)) #\0) port)
    (display digits port)))

(define (json-string s port)
  (write-char #\" port)
  (string-for-each
   (lambda (ch)
     (let ((code (char->integer ch)))
       (cond ((char=? ch #\") (display "\\\"" port))
             ((char=? ch #\\) (display "\\\\" port))
             ((or (< code 32) (> code 126))
              (if (> code #xFFFF)
                  (let ((c (- code #x10000)))
                    (hex4 (+ #xD800 (ash c -10)) port)
                    (hex4 (+ #xDC00 (logand c #x3FF)) port))
                  (hex4 code port)))
             (else (write-char ch port)))))
   s)
  (write-char #\" port))

(define (json-write x port)
  "X: a string, an integer, #t, #f, 'null, (obj key value ...) or (arr item ...)."
  (cond ((string? x) (json-string x port))
        ((and (integer? x) (exact? x)) (display x port))
        ((eq? x #t) (display "true" port))
        ((eq? x #f) (display "false" port))
        ((eq? x 'null) (display "null" port))
        ((and (pair? x) (eq? (car x) 'obj))
         (write-char #\{ port)
         (let loop ((rest (cdr x)) (first #t))
           (unless (null? rest)
             (unless first (write-char #\, port))
             (json-string (symbol->string (car rest)) port)
             (write-char #\: port)
             (json-write (cadr rest) port)
             (loop (cddr rest) #f)))
         (write-char #\} port))
        ((and (pair? x) (eq? (car x) 'arr))
         (write-char #\[ port)
         (let loop ((rest (cdr x)) (first #t))
           (unless (null? rest)
             (unless first (write-char #\, port))
             (json-write (car rest) port)
             (loop (cdr rest) #f)))
         (write-char #\] port))
        (else (json-string (object->string x) port))))

(define (json x)
  (call-with-output-string (lambda (port) (json-write x port))))

(define (error-text key args)
  (call-with-output-string
   (lambda (port)
     (false-if-exception (print-exception port #f key args)))))

(define-syntax-rule (answering body ...)
  ;; BODY's JSON answer, or {"error": message}: a missing name is an answer, not an error.
  (catch #t
    (lambda () body ...)
    (lambda (key . args)
      (json (list 'obj 'error (string-trim-both (error-text key args)))))))

;;; ------------------------------------------------------------------------------ names

(define (parse-module-name text)
  "\"(ice-9 match)\" or \"ice-9 match\" as a list of symbols, without READ."
  (map string->symbol
       (filter (lambda (part) (not (string-null? part)))
               (string-split (string-trim-both text (lambda (c) (memv c '(#\( #\) #\space))))
                             #\space))))

(define (find-module text)
  (if (string-null? (string-trim-both text))
      (current-module)
      (let ((name (parse-module-name text)))
        (or (resolve-module name #f #f #:ensure #f)
            (error (format #f "No module named ~a." text))))))

(define (lookup name module-text)
  (let* ((module (find-module module-text))
         (sym (string->symbol name))
         (var (module-variable module sym)))
    (unless (and var (variable-bound? var))
      (error (format #f "No binding named ~a in ~a (nothing was defined)." name
                     (module-name module))))
    (values module sym (variable-ref var))))

(define (owner module sym)
  "The module whose own binding SYM is, seen from MODULE."
  (let loop ((candidates (list module)) (seen '()))
    (match candidates
      (() module)
      ((m . rest)
       (cond ((memq m seen) (loop rest seen))
             ((module-local-variable m sym)
              (if (module-public-interface m) m
                  (or (resolve-module (module-name m) #f #f #:ensure #f) m)))
             (else
              (loop (append rest
                            (map (lambda (i) (or (resolve-module (module-name i) #f #f #:ensure #f) i))
                                 (module-uses m)))
                    (cons m seen))))))))

(define (absolute file)
  (cond ((not (string? file)) #f)
        ((string-prefix? "/" file) file)
        (else (or (%search-load-path file) file))))

(define (kind-of value)
  (cond ((macro? value) "macro")
        ((procedure? value) "procedure")
        (else "variable")))

;;; ---------------------------------------------------------------------------- sources

(define (source-of value)
  (let ((proc (cond ((macro? value) (macro-transformer value))
                    ((procedure? value) value)
                    (else #f))))
    (and proc (program? proc)
         (false-if-exception (program-source proc 0)))))

(define (definitions name module-text)
  (answering
   (call-with-values (lambda () (lookup name module-text))
     (lambda (module sym value)
       (let* ((home (owner module sym))
              (source (source-of value))
              (entry
               (if source
                   ;; (address file line . column), line and column from 0
                   (list 'obj 'kind (kind-of value) 'name (symbol->string sym)
                         'module (object->string (module-name home))
                         'file (or (absolute (cadr source)) 'null)
                         'line (+ 1 (caddr source)) 'column (+ 1 (cdddr source)))
                   (list 'obj 'kind (kind-of value) 'name (symbol->string sym)
                         'module (object->string (module-name home))
                         'file (or (absolute (module-filename home)) 'null)
                         'locate (symbol->string sym)))))
         (json (list 'obj 'symbol (symbol->string sym)
                     'definitions (if (or (source-of value) (module-filename home))
                                      (list 'arr entry)
                                      (list 'arr)))))))))

(define (loaded-modules)
  (let loop ((pending (list (resolve-module '() #f))) (found '()))
    (match pending
      (() found)
      ((m . rest)
       (loop (append rest (hash-map->list (lambda (k v) v) (module-submodules m)))
             (cons m found))))))

(define (system-file? file)
  (or (string-prefix? (%package-data-dir) file)
      (string-prefix? (%library-dir) file)
      (string-prefix? (%site-dir) file)
      (string-contains file "/share/guile/")))

(define loaded-files '())
;; Files `load-file` loaded (`,load`, the model's load_file): one without a define-module
;; puts its definitions in a module that has no file of its own, whose callers would not be
;; scanned otherwise.

(define (who relation name module-text)
  (answering
   (call-with-values (lambda () (lookup name module-text))
     (lambda (module sym value)
       (let ((files (delete-duplicates
                     (filter (lambda (f) (and f (not (system-file? f))
                                              (file-exists? f)))
                             (append (map (lambda (m) (absolute (module-filename m)))
                                          (loaded-modules))
                                     (reverse loaded-files))))))
         (json (list 'obj 'symbol (symbol->string sym) 'relation relation
                     'names (list 'arr (symbol->string sym))
                     'scan (cons 'arr files)
                     'how "Guile keeps no cross-reference table: the sources of the loaded modules were read")))))))

(define (first-line s)
  (if (string? s)
      (let ((i (string-index s #\newline))) (if i (substring s 0 i) s))
      ""))

(define (arglist value)
  (if (and (procedure? value) (not (macro? value)))
      (or (false-if-exception (object->string (program-lambda-list value))) "")
      ""))

(define (package-names module-text)
  (answering
   (let* ((module (find-module module-text))
          (interface (or (module-public-interface module) module))
          (rows '()))
     (module-for-each
      (lambda (sym var)
        (let ((value (and (variable-bound? var) (variable-ref var))))
          (set! rows (cons (list 'obj 'name (symbol->string sym)
                                 'kind (if (variable-bound? var) (kind-of value) "unbound")
                                 'arglist (if value (arglist value) "")
                                 'doc (if (procedure? value)
                                          (first-line (procedure-documentation value))
                                          ""))
                           rows))))
      interface)
     (let ((sorted (sort rows (lambda (a b) (string<? (list-ref a 2) (list-ref b 2))))))
       (json (list 'obj 'package (object->string (module-name module)) 'exported #t
                   'names (cons 'arr (list-head sorted (min 500 (length sorted))))
                   'total (length sorted)))))))

;;; ---------------------------------------------------------------------------- loading

(define (temp-go)
  (format #f "~a/lispshell-~a-~a.go" (or (getenv "TMPDIR") "/tmp") (getpid) (random 1000000000)))

(define (load-file path)
  (let ((go (temp-go)) (finished #f) (error-message 'null) (warnings ""))
    (set! warnings
      (call-with-output-string
       (lambda (port)
         (parameterize ((current-warning-port port))
           (catch #t
             (lambda ()
               (compile-file path #:output-file go
                             #:opts '(#:warnings (unbound-variable macro-use-before-definition
                                                  arity-mismatch format duplicate-case-datum
                                                  bad-case-datum)))
               (set! loaded-files (cons (absolute path) (delete (absolute path) loaded-files)))
               (save-module-excursion (lambda () (load-compiled go)))
               (set! finished #t))
             (lambda (key . args)
               (set! error-message (string-trim-both (error-text key args)))))))))
    (when (file-exists? go) (delete-file go))
    (json (list 'obj 'finished finished 'error error-message 'warnings warnings
                'package (object->string (module-name (current-module)))))))
