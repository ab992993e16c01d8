;; lispshell's read-eval-print loop for Clojure: a function of the session's nonce, typed into
;; `clojure.main` once and called with it (see lispshell/lisp/clojure.py, and the frame format in
;; lispshell/lisp/session.py). Everything is local to one `let`: nothing is added to `user`.
(fn [nonce]
  (let [marker (str (char 30) nonce)
        in (java.io.BufferedReader. (java.io.InputStreamReader. System/in "UTF-8") 65536)
        fd-out (java.io.FileOutputStream. java.io.FileDescriptor/out)
        new-writer (fn [] (java.io.BufferedWriter. (java.io.OutputStreamWriter. fd-out "UTF-8") 65536))
        writer (volatile! (new-writer))
        running (atom nil)
        stopped-trace (atom nil)
        ;; Which request a SIGINT is for: lispshell writes its id to this file before each
        ;; one (lispshell/lisp/session.py). The JVM runs a signal's handler on a thread of its
        ;; own whenever a loaded machine gets to it: a late one must not stop the next eval,
        ;; and one that comes before this loop has read its request must not be lost (it
        ;; waits in `early` for the request to start).
        interrupt-file (some-> (System/getenv "LISPSHELL_INTERRUPT_FILE") java.io.File.)
        early (atom nil)
        ;; Breakpoints (clojure-debug.clj): the levels open (hits this loop serves on its own
        ;; thread), how forms are evaluated (with a hit's locals bound, at its level), whether
        ;; the request being served is the person's (a look-up is never stopped), and the id
        ;; of the request the answer being written ends.
        depth (volatile! 0)
        level-eval (volatile! eval)
        serving-history (volatile! true)
        id (volatile! "0")
        lock (Object.)
        none (Object.)
        ;; An answer's segments are gathered here and written with one call when it is
        ;; complete: a thread the person left running may print into the same writer (futures
        ;; convey *out*), and Writer.write is atomic only call by call. Its text then lands
        ;; before or after the frame, as output, never inside a value.
        frame (StringBuilder.)
        seg (fn [tag text] (.append frame ^String marker) (.append frame (char tag))
              (.append frame (str text)))
        ;; A value's printed form, built in the heap (the frame is written in one call), so
        ;; bounded there: printing stops at value-limit characters and says so. Nested
        ;; infinite seqs, (repeat (range)) say, print 100,000 x 100,000 elements within
        ;; *print-length* and filled the heap (OutOfMemoryError after a minute).
        value-limit (* 16 1024 1024)
        enough (Error. "lispshell: the printed value reached its limit")
        bounded-pr (fn [v]
                     (let [sb (StringBuilder.)
                           put (fn [^String s]
                                 (let [room (- value-limit (.length sb))]
                                   (when (> (.length s) room)
                                     (.append sb s 0 (int (max room 0)))
                                     (throw enough))
                                   (.append sb s)))
                           w (proxy [java.io.Writer] []
                               (write
                                 ([x] (put (cond (string? x) x
                                                 (instance? Integer x) (str (char (int x)))
                                                 :else (String. ^chars x))))
                                 ([x off len]
                                  (put (if (string? x)
                                         (subs x off (+ off len))
                                         (String. ^chars x (int off) (int len))))))
                               (flush [])
                               (close []))
                           cut (try (binding [*out* w]
                                      (try (pr v)
                                           ;; Each level costs stack (a self-referencing
                                           ;; atom's about 2 KiB, more before the JIT has
                                           ;; compiled the printer), and a deep value or a
                                           ;; *print-level* the person set may not fit in
                                           ;; the thread's stack: print it again, shallower.
                                           (catch StackOverflowError _
                                             (.setLength sb 0)
                                             (binding [*print-level* (min (or *print-level* 50) 50)]
                                               (pr v)))))
                                    false
                                    (catch Throwable t
                                      (if (identical? t enough) true (throw t))))]
                       (cond-> (str sb)
                         cut (str "... [printing stopped at " value-limit " characters]"))))
        frame-lines (fn [elements]
                      (->> elements
                           (map (fn [^StackTraceElement e]
                                  (str (clojure.lang.Compiler/demunge (.getClassName e)) "."
                                       (.getMethodName e) " (" (.getFileName e) ":"
                                       (.getLineNumber e) ")")))
                           (take-while (fn [^String s] (not (.startsWith s "clojure.lang.Compiler"))))
                           (take 12)))
        read-request (fn [replies]
                       ;; [kind text id]; the header is <kind><length> <id>. Blank lines are
                       ;; skipped; end of input ends the JVM. Replies to a read of standard
                       ;; input (i, x) are taken only with `replies` (ask-input): one that
                       ;; arrives when no read waits raced with an interrupt.
                       (loop []
                         (let [line (.readLine in)]
                           (cond (nil? line) (System/exit 0)
                                 (= "" line) (recur)
                                 :else
                                 (let [space (.indexOf line " ")
                                       n (Long/parseLong (subs line 1 space))
                                       buf (char-array n)]
                                   (loop [off 0]
                                     (when (< off n)
                                       (let [k (.read in buf off (- n off))]
                                         (when (neg? k) (System/exit 0))
                                         (recur (+ off k)))))
                                   (if (or replies (not (#{\i \x} (.charAt line 0))))
                                     [(.charAt line 0) (String. buf) (subs line (inc space))]
                                     (recur)))))))
        ;; Standard input (lispshell/lisp/session.py: the I tag and its reply): a line from
        ;; whoever evaluates, or nil at end of file; an interrupt reply (Ctrl-C at the
        ;; person's input line) stops the reading code as Ctrl-C's signal does.
        ask-input (fn [^java.io.Writer w]
                    (.flush w)
                    (.flush System/out)
                    (.write w (str marker "I"))
                    (.flush w)
                    (let [[kind text] (read-request true)]
                      (case kind
                        \i (when-not (= "" text) text)
                        \x (do (reset! stopped-trace (.getStackTrace (Thread/currentThread)))
                               (throw (ThreadDeath.))))))
        ;; The eval's *in*: asks for a line when the last one is used up, and again after
        ;; end of file, as a terminal does after Ctrl-D.
        terminal-in (fn [w]
                      (let [pending (volatile! "")]
                        (proxy [java.io.Reader] []
                          (read
                            ([] (let [a (char-array 1)]
                                  (if (neg? (.read ^java.io.Reader this a 0 1)) -1 (int (aget a 0)))))
                            ([buf] (.read ^java.io.Reader this ^chars buf 0 (alength ^chars buf)))
                            ([buf off len]
                             (when (= "" @pending)
                               (vreset! pending (ask-input w)))
                             (let [^String s @pending]
                               (if (nil? s)
                                 (do (vreset! pending "") -1)
                                 (let [n (min (int len) (.length s))]
                                   (.getChars s 0 n ^chars buf (int off))
                                   (vreset! pending (subs s n))
                                   n)))))
                          (close []))))
        ;; ,top at a breakpoint's level: thrown through every level to the top
        top-abort (Error. "lispshell: left every level")
        run-job (fn [code history]
                  ;; Read and eval each form of code, print the last value.
                  ;; nil, or the Throwable that ended it.
                  (let [^java.io.Writer w @writer]
                    (binding [*out* w *err* w
                              *in* (clojure.lang.LineNumberingPushbackReader. (terminal-in w))]
                      (try
                        (Thread/interrupted)  ; Thread.stop also sets the flag: clear it
                        (locking lock
                          (reset! running (Thread/currentThread))
                          (when (and @early (= @early @id))     ; interrupted before it ran
                            (reset! early nil)
                            (reset! stopped-trace (.getStackTrace (Thread/currentThread)))
                            (throw (ThreadDeath.))))
                        (let [rdr (clojure.lang.LineNumberingPushbackReader.
                                   ;; a small buffer: the default 8 KiB costs more than a tiny eval
                                   (java.io.StringReader. code) (int (max 1 (min 8192 (count code)))))
                              eof (Object.)
                              v (loop [v none]
                                  (let [form (read {:eof eof :read-cond :allow} rdr)]
                                    (if (identical? form eof)
                                      v
                                      (let [v (@level-eval form)]
                                        (when history (set! *3 *2) (set! *2 *1) (set! *1 v))
                                        (recur v)))))]
                          (when-not (identical? v none)
                            ;; Bounded as the standard tools bound it: an infinite lazy seq
                            ;; ends in "...", a self-referencing atom at a depth, within a
                            ;; second, instead of printing forever. 200 levels fit the JVM's
                            ;; default 1 MiB stack twice over (an atom overflowed it at 465).
                            (seg \V (binding [*print-length* (or *print-length* 100000)
                                                 *print-level* (or *print-level* 200)]
                                         (bounded-pr v))))
                          (locking lock (reset! running nil))
                          nil)
                        (catch Throwable t
                          (locking lock (reset! running nil))
                          (when (and history (not (instance? ThreadDeath t))
                                     (not (lispshell.debug/abort? t)) (not (identical? t top-abort)))
                            (set! *e t))
                          t)
                        (finally
                          ;; Java code may print to System/out; ours is flushed with the frame.
                          (.flush System/out)
                          (.flush System/err))))))
        ;; clojure-errors.clj, loaded before this loop by the bootstrap
        describe (fn [^Throwable t]
                   ;; The stop can land inside code that wraps what it throws (a print):
                   ;; an interrupt all the same.
                   (cond (some #(instance? ThreadDeath %)
                               (take-while some? (iterate #(.getCause ^Throwable %) t)))
                         ["interrupt" "Interrupted" (frame-lines @stopped-trace)]
                         (or (lispshell.debug/abort? t) (identical? t top-abort))
                         ["LISPSHELL-ABORTED" (if (pos? @depth)
                                                (str "Back at debug level " @depth ".")
                                                "Back at the top level.")
                          []]
                         :else (lispshell.errors/describe t)))
        say-failure (fn [r]
                      (when r
                        (when (instance? ThreadDeath r)
                          (.setLength frame 0)            ; it may hold half a value
                          (vreset! writer (new-writer)))  ; the old one may be mid-write
                        (let [[etype msg frames] (try (describe r)
                                                      (catch Throwable e ["error" (str r) []]))]
                          (seg \E etype)
                          (seg \M msg)
                          (doseq [f frames] (seg \B f)))))
        answer-eval (fn [code history]
                      (say-failure (run-job code history)))
        ;; Word by word, as SLIME's completion does (m-v: map-vals): each hyphen of the
        ;; prefix skips to the name's next one (sbcl-loop.lisp's compound-match-p).
        compound-match? (fn [^String prefix ^String name]
                          (loop [i 0 at 0]
                            (cond (= i (.length prefix)) true
                                  (>= at (.length name)) false
                                  (= \- (.charAt prefix i))
                                  (let [next (.indexOf name "-" (int at))]
                                    (and (>= next 0) (recur (inc i) (inc next))))
                                  (= (.charAt prefix i) (.charAt name at)) (recur (inc i) (inc at))
                                  :else false)))
        members (fn [^Class c static?]
                  (concat (for [^java.lang.reflect.Method m (.getMethods c)
                                :when (= static? (java.lang.reflect.Modifier/isStatic (.getModifiers m)))]
                            (.getName m))
                          (when static?
                            (for [^java.lang.reflect.Field f (.getFields c)
                                  :when (java.lang.reflect.Modifier/isStatic (.getModifiers f))]
                              (.getName f)))))
        completions (fn [^String prefix]
                      (let [ns *ns*
                            slash (.indexOf prefix "/")
                            cands (cond
                                    ;; :ke: the keywords interned so far (Clojure keeps them in
                                    ;; Keyword's private table, as CIDER's completion reads it)
                                    (.startsWith prefix ":")
                                    (let [table (doto (.getDeclaredField clojure.lang.Keyword "table")
                                                  (.setAccessible true))]
                                      (map #(str ":" %) (keys (.get table nil))))
                                    ;; .toUpp: instance methods of the classes the namespace imports
                                    (.startsWith prefix ".")
                                    (for [c (distinct (vals (ns-imports ns))) m (members c false)]
                                      (str "." m))
                                    (pos? slash)
                                    (let [a (symbol (subs prefix 0 slash))
                                          target (or ((ns-aliases ns) a) (find-ns a))
                                          resolved (when-not target
                                                     (try (ns-resolve ns a) (catch Exception _ nil)))]
                                      (cond target (map #(str a "/" %) (keys (ns-publics target)))
                                            ;; Math/fl: a class's static methods and fields
                                            (class? resolved) (map #(str a "/" %) (members resolved true))))
                                    :else
                                    (concat (map str (keys (ns-map ns)))
                                            (map #(str % "/") (keys (ns-aliases ns)))
                                            (map (comp str ns-name) (all-ns))))
                            found (distinct (filter #(compound-match? prefix %) cands))
                            plain? #(.startsWith ^String % prefix)]
                        (take 500 (concat (sort (filter plain? found))
                                          (sort (remove plain? found))))))
        end-answer (fn []
                     ;; The end of every answer: the namespace, the levels open, the id.
                     (seg \P (ns-name *ns*))
                     (when (pos? @depth) (seg \L @depth))
                     (seg \D (str @id "\n"))
                     (let [^java.io.Writer w @writer]
                       (.write w (.toString frame))
                       (.setLength frame 0)
                       (.flush w)))
        ;; A breakpoint hit on this thread (clojure-debug.clj): the request that ran into it
        ;; is answered with the call (LISPSHELL-BREAK, its arguments by name), its restarts
        ;; and the level, then requests are served inside the call until one decides it, as
        ;; SBCL's loop serves a level: E evaluates with the arguments bound, F asks about the
        ;; frames, I 0 runs the call, I 1 FORM returns FORM's value, A (or I 2) leaves it, T
        ;; leaves every level. A step (clojure-step.clj) is served the same way: its message
        ;; the form (LISPSHELL-STEP), its locals those in scope there, its restarts its own.
        serve-hit (fn [hit]
                    (if-not @serving-history
                      [:run]
                      (let [outer (if (pos? @depth)
                                    (str "Return to debug level " @depth ".")
                                    "Return to lispshell's top level.")
                            saved-eval @level-eval
                            saved-running @running
                            locals (:locals hit)]
                        (vswap! depth inc)
                        (locking lock (reset! running nil))   ; idle at the level: Ctrl-C ignored
                        (try
                          (seg \E (lispshell.debug/hit-type hit))
                          (seg \M (lispshell.debug/hit-message hit))
                          (doseq [r (lispshell.debug/restarts hit outer)] (seg \R r))
                          (end-answer)
                          (vreset! level-eval (fn [form] (lispshell.debug/eval-with locals form)))
                          (loop []
                            (let [[kind ^String text request-id] (read-request false)
                                  refuse (fn [etype msg] (seg \E etype) (seg \M msg) nil)
                                  space (.indexOf text " ")
                                  head (if (neg? space) text (subs text 0 space))
                                  tail (if (neg? space) "" (subs text (inc space)))
                                  number (try (Long/parseLong head) (catch Exception _ nil))]
                              (vreset! id request-id)
                              (let [decision
                                    (case kind
                                      (\E \N)
                                      (let [r (do (vreset! serving-history (= kind \E))
                                                  (try (run-job text (= kind \E))
                                                       (finally (vreset! serving-history true))))]
                                        (when (identical? r top-abort) (throw r))
                                        (say-failure r)
                                        nil)
                                      \C (do (doseq [c (try (completions text) (catch Throwable _ nil))]
                                               (seg \V c))
                                             nil)
                                      \F (let [tspace (.indexOf tail " ")
                                               n (try (Long/parseLong (if (neg? tspace) tail (subs tail 0 tspace)))
                                                      (catch Exception _ nil))
                                               op (if (= head "bt") "bt" head)]
                                           (if (= op "eval")
                                             (if (= 0 n)
                                               (let [r (run-job (subs tail (inc tspace)) false)]
                                                 (when (identical? r top-abort) (throw r))
                                                 (say-failure r))
                                               (refuse "LISPSHELL-NO-SUCH-FRAME"
                                                       "only frame 0, the call, has locals on Clojure"))
                                             (let [[status values] (lispshell.debug/frame-values
                                                                    hit op (if (= op "bt") nil n))]
                                               (if (= status :ok)
                                                 (doseq [v values] (seg \V v))
                                                 (refuse "LISPSHELL-NO-SUCH-FRAME" values))))
                                           nil)
                                      \I (case (lispshell.debug/action hit number)
                                           nil (refuse "LISPSHELL-NO-SUCH-RESTART"
                                                       (str "choose a restart from 0 to "
                                                            (dec (count (lispshell.debug/restarts hit outer)))))
                                           ;; FORM's value, evaluated with the locals bound
                                           :return (try [:return (lispshell.debug/eval-with
                                                                  locals (read-string (str "(do " tail "\n)")))]
                                                        (catch Throwable t (say-failure t) nil))
                                           :abort (throw (lispshell.debug/abort-error))
                                           [(lispshell.debug/action hit number)])
                                      \A (throw (lispshell.debug/abort-error))
                                      \T (throw top-abort)
                                      \Q (System/exit 0)
                                      (refuse "LISPSHELL-NO-SUCH-REQUEST" (str "unknown request " kind)))]
                                (or decision
                                    (do (when (= kind \I)       ; still on offer: say so again
                                          (doseq [r (lispshell.debug/restarts hit outer)] (seg \R r)))
                                        (end-answer)
                                        (recur))))))
                          (finally
                            (vswap! depth dec)
                            (vreset! level-eval saved-eval)
                            (locking lock (reset! running saved-running)))))))]
    (System/setIn (java.io.ByteArrayInputStream. (byte-array 0)))
    (sun.misc.Signal/handle
     (sun.misc.Signal. "INT")
     (reify sun.misc.SignalHandler
       (handle [_ _]
         ;; nil: unnamed (no file: the first interrupt could not be written), for what runs
         (let [wanted (when interrupt-file
                        (try (slurp interrupt-file) (catch Exception _ nil)))]
           (locking lock
             (if-let [^Thread t @running]
               (when (or (nil? wanted) (= wanted @id))
                 (reset! stopped-trace (.getStackTrace t))
                 (.stop t))
               (reset! early wanted)))))))
    (reset! lispshell.debug/level-hook [(Thread/currentThread) serve-hit])
    (do
      ;; Each answer ends with the namespace and the id of its request, so a stray answer can
      ;; never be taken for the next one.
      (loop []
        (try
          (end-answer)
          (let [[kind text request-id] (read-request false)]
            (vreset! id request-id)
            (vreset! serving-history (not= kind \N))
            (case kind
              \E (answer-eval text true)
              \N (answer-eval text false)   ; N: an eval that leaves *1 *2 *3 *e alone
              (\F \I \A \T) (do (seg \E "LISPSHELL-NO-LEVEL")
                                 (seg \M "no breakpoint is waiting: no debug level is open"))
              \C (doseq [c (try (completions text) (catch Throwable _ nil))]
                   (seg \V c))
              \Q (System/exit 0)))
          (catch java.io.IOException _
            ;; The channel to lispshell failed (killed, its pty closed): nobody will read
            ;; another answer, and trying again would spin here for ever.
            (System/exit 1))
          (catch Throwable t
            (try
              (seg \E "lispshell-protocol-error")
              (seg \M t)
              (catch Throwable _ nil))))
        (recur)))))
