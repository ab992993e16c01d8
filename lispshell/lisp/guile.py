"""Guile 3: the bootstrap loop sent to a fresh `guile -q` and the few things that differ.

Why not the stock REPL: it compiles every form, and Guile 3.0.8 dies after about 1,900
compiled forms ("Too many root sets"). Our loop evaluates with `primitive-eval` in the current
module instead (the interpreter: no compilation, no root sets, and faster for small forms).
The loop itself is compiled once, by the stock REPL that reads it.

Everything is local to one `let`, so nothing is added to (guile-user). Errors are caught with
a non-unwinding `with-exception-handler` (so the handler still sees the stack) that aborts to
a prompt: the nested `[1]>` debugger never appears. SIGINT becomes a throw out of the eval
while one runs and is ignored between evals.
"""
from __future__ import annotations

NAME = "guile"
SYNTAX = "scheme"
DEFAULT_COMMAND = ["guile", "--no-auto-compile", "-q"]
INTERRUPT_TYPE = "interrupt"


def code_length(text: str) -> int:
    """Length as the loop counts it when it reads the request: characters."""
    return len(text)


def prepare(code: str) -> str:
    return code


_BOOT = r"""
(let* ((marker (string-append (string (integer->char 30)) "@NONCE@"))
       (in (current-input-port))
       (out (current-output-port))
       (read-line (@ (ice-9 rdelim) read-line))
       (get-string-n (@ (ice-9 textual-ports) get-string-n))
       (evaluating #f))
  (define (seg tag)
    (display marker out)
    (write-char tag out))
  (define (exn-message kind args)
    ;; Guile's own errors carry (subr message format-args rest): say it as the REPL does.
    (or (false-if-exception
         (and (list? args) (= (length args) 4) (string? (cadr args))
              (string-append (if (car args) (format #f "In procedure ~a: " (car args)) "")
                             (apply format #f (cadr args) (or (caddr args) '())))))
        (false-if-exception
         (call-with-output-string (lambda (p) (print-exception p #f kind args))))
        (false-if-exception (format #f "~s" (cons kind args)))
        "(unprintable error)"))
  (define (frame-line f)
    (let ((name (frame-procedure-name f))
          (src (frame-source f)))
      (cond ((and src (cadr src) (not (string-prefix? "ice-9/" (cadr src))))
             (format #f "~a at ~a:~a:~a" (or name "(anonymous)") (cadr src)
                     (+ 1 (caddr src)) (cdddr src)))
            (name (format #f "~a" name))
            (else #f))))
  (define (backtrace stack)
    ;; The frames between the raise and our loop, innermost first, at most 12.
    (let ((n (stack-length stack)))
      (let loop ((i 0) (started #f) (acc '()))
        (if (or (= i n) (= (length acc) 12))
            (reverse acc)
            (let* ((f (stack-ref stack i))
                   (name (frame-procedure-name f)))
              (cond ((memq name '(with-exception-handler call-with-prompt))
                     (reverse acc))
                    ((not started)
                     (loop (+ i 1) (memq name '(raise-exception throw error scm-error)) acc))
                    (else
                     (let ((line (false-if-exception (frame-line f))))
                       (loop (+ i 1) #t (if line (cons line acc) acc))))))))))
  (define (describe exn stack)
    (let ((bt (or (false-if-exception (backtrace stack)) '())))
      (cond ((and (exception? exn) (eq? (exception-kind exn) 'lispshell-interrupt))
             (list "interrupt" "Interrupted" bt))
            ((exception? exn)
             (let ((kind (exception-kind exn)))
               (list (format #f "~a" kind) (exn-message kind (exception-args exn)) bt)))
            (else
             (list "raise" (or (false-if-exception (format #f "~s" exn)) "?") bt)))))
  (define (eval-forms code)
    ;; Each form in turn, in the current module; the last form's values.
    (let ((port (open-input-string code)))
      (let loop ((vals '()))
        (let ((form (read port)))
          (if (eof-object? form)
              vals
              (loop (call-with-values (lambda () (primitive-eval form)) list)))))))
  (define (printable vals)
    (if (and (= (length vals) 1) (unspecified? (car vals))) '() vals))
  (define (run-eval code)
    ;; #f, or (type message backtrace) if the code failed.
    (let ((tag (make-prompt-tag "lispshell")))
      (call-with-prompt tag
        (lambda ()
          (with-exception-handler
           (lambda (exn) (abort-to-prompt tag (describe exn (make-stack #t))))
           (lambda ()
             (let ((empty (open-input-string "")))
               (parameterize ((current-input-port empty)
                              (current-output-port out)
                              (current-error-port out)
                              (current-warning-port out))
                 (set! evaluating #t)
                 (for-each (lambda (v) (seg #\V) (write v out))
                           (printable (eval-forms code)))
                 (set! evaluating #f)
                 #f)))))
        (lambda (k err) (set! evaluating #f) err))))
  (define (answer-eval code)
    (let ((err (run-eval code)))
      (when err
        (seg #\E) (display (car err) out)
        (seg #\M) (display (cadr err) out)
        (for-each (lambda (line) (seg #\B) (display line out)) (caddr err)))))
  (define (completions prefix)
    (let ((seen (make-hash-table)) (acc '()))
      (define (consider sym)
        (let ((s (symbol->string sym)))
          (when (and (string-prefix? prefix s) (not (hash-ref seen s)))
            (hash-set! seen s #t)
            (set! acc (cons s acc)))))
      (let ((m (current-module)))
        (module-for-each (lambda (sym var) (consider sym)) m)
        (for-each (lambda (i) (module-for-each (lambda (sym var) (consider sym)) i))
                  (module-uses m)))
      (let ((sorted (sort acc string<?)))
        (if (> (length sorted) 500) (list-head sorted 500) sorted))))
  (define (answer-completions prefix)
    (for-each (lambda (s) (seg #\V) (display s out))
              (or (false-if-exception (completions prefix)) '())))
  (define (read-request)
    ;; The next request: (kind text id); the header is <kind><length> <id>. Blank lines
    ;; (the newline after the bootstrap) are skipped; end of input ends Guile.
    (let loop ()
      (let ((line (read-line in)))
        (cond ((eof-object? line) (primitive-exit 0))
              ((string-null? line) (loop))
              (else
               (let* ((space (string-index line #\space))
                      (n (string->number (substring line 1 space))))
                 (list (string-ref line 0) (if (zero? n) "" (get-string-n in n))
                       (substring line (+ space 1)))))))))
  (set-port-encoding! in "UTF-8")
  (set-port-encoding! out "UTF-8")
  (set-port-conversion-strategy! out 'substitute)
  ;; Guile leaves a tty's stdout unbuffered: one write(2) per display. Line buffering still
  ;; streams output line by line, and sends each answer (one line) in one write.
  (setvbuf out 'line)
  (sigaction SIGINT (lambda (sig) (when evaluating (throw 'lispshell-interrupt))))
  (set-current-module (resolve-module '(guile-user)))
  (let ((id "0"))
    ;; Each answer ends with the module and the id of its request, so a stray answer can
    ;; never be taken for the next one.
    (let loop ()
      (catch #t
        (lambda ()
          (seg #\P) (display (module-name (current-module)) out)
          (seg #\D) (display id out) (newline out)
          (force-output out)
          (let ((req (read-request)))
            (set! id (caddr req))
            (case (car req)
              ((#\E #\N) (answer-eval (cadr req)))   ; no REPL history variables here
              ((#\C) (answer-completions (cadr req)))
              ((#\Q) (primitive-exit 0)))))
        (lambda (key . args)
          (unless (eq? key 'lispshell-interrupt)
            (false-if-exception
             (begin (seg #\E) (display "lispshell-protocol-error" out)
                    (seg #\M) (display (exn-message key args) out))))))
      (loop))))
"""


def bootstrap(nonce: str) -> str:
    return _BOOT.replace("@NONCE@", nonce)
