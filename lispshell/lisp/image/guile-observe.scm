;;; lispshell's observing helpers for Guile: trace with a log, time, profile. Evaluated after
;;; guile-project.scm, in the module (lispshell project) (its JSON and answering are shared);
;;; see lispshell/lisp/observe.py.
;;;
;;; Trace replaces the variable's procedure with a wrapper that logs each call (as Guile's own
;;; ,trace wraps an application); untrace puts the original back, unless the person redefined
;;; the procedure since (then the new definition stays, and the trace is forgotten). Calls go
;;; through the variable, so a recursive procedure defined at the REPL traces its inner calls.

(use-modules (ice-9 format) (ice-9 pretty-print) (statprof) (ice-9 threads))

(define log-size 10000)
(define call-log (make-vector log-size #f))
(define calls 0)
(define traced '())                     ; (label variable original wrapper), oldest first
(define trace-depth (make-parameter 0))
(define trace-thread #f)
(define log-mutex (make-mutex))

(define (shown x)
  "X written for a trace line, bounded (a long or circular value is cut, its length said)."
  (let ((text (call-with-output-string
               (lambda (port) (truncated-print x port #:width 200)))))
    text))

(define (indent depth)
  (if (< depth 40)
      (make-string (* 2 depth) #\space)
      (string-append (make-string 80 #\space) "[" (number->string depth) "] ")))

(define (thread-label)
  (if (or (not trace-thread) (eq? (current-thread) trace-thread))
      ""
      (format #f "  [thread ~a]" (current-thread))))

;; A call: #(id depth label args thread outcome result)
(define (log-call! call)
  (with-mutex log-mutex
    (set! calls (1+ calls))
    (vector-set! call 0 calls)
    (vector-set! call-log (modulo (1- calls) log-size) call)))

(define (condition-text e)
  (string-trim-both
   (call-with-output-string
    (lambda (port)
      (false-if-exception
       (if (exception? e)
           (print-exception port #f (exception-kind e) (exception-args e))
           (write e port)))))))

(define (traced-call label proc args)
  (let* ((depth (trace-depth))
         (call (vector 0 depth label (map shown args) (thread-label) 'running #f))
         (done #f))
    (log-call! call)
    (format #t "~a(~a~{ ~a~})~a~%" (indent depth) label (vector-ref call 3) (vector-ref call 4))
    (dynamic-wind
      (lambda () #f)
      (lambda ()
        (call-with-values
            (lambda ()
              (with-exception-handler
                  (lambda (e)
                    (when (eq? (vector-ref call 5) 'running)
                      (vector-set! call 5 'error)
                      (vector-set! call 6 (condition-text e)))
                    (raise-exception e))
                (lambda () (parameterize ((trace-depth (1+ depth))) (apply proc args)))))
          (lambda results
            (set! done #t)
            (vector-set! call 5 'values)
            (vector-set! call 6 (map shown results))
            (format #t "~a=> ~{~a~^, ~}~%" (indent depth) (vector-ref call 6))
            (apply values results))))
      (lambda ()
        (unless done
          (when (eq? (vector-ref call 5) 'running) (vector-set! call 5 'unwound))
          (format #t "~a~a~%" (indent depth)
                  (if (eq? (vector-ref call 5) 'error)
                      (string-append "!! " (vector-ref call 6))
                      "<< unwound (a non-local exit)")))))))

(define (split-names text)
  (filter (lambda (s) (not (string-null? s)))
          (string-split (string-map (lambda (c) (if (char-whitespace? c) #\space c)) text)
                        #\space)))

(define (trace-target name module)
  (let* ((sym (string->symbol name))
         (var (module-variable module sym)))
    (cond ((not (and var (variable-bound? var)))
           (error (format #f "~a is not defined in ~a (nothing to trace)" name
                          (module-name module))))
          ((macro? (variable-ref var))
           (error (format #f "~a is a macro: it runs when code is expanded, not when it is ~
                              called, so it cannot be traced (trace the procedures its ~
                              expansion calls)" name)))
          ((not (procedure? (variable-ref var)))
           (error (format #f "~a is not a procedure (nothing to trace)" name)))
          (else var))))

(define (still-traced? entry)
  (eq? (variable-ref (list-ref entry 1)) (list-ref entry 3)))

(define (traced-list)
  (cons 'arr (map (lambda (e) (if (still-traced? e)
                                  (car e)
                                  (string-append (car e) " (redefined since: not traced)")))
                  traced)))

(define (trace-add names module-text)
  (answering
   (let ((module (find-module module-text)) (added '()) (refused '()))
     (set! trace-thread (current-thread))
     (for-each
      (lambda (name)
        (catch #t
          (lambda ()
            (let* ((var (trace-target name module))
                   (old (assq-ref (map (lambda (e) (cons (cadr e) e)) traced) var)))
              (unless (and old (still-traced? old))
                (when old (set! traced (delete old traced)))
                (let* ((original (variable-ref var))
                       (label name)
                       (wrapper (lambda args (traced-call label original args))))
                  (variable-set! var wrapper)
                  (set! traced (append traced (list (list label var original wrapper))))))
              (set! added (cons name added))))
          (lambda (key . args)
            (set! refused (cons (list 'obj 'name name 'why
                                      (string-trim-both (error-text key args)))
                                refused)))))
      (split-names names))
     (json (list 'obj 'traced (cons 'arr (reverse added)) 'refused (cons 'arr (reverse refused))
                 'all (traced-list))))))

(define (trace-remove names module-text)
  (answering
   (let* ((wanted (split-names names))
          (chosen (if (null? wanted) traced
                      (filter (lambda (e) (member (car e) wanted)) traced)))
          (unknown (filter (lambda (n) (not (assoc n traced))) wanted)))
     (for-each (lambda (e)
                 (when (still-traced? e) (variable-set! (cadr e) (caddr e)))
                 (set! traced (delete e traced)))
               chosen)
     (json (list 'obj 'untraced (cons 'arr (map car chosen))
                 'not_traced (cons 'arr unknown) 'all (traced-list))))))

(define (trace-list)
  (answering (json (list 'obj 'all (traced-list)))))

(define (trace-log name limit)
  (answering
   (with-mutex log-mutex
     (let* ((held (min calls log-size))
            (all (let loop ((i (- calls held)) (out '()))
                   (if (< i calls)
                       (loop (1+ i) (cons (vector-ref call-log (modulo i log-size)) out))
                       (reverse out))))
            (wanted (string-trim-both name))
            (chosen (if (string-null? wanted)
                        all
                        (let loop ((rest all) (inside #f) (out '()))
                          (if (null? rest)
                              (reverse out)
                              (let* ((c (car rest))
                                     (inside (if (and inside (<= (vector-ref c 1) inside)) #f inside))
                                     (inside (or inside (and (string=? (vector-ref c 2) wanted)
                                                             (vector-ref c 1)))))
                                (loop (cdr rest) inside (if inside (cons c out) out)))))))
            (n (string->number (string-trim-both limit)))
            (shown-calls (if (and n (> (length chosen) n)) (list-tail chosen (- (length chosen) n))
                             chosen)))
       (json (list 'obj 'total calls 'dropped (- calls held) 'matched (length chosen)
                   'calls (cons 'arr
                                (map (lambda (c)
                                       (list 'obj 'id (vector-ref c 0) 'depth (vector-ref c 1)
                                             'name (vector-ref c 2)
                                             'args (cons 'arr (vector-ref c 3))
                                             'outcome (symbol->string (vector-ref c 5))
                                             'result (let ((r (vector-ref c 6)))
                                                       (if (list? r) (cons 'arr r) (or r 'null)))
                                             'thread (string-trim-both (vector-ref c 4))))
                                     shown-calls))))))))

(define (trace-clear)
  (answering
   (with-mutex log-mutex
     (let ((had (min calls log-size)))
       (vector-fill! call-log #f)
       (set! calls 0)
       (json (list 'obj 'cleared had))))))

(define (observe-ready)
  (json (list 'obj 'ready #t)))

;;; ------------------------------------------------------------------------ time, profile

(define (gc-figure key)
  (or (assq-ref (gc-stats) key) 0))

(define (timed thunk)
  "THUNK's values, after a line with the real, run and GC time and the bytes allocated."
  (let ((real0 (get-internal-real-time)) (run0 (get-internal-run-time))
        (gc0 (gc-figure 'gc-time-taken)) (bytes0 (gc-figure 'heap-total-allocated)))
    (call-with-values thunk
      (lambda results
        (let ((per (exact->inexact internal-time-units-per-second)))
          (format #t "; real ~,3f s  run ~,3f s (user + system)  GC ~,3f s  allocated ~:d bytes~%"
                  (/ (- (get-internal-real-time) real0) per)
                  (/ (- (get-internal-run-time) run0) per)
                  (/ (- (gc-figure 'gc-time-taken) gc0) per)
                  (- (gc-figure 'heap-total-allocated) bytes0))
          (apply values results))))))

(define (own-row? line module)
  "Whether a row of statprof's flat table names a procedure the person's module defines."
  (let ((words (split-names line)))
    (and (>= (length words) 4)
         (string->number (car words))
         (let* ((name (car (last-pair words)))       ; "<current input>:2:0:burn" or "burn"
                (colon (string-rindex name #\:))
                (var (module-local-variable
                      module (string->symbol (if colon (substring name (1+ colon)) name)))))
           (and var (variable-bound? var) (procedure? (variable-ref var)))))))

(define (profiled thunk seconds)
  "THUNK's values, run once or again until SECONDS (a decimal string) have passed, under
statprof; then its flat table, the person's own procedures marked with *."
  (let* ((module (current-module))
         (secs (or (string->number seconds) 0))
         (end (+ (get-internal-real-time) (inexact->exact (round (* secs internal-time-units-per-second)))))
         (runs 0)
         (results '())
         (table (call-with-output-string
                 (lambda (port)
                   (statprof (lambda ()
                               (let loop ()
                                 (set! results (call-with-values thunk list))
                                 (set! runs (1+ runs))
                                 (when (< (get-internal-real-time) end) (loop))))
                             #:hz 1000 #:count-calls? #f #:display-style 'flat #:port port)))))
    (format #t "; profiled with statprof (1 ms samples): ~a run~:p; * marks your own procedures~%"
            runs)
    (for-each (lambda (line)
                (format #t "~a~a~%" (if (own-row? line module) "*" " ") line))
              (let ((lines (string-split table #\newline)))
                (if (and (pair? lines) (string-null? (car (last-pair lines))))
                    (list-head lines (1- (length lines)))
                    lines)))
    (apply values results)))
