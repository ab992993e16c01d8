"""Showing the model's answer in the terminal while it streams.

A growing `rich.Live(Markdown(...))` flickers and overflows the screen, so: each finished line
is committed to the scrollback at once (rendered as Markdown); a fenced code block is held
until its closing fence and then printed highlighted; only the unfinished tail (the current
line, and the last few lines of an open code block) lives in a small transient `Live`.

Tool calls are one compact line each (`eval (+ 5 7) → 12`); `,tools on` shows full arguments
and results. While the turn runs, the REPL's status line (see lispshell/repl/render.py) says what
it waits for (`thinking`, or the tool call now running), the time since the question and the
output tokens so far; an eval that runs without asking (YOLO) is shown, whole, before it runs.
"""
from __future__ import annotations

import json
import re
import time
from contextlib import nullcontext

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from lispshell.llm.agent import Display
from lispshell.show import visible, visible_code

def _syntax_of(lisp: str | None) -> str | None:
    from lispshell.lisp.dialects import get_dialect
    try:
        return get_dialect(lisp or "").syntax
    except ValueError:
        return None


LIVE_LINES = 6  # lines of an open code block kept visible while it streams
LEXERS = {"lisp": "common-lisp", "cl": "common-lisp", "common-lisp": "common-lisp",
          "scheme": "scheme", "guile": "scheme", "clojure": "clojure", "clj": "clojure",
          "elisp": "emacs-lisp", "": None}


def _one_line(text: str, width: int, code: bool = False) -> str:
    # ASCII blanks only: str.split() would fold a no-break space into a plain one, and the
    # line would show `(when nil ...)` where SBCL reads one symbol.
    text = " ".join(t for t in re.split(r"[ \t\n\r\f\v]+", str(text)) if t)
    text = visible_code(text) if code else visible(text)
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def summarize(name: str, args: dict, result: dict, width: int = 60) -> tuple[str, str, bool]:
    """(call, outcome, ok) for the compact line: `eval (+ 5 7)` / `12`."""
    main = next((v for k, v in args.items() if isinstance(v, str)), "") if args else ""
    main = result.get("ran") or main      # the person edited the model's code: show theirs
    call = f"{name} {_one_line(main, width, code=True)}".rstrip()
    ok = bool(result.get("ok"))
    if not ok:
        err = result.get("error") or {}
        code = err.get("code", "")
        msg = err.get("message", "")
        if code == "DECLINED":
            return call, "declined" + (f" ({_one_line(msg.split('Reason:', 1)[1], 40)})"
                                       if "Reason:" in msg else ""), False
        return call, _one_line(f"{err.get('type') or code}: {msg}", width), False
    if name == "eval":
        if "values" in result:
            out = " ".join(result["values"])
        elif result.get("output"):
            out = "output: " + result["output"]
        else:
            out = "; no values"
        if result.get("edited"):
            out += "  (edited by the person)"
        return call, _one_line(out, width), True
    for key in ("description", "value", "expansion"):
        if key in result:
            return call, _one_line(result[key].strip().split("\n")[0], width), True
    if "symbols" in result:
        return call, f"{len(result['symbols'])} symbol(s)", True
    rest = {k: v for k, v in result.items() if k != "ok"}
    return call, _one_line(json.dumps(rest, ensure_ascii=False), width), True


