;; Breakpoints in a Clojure image (lispshell/lisp/breakpoints.py, levels.py), the same for the
;; child's loop (clojure-loop.clj) and over nREPL (lispshell/lisp/nrepl.py): loaded once per
;; image, into its own namespace.
;;
;; A breakpoint wraps the var's root (alter-var-root; a watch wraps a redefinition again), so
;; that a call whose condition holds is a *hit*: its arguments destructured by the arglist that
;; fits them become the hit's locals, and the calling thread waits for a decision: run the
;; call ([:run]), return a value without running it ([:return v]), or leave (the ABORT error).
;; Where it waits:
;; - on the child loop's own thread, the loop serves requests inside the hit (`level-hook`,
;;   set by clojure-loop.clj): a debug level, as SBCL's loop has one;
;; - on any other thread (nREPL's eval thread, a future), the hit is *parked*: kept in `parked`
;;   and announced on *out* with a marker line nREPL's client reads (the child's loop reads
;;   it as the note it prints), until `resume` decides it. Never lost.
;; Forms evaluate at a hit with its locals bound (`eval-at`), on whatever thread asks.
(ns lispshell.debug
  (:require [clojure.string :as string]))

(defonce breakpoints (atom (sorted-map)))   ; number -> breakpoint
(defonce counter (atom 0))
(defonce hit-counter (atom 0))
(defonce parked (atom (sorted-map)))        ; hit id -> hit, waiting on another thread
(defonce level-hook (atom nil))             ; [thread (fn [hit] decision)]: the child's loop
(def ^:dynamic *locals* nil)
;; Over nREPL the note of a parked hit starts with a marker (RS, "lispshell-hit", its id) that
;; lispshell's client reads: set by lispshell/lisp/nrepl.py. A child's loop prints the note alone.
(defonce marker? (atom false))

(def abort-message "lispshell: the breakpoint's call was left")

(defn abort-error
  "What a hit throws when it is left (,abort): an Error, which the person's (catch Exception)
  does not stop, recognised by its message (clojure-loop.clj)."
  []
  (Error. ^String abort-message))

(defn abort? [^Throwable t]
  (and (= Error (class t)) (= abort-message (.getMessage t))))

