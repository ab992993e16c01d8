;;;; The look-up helpers (describe, symbol_value, macroexpand, apropos) for SBCL, loaded once per
;;;; image into LISPSHELL.INTROSPECT. See lispshell/lisp/introspect.py for the rules they keep.
;;; The answer's header, bound by each call to a mark of its own (lispshell/lisp/introspect.py):
;;; a thread left running sees only this global value, which lispshell never takes.
(defvar *mark* "@@lispshell ")

(defun emit (status &optional (body ""))
  (format t "~a~a ~d~%~a~a" *mark* status (length body) body *mark*)
  (finish-output)
  (values))

(defun safe-readtable ()
  ;; '#' starts nothing here: no #. (read-eval), no #S(...) constructors, no user macros.
  (let ((rt (copy-readtable nil)))
    (set-macro-character #\# (lambda (stream char)
                               (declare (ignore stream char))
                               (error "# reader syntax is not accepted in a symbol name"))
                         t rt)
    rt))

(defun form-readtable ()
  ;; The standard syntax (not the person's reader macros, which may run code when read),
  ;; with #. off (*read-eval* nil, bound by the caller) and #S(...) refused: it calls a
  ;; structure constructor, whose slot initforms may do anything.
  (let ((rt (copy-readtable nil)))
    (set-dispatch-macro-character #\# #\S (lambda (stream char arg)
                                             (declare (ignore stream char arg))
                                             (error "#S(...) is not read here"))
                                  rt)
    ;; #n= / #n# build circular forms, on which expansion may never end.
    (dolist (ch '(#\= #\#))
      (set-dispatch-macro-character #\# ch (lambda (stream char arg)
                                             (declare (ignore stream arg))
                                             (error "#~a is not read here" char))
                                    rt))
    rt))

