(ns demo.core-test
  (:require [clojure.test :refer [deftest is]]
            [demo.core :as core]))

(deftest twice-doubles
  (is (= 8 (core/twice 4))))

(deftest greet-says-hello-42
  (is (= "hello 42" (core/greet))))
