;; lispshell's observing helpers for Clojure: trace with a log, time, profile. Loaded after
;; clojure-project.clj, in the namespace lispshell.project (its JSON and look-up are shared);
;; see lispshell/lisp/observe.py.
;;
;; Trace wraps the var's root (tools.trace's way): every arity and variadic call goes through
;; the wrapper, and untrace puts the original back unless the person redefined the var since
;; (then the new definition stays, and the trace is forgotten). Calls through the var, the
;; recursive ones included, are traced; direct-linked callers (clojure.core's own) are not.

(def ^:private log-size 10000)
(defonce ^:private call-log (object-array 10000))
(defonce ^:private calls (atom 0))
(defonce ^:private traced (atom []))          ; [{:label :var :original :wrapper}], oldest first
(defonce ^:private trace-thread (atom nil))
(def ^:private ^:dynamic *trace-depth* 0)

(defn- shown [x]
  (let [text (try (binding [*print-length* 10 *print-level* 4 *print-meta* false]
                    (pr-str x))
                  (catch Throwable _ "#<unprintable>"))]
    (if (> (count text) 200)
      (str (subs text 0 160) "... (" (count text) " chars)")
      text)))

(defn- indent [depth]
  (if (< depth 40)
    (apply str (repeat (* 2 depth) \space))
    (str (apply str (repeat 80 \space)) "[" depth "] ")))

(defn- thread-label []
  (let [t (Thread/currentThread)]
    ;; By name: the loop's eval thread keeps its name; over nREPL every eval (and the helper
    ;; calls, on a session of their own) runs on an nREPL session thread: all are the REPL's.
    (if (or (nil? @trace-thread) (= (.getName t) (.getName ^Thread @trace-thread))
            (str/starts-with? (.getName t) "nREPL-session-"))
      ""
      (str "  [thread " (.getName t) "]"))))

;; a call: [id depth label args thread outcome result], an array so that its end can be filled in
(defn- log-call! [^objects call]
  (locking call-log
    (let [n (swap! calls inc)]
      (aset call 0 n)
      (aset ^objects call-log (mod (dec n) log-size) call))))

