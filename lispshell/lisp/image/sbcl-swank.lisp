;;;; lispshell's entry point in an SBCL image reached over Swank (see lispshell/lisp/swank.py).
;;;; Loaded after sbcl-loop.lisp (never started there: only its reading, evaluating and
;;;; condition-describing functions are used), into the same %LISPSHELL package.
(in-package "%LISPSHELL")

;;; Printed output goes to lispshell as Swank :write-string events, a line at a time (or every
;;; 8 KiB of a long line), so the person sees it as it is printed, as on a terminal.
(defclass swank-output (sb-gray:fundamental-character-output-stream)
  ((pending :initform (make-string-output-stream))
   (size :initform 0)
   (column :initform 0)))

(defun swank-send (text)
  (funcall (find-symbol "SEND-TO-EMACS" "SWANK") (list :write-string text)))

(defun swank-flush (stream)
  (with-slots (pending size) stream
    (when (plusp size)
      (setf size 0)
      (swank-send (get-output-stream-string pending)))))

(defmethod sb-gray:stream-write-char ((stream swank-output) char)
  (with-slots (pending size column) stream
    (write-char char pending)
    (incf size)
    (setf column (if (char= char #\Newline) 0 (1+ column)))
    (when (or (char= char #\Newline) (>= size 8192))
      (swank-flush stream)))
  char)

(defmethod sb-gray:stream-write-string ((stream swank-output) string &optional (start 0) end)
  (let ((end (or end (length string))))
    (with-slots (pending size column) stream
      (write-string string pending :start start :end end)
      (incf size (- end start))
      (let ((newline (position #\Newline string :start start :end end :from-end t)))
        (setf column (if newline (- end newline 1) (+ column (- end start))))
        (when (or newline (>= size 8192))
          (swank-flush stream)))))
  string)

(defmethod sb-gray:stream-line-column ((stream swank-output))
  (slot-value stream 'column))

(defmethod sb-gray:stream-finish-output ((stream swank-output))
  (swank-flush stream))

(defmethod sb-gray:stream-force-output ((stream swank-output))
  (swank-flush stream))

(defun capped-value (value cap)
  "VALUE printed as the REPL prints it (circle-aware, nesting beyond 1000 as # unless the
   person set *PRINT-LEVEL*), cut at CAP characters with a note: one Swank message holds at
   most 16 MiB."
  (let ((text (safe-string (lambda () (let ((*print-circle* t)
                                            (*print-level* (or *print-level* 1000)))
                                        (prin1-to-string value))))))
    (if (> (length text) cap)
        (format nil "~A... [truncated: ~D more characters]"
                (subseq text 0 cap) (- (length text) cap))
        text)))

(defvar *input-tag* 0)

(defun swank-ask-input ()
  "A line for the person's code, asked as SLIME's REPL asks: (:read-string THREAD TAG), answered
   by (:emacs-return-string THREAD TAG TEXT); \"\" is end of file (NIL). lispshell answers
   :LISPSHELL-INTERRUPT for Ctrl-C at its input line: a debugger level whose CONTINUE asks
   again (Swank's own interrupts wait until a read ends). Unwound, the read says :read-aborted."
  (let ((thread (funcall (find-symbol "CURRENT-THREAD-ID" "SWANK"))))
    (finish-output *standard-output*)
    (loop
      (let ((tag (incf *input-tag*)) (answered nil))
        (unwind-protect
             (let ((reply (third (funcall (find-symbol "WAIT-FOR-EVENT" "SWANK")
                                          (progn (swank-send-event (list :read-string thread tag))
                                                 `(:emacs-return-string ,tag value))))))
               (setf answered t)
               (cond ((stringp reply)
                      (return (if (zerop (length reply)) nil reply)))
                     (t (restart-case (invoke-debugger (make-condition 'input-interrupted))
                          (continue () :report "Go on reading standard input.")))))
          (unless answered
            (swank-send-event (list :read-aborted thread tag))))))))

(defun swank-send-event (event)
  (funcall (find-symbol "SEND-TO-EMACS" "SWANK") event))

(defvar *swank-request* nil
  "The id of the lispshell request this thread evaluates: asked of a thread that entered the
   debugger, it tells lispshell's own eval's debugger from another thread's.")

(defun swank-request () *swank-request*)

;;; Ctrl-C names the request to interrupt, never "Swank's newest worker thread": that one may
;;; be another eval's, or none yet when the request has not begun (a loaded machine), and
;;; Swank then breaks into its REPL thread. An interrupt that arrives before its request began
;;; waits here and breaks in as the request begins.
(defvar *request-lock* (sb-thread:make-mutex :name "lispshell requests"))
(defvar *request-threads* '() "(request . thread) for each lispshell request running.")
(defvar *interrupt-pending* nil "A request interrupted before it began.")

(defun swank-break ()
  (funcall (find-symbol "INVOKE-OR-QUEUE-INTERRUPT" "SWANK")
           (symbol-function (find-symbol "SIMPLE-BREAK" "SWANK"))))

(defun interrupt-request (request)
  "Break into REQUEST's thread as Swank's :emacs-interrupt would; T if it was running."
  (let ((thread (sb-thread:with-mutex (*request-lock*)
                  (or (cdr (assoc request *request-threads* :test #'equal))
                      (progn (setf *interrupt-pending* request) nil)))))
    (when thread
      (funcall (find-symbol "QUEUE-THREAD-INTERRUPT" "SWANK") thread
               (symbol-function (find-symbol "SIMPLE-BREAK" "SWANK")))
      t)))

(defun call-as-request (request function)
  (let ((entry (cons request sb-thread:*current-thread*)) (pending nil))
    (sb-thread:with-mutex (*request-lock*)
      (push entry *request-threads*)
      (when (and request (equal *interrupt-pending* request))
        (setf *interrupt-pending* nil pending t)))
    (unwind-protect
         (progn (when pending (swank-break))
                (funcall function))
      (sb-thread:with-mutex (*request-lock*)
        (setf *request-threads* (delete entry *request-threads*))))))

(defun swank-eval (code package-name history value-cap &optional debug request)
  "CODE's forms evaluated in PACKAGE-NAME. An error comes back as its type, message and
   frames: (package :values value...) or (package :error type message frame...); with DEBUG
   (the REPL) it enters Swank's debugger instead, where lispshell keeps it as a debug level
   (lispshell/lisp/levels.py). Interrupts and BREAK always go to the debugger."
  (let* ((*swank-request* request)
         (*package* (or (find-package package-name) *package*))
         (out (make-instance 'swank-output))
         (in (make-instance 'terminal-input :ask 'swank-ask-input))
         (io (make-two-way-stream in out))
         (*standard-input* in) (*standard-output* out) (*error-output* out)
         (*trace-output* out) (*terminal-io* io) (*query-io* io)
         ;; a step is said in one line, its values too (sbcl-debug.lisp), not Swank's way
         (sb-ext:*stepper-hook* 'step-hook)
         ;; at a breakpoint's SLDB level, forms see the call's arguments (sbcl-debug.lisp)
         (*level-bindings*
           (let ((c (find-symbol "*SWANK-DEBUGGER-CONDITION*" "SWANK")))
             (and debug c (boundp c) (typep (symbol-value c) 'breakpoint-hit)
                  (hit-bindings (symbol-value c))))))
    (let ((result
            (catch 'abort-eval
              (handler-bind ((serious-condition
                               (lambda (c)
                                 (unless (and debug (typep c 'error))
                                   (throw 'abort-eval (cons :error (describe-condition c)))))))
                (cons :values (mapcar (lambda (v) (capped-value v value-cap))
                                      (call-as-request
                                       request (lambda () (eval-forms code history)))))))))
      (ignore-errors (finish-output out))
      (list* (package-label *package*)
             (if (eq (first result) :error)
                 (list* :error (second result) (third result) (fourth result))
                 result)))))

(defun swank-invoke (n value)
  "Invoke restart N of the debugger this thread waits in (Swank's list, as :debug gave it),
   VALUE (a form) answering what an interactive restart reads from *QUERY-IO*; with none it
   is asked of the person, as any read."
  (let* ((restarts (symbol-value (find-symbol "*SLDB-RESTARTS*" "SWANK")))
         (restart (nth n restarts))
         (given (string/= (string-trim '(#\Space #\Tab #\Newline) value) ""))
         (in (if given
                 (make-string-input-stream value)
                 (make-instance 'terminal-input :ask 'swank-ask-input)))
         (out (if given (make-broadcast-stream) (make-instance 'swank-output)))
         (*query-io* (make-two-way-stream in out))
         (*standard-input* in)
         (*standard-output* out))
    (when restart
      (setf restart (step-restart restart (symbol-value (find-symbol "*SWANK-DEBUGGER-CONDITION*"
                                                                       "SWANK")))))
    (if restart
        ;; Returns only when the restart did not transfer control (as in the child's loop).
        (let ((why (handler-case (progn (invoke-restart-interactively restart) nil)
                     (error (e) (safe-string (lambda () (princ-to-string e)))))))
          (if why
              (format nil "restart ~d needs a value: ,invoke ~d FORM (~a)" n n why)
              "the restart returned without leaving the debugger"))
        (format nil "no restart ~d: choose 0 to ~d" n (1- (length restarts))))))