(defun blank-from (string start)
  (not (find-if-not (lambda (ch) (member ch '(#\Space #\Tab #\Newline #\Return #\Page)))
                    string :start start)))

(defun target-package (name)
  (if (or (null name) (string= name ""))
      *package*
      (or (find-package name) (find-package (string-upcase name)))))

(defun qualifier-end (name)
  "(values start-of-symbol-part package-part) for PKG:NAME or PKG::NAME (a colon outside
|...|), or (values 0 nil) for an unqualified name."
  (let ((quoted nil))
    (dotimes (i (length name) (values 0 nil))
      (let ((ch (char name i)))
        (cond ((char= ch #\\) (incf i))
              ((char= ch #\|) (setf quoted (not quoted)))
              ((and (char= ch #\:) (not quoted))
               (return (values (if (and (< (1+ i) (length name)) (char= (char name (1+ i)) #\:))
                                   (+ i 2)
                                   (1+ i))
                               (subseq name 0 i)))))))))

(defun scratch-package ()
  "The package names are read into: made once, emptied after each read. Not a fresh package
per read, deleted after it: Swank's indentation thread walks every package, and one deleted
under it put that thread in the debugger (in the person's Emacs, when SLIME is connected)."
  (or (find-package "LISPSHELL.READ") (make-package "LISPSHELL.READ" :use nil)))

(defun empty-package (package)
  (let ((symbols '()))
    (do-symbols (s package) (when (eq (symbol-package s) package) (push s symbols)))
    (dolist (s symbols) (unintern s package))))

(defun read-name (name package)
  "(values symbol status message): STATUS is ok, unknown, not_symbol or bad_name.
The name is read into a scratch package, emptied afterwards, and looked up with FIND-SYMBOL, so
nothing is interned anywhere else, also for PKG::NAME (which the reader would intern in PKG)."
  (let ((tmp (scratch-package)))
    (unwind-protect
         (handler-case
             (multiple-value-bind (start qualifier) (qualifier-end name)
               (let ((home (cond ((null qualifier) package)
                                 ((string= qualifier "") (find-package "KEYWORD"))
                                 (t (let ((p (read-part qualifier tmp)))
                                      (and (symbolp p)
                                           (or (find-package (symbol-name p))
                                               (find-package (string-upcase (symbol-name p))))))))))
                 (multiple-value-bind (object end) (read-part (subseq name start) tmp)
                   (cond ((null home)
                          (values nil "unknown" (format nil "no package named ~a" qualifier)))
                         ((not (symbolp object))
                          (values nil "not_symbol" (format nil "~s does not read as a symbol" name)))
                         ((not (blank-from (subseq name start) end))
                          (values nil "not_symbol" "more than one datum: give exactly one symbol"))
                         ((or (null (symbol-package object)) (eq (symbol-package object) tmp))
                          (multiple-value-bind (symbol found) (find-symbol (symbol-name object) home)
                            (if found
                                (values symbol "ok" "")
                                (values nil "unknown"
                                        (format nil "no symbol named ~a is accessible in package ~a"
                                                (symbol-name object) (package-name home))))))
                         (t (values object "ok" ""))))))
           (error (e) (values nil "bad_name" (princ-to-string e))))
      (empty-package tmp))))

(defun read-part (text tmp)
  "One datum of TEXT, read with nothing but symbols and numbers possible, into TMP."
  (let ((*read-eval* nil) (*readtable* (safe-readtable)) (*package* tmp) (*read-suppress* nil))
    (if (find #\: text)
        (error "more than one package marker in a symbol name")
        (read-from-string text))))

(defmacro with-name ((symbol name package-name) &body body)
  `(let ((pkg (target-package ,package-name)))
     (if (null pkg)
         (emit "unknown_package" (format nil "no package named ~a" ,package-name))
         (multiple-value-bind (,symbol status message) (read-name ,name pkg)
           (if (string/= status "ok")
               (emit status message)
               (let ((*package* pkg)) ,@body))))))

(defun describe-name (name package-name)
  (with-name (symbol name package-name)
    (emit "ok" (with-output-to-string (*standard-output*)
                 (let ((*print-length* 20) (*print-level* 4))
                   (describe symbol))))))

(defun value-of-name (name package-name)
  (with-name (symbol name package-name)
    (if (boundp symbol)
        (let ((value (symbol-value symbol)))
          (emit "ok" (format nil "~s~%~a"
                             (type-of value)
                             (let ((*print-length* 50) (*print-level* 6) (*print-circle* t)
                                   (*print-readably* nil))
                               (prin1-to-string value)))))
        (emit "unbound" (format nil "~s has no global value (unbound)~:[~; but names a ~
                                     function or macro~]" symbol (fboundp symbol))))))

(defparameter *never-expanded*
  '("DEFMACRO" "DEFINE-COMPILER-MACRO" "DEFINE-SYMBOL-MACRO" "DEFINE-SETF-EXPANDER" "DEFSETF"
    "DEFINE-MODIFY-MACRO" "DEFINE-METHOD-COMBINATION" "MACROLET" "SYMBOL-MACROLET" "EVAL-WHEN"
    "LOAD-TIME-VALUE")
  "Operators that define or bind macros or evaluate at expansion time: refused, not expanded.")

;;; Reading the form interns its symbols (keywords, otherpkg::x), and so may expanding it
;;; (FORMATTER interns the function a ~/name/ directive names). Every symbol new anywhere in the
;;; image after the expansion was printed is uninterned again: a look-up leaves no trace.
(defun all-symbols ()
  (let ((seen (make-hash-table :test 'eq :size 65536)))
    (do-all-symbols (s seen) (setf (gethash s seen) t))))

(defun unintern-new-symbols (before)
  (let ((new '()))
    (do-all-symbols (s) (unless (gethash s before) (pushnew s new)))
    (dolist (s new) (let ((home (symbol-package s))) (when home (unintern s home))))))

(defun expand (text package-name)
  "One step of expansion of a form whose operator is a macro defined in the image: its
expander gets the arguments as data. Defining or binding macros, an operator the image does not
define, and reader tricks are refused; nothing the form names is interned."
  (let ((package (target-package package-name)))
    (if (null package)
        (emit "unknown_package" (format nil "no package named ~a" package-name))
        (handler-case
            (let ((before (all-symbols)) (form nil) (end 0))
              (unwind-protect
                   (let ((*package* package) (*read-eval* nil) (*readtable* (form-readtable)))
                     (multiple-value-setq (form end) (read-from-string text))
                     (let ((op (and (consp form) (car form))))
                       (cond ((not (blank-from text end))
                              (emit "bad_form" "more than one form: give exactly one"))
                             ((not (consp form))
                              (emit "refused" "give one macro form, (operator argument...)"))
                             ((not (and op (symbolp op)))
                              (emit "refused" "the operator is not a symbol"))
                             ((member (symbol-name op) *never-expanded* :test #'string=)
                              (emit "refused" (format nil "~a defines or binds macros (or runs ~
                                      code when expanded): it is not expanded" op)))
                             ((special-operator-p op)
                              (emit "not_macro" (let ((*print-case* :downcase))
                                                  (prin1-to-string form))))
                             ((macro-function op)
                              (emit "ok" (let ((*print-case* :downcase) (*print-right-margin* 100))
                                           (with-output-to-string (s)
                                             (pprint (macroexpand-1 form) s)))))
                             ((fboundp op)
                              (emit "not_macro" (let ((*print-case* :downcase))
                                                  (prin1-to-string form))))
                             (t (emit "refused" (format nil "~a is not defined in the image: ~
                                                             only macros it defines are expanded"
                                                        op))))))
                (unintern-new-symbols before)))
          (error (e) (emit "error" (princ-to-string e)))))))

(defun apropos* (pattern package-name)
  (let ((package (and package-name (string/= package-name "")
                      (target-package package-name))))
    (if (and package-name (string/= package-name "") (null package))
        (emit "unknown_package" (format nil "no package named ~a" package-name))
        (let* ((symbols (apropos-list pattern package))
               (n (length symbols)))
          (emit "ok"
                (with-output-to-string (s)
                  (dolist (symbol (subseq symbols 0 (min n 100)))
                    (format s "~s~:[~; function~]~:[~; macro~]~:[~; variable~]~%"
                            symbol (and (fboundp symbol) (not (macro-function symbol)))
                            (macro-function symbol) (boundp symbol)))
                  (when (> n 100) (format s "... and ~d more~%" (- n 100)))))))))

(defun first-line (text)
  (if text (subseq text 0 (or (position #\Newline text) (length text))) ""))

(defun bare-names (tree)
  "TREE with each non-keyword symbol replaced by an uninterned one of the same name, so that
(mapcar function list &rest sb-impl::more-lists) prints without package prefixes."
  (cond ((or (null tree) (keywordp tree)) tree)
        ((symbolp tree) (make-symbol (symbol-name tree)))
        ((consp tree) (cons (bare-names (car tree)) (bare-names (cdr tree))))
        (t tree)))

(defun arglist (name package-name)
  "For the REPL's toolbar: (operator . lambda list) on one line, then the first line of its
documentation; 'unknown' when NAME names no function, macro or special operator."
  (with-name (symbol name package-name)
    (let* ((f (or (macro-function symbol) (and (fboundp symbol) (fdefinition symbol))))
           (lambda-list (cond ((typep f 'generic-function)
                               (sb-mop:generic-function-lambda-list f))
                              (f (sb-kernel:%fun-lambda-list f))
                              (t :none))))
      (if (eq lambda-list :none)
          (emit "unknown" (format nil "~a is not a function" name))
          (emit "ok" (format nil "~a~%~a"
                             (let ((*print-case* :downcase) (*print-length* 20) (*print-level* 3)
                                   (*print-pretty* nil) (*print-gensym* nil))
                               (prin1-to-string (bare-names (cons symbol lambda-list))))
                             (first-line (documentation symbol 'function))))))))

;;; ,inspect: the person's own FORM (they typed it: it is evaluated, with their reader), then
;;; its parts, one "label<TAB>value" line each after a "type<TAB>value" header.
(defvar *unbound* (make-symbol "UNBOUND")
  "What a part holds when there is no value (an unbound slot, symbol value or function): shown
as <unbound>, not as the uninterned symbol that stands for it.")

(defvar *none* (make-symbol "NONE") "A part that is not known (a function's source file).")

(defun one-line (object)
  (let ((text (cond ((eq object *unbound*) "<unbound>")
                    ((eq object *none*) "<unknown>")
                    (t (safe-printed object)))))
    (substitute #\Space #\Newline
                (if (> (length text) 2000) (concatenate 'string (subseq text 0 2000) "...") text))))

(defun safe-printed (object)
  (handler-case (let ((*print-length* 30) (*print-level* 4) (*print-circle* t)
                      (*print-pretty* nil) (*print-readably* nil))
                  (prin1-to-string object))
    (serious-condition () "#<error printing>")))

(defun source-line (path offset)
  "The 1-based line of character OFFSET in the file at PATH, or NIL."
  (ignore-errors
   (with-open-file (in path)
     (1+ (loop repeat offset for c = (read-char in nil) while c count (char= c #\Newline))))))

(defun function-source (f)
  "\"path:line\" of the top-level form that defined F (from its debug info), or *NONE*."
  (or (ignore-errors
       (let* ((info (sb-kernel:%code-debug-info
                     (sb-kernel:fun-code-header (sb-kernel:%fun-fun f))))
              (source (sb-c::debug-info-source info))
              (path (namestring (translate-logical-pathname
                                 (sb-c::debug-source-namestring source))))
              (starts (sb-c::debug-source-start-positions source))
              (tlf (sb-c::compiled-debug-fun-tlf-number (sb-c::compiled-debug-info-fun-map info)))
              (line (and starts (< tlf (length starts)) (source-line path (aref starts tlf)))))
         (and (stringp path) (probe-file path)
              (if line (format nil "~a:~d" path line) path))))
      *none*))

(defun function-parts (f)
  "What SLIME's inspector shows of a function: its name, lambda list, documentation, where it
was defined, its type; a generic function's methods."
  (append
   (list (cons "name" (sb-kernel:%fun-name f))
         (cons "lambda-list" (if (typep f 'generic-function)
                                 (sb-mop:generic-function-lambda-list f)
                                 (sb-kernel:%fun-lambda-list f)))
         (cons "documentation" (or (documentation f t) *none*))
         (cons "source" (function-source f))
         (cons "type" (if (typep f 'generic-function)
                          'generic-function
                          (ignore-errors (sb-kernel:%simple-fun-type (sb-kernel:%fun-fun f))))))
   (when (typep f 'generic-function)
     (list (cons "methods" (sb-mop:generic-function-methods f))))))

(defun parts-of (object)
  "(label . value) pairs: a hash table's entries, a structure's or instance's slots, a
sequence's elements, a symbol's cells, a function's name, lambda list, documentation and
source; NIL for an atom."
  (typecase object
    (function (function-parts object))
    (hash-table (let ((parts '()))
                  (maphash (lambda (k v) (push (cons (one-line k) v) parts)) object)
                  (nreverse parts)))
    ((or structure-object standard-object condition)
     (mapcar (lambda (slot)
               (let ((name (sb-mop:slot-definition-name slot)))
                 (cons (string-downcase (symbol-name name))
                       (handler-case (if (slot-boundp object name)
                                         (slot-value object name)
                                         *unbound*)
                         (error () (make-symbol "unreadable"))))))
             (sb-mop:class-slots (class-of object))))
    (cons (if (handler-case (list-length object) (error () nil))
              (loop for x in object for i from 0 below 5000 collect (cons (princ-to-string i) x))
              (list (cons "car" (car object)) (cons "cdr" (cdr object)))))
    (string nil)
    (vector (loop for x across object for i from 0 below 5000 collect (cons (princ-to-string i) x)))
    (symbol (list (cons "name" (symbol-name object))
                  (cons "package" (symbol-package object))
                  (cons "value" (if (boundp object) (symbol-value object) *unbound*))
                  (cons "function" (if (fboundp object) (fdefinition object) *unbound*))
                  (cons "plist" (symbol-plist object))))
    (t nil)))

(defvar *shown-parts* #()
  "The values of the parts the last table showed, so that ,inspect N opens part N.")

(defvar *inspected* '()
  "The objects from the one ,inspect FORM showed to the one on screen, newest first: ,inspect -
goes back one.")

(defun show-parts (object)
  (let ((parts (parts-of object)))
    (setf *shown-parts* (map 'vector #'cdr parts))
    (emit "ok" (with-output-to-string (s)
                 (format s "~a~c~a~%" (one-line (type-of object)) #\Tab (one-line object))
                 (loop for (label . value) in parts
                       do (format s "~a~c~a~%" label #\Tab (one-line value)))))))

(defun inspect-form (code package-name)
  (let ((package (target-package package-name)))
    (handler-case
        (let ((*package* package))
          (let ((object (with-input-from-string (in code)
                          (let ((value nil) (eof '#:eof))
                            (loop for form = (read in nil eof)
                                  until (eq form eof)
                                  do (setf value (eval form)))
                            value))))
            (setf *inspected* (list object))
            (show-parts object)))
      (serious-condition (e)
        (emit "error" (format nil "~a: ~a" (one-line (type-of e))
                              (handler-case (princ-to-string e) (error () "?"))))))))

(defun inspect-part (index package-name)
  (declare (ignore package-name))
  (let ((n (parse-integer index :junk-allowed t)))
    (cond ((not (and n (< -1 n (length *shown-parts*))))
           (emit "error" (format nil "No part ~a: the last table has ~d" index
                                 (length *shown-parts*))))
          ((member (aref *shown-parts* n) (list *unbound* *none*))
           (emit "error" (format nil "Part ~a has no value to open" index)))
          (t (push (aref *shown-parts* n) *inspected*)
             (show-parts (aref *shown-parts* n))))))

(defun inspect-back (ignored package-name)
  (declare (ignore ignored package-name))
  (if (rest *inspected*)
      (show-parts (first (setf *inspected* (rest *inspected*))))
      (emit "error" "This is the object ,inspect FORM showed: there is none before it")))
