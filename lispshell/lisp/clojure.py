"""Clojure 1.11 on the JVM: the bootstrap loop sent to `clojure.main` and what differs.

- Not /usr/bin/clojure: with no arguments Debian's wrapper runs the REPL under rlwrap, whose
  escape codes put readers out of step. The default command runs clojure.main directly.
- SIGINT kills a JVM unless someone handles it. The bootstrap installs a handler
  (sun.misc.Signal, run on the JVM's signal thread) that stops the thread running the eval
  with Thread.stop (still works on Java 17); the loop catches the ThreadDeath, reports
  "interrupt" and the image lives on with its definitions. The eval runs on the REPL's own
  thread, not a worker: a hand-off to another thread cost ~150 µs per eval here, and
  Thread.stop works on any thread. The handler only stops the thread while an eval runs.
- Requests are read from System/in with our own UTF-8 reader (System/in is then replaced by
  an empty stream, and *in* is bound to an empty reader during evals, so code that reads
  standard input sees end of file). Java counts characters in UTF-16 units, hence
  `code_length`.
"""
from __future__ import annotations

from lispshell.lisp.image import code as image_code

NAME = "clojure"
SYNTAX = "clojure"
DEFAULT_COMMAND = ["java", "-cp", "/usr/share/java/clojure.jar", "clojure.main"]
INTERRUPT_TYPE = "interrupt"


def code_length(text: str) -> int:
    """Length as Java's reader counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def prepare(code: str) -> str:
    return code


def bootstrap(nonce: str) -> str:
    """The loop (lispshell/lisp/image/clojure-loop.clj) is a procedure of the nonce: applied to it."""
    return "(" + image_code("clojure-loop.clj") + f' "{nonce}")\n'
