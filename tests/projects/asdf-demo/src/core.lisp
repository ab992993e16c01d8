(in-package "DEMO")

(defun twice (x)
  "Two times X."
  (* 2 x))

(defun area (w h)
  "The area of a W by H rectangle."
  (* w h))

(defun greet ()
  "A greeting that uses TWICE."
  (format nil "hello ~D" (twice 21)))
