;; lispshell's helpers in a Clojure image reached over nREPL (see lispshell/lisp/nrepl.py): the
;; `caught` hook nREPL calls with an eval's exception keeps its type, message and first frames,
;; keyed by the request's id, and `take-error` prints them for lispshell's next request;
;; `pr-bounded` prints values as the child's loop does.
;; Loaded once per image, into its own namespace; the person's namespaces get nothing.
(ns lispshell.nrepl)

(defonce ^:private errors (atom {}))

(defn- describe [^Throwable t]
  (apply list* (lispshell.errors/describe t)))   ; clojure-errors.clj, loaded first

(defn caught [^Throwable t]
  (let [msg (some-> (resolve 'nrepl.middleware.interruptible-eval/*msg*) deref)
        report (try (describe t) (catch Throwable _ (list (.getName (class t)) (str t))))]
    (swap! errors (fn [m] (assoc (if (> (count m) 100) {} m) (str (:id msg)) report)))))

(defn take-error [id]
  (let [report (get @errors id)]
    (swap! errors dissoc id)
    (print (apply str (interpose (char 31) report)))
    (flush)))

(defn pr-bounded
  "nREPL's print function for lispshell's requests: `pr`, bounded as the standard tools bound it
  unless the person chose otherwise, so an infinite lazy seq ends in \"...\" and a
  self-referencing atom at a depth, instead of printing until the quota. 200 levels, as the
  child's loop: they fit a thread's default stack twice over."
  [value ^java.io.Writer writer _options]
  (binding [*print-length* (or *print-length* 100000)
            *print-level* (or *print-level* 200)]
    (if *print-dup*
      (print-dup value writer)
      (print-method value writer))))

(defn history
  "The person's `*1` `*2` `*3` `*e` as a binding map, read from nREPL's session registry
  ({} if this nREPL has none): lispshell's quiet session evaluates its look-ups with them bound,
  so `,inspect` with no form and the model's `symbol_value *1` see the person's values."
  [sid]
  (let [b (some-> (find-ns 'nrepl.middleware.session) ns-interns (get 'sessions)
                  deref deref (get sid) deref)]
    (if (map? b)
      (select-keys b [#'*1 #'*2 #'*3 #'*e])
      {})))

(defn- flushing-in
  "`in`, flushing *out* before each read: a prompt the code printed without a newline
  (`(print \"Name? \")`) reaches the person before nREPL asks them for input (its own reader
  asks without flushing)."
  [^java.io.Reader in]
  (clojure.lang.LineNumberingPushbackReader.
   (proxy [java.io.Reader] []
     (read
       ([] (flush) (.read in))
       ([buf] (flush) (.read in ^chars buf 0 (alength ^chars buf)))
       ([buf off len] (flush) (.read in ^chars buf (int off) (int len))))
     (close [] (.close in)))))

(defn wrap-input
  "Give session `sid` (the person's, which lispshell cloned) a *in* that flushes first."
  [sid]
  (when-let [s (some-> (find-ns 'nrepl.middleware.session) ns-interns (get 'sessions)
                       deref deref (get sid))]
    (swap! s update #'*in* flushing-in)
    nil))
