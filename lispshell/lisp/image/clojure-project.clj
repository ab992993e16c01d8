;; lispshell's project helpers for Clojure: load a file with its compiler errors and
;; warnings, find definitions, the source files to scan for callers, and a namespace's public
;; vars. Defined once per image as the namespace lispshell.project (see
;; lispshell/tools/project_tools.py).
;;
;; Every entry point takes strings and answers one string: JSON, ASCII only. Names are never
;; read or resolved (resolving can load and initialise a class): they are split at the `/`
;; and looked up in ns-map / ns-interns / ns-aliases.

(ns lispshell.project
  (:refer-clojure :exclude [load-file])
  (:require [clojure.java.io :as io]
            [clojure.string :as str]))

(defn- json-string [^String s ^StringBuilder out]
  (.append out \")
  (doseq [ch s]
    (let [code (int ch)]
      (cond (= ch \") (.append out "\\\"")
            (= ch \\) (.append out "\\\\")
            (or (< code 32) (> code 126)) (.append out (format "\\u%04x" code))
            :else (.append out ch))))
  (.append out \"))

(defn- json-write [x ^StringBuilder out]
  (cond (string? x) (json-string x out)
        (integer? x) (.append out (str x))
        (true? x) (.append out "true")
        (false? x) (.append out "false")
        (nil? x) (.append out "null")
        (map? x) (do (.append out "{")
                     (doseq [[i [k v]] (map-indexed vector x)]
                       (when (pos? i) (.append out ","))
                       (json-string (name k) out)
                       (.append out ":")
                       (json-write v out))
                     (.append out "}"))
        (sequential? x) (do (.append out "[")
                            (doseq [[i v] (map-indexed vector x)]
                              (when (pos? i) (.append out ","))
                              (json-write v out))
                            (.append out "]"))
        :else (json-string (str x) out)))

(defn- json [x]
  (let [out (StringBuilder.)] (json-write x out) (str out)))

(defmacro ^:private answering [& body]
  `(try ~@body
        (catch Throwable e#
          (json {:error (or (ex-message e#) (str (class e#)))}))))

;; ------------------------------------------------------------------------------ names

(defn- find-ns* [ns-text]
  (if (str/blank? ns-text)
    *ns*
    (or (find-ns (symbol ns-text))
        (throw (ex-info (str "No namespace named " ns-text ".") {})))))

(defn- lookup
  "The var NAME names, seen from the namespace NS-TEXT (default: the current one)."
  [name ns-text]
  (let [home (find-ns* ns-text)
        slash (.lastIndexOf ^String name "/")
        [ns-part sym-part] (if (pos? slash)
                             [(subs name 0 slash) (subs name (inc slash))]
                             [nil name])
        v (if ns-part
            (when-let [ns (or (get (ns-aliases home) (symbol ns-part)) (find-ns (symbol ns-part)))]
              (get (ns-interns ns) (symbol sym-part)))
            (get (ns-map home) (symbol sym-part)))]
    (cond (var? v) v
          (class? v) (throw (ex-info (str name " names the class " (.getName ^Class v)
                                          ", not a var.") {::class v}))
          :else (throw (ex-info (str "No var named " name " in " (ns-name home)
                                     " (nothing was interned).") {})))))

(defn- on-disk
  "The absolute path of a source file named as in a var's :file, or nil (in a jar, or typed
  at a REPL)."
  [file]
  (when (and (string? file) (not= file "NO_SOURCE_PATH"))
    (let [f (io/file file)]
      (if (.isAbsolute f)
        (when (.exists f) (.getPath f))
        (when-let [url (io/resource file)]
          (when (= "file" (.getProtocol url))
            (.getPath (io/file (.toURI url)))))))))

(defn- kind-of [v]
  (let [m (meta v)]
    (cond (:macro m) "macro"
          (:protocol m) "protocol-method"
          (and (map? @v) (:on-interface @v)) "protocol"
          (instance? clojure.lang.MultiFn @v) "multimethod"
          (fn? @v) "function"
          :else "variable")))

(defn- qualified [v]
  (str (ns-name (:ns (meta v))) "/" (:name (meta v))))

(defn- class-definition
  "A defrecord's or deftype's class: where its `->Name` constructor was defined (the class
  itself carries no source location), or nil for any other class."
  [^Class c]
  (let [cname (.getName c)
        dot (.lastIndexOf cname ".")
        home (when (pos? dot) (find-ns (symbol (str/replace (subs cname 0 dot) "_" "-"))))
        ctor (when home (get (ns-interns home) (symbol (str "->" (subs cname (inc dot))))))
        m (meta ctor)]
    (when (:line m)
      (let [path (on-disk (:file m))]
        {:kind (if (.isAssignableFrom clojure.lang.IRecord c) "record" "type") :name cname
         :file (or path (:file m)) :line (:line m) :column (or (:column m) 1)
         :in_jar (and (nil? path) (some? (:file m)))}))))

(defn definitions [name ns-text]
  (answering
   (let [v (try (lookup name ns-text)
                (catch clojure.lang.ExceptionInfo e
                  (let [c (::class (ex-data e))]
                    (if-let [d (and c (class-definition c))] d (throw e)))))]
     (if (map? v)
       (json {:symbol (:name v) :definitions [v]})
       (let [m (meta v)
             ;; A protocol's method has no location of its own: the protocol's is where it is.
             at (if (and (not (:line m)) (:protocol m)) (meta (:protocol m)) m)
             path (on-disk (:file at))]
         (json {:symbol (qualified v)
                :definitions (if (:line at)
                               [{:kind (kind-of v) :name (qualified v)
                                 :file (or path (:file at))
                                 :line (:line at) :column (or (:column at) 1)
                                 :in_jar (and (nil? path) (some? (:file at)))}]
                               [])}))))))

(defn who [relation name ns-text]
  (answering
   (let [v (lookup name ns-text)
         files (->> (all-ns)
                    (mapcat (fn [ns] (map (comp :file meta) (vals (ns-interns ns)))))
                    (keep on-disk)
                    distinct
                    sort)]
     (json {:symbol (qualified v) :relation relation
            :names [(str (:name (meta v))) (qualified v)]
            :scan (vec files)
            :how "Clojure keeps no cross-reference table: the loaded namespaces' source files were read"}))))

(defn- first-line [s]
  (if (string? s) (first (str/split-lines s)) ""))

(defn package-names [ns-text]
  (answering
   (let [ns (find-ns* ns-text)
         rows (for [[sym v] (sort-by key (ns-publics ns))]
                {:name (str sym) :kind (kind-of v)
                 :arglist (if-let [a (:arglists (meta v))] (pr-str a) "")
                 :doc (or (first-line (:doc (meta v))) "")})]
     (json {:package (str (ns-name ns)) :exported true
            :names (vec (take 500 rows)) :total (count rows)}))))

;; ---------------------------------------------------------------------------- loading

(defn load-file [path]
  (let [err (java.io.StringWriter.)
        result (binding [*err* err]
                 (try (clojure.core/load-file path)
                      {:finished true}
                      (catch Throwable e
                        (let [data (ex-data e)
                              cause (or (ex-cause e) e)]
                          {:finished false
                           :error (str (.getSimpleName (class cause)) ": " (ex-message cause))
                           :notes (if (:clojure.error/line data)
                                    [{:severity "error"
                                      :message (str (ex-message cause))
                                      :file path
                                      :line (:clojure.error/line data)
                                      :column (or (:clojure.error/column data) 1)}]
                                    [])}))))]
    (json (merge {:error nil :notes []} result
                 {:warnings (str err) :package (str (ns-name *ns*))}))))
