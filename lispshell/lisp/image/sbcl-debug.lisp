;;;; The frames of the error a debug level waits in (lispshell/lisp/levels.py): listed,
;;;; their locals, evaluation in one, its source, restarting one. Part of the loop's bootstrap
;;;; (after sbcl-loop.lisp), in %LISPSHELL. A level's frames are sb-di frames, valid as long
;;;; as the level's stack is: OFFER-RESTARTS keeps them in its own frame and passes them here.

(in-package "%LISPSHELL")

(defparameter *stepper-frames*
  '("SB-DI::HANDLE-SINGLE-STEP" "(SB-IMPL::STEP-FORM " "(SB-IMPL::STEP-VALUES "
    "WITH-SIMPLE-CONDITION-RESTARTS SIGNAL NIL STEP-FORM-CONDITION")
  "The stepper's machinery, left out of a step's frames wherever it is.")

(defun user-frames (limit)
  "The frames between the signal and the loop's EVAL, innermost first (at most LIMIT): what
   the person's code called, without SBCL's signalling machinery or lispshell's own frames."
  (let ((frames '()) (started nil))
    (ignore-errors
     (sb-debug::map-backtrace
      (lambda (frame)
        (let ((text (frame-text frame)))
          (cond ((or (search "SIMPLE-EVAL-IN-LEXENV" text) (search "(EVAL " text)
                     (search "%LISPSHELL::EVAL-FORMS" text))
                 (return-from user-frames (coerce (nreverse frames) 'vector)))
                ((and (not started) (some (lambda (p) (search p text)) *skipped-frames*)))
                ;; the stepper's machinery between the stepped frames, wherever it is
                ((some (lambda (p) (search p text)) *stepper-frames*))
                (t (setf started t)
                   (push frame frames)
                   (when (>= (length frames) limit)
                     (return-from user-frames (coerce (nreverse frames) 'vector)))))))
      :count (+ limit 40)))
    (coerce (nreverse frames) 'vector)))

(defun frame-text (frame)
  (when (typep frame 'breakpoint-hit)          ; a breakpoint's call, not entered yet
    (return-from frame-text (hit-call frame)))
  (let ((text (safe-string
               (lambda ()
                 (with-frame-syntax
                   (with-output-to-string (s) (sb-debug::print-frame-call frame s)))))))
    (if (> (length text) 300) (concatenate 'string (subseq text 0 300) "...") text)))

(defun bounded-print (value)
  "VALUE printed for a frame's local: bounded and circle-safe, as everywhere else."
  (let ((text (safe-string (lambda ()
                             (let ((*print-length* 20) (*print-level* 4) (*print-circle* t)
                                   (*print-pretty* nil))
                               (prin1-to-string value))))))
    (if (> (length text) 500) (concatenate 'string (subseq text 0 500) "...") text)))

(defun introspect (name &rest args)
  "SB-INTROSPECT's NAME applied to ARGS; the contrib is loaded on first use, from SBCL (never
   from an .asd a project put on ASDF's registry)."
  (unless (find-package "SB-INTROSPECT")
    (let ((sb-impl::*module-provider-functions* '(sb-impl::module-provide-contrib)))
      (require :sb-introspect)))
  (apply (find-symbol name "SB-INTROSPECT") args))

(defun frame-source (frame)
  "\"path:line\" of the definition the frame runs, or \"\" when it has none (typed at the
   prompt, or SBCL's own without sources)."
  (safe-string
   (lambda ()
     (let* ((fun (and (not (typep frame 'breakpoint-hit)) (not (toplevel-frame-p frame))
                      (sb-di:debug-fun-fun (sb-di:frame-debug-fun frame))))
            (fun (if (typep frame 'breakpoint-hit) (hit-function frame) fun))
            (source (and fun (introspect "FIND-DEFINITION-SOURCE" fun)))
            (path (and source (introspect "DEFINITION-SOURCE-PATHNAME" source)))
            (offset (and source (introspect "DEFINITION-SOURCE-CHARACTER-OFFSET" source))))
       (cond ((toplevel-frame-p frame) (or (toplevel-frame-source frame) ""))
             ((and path (probe-file path))
              (format nil "~a:~d" (namestring (truename path))
                      (if offset (form-start-line path offset) 1)))
             (t ""))))))

(defun toplevel-frame-p (frame)
  "A [toplevel] frame: a file's top-level forms being loaded, several compiled as one."
  (and (not (typep frame 'breakpoint-hit))
   (ignore-errors (eq (sb-di::debug-fun-kind (sb-di:frame-debug-fun frame)) :toplevel))))

(defun toplevel-frame-source (frame)
  "\"path:line\" of the top-level form a [toplevel] frame was running when it stopped (the
   form the load stopped at), from its code location; NIL when unknown."
  (ignore-errors
   (let* ((location (sb-di:frame-code-location frame))
          (tlf (sb-di:code-location-toplevel-form-offset location))
          (source (sb-di:code-location-debug-source location))
          (path (sb-c::debug-source-namestring source))
          (starts (sb-c::debug-source-start-positions source))
          (offset (if (and starts (< tlf (length starts)))
                      (aref starts tlf)
                      (toplevel-form-offset path tlf))))
     (when (and path offset (probe-file path))
       (format nil "~a:~d" (namestring (truename path)) (form-start-line path offset))))))

(defun toplevel-form-offset (path n)
  "Where the reader starts the Nth (from 0) top-level form of PATH (a fasl records no start
   positions): its forms skipped with *READ-SUPPRESS*, so nothing is interned or evaluated."
  (let ((text (with-open-file (in path :external-format :utf-8)
                (let ((s (make-string (file-length in))))
                  (subseq s 0 (read-sequence s in)))))
        (pos 0))
    (let ((*read-suppress* t))
      (dotimes (i n pos)
        (setf pos (nth-value 1 (read-from-string text nil nil :start pos)))))))

(defun form-start-line (path offset)
  "The 1-based line where the top-level form read from character OFFSET of PATH begins. SBCL
   records where the reader started, the end of the form before it: the blanks and comments
   between are skipped, as SLIME does, so the line is the form's own."
  (with-open-file (in path :external-format :utf-8)
    (let ((line 1))
      (flet ((next () (let ((ch (read-char in nil))) (when (eql ch #\Newline) (incf line)) ch)))
        (loop repeat offset while (next))
        (loop
          (let ((ch (peek-char nil in nil)))
            (cond ((null ch) (return line))
                  ((member ch '(#\Space #\Tab #\Newline #\Return #\Page)) (next))
                  ((char= ch #\;) (loop for c = (next) until (or (null c) (char= c #\Newline))))
                  ((char= ch #\#)
                   (next)
                   (unless (eql (peek-char nil in nil) #\|) (return line))
                   (next)
                   (let ((depth 1) (prev nil))     ; #| ... |#, nested
                     (loop while (plusp depth)
                           do (let ((c (next)))
                                (cond ((null c) (setf depth 0))
                                      ((and (eql prev #\|) (eql c #\#)) (decf depth) (setf c nil))
                                      ((and (eql prev #\#) (eql c #\|)) (incf depth) (setf c nil)))
                                (setf prev c)))))
                  (t (return line)))))))))

(defun frame-locals (frame)
  "(name . printed value) of each local valid where the frame stopped."
  (when (typep frame 'breakpoint-hit)
    (return-from frame-locals
      (loop for (name . value) in (hit-bindings frame)
            collect (cons (string-downcase (symbol-name name)) (bounded-print value)))))
  (let* ((fun (sb-di:frame-debug-fun frame))
         (location (sb-di:frame-code-location frame))
         (vars (ignore-errors (sb-di::debug-fun-debug-vars fun))))
    (loop for var across (or vars #())
          when (ignore-errors (eq (sb-di:debug-var-validity var location) :valid))
            collect (cons (let ((*package* (find-package "KEYWORD")))
                            (safe-string (lambda () (string-downcase
                                                     (symbol-name (sb-di:debug-var-symbol var))))))
                          (bounded-print (sb-di:debug-var-value var frame))))))

(defun answer-frames (frames request marker)
  "One frame request at a level: bt | locals N | source N | eval N FORM | restart N."
  (let* ((space (position #\Space request))
         (op (subseq request 0 space))
         (rest (if space (subseq request (1+ space)) ""))
         (end (or (position #\Space rest) (length rest)))
         (n (ignore-errors (parse-integer rest :end end)))
         (frame (and n (< -1 n (length frames)) (aref frames n))))
    (flet ((refuse (why) (write-error (list "LISPSHELL-NO-SUCH-FRAME" why nil) marker)))
      (cond
        ((string= op "bt")
         (loop for f across frames for i from 0
               do (seg marker #\V)
                  (format *out* "~d~c~a~c~a" i #\Tab (frame-text f) #\Tab (frame-source f))))
        ((null frame)
         (refuse (if (zerop (length frames))
                     "the waiting error has no frames of yours"
                     (format nil "choose a frame from 0 to ~d" (1- (length frames))))))
        ((string= op "locals")
         (dolist (local (frame-locals frame))
           (seg marker #\V) (format *out* "~a~c~a" (car local) #\Tab (cdr local))))
        ((string= op "source")
         (seg marker #\V) (write-string (frame-source frame) *out*))
        ((string= op "eval")
         (handler-case
             (let ((form (let ((*read-eval* t)) (read-from-string rest t nil :start end))))
               (dolist (v (multiple-value-list
                           ;; A frame without debug information (an undefined function's):
                           ;; plain EVAL, as SBCL's own debugger falls back to.
                           (if (typep frame 'breakpoint-hit)
                               (eval (with-bindings form (hit-bindings frame)))
                               (handler-case (sb-di:eval-in-frame frame form)
                                 (sb-di:debug-condition () (eval form))))))
                 (seg marker #\V) (terpri *out*)
                 (let ((*print-circle* t) (*print-level* (or *print-level* 1000)))
                   (prin1 v *out*))))
           (error (e)
             (write-error (list (safe-string (lambda () (prin1-to-string (type-of e))))
                                (safe-string (lambda () (princ-to-string e))) nil)
                          marker))))
        ((string= op "restart")
         (if (and (not (typep frame 'breakpoint-hit)) (sb-debug::frame-has-debug-tag-p frame))
             (let* ((call (multiple-value-list (sb-debug::frame-call frame)))
                    (fun (sb-di:debug-fun-fun (sb-di:frame-debug-fun frame))))
               (sb-debug::unwind-to-frame-and-call
                frame (lambda () (apply fun (second call)))))
             (refuse (format nil "frame ~d cannot be restarted: it was compiled without ~
                                  (debug 2); recompile it with (declaim (optimize (debug 2)))"
                             n))))
        (t (refuse (format nil "unknown frame request ~a" op)))))))

;;; Stepping (lispshell/lisp/levels.py: `step`). SBCL's stepper signals a STEP-FORM-CONDITION
;;; before each call in code compiled with (debug 3), and a STEP-VALUES-CONDITION with its
;;; values after. Our hook (bound around every eval of the person's, child and Swank) makes the
;;; first a debug level like any other (its restarts STEP-INTO, STEP-NEXT, STEP-OUT,
;;; STEP-CONTINUE are what ,s ,n ,o ,c invoke), said in one line (type LISPSHELL-STEP), and
;;; prints the second as one line of output: SBCL's own display is four lines a step, and
;;; through the debugger hook about 17 with the stepper's frames.

(defvar *stepped-into* nil
  "The form (SBCL's text of it) the last STEP-INTO went into. Its values coming back with no
   step inside it means the function it called has no step points: said, not skipped silently.")

(defvar *shown-values* nil
  "The last STEP-VALUES-CONDITION printed: Swank's handler and SBCL's global one both run the
   stepper for the same condition.")

(defun one-line (text limit)
  "TEXT with its runs of blanks and newlines made one space, cut at LIMIT characters."
  (let ((out (make-string-output-stream)) (blank nil) (n 0))
    (loop for ch across text
          do (cond ((member ch '(#\Space #\Tab #\Newline #\Return)) (setf blank t))
                   (t (when (and blank (plusp n)) (write-char #\Space out) (incf n))
                      (setf blank nil)
                      (write-char ch out) (incf n)))
          until (>= n limit))
    (let ((s (get-output-stream-string out)))
      (if (>= n limit) (concatenate 'string s "...") s))))

(defun step-message (c)
  "The form a step stops before, on one line, with its arguments when SBCL knows them."
  (let ((args (sb-ext::step-condition-args c)))
    (format nil "~a~@[  [arguments: ~a]~]"
            (one-line (sb-ext::step-condition-form c) 300)
            (and (listp args) args
                 (one-line (format nil "~{~a~^ ~}" (mapcar #'bounded-print args)) 200)))))

(defvar *next-over* nil
  "The form (its text) a STEP-NEXT steps over, while it runs: see STEP-RESTART.")

(defun step-restart (restart condition)
  "The restart to invoke when the person picks RESTART at a level waiting in CONDITION. At a
   step, STEP-INTO is remembered (*STEPPED-INTO*), and STEP-NEXT over a full call is taken as
   STEP-INTO whose steps inside are answered at once (STEP-HOOK): SBCL's own STEP-NEXT runs
   the call with stepping off, and its values are never said."
  (when (typep condition 'sb-ext:step-form-condition)
    (let ((form (sb-ext::step-condition-form condition)))
      (case (restart-name restart)
        (sb-ext:step-into (setf *stepped-into* form))
        (sb-ext:step-next
         (let ((into (find-restart 'sb-ext:step-into condition)))
           ;; arguments known: a full call, whose values the stepper's wrapper reports
           (when (and into (listp (sb-ext::step-condition-args condition)))
             (setf *next-over* form)
             (return-from step-restart into)))))))
  restart)

(defun forget-steps ()
  "No step waits (a request at the top level): stepping is off, nothing is being stepped over."
  (sb-impl::disable-stepping)
  (setf *next-over* nil *stepped-into* nil))

(defun step-hook (c)
  (typecase c
    (sb-ext:step-form-condition
     (when *next-over*                      ; inside a call stepped over: on, unstopped
       (invoke-restart (find-restart 'sb-ext:step-next c)))
     (setf *stepped-into* nil)
     (let ((sb-debug:*stack-top-hint* (sb-di::find-stepped-frame)))
       (invoke-debugger c)))
    (sb-ext:step-values-condition
     (unless (eq c *shown-values*)
       (setf *shown-values* c)
       (let* ((form (sb-ext::step-condition-form c))
              (values (sb-ext::step-condition-result c))
              (opaque (and *stepped-into* (equal form *stepped-into*))))
         (setf *stepped-into* nil)
         (when (equal form *next-over*) (setf *next-over* nil))
         (format *debug-io* "~&; ~a => ~a~@[  (~a)~]~%"
                 (one-line form 120)
                 (if values (one-line (format nil "~{~a~^, ~}" (mapcar #'bounded-print values)) 200)
                     "no values")
                 (and opaque
                      (format nil "~a has no step points: compiled without (debug 3)"
                              (let ((end (position-if (lambda (ch) (member ch '(#\Space #\))))
                                                      form :start 1)))
                                (subseq form 1 (or end (length form)))))))
         (finish-output *debug-io*))))))

;;; Breakpoints (lispshell/lisp/levels.py: `set_breakpoint`). A breakpoint encapsulates the
;;; function (sb-int:encapsulate, as TRACE does: it survives a redefinition), so that a call
;;; whose CONDITION holds enters the debugger with a BREAKPOINT-HIT: on a child, a level of
;;; lispshell's loop; over Swank, an SLDB level (another thread's is listed, never lost). The
;;; level's restarts are CONTINUE (run the call) and RETURN-VALUE (return a value without
;;; running it); forms typed there evaluate with the arguments bound (*LEVEL-BINDINGS*, read
;;; by EVAL-FORMS), and its frame 0 is the call itself, its locals the arguments by name.

(defstruct (breakpoint (:constructor make-breakpoint (number name condition text by-model)))
  number name condition text by-model (hits 0)
  (binder nil))   ; (function . its argument binder), compiled at the first hit

(defvar *breakpoints* '() "The breakpoints set, oldest first.")
(defvar *breakpoint-count* 0 "The last breakpoint's number: numbers are never reused.")
(defvar *breakpoint-lock* (sb-thread:make-mutex :name "lispshell breakpoints"))

(define-condition breakpoint-hit (condition)
  ((point :initarg :point :reader hit-point)
   (function :initarg :function :reader hit-function)
   (args :initarg :args :reader hit-args)
   (bindings :initarg :bindings :reader hit-bindings))
  (:report (lambda (c stream)
             ;; The call, then each argument by name on its own line (the REPL's display).
             (format stream "~a~{~%~a~}" (hit-call c)
                     (or (loop for (name . value) in (hit-bindings c)
                               collect (format nil "~a = ~a" (string-downcase (symbol-name name))
                                               (bounded-print value)))
                         (and (hit-args c)
                              (list (format nil "arguments: ~{~a~^ ~}"
                                            (mapcar #'bounded-print (hit-args c))))))))))

(defun hit-call (c)
  (one-line (with-frame-syntax
              (let ((*package* (find-package "COMMON-LISP-USER")))
                (format nil "(~s~{ ~a~})" (breakpoint-name (hit-point c))
                        (mapcar #'bounded-print (hit-args c)))))
            300))

(defun with-bindings (form bindings)
  (if bindings
      `(let ,(loop for (name . value) in bindings collect `(,name ',value))
         (declare (ignorable ,@(mapcar #'car bindings)))
         ,form)
      form))

(defun argument-bindings (point function args)
  "(name . value) of each parameter of FUNCTION called with ARGS, as its lambda list binds them
   (defaults evaluated, &rest and &key included); NIL when the lambda list is unknown."
  (let ((binder (if (eq (car (breakpoint-binder point)) function)
                    (cdr (breakpoint-binder point))
                    (cdr (setf (breakpoint-binder point)
                               (cons function (argument-binder function)))))))
    (and binder (ignore-errors (funcall binder args)))))

(defun argument-binder (function)
  "A function of the arguments answering ARGUMENT-BINDINGS for FUNCTION, or NIL."
  (ignore-errors
   (let* ((lambda-list (sb-kernel:%fun-lambda-list function))
          (names (loop for p in lambda-list
                       unless (member p lambda-list-keywords)
                         append (let ((p (if (consp p) p (list p))))
                                  (remove nil (list (if (consp (first p)) (second (first p)) (first p))
                                                    (third p))))
                       until (eq p '&aux))))
     (when (and (listp lambda-list) (every #'symbolp names))
       (let ((binder (compile nil `(lambda ,lambda-list
                                     (declare (ignorable ,@names))
                                     (list ,@names)))))
         (lambda (args) (mapcar #'cons names (apply binder args))))))))

(defun breakpoint-line (p)
  (format nil "~d~c~a~c~a~c~d~c~:[~;model~]" (breakpoint-number p) #\Tab (breakpoint-text p)
          #\Tab (or (breakpoint-condition p) "") #\Tab (breakpoint-hits p) #\Tab
          (breakpoint-by-model p)))

(defun read-function-name (text)
  "The function TEXT names, read with *READ-EVAL* off in the current package; an error that
   says why when it names none."
  (let ((name (handler-case (let ((*read-eval* nil)) (read-from-string text))
                (error () (error "~a is not a function name" text)))))
    (cond ((not (and name (symbolp name))) (error "~a is not a function name" text))
          ((special-operator-p name) (error "~s is a special operator: no breakpoint there" name))
          ((macro-function name) (error "~s is a macro: a breakpoint stops a function's calls" name))
          ((not (fboundp name)) (error "~s is not defined as a function" name))
          (t name))))

(defun breakpoint-stops-p (point bindings args)
  (let ((condition (breakpoint-condition point)))
    (or (null condition)
        ;; A condition that fails stops too: what it says is worth a look.
        (handler-case (eval (with-bindings (let ((*read-eval* t)) (read-from-string condition))
                                           (or bindings (list (cons 'args args)))))
          (error () t)))))

(defun set-breakpoint (text condition by-model)
  "Set a breakpoint on the function TEXT names (again: its condition replaced), printing its
   line (number, name, condition, hits, who set it)."
  (let* ((name (read-function-name text))
         (condition (and condition (string/= (string-trim " " condition) "")
                         (progn (let ((*read-eval* t)) (read-from-string condition)) ; readable?
                                (string-trim " " condition))))
         (label (with-frame-syntax (let ((*package* (find-package "COMMON-LISP-USER")))
                                     (prin1-to-string name))))
         (point (sb-thread:with-mutex (*breakpoint-lock*)
                  (or (let ((old (find name *breakpoints* :key #'breakpoint-name)))
                        (when old
                          (setf (breakpoint-condition old) condition
                                (breakpoint-by-model old) by-model)
                          old))
                      (let ((new (make-breakpoint (incf *breakpoint-count*) name condition label
                                                  by-model)))
                        (setf *breakpoints* (append *breakpoints* (list new)))
                        new)))))
    (unless (sb-int:encapsulated-p name 'lispshell-breakpoint)
      (sb-int:encapsulate
       name 'lispshell-breakpoint
       (lambda (function &rest args)
         (let ((bindings (argument-bindings point function args)))
           (if (breakpoint-stops-p point bindings args)
               (let ((how (restart-case
                              (let ((hit (make-condition 'breakpoint-hit :point point :function function
                                                               :args args :bindings bindings)))
                                (sb-thread:with-mutex (*breakpoint-lock*) (incf (breakpoint-hits point)))
                                (if (and *loop-thread* (not (eq sb-thread:*current-thread* *loop-thread*)))
                                    (park hit)        ; a thread of a child no level serves
                                    (invoke-debugger hit)))
                            (continue ()
                              :report (lambda (s) (format s "Run ~a with these arguments."
                                                          (breakpoint-text point)))
                              '(:run))
                            (return-value (&rest values)
                              :report (lambda (s) (format s "Return a value from ~a without running it."
                                                          (breakpoint-text point)))
                              :interactive (lambda ()
                                             (multiple-value-list
                                              (eval (with-bindings (let ((*read-eval* t)) (read *query-io*))
                                                                   bindings))))
                              (cons :return values)))))
                 (if (eq (first how) :run)
                     (apply function args)
                     (values-list (rest how))))
               (apply function args))))))
    (write-line (breakpoint-line point))
    (values)))

(defun list-breakpoints ()
  (dolist (p *breakpoints*) (write-line (breakpoint-line p)))
  (values))

(defun clear-breakpoints (which)
  "Remove breakpoint number WHICH, or the one on the function WHICH names, or all (\"\");
   print the lines of those removed."
  (let* ((which (string-trim " " which))
         (gone (sb-thread:with-mutex (*breakpoint-lock*)
                 (let ((gone (cond ((string= which "") *breakpoints*)
                                   ((every #'digit-char-p which)
                                    (remove (parse-integer which) *breakpoints*
                                            :key #'breakpoint-number :test-not #'eql))
                                   (t (let ((name (ignore-errors
                                                   (let ((*read-eval* nil)) (read-from-string which)))))
                                        (remove name *breakpoints* :key #'breakpoint-name
                                                                   :test-not #'equal))))))
                   (setf *breakpoints* (remove-if (lambda (p) (member p gone)) *breakpoints*))
                   gone))))
    (dolist (p gone)
      (when (fboundp (breakpoint-name p))
        (sb-int:unencapsulate (breakpoint-name p) 'lispshell-breakpoint))
      (write-line (breakpoint-line p)))
    (values)))


;;; A hit on a thread of a child's image other than the loop's (a thread the person started):
;;; no level can be served there, so the hit is *parked*: kept in *PARKED*, said on the person's
;;; output, and the thread waits until lispshell decides it (RESUME: run the call, return a
;;; value, leave it), asked by the session (lispshell/lisp/breakpoints.py: `,threads`,
;;; `,thread N`). Over Swank, Swank's own debugger keeps such hits (*LOOP-THREAD* is NIL there).

(defvar *parked* '() "(id . parked) of the hits waiting on other threads, oldest first.")
(defvar *parked-count* 0)
(defvar *parked-lock* (sb-thread:make-mutex :name "lispshell parked hits"))
(defvar *parked-queue* (sb-thread:make-waitqueue :name "lispshell parked hits"))

(defstruct (parked (:constructor make-parked (id hit-of thread)))
  id hit-of thread (decision nil))

(defun park (hit)
  "Wait for lispshell's decision on HIT; the restart it names is invoked here, in the thread."
  (let ((parked (sb-thread:with-mutex (*parked-lock*)
                  (let ((p (make-parked (incf *parked-count*) hit sb-thread:*current-thread*)))
                    (setf *parked* (append *parked* (list p)))
                    p))))
    ;; Said on a stream of its own on the terminal, written at once: SBCL's shared *STDOUT*
    ;; buffer kept it until the loop's next answer flushed it.
    (ignore-errors
     (let ((out (sb-sys:make-fd-stream 1 :output t :buffering :full :auto-close nil
                                          :external-format :utf-8)))
       (format out "~&; breakpoint ~d stopped ~a in thread ~s (,threads lists it)~%"
               (breakpoint-number (hit-point hit)) (hit-call hit)
               (sb-thread:thread-name sb-thread:*current-thread*))
       (finish-output out)))
    (let ((decision (unwind-protect
                         (sb-thread:with-mutex (*parked-lock*)
                           (loop until (parked-decision parked)
                                 do (sb-thread:condition-wait *parked-queue* *parked-lock*))
                           (parked-decision parked))
                      (sb-thread:with-mutex (*parked-lock*)
                        (setf *parked* (remove parked *parked*))))))
      (case (first decision)
        (:run (invoke-restart (find-restart 'continue hit)))
        (:return (apply #'invoke-restart (find-restart 'return-value hit) (rest decision)))
        (t (abort))))))                        ; the thread's own ABORT: it ends

(defun parked-hit (id)
  (or (find id *parked* :key #'parked-id)
      (error "no breakpoint waits as ~d (it was resumed or left)" id)))

(defun parked-lines ()
  "One line per parked hit: id TAB thread TAB restarts (NAME TAB description, joined by US)
   TAB message (its newlines as US)."
  (dolist (p *parked*)
    (let ((hit (parked-hit-of p)))
      (format t "~d~c~a~c~{~a~^~c~}~c~a~%" (parked-id p) #\Tab
              (sb-thread:thread-name (parked-thread p)) #\Tab
              (loop for r in (list (format nil "CONTINUE~cRun ~a with these arguments." #\Tab
                                           (breakpoint-text (hit-point hit)))
                                   (format nil "RETURN-VALUE~cReturn a value from ~a without running it."
                                           #\Tab (breakpoint-text (hit-point hit)))
                                   (format nil "ABORT~cLeave the call (the thread ends)." #\Tab))
                    for first = t then nil
                    unless first collect (code-char 31)
                    collect r)
              #\Tab
              (substitute (code-char 31) #\Newline (princ-to-string hit)))))
  (values))

(defun eval-at (id code)
  "CODE's forms evaluated with parked hit ID's arguments bound; the last form's values."
  (let ((*level-bindings* (hit-bindings (parked-hit-of (parked-hit id)))))
    (values-list (eval-forms code nil))))

(defun frames-at (id op n)
  (let ((hit (parked-hit-of (parked-hit id))))
    (cond ((string= op "bt")
           (format t "0~c~a~c~a~%" #\Tab (hit-call hit) #\Tab (frame-source hit)))
          ((not (eql n 0)) (error "only frame 0, the call, is known on another thread"))
          ((string= op "locals")
           (loop for (name . value) in (frame-locals hit)
                 do (format t "~a~c~a~%" name #\Tab value)))
          ((string= op "source") (format t "~a~%" (frame-source hit)))
          (t (error "unknown frame request ~a" op)))
    (values)))

(defun resume (id n code)
  "Decide parked hit ID: restart 0 runs the call, 1 returns CODE's values (evaluated with the
   arguments bound), 2 leaves it (the thread ends)."
  (let* ((parked (parked-hit id))
         (decision (case n
                     (0 (list :run))
                     (1 (cons :return (multiple-value-list (eval-at id code))))
                     (2 (list :abort))
                     (t (error "choose a restart from 0 to 2")))))
    (sb-thread:with-mutex (*parked-lock*)
      (setf (parked-decision parked) decision)
      (sb-thread:condition-broadcast *parked-queue*))
    (values)))
