(asdf:defsystem "demo"
  :description "A two-file system for lispshell's project tests."
  :pathname "src/"
  :serial t
  :components ((:file "package")
               (:file "core"))
  :in-order-to ((asdf:test-op (asdf:test-op "demo/test"))))

(asdf:defsystem "demo/test"
  :description "demo's tests, as asdf:test-system runs them (plain assertions: no framework)."
  :depends-on ("demo")
  :pathname "test/"
  :components ((:file "tests"))
  :perform (asdf:test-op (o c) (uiop:symbol-call "DEMO-TEST" "RUN")))
