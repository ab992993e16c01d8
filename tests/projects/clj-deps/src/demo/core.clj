(ns demo.core)

(defn twice
  "Two times x."
  [x]
  (* 2 x))

(defn greet
  "A greeting that uses twice."
  []
  (str "hello " (twice 21)))
