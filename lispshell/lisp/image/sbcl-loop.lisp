;;;; lispshell's read-eval-print loop for SBCL, typed into a fresh `sbcl` once (see
;;;; lispshell/lisp/sbcl.py and the frame format in lispshell/lisp/session.py). session.py then
;;;; calls (%lispshell::main NONCE) in COMMON-LISP-USER.
(defpackage "%LISPSHELL" (:use "COMMON-LISP"))
(in-package "%LISPSHELL")
(defvar *in* sb-impl::*stdin*)
(defvar *out* sb-impl::*stdout*
  "Where answers go. MAIN gives the loop a stream of its own on the same terminal: SBCL's
   fd-streams are not thread-safe, and a thread the person left printing into the shared
   *STDOUT* buffer while an answer was written there could duplicate the answer's bytes (a
   second value frame). With a buffer of its own, fully buffered and written when the answer
   is complete (END-ANSWER), another thread's text lands before or after an answer of up to
   8 KiB, never inside it (a value printed on several lines was written line by line, and a
   printing thread's lines landed between them).")
(defvar *user-out* sb-impl::*stdout*
  "Where the person's code prints while it runs: a line-buffered stream of its own on the same
   terminal (MAIN), so that their output streams line by line while answers do not.")
(defvar *evaluating* nil "True while user code runs: only then does an interrupt unwind.")
(defvar *level* 0 "The debug levels open: errors waiting, each inside the one before.")
(defvar *invoking* nil
  "True from an I request (,invoke) invoking a restart until an eval's ABORT catches it: a
   level's restart 0 only comes back to the level it names; (abort) typed there leaves it.")
(defvar *outermost-abort* nil
  "The ABORT restart of the eval that opened the first level: where the restarts a level
   lists end (what lies beyond it is the stock REPL's, which lispshell never leaves to).")

(defun seg (marker tag)
  ;; The marker is the session's secret: it lives only in MAIN's frame and is passed down,
  ;; never in a variable that code in the image could read (see session.py).
  ;; What the person's threads printed without a newline (into SBCL's shared buffer, not the
  ;; loop's own stream) goes out first, as output before the frame.
  (ignore-errors (finish-output sb-impl::*stdout*))
  (ignore-errors (finish-output *user-out*))
  (write-string marker *out*)
  (write-char tag *out*))

(defun safe-string (thunk)
  "THUNK's string, or a note if printing it fails (a broken PRINT-OBJECT must not hurt us)."
  (handler-case (funcall thunk)
    (serious-condition (c)
      (format nil "#<error printing: ~A>" (ignore-errors (type-of c))))))

(defun package-label (p)
  (let ((best (package-name p)))
    (dolist (n (package-nicknames p) best)
      (when (< (length n) (length best)) (setf best n)))))

(defparameter *skipped-frames*
  '("%LISPSHELL::" "SB-KERNEL::%SIGNAL" "(SIGNAL " "(ERROR " "(CERROR " "SB-KERNEL:%SIGNAL"
    "SB-INT:%BREAK" "SB-KERNEL::%BREAK" "(BREAK " "(INVOKE-DEBUGGER " "SB-DEBUG::" "(FLET " "SB-UNIX::"
    "SB-THREAD::" "(LAMBDA () :IN SB-UNIX" "SB-KERNEL::INTERNAL-ERROR" "SB-KERNEL:INTERNAL-ERROR"
    "SB-SYS:INVOKE-INTERRUPTION" "SB-SYS::INVOKE-INTERRUPTION" "foreign function"
    ;; the stepper's own frames, above the stepped code
    "SB-IMPL::STEP-" "SB-IMPL::INVOKE-STEPPER" "(STEP-" "SB-KERNEL::STEP-" "SB-C::STEP-"))

(defmacro with-frame-syntax (&body body)
  "BODY prints frames as the skip list above reads them, whatever printer variables the person
   set (*PRINT-CASE* :DOWNCASE in ~/.sbclrc, *PRINT-PRETTY*, *PRINT-READABLY*, *PACKAGE*):
   which frames are lispshell's, and so the numbers ,frame N takes, never depend on them."
  `(with-standard-io-syntax
     (let ((*print-readably* nil) (*print-length* 5) (*print-level* 3))
       ,@body)))

(defun backtrace-lines ()
  "Up to 12 frames between the signal and our loop, one line each."
  (let ((lines '()) (started nil))
    (ignore-errors
     (sb-debug::map-backtrace
      (lambda (frame)
        (let ((text (safe-string
                     (lambda ()
                       (with-frame-syntax
                         (with-output-to-string (s) (sb-debug::print-frame-call frame s)))))))
          (cond ((or (search "SIMPLE-EVAL-IN-LEXENV" text) (search "(EVAL " text)
                     (search "%LISPSHELL::EVAL-FORMS" text))
                 (return-from backtrace-lines (nreverse lines)))
                ((and (not started)
                      (some (lambda (p) (search p text)) *skipped-frames*)))
                (t (setf started t)
                   (push (if (> (length text) 300) (concatenate 'string (subseq text 0 300) "...") text)
                         lines)
                   (when (>= (length lines) 12)
                     (return-from backtrace-lines (nreverse lines)))))))
      :count 60))
    (nreverse lines)))

(define-condition input-interrupted (sb-sys:interactive-interrupt) ()
  (:report "Interrupted while reading standard input.")
  (:documentation "Ctrl-C at the person's input line: said as any interrupt."))

(defun describe-condition (c)
  ;; A step (sbcl-debug.lisp) is said in one line: the form it stops before.
  (when (typep c 'sb-ext:step-form-condition)
    (return-from describe-condition (list "LISPSHELL-STEP" (step-message c) nil)))
  ;; A breakpoint's hit: the call, then its arguments by name (its report), no frames.
  (when (typep c 'breakpoint-hit)
    (return-from describe-condition
      (list "LISPSHELL-BREAK" (safe-string (lambda () (princ-to-string c))) nil)))
  (list (if (typep c 'input-interrupted)
            "SB-SYS:INTERACTIVE-INTERRUPT"
            (safe-string (lambda () (let ((*package* (find-package "COMMON-LISP-USER")))
                                      (prin1-to-string (type-of c))))))
        (safe-string (lambda () (princ-to-string c)))
        (backtrace-lines)))

;;; Standard input. The person's code reads a stream whose lines come from whoever evaluates
;;; (session.py: the REPL's input line, a batch run's standard input, or end of file): when
;;; its buffer is empty it flushes their output, sends the I tag and waits for the reply.
(defclass terminal-input (sb-gray:fundamental-character-input-stream)
  ((ask :initarg :ask)            ; a function: the next line (newline included), NIL at EOF
   (buffer :initform "")
   (index :initform 0)))

(defun terminal-input-ready (stream)
  "True when STREAM has a character, asking for a line if it has none; NIL at end of file
   (the next read asks again, as a terminal does after Ctrl-D)."
  (with-slots (ask buffer index) stream
    (or (< index (length buffer))
        (let ((line (funcall ask)))
          (setf buffer (or line "") index 0)
          (plusp (length buffer))))))

(defmethod print-object ((s terminal-input) stream)
  (write-string "#<standard input>" stream))

;; A two-way stream (*QUERY-IO*) asks its input side where its column is (Y-OR-N-P's FRESH-LINE).
(defmethod sb-gray:stream-line-column ((s terminal-input)) nil)

(defmethod sb-gray:stream-read-char ((s terminal-input))
  (if (terminal-input-ready s)
      (with-slots (buffer index) s (prog1 (char buffer index) (incf index)))
      :eof))

(defmethod sb-gray:stream-unread-char ((s terminal-input) char)
  (declare (ignore char))
  (with-slots (index) s (when (plusp index) (decf index)))
  nil)

(defmethod sb-gray:stream-read-char-no-hang ((s terminal-input))
  (with-slots (buffer index) s
    (when (< index (length buffer)) (prog1 (char buffer index) (incf index)))))

(defmethod sb-gray:stream-listen ((s terminal-input))
  (with-slots (buffer index) s (< index (length buffer))))

(defmethod sb-gray:stream-clear-input ((s terminal-input))
  (with-slots (buffer index) s (setf buffer "" index 0))
  nil)

(defun input-interrupted (condition)
  "The reading code was interrupted (Ctrl-C at the input line, or SIGINT while it waits):
   a debug level, whose CONTINUE goes on reading by asking again."
  (restart-case (invoke-debugger condition)
    (continue () :report "Go on reading standard input." (throw 'ask-again nil))))

(defun at-column-0 ()
  "The person's terminal is at the start of a line (after a line they typed, or an answer):
   FRESH-LINE and ~& must not add an empty one."
  (ignore-errors (setf (sb-impl::fd-stream-output-column *user-out*) 0)))

(defun ask-for-input (marker)
  "A line from whoever evaluates, or NIL at end of file (session.py: the I tag and its reply)."
  (loop
    (catch 'ask-again
      (seg marker #\I)
      (finish-output *out*)
      (handler-bind ((sb-sys:interactive-interrupt
                       (lambda (c) (unless (typep c 'input-interrupted) (input-interrupted c)))))
        (loop
          (multiple-value-bind (kind text) (read-request t)
            (case kind
              (#\i (at-column-0)
                   (return-from ask-for-input (if (zerop (length text)) nil text)))
              (#\x (input-interrupted (make-condition 'input-interrupted))))))))))

(defun terminal-io-streams (marker)
  "The person's standard input, and the two-way stream for *TERMINAL-IO* and *QUERY-IO*."
  (let ((in (make-instance 'terminal-input :ask (lambda () (ask-for-input marker)))))
    (values in (make-two-way-stream in *user-out*))))

(defvar *loop-thread* nil
  "The thread lispshell's loop runs in, on a child (MAIN); NIL over Swank. A breakpoint hit on
   another thread of a child waits parked (sbcl-debug.lisp).")

(defvar *level-bindings* nil
  "(symbol . value) of the arguments of the breakpoint whose level forms are typed at
   (sbcl-debug.lisp): EVAL-FORMS evaluates each form with them bound.")

(defun eval-forms (code history)
  "Evaluate each form of CODE in turn, as the REPL would; the last form's values.
   HISTORY false leaves the REPL variables (- + ++ +++ * ** *** / // ///) alone."
  (let ((stream (make-string-input-stream code))
        (eof '#:eof)
        (vals '()))
    (loop
      (let ((form (read stream nil eof)))
        (when (eq form eof) (return vals))
        (when history (setf - form))
        (setf vals (multiple-value-list (eval (with-bindings form *level-bindings*))))
        (when history
          (setf +++ ++ ++ + + form
                /// // // / / vals
                *** ** ** * * (first vals)))))))

;;; Debug levels. When a form the person or the model sent (an E request) signals an ERROR
;;; (or BREAK, or is interrupted), the loop answers with the condition, its frames, its
;;; restarts (R fields, innermost first, ending with our own ABORT) and the level (L), then
;;; waits for the next request INSIDE the handler, so the stack, and with it the restarts and
;;; the frames, are still there, as in SLDB. There: E evaluates in the error's dynamic extent
;;; (an error there opens the next level), I N [FORM] invokes restart N (FORM answers what an
;;; interactive restart reads), F asks about a frame (sbcl-debug.lisp), A leaves this level
;;; (back to the one below), T leaves them all; C and N (completions, look-ups) are served in
;;; place. STATE is (request-id . request-to-run-at-the-top-level), passed down like the marker.

(defun write-error (err marker)
  (seg marker #\E) (write-string (first err) *out*)
  (seg marker #\M) (write-string (second err) *out*)
  (dolist (line (third err)) (seg marker #\B) (write-string line *out*)))

(defun end-answer (marker state)
  "The end of every answer: the package, then D and the request's id."
  (seg marker #\P) (write-string (package-label *package*) *out*)
  (when (plusp *level*) (seg marker #\L) (format *out* "~d" *level*))
  (seg marker #\D) (write-string (car state) *out*)
  (terpri *out*)  ; also puts the column back to 0 (FRESH-LINE, ~&)
  (finish-output *out*))

(defun restart-line (r)
  (format nil "~a~c~a"
          (if (restart-name r) (symbol-name (restart-name r)) "")
          #\Tab (safe-string (lambda () (princ-to-string r)))))

(defparameter *top-level-syntax*
  '(*package* *readtable* *read-base* *read-eval* *read-suppress* *read-default-float-format*
    *print-base* *print-radix* *print-case* *print-circle* *print-escape* *print-pretty*
    *print-length* *print-level* *print-lines* *print-readably* *print-right-margin*
    *print-array* *print-gensym*)
  "Served while restarts are offered, completions and look-ups see these as they were when the
   failed request began, not as the failed form had bound them (a LET of *PRINT-BASE* 16, say).")

(defmacro at-top-level-syntax (values &body body)
  `(progv *top-level-syntax* ,values ,@body))

(defun offer-restarts (c top marker state top-values)
  "Answer the failed request with C's restarts (up to TOP, our ABORT), then serve requests
   with the stack kept until one picks a restart or a new eval unwinds it."
  (let ((restarts (append
                   (loop for r in (compute-restarts c) collect r until (eq r top))
                   ;; and every outer level's, as SBCL's debugger and SLDB list them (those
                   ;; belong to their own conditions: asked without C); invoked here, one
                   ;; leaves this level on its way
                   (unless (eq top *outermost-abort*)
                     (loop for r in (rest (member top (compute-restarts)))
                           collect r until (eq r *outermost-abort*)))))
        ;; a breakpoint's call is frame 0 (its locals the arguments), then its callers
        (frames (if (typep c 'breakpoint-hit)
                    (concatenate 'vector (vector c) (user-frames 200))
                    (user-frames 200)))
        (*level-bindings* (and (typep c 'breakpoint-hit) (hit-bindings c)))
        (*level* (1+ *level*)))
    (write-error (describe-condition c) marker)
    (dolist (r restarts) (seg marker #\R) (write-string (restart-line r) *out*))
    (end-answer marker state)
    (let ((*evaluating* nil))
      (loop
        (multiple-value-bind (kind text request-id) (read-request)
          (setf (car state) request-id)
          (case kind
            (#\C (at-top-level-syntax top-values (answer-completions text marker)))
            (#\Y (answer-system-names text marker))
            (#\N (at-top-level-syntax top-values (answer-eval text nil marker state)))
            (#\I (let* ((end (or (position #\Space text) (length text)))
                        (n (parse-integer text :end end :junk-allowed t))
                        (restart (and n (< -1 n (length restarts)) (nth n restarts))))
                   (write-error
                    (if restart
                        ;; FORM answers a restart that reads, from *QUERY-IO* (USE-VALUE) or
                        ;; from *STANDARD-INPUT* (an :interactive function calling READ)
                        ;; Without FORM it is asked as any read is (the person's input line).
                        (let* ((form-given (find-if-not (lambda (ch) (member ch '(#\Space #\Tab #\Newline)))
                                                        text :start (min end (length text))))
                               (in (if form-given
                                       (make-string-input-stream text (min (1+ end) (length text)))
                                       (terminal-io-streams marker)))
                               (*standard-input* in)
                               (*query-io* (make-two-way-stream
                                            in (if form-given (make-broadcast-stream) *user-out*)))
                               (*evaluating* t))
                          ;; Returns only when the restart did not transfer control: it
                          ;; needs a value (none was given), or it simply returned.
                          (setf *invoking* t)
                          (setf restart (step-restart restart c))
                          (let ((why (handler-case (progn (invoke-restart-interactively restart) nil)
                                       (error (e) (safe-string (lambda () (princ-to-string e)))))))
                            (list "LISPSHELL-RESTART-DID-NOT-RUN"
                                  (if why
                                      (format nil "restart ~d needs a value: ,invoke ~d FORM (~a)"
                                              n n why)
                                      (format nil "restart ~d returned without leaving the error" n))
                                  nil)))
                        (list "LISPSHELL-NO-SUCH-RESTART"
                              (format nil "choose a restart from 0 to ~d" (1- (length restarts)))
                              nil))
                    marker)
                   ;; still on offer: say so again
                   (dolist (r restarts) (seg marker #\R) (write-string (restart-line r) *out*))))
            (#\E (answer-eval text t marker state))
            (#\F (answer-frames frames text marker))
            (#\A (throw 'abort-eval :left-level))
            (#\T (throw 'top-level :left-all))
            (#\Q (sb-ext:exit :code 0 :abort t))
            (t (setf (cdr state) (list kind text request-id))
               (throw 'top-level :unwound)))
          (end-answer marker state))))))

(defun run-eval (code history marker state)
  "Evaluate CODE and print its values; NIL, (type message backtrace) if it failed, or
   :UNWOUND when its restarts were offered and a later request unwound it."
  (at-column-0)
  (setf *invoking* nil)
  (multiple-value-bind (in io) (terminal-io-streams marker)
  (let* ((*standard-input* in) (*standard-output* *user-out*) (*error-output* *user-out*)
         (*trace-output* *user-out*) (*terminal-io* io) (*query-io* io) (*debug-io* io)
         (top-values (mapcar #'symbol-value *top-level-syntax*))
         ;; Said now, at the level it returns to (a report is made when it is shown).
         (back (if (plusp *level*)
                   (format nil "Return to debug level ~d." *level*)
                   "Return to lispshell's top level.")))
    (catch 'abort-eval
      (multiple-value-bind (result aborted)
          (with-simple-restart (abort "~a" back)
            (let* ((top (find-restart 'abort))
                   (*outermost-abort* (or *outermost-abort* top)))
              (flet ((fail (c offer)
                       ;; Not offered: look-ups (N requests) and exhausted storage. An interrupt
                       ;; is offered with its CONTINUE restart, which resumes the form.
                       (if (and history offer (not (typep c 'storage-condition)))
                           (offer-restarts c top marker state top-values)
                           (throw 'abort-eval (describe-condition c)))))
                (handler-bind ((serious-condition
                                 ;; An interrupt is first signalled, then BREAKs with its
                                 ;; CONTINUE restart: it is taken there, by the debugger hook.
                                 (lambda (c)
                                   (unless (typep c 'sb-sys:interactive-interrupt)
                                     (fail c (typep c 'error))))))
                  (let ((sb-ext:*invoke-debugger-hook*      ; BREAK, INVOKE-DEBUGGER
                          (lambda (c hook) (declare (ignore hook)) (fail c t)))
                        (*debugger-hook* nil)
                        ;; a step stops in a level said in one line (sbcl-debug.lisp)
                        (sb-ext:*stepper-hook* 'step-hook)
                        (*evaluating* t))
                    (dolist (v (eval-forms code history))
                      (seg marker #\V)
                      (terpri *out*)  ; start at column 0, or the pretty printer breaks lines early
                      ;; Circle-aware, as SLIME prints: a circular list, vector or struct is shown with
                      ;; #n= labels instead of printing until the heap is gone. Unless the person
                      ;; set *PRINT-LEVEL*, nesting beyond 1000 prints as #: the printer recurses
                      ;; on the control stack, which a list nested 100,000 deep exhausts.
                      (let ((*print-circle* t)
                            (*print-level* (or *print-level* 1000)))
                        (prin1 v *out*))))))))
        (declare (ignore result))
        (when (and aborted (plusp *level*) (not (shiftf *invoking* nil)))
          ;; (abort) in a form typed at a level leaves that level, as at SBCL's debugger
          ;; (a level's restart 0, ,invoke'd from the level inside, only comes back here)
          (return-from run-eval :leave-level))
        (when aborted
          (list "LISPSHELL-ABORTED"
                (if (plusp *level*)
                    (format nil "Back at debug level ~d." *level*)
                    "Back at the top level; the error's stack is gone.")
                nil)))))))

(defun answer-eval (code history marker state)
  (let ((err (run-eval code history marker state)))
    (when (eq err :leave-level)
      (throw 'abort-eval (list "LISPSHELL-ABORTED"
                               (if (> *level* 1)
                                   (format nil "Back at debug level ~d." (1- *level*))
                                   "Back at the top level; the error's stack is gone.")
                               nil)))
    (when (consp err)
      (write-error err marker))))

(defun compound-match-p (prefix name)
  "Does PREFIX match NAME word by word, as SLIME's completion does (m-v-b: multiple-value-bind)?
   Each hyphen of PREFIX skips to NAME's next hyphen; other characters must match in turn. A
   plain prefix is the case with no hyphen skipped. (lispshell/repl/completion.py filters
   cached answers by the same rule.)"
  (let ((at 0))
    (loop for ch across prefix
          do (cond ((>= at (length name)) (return nil))
                   ((char= ch #\-)
                    (setf at (position #\- name :start at))
                    (unless at (return nil))
                    (incf at))
                   ((char-equal ch (char name at)) (incf at))
                   (t (return nil)))
          finally (return t))))

(defun completions (prefix)
  "Symbols accessible in the current package whose names match PREFIX (plainly first, then
   word by word: COMPOUND-MATCH-P); PKG: and PKG:: prefixes look in that package. Names come
   back in the case the prefix was typed in."
  (let* ((colon (position #\: prefix))
         (pkg-name (and colon (subseq prefix 0 colon)))
         (internal (and colon (< (1+ colon) (length prefix)) (char= (char prefix (1+ colon)) #\:)))
         (name (if colon (subseq prefix (+ colon (if internal 2 1))) prefix))
         ;; ":te" is a keyword being typed: the KEYWORD package's names (SLIME's too)
         (pkg (cond ((eql colon 0) (find-package "KEYWORD"))
                    (pkg-name (find-package (string-upcase pkg-name)))
                    (t *package*)))
         (down (notany #'upper-case-p prefix))
         (seen (make-hash-table :test 'equal))
         (out '()))
    (when pkg
      (flet ((consider (sym)
               (let ((sn (symbol-name sym)))
                 (when (compound-match-p name sn)
                   (let ((full (concatenate 'string (or (and colon (subseq prefix 0 (+ colon (if internal 2 1)))) "")
                                            (if down (string-downcase sn) sn))))
                     (unless (gethash full seen)
                       (setf (gethash full seen) t)
                       (push full out)))))))
        (if (and pkg-name (not internal))
            (do-external-symbols (s pkg) (consider s))
            (do-symbols (s pkg) (consider s)))))
    (unless colon
      (dolist (p (list-all-packages))
        (dolist (n (cons (package-name p) (package-nicknames p)))
          (when (and (>= (length n) (length name)) (string-equal name n :end2 (length name)))
            (push (concatenate 'string (if down (string-downcase n) n) ":") out)))))
    (let* ((plain (lambda (c) (let ((n (subseq c (or (and colon (+ colon (if internal 2 1))) 0))))
                                (and (>= (length n) (length name))
                                     (string-equal name n :end2 (length name))))))
           (keywords (and (eql colon 0) (common-keywords)))
           (rank (lambda (c)
                   ;; plain prefixes first; among them the keywords Common Lisp's own
                   ;; functions take (:test before :telugu), and SBCL's %internals last
                   (+ (if (funcall plain c) 0 10)
                      (cond ((and keywords (gethash (string-upcase (subseq c 1)) keywords)) 0)
                            ((find #\% c) 2)
                            (t 1)))))
           (sorted (stable-sort (sort out #'string<) #'< :key rank)))
      (if (> (length sorted) 500) (subseq sorted 0 500) sorted))))

(defvar *common-keywords* nil)

(defun common-keywords ()
  "The names of the keyword arguments COMMON-LISP's functions take (:TEST, :KEY, :START...),
   worked out once: completing `:te` offers them before the rest of the keyword package."
  (or *common-keywords*
      (let ((table (make-hash-table :test 'equal)))
        (do-external-symbols (s "COMMON-LISP")
          (when (fboundp s)
            (let ((after-key nil))
              (dolist (p (ignore-errors (sb-kernel:%fun-lambda-list (fdefinition s))))
                (cond ((eq p '&key) (setf after-key t))
                      ((member p lambda-list-keywords) (setf after-key nil))
                      (after-key
                       (let ((var (if (consp p) (first p) p)))
                         (setf (gethash (symbol-name (if (consp var) (first var) var)) table)
                               t))))))))
        (setf *common-keywords* table))))

(defun system-names (prefix)
  "ASDF systems whose names match PREFIX as symbols do (COMPOUND-MATCH-P: the REPL filters
   its cached answers by that rule), for `,load-system`: those defined,
   the .asd files in the directories on ASDF's central and source registries, and Quicklisp's
   (when it is loaded). No system is loaded and nothing evaluated: a central registry entry
   that is a form, not a directory, is skipped."
  ;; `,load-system` requires ASDF (SBCL's own contrib) anyway: completing its argument may too.
  (let ((asdf (or (find-package "ASDF") (progn (ignore-errors (require :asdf)) (find-package "ASDF"))))
        (names '()))
    (flet ((sym (name package) (and (find-package package) (find-symbol name package))))
      (when asdf
        (let ((registered (sym "REGISTERED-SYSTEMS" "ASDF")))
          (when (fboundp registered)
            (setf names (ignore-errors (copy-list (funcall registered))))))
        (dolist (dir (symbol-value (sym "*CENTRAL-REGISTRY*" "ASDF")))
          (when (or (pathnamep dir) (stringp dir))
            (dolist (asd (ignore-errors (directory (merge-pathnames "*.asd" dir))))
              (push (pathname-name asd) names))))
        (let ((table (sym "*SOURCE-REGISTRY*" "ASDF/SOURCE-REGISTRY")))
          (ignore-errors (funcall (sym "ENSURE-SOURCE-REGISTRY" "ASDF")))
          (when (and table (hash-table-p (symbol-value table)))
            (maphash (lambda (k v) (declare (ignore v)) (push k names)) (symbol-value table)))))
      (let ((provided (sym "PROVIDED-SYSTEMS" "QL-DIST")) (name (sym "NAME" "QL-DIST")))
        (when (and (fboundp provided) (fboundp name))
          (dolist (system (ignore-errors (funcall provided t)))
            (push (funcall name system) names)))))
    (let ((found (remove-duplicates
                  (remove-if-not (lambda (n) (and (stringp n) (compound-match-p prefix n)))
                                 names)
                  :test #'string=)))
      (let ((sorted (sort found #'string<)))
        (if (> (length sorted) 500) (subseq sorted 0 500) sorted)))))

(defun answer-system-names (prefix marker)
  (dolist (c (ignore-errors (system-names prefix)))
    (seg marker #\V) (write-string c *out*)))

(defun answer-completions (prefix marker)
  (dolist (c (ignore-errors (completions prefix)))
    (seg marker #\V) (write-string c *out*)))

(defun read-request (&optional replies)
  "The next request: kind character, text and id. The header is <kind><length> <id>.
   Blank lines (a newline left over by the REPL that read the bootstrap) are skipped;
   end of input ends SBCL. Replies to a read of standard input (i, x) are taken only when
   REPLIES (ASK-FOR-INPUT): one that arrives when no read waits raced with an interrupt."
  (loop
    (let ((line (read-line *in* nil nil)))
      (unless line (sb-ext:exit :code 0 :abort t))
      (when (plusp (length line))
        (let* ((space (position #\Space line))
               (n (parse-integer line :start 1 :end space))
               (text (make-string n)))
          (read-sequence text *in*)
          (when (or replies (not (member (char line 0) '(#\i #\x))))
            (return (values (char line 0) text (subseq line (1+ space))))))))))

(defun thread-debugger-hook (condition hook)
  "An unhandled error in a thread of the user's: --disable-debugger would end all of SBCL.
   Say so on standard output and end only that thread."
  (declare (ignore hook))
  (ignore-errors
   ;; this thread's text goes where the person's other threads print, not into the loop's
   ;; own stream (*OUT*), which only the loop's thread may touch
   (format sb-impl::*stdout* "~&;; unhandled ~A in thread ~S: ~A~%"
           (safe-string (lambda () (prin1-to-string (type-of condition))))
           (sb-thread:thread-name sb-thread:*current-thread*)
           (safe-string (lambda () (princ-to-string condition))))
   (finish-output sb-impl::*stdout*))
  (sb-thread:abort-thread))

(defun main (nonce)
  (finish-output sb-impl::*stdout*)
  (flet ((stream-on-stdout (buffering name)
           (sb-sys:make-fd-stream 1 :output t :buffering buffering :auto-close nil
                                    :external-format (stream-external-format sb-impl::*stdout*)
                                    :name name)))
    (setf *out* (stream-on-stdout :full "lispshell's answers")
          *user-out* (stream-on-stdout :line "the person's output")))
  ;; (exit) typed by the person: what they printed last, without a newline, is still shown.
  (push (lambda () (ignore-errors (finish-output *user-out*))) sb-ext:*exit-hooks*)
  (setf sb-ext:*invoke-debugger-hook* 'thread-debugger-hook)
  (setf *loop-thread* sb-thread:*current-thread*)
  (setf *package* (find-package "COMMON-LISP-USER"))
  ;; The stock REPL that read this bootstrap left its forms and values in the REPL variables
  ;; (`+++` held this very DEFUN, `*` a package): a fresh image starts with them empty.
  (setf - nil + nil ++ nil +++ nil * nil ** nil *** nil / nil // nil /// nil)
  (let ((state (cons "0" nil)) (marker (concatenate 'string (string (code-char 30)) nonce)))
    (loop
      ;; Each answer ends with the package and the id of its request, so a stray answer
      ;; can never be taken for the next one.
      (handler-case
          (handler-bind ((sb-sys:interactive-interrupt
                           ;; SIGINT outside an eval (it raced with the answer): ignore it.
                           (lambda (c) (unless *evaluating* (continue c)))))
            ;; A request read while restarts were offered runs now, at the top level (the
            ;; failed request's answer has already ended).
            (unless (cdr state)
              (end-answer marker state)
              (setf (cdr state) (multiple-value-list (read-request))))
            (destructuring-bind (kind text request-id) (shiftf (cdr state) nil)
              (setf (car state) request-id)
              (catch 'top-level
               (case kind
                ;; No level is open, so nothing is being stepped: stepping switched on at a
                ;; level (,s from a breakpoint) ends with it, as STEP's own does.
                (#\E (forget-steps) (answer-eval text t marker state))
                (#\N (forget-steps) (answer-eval text nil marker state))   ; N: an eval that leaves * ** *** alone
                (#\C (answer-completions text marker))
                (#\Y (answer-system-names text marker))
                ((#\I #\F #\A #\T)
                 (write-error (list "LISPSHELL-NO-LEVEL"
                                    "no error is waiting: no debug level is open" nil)
                              marker))
                (#\Q (sb-ext:exit :code 0 :abort t))))))
        (error (c)
          (unless (ignore-errors
                   (seg marker #\E) (write-string "LISPSHELL-PROTOCOL-ERROR" *out*)
                   (seg marker #\M) (write-string (safe-string (lambda () (princ-to-string c)))
                                                   *out*)
                   (finish-output *out*)
                   t)
            ;; Not even the report could be written: lispshell's end of the channel is gone
            ;; (killed, its pty closed, SIGHUP ignored). Nobody will read another answer, and
            ;; trying again would spin here for ever.
            (sb-ext:exit :code 1 :abort t)))))))
