;; The look-up helpers (describe, symbol_value, macroexpand, apropos) for Clojure, loaded once
;; per image as lispshell.introspect. See lispshell/lisp/introspect.py for the rules they keep.
(ns lispshell.introspect
  (:require [clojure.edn :as edn] [clojure.string :as str] [clojure.repl] [clojure.pprint]))

;; The answer's header, bound by each call to a mark of its own (lispshell/lisp/introspect.py):
;; a thread left running (a future) sees only this root value, which lispshell never takes.
(def ^:dynamic *mark* "@@lispshell ")

(defn emit [status body]
  (print (str *mark* status " " (.codePointCount ^String body 0 (count body)) "\n" body *mark*))
  (flush)
  nil)

(defn type-name [x] (if (nil? x) "nil" (.getName (class x))))

(defn read-name [s]
  ;; *read-eval* false and EDN: no #=, no #java.Class[...] constructors, no user tag readers.
  (binding [*read-eval* false]
    (let [r (java.io.PushbackReader. (java.io.StringReader. s))
          x (edn/read {:eof ::eof
                       :default (fn [tag _] (throw (ex-info (str "tagged literal #" tag
                                                                 " is not a symbol") {})))}
                      r)
          more (slurp r)]
      (cond (= x ::eof) [:bad_name "empty name"]
            (not (symbol? x)) [:not_symbol (str (pr-str s) " does not read as a symbol")]
            (not (str/blank? (str/replace more "," ""))) [:not_symbol "more than one datum: give exactly one symbol"]
            :else [:ok x]))))

(defn target-ns [nsname cur]
  (if (str/blank? nsname) cur (find-ns (symbol nsname))))

(defn lookup [sym ns]
  ;; ns-map / ns-interns only: nothing is loaded, no class is initialised.
  (if-let [q (namespace sym)]
    (when-let [n (or (find-ns (symbol q)) (get (ns-aliases ns) (symbol q)))]
      (get (ns-interns n) (symbol (name sym))))
    (or (get (ns-map ns) sym)
        (when (str/includes? (name sym) ".")
          (try (Class/forName (name sym) false (.getContextClassLoader (Thread/currentThread)))
               (catch Throwable _ nil))))))

(defn with-name [s nsname cur f]
  (try
    (if-let [ns (target-ns nsname cur)]
      (let [[status x] (read-name s)]
        (if (not= status :ok)
          (emit (name status) x)
          (f x ns (lookup x ns))))
      (emit "unknown_package" (str "no namespace named " nsname)))
    (catch Throwable e (emit "bad_name" (or (.getMessage e) (str (class e)))))))

(defn describe-name [s nsname cur]
  (with-name s nsname cur
    (fn [sym ns v]
      (cond
        (var? v)
        (let [m (meta v)]
          (emit "ok" (str (pr-str v) (when (:macro m) " (macro)") "\n"
                          (when-let [a (:arglists m)] (str "arglists: " (pr-str a) "\n"))
                          (when-let [d (:doc m)] (str "doc: " d "\n"))
                          (if (bound? v) (str "value type: " (type-name @v) "\n") "unbound\n")
                          (when (:file m) (str "defined at: " (:file m) ":" (:line m) "\n")))))
        (class? v) (emit "ok" (str "class " (.getName ^Class v) "\n"))
        (special-symbol? sym) (emit "ok" (str sym " is a special form\n"))
        :else (emit "unknown" (str "nothing named " sym " in namespace " (ns-name ns)))))))

(defn value-of-name [s nsname cur]
  (with-name s nsname cur
    (fn [sym ns v]
      (cond
        (and (var? v) (bound? v))
        (let [value @v]  ; read before binding the printer variables (they may be asked for)
          (emit "ok" (str (type-name value) "\n"
                          (binding [*print-length* 50 *print-level* 6] (pr-str value)))))
        (var? v) (emit "unbound" (str (pr-str v) " is unbound"))
        (class? v) (emit "not_variable" (str sym " names a class, not a var"))
        (special-symbol? sym) (emit "not_variable" (str sym " is a special form, not a var"))
        :else (emit "unknown" (str "nothing named " sym " in namespace " (ns-name ns)))))))

