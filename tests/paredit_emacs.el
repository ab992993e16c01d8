;;; paredit_emacs.el --- run GNU Emacs paredit on a batch of cases, for tests/test_paredit_emacs.py
;;
;; emacs -Q --batch -l paredit_emacs.el IN.json OUT.json
;; IN.json: [{"text": ..., "mode": "cl"|"scheme"|"clojure", "point": 1-based,
;;            "command": "paredit-forward-slurp-sexp", "arg": N or null}, ...]
;; OUT.json: one entry per case, the buffer text after the command, or null when it failed.
;; One Emacs run for the whole batch: starting Emacs costs more than a hundred cases.

(require 'json)
(add-to-list 'load-path
             (car (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/paredit-*")))
(require 'paredit)
(require 'scheme)

;; Debian has no clojure-mode package: the syntax clojure-mode sets up, on lisp-data-mode.
(define-derived-mode lispshell-clojure-mode lisp-data-mode "Clojure"
  (dolist (pair '((?\[ . "(]") (?\] . ")[") (?\{ . "(}") (?\} . "){")
                  (?, . " ") (?^ . "'") (?~ . "'") (?@ . "_ p") (?# . "_ p")
                  (?| . "_") (?\\ . "\\")))
    (modify-syntax-entry (car pair) (cdr pair))))

(defun lispshell-run-case (case)
  (let ((mode (gethash "mode" case)))
    (erase-buffer)
    (cond ((equal mode "cl") (unless (eq major-mode 'lisp-mode) (lisp-mode)))
          ((equal mode "scheme") (unless (eq major-mode 'scheme-mode) (scheme-mode)))
          (t (unless (eq major-mode 'lispshell-clojure-mode) (lispshell-clojure-mode))))
    (insert (gethash "text" case))
    (goto-char (gethash "point" case))
    (let ((command (intern (gethash "command" case)))
          (arg (gethash "arg" case)))
      (condition-case err
          (progn (if (eq arg :null) (call-interactively command) (funcall command arg))
                 (buffer-substring-no-properties (point-min) (point-max)))
        (error (when (getenv "PAREDIT_DEBUG") (princ (format "ERR %S\n" err) #'external-debugging-output)) :null)))))

(let* ((in (nth 0 command-line-args-left))
       (out (nth 1 command-line-args-left))
       (cases (with-temp-buffer
                (insert-file-contents in)
                (json-parse-buffer)))
       (inhibit-message t)
       (results (with-temp-buffer
                  (setq-default indent-tabs-mode nil)
                  (vconcat (mapcar #'lispshell-run-case cases)))))
  (with-temp-file out
    (set-buffer-file-coding-system 'utf-8)
    (insert (json-serialize results))))
