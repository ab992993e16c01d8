(defpackage "DEMO"
  (:use "COMMON-LISP")
  (:export "GREET" "TWICE" "AREA"))
