(define-module (app util)
  #:export (twice greet))

(define (twice x)
  "Two times X."
  (* 2 x))

(define (greet)
  (string-append "hello " (number->string (twice 21))))
