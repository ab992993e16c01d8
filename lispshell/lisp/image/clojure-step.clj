;; Stepping a Clojure function (`,step`: lispshell/lisp/stepping.py, docs/debugging.md), the
;; same for the child's loop and over nREPL: loaded into an image at its first `,step`.
;;
;; CIDER's approach (cider.nrepl.middleware.util.instrument, its #dbg), smaller. `prepare`
;; reads the function's source (its file's, at the var's :line, for a var loaded from one;
;; else the text lispshell kept of the defn the person evaluated), macroexpands it while
;; walking it, and makes every form of the source that is evaluated for its value a *step
;; point*: `(point ID FORM)`, a macro that captures the locals in scope (&env) by name (each
;; shown as written: its text found by the :line and :column the reader gave it). The
;; instrumented fn is compiled in the var's namespace and the var's root wrapped: the next
;; call of the function steps, and when that call returns (or throws, or is left) the root is
;; the original again (`disarm!`); redefining the function meanwhile disarms it too. One call,
;; one stepping. `,s` at a call of another function of the person's arms that one too.
;;
;; Not step points, as in CIDER: a form containing a `recur` (wrapped, the recur would leave
;; tail position), `fn*`, `def` and quoted forms, and (unlike CIDER) the direct arguments of a
;; `recur` (a loop's or a hinted parameter's primitive type must reach it). A macro's form is
;; one step point; the forms of the source its expansion keeps are step points inside it, and
;; when it keeps none (`->` rewrites them) it is stepped whole and its step says so.
;;
;; A step point stops *before* its form runs (CIDER stops after it, with the value; here the
;; value is said when the form returns, as lispshell's SBCL stepping says it) in a level
;; (clojure-debug.clj's `wait-at`: the loop's own level on the child, a parked hit over nREPL)
;; whose locals are those in scope there, bound for forms typed at it. Its restarts decide:
;; STEP-INTO stops at the next point (inside this form), STEP-NEXT runs the form whole and stops
;; at the next point after it, STEP-OUT finishes this call of the function, STEP-CONTINUE runs
;; on unstepped, RETURN-VALUE uses a value instead of running the form, ABORT leaves the call.
(ns lispshell.step
  (:require [clojure.string :as string]))

(defonce ^ThreadLocal state (ThreadLocal.))  ; this thread's stepping, a volatile map, or nil
(defonce armed (atom {}))       ; var -> {:original f :name "ns/f" :points n :skipped [texts]}
(defonce points (atom {}))      ; step point id -> {:text form :note why}
(defonce counter (atom 0))
(defonce none (Object.))        ; `before`'s answer: run the form (else a value to use instead)
(def ^:dynamic *arming* false)  ; our own root changes: not a redefinition

(def step-restarts
  [["STEP-CONTINUE" "Run on without stepping." :continue]
   ["STEP-INTO" "Step into this form: stop at the first form inside it." :into]
   ["STEP-NEXT" "Run this form whole, say its value, stop at the next one." :next]
   ["STEP-OUT" "Finish this call of the function, then stop." :out]
   ["RETURN-VALUE" "Use a value instead of running this form." :return]])

(defn- one-line [s n]
  (let [s (string/replace (str s) #"\s*\n\s*" " ")]
    (if (> (count s) n) (str (subs s 0 n) "...") s)))

(defn- printed [v]
  (one-line (binding [*print-length* 10 *print-level* 3] (pr-str v)) 200))

(defn- say [st text]
  (let [^java.io.Writer w (:out st)]
    (.write w (str text "\n"))
    (.flush w)))

(defn- value-said
  "Keep the line FORM => V (and `note`) to say at the next stop or at the end: forms that return
  one after the other with the same value (a form, then the let or the function it ends) are
  said in one line, so that a step stays a few lines."
  [s text v note]
  (vswap! s update :said (fnil conj []) [text v note]))

(defn- flush-said! [s]
  (let [lines (:said @s)
        runs (reduce (fn [runs [_ v :as line]]
                       (let [run (peek runs)]
                         (if (and run (identical? v (second (peek run))) (nil? (nth line 2))
                                  (nil? (nth (peek run) 2)))
                           (conj (pop runs) (conj run line))
                           (conj runs [line]))))
                     [] lines)]
    (vswap! s assoc :said [])
    (doseq [run runs]
      (let [[text v note] (first run)
            [last-text] (peek run)]
        (say @s (str "; " text " => " (printed v) (when note (str "  (" note ")"))
                     (when (> (count run) 1) (str " ... " last-text " => " (printed v)))))))))

(defn- call-text [frame]
  (one-line (str "(" (:name frame) (apply str (map #(str " " (printed %)) (:args frame))) ")")
            200))

(defn- text-of [id] (:text (get @points id) "?"))

;; -- at run time: what the instrumented code calls -------------------------------------------

(declare into-call! disarm!)

(defn- stop!
  "The thread waits before point `id` (a level); the decision sets how stepping goes on.
  `none`, or the value the person chose instead of running the form."
  [s id h locals]
  (let [frame (peek (:calls @s))
        info (get @points id)]
    (flush-said! s)
    (when-not (:said frame)
      (say @s (str "; stepping " (call-text frame)))
      (vswap! s update :calls #(conj (pop %) (assoc (peek %) :said true))))
    (vswap! s assoc :paused true)
    (let [[how v] (try (lispshell.debug/wait-at
                        {:kind :step :point {:name (:name frame) :var (:var frame)}
                         :args (:args frame) :locals locals :form (:text info) :note (:note info)
                         :restarts step-restarts})
                       (finally (vswap! s assoc :paused false)))]
      (case how
        :into (do (when-let [v (:callee info)]
                    ;; into a call of the person's function: it steps too (SBCL's into)
                    (let [r (into-call! v)]
                      (when (var? r) (vswap! s update :armed-here conj r))
                      (vswap! s update :stack #(conj (pop %) (conj (peek %) r)))))
                  (vswap! s assoc :mode :into)
                  none)
        :next (do (vswap! s assoc :mode :over :target h) none)
        :out (do (vswap! s assoc :mode :out :target (count (:calls @s))) none)
        :return (do (vswap! s update :stack pop)
                    (value-said s (:text info) v "returned: not run")
                    v)
        ;; :continue, or :run from a loop serving a look-up (it never stops one)
        (do (vswap! s assoc :mode :continue) none)))))

(defn before
  "At point `id`, before its form runs: push it, and stop there when the mode says so."
  [id locals]
  (if-let [s (.get state)]
    (let [st @s]
      ;; paused: a form typed at a step's level, not stepped; :continue: nothing stops any
      ;; more in this stepping, so nothing is kept (a loop runs on at a fraction of the cost)
      (if (or (:paused st) (= :continue (:mode st)))
        none
        (let [h (count (:stack st))
              stop? (case (:mode st)
                      :into true
                      :over (<= h (:target st))
                      :out (< (count (:calls st)) (:target st))
                      false)]
          (vswap! s update :stack conj [id stop?])
          (if stop? (stop! s id h (locals)) none))))
    none))

(defn after
  "Point `id`'s form returned `v`: pop it, and say its value if it was stopped at."
  [id v]
  (when-let [s (.get state)]
    (when-not (= :continue (:mode @s))
     (let [st @s
          stack (:stack st)
          i (loop [i (dec (count stack))]
              (cond (neg? i) nil
                    (= id (first (nth stack i))) i
                    :else (recur (dec i))))]
      (when (and i (not (:paused st)))
        (vswap! s assoc :stack (subvec stack 0 i))
        (let [[_ stopped? into] (nth stack i)]
          (when (var? into) (disarm! into))      ; stepped into it (if not called): itself again
          (when (and stopped? (#{:into :over} (:mode st)))
            (value-said s (text-of id) v
                        (when (vector? into)
                          (str (some-> (:callee (get @points id)) symbol) " not stepped: "
                               (second into))))))))))
  v)

(defmacro point
  "Point `id` around `form`, the locals in scope (&env, lispshell's and macros' gensyms left
  out) handed to `before` by name, sorted (&env keeps no order), in a function called only
  when it stops (a loop that does not stop builds nothing)."
  [id form]
  (let [locals (->> &env
                    (remove (fn [[s]] (re-find #"__|#$" (name s))))
                    (sort-by (comp name first))
                    (mapv (fn [[s]] [(list 'quote s) s])))]
    `(let* [v# (before ~id (fn* [] ~locals))]
       (if (identical? v# none) (after ~id ~form) v#))))

(defn- stepped
  "The armed var's root: each call is a frame of this thread's stepping; the outermost call
  starts it (stopping at the first point). When the var's outermost call on this thread ends,
  the var is disarmed: one call stepped. Under `run` the stepping is held (`:held`, its var):
  every call the stepped form makes steps, one after the other, and `run` ends it."
  [v g name]
  (with-meta
    (fn [& args]
      (let [s (.get state)]
        (if (and s (:paused @s))
          (apply g args)                 ; called from a form typed at a step: not stepped
          (let [s (or s (let [s (volatile! {:mode :into :stack [] :calls [] :out *out*})]
                          (.set state s)
                          s))
                height (count (:stack @s))]
            (vswap! s update :calls conj {:var v :name name :args args})
            (try
              (let [r (apply g args)
                    st @s]
                (when (and (:said (peek (:calls st))) (#{:into :over :out} (:mode st)))
                  (value-said s (call-text (peek (:calls st))) r nil))
                r)
              (finally
                (vswap! s #(-> % (update :calls pop)
                               (update :stack (fn [stack] (subvec stack 0 (min height (count stack)))))))
                (when-not (or (= v (:held @s)) (some #(= v (:var %)) (:calls @s)))
                  (disarm! v))
                (when (empty? (:calls @s))
                  (flush-said! s)
                  (if (:held @s)
                    ;; back in the stepped form, between its calls: the next call stops at
                    ;; its first form, whatever the last one was left by (,n ,o), unless ,c
                    (when-not (= :continue (:mode @s))
                      (vswap! s assoc :mode :into :stack []))
                    (do (.remove state)
                        (run! disarm! (:armed-here @s))))))))))) ; stepped into, never called
    {::stepped true}))

;; -- instrumenting ----------------------------------------------------------------------------

(defn- fail
  ([message] (fail message nil))
  ([message why] (throw (ex-info message (if why {:why why} {})))))

(defn- originals
  "The source's forms (seqs) by identity: they, not what macros make, are step points."
  [form]
  (let [m (java.util.IdentityHashMap.)]
    (letfn [(walk [f]
              (cond (seq? f) (do (.put m f true) (run! walk f))
                    (map? f) (run! walk (mapcat identity f))
                    (coll? f) (run! walk f)))]
      (walk form))
    m))

(defn- holds?
  "Does `form` hold `x` itself (identical) anywhere inside?"
  [form x]
  (or (identical? form x)
      (and (coll? form) (not (record? form))
           (some #(holds? % x) (if (map? form) (mapcat identity form) form)))))

(defn- contains-recur?
  "A `recur` outside any inner loop or fn (CIDER's rule: such a form cannot be wrapped)."
  [form]
  (cond (seq? form) (case (first form)
                      recur true
                      (loop* fn* loop fn clojure.core/loop clojure.core/fn quote) false
                      (some contains-recur? (rest form)))
        (map? form) (some contains-recur? (vals form))
        (vector? form) (some contains-recur? form)
        :else false))

(defn- expand [form]
  (loop [f form]
    (let [e (if (and (symbol? (first f)) (not (special-symbol? (first f))))
              (try (macroexpand-1 f)
                   (catch Throwable t
                     (fail (str "could not expand " (one-line (pr-str form) 80) ": "
                                (.getMessage t)))))
              f)]
      (if (or (identical? e f) (not (seq? e)) (empty? e)) e (recur e)))))

(def ^:private never-points
  '#{quote var fn* def recur catch finally deftype* reify* monitor-enter monitor-exit
     clojure.core/import*})

(declare walk form-text)

(defn- callee
  "The var a call form calls (`,s` there steps into it), or nil."
  [e]
  (let [head (first e)]
    (when (and (symbol? head) (not (special-symbol? head)))
      (let [v (try (ns-resolve *ns* head) (catch Throwable _ nil))]
        (when (and (var? v) (not (:macro (meta v)))) v)))))

(defn- walk-all [ctx forms] (doall (map #(walk ctx %) forms)))

(defn- walk-fn [ctx [head & args]]
  (let [named (when (symbol? (first args)) (first args))
        methods (if named (rest args) args)
        method (fn [m] (with-meta (cons (first m) (walk-all ctx (rest m))) (meta m)))]
    (concat [head] (when named [named])
            (if (vector? (first methods))
              (cons (first methods) (walk-all ctx (rest methods)))
              (map method methods)))))

(defn- walk-special
  "An expanded form: its parts walked as the special form (or call) it is."
  [ctx e]
  (let [[head & args] e
        out (case (when (symbol? head) head)
              (quote var clojure.core/import* deftype* reify*) e
              recur (cons head (doall (map #(walk ctx % true) args)))
              catch (list* head (first args) (second args) (walk-all ctx (drop 2 args)))
              new (list* head (first args) (walk-all ctx (rest args)))
              set! (list head (first args) (walk ctx (second args)))
              def (list* head (first args) (walk-all ctx (rest args)))
              . (let [[target member & more] args]
                  (list* head (walk ctx target)
                         (if (seq? member) (cons (first member) (walk-all ctx (rest member))) member)
                         (walk-all ctx more)))
              (let* loop* letfn*) (list* head
                                         (vec (map-indexed (fn [i x] (if (odd? i) (walk ctx x) x))
                                                           (first args)))
                                         (walk-all ctx (rest args)))
              fn* (walk-fn ctx e)
              case* (let [[ge shift mask default imap & more] args]
                      (list* head ge shift mask (walk ctx default)
                             (into (empty imap) (map (fn [[k [test then]]] [k [test (walk ctx then)]]) imap))
                             more))
              (if do throw try monitor-enter monitor-exit finally) (cons head (walk-all ctx args))
              (walk-all ctx e))]                ; a call: its function and arguments
    (if (instance? clojure.lang.IObj out) (with-meta out (meta e)) out)))

(defn- walk
  "`form` instrumented: a form of the source becomes a step point where that can be (`bare`:
  never itself, a recur's argument), and its parts are walked."
  ([ctx form] (walk ctx form false))
  ([ctx form bare]
   (cond
     (and (seq? form) (seq form))
     (let [e (expand form)
           inner (if (and (seq? e) (seq e)) (walk-special ctx e) (walk ctx e))
           source? (.containsKey ^java.util.IdentityHashMap (:origin ctx) form)
           stoppable? (and (seq? e) (seq e)
                           (not (and (symbol? (first e)) (never-points (first e)))))]
       (cond
         (and source? stoppable? (contains-recur? e))
         (do (swap! (:skipped ctx) conj (one-line (form-text ctx form) 60)) inner)
         (and source? stoppable? (not bare))
         (let [id (swap! counter inc)
               kids (filter seq? (rest form))
               whole? (and (not (identical? e form)) (seq kids) (not-any? #(holds? e %) kids))]
           (swap! points assoc id {:text (one-line (form-text ctx form) 150)
                                   :note (when whole? "a macro's form: stepped whole")
                                   :callee (callee e)})
           (swap! (:ids ctx) conj id)
           `(point ~id ~inner))
         :else inner))
     (map-entry? form) form
     (vector? form) (with-meta (mapv #(walk ctx %) form) (meta form))
     (record? form) form
     (map? form) (with-meta (into {} (map (fn [[k v]] [(walk ctx k) (walk ctx v)]) form)) (meta form))
     (set? form) (with-meta (into #{} (map #(walk ctx %)) form) (meta form))
     :else form)))

(defn- file-text
  "The text of var `v`'s file from its :line on: a resource on the classpath (as
  clojure.repl/source-fn reads it) or a file (load-file's); nil when there is none."
  [v]
  (let [{:keys [file line]} (meta v)]
    (when (and (string? file) (re-find #"\.clj[cs]?$" file) line)
      (when-let [in (or (.getResourceAsStream (clojure.lang.RT/baseLoader) ^String file)
                        (let [f (java.io.File. ^String file)]
                          (when (.isFile f) (java.io.FileInputStream. f))))]
        (with-open [rdr (java.io.BufferedReader.
                         (java.io.InputStreamReader. ^java.io.InputStream in "UTF-8"))]
          (dotimes [_ (dec line)] (.readLine rdr))
          (slurp rdr))))))

(defn- source-form
  "[form text] of what defined var `v`, read in its namespace from `text`: its file's when it
  was loaded from one, else the text lispshell kept of the person's defn (`sources`:
  \"ns/name\" -> text)."
  [v sources]
  (let [text (or (try (file-text v) (catch Throwable _ nil))
                 (get sources (str (symbol v)))
                 (fail (str "no source for " (symbol v) ": it was not loaded from a file "
                            "lispshell can read, nor defined by a form evaluated in this session "
                            "(evaluate its defn here, then ,step again)")
                       "no source"))
        text (string/replace text "\r\n" "\n")]
    (try [(binding [*ns* (.ns ^clojure.lang.Var v)]
            (read {:read-cond :allow}
                  (clojure.lang.LineNumberingPushbackReader. (java.io.StringReader. text))))
          text]
         (catch Throwable t
           (fail (str "the source of " (symbol v) " does not read: " (.getMessage t))
                 "its source does not read")))))

(defn- line-starts [^String text]
  (loop [starts [0] i (.indexOf text "\n")]
    (if (neg? i) starts (recur (conj starts (inc i)) (.indexOf text "\n" (inc i))))))

(defn- form-text
  "Source form `form` as the person wrote it (its :line and :column in the source text, read
  again from there to find its end), or printed where that is not known."
  [{:keys [^String text starts]} form]
  (let [{:keys [line column]} (meta form)]
    (or (when (and text line column (<= line (count starts)))
          (try
            (let [from (+ (nth starts (dec line)) (dec column))
                  r (clojure.lang.LineNumberingPushbackReader.
                     (java.io.StringReader. (subs text from)))
                  _ (read {:read-cond :allow} r)
                  l (.getLineNumber r)
                  c (.getColumnNumber r)
                  end (if (= l 1)
                        (+ from (dec c))
                        (+ (nth starts (+ line l -2)) (dec c)))]
              (when (< from end (inc (count text))) (subs text from end)))
            (catch Throwable _ nil)))
        (when (and (seq? form) (= 'clojure.core/deref (first form)) (= 2 (count form)))
          (str "@" (form-text {:text text :starts starts} (second form))))   ; the reader's @x
        (binding [*print-length* 12 *print-level* 8] (pr-str form)))))

(defn- ours?
  "Is `f` an armed root: ours, or a breakpoint's wrapper around ours (clojure-debug.clj)?"
  [f]
  (boolean (or (::stepped (meta f)) (::stepped (meta (:lispshell.debug/original (meta f)))))))

(defn disarm!
  "Put `v`'s original function back (if it is still armed)."
  [v]
  (when-let [a (get @armed v)]
    (swap! armed dissoc v)
    (swap! points #(apply dissoc % (:ids a)))
    (remove-watch v ::step)
    (binding [*arming* true]
      (alter-var-root v (fn [cur]
                          (if (ours? cur)
                            (:original a)       ; (a breakpoint's watch wraps it again)
                            cur))))))

(defonce sources-kept (atom {}))  ; "ns/name" -> the text of a defn evaluated in a session

(defn- arm!
  "Instrument the function of var `v` from its source and arm it: its next call steps. Throws
  with the reason it cannot (its ex-data's :why, short; none for Clojure's own functions)."
  [^clojure.lang.Var v sources]
  (let [original (let [f @v] (or (:lispshell.debug/original (meta f)) f))
        original (if-let [a (get @armed v)] (:original a) original)
        _ (when-not (fn? original) (fail (str (symbol v) " is not a function") "not a function"))
        ;; (as CIDER declines to: lispshell's own code and the REPL's run on these)
        _ (when (re-find #"^(clojure|lispshell|nrepl|cider)\." (str (ns-name (.ns v))))
            (fail (str (symbol v) " is Clojure's own (or lispshell's, or nREPL's): stepping it "
                       "would stop the code that serves you; step a function of yours")))
        _ (when (some #(.startsWith (.getName ^Class %) "clojure.lang.IFn$") (supers (class original)))
            (fail (str (symbol v) " has a primitive signature (^long, ^double): its callers "
                       "call it as such, which an instrumented function cannot be")
                  "a primitive signature"))
        [src text] (source-form v sources)
        e (binding [*ns* (.ns v)] (expand src))
        _ (when-not (and (seq? e) (= 'def (first e)) (>= (count e) 3) (symbol? (second e))
                         (= (name (second e)) (name (.sym v)))
                         (seq? (last e))
                         (= 'fn* (first (binding [*ns* (.ns v)] (expand (last e))))))
            (fail (str "the source of " (symbol v) " is not a defn of it (nor a def of an fn "
                       "form): " (one-line (pr-str src) 80))
                  "its source is not a defn"))
        ctx {:origin (originals src) :ids (atom []) :skipped (atom [])
             :text text :starts (line-starts text)}
        g (binding [*ns* (.ns v)]
            (let [code (walk ctx (last e))]
              (try (eval code)
                   (catch Throwable t
                     (swap! points #(apply dissoc % @(:ids ctx)))
                     (fail (str (symbol v) " could not be instrumented: "
                                (.getMessage (or (.getCause t) t)))
                           "it could not be instrumented")))))]
    (when (empty? @(:ids ctx))
      (fail (str (symbol v) " has no form to step through (its body is a value)")
            "nothing to step"))
    (disarm! v)
    (swap! armed assoc v {:original original :name (str (symbol v)) :ids @(:ids ctx)
                          :skipped @(:skipped ctx)})
    (binding [*arming* true]
      (alter-var-root v (constantly (stepped v g (str (symbol v)))))
      (add-watch v ::step (fn [_ v _ new]
                            ;; a redefinition: the new function stands (a breakpoint set or
                            ;; cleared meanwhile wraps or unwraps ours: not one)
                            (when-not (or *arming* (ours? new))
                              (swap! armed dissoc v)
                              (remove-watch v ::step)))))))

(defn prepare
  "`,step TEXT`: TEXT names a function, or is a call of one. Instrument that function from its
  source and arm it: its next call steps. Prints the var's name; throws with the reason.
  `sources`: \"ns/name\" -> the text of each defn evaluated in the session that the image was
  not sent yet (all are kept, for `,s` into another function)."
  [text sources]
  (swap! sources-kept merge sources)
  (let [form (try (binding [*read-eval* false] (read-string text))
                  (catch Throwable t (fail (str "does not read: " (.getMessage t)))))
        usage ",step (f ARGS) steps the call of the function f, ,step f steps its next call"
        sym (cond (symbol? form) form
                  (and (seq? form) (symbol? (first form))) (first form)
                  :else (fail usage))
        _ (when (special-symbol? sym) (fail (str sym " is a special form: " usage)))
        v (try (ns-resolve *ns* sym) (catch Throwable _ nil))
        _ (when-not (var? v) (fail (str sym " is not a function defined in " (ns-name *ns*))))
        _ (when (:macro (meta v)) (fail (str sym " is a macro: " usage)))]
    (arm! v @sources-kept)
    (println (str (symbol v)))))

(defn- into-call!
  "`,s` at a call of a function of the person's: arm it, so that the call steps inside it (as
  SBCL's step into does). The function armed, or [:not why] when it cannot be (nil: Clojure's
  own, or already armed: nothing to say)."
  [v]
  (when-not (get @armed v)
    (try (arm! v @sources-kept) v
         (catch clojure.lang.ExceptionInfo e
           (when-let [why (:why (ex-data e))] [:not why])))))

(defn- say-armed [v]
  (let [{:keys [ids skipped]} (get @armed v)]
    (println (str "; " (symbol v) ": " (count ids) " step point" (when (not= 1 (count ids)) "s")
                  (when (seq skipped)
                    (str "; not stopped at (it recurs): " (string/join ", " (take 2 skipped))
                         (when (> (count skipped) 2) ", ...")))))))

(defn armed-var
  "`,step f`: say that `v` steps at its next call; the var."
  [v]
  (say-armed v)
  (println (str "; its next call steps (,s into ,n next ,o out ,c continue)"))
  v)

(defn run
  "`,step (f ARGS)`: call `thunk` with `v` armed, and disarm it after, called or not. Every
  call of `v` the form makes is stepped, in one stepping: `(f (f 1))` steps the inner call,
  then the outer, and ,c runs on through both (SBCL's stepper steps the whole form)."
  [v thunk]
  (say-armed v)
  (let [s (volatile! {:mode :into :stack [] :calls [] :out *out* :held v})]
    (.set state s)
    (try (thunk)
         (finally
           (flush-said! s)
           (.remove state)
           (run! disarm! (:armed-here @s))
           (disarm! v)))))