(def never-expanded
  ;; Macros that define things (definline even evaluates its body while expanding) or build
  ;; classes while expanding: refused, not expanded. Every def... macro is refused too.
  #{"proxy" "gen-class" "gen-interface" "ns" "reify" "extend-type" "extend-protocol"
    "import" "refer-clojure" "with-loading-context"})

(defn refused? [op]
  (let [n (name op)]
    (or (str/starts-with? n "def") (contains? never-expanded n))))

;; A macro may resolve the symbols it is given (clojure.spec's `and` does), and resolving a class
;; name initialises the class: its static initialiser runs. A form naming a class that is not
;; initialised yet is not expanded. Loading a class without initialising it runs none of its
;; code; whether it is initialised is asked of sun.misc.Unsafe, and where that cannot be asked,
;; only the JDK's and Clojure's own classes pass.
(def ^:private unsafe
  (try (let [f (.getDeclaredField (Class/forName "sun.misc.Unsafe") "theUnsafe")]
         (.setAccessible f true)
         (.get f nil))
       (catch Throwable _ nil)))

(defn- class-not-initialised? [^String name]
  (when-let [c (try (Class/forName name false (clojure.lang.RT/baseLoader))
                    (catch Throwable _ nil))]
    (if unsafe
      (try (boolean (clojure.lang.Reflector/invokeInstanceMethod
                     unsafe "shouldBeInitialized" (object-array [c])))
           (catch Throwable _ true))
      (not (re-find #"^(java|javax|jdk|sun|clojure)\." name)))))

(defn uninitialised-class [form]
  (some (fn [x]
          (when (and (symbol? x) (nil? (namespace x)))
            (let [n (str/replace (name x) #"^\.+|\.+$" "")]
              (when (and (str/includes? n ".") (class-not-initialised? n)) n))))
        (tree-seq coll? seq form)))

(defn expand [s nsname cur]
  ;; One step of a macro the image defines, its arguments as data: the macro's own function
  ;; is called with the form, as macroexpand-1 would, after the checks below.
  (try
    (if-let [ns (target-ns nsname cur)]
      ;; no #= (read-eval off), no record/constructor syntax (refused when read-eval is off),
      ;; and no user tagged-literal readers (they are functions that could do anything)
      (binding [*read-eval* false *ns* ns *data-readers* {} *default-data-reader-fn* nil]
        (let [r (java.io.PushbackReader. (java.io.StringReader. s))
              form (read r)
              more (slurp r)
              op (when (seq? form) (first form))
              v (when (symbol? op) (lookup op ns))]
          (cond
            (not (str/blank? (str/replace more "," "")))
            (emit "bad_form" "more than one form: give exactly one")
            (not (seq? form)) (emit "refused" "give one macro form, (operator argument...)")
            (not (symbol? op)) (emit "refused" "the operator is not a symbol")
            (special-symbol? op) (emit "not_macro" (pr-str form))
            (not (var? v))
            (emit "refused" (str op " is not defined in " (ns-name ns)
                                 ": only macros the image defines are expanded"))
            (not (:macro (meta v))) (emit "not_macro" (pr-str form))
            (refused? (:name (meta v)))
            (emit "refused" (str op " defines things (or runs code when expanded): it is not expanded"))
            (uninitialised-class form)
            (emit "refused" (str "the form names the class " (uninitialised-class form)
                                 ", not initialised yet: expanding could initialise it, which "
                                 "runs its code; it is not expanded"))
            :else
            (let [e (apply @v form nil (rest form))]
              (emit "ok" (binding [*print-length* 200 *print-level* 30]
                           (with-out-str (clojure.pprint/pprint e))))))))
      (emit "unknown_package" (str "no namespace named " nsname)))
    (catch Throwable e (emit "error" (or (.getMessage e) (str (class e)))))))

(defn apropos* [pattern nsname cur]
  (try
    (let [found (sort-by str (clojure.repl/apropos pattern))
          found (if (str/blank? nsname) found (filter #(= (namespace %) nsname) found))
          n (count found)]
      (emit "ok" (str (str/join "\n" (take 100 found)) "\n"
                      (when (> n 100) (str "... and " (- n 100) " more\n")))))
    (catch Throwable e (emit "error" (or (.getMessage e) (str (class e)))))))

(defn arglist [s nsname cur]
  ;; For the REPL's toolbar: the var's :arglists on one line, then the first line of its doc.
  (with-name s nsname cur
    (fn [sym ns v]
      (let [m (when (var? v) (meta v))]
        (if-let [a (:arglists m)]
          (emit "ok" (str "(" sym " " (str/join " " (map pr-str a)) ")\n"
                          (first (str/split-lines (or (:doc m) ""))) ))
          (emit "unknown" (str sym " has no arglists")))))))

;; ,inspect: the person's own FORM (they typed it: it is evaluated), then its parts, one
;; "label<TAB>value" line each after a "type<TAB>value" header. An exception shows its
;; message, its ex-data entries and its cause.
(defn one-line [x]
  (let [s (if (instance? Throwable x)
            ;; its class and message: its printed map would fill the row with the whole trace
            (str (.getName (class x)) ": " (.getMessage ^Throwable x))
            (try (binding [*print-length* 30 *print-level* 4] (pr-str x))
                 (catch Throwable _ "#<error printing>")))
        s (if (> (count s) 2000) (str (subs s 0 2000) "...") s)]
    (str/replace s "\n" " ")))

(defn fn-parts
  "What CIDER's inspector shows of a function: its name, and from its var the arglists,
  documentation and source; then the values it closed over (the fn class's instance fields)."
  [f]
  (let [vname (clojure.lang.Compiler/demunge (.getName (class f)))   ; user/foo, user/foo/fn--12
        v (try (resolve (symbol vname)) (catch Throwable _ nil))
        m (when (var? v) (meta v))]
    (concat [["name" (symbol vname)]]
            (when m
              [["arglists" (:arglists m)]
               ["doc" (or (:doc m) '<none>)]
               ["source" (if (:file m) (str (:file m) ":" (:line m)) '<unknown>)]])
            (for [^java.lang.reflect.Field field (.getDeclaredFields (class f))
                  :when (not (java.lang.reflect.Modifier/isStatic (.getModifiers field)))
                  :when (try (.setAccessible field true) true (catch Exception _ false))]
              [(str "closed over " (clojure.lang.Compiler/demunge (.getName field)))
               (.get field f)]))))

(defn parts-of [x]
  (cond
    (fn? x) (fn-parts x)
    (instance? Throwable x)
    (concat [["message" (.getMessage ^Throwable x)]]
            (for [[k v] (ex-data x)] [(str "ex-data " (one-line k)) v])
            (when-let [c (.getCause ^Throwable x)] [["cause" c]]))
    (map? x) (for [[k v] (take 5000 x)] [(one-line k) v])
    (or (sequential? x) (set? x)) (map-indexed (fn [i v] [(str i) v]) (take 5000 x))
    (instance? clojure.lang.IDeref x) [["@" (if (and (instance? clojure.lang.IPending x)
                                                     (not (realized? x)))
                                               'pending @x)]]
    :else []))

(defonce shown-parts (atom []))   ; the parts the last table showed: ,inspect N opens part N
(defonce inspected (atom ()))     ; from the object ,inspect FORM showed to this one, newest first

(defn show-parts [x]
  (let [parts (vec (parts-of x))]
    (reset! shown-parts (mapv second parts))
    (emit "ok" (apply str (type-name x) "\t"
                      (if (instance? Throwable x) (.getMessage ^Throwable x) (one-line x)) "\n"
                      (for [[label v] parts] (str label "\t" (one-line v) "\n"))))))

(defn inspect-form [code nsname cur]
  (try
    (let [x (binding [*ns* cur] (load-string code))]
      (reset! inspected (list x))
      (show-parts x))
    (catch Throwable e (emit "error" (str (.getName (class e)) ": " (.getMessage e))))))

(defn inspect-part [index nsname cur]
  (let [n (try (Long/parseLong index) (catch Exception _ -1))
        parts @shown-parts]
    (if (< -1 n (count parts))
      (try (swap! inspected conj (nth parts n))
           (show-parts (nth parts n))
           (catch Throwable e (emit "error" (str (.getName (class e)) ": " (.getMessage e)))))
      (emit "error" (str "No part " index ": the last table has " (count parts))))))

(defn inspect-back [_ nsname cur]
  (if (next @inspected)
    (show-parts (first (swap! inspected rest)))
    (emit "error" "This is the object ,inspect FORM showed: there is none before it")))
