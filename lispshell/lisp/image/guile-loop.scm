;;; lispshell's read-eval-print loop for Guile: a procedure of the session's nonce, typed into a
;;; fresh `guile -q` once and applied to it (see lispshell/lisp/dialects.py, and the frame format
;;; in lispshell/lisp/session.py). Everything is local: nothing is added to (guile-user).
;;; With SERVER-TOKEN it runs in a client of the person's REPL server instead (`guile --listen`,
;;; lispshell/lisp/guile_server.py): their process is not ours, so no SIGINT handler is installed
;;; and leaving ends only this client, never the process. Ctrl-C then comes from a second client,
;;; which calls the procedure registered under SERVER-TOKEN in the (lispshell server) module.
(lambda* (nonce #:optional server-token)
  (let* ((marker (string-append (string (integer->char 30)) nonce))
         (in (current-input-port))
         (out (current-output-port))
         ;; The person's code prints to a port of its own, on a duplicate of OUT's descriptor:
         ;; a thread it leaves running inherits that port and may print while this loop writes
         ;; an answer, and Guile's ports are not safe for two threads at once (bytes one thread
         ;; put in the buffer can be overwritten by the other's: a frame's end lost, and
         ;; lispshell waiting for it for ever). Each port reaches the descriptor by whole
         ;; write(2)s, which the kernel keeps apart.
         (user-out (fdopen (dup->fdes (fileno out)) "w"))
         (read-line (@ (ice-9 rdelim) read-line))
         (get-string-n (@ (ice-9 textual-ports) get-string-n))
         (make-exception-from-throw (@@ (ice-9 exceptions) make-exception-from-throw))
         (evaluating #f)
         (me ((@ (ice-9 threads) current-thread)))
         (form-tag (make-prompt-tag "lispshell-form"))
         ;; Of libgc's 2,048 root sets: see `compile?`.
         (image-budget 1600)
         (budget-said #f)
         ;; The frames of the last error, for `F` requests (levels.py: backtrace, locals):
         ;; an error of a look-up unwinds at once, but a captured stack outlives its extent.
         (last-frames '())
         ;; The debug levels open, innermost first: each (prompt-tag frames). An error of
         ;; the person's eval (E) waits inside its handler, in the error's dynamic extent,
         ;; serving requests there (open-level), as Guile's own REPL enters `[1]`.
         (levels '())
         ;; Breakpoints (lispshell/lisp/breakpoints.py): each a vector (number name condition
         ;; hits model disable where), numbered from 1; `break-hit` opens their level.
         (breakpoints '())
         (breakpoint-count 0)
         ;; The innermost eval running on this loop: (prompt-tag . history?); a breakpoint
         ;; stops only the person's evals (E), never a look-up.
         (current-eval #f)
         ;; Stepping (`step-hook`): the mode ('into 'next 'out, or #f), the frame address
         ;; 'next and 'out are relative to, where the last step stopped (frame address, file,
         ;; line . col), the eval it belongs to (its prompt tag), whether the VM's hooks are
         ;; ours now, the trace level to go back to, and whether a level is open (the forms
         ;; typed there are not stepped).
         (step-mode #f)
         (step-fp 0)
         (step-at #f)
         (step-owner #f)
         (step-hooked #f)
         (step-saved-level 0)
         (step-busy #f)
         ;; While stepping, each call's procedure and arguments by its frame's address: what
         ;; a step shows as the frame's variables (Guile's own liveness data at a stepped
         ;; instruction is often empty, or names another form's slots).
         (step-calls (make-hash-table))
         ;; The code of each compiled form, by the address of its code image: what a step
         ;; shows of the form about to run (a form typed at the prompt has no file).
         (form-texts (make-hash-table))
         (reading-code "")
         ;; The id of the request being answered, shared by the loops of every level.
         (request-id "0"))
    (define (leave status)
      ;; The end of input, a Q request or (exit): a child ends; a server client ends its own
      ;; thread, after closing its connection, and the person's process runs on. Not by
      ;; quitting its REPL: Guile 3.0.8's REPL server then applies the REPL's result as a
      ;; thunk (serve-client's dynamic-wind) and prints "In thread: Wrong type to apply" on
      ;; the person's console; a cancelled thread ends silently.
      (if server-token
          (begin
            ;; its duplicate descriptor would keep the connection open
            (false-if-exception (close-port user-out))
            ((module-ref (resolve-module '(lispshell server)) 'end-client) in))
          (primitive-exit status)))
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
    (define (guile-own? file)
      ;; Guile's own modules are recorded by their name under its load path (the compiler's
      ;; frames of a syntax error, the interpreter's): not the person's.
      (or-map (lambda (dir) (string-prefix? dir file))
              '("ice-9/" "system/" "language/" "srfi/" "oop/" "rnrs/" "scheme/" "sxml/"
                "web/" "texinfo/")))
    (define (source-text src)
      ;; [file:]line:col of a source property (addr file line . col), from 1. (Guile's
      ;; simple `format` here has no ~@[: (ice-9 format) is not loaded.)
      (string-append (if (cadr src) (string-append (cadr src) ":") "")
                     (number->string (+ 1 (caddr src))) ":" (number->string (+ 1 (cdddr src)))))
    (define (frame-call-and-where f)
      ;; As Guile's own ,bt shows a frame: (call . where it is in its source), where being
      ;; line:column, both from 1 as every position lispshell reports (a form typed at the
      ;; prompt has no file, and its lines count from its own start), or "". #f for a frame
      ;; of Guile's own.
      (let ((call (call-with-output-string
                   (lambda (p)
                     ((@ (ice-9 pretty-print) truncated-print)
                      ((@ (system vm frame) frame-call-representation) f) p #:width 160))))
            (src (frame-source f)))
        (cond ((and src (cadr src) (guile-own? (cadr src))) #f)
              (src (cons call (source-text src)))
              ((frame-procedure-name f) (cons call ""))
              (else #f))))
    (define (backtrace stack)
      ;; The frames between the raise and the form (the stack is cut at the form's prompt),
      ;; innermost first, at most 12, each (frame call . where).
      (let ((n (stack-length stack)))
        (let loop ((i 0) (started #f) (acc '()))
          (if (or (= i n) (= (length acc) 12))
              (reverse acc)
              (let* ((f (stack-ref stack i))
                     ;; The frame an async (Ctrl-C) interrupted can fail to say its name.
                     (name (false-if-exception (frame-procedure-name f))))
                (cond ((not started)
                       (loop (+ i 1) (memq name '(raise-exception throw error scm-error)) acc))
                      (else
                       (let ((cw (false-if-exception (frame-call-and-where f))))
                         (loop (+ i 1) #t (if cw (cons (cons f cw) acc) acc))))))))))
    (define (frame-text frame)
      (let ((call (cadr frame)) (where (cddr frame)))
        (if (string-null? where) call (string-append call " at " where))))
    (define (interrupt? exn)
      (and (exception? exn) (eq? (exception-kind exn) 'lispshell-interrupt)))
    (define (describe exn stack)
      ;; Not for Ctrl-C: the frame its async interrupted breaks frame-call-representation
      ;; past what a handler can catch (Guile 3.0.8).
      (let ((bt (if (interrupt? exn) '() (or (false-if-exception (backtrace stack)) '()))))
        (set! last-frames bt)
        (cond ((interrupt? exn) (list "interrupt" "Interrupted" '()))
              ((exception? exn)
               (let ((kind (exception-kind exn)))
                 (list (format #f "~a" kind) (exn-message kind (exception-args exn))
                       (map frame-text bt))))
              (else
               (list "raise" (or (false-if-exception (format #f "~s" exn)) "?")
                     (map frame-text bt))))))
    (define (note-formals! form)
      ;; primitive-eval's closures forget their argument names (procedure-arguments says
      ;; (twice a) of (define (twice x) ...)): a top-level (define (NAME . FORMALS) ...) or
      ;; (define NAME (lambda FORMALS ...)) leaves them on the procedure for the arglist hint.
      (false-if-exception
       (when (and (pair? form) (memq (car form) '(define define*)) (pair? (cdr form)))
         (let* ((head (cadr form))
                (name (if (pair? head) (car head) head))
                (formals (cond ((pair? head) (cdr head))
                               ((and (pair? (cddr form)) (pair? (caddr form))
                                     (memq (car (caddr form)) '(lambda lambda*))
                                     (pair? (cdr (caddr form))))
                                (cadr (caddr form)))
                               (else #f)))
                (value (and formals (symbol? name) (module-ref (current-module) name #f))))
           (when (procedure? value)
             (set-procedure-property! value 'lispshell-formals formals))))))
    (define (simple? form)
      ;; A form that costs next to nothing interpreted: a constant, a variable, a quotation, or
      ;; a call of a procedure (not a macro) on such forms, or a definition or assignment of
      ;; one. `(fib 30)` is one: only its call is interpreted, and `fib` itself runs compiled.
      ;; Compiling it would cost about 4 ms and one of Guile's code images (see `compile?`).
      (define m (current-module))
      (cond ((not (pair? form)) #t)
            ((not (list? form)) #f)
            ((eq? (car form) 'quote) #t)
            ((and (memq (car form) '(define set!)) (= (length form) 3) (symbol? (cadr form)))
             (simple? (caddr form)))
            ((symbol? (car form))
             (and (procedure? (module-ref m (car form) #f)) (and-map simple? (cdr form))))
            (else #f)))
    (define (compile? form)
      ;; Compile the form, as Guile's own REPL does, so that the procedures it defines run
      ;; at compiled speed and their frames say where they are. Each compiled form is an ELF
      ;; image whose data Guile registers as one more root set of its garbage collector
      ;; (libguile/loader.c: GC_add_roots), never removed; libgc 8.2 aborts the process at 2,048
      ;; root sets ("Too many root sets"), which is how the stock REPL dies after about 1,900
      ;; forms. So forms are compiled while fewer than `image-budget` images are loaded
      ;; (the modules Guile loaded count: about 100 here), and interpreted after that, which
      ;; is said once: the rest stays for modules the person loads later.
      (and (not (simple? form))
           (or (< (length ((@ (system vm loader) all-mapped-elf-images))) image-budget)
               (begin
                 (unless budget-said
                   (set! budget-said #t)
                   (format user-out ";;; lispshell: this Guile holds about 1,500 compiled forms, and \
Guile 3.0.8 aborts at about 2,000 in one process (one root set of its garbage collector each), \
so from now on forms are interpreted (slower; what was compiled stays compiled). ,restart \
starts a fresh Guile.~%"))
                 #f))))
    (define (image-address ip)
      (let ((image ((@ (system vm loader) find-mapped-elf-image) ip)))
        (and image ((@ (system foreign) pointer-address)
                    ((@ (system foreign) bytevector->pointer) image)))))
    (define (remember-text! thunk)
      ;; (a fresh table past a few thousand: the texts of forms long gone go with it)
      (when (> (hash-count (const #t) form-texts) 4000)
        (set! form-texts (make-hash-table)))
      (let ((at (false-if-exception
                 (image-address ((@ (system vm program) program-code) thunk)))))
        (when at (hashv-set! form-texts at reading-code)))
      thunk)
    (define (form-thunk form)
      (if (compile? form)
          (remember-text!
           ((@ (system vm loader) load-thunk-from-memory)
            ((module-ref (resolve-interface '(system base compile)) 'compile)
             form #:to 'bytecode #:env (current-module)
             ;; Warnings would flag each forward reference of definitions typed one by one.
             #:warning-level 0)))
          ;; A tail call: no frame of ours between the form's prompt and its code.
          (lambda () (primitive-eval form))))
    (define (definition? form)
      ;; A form that defines or imports something for good (see with-bound).
      (and (pair? form) (symbol? (car form))
           (or (string-prefix? "define" (symbol->string (car form)))
               (memq (car form) '(use-modules import export re-export set-current-module)))))
    (define (with-bound form names)
      ;; A procedure of NAMES that evaluates FORM, or #f where FORM defines something the
      ;; procedure cannot (a module, a macro...: evaluated plainly). A (define NAME EXPR) or
      ;; (define (NAME . FORMALS) BODY...) still defines NAME in the module, its value
      ;; computed with NAMES bound (inside a lambda it would define nothing lasting).
      (define (define-form? f) (and (pair? f) (eq? (car f) 'define) (pair? (cdr f))
                                    (pair? (cddr f))))
      (cond ((and (define-form? form) (symbol? (cadr form)) (null? (cdddr form)))
             `(lambda ,names
                (module-define! (current-module) ',(cadr form) ,(caddr form))
                (if #f #f)))
            ((and (define-form? form) (pair? (cadr form)) (symbol? (caadr form)))
             (let ((name (caadr form)))
               `(lambda ,names
                  (module-define! (current-module) ',name
                                  (letrec ((,name (lambda ,(cdadr form) ,@(cddr form)))) ,name))
                  (if #f #f))))
            ((definition? form) #f)
            (else `(lambda ,names ,form))))
    (define (eval-forms code)
      ;; Each form in turn, in the current module; the last form's values. Each runs inside
      ;; FORM-TAG, where the error handler cuts the stack, and one frame of ours (the
      ;; lambda below) more: the frames left are the person's. At a breakpoint's level the
      ;; call's arguments are bound by name (level-locals), as Guile's eval-in-frame would.
      (set! reading-code code)
      (let ((port (open-input-string code))
            (bound (level-locals)))
        (let loop ((vals '()))
          (let ((form (read port)))
            (if (eof-object? form)
                vals
                (let ((vals (call-with-prompt form-tag
                              ;; Compiled inside the prompt too: a syntax error is raised there.
                              (lambda ()
                                (if (or (null? bound) (not (with-bound form (map car bound))))
                                    (let ((thunk (form-thunk form)))
                                      (traps-on (lambda () (call-with-values thunk list))))
                                    (let ((proc ((form-thunk (with-bound form
                                                                         (map car bound))))))
                                      (traps-on
                                       (lambda ()
                                         (call-with-values (lambda () (apply proc (map cdr bound)))
                                           list))))))
                              (lambda (k) '()))))
                  (note-formals! form)
                  (loop vals)))))))
    (define (match-exit-status args)
      (let ((status (if (pair? args) (car args) 0)))
        (cond ((eq? status #t) 0) ((eq? status #f) 1) ((integer? status) status) (else 0))))
    (define (depth-kind v limit)
      ;; #f when V nests pairs and vectors at most LIMIT deep; else 'deep, or 'deep-shared
      ;; when it also shares or loops structure. The first walk keeps no memory (most values
      ;; end it at once); a value it finds deep is walked again remembering each pair and
      ;; vector, since a structure whose car leads back to itself looks endlessly deep to the
      ;; first walk and is not (`write` labels it: #0#). Both walks have a budget.
      (define (walk seen)
        (let loop ((todo (list (cons v 0))) (budget 1000000) (deep #f) (shared #f))
          (if (or (null? todo) (zero? budget))
              (and deep (if (or shared (zero? budget)) 'deep-shared 'deep))
              (let* ((x (caar todo)) (d (cdar todo)) (rest (cdr todo))
                     (deep (or deep (> d limit))))
                ;; The second walk goes on below the limit: a loop deep down still counts.
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
    (define (write-value v)
      ;; Guile's `write` recurses on the C stack: a value nested some 50,000 deep kills the
      ;; process. Those are printed by the Scheme-level truncated printer instead (its own
      ;; stack grows as needed), cut at a generous width; it does not label cycles and its
      ;; time grows with the square of the width, so a deep value that also loops gets a
      ;; narrow one.
      (case (depth-kind v 10000)
        ((deep) ((@ (ice-9 pretty-print) truncated-print) v out #:width 1000000))
        ((deep-shared) ((@ (ice-9 pretty-print) truncated-print) v out #:width 10000))
        (else (write v out))))
    (define (printable vals)
      (if (and (= (length vals) 1) (unspecified? (car vals))) '() vals))
    (define (ask-input)
      ;; A line from whoever evaluates (lispshell/lisp/session.py: the I tag and its reply),
      ;; or #f at end of file; an interrupt reply (Ctrl-C at the person's input line)
      ;; interrupts the reading code.
      (false-if-exception (force-output (current-output-port)))
      (force-output user-out)
      (seg #\I)
      (force-output out)
      (let loop ()
        (let ((req (read-request #t)))
          (case (car req)
            ((#\i) (if (string-null? (cadr req)) #f (cadr req)))
            ((#\x) (throw 'lispshell-interrupt))
            (else (loop))))))
    (define (terminal-input)
      ;; The person's standard input for one eval: a line at a time, asked when empty.
      ;; After end of file the next read asks again, as a terminal does after Ctrl-D.
      (let* ((buffer "") (index 0)
             (port (make-soft-port
                    (vector #f #f #f
                            (lambda ()
                              (when (>= index (string-length buffer))
                                (set! buffer (or (ask-input) ""))
                                (set! index 0))
                              (if (< index (string-length buffer))
                                  (let ((c (string-ref buffer index)))
                                    (set! index (+ index 1))
                                    c)
                                  (read-char (open-input-string ""))))
                            #f)
                    "r")))
        (set-port-encoding! port "UTF-8")
        port))
    (define (run-eval code history)
      ;; #f; (type message backtrace) if the code failed; 'left when the error waited in a
      ;; level (HISTORY: the person's eval) and a later request left it.
      (let ((tag (make-prompt-tag "lispshell")))
        (call-with-prompt tag
          (lambda ()
            ;; A throw handler, not with-exception-handler: Guile runs the latter's handler
            ;; with the handlers outside it fixed (%active-exception-handlers), so an error of
            ;; a form evaluated at the level would skip that form's own handler; a throw
            ;; handler's runs with them reset, and levels nest.
            (with-throw-handler #t
             (lambda ()
               (let ((input (terminal-input)))
                 (parameterize ((current-input-port input)
                                (current-output-port user-out)
                                (current-error-port user-out)
                                (current-warning-port user-out))
                   (set! evaluating #t)
                   (let ((vals (printable (as-eval tag history
                                            (lambda () (eval-forms code))))))
                     ;; the output before the values it printed
                     (force-output user-out)
                     (for-each (lambda (v) (seg #\V) (write-value v)) vals))
                   (set! evaluating #f)
                   #f)))
             (lambda (key . args)
               (when (eq? key 'quit)
                 ;; (exit n): the Lisp exits with the code's status, as `guile < file` does
                 (false-if-exception (force-output user-out))
                 (force-output out)
                 (leave (match-exit-status args)))
               (let ((exn (make-exception-from-throw key args))
                     (stack (or (false-if-exception (make-stack #t 0 form-tag 0 1))
                                (make-stack #t))))
                 (if (and history (not (interrupt? exn)))
                     (begin (set! evaluating #f)
                            (open-level (describe exn stack) tag))
                     (abort-to-prompt tag (describe exn stack)))))))
          (lambda (k err)
            (set! evaluating #f)
            (false-if-exception (force-output user-out))
            err))))
    (define (write-error err)
      (seg #\E) (display (car err) out)
      (seg #\M) (display (cadr err) out)
      (for-each (lambda (line) (seg #\B) (display line out)) (caddr err)))
    (define (answer-eval code history)
      (let ((err (run-eval code history)))
        (cond ((pair? err) (write-error err))
              ((eq? err 'aborted)       ; left by its ABORT restart (I 0): said, as on SBCL
               (write-error (list "LISPSHELL-ABORTED"
                                  (if (null? levels)
                                      "Back at the top level; the error's stack is gone."
                                      (format #f "Back at debug level ~a." (length levels)))
                                  '()))))))
    (define (end-answer)
      ;; Every answer ends so: the module, the levels open, D and the request's id.
      (seg #\P) (display (module-name (current-module)) out)
      (unless (null? levels) (seg #\L) (display (length levels) out))
      (seg #\D) (display request-id out) (newline out)
      (force-output out))
    (define (outer-level-text)
      (if (null? levels) "lispshell's top level" (format #f "debug level ~a" (length levels))))
    (define (level-restarts level)
      ;; What a level offers, as R lines: a breakpoint's or a step's CONTINUE, then ABORT.
      (append (list-ref level 3)
              (list (format #f "ABORT\tReturn to ~a."
                            (let ((below (- (length (memq level levels)) 1)))
                              (if (zero? below) "lispshell's top level"
                                  (format #f "debug level ~a" below)))))))
    (define* (open-level err tag #:key (restarts '()) (locals '()))
      ;; Inside the handler of the error ERR describes (or a breakpoint's trap), in its
      ;; dynamic extent: answer the request that ran into it with the error, its frames and
      ;; its restarts (RESTARTS, a breakpoint's CONTINUE, then ABORT: back to the level
      ;; below), then serve requests here until one leaves (A, T, ABORT): the prompt TAG of
      ;; the failed eval is aborted to, and the stack unwinds only then. A CONTINUE (I 0 with
      ;; RESTARTS) returns from here instead: the trap's call runs on. LOCALS, (name . value)
      ;; pairs, are bound for the forms evaluated at the level (a breakpoint's arguments).
      (let ((esc (make-prompt-tag "lispshell-level"))
            (outer-busy step-busy))
        (call-with-prompt esc
          (lambda ()
            (dynamic-wind
              (lambda ()
                ;; the forms typed at a level are not stepped (`,step FORM` there is)
                (set! step-busy #t)
                (set! levels (cons (list tag last-frames esc restarts locals) levels)))
              (lambda ()
                (write-error err)
                (for-each (lambda (r) (seg #\R) (display r out)) (level-restarts (car levels)))
                (end-answer)
                (let loop ()
                  (let ((req (read-request)))
                    (set! request-id (caddr req))
                    (serve req)
                    (end-answer)
                    (loop))))
              (lambda ()
                (set! step-busy outer-busy)
                (set! levels (cdr levels)))))
          (lambda (k n) n))))
    (define (level-locals)
      (if (null? levels) '() (list-ref (car levels) 4)))
    (define* (leave-level to #:optional (why 'left))
      ;; TO: 'one (A, ,abort) or 'all (T, ,top); WHY 'aborted for the ABORT restart.
      (if (null? levels)
          (begin (seg #\E) (display "LISPSHELL-NO-LEVEL" out)
                 (seg #\M) (display "no error is waiting: no debug level is open" out))
          (abort-to-prompt (caar (if (eq? to 'all) (last-pair levels) levels)) why)))
    (define (invoke-restart text)
      (let* ((n (string->number (car (append (string-tokenize text) '("x")))))
             (level (and (pair? levels) (car levels)))
             (offered (if level (level-restarts level) '())))
        (cond ((not level) (leave-level 'one))
              ((and (exact-integer? n) (< -1 n (- (length offered) 1)))
               ;; CONTINUE (a breakpoint's call runs, a step goes on): this level's open-level
               ;; returns N, inside the trap that opened it
               (abort-to-prompt (list-ref level 2) n))
              ((eqv? n (- (length offered) 1)) (leave-level 'one 'aborted))
              (else (seg #\E) (display "LISPSHELL-NO-SUCH-RESTART" out)
                    (seg #\M)
                    (format out "choose a restart from 0 to ~a" (- (length offered) 1))
                    (for-each (lambda (r) (seg #\R) (display r out)) offered)))))
    ;; -- breakpoints (lispshell/lisp/breakpoints.py), through Guile's traps ------------------
    ;; A breakpoint is a trap of (system vm traps), as Guile's own ,break sets: at a
    ;; procedure's call (trap-at-procedure-call) or at a source line (trap-at-source-location).
    ;; Traps fire from the VM's hooks, which run only while the VM's trace level is positive
    ;; and cost every call a hook: they are switched on while the person's code runs and
    ;; breakpoints are set (traps-on), on this loop's thread only (Guile's hooks are per
    ;; thread). A trap that fires in the person's eval (E) opens a level inside it, as an
    ;; error does: its CONTINUE lets the call run, ABORT leaves the eval. A look-up (N)
    ;; never stops.
    (define (as-eval tag history thunk)
      ;; THUNK as the eval whose prompt is TAG (HISTORY: the person's), for break-hit.
      (let ((outer current-eval))
        (dynamic-wind (lambda () (set! current-eval (cons tag history)))
                      thunk
                      (lambda ()
                        (when (eq? step-owner tag) (stop-stepping!))
                        (set! current-eval outer)))))
    (define (traps-on thunk)
      (if (null? breakpoints)
          (thunk)
          (let ((saved ((@ (system vm vm) vm-trace-level))))
            (refresh-breakpoints!)
            (dynamic-wind
              (lambda () ((@ (system vm vm) set-vm-trace-level!) 1))
              thunk
              ;; (also after a level inside a hook was left by a jump: Guile's hook
              ;; dispatch lowers the level while a hook runs and does not restore it then)
              (lambda () ((@ (system vm vm) set-vm-trace-level!) saved))))))
    (define (frame-slot frame i) ((@@ (system vm frame) frame-local-ref) frame i 'scm))
    (define (call-arguments frame)
      ;; At a procedure's entry (the apply hook) its arguments are in the frame's slots 1...
      (map (lambda (i) (frame-slot frame i))
           (iota (- ((@@ (system vm frame) frame-num-locals) frame) 1) 1)))
    (define (name-arguments proc args)
      ;; The arguments by the names the procedure gives them (required, then optional, the
      ;; rest as a list), as Guile's debugger would show them once bound.
      (let* ((spec (or (false-if-exception ((@ (ice-9 session) procedure-arguments) proc)) '()))
             (fixed (append (or (assq-ref spec 'required) '())
                            (map (lambda (o) (if (pair? o) (car o) o))
                                 (or (assq-ref spec 'optional) '()))))
             (rest (assq-ref spec 'rest)))
        (let loop ((names fixed) (args args) (acc '()))
          (cond ((and (pair? names) (pair? args))
                 (loop (cdr names) (cdr args) (cons (cons (car names) (car args)) acc)))
                ((and (symbol? rest) (null? names)) (reverse (cons (cons rest args) acc)))
                (else (reverse acc))))))
    (define (printed-short v width)
      (call-with-output-string
       (lambda (p) ((@ (ice-9 pretty-print) truncated-print) v p #:width width))))
    (define (procedure-where proc)
      ;; line:col (and file) where PROC is defined, as frames say it; "" unknown.
      (let ((src (false-if-exception
                  (car ((@ (system vm program) program-sources) proc)))))
        (if (and (pair? src) (pair? (cdr src)) (pair? (cddr src)))
            (source-text src)
            "")))
    (define (callers stack start)
      ;; The person's frames of STACK from START outward, at most 12, as `backtrace` makes:
      ;; lispshell's own (`,step`'s, between the form and the code it steps) left out.
      (let loop ((i start) (acc '()))
        (if (or (>= i (stack-length stack)) (= (length acc) 12))
            (reverse acc)
            (let* ((f (stack-ref stack i))
                   (src (false-if-exception (frame-source f)))
                   (cw (and src (false-if-exception (person-source? f src))
                            (false-if-exception (frame-call-and-where f))))
                   (seen (and cw (hashv-ref step-calls (frame-address f))))
                   ;; a call the stepper saw: its arguments, which Guile's frame may have lost
                   (cw (if (and seen (eq? (procedure-name (car seen))
                                          (false-if-exception (frame-procedure-name f))))
                           (cons (printed-short (cons (procedure-name (car seen)) (cdr seen)) 300)
                                 (cdr cw))
                           cw)))
              (loop (+ i 1) (if cw (cons (cons f cw) acc) acc))))))
    (define (hit-message call locals)
      ;; The call, then each argument by name on its own line (levels.py: LISPSHELL-BREAK).
      (string-join (cons call (map (lambda (l) (format #f "~a = ~a" (car l)
                                                       (printed-short (cdr l) 200)))
                                   locals))
                   "\n"))
    (define (condition-holds? point locals)
      ;; A condition that fails stops: worth a look (as on the other Lisps).
      (let ((condition (vector-ref point 2)))
        (or (string-null? condition)
            (catch #t
              (lambda ()
                (let ((test (primitive-eval
                             `(lambda ,(map car locals)
                                ,(with-input-from-string condition read)))))
                  (apply test (map cdr locals))))
              (lambda _ #t)))))
    (define (break-hit point frame at-entry?)
      ;; A breakpoint's trap fired, FRAME the call's (AT-ENTRY?: at its entry, where its
      ;; arguments are its slots; else a source line's, where its variables are bound).
      (when (and current-eval (cdr current-eval))
        (let* ((proc (and at-entry? (frame-slot frame 0)))
               (locals (if at-entry?
                           (name-arguments proc (call-arguments frame))
                           (frame-locals (cons 'top frame) #t))))
          (when (condition-holds? point locals)
            (vector-set! point 3 (+ 1 (vector-ref point 3)))
            (let* ((call (if at-entry?
                             (printed-short (cons (or (procedure-name proc) (vector-ref point 1))
                                                  (call-arguments frame))
                                            300)
                             (or (false-if-exception (car (frame-call-and-where frame)))
                                 (vector-ref point 1))))
                   (stack (or (false-if-exception (make-stack frame 0 form-tag 0 1))
                              (make-stack frame)))
                   (first (if at-entry?
                              (cons (cons 'given locals) (cons call (procedure-where proc)))
                              (cons (cons 'top frame)
                                    (or (false-if-exception (frame-call-and-where frame))
                                        (cons call ""))))))
              (set! last-frames (cons first (callers stack 1)))
              (set! evaluating #f)
              (step-if-asked
               (open-level (list "LISPSHELL-BREAK"
                                 (hit-message (if at-entry? call
                                                  (format #f "~a at ~a" call (vector-ref point 1)))
                                              locals)
                                 '())
                           (car current-eval)
                           #:restarts (list (if at-entry?
                                                (format #f "CONTINUE\tRun ~a with these arguments."
                                                        (vector-ref point 1))
                                                (format #f "CONTINUE\tRun on from ~a."
                                                        (vector-ref point 1)))
                                            step-from-here)
                           #:locals locals))
              (set! evaluating #t))))))
    (define (interrupted!)
      ;; Ctrl-C. Guile runs a signal's handler (and the server's interrupt) as an async, at
      ;; the next safe point of the running code, which has not unwound: the person's eval
      ;; (E) waits in a level right there, whose CONTINUE returns from this handler and so
      ;; resumes it, as SBCL's interrupt does. Anything else (a look-up, an eval whose
      ;; deadline passed...) unwinds.
      (if (and current-eval (cdr current-eval))
          (let ((stack (false-if-exception (make-stack #t 0 form-tag 0 1))))
            (set! evaluating #f)
            (set! last-frames (or (and stack (false-if-exception (interrupted-frames stack)))
                                  '()))
            (step-if-asked
             (open-level (list "interrupt" "Interrupted" (map frame-text last-frames))
                         (car current-eval)
                         #:restarts (list "CONTINUE\tResume the interrupted evaluation."
                                          step-from-here)))
            (set! evaluating #t))
          (throw 'lispshell-interrupt)))
    (define (interrupted-frames stack)
      ;; The person's frames under this handler's: past the frame the async runs from (the
      ;; first with no source at all, whose call cannot be shown: see `describe`).
      (let loop ((i 1))
        (cond ((>= i (stack-length stack)) '())
              ((not (false-if-exception (frame-source (stack-ref stack i))))
               (let ((frames (callers stack (+ i 1))))
                 ;; the interrupted frame stopped at its instruction, not in a call
                 (if (pair? frames)
                     (cons (cons (cons 'top (caar frames)) (cdar frames)) (cdr frames))
                     frames)))
              (else (loop (+ i 1))))))
    ;; -- stepping: Guile's ,step, ,next, ,finish through the VM's next hook ---------------
    ;; While stepping, the VM calls `step-hook` before each instruction (the trace level is
    ;; raised for it); a step stops where control reaches a new source position of the
    ;; person's code (a form typed at the prompt, or a file of theirs: never lispshell's loop
    ;; nor Guile's own modules), as Guile's own ,step does (add-ephemeral-stepping-trap!),
    ;; and opens a level there (LISPSHELL-STEP) whose restarts go on: into (the next
    ;; position anywhere), next (the next in this frame or its callers), out (the next once
    ;; this frame has returned), continue (no more stepping). Stepping ends with its eval.
    (define step-from-here "STEP-INTO\tStep from here, into calls (,s).")
    (define step-restarts
      '("STEP-INTO\tStep to the next form, into calls (,s)."
        "STEP-NEXT\tStep to the next form of this procedure (,n)."
        "STEP-OUT\tRun this procedure out; step on in its caller (,o)."
        "STEP-CONTINUE\tRun on without stepping (,c)."))
    (define (start-stepping! owner)
      (set! step-busy #f)
      (set! step-mode 'into)
      (set! step-owner owner)
      (set! step-at #f)
      (unless step-hooked
        (set! step-saved-level ((@ (system vm vm) vm-trace-level)))
        ((@ (system vm vm) vm-add-next-hook!) step-hook)
        ((@ (system vm vm) vm-add-return-hook!) step-return-hook)
        ((@ (system vm vm) vm-add-apply-hook!) step-apply-hook)
        (set! step-hooked #t))
      ((@ (system vm vm) set-vm-trace-level!) (max 1 ((@ (system vm vm) vm-trace-level)))))
    (define (stop-stepping!)
      (set! step-mode #f)
      (set! step-owner #f)
      (set! step-busy #f)
      (when step-hooked
        ((@ (system vm vm) vm-remove-next-hook!) step-hook)
        ((@ (system vm vm) vm-remove-return-hook!) step-return-hook)
        ((@ (system vm vm) vm-remove-apply-hook!) step-apply-hook)
        (set! step-calls (make-hash-table))
        (set! step-hooked #f)
        ((@ (system vm vm) set-vm-trace-level!) step-saved-level)))
    (define (step-if-asked choice)
      ;; After a breakpoint's or an interrupt's level: STEP-INTO (its second restart) steps on
      ;; from there.
      (when (and (eqv? choice 1) current-eval)
        (start-stepping! (car current-eval))))
    (define (person-source? frame src)
      ;; Code of the person's: a file that is not Guile's own, or a form they typed.
      (if (cadr src)
          (not (guile-own? (cadr src)))
          (let ((at (false-if-exception
                     (image-address (frame-instruction-pointer frame)))))
            (and at (hashv-ref form-texts at) #t))))
    (define (step-hook frame)
      (when (and step-mode (not step-busy) current-eval (cdr current-eval))
        (let ((src (frame-source frame))
              (fp (frame-address frame)))
          (when (and src
                     (not (and step-at (= fp (car step-at)) (equal? (cdr src) (cdr step-at))))
                     (case step-mode
                       ((next) (<= fp step-fp))
                       ((out) (< fp step-fp))
                       (else #t))
                     (person-source? frame src))
            (step-stop frame src)))))
    (define (step-apply-hook frame)
      (when (and step-mode current-eval (cdr current-eval))
        (let ((proc (frame-slot frame 0)))
          (when (procedure? proc)
            (hashv-set! step-calls (frame-address frame)
                        (cons proc (call-arguments frame)))))))
    (define (step-return-hook frame)
      ;; A call of the person's returns while stepping: its value is said, as SBCL's stepper
      ;; says it (`; (g a) => 8`), for the calls a step went into or over, and the frame a
      ;; step runs out of. FRAME is the returning one, its caller's source the call's form.
      (when (and step-mode (not step-busy) current-eval (cdr current-eval))
        (let* ((fp (frame-address frame))
               (caller (frame-previous frame))
               (src (and caller (frame-source caller))))
          (when (and src
                     (case step-mode
                       ((next) (or (= fp step-fp) (= (frame-address caller) step-fp)))
                       ((out) (= fp step-fp))
                       (else #t))
                     (person-source? caller src))
            (let ((form (false-if-exception (source-form caller src)))
                  (vals (false-if-exception ((@ (system vm frame) frame-return-values) frame))))
              (when (and form (list? vals))
                ;; the caller goes on at the same form: no step there again
                (set! step-at (cons (frame-address caller) (cdr src)))
                (format user-out "; ~a => ~a~%" form
                        (string-join (map (lambda (v) (printed-short v 120)) vals) " "))))))))
    (define (form-at text line col)
      ;; The form that starts at LINE:COL (from 0) of TEXT, printed short; #f if none reads.
      (let loop ((i 0) (l 0))
        (if (< l line)
            (let ((nl (string-index text #\newline i)))
              (and nl (loop (+ nl 1) (+ l 1))))
            (let ((start (+ i col)))
              (and (< start (string-length text))
                   (catch #t
                     (lambda ()
                       (let ((x (with-input-from-string (substring text start) read)))
                         (and (not (eof-object? x)) (printed-short x 120))))
                     (lambda _ #f)))))))
    (define (source-form frame src)
      (let ((text (if (cadr src)
                      (false-if-exception
                       (call-with-input-file (cadr src) (@ (ice-9 textual-ports) get-string-all)))
                      (hashv-ref form-texts (image-address (frame-instruction-pointer frame))))))
        (and (string? text) (form-at text (caddr src) (cdddr src)))))
    (define (step-stop frame src)
      ;; A step: a level before the form at SRC in FRAME, said in one line (the form, and the
      ;; call it is in), the frame's variables bound for the forms typed there.
      (let ((fp (frame-address frame))
            (form (or (false-if-exception (source-form frame src)) (source-text src))))
        (set! step-at (cons fp (cdr src)))
        ;; A procedure's entry is at its whole lambda (or define): its first form says more.
        (unless (or (string-prefix? "(lambda " form) (string-prefix? "(define " form)
                    (string-prefix? "(lambda* " form) (string-prefix? "(define* " form))
          (step-level frame fp form))))
    (define (step-level frame fp form)
      ;; The frame's variables are the arguments its procedure was called with, where the
      ;; step saw the call (step-calls), else what Guile says is live here.
      (let* ((name (false-if-exception (frame-procedure-name frame)))
             (seen (hashv-ref step-calls fp))
             (proc (and seen name (eq? (procedure-name (car seen)) name) (car seen)))
             (arguments (and proc (cdr seen)))
             (given (and proc (name-arguments proc arguments)))
             (variables (if given '() (frame-locals (cons 'top frame) #t)))
             (cw (false-if-exception (frame-call-and-where frame)))
             (cw (if (and cw given)
                     (cons (printed-short (cons (or (procedure-name proc) '_) arguments) 300)
                           (cdr cw))
                     cw))
             (call (and name (format #f "~a" name)))
             (stack (or (false-if-exception (make-stack frame 0 form-tag 0 1))
                        (make-stack frame))))
        (set! last-frames (cons (cons (if given (cons 'given given) (cons 'top frame))
                                      (or cw (cons form "")))
                                (callers stack 1)))
        (set! evaluating #f)
        (let ((choice (open-level (list "LISPSHELL-STEP"
                                        (if call (string-append form "  [in " call "]") form)
                                        '())
                                  (car current-eval)
                                  #:restarts step-restarts
                                  #:locals (or given variables))))
          (set! evaluating #t)
          (set! step-fp fp)
          (set! step-mode (case choice ((0) 'into) ((1) 'next) ((2) 'out) (else #f))))))
    (define (step-thunk thunk)
      ;; `,step FORM`: THUNK (FORM's) stepped, from its first form; stepping ends with it.
      (if (not (and current-eval (cdr current-eval)))
          (thunk)
          (dynamic-wind
            (lambda () (start-stepping! (car current-eval)))
            thunk
            stop-stepping!)))
    (define (refuse message)
      (scm-error 'lispshell-refused #f "~a" (list message) #f))
    (define (breakpoint-line point)
      (format #f "~a\t~a\t~a\t~a\t~a" (vector-ref point 0) (vector-ref point 1)
              (vector-ref point 2) (vector-ref point 3) (if (vector-ref point 4) "model" "")))
    (define (arm! point proc)
      ;; Point's trap on PROC (field 5: what disarms it; 6: the procedure; 7: its module).
      (vector-set! point 5 ((@ (system vm traps) trap-at-procedure-call)
                            proc (lambda (frame) (break-hit point frame #t))))
      (vector-set! point 6 proc))
    (define (disarm! point)
      (false-if-exception ((vector-ref point 5))))
    (define (refresh-breakpoints!)
      ;; A procedure defined again is a new procedure: the breakpoint on its name follows it
      ;; (Guile's own ,break stays on the old one).
      (for-each (lambda (point)
                  (let* ((module (vector-ref point 7))
                         (now (and module (module-ref module (string->symbol (vector-ref point 1))
                                                      #f))))
                    (when (and (procedure? now) (not (eq? now (vector-ref point 6)))
                               (not (interpreted? now)))
                      (disarm! point)
                      (arm! point now))))
                breakpoints))
    (define (interpreted? proc)
      ;; primitive-eval's closures share the evaluator's code: a trap on one would stop them all
      (let ((src (false-if-exception (car ((@ (system vm program) program-sources) proc)))))
        (and (pair? src) (equal? (cadr src) "ice-9/eval.scm"))))
    (define (checked-condition condition)
      (let ((text (string-trim-both condition)))
        (unless (string-null? text)
          (catch #t
            (lambda () (when (eof-object? (with-input-from-string text read))
                         (refuse "the condition is empty")))
            (lambda (key . args)
              (if (eq? key 'lispshell-refused)
                  (apply throw key args)
                  (refuse (format #f "the condition ~a does not read as a form" text))))))
        text))
    (define (add-breakpoint! name condition model setter)
      (set! breakpoint-count (+ breakpoint-count 1))
      (let ((point (vector breakpoint-count name condition 0 model #f #f #f)))
        (setter point)
        (when (eq? ((@ (system vm vm) vm-engine)) 'regular)
          ;; (a REPL server started by a script: the regular engine never runs hooks)
          ((@ (system vm vm) set-default-vm-engine!) 'debug)
          ((@ (system vm vm) set-vm-engine!) 'debug))
        (set! breakpoints (append breakpoints (list point)))
        point))
    (define (set-breakpoint! text condition model)
      (let* ((sym (catch #t
                    (lambda ()
                      (and (not (string-index text #\#))
                           (let ((x (with-input-from-string text read)))
                             (and (symbol? x) x))))
                    (lambda _ #f)))
             (var (and sym (module-variable (current-module) sym)))
             (proc (and var (variable-bound? var) (variable-ref var)))
             (condition (checked-condition condition)))
        (cond ((not sym) (refuse (format #f "not a procedure's name: ~a" text)))
              ((macro? proc)
               (refuse (format #f "cannot break on ~a: it is a macro (a breakpoint stops a procedure's calls)" sym)))
              ((not proc)
               (refuse (format #f "no procedure ~a is defined in ~a" sym
                               (module-name (current-module)))))
              ((not (procedure? proc)) (refuse (format #f "cannot break on ~a: it is not a procedure" sym)))
              ((or (not ((@ (system vm program) program?) proc))
                   ((@ (system vm program) primitive-code?)
                    ((@ (system vm program) program-code) proc)))
               (refuse (format #f "cannot break on ~a: it is one of Guile's primitives, which \
compiled code runs inline, so a breakpoint would not stop its calls" sym)))
              ((interpreted? proc)
               (refuse (format #f "cannot break on ~a: it is interpreted (this Guile passed its \
budget of compiled forms), and Guile's traps cannot tell its calls from other interpreted \
procedures'" sym)))
              (else
               (let ((old ((@ (srfi srfi-1) find) (lambda (p) (and (vector-ref p 7)
                                                 (equal? (vector-ref p 1) (symbol->string sym))))
                                breakpoints)))
                 (if old
                     (begin (vector-set! old 2 condition) (vector-set! old 4 model) old)
                     (add-breakpoint! (symbol->string sym) condition model
                                      (lambda (point)
                                        (arm! point proc)
                                        (vector-set! point 7 (current-module))))))))))
    (define (set-source-breakpoint! file line condition model)
      (let* ((n (string->number (string-trim-both line)))
             (file (string-trim-both file))
             (condition (checked-condition condition)))
        (unless (and (exact-integer? n) (positive? n))
          (refuse (format #f "~a is not a line number" line)))
        (let ((where (format #f "~a:~a" file n)))
          (add-breakpoint!
           where condition model
           (lambda (point)
             (vector-set!
              point 5
              (catch #t
                (lambda ()
                  ((@ (system vm traps) trap-at-source-location)
                   file n (lambda (frame) (break-hit point frame #f))))
                (lambda _
                  (set! breakpoint-count (- breakpoint-count 1))
                  (refuse (format #f "no compiled procedure of Guile's is at ~a (load the file \
first; a form typed at the prompt has no file)" where))))))))))
    (define (clear-breakpoints! which)
      (let* ((which (string-trim-both which))
             (n (string->number which))
             (gone (filter (lambda (p)
                             (or (string-null? which) (eqv? n (vector-ref p 0))
                                 (equal? which (vector-ref p 1))))
                           breakpoints)))
        (for-each disarm! gone)
        (set! breakpoints (filter (lambda (p) (not (memq p gone))) breakpoints))
        gone))
    (define (breakpoint-request op . args)
      ;; What (lispshell debug)'s `breakpoints` does on this loop's thread: prints a line
      ;; per breakpoint set, listed or cleared (breakpoints.py parses them).
      ;; "step" THUNK is `,step FORM` (Dialect.stepping): THUNK's values.
      (if (equal? op "step")
          (apply step-thunk args)
          (for-each (lambda (p) (display (breakpoint-line p)) (newline))
                    (case (string->symbol op)
                      ((set) (list (apply set-breakpoint! args)))
                      ((set-at) (list (apply set-source-breakpoint! args)))
                      ((list) breakpoints)
                      ((clear) (apply clear-breakpoints! args))
                      (else (refuse (format #f "no breakpoint request ~a" op)))))))
    (define (serve req)
      ;; One request, not its end (end-answer): at the top level and at every level.
      (case (car req)
        ((#\E) (answer-eval (cadr req) #t))
        ((#\N) (answer-eval (cadr req) #f))   ; no REPL history variables here
        ((#\C) (answer-completions (cadr req)))
        ((#\F) (answer-frames (cadr req)))
        ((#\I) (invoke-restart (cadr req)))
        ((#\A) (leave-level 'one))
        ((#\T) (leave-level 'all))
        ((#\Q) (leave 0))))
    (define (compound-match? prefix name)
      ;; Word by word, as SLIME's completion does (c-w-o-f: call-with-output-file): each
      ;; hyphen of PREFIX skips to NAME's next one (sbcl-loop.lisp's compound-match-p).
      (let loop ((i 0) (at 0))
        (cond ((= i (string-length prefix)) #t)
              ((>= at (string-length name)) #f)
              ((char=? (string-ref prefix i) #\-)
               (let ((next (string-index name #\- at)))
                 (and next (loop (+ i 1) (+ next 1)))))
              ((char=? (string-ref prefix i) (string-ref name at)) (loop (+ i 1) (+ at 1)))
              (else #f))))
    (define (completions prefix)
      (let ((seen (make-hash-table)) (acc '()))
        (define (consider sym)
          (let ((s (symbol->string sym)))
            (when (and (compound-match? prefix s) (not (hash-ref seen s)))
              (hash-set! seen s #t)
              (set! acc (cons s acc)))))
        ;; What module-variable sees: the module's own names and, through each module it
        ;; uses, that module's uses in turn (call-with-output-file is (guile)'s by way of
        ;; (ice-9 ports)).
        (let walk ((modules (list (current-module))) (visited '()))
          (unless (null? modules)
            (let ((m (car modules)))
              (if (memq m visited)
                  (walk (cdr modules) visited)
                  (begin
                    (module-for-each (lambda (sym var) (consider sym)) m)
                    (walk (append (cdr modules) (module-uses m)) (cons m visited)))))))
        ;; plain prefixes first, then the word-by-word matches
        (let* ((sorted (sort acc string<?))
               (sorted (append (filter (lambda (s) (string-prefix? prefix s)) sorted)
                               (filter (lambda (s) (not (string-prefix? prefix s))) sorted))))
          (if (> (length sorted) 500) (list-head sorted 500) sorted))))
    (define (answer-frames request)
      ;; "bt": each frame of the last error as index TAB call TAB where; "locals N": frame N's
      ;; variables as name TAB value (bounded).
      (define (fail type message) (seg #\E) (display type out) (seg #\M) (display message out))
      (let ((words (string-tokenize request))
            (last-frames (if (null? levels) last-frames (cadr (car levels)))))
        (cond ((null? last-frames)
               (fail "LISPSHELL-NO-LEVEL" "No error to show: nothing has failed here yet."))
              ((equal? words '("bt"))
               (let loop ((i 0) (frames last-frames))
                 (unless (null? frames)
                   (seg #\V)
                   (format out "~a\t~a\t~a" i (cadar frames) (cddar frames))
                   (loop (+ i 1) (cdr frames)))))
              ((and (= (length words) 2) (equal? (car words) "locals")
                    (string->number (cadr words)))
               => (lambda (n)
                    (if (and (exact-integer? n) (< -1 n (length last-frames)))
                        (for-each
                         (lambda (local)
                           (seg #\V)
                           (format out "~a\t" (car local))
                           ((@ (ice-9 pretty-print) truncated-print) (cdr local) out #:width 200))
                         (frame-locals (car (list-ref last-frames n)) #f))
                        (fail "LISPSHELL-NO-SUCH-FRAME"
                              (format #f "No frame ~a: the last error has frames 0 to ~a."
                                      (cadr words) (- (length last-frames) 1))))))
              ((and (>= (length words) 2) (member (car words) '("source" "eval" "restart"))
                    (string->number (cadr words)))
               => (lambda (n)
                    (cond ((not (and (exact-integer? n) (< -1 n (length last-frames))))
                           (fail "LISPSHELL-NO-SUCH-FRAME"
                                 (format #f "No frame ~a: the error has frames 0 to ~a."
                                         (cadr words) (- (length last-frames) 1))))
                          ((equal? (car words) "source")
                           (seg #\V) (display (cddr (list-ref last-frames n)) out))
                          ((and (equal? (car words) "eval") (null? levels))
                           (fail "LISPSHELL-NO-LEVEL"
                                 "no error is waiting: no debug level is open"))
                          ((equal? (car words) "restart")
                           (fail "LISPSHELL-NO-SUCH-FRAME"
                                 "Guile cannot run a frame again: ,abort, then call it anew."))
                          (else (eval-in-frame (car (list-ref last-frames n))
                                               (frame-code request))))))
              (else (fail "LISPSHELL-NO-SUCH-FRAME"
                          (format #f "Guile answers bt, locals N, source N, eval N FORM, not ~s."
                                  request))))))
    (define (frame-code request)
      ;; The FORM of "eval N FORM": everything after the frame's number.
      (let* ((start (string-skip request char-whitespace? 4))
             (after-n (string-index request char-whitespace? start)))
        (if after-n (substring request after-n) "")))
    (define (frame-locals frame unique?)
      ;; A frame's variables, (name . value), innermost binding first: a frame's Scheme
      ;; values (unboxed slots, u64 f64..., are the compiler's temporaries and hold what was
      ;; last there), or what a breakpoint's frame carries, ('given (name . value) ...): the
      ;; call's arguments, or ('top . frame) for a frame stopped at its instruction. With
      ;; UNIQUE?, a name shadowed by an inner binding is left out.
      (cond
        ((and (pair? frame) (eq? (car frame) 'given)) (cdr frame))
        ((and (pair? frame) (eq? (car frame) 'top)) (frame-variables (cdr frame) unique? #t))
        (else (frame-variables frame unique? #f))))
    (define (frame-variables frame unique? top?)
      ;; TOP?: FRAME is the innermost, stopped at its instruction (a step, a source line, an
      ;; interrupt), not waiting for a call to return: Guile finds its live variables so.
      (let ((seen (make-hash-table)))
        ((@ (srfi srfi-1) filter-map)
         (lambda (b)
           (let ((name ((@ (system vm frame) binding-name) b)))
             (and (eq? ((@ (system vm frame) binding-representation) b) 'scm)
                  (not (and unique? (hashq-ref seen name)))
                  (begin (hashq-set! seen name #t)
                         (cons name ((@ (system vm frame) binding-ref) b))))))
         ((@ (system vm frame) frame-bindings) frame top?))))
    (define (eval-in-frame frame code)
      ;; CODE's forms with the frame's Scheme variables bound by name (the values they hold
      ;; now, as Guile's debugger shows them), in the current module; its values, or the
      ;; error (no level: this is a question asked of the level, not a new eval).
      (let* ((locals (frame-locals frame #t))
             (names (map car locals))
             (vals (map cdr locals)))
        (catch #t
          (lambda ()
            (let ((proc (primitive-eval `(lambda ,names ,@(read-all code)))))
              (parameterize ((current-output-port user-out) (current-error-port user-out))
                (let ((results (call-with-values (lambda () (apply proc vals)) list)))
                  (force-output user-out)
                  (for-each (lambda (v) (seg #\V) (write-value v)) (printable results))))))
          (lambda (key . args)
            (false-if-exception (force-output user-out))
            (seg #\E) (display key out) (seg #\M) (display (exn-message key args) out)))))
    (define (read-all code)
      (let ((port (open-input-string code)))
        (let loop ((acc '()))
          (let ((form (read port)))
            (if (eof-object? form) (reverse acc) (loop (cons form acc)))))))
    (define (answer-completions prefix)
      (for-each (lambda (s) (seg #\V) (display s out))
                (or (false-if-exception (completions prefix)) '())))
    (define* (read-request #:optional replies)
      ;; The next request: (kind text id); the header is <kind><length> <id>. Blank lines
      ;; (the newline after the bootstrap) are skipped; end of input ends Guile. Replies to
      ;; a read of standard input (i, x) are taken only with REPLIES (ask-input): one that
      ;; arrives when no read waits raced with an interrupt.
      (let loop ()
        (let ((line (read-line in)))
          (cond ((eof-object? line) (leave 0))
                ((string-null? line) (loop))
                (else
                 (let* ((space (string-index line #\space))
                        (n (string->number (substring line 1 space)))
                        (req (list (string-ref line 0) (if (zero? n) "" (get-string-n in n))
                                   (substring line (+ space 1)))))
                   (if (or replies (not (memv (car req) '(#\i #\x))))
                       req
                       (loop))))))))
    (set-port-encoding! in "UTF-8")
    (for-each (lambda (port)
                (set-port-encoding! port "UTF-8")
                (set-port-conversion-strategy! port 'substitute))
              (list out user-out))
    ;; Guile leaves a tty's stdout unbuffered: one write(2) per display. The person's output
    ;; streams line by line; an answer is written when it is complete (each ends with
    ;; force-output), in one write(2) up to 64 KiB, so no other thread's text lands inside it.
    (setvbuf user-out 'line)
    (setvbuf out 'block 65536)
    (if server-token
        (let ((m (resolve-module '(lispshell server) #:ensure #t)))
          (unless (module-variable m 'interrupters)
            (module-define! m 'interrupters (make-hash-table)))
          ;; How a client of the server ends (this loop's `leave`, and the second client
          ;; guile_server.py opens to interrupt it): its thread cancelled, its port closed.
          (module-define! m 'end-client
                          (lambda (port)
                            ((@ (ice-9 threads) cancel-thread) ((@ (ice-9 threads) current-thread)))
                            (false-if-exception (close-port port))
                            ;; the cancel lands at the next safe point: wait there
                            (let wait () (sleep 1) (wait))))
          ;; The interrupt names its request: the second client may run it late, after the
          ;; eval it was sent for has ended, and it must not stop the next one.
          (hash-set! (module-ref m 'interrupters) server-token
                     (lambda* (#:optional (for request-id))
                       (define (wanted?) (and evaluating (equal? for request-id)))
                       (when (wanted?)
                         (system-async-mark (lambda () (when (wanted?) (interrupted!))) me)))))
        (sigaction SIGINT (lambda (sig) (when evaluating (interrupted!)))))
    ;; The breakpoint helpers lispshell evaluates (breakpoints.py) find this loop's by its
    ;; thread, the one its traps fire on (a server may run several loops).
    (let ((m (resolve-module '(lispshell debug) #:ensure #t)))
      (unless (module-variable m 'loops)
        (module-define! m 'loops (make-weak-key-hash-table)))
      (hashq-set! (module-ref m 'loops) me breakpoint-request))
    (set-current-module (resolve-module '(guile-user)))
    (begin
      ;; Each answer ends with the module and the id of its request, so a stray answer can
      ;; never be taken for the next one.
      (let loop ()
        (catch #t
          (lambda ()
            (end-answer)
            (let ((req (read-request)))
              (set! request-id (caddr req))
              (serve req)))
          (lambda (key . args)
            (when (and server-token (eq? key 'quit))
              (leave 0))
            (unless (or (eq? key 'lispshell-interrupt)
                        (false-if-exception
                         (begin (seg #\E) (display "lispshell-protocol-error" out)
                                (seg #\M) (display (exn-message key args) out)
                                (force-output out)
                                #t)))
              ;; Not even the report could be written: lispshell's end of the channel is gone
              ;; (killed, its pty or socket closed). Nobody will read another answer, and
              ;; trying again would spin here for ever.
              (leave 1))))
        (loop)))))
