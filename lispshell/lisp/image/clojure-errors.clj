;; How lispshell says a Clojure exception, the same for the child's loop (clojure-loop.clj) and
;; over nREPL (clojure-nrepl.clj): loaded once per image, into its own namespace.
(ns lispshell.errors)

(defn frame-lines
  "The first frames of ELEMENTS, one line each, down to where the compiler called the code."
  [elements]
  (->> elements
       (map (fn [^StackTraceElement e]
              (str (clojure.lang.Compiler/demunge (.getClassName e)) "."
                   (.getMethodName e) " (" (.getFileName e) ":" (.getLineNumber e) ")")))
       (take-while (fn [^String s] (not (.startsWith s "clojure.lang.Compiler"))))
       (take 12)))

(def ^:private compile-phases
  #{:read-source :macro-syntax-check :macroexpansion :compile-syntax-check :compilation})

(defn describe
  "[type message frames] of T: the whole cause chain, as CIDER shows it (each level's class,
  message and ex-data: a wrapped ex-info keeps both messages and both maps), with the frames
  of the deepest. A reader or compiler error is said as clojure.main says it (ex-triage)."
  [^Throwable t]
  (let [tri (clojure.main/ex-triage (Throwable->map t))
        chain (vec (take-while some? (iterate #(.getCause ^Throwable %) t)))
        chain (if (and (instance? clojure.lang.Compiler$CompilerException t) (> (count chain) 1))
                (subvec chain 1)
                chain)
        said (fn [^Throwable c]
               (str (or (.getMessage c) "") (if-let [d (ex-data c)] (str " " (pr-str d)) "")))
        ^Throwable top (first chain)
        ^Throwable root (peek chain)]
    (if (and (compile-phases (:clojure.error/phase tri)) (= 1 (count chain)))
      [(str (or (:clojure.error/class tri) (.getName (class root))))
       (str (or (:clojure.error/cause tri) (.getMessage root) "")
            (if-let [d (ex-data root)] (str " " (pr-str d)) ""))
       (frame-lines (.getStackTrace root))]
      [(.getName (class top))
       (apply str (said top)
              (for [^Throwable c (rest chain)]
                (str "\n  caused by " (.getName (class c)) ": " (said c))))
       (frame-lines (.getStackTrace root))])))
