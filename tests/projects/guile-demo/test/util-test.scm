;; SRFI-64 tests for (app util): load this file to run them.
(use-modules (srfi srfi-64) (app util))

(test-begin "util")
(test-equal 8 (twice 4))
(test-equal "hello 42" (greet))
(test-end "util")