(defn- traced-call [label f args]
  (let [depth *trace-depth*
        call (object-array [0 depth label (mapv shown args) (thread-label) "running" nil])]
    (log-call! call)
    (println (str (indent depth) "(" label (apply str (map #(str " " %) (aget call 3))) ")"
                  (aget call 4)))
    (try
      (let [result (binding [*trace-depth* (inc depth)] (apply f args))]
        (aset call 5 "values")
        (aset call 6 [(shown result)])
        (println (str (indent depth) "=> " (first (aget call 6))))
        result)
      (catch Throwable e
        (when (= "running" (aget call 5))
          (aset call 5 "error")
          (aset call 6 (str (.getName (class e)) ": " (ex-message e))))
        (println (str (indent depth) "!! " (aget call 6)))
        (throw e)))))

(defn- split-names [text]
  (remove str/blank? (str/split (str text) #"\s+")))

(defn- label-of [v]
  (str (ns-name (.ns ^clojure.lang.Var v)) "/" (.sym ^clojure.lang.Var v)))

(defn- still-traced? [{:keys [var wrapper]}]
  (identical? @var wrapper))

(defn- traced-list []
  (mapv (fn [e] (if (still-traced? e)
                  (:label e)
                  (str (:label e) " (redefined since: not traced)")))
        @traced))

(defn- trace-target [name ns-text]
  (let [v (lookup name ns-text)
        m (meta v)]
    (cond (:macro m) (throw (ex-info (str name " is a macro: it runs when code is compiled, not "
                                          "when it is called, so it cannot be traced (trace "
                                          "the functions its expansion calls)") {}))
          (= "lispshell.project" (str (ns-name (.ns ^clojure.lang.Var v))))
          (throw (ex-info (str name " is lispshell's own") {}))
          (not (fn? @v)) (throw (ex-info (str name " is not a function (nothing to trace)") {}))
          :else v)))

(defn trace-add [names ns-text]
  (answering
    (reset! trace-thread (Thread/currentThread))
    (let [results (for [name (split-names names)]
                    (try
                      (let [v (trace-target name ns-text)
                            old (first (filter #(= v (:var %)) @traced))]
                        (when-not (and old (still-traced? old))
                          (when old (swap! traced (fn [t] (vec (remove #(= old %) t)))))
                          (let [label (label-of v)
                                original @v
                                wrapper (fn [& args] (traced-call label original args))]
                            (alter-var-root v (constantly wrapper))
                            (swap! traced conj {:label label :var v :original original
                                                :wrapper wrapper})))
                        [:added (label-of v)])
                      (catch Throwable e [:refused {:name name :why (ex-message e)}])))
          results (doall results)]
      (json {:traced (vec (for [[k x] results :when (= k :added)] x))
             :refused (vec (for [[k x] results :when (= k :refused)] x))
             :all (traced-list)}))))

(defn trace-remove [names ns-text]
  (answering
    (let [wanted (set (map (fn [n] (try (label-of (lookup n ns-text)) (catch Throwable _ n)))
                           (split-names names)))
          chosen (if (empty? wanted) @traced (filter #(wanted (:label %)) @traced))
          unknown (remove (set (map :label @traced)) wanted)]
      (doseq [e chosen]
        (when (still-traced? e) (alter-var-root (:var e) (constantly (:original e))))
        (swap! traced (fn [t] (vec (remove #(= e %) t)))))
      (json {:untraced (mapv :label chosen) :not_traced (vec unknown) :all (traced-list)}))))

(defn trace-list []
  (answering (json {:all (traced-list)})))

(defn trace-log [name limit]
  (answering
    (locking call-log
      (let [total @calls
            held (min total log-size)
            all (for [i (range (- total held) total)] (aget ^objects call-log (mod i log-size)))
            wanted (str/trim (str name))
            matches? (fn [^objects c] (let [n (aget c 2)]
                                        (or (= n wanted) (str/ends-with? n (str "/" wanted)))))
            chosen (if (str/blank? wanted)
                     all
                     (loop [rest all inside nil out []]
                       (if-let [^objects c (first rest)]
                         (let [inside (when (and inside (> (aget c 1) inside)) inside)
                               inside (or inside (when (matches? c) (aget c 1)))]
                           (recur (next rest) inside (if inside (conj out c) out)))
                         out)))
            n (when-not (str/blank? (str limit)) (Long/parseLong (str/trim limit)))
            shown-calls (if (and n (> (count chosen) n)) (take-last n chosen) chosen)]
        (json {:total total :dropped (- total held) :matched (count chosen)
               :calls (vec (for [^objects c shown-calls]
                             {:id (aget c 0) :depth (aget c 1) :name (aget c 2)
                              :args (aget c 3) :outcome (aget c 5) :result (aget c 6)
                              :thread (str/trim (aget c 4))}))})))))

(defn trace-clear []
  (answering
    (locking call-log
      (let [had (min @calls log-size)]
        (java.util.Arrays/fill ^objects call-log nil)
        (reset! calls 0)
        (json {:cleared had})))))

(defn observe-ready [] (json {:ready true}))

;; ------------------------------------------------------------------------- time, profile

(defn timed
  "THUNK's value, after a line with the real time, this thread's CPU time, the GC time and
  the bytes this thread allocated (the JVM's own counters: its management beans)."
  [thunk]
  (let [bean (java.lang.management.ManagementFactory/getThreadMXBean)
        tid (.getId (Thread/currentThread))
        gc-time (fn [] (reduce + 0 (for [^java.lang.management.GarbageCollectorMXBean g
                                         (java.lang.management.ManagementFactory/getGarbageCollectorMXBeans)]
                                     (max 0 (.getCollectionTime g)))))
        alloc (fn [] (if (instance? com.sun.management.ThreadMXBean bean)
                       (.getThreadAllocatedBytes ^com.sun.management.ThreadMXBean bean tid)
                       0))
        real0 (System/nanoTime) cpu0 (.getCurrentThreadCpuTime bean) gc0 (gc-time) bytes0 (alloc)
        result (thunk)]
    (println (format "; real %.3f s  run %.3f s (user + system, this thread)  GC %.3f s  allocated %,d bytes"
                     (/ (- (System/nanoTime) real0) 1e9)
                     (/ (- (.getCurrentThreadCpuTime bean) cpu0) 1e9)
                     (/ (- (gc-time) gc0) 1e3)
                     (- (alloc) bytes0)))
    result))

(defn- frame-name [^StackTraceElement e]
  (let [cls (.getClassName e)]
    (if (str/includes? cls "$")
      (let [d (clojure.lang.Compiler/demunge cls)]
        (str/replace d #"--\d+$" ""))
      (str cls "." (.getMethodName e)))))

(defn- ours? [name]
  (or (str/starts-with? name "lispshell.") (str/starts-with? name "java.lang.Thread.")
      (re-find #"/eval\d+" name)))

(defn profiled
  "THUNK's value, run once or again until SECONDS (a decimal string) have passed, while a
  thread samples this one's stack every millisecond; then the top 20 functions by self
  samples, with their cumulative samples, the person's own namespace's marked with *."
  [thunk seconds]
  (let [target (Thread/currentThread)
        home (str (ns-name *ns*))
        secs (Double/parseDouble (if (str/blank? seconds) "0" seconds))
        end (+ (System/nanoTime) (long (* secs 1e9)))
        self (java.util.HashMap.) total (java.util.HashMap.)
        samples (atom 0) running (atom true)
        bump (fn [^java.util.HashMap m k] (.put m k (inc (or (.get m k) 0))))
        sampler (doto (Thread.
                       (fn []
                         (while @running
                           (let [names (->> (.getStackTrace target) (map frame-name)
                                            (remove ours?) dedupe)]
                             (when (seq names)
                               (swap! samples inc)
                               (bump self (first names))
                               (doseq [n (distinct names)] (bump total n))))
                           (Thread/sleep 1)))
                       "lispshell profiler")
                  (.setDaemon true) (.start))
        [result runs] (try
                        (loop [n 1]
                          (let [r (thunk)]
                            (if (< (System/nanoTime) end) (recur (inc n)) [r n])))
                        (finally (reset! running false) (.join sampler 1000)))
        n (max 1 @samples)
        rows (take 20 (sort-by (fn [[k v]] [(- v) (- (get total k 0))]) (seq self)))]
    (println (format "; profiled by sampling the thread's stack every 1 ms: %d run%s, %d samples; * marks your own functions"
                     runs (if (= 1 runs) "" "s") @samples))
    (println "   self  %self  cumul %cumul  function")
    (doseq [[k v] rows]
      (let [c (get total k 0)]
        (println (format "%s%6d %5.1f %6d %5.1f  %s"
                         (if (str/starts-with? k (str home "/")) "*" " ")
                         v (* 100.0 (/ v n)) c (* 100.0 (/ c n)) k))))
    result))
