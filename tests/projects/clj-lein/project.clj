;; Resolved from Debian's local Maven repository, so the tests need no network.
(defproject demo "0.1.0"
  :dependencies [[org.clojure/clojure "1.11.1"]]
  :repositories ^:replace [["debian" {:url "file:///usr/share/maven-repo" :checksum :ignore}]])
