"""lispshell: a REPL in front of a live child Lisp, with an LLM at your side."""

__version__ = "0.1.0"
