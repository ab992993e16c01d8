;;;; lispshell's observing helpers for SBCL: trace with a log, time, profile. Loaded after
;;;; sbcl-project.lisp into the package LISPSHELL.PROJECT (its JSON and name look-up are
;;;; shared); see lispshell/lisp/observe.py.
;;;;
;;;; Trace is SBCL's own encapsulation (what CL:TRACE is built on), so a traced function keeps
;;;; its identity, survives redefinition, and generic functions trace as functions do. Every
;;;; call goes into a ring of the last *LOG-SIZE* calls (the oldest dropped and counted), kept
;;;; in the image: the person's ,trace-log, the model's trace_log and MCP read the same log.

(let ((sb-impl::*module-provider-functions* '(sb-impl::module-provide-contrib)))
  (require :sb-sprof))

(defvar *log-size* 10000)
(defvar *log* (make-array 10000 :initial-element nil))
(defvar *calls* 0)                     ; calls ever logged; the ring holds the last *log-size*
(defvar *traced* '())                  ; the traced names, in the order they were added
(defvar *trace-thread* nil)            ; the thread ,trace was typed in: others are labelled
(defvar *trace-package* nil)           ; the package it was typed in: names print from there
(defvar *log-lock* (sb-thread:make-mutex :name "lispshell trace log"))

(defstruct (call (:constructor make-call (id depth name args thread)))
  id depth name args thread (outcome :running) (result nil))

(defun shown (x)
  "X printed for a trace line: bounded and circle-safe, whatever the person's printer says;
a long print is cut and its length said."
  (let ((text (handler-case
                  (with-standard-io-syntax
                    (let ((*print-readably* nil) (*print-length* 10) (*print-level* 4)
                          (*print-circle* t) (*package* (find-package "COMMON-LISP-USER")))
                      (prin1-to-string x)))
                (serious-condition () "#<unprintable>"))))
    (if (> (length text) 200)
        (format nil "~A... (~D chars)" (subseq text 0 160) (length text))
        text)))

(defun log-call (call)
  (sb-thread:with-mutex (*log-lock*)
    (setf (call-id call) (incf *calls*))
    (setf (aref *log* (mod (1- *calls*) *log-size*)) call)))

(defun indent (depth)
  (if (< depth 40)
      (make-string (* 2 depth) :initial-element #\Space)
      (format nil "~A[~D] " (make-string 80 :initial-element #\Space) depth)))

(defun thread-label ()
  ;; By name: over Swank each request may run in another worker thread of the same name.
  (if (or (null *trace-thread*)
          (equal (sb-thread:thread-name sb-thread:*current-thread*)
                 (sb-thread:thread-name *trace-thread*)))
      ""
      (format nil "  [thread ~A]" (sb-thread:thread-name sb-thread:*current-thread*))))

(defvar *in-trace* nil
  "(depth last-condition) of this thread's traced calls, bound once by the outermost one: a
traced call then costs no dynamic binding and no handler of its own, and a recursion 10,000
deep fits SBCL's default control stack.")

(defun traced-call (name function args)
  (if *in-trace*
      (traced-inner name function args)
      (let ((*in-trace* (list 0 nil)))
        (handler-bind ((serious-condition
                         (lambda (c) (setf (second *in-trace*) c))))
          (traced-inner name function args)))))

(defun condition-text (c)
  (handler-case (format nil "~A: ~A" (type-of c) c)
    (serious-condition () (string (type-of c)))))

(defun traced-inner (name function args)
  (let* ((state *in-trace*)
         (depth (first state))
         (call (make-call 0 depth name (mapcar #'shown args) (thread-label)))
         (done nil))
    (log-call call)
    (format *trace-output* "~&~A(~A~{ ~A~})~A~%" (indent depth) name (call-args call)
            (call-thread call))
    (setf (first state) (1+ depth) (second state) nil)
    (unwind-protect
         (let ((values (multiple-value-list (apply function args))))
           (setf (call-outcome call) :values
                 (call-result call) (mapcar #'shown values)
                 done t
                 (second state) nil)
           (format *trace-output* "~&~A=> ~{~A~^, ~}~%" (indent depth) (call-result call))
           (values-list values))
      (setf (first state) depth)
      (unless done
        (let ((c (second state)))
          (if c
              (setf (call-outcome call) :error (call-result call) (condition-text c))
              (setf (call-outcome call) :unwound)))
        (format *trace-output* "~&~A~A~%" (indent depth)
                (if (eq (call-outcome call) :error)
                    (format nil "!! ~A" (call-result call))
                    "<< unwound (a non-local exit)"))))))

(defun qualified (symbol)
  "SYMBOL as the person would type it where they traced it (FACT, OTHER::HELPER)."
  (handler-case (with-standard-io-syntax
                  (let ((*package* (or *trace-package* *package*)))
                    (prin1-to-string symbol)))
    (serious-condition () (qualified-name symbol))))

(defun trace-target (name package)
  "The symbol NAME names as a function that can be traced, or an error saying why not."
  (let ((sym (symbol-or-error name package)))
    (cond ((special-operator-p sym)
           (error "~A is a special operator: it is not called, so it cannot be traced" name))
          ((macro-function sym)
           (error "~A is a macro: it runs when code is compiled, not when it is called, so it ~
                   cannot be traced (trace the functions its expansion calls)" name))
          ((not (fboundp sym))
           (error "~A is not a function (nothing to trace)" name))
          ((eq (symbol-package sym) (find-package "LISPSHELL.PROJECT"))
           (error "~A is lispshell's own" name))
          (t sym))))

(defun split-names (text)
  (loop with start = nil
        for i from 0 to (length text)
        for ch = (if (< i (length text)) (char text i) #\Space)
        if (and (member ch '(#\Space #\Tab #\Newline #\Return)) start)
          collect (subseq text start i) and do (setf start nil)
        else if (and (not (member ch '(#\Space #\Tab #\Newline #\Return))) (null start))
          do (setf start i)))

(defun traced-list ()
  (cons :arr (mapcar #'qualified *traced*)))

(defun trace-add (names package)
  (answering
    (let ((added '()) (refused '()))
      (setf *trace-thread* sb-thread:*current-thread*
            *trace-package* (find-pkg package))
      (dolist (name (split-names names))
        (handler-case
            (let ((sym (trace-target name package)))
              (unless (member sym *traced*)
                (let ((label (qualified sym)))
                  (sb-int:encapsulate sym 'lispshell-trace
                                      (lambda (function &rest args)
                                        (declare (optimize (debug 0)))
                                        (traced-call label function args))))
                (setf *traced* (append *traced* (list sym))))
              (push (qualified sym) added))
          (error (c) (push (list :obj :name name :why (princ-to-string c)) refused))))
      (json (list :obj :traced (cons :arr (reverse added)) :refused (cons :arr (reverse refused))
                  :all (traced-list))))))

(defun trace-remove (names package)
  (answering
    (let ((removed '()) (unknown '()))
      (dolist (sym (if (string= (string-trim " " names) "")
                       (copy-list *traced*)
                       (mapcar (lambda (name) (or (lookup name package) name))
                               (split-names names))))
        (cond ((member sym *traced*)
               (when (fboundp sym) (sb-int:unencapsulate sym 'lispshell-trace))
               (setf *traced* (remove sym *traced*))
               (push (qualified sym) removed))
              (t (push (if (symbolp sym) (qualified sym) sym) unknown))))
      (json (list :obj :untraced (cons :arr (reverse removed))
                  :not_traced (cons :arr (reverse unknown)) :all (traced-list))))))

(defun trace-list ()
  (answering (json (list :obj :all (traced-list)))))

(defun trace-log (name limit)
  "The logged calls, oldest first: all of them, or those of NAME (and the calls inside them)
when NAME is not empty; the last LIMIT (a decimal string) when it is not empty."
  (answering
    (sb-thread:with-mutex (*log-lock*)
      (let* ((held (min *calls* *log-size*))
             (calls (loop for i from (- *calls* held) below *calls*
                          collect (aref *log* (mod i *log-size*))))
             (wanted (string-upcase (string-trim " " name)))
             (calls (if (string= wanted "")
                        calls
                        (let ((inside nil) (out '()))
                          (dolist (c calls (nreverse out))
                            (when (and inside (<= (call-depth c) inside)) (setf inside nil))
                            (when (and (null inside)
                                       (let ((n (call-name c)))
                                         (or (string-equal n wanted)
                                             (let ((colon (position #\: n :from-end t)))
                                               (and colon (string-equal (subseq n (1+ colon))
                                                                        wanted))))))
                              (setf inside (call-depth c)))
                            (when inside (push c out))))))
             (limit (if (string= (string-trim " " limit) "") nil (parse-integer limit)))
             (shown (if (and limit (> (length calls) limit)) (last calls limit) calls)))
        (json (list :obj :total *calls* :dropped (- *calls* held) :matched (length calls)
                    :calls (cons :arr
                                 (loop for c in shown
                                       collect (list :obj :id (call-id c) :depth (call-depth c)
                                                     :name (call-name c)
                                                     :args (cons :arr (call-args c))
                                                     :outcome (string-downcase
                                                               (string (call-outcome c)))
                                                     :result (if (listp (call-result c))
                                                                 (cons :arr (call-result c))
                                                                 (call-result c))
                                                     :thread (string-left-trim
                                                              " " (call-thread c)))))))))))

(defun trace-clear ()
  (answering
    (sb-thread:with-mutex (*log-lock*)
      (let ((had (min *calls* *log-size*)))
        (fill *log* nil)
        (setf *calls* 0)
        (json (list :obj :cleared had))))))

(defun observe-ready ()
  (json (list :obj :ready :true)))

;;; ----------------------------------------------------------------------------- time, profile

(defun grouped (n)
  (format nil "~:D" n))

(defun timed (thunk)
  "THUNK's values, after a line with the real, run and GC time and the bytes allocated (the
figures SBCL's TIME gives), on *TRACE-OUTPUT*."
  (let* ((real0 (get-internal-real-time)) (run0 (get-internal-run-time))
         (gc0 sb-ext:*gc-run-time*) (bytes0 (sb-ext:get-bytes-consed))
         (values (multiple-value-list (funcall thunk)))
         (per (float internal-time-units-per-second 1d0)))
    (format *trace-output* "~&; real ~,3F s  run ~,3F s (user + system)  GC ~,3F s  ~
                            allocated ~A bytes~%"
            (/ (- (get-internal-real-time) real0) per) (/ (- (get-internal-run-time) run0) per)
            (/ (- sb-ext:*gc-run-time* gc0) per) (grouped (- (sb-ext:get-bytes-consed) bytes0)))
    (values-list values)))

(defun row-name (line)
  "The function a row of sb-sprof's flat report names (what follows its eight figures), or
NIL for a line that is not a row."
  (let ((at 0))
    (dotimes (i 8 (string-trim " " (subseq line at)))
      (let ((start (position #\Space line :start at :test-not #'char=)))
        (unless (and start (find (char line start) "0123456789-"))
          (return nil))
        (setf at (or (position #\Space line :start start) (length line)))))))

(defun own-function-p (name)
  "Whether NAME, a function as sb-sprof's report prints it (relative to the person's
package), is the person's: a symbol whose home is neither SBCL's nor CL's. Compared as text
and found with FIND-SYMBOL, never read."
  (when (and name (plusp (length name)) (alpha-char-p (char name 0)))
    (let* ((colon (search ":" name))
           (package (if colon (find-package (subseq name 0 colon)) *package*))
           (symbol-name (if colon (string-left-trim ":" (subseq name colon)) name))
           (symbol (and package (find-symbol symbol-name package)))
           (home (and symbol (symbol-package symbol))))
      (and home
           (not (member home (list (find-package "COMMON-LISP") (find-package "KEYWORD"))))
           (not (eql 0 (search "SB-" (package-name home))))
           (not (eql 0 (search "LISPSHELL" (package-name home))))))))

(defun profiled (thunk seconds mode)
  "THUNK's values, run once or again until SECONDS (a decimal string) have passed, under
sb-sprof in MODE (:cpu or :alloc); then sb-sprof's flat table of the top 20 on *TRACE-OUTPUT*,
the person's own functions marked with *."
  (let* ((seconds (if (string= seconds "") 0 (let ((*read-eval* nil))
                                                (read-from-string seconds))))
         (end (+ (get-internal-real-time) (round (* seconds internal-time-units-per-second))))
         (runs 0) (values nil))
    (sb-sprof:with-profiling (:max-samples 200000 :mode mode :sample-interval 0.001
                              :report nil :reset t)
      (loop do (setf values (multiple-value-list (funcall thunk)))
               (incf runs)
            while (< (get-internal-real-time) end)))
    (let ((report (with-output-to-string (s)
                    (let ((*standard-output* s))
                      (sb-sprof:report :type :flat :max 20 :stream s)))))
      (format *trace-output* "~&; profiled with sb-sprof (~(~A~) mode, 1 ms samples): ~D run~:P; ~
                              * marks your own functions~%" mode runs)
      (with-input-from-string (in report)
        (loop for line = (read-line in nil) while line
              do (format *trace-output* "~A~A~%"
                         (if (own-function-p (row-name line)) "*" " ")
                         line))))
    (values-list values)))