(defn- bound-names
  "The symbols a parameter vector binds, in order (destructuring included, its gensyms not)."
  [params]
  (->> (destructure [params 'lispshell-args])
       (partition 2)
       (map first)
       (remove #(re-find #"__\d+" (name %)))
       (remove #{'lispshell-args})
       distinct
       vec))

(defn- fits? [params n]
  (let [[fixed rest-part] (split-with #(not= '& %) params)]
    (if (seq rest-part) (>= n (count fixed)) (= n (count fixed)))))

(defn- binder
  "A function of the argument list answering [[name value] ...] for the arglist `params`."
  [params]
  (let [names (bound-names params)]
    (eval `(fn [~'lispshell-args]
             (let [~params ~'lispshell-args]
               ~(mapv (fn [s] [(list 'quote s) s]) names))))))

(defn locals-of
  "The call's arguments by name: destructured by the first arglist of the var that fits their
  count; [] when none does (or the var has no :arglists)."
  [point args]
  (let [n (count args)
        params (first (filter #(fits? % n) (:arglists (meta (:var point)))))]
    (if params
      (try
        (let [cache (:binders point)
              f (or (get @cache params)
                    (let [f (binder params)] (swap! cache assoc params f) f))]
          (f args))
        (catch Throwable _ []))
      [])))

(defn- let-form
  "`form` with `locals` bound, read from *locals* (any value, not embedded in code)."
  [locals form]
  `(let [~@(mapcat (fn [[s _] i] [s `(second (nth *locals* ~i))]) locals (range))]
     ~form))

(defn eval-with [locals form]
  (binding [*locals* (vec locals)]
    (eval (let-form locals form))))

(defn- printed [v]
  (binding [*print-length* 20 *print-level* 4]
    (let [s (pr-str v)]
      (if (> (count s) 500) (str (subs s 0 500) "...") s))))

(defn call-text [hit]
  (let [s (str "(" (:name (:point hit))
               (apply str (map #(str " " (printed %)) (:args hit))) ")")]
    (if (> (count s) 300) (str (subs s 0 300) "...") s)))

(defn hit-message
  "A breakpoint's: the call, then each argument by name on its own line (the REPL's display).
  A step's: the form it stops before, on one line, and its note."
  [hit]
  (if (= :step (:kind hit))
    (str (:form hit) (when (:note hit) (str "  (" (:note hit) ")")))
    (string/join "\n" (cons (call-text hit)
                          (if (seq (:locals hit))
                            (for [[s v] (:locals hit)] (str s " = " (printed v)))
                            (when (seq (:args hit))
                              [(str "arguments: " (string/join " " (map printed (:args hit))))]))))))

(defn- offered
  "[name description action] of each restart a hit offers before ABORT: a step's its own
  (clojure-step.clj), a breakpoint's these three."
  [hit]
  (or (:restarts hit)
      (let [n (:name (:point hit))]
        [["CONTINUE" (str "Run " n " with these arguments.") :run]
         ["RETURN-VALUE" (str "Return a value from " n " without running it.") :return]
         ["STEP-INTO" (str "Step through " n "'s call (,s: instrumented as ,step does).") :step]])))

(defn restarts [hit outer]
  (conj (mapv (fn [[name description]] (str name "\t" description)) (offered hit))
        (str "ABORT\t" outer)))

(defn action
  "What restart `n` of `hit` does: an action of `offered` (:return takes a value), :abort
  (the last), or nil when there is no such restart."
  [hit n]
  (let [offered (offered hit)]
    (cond (and n (< -1 n (count offered))) (nth (nth offered n) 2)
          (= n (count offered)) :abort)))

(defn hit-type [hit]
  (if (= :step (:kind hit)) "LISPSHELL-STEP" "LISPSHELL-BREAK"))

(defn source-of [point]
  (let [{:keys [file line]} (meta (:var point))]
    (if (and file line (not= file "NO_SOURCE_PATH")) (str file ":" line) "")))

(defn stack-lines
  "The hit's thread's callers, one line each, down to the form evaluated (lispshell's and the
  JVM's frames left out, and a function's invoke beside its invokeStatic)."
  [^Thread thread]
  (->> (.getStackTrace thread)
       (map (fn [^StackTraceElement e]
              [(clojure.lang.Compiler/demunge (.getClassName e)) (.getMethodName e)
               (str " (" (.getFileName e) ":" (.getLineNumber e) ")")]))
       (take-while (fn [[c]] (not (or (re-find #"/eval\d+$" c) (.startsWith ^String c "clojure.main")
                                      (.startsWith ^String c "clojure.lang.Compiler")))))
       (remove (fn [[c]] (re-find #"^(lispshell\.|clojure\.lang\.|clojure\.core|java\.|jdk\.|sun\.|nrepl\.)" c)))
       (partition-by first)
       (map (fn [same] (let [[c m where] (first same)] (str c "." m where))))
       (take 12)))

(defn frame-values
  "A frame request at a hit: bt | locals N | source N (frame 0 is the call; the others its
  callers, without locals). [:ok values] or [:refuse why]."
  [hit op n]
  (let [callers (stack-lines (:thread hit))
        frames (count (cons hit callers))]
    (cond
      (= op "bt") [:ok (cons (str "0\t" (call-text hit) "\t" (source-of (:point hit)))
                             (map-indexed (fn [i line] (str (inc i) "\t" line "\t")) callers))]
      (not (and n (< -1 n frames))) [:refuse (str "choose a frame from 0 to " (dec frames))]
      (= op "locals") [:ok (if (zero? n) (for [[s v] (:locals hit)] (str s "\t" (printed v))) [])]
      (= op "source") [:ok [(if (zero? n) (source-of (:point hit)) "")]]
      :else [:refuse (str "frame " n " cannot be restarted on Clojure")])))

(defn- note
  "What a hit parked on another thread prints (,threads lists it)."
  [hit]
  (if (= :step (:kind hit))
    (str "; a step of " (call-text hit) " stopped before " (:form hit))
    (str "; breakpoint " (:number (:point hit)) " stopped " (call-text hit))))

(defn wait-at
  "The calling thread waits at `hit` (a map: :point {:name :var}, :args, :locals; a step's
  also :kind :step, :form, :note, :restarts) until it is decided: [action] or [:return v]
  (`action`), or the ABORT error thrown. On the child loop's thread the loop serves it as a
  level; elsewhere it is parked and announced."
  [hit]
  (let [hit (assoc hit :id (swap! hit-counter inc) :thread (Thread/currentThread)
                   :decision (promise))
        [thread serve] @level-hook]
    (if (identical? thread (Thread/currentThread))
      (serve hit)
      (do (swap! parked assoc (:id hit) hit)
          (try
            ;; The marker line for nREPL's client; a person reading it sees the note.
            (print (str (if @marker? (str (char 30) "lispshell-hit " (:id hit) " ") "")
                        (note hit) " in thread \"" (.getName (Thread/currentThread))
                        "\" (,threads lists it)\n"))
            (flush)
            (let [decision @(:decision hit)]
              (if (= :abort (first decision)) (throw (abort-error)) decision))
            (finally (swap! parked dissoc (:id hit))))))))

(defn- hit! [point args locals]
  (swap! (:hits point) inc)
  (wait-at {:point point :args args :locals locals}))

(defn- stops? [point locals args]
  (if-let [c (:condition point)]
    (try (boolean (eval-with (if (seq locals) locals [['args args]])
                             (binding [*read-eval* false] (read-string c))))
         (catch Throwable _ true))             ; a condition that fails stops: worth a look
    true))

(defn- wrap [point f]
  (with-meta
    (fn [& args]
      (let [locals (locals-of point args)]
        (if (stops? point locals args)
          (let [[how v] (hit! point args locals)]
            (case how
              :return v
              ;; ,s: the call runs stepped, through the function lispshell armed for it
              ;; (clojure-step.clj: the root, wrapped again by this breakpoint's watch)
              :step (let [inner (::original (meta @(:var point)))]
                      (apply (if (:lispshell.step/stepped (meta inner)) inner f) args))
              (apply f args)))
          (apply f args))))
    {::breakpoint (:number point) ::original f}))

(defn- line [point]
  (str (:number point) "\t" (:name point) "\t" (or (:condition point) "") "\t"
       @(:hits point) "\t" (if (:model point) "model" "")))

(defn- wrapped? [v] (some? (::breakpoint (meta v))))

(defn set-breakpoint
  "A breakpoint on the function `text` names in *ns* (again: its condition replaced); prints
  its line (number, name, condition, hits, who set it)."
  [text condition by-model]
  (let [sym (try (binding [*read-eval* false] (read-string text))
                 (catch Exception _ nil))
        _ (when-not (symbol? sym) (throw (ex-info (str text " is not a function name") {})))
        v (ns-resolve *ns* sym)
        _ (when-not (var? v) (throw (ex-info (str sym " is not defined as a function") {})))
        _ (when (:macro (meta v))
            (throw (ex-info (str sym " is a macro: a breakpoint stops a function's calls") {})))
        _ (when-not (fn? @v) (throw (ex-info (str sym " is not a function") {})))
        condition (when-not (string/blank? condition)
                    (binding [*read-eval* false] (read-string condition))   ; it reads, or says
                    (string/trim condition))
        old (first (filter #(= v (:var %)) (vals @breakpoints)))
        point (if old
                (assoc old :condition condition :model by-model)
                {:number (swap! counter inc) :var v :name (str (symbol v)) :condition condition
                 :model by-model :hits (atom 0) :binders (atom {})})]
    (swap! breakpoints assoc (:number point) point)
    (let [live (fn [] (get @breakpoints (:number point)))]
      ;; the wrapper reads the breakpoint (its condition) as it is now
      (when-not (wrapped? @v)
        (alter-var-root v (fn [f] (wrap (live) f))))
      (when-not old
        ;; `defn` again replaces the root: wrap the new definition too, while the breakpoint is set
        (add-watch v ::breakpoint
                   (fn [_ v _ new]
                     (when (and (live) (not (wrapped? new)))
                       (alter-var-root v (fn [f] (if (wrapped? f) f (wrap (live) f)))))))))
    (println (line (get @breakpoints (:number point))))))

(defn list-breakpoints []
  (doseq [p (vals @breakpoints)] (println (line p))))

(defn clear-breakpoints
  "Remove breakpoint number `which`, or the one on the function `which` names, or all (\"\");
  prints the lines of those removed."
  [which]
  (let [which (string/trim which)
        gone (cond (string/blank? which) (vals @breakpoints)
                   (re-matches #"\d+" which) (keep #(get @breakpoints %) [(Long/parseLong which)])
                   :else (let [sym (try (binding [*read-eval* false] (read-string which))
                                        (catch Exception _ nil))
                               v (and (symbol? sym) (ns-resolve *ns* sym))]
                           (filter #(= v (:var %)) (vals @breakpoints))))]
    (doseq [p gone]
      (swap! breakpoints dissoc (:number p))
      (remove-watch (:var p) ::breakpoint)
      (alter-var-root (:var p) (fn [f] (if (wrapped? f) (::original (meta f)) f)))
      (println (line p)))))

;; -- parked hits: asked from another thread (nREPL's client, the child's `,threads`) ----------

(defn- parked-hit [id]
  (or (get @parked id)
      (throw (ex-info (str "no breakpoint waits as " id " (it was resumed or left)") {}))))

(defn parked-lines
  "One line per parked hit: id TAB thread TAB restarts-joined TAB message (newlines as \\u001f)."
  []
  (doseq [[id hit] @parked]
    (println (str id "\t" (.getName ^Thread (:thread hit)) "\t"
                  (string/join "\u001f" (restarts hit "Leave the call (the thread goes on with an error)."))
                  "\t" (string/replace (hit-message hit) "\n" "\u001f")))))

(defn eval-at
  "Evaluate `code`'s forms with parked hit `id`'s locals bound; the last value."
  [id code]
  (let [hit (parked-hit id)
        rdr (clojure.lang.LineNumberingPushbackReader. (java.io.StringReader. code))
        eof (Object.)]
    (loop [v nil]
      (let [form (read {:eof eof :read-cond :allow} rdr)]
        (if (identical? form eof) v (recur (eval-with (:locals hit) form)))))))

(defn frames-at [id op n]
  (let [[status values] (frame-values (parked-hit id) op n)]
    (if (= status :ok)
      (doseq [v values] (println (string/replace v "\n" " ")))
      (throw (ex-info values {:lispshell/no-such-frame true})))))

(defn eval-in-frame-at [id n code]
  (when-not (zero? n)
    (throw (ex-info "only frame 0, the call, has locals on Clojure" {:lispshell/no-such-frame true})))
  (eval-at id code))

(defn resume
  "Decide parked hit `id` with its restart `n` (`action`): a breakpoint's 0 runs the call, 1
  returns `code`'s value (evaluated with the locals bound), 2 leaves it; a step's likewise."
  [id n code]
  (let [hit (parked-hit id)
        how (action hit n)
        decision (case how
                   nil (throw (ex-info (str "choose a restart from 0 to " (count (offered hit))) {}))
                   :return [:return (eval-at id code)]
                   [how])]
    (deliver (:decision hit) decision)
    nil))