class RichDisplay(Display):
    def __init__(self, console: Console, code_lexer: str = "common-lisp", renderer=None,
                 where=lambda: ("", "")):
        super().__init__(record=False)
        self.console = console
        self.code_lexer = code_lexer
        self.code_theme = "ansi_dark"     # rich Syntax theme (the REPL's [repl] style sets it)
        self.renderer = renderer          # the REPL's Renderer (its status line), or None
        self.where = where                # () -> (lisp, package) the model's evals run in
        self._buf = ""
        self._fence: str | None = None   # the language of the open code block, if any
        self._code: list[str] = []
        self._live = None
        self._started = 0.0               # the turn's start (monotonic)
        self._doing = "thinking"
        self._tokens = 0                  # output tokens of finished requests
        self._streamed = 0                # characters of the request streaming now
        self._holds: dict[str, object] = {}   # why the status line is held -> its context

    # -- progress (the status line)
    def turn(self, running: bool) -> None:
        if self.renderer is None:
            return
        if running:
            self._started, self._tokens, self._streamed = time.monotonic(), 0, 0
            self._doing = "thinking"
            self.renderer.status(self.status_text)
        else:
            self._stop_live()
            for why in list(self._holds):
                self._release(why)
            self.renderer.status(None)

    def waiting(self, what: str) -> None:
        self._doing = what

    def tokens(self, output: int) -> None:
        self._tokens, self._streamed = output, 0

    def status_text(self) -> str:
        tokens = self._tokens + self._streamed // 4     # about 4 characters a token
        return (f"{self._doing} · {time.monotonic() - self._started:.1f} s · "
                f"{'~' if self._streamed else ''}{tokens:,} tokens · Ctrl-C stops")

    def _hold(self, why: str) -> None:
        if self.renderer is not None and why not in self._holds:
            hold = self.renderer.status_held()
            hold.__enter__()
            self._holds[why] = hold

    def _release(self, why: str) -> None:
        hold = self._holds.pop(why, None)
        if hold is not None:
            hold.__exit__(None, None, None)

    def _quiet(self):
        """Printing: erase the status line first, and keep it away meanwhile."""
        return self.renderer.status_held() if self.renderer is not None else nullcontext()

    def tool_start(self, name: str, args: dict, asks: bool) -> None:
        super().tool_start(name, args, asks)
        self._stop_live()
        width = max(20, min(100, self.console.width - 40))
        self._doing = summarize(name, args, {"ok": True}, width)[0]
        if asks:
            self._hold("question")        # the gate's question owns the screen
        elif name == "eval" and isinstance(args.get("code"), str):
            lisp, package = self.where()
            where = f" in {lisp} {package}".rstrip() if lisp else ""
            with self._quiet():
                self.console.print(Text(f"── the model evaluates (YOLO){where} ──",
                                        style="bold magenta"))
                self.console.print(Syntax(visible_code(args["code"], _syntax_of(lisp)),
                                          LEXERS.get(lisp, None) or self.code_lexer,
                                          theme=self.code_theme, background_color="default",
                                          word_wrap=True))

    # -- streaming text
    def text(self, delta: str) -> None:
        super().text(delta)
        self._streamed += len(delta)
        self._buf += delta
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self._line(line)
        self._update_live()

    def end_text(self) -> None:
        super().end_text()
        if self._buf:
            self._line(self._buf)
            self._buf = ""
        if self._fence is not None:  # an unclosed block is still shown, highlighted
            self._print_code()
        self._stop_live()

    def _line(self, line: str) -> None:
        stripped = line.strip()
        if self._fence is not None:
            if stripped.startswith("```"):
                self._print_code()
            else:
                self._code.append(line)
            return
        if stripped.startswith("```"):
            self._fence = stripped[3:].strip().lower()
            self._code = []
            return
        # No OSC 8 hyperlinks: a link's text could name sbcl.org while it opens another
        # address; without them rich writes the real target after the text.
        self._print(Markdown(visible(line), hyperlinks=False) if stripped else Text(""))

    def _print_code(self) -> None:
        lexer = LEXERS.get(self._fence or "", self._fence) or self.code_lexer
        code = visible("\n".join(self._code))
        self._fence, self._code = None, []
        try:
            self._print(Syntax(code, lexer, theme=self.code_theme, background_color="default",
                               word_wrap=True))
        except Exception:
            self._print(Text(code))

    # -- the live tail
    def _tail(self):
        parts = []
        if self._fence is not None and self._code:
            parts.append(Text(visible("\n".join(self._code[-LIVE_LINES:])), style="dim"))
        if self._buf:
            parts.append(Text(visible(self._buf)))
        if self.renderer is not None and self._started:
            parts.append(Text(self.status_text(), style="dim"))
        return Group(*parts)

    def _update_live(self) -> None:
        if not self.console.is_terminal:
            return
        if self._live is None:
            from rich.live import Live

            self._hold("live")

            self._live = Live(self._tail(), console=self.console, transient=True,
                              auto_refresh=False, vertical_overflow="crop")
            self._live.start()
        self._live.update(self._tail(), refresh=True)

    def _stop_live(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            try:
                live.update(Text(""), refresh=True)
                live.stop()
            except Exception:
                pass
        self._release("live")

    def _print(self, renderable) -> None:
        if self._live is not None:
            self._live.console.print(renderable)  # printed above the live tail
        else:
            with self._quiet():
                self.console.print(renderable)

    # -- tools and notices
    def tool(self, name: str, args: dict, result: dict) -> None:
        super().tool(name, args, result)
        self._stop_live()
        self._release("question")
        self._doing = "thinking"
        width = max(20, min(100, self.console.width - 20))
        call, outcome, ok = summarize(name, args, result, width)
        line = Text("  ")
        line.append(call, style="cyan")
        line.append(" → ", style="dim")
        line.append(outcome, style="green" if ok else "red")
        with self._quiet():
            self.console.print(line)
            if self.show_tools:
                for label, data in (("args", args), ("result", result)):
                    self.console.print(Text(f"    {label}: " + visible(
                        json.dumps(data, ensure_ascii=False)), style="dim"))

    def notice(self, message: str) -> None:
        super().notice(message)
        self._stop_live()
        with self._quiet():
            self.console.print(Text("; " + message, style="italic yellow"))

    def error(self, message: str) -> None:
        super().error(message)
        self._stop_live()
        with self._quiet():
            self.console.print(Text("; " + message, style="bold red"))
