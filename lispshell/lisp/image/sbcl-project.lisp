;;;; lispshell's project helpers for SBCL: load a file with its compiler notes, find
;;;; definitions, callers and a package's names. Loaded once per image into the package
;;;; LISPSHELL.PROJECT (see lispshell/tools/project_tools.py).
;;;;
;;;; Every entry point takes strings and answers one string: JSON, ASCII only (so the printed
;;;; string comes back unchanged whatever the printer settings). Names are never READ: they are
;;;; split at the package marker and looked up with FIND-SYMBOL, so nothing is interned and no
;;;; reader macro can run.

;;; SBCL's own contrib, never a project's: with ASDF loaded, REQUIRE first asks ASDF, which
;;; would load an sb-introspect.asd the project put on its registry.
(let ((sb-impl::*module-provider-functions* '(sb-impl::module-provide-contrib)))
  (require :sb-introspect))

(defun json-string (string out)
  (write-char #\" out)
  (loop for ch across string
        for code = (char-code ch)
        do (cond ((char= ch #\") (write-string "\\\"" out))
                 ((char= ch #\\) (write-string "\\\\" out))
                 ((or (< code 32) (> code 126))
                  (if (> code #xFFFF)
                      (let ((c (- code #x10000)))
                        (format out "\\u~4,'0X\\u~4,'0X"
                                (+ #xD800 (ash c -10)) (+ #xDC00 (logand c #x3FF))))
                      (format out "\\u~4,'0X" code)))
                 (t (write-char ch out))))
  (write-char #\" out))

(defun json-write (x out)
  "X: a string, an integer, :true, :false, :null, (:obj key value ...) or (:arr item ...)."
  (cond ((stringp x) (json-string x out))
        ((integerp x) (format out "~D" x))
        ((eq x :true) (write-string "true" out))
        ((member x '(:false nil)) (write-string "false" out))
        ((eq x :null) (write-string "null" out))
        ((and (consp x) (eq (car x) :obj))
         (write-char #\{ out)
         (loop for (k v) on (cdr x) by #'cddr
               for first = t then nil
               do (unless first (write-char #\, out))
                  (json-string (string-downcase (string k)) out)
                  (write-char #\: out)
                  (json-write v out))
         (write-char #\} out))
        ((and (consp x) (eq (car x) :arr))
         (write-char #\[ out)
         (loop for item in (cdr x)
               for first = t then nil
               do (unless first (write-char #\, out))
                  (json-write item out))
         (write-char #\] out))
        (t (json-string (princ-to-string x) out))))

(defun json (x)
  (with-output-to-string (out) (json-write x out)))

(defmacro answering (&body body)
  "BODY's JSON answer, or {\"error\": message} when it fails: a missing symbol or package is
an answer, not a Lisp error."
  `(handler-case (progn ,@body)
     (error (c) (json (list :obj :error (handler-case (princ-to-string c)
                                          (serious-condition () (string (type-of c)))))))))

(defun safe-princ (x)
  (handler-case (let ((*print-length* 20) (*print-level* 4) (*print-readably* nil))
                  (princ-to-string x))
    (serious-condition () "#<unprintable>")))

;;; ----------------------------------------------------------------------------- names

(defun qualified-name (x)
  "PKG:NAME (PKG::NAME when internal) for a symbol, whatever *PACKAGE* is; (SETF PKG:NAME)
for a setf function name; anything else printed."
  (cond ((and (symbolp x) (symbol-package x))
         (let ((pkg (symbol-package x)))
           (format nil "~A~A~A" (package-name pkg)
                   (if (eq (nth-value 1 (find-symbol (symbol-name x) pkg)) :external) ":" "::")
                   (symbol-name x))))
        ((and (consp x) (symbolp (second x)))
         (format nil "(~A ~A)" (safe-princ (first x)) (qualified-name (second x))))
        (t (safe-princ x))))

(defun find-pkg (name)
  (if (or (null name) (string= name ""))
      *package*
      (or (find-package name) (find-package (string-upcase name))
          (error "No package named ~A." name))))

(defun name-case (part)
  "A symbol name as the standard reader would make it, without reading: |escaped| parts
kept, the rest upcased."
  (if (and (> (length part) 1) (char= (char part 0) #\|) (char= (char part (1- (length part))) #\|))
      (subseq part 1 (1- (length part)))
      (string-upcase part)))

(defun lookup (name package)
  "The symbol NAME names, seen from PACKAGE (a name), or NIL. Never interns."
  (let* ((colon (position #\: name :test #'char= :from-end nil))
         (pkg (if colon
                  (find-pkg (if (zerop colon) "KEYWORD" (name-case (subseq name 0 colon))))
                  (find-pkg package)))
         (sym-name (name-case (string-left-trim ":" (subseq name (if colon colon 0))))))
    (multiple-value-bind (sym status) (find-symbol sym-name pkg)
      (and status sym))))

(defun symbol-or-error (name package)
  (or (lookup name package)
      (error "No symbol named ~A in ~A (nothing was interned)." name
             (package-name (find-pkg package)))))

(defun homes (name package)
  "Where a name without a package lives: the symbol it names from PACKAGE (or null), and up
to 20 other symbols of that name that are home in their package and mean something (a
function, a variable or a class), as PKG::NAME. Never interns."
  (answering
    (let* ((sym-name (name-case (string-left-trim ":" name)))
           (pkg (find-pkg package))
           (here (lookup name package))
           (found '()))
      (dolist (p (list-all-packages))
        (multiple-value-bind (sym status) (find-symbol sym-name p)
          (when (and status (eq (symbol-package sym) p) (not (eq sym here))
                     (not (eq p (find-package "KEYWORD")))    ; a keyword is bound to itself
                     (or (fboundp sym) (boundp sym) (find-class sym nil)))
            (pushnew (qualified-name sym) found :test #'string=))))
      (setf found (sort found #'string<))
      (json (list :obj :package (package-name pkg)
                  :here (if here (qualified-name here) :null)
                  :meaning (if (and here (or (fboundp here) (boundp here) (find-class here nil)))
                               :true :false)
                  :homes (cons :arr (subseq found 0 (min 20 (length found)))))))))

;;; ----------------------------------------------------------------------------- sources

(defparameter *kinds*
  '(:function :macro :generic-function :method :variable :constant :class :structure
    :condition :type :setf-expander :compiler-macro :symbol-macro :method-combination))

(defun source-entry (kind name source)
  (let ((path (sb-introspect:definition-source-pathname source)))
    (list :obj
          :kind (string-downcase (string kind))
          :name (qualified-name name)
          :file (if path (namestring (translate-logical-pathname path)) :null)
          :offset (or (sb-introspect:definition-source-character-offset source) :null)
          :form_path (cons :arr (sb-introspect:definition-source-form-path source)))))

(defun definitions (name package)
  (answering (let ((sym (symbol-or-error name package))
        (found '()))
    (dolist (kind *kinds*)
      (dolist (source (ignore-errors (sb-introspect:find-definition-sources-by-name sym kind)))
        (push (source-entry kind sym source) found)))
    (json (list :obj :symbol (qualified-name sym) :definitions (cons :arr (nreverse found)))))))

(defun who (relation name package)
  (answering (let* ((sym (symbol-or-error name package))
         (fn (cdr (assoc relation '(("calls" . sb-introspect:who-calls)
                                    ("references" . sb-introspect:who-references)
                                    ("binds" . sb-introspect:who-binds)
                                    ("sets" . sb-introspect:who-sets)
                                    ("macroexpands" . sb-introspect:who-macroexpands))
                         :test #'string=)))
         (entries (loop for (caller . source) in (funcall fn sym)
                        repeat 500
                        collect (source-entry "function" caller source))))
    (json (list :obj :symbol (qualified-name sym) :relation relation
                :xref (cons :arr entries))))))

(defun first-line (string)
  (if string (subseq string 0 (or (position #\Newline string) (length string))) ""))

(defun symbol-summary (sym)
  (cond ((macro-function sym) (values "macro" (documentation sym 'function)))
        ((and (fboundp sym) (typep (fdefinition sym) 'generic-function))
         (values "generic-function" (documentation sym 'function)))
        ((fboundp sym) (values "function" (documentation sym 'function)))
        ((find-class sym nil) (values "class" (documentation sym 'type)))
        ((constantp sym) (values "constant" (documentation sym 'variable)))
        ((boundp sym) (values "variable" (documentation sym 'variable)))
        (t (values "symbol" nil))))

(defun arglist (sym)
  (if (fboundp sym)
      (safe-princ (sb-introspect:function-lambda-list sym))
      ""))

(defun package-names (package)
  (answering (let ((pkg (find-pkg package)) (rows '()))
    (do-external-symbols (sym pkg)
      (multiple-value-bind (kind doc) (symbol-summary sym)
        (push (list :obj :name (symbol-name sym) :kind kind :arglist (arglist sym)
                    :doc (first-line doc))
              rows)))
    (setf rows (sort rows #'string< :key (lambda (row) (getf (cdr row) :name))))
    (json (list :obj :package (package-name pkg) :exported :true
                :names (cons :arr (subseq rows 0 (min 500 (length rows))))
                :total (length rows))))))

;;; ----------------------------------------------------------------------------- loading

(defun note-entry (condition severity)
  (let ((context (ignore-errors (sb-c::find-error-context nil))))
    (list :obj
          :severity severity
          :message (handler-case (princ-to-string condition)
                     (serious-condition () (string (type-of condition))))
          :file (if sb-c::*compile-file-truename* (namestring sb-c::*compile-file-truename*) :null)
          :offset (or (and context (sb-c::compiler-error-context-file-position context)) :null)
          :form_path (cons :arr (and context (reverse (sb-c::compiler-error-context-original-source-path context)))))))

(defmacro collecting-notes ((notes) &body body)
  "Run BODY with every compiler diagnostic collected (and muffled) into NOTES, newest first.
Redefinition warnings are dropped: reloading an edited file redefines everything in it."
  `(handler-bind ((sb-kernel:redefinition-warning #'muffle-warning)
                  (sb-c:compiler-error (lambda (c) (push (note-entry c "error") ,notes)))
                  (style-warning (lambda (c) (push (note-entry c "style-warning") ,notes)
                                   (muffle-warning c)))
                  (warning (lambda (c) (push (note-entry c "warning") ,notes)
                             (muffle-warning c)))
                  (sb-ext:compiler-note (lambda (c) (push (note-entry c "note") ,notes)
                                          (muffle-warning c))))
     ,@body))

(defun temp-fasl ()
  (format nil "~A/lispshell-~D-~D.fasl"
          (string-right-trim "/" (or (sb-ext:posix-getenv "TMPDIR") "/tmp"))
          (sb-unix:unix-getpid) (random 1000000000 (make-random-state t))))

(defun load-file (path)
  (let ((notes '()) (fasl (temp-fasl)) (finished nil) (failure nil) (error-text :null))
    (unwind-protect
         (handler-case
             (collecting-notes (notes)
               (multiple-value-bind (output warnings-p failure-p)
                   (compile-file path :output-file fasl)
                 (declare (ignore warnings-p))
                 (setf failure failure-p)
                 (when output
                   (load output)
                   (setf finished t))))
           (error (c)
             (setf error-text (handler-case (format nil "~A: ~A" (type-of c) c)
                                (serious-condition () (string (type-of c)))))))
      (when (probe-file fasl) (delete-file fasl)))
    (json (list :obj :finished (if finished :true :false)
                :compile_failed (if failure :true :false)
                :error error-text
                :notes (cons :arr (reverse notes))
                :package (package-name *package*)))))

(defun compile-file-only (path)
  "LOAD-FILE's first half, for the person's ,load (lispshell/repl/commands.py): the diagnostics
   and the fasl, kept for the REPL to load as a form of theirs, so that an error while loading
   waits in a debug level as any error of theirs does (SLIME's C-c C-l)."
  (let ((notes '()) (fasl (temp-fasl)) (output nil) (failure nil) (error-text :null))
    (handler-case
        (collecting-notes (notes)
          (multiple-value-bind (out warnings-p failure-p) (compile-file path :output-file fasl)
            (declare (ignore warnings-p))
            (setf output out failure failure-p)))
      (error (c)
        (setf error-text (handler-case (format nil "~A: ~A" (type-of c) c)
                           (serious-condition () (string (type-of c)))))))
    (when (and (not output) (probe-file fasl)) (delete-file fasl))
    (json (list :obj :fasl (if output (namestring output) :null)
                :compile_failed (if failure :true :false)
                :error error-text
                :notes (cons :arr (reverse notes))
                :package (package-name *package*)))))

(defun quickload-missing (condition tried)
  "With Quicklisp in the image, the system CONDITION (ASDF's missing component) names is
installed and loaded by ql:quickload, as quickload itself does for a missing dependency, and
its name returned; nil without Quicklisp, for anything else, or one already tried. Quietly:
it is a dependency, not the project's own code, whose diagnostics are the point."
  (let* ((ql (and (find-package "QL") (find-symbol "QUICKLOAD" "QL")))
         (missing-type (find-symbol "MISSING-COMPONENT" "ASDF"))
         (requires (find-symbol "MISSING-REQUIRES" "ASDF"))
         (name (and ql missing-type requires (typep condition missing-type)
                    (ignore-errors (funcall requires condition))))
         (name (and name (string-downcase (string (if (consp name) (car (last name)) name))))))
    (when (and name (not (member name tried :test #'string=)))
      (funcall ql name :silent t)
      name)))

(defun load-system (name)
  (let ((notes '()) (finished nil) (error-text :null))
    (handler-case
        (collecting-notes (notes)
          (let ((load (find-symbol "LOAD-SYSTEM" (or (find-package "ASDF")
                                                      (progn (require :asdf)
                                                             (find-package "ASDF")))))
                (tried '()))
            (loop
              (let ((fetched
                      (handler-case (progn (funcall load name) (return))
                        (error (c) (or (quickload-missing c tried) (error c))))))
                (push fetched tried))))
          (setf finished t))
      (error (c)
        (setf error-text (handler-case (format nil "~A: ~A" (type-of c) c)
                           (serious-condition () (string (type-of c)))))))
    (multiple-value-bind (own theirs) (own-notes name (reverse notes))
      (json (list :obj :finished (if finished :true :false) :error error-text
                  :notes (cons :arr own) :dependency_notes (length theirs))))))

(defun own-notes (name notes)
  "NOTES split into those of system NAME's own files and those of its dependencies (compiled
on the way, alexandria's \"could not stack allocate\" and the like): the person asked about
their system, whose diagnostics are the point. All are the system's own when its directory is
unknown; a note with no file (from the load itself) is the system's."
  (let* ((find (find-symbol "SYSTEM-SOURCE-DIRECTORY" "ASDF"))
         (dir (and find (ignore-errors (funcall find name))))
         (dir (and dir (ignore-errors (namestring (truename dir))))))
    (if (null dir)
        (values notes '())
        (loop for note in notes
              for file = (getf (cdr note) :file)
              if (or (not (stringp file))
                     (and (>= (length file) (length dir)) (string= dir file :end2 (length dir))))
                collect note into own
              else collect note into theirs
              finally (return (values own theirs))))))
