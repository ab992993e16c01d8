(defpackage "DEMO-TEST"
  (:use "COMMON-LISP")
  (:export "RUN"))
(in-package "DEMO-TEST")

(defun run ()
  (assert (= (demo:twice 4) 8))
  (assert (string= (demo:greet) "hello 42"))
  (format t "demo tests: 2 passed~%")
  t)
