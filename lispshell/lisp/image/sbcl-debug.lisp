;;;; The frames of the error a debug level waits in (lispshell/lisp/levels.py): listed,
;;;; their locals, evaluation in one, its source, restarting one. Part of the loop's bootstrap
;;;; (after sbcl-loop.lisp), in %LISPSHELL. A level's frames are sb-di frames, valid as long
;;;; as the level's stack is: OFFER-RESTARTS keeps them in its own frame and passes them here.

(in-package "%LISPSHELL")

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
                (t (setf started t)
                   (push frame frames)
                   (when (>= (length frames) limit)
                     (return-from user-frames (coerce (nreverse frames) 'vector)))))))
      :count (+ limit 40)))
    (coerce (nreverse frames) 'vector)))

(defun frame-text (frame)
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
     (let* ((fun (and (not (toplevel-frame-p frame))
                      (sb-di:debug-fun-fun (sb-di:frame-debug-fun frame))))
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
  (ignore-errors (eq (sb-di::debug-fun-kind (sb-di:frame-debug-fun frame)) :toplevel)))

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
                           (handler-case (sb-di:eval-in-frame frame form)
                             (sb-di:debug-condition () (eval form)))))
                 (seg marker #\V) (terpri *out*)
                 (let ((*print-circle* t) (*print-level* (or *print-level* 1000)))
                   (prin1 v *out*))))
           (error (e)
             (write-error (list (safe-string (lambda () (prin1-to-string (type-of e))))
                                (safe-string (lambda () (princ-to-string e))) nil)
                          marker))))
        ((string= op "restart")
         (if (sb-debug::frame-has-debug-tag-p frame)
             (let* ((call (multiple-value-list (sb-debug::frame-call frame)))
                    (fun (sb-di:debug-fun-fun (sb-di:frame-debug-fun frame))))
               (sb-debug::unwind-to-frame-and-call
                frame (lambda () (apply fun (second call)))))
             (refuse (format nil "frame ~d cannot be restarted: it was compiled without ~
                                  (debug 2); recompile it with (declaim (optimize (debug 2)))"
                             n))))
        (t (refuse (format nil "unknown frame request ~a" op)))))))
