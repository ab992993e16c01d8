(asdf:defsystem "demo"
  :description "A two-file system for lispshell's project tests."
  :pathname "src/"
  :serial t
  :components ((:file "package")
               (:file "core")))
