"""The seam between the REPL and the LLM side (owned by the LLM side; the REPL only calls it).

`make_llm(repl)` returns an object with:
    record_eval(code: str, result: EvalResult) -> None   # the person's eval, as a synthetic tool call
    async ask(text: str) -> None                          # one question; cancelled with task.cancel()
    commands: dict[str, tuple[str, Callable[[str], None]]] # extra `,name` commands: (help, handler(arg))
    toolbar() -> str                                      # extra toolbar text (e.g. "YOLO")
or None while no LLM side exists; the REPL then answers prose with a clear message.
"""
from __future__ import annotations


def make_llm(repl):
    return None
