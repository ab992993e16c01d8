"""The seam between the REPL and the LLM side (owned by the LLM side; the REPL only calls it).

`make_llm(repl)` returns an object with:
    record_eval(code, result, lisp=) -> None   # the person's eval (in that Lisp), as a synthetic tool call
    async ask(text: str) -> None                          # one question; cancelled with task.cancel()
    commands: dict[str, tuple[str, Callable[[str], None]]] # extra `,name` commands: (help, handler(arg))
    toolbar() -> str                                      # extra toolbar text (e.g. "YOLO")
    has_key: bool                                         # questions can reach a model
or None while no LLM side exists; the REPL then answers prose with a clear message.

`make_llm` runs in a worker thread after the first prompt is drawn, so importing the SDK
(about 1.8 s) never delays the prompt; it must not touch the event loop. Without an API key it
still returns the object: Lisp works as always and the first question gets the one line that
says how to enable the LLM.
"""
from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from rich.text import Text

from lispshell.config import PROMPTS_DIR, GateSettings, LlmSettings, session_settings, settings


YOLO_AT_START = "YOLO: the model's evals run without asking (,yolo off to stop)."
NO_KEY_TOOLBAR = "LLM off: no API key"


def initial_gate_mode(config: dict, options) -> str:
    """The gate's mode at start-up (`--yolo`, else `[gate] mode`): known before the LLM side
    loads, so the first prompt can say it."""
    if getattr(options, "yolo", False):
        return "yolo"
    return settings(config, GateSettings).mode


def _llm_settings(config: dict, model: str | None):
    """[llm], with --model over its model."""
    chosen = settings(config, LlmSettings)
    return dataclasses.replace(chosen, model=model) if model else chosen


def gate_label(mode: str) -> str:
    """The toolbar's word for a gate mode ("" for the ordinary "ask")."""
    return {"yolo": "YOLO", "off": "eval off"}.get(mode, "")


def system_prompt(lisp: str) -> str:
    """prompts/system.md + prompts/<lisp>.md: fixed text, identical on every request."""
    parts = [(PROMPTS_DIR / "system.md").read_text(encoding="utf-8").strip()]
    dialect = PROMPTS_DIR / f"{lisp}.md"
    if dialect.exists():
        parts.append(dialect.read_text(encoding="utf-8").strip())
    return "\n\n".join(parts) + "\n"


class LLM:
    def __init__(self, repl):
        from lispshell.llm.agent import Agent
        from lispshell.llm.conversation import Conversation, latest_conversation_path, new_conversation
        from lispshell.llm.render import RichDisplay
        from lispshell.repl.confirm import TerminalConfirm
        from lispshell.tools.gate import EvalGate
        from lispshell.tools.registry import ToolContext

        self.repl = repl
        cfg = repl.config or {}
        options = repl.options
        self.confirm = TerminalConfirm(repl.console, lambda: self.gate, lisp=lambda: repl.lisp,
                                       package=lambda: repl.package,
                                       grace=settings(cfg, GateSettings).grace,
                                       announce=self._announce,
                                       stop_turn=lambda: self.agent.stop_turn())
        self.gate = EvalGate(initial_gate_mode(cfg, options), self.confirm,
                             self.confirm.confirm_edit)
        limits = session_settings(cfg)
        self.ctx = ToolContext(session=self._session, gate=self.gate, root=Path.cwd(),
                               keep_levels=True,
                               dialect=repl.dialect,
                               eval_timeout=limits.eval_timeout,
                               output_cap=limits.output_cap,
                               extra={"extensions": (cfg.get("files") or {}).get("extensions")
                                      or {}})
        self._lisp = repl.lisp
        self._noted = None       # the connection the model was last told about
        conversation = None
        if getattr(options, "continue_", False):
            path = latest_conversation_path()
            if path is None:
                self._announce("No saved conversation to continue; starting a new one.", "yellow")
            else:
                try:
                    conversation = Conversation.load(path)
                    self._announce(f"Continuing the conversation saved in {path} "
                                   f"({len(conversation.messages)} messages).", "yellow")
                    # The model must not assume the old image's definitions still exist.
                    conversation.add_user_text(
                        f"[This conversation was resumed in a new lispshell session running "
                        f"{repl.lisp}: the Lisp image is fresh, so definitions made earlier are "
                        f"gone unless evaluated again.]")
                except (OSError, ValueError) as exc:
                    self._announce(f"Could not read {path} ({exc}); starting a new conversation.",
                                   "yellow")
        if conversation is None:
            conversation = new_conversation({"lisp": repl.lisp})
        self.display = RichDisplay(
            repl.console, renderer=getattr(repl, "renderer", None),
            where=lambda: (repl.lisp, repl.package))
        theme = getattr(repl, "theme", None)
        if theme is not None:
            self.display.code_theme = self.confirm.code_theme = theme.code
        self.agent = Agent(settings=_llm_settings(cfg, getattr(options, "model", None)),
                           conversation=conversation, ctx=self.ctx, system=system_prompt(repl.lisp),
                           display=self.display)
        # Import the SDK and look for a key now, in this worker thread. Without a key nothing
        # is sent, so nothing is saved either. (The REPL said YOLO at start-up.)
        if not self.agent.has_key:
            conversation.path = None
        self.commands = {
            "yolo": ("on|off: let the model evaluate without asking (this session only)", self._yolo),
            "gate": ("ask|yolo|off: how the model's evals are handled (off: no eval tool)", self._gate),
            "usage": ("tokens per LLM turn and for the session (input, output, cache)", self._usage),
            "tools": ("on|off: show each tool call's full arguments and result", self._tools),
        }

    # -- the seam
    def record_eval(self, code: str, result, lisp: str | None = None, tool: str = "eval",
                    tool_input: dict | None = None) -> None:
        """The person's eval for the model (`result` an EvalResult, or the dict a tool
        answers); `tool`: the model's tool that does what the person's command did."""
        from lispshell.tools.live import RECORD_CAP, eval_result

        if not self.agent.has_key:
            return
        self._note_where(lisp)     # before the eval: it ran in the Lisp it was typed into
        answer = result if isinstance(result, dict) else eval_result(result, text_cap=RECORD_CAP)
        self.agent.record_eval(code, answer, tool, tool_input)

    async def ask(self, text: str) -> None:
        self.confirm.loop = asyncio.get_running_loop()
        self._note_where()
        await self.agent.ask(text)

    def _note_where(self, lisp: str | None = None) -> None:
        """Keep the model's idea of the image current: a switch of Lisp (new dialect notes)
        or an image lispshell did not start is said in the conversation before anything
        that happened there. `lisp`: where a (possibly queued) eval ran; default: now."""
        lisp = lisp or self.repl.lisp
        if lisp != self._lisp:
            self._lisp = lisp
            self.agent.system[0]["text"] = system_prompt(self._lisp)
            self.agent.conv.add_user_text(f"[The person switched the REPL to {self._lisp}.]")
        self._note_connection()
        self.ctx.dialect = self.repl.dialect

    def _note_connection(self) -> None:
        """Tell the model once per image when it works on one lispshell did not start (the
        system prompt stays fixed, so the note goes into the conversation)."""
        key = getattr(self.repl, "key", self.repl.lisp)
        if key == self._noted or self.repl.session is None or not self.repl.session.is_connection:
            return
        self._noted = key
        self.agent.conv.add_user_text(
            f"[The REPL is connected to the person's own running {self.repl.lisp} image at "
            f"{key}; lispshell did not start it. It is their program, live: never exit, quit "
            "or restart it, and keep side effects to what they ask.]")

    @property
    def has_key(self) -> bool:
        """Can questions reach a model (an API key was found)?"""
        return self.agent.has_key

    def toolbar(self) -> str:
        return gate_label(self.gate.mode) if self.agent.has_key else NO_KEY_TOOLBAR

    # -- helpers
    def _session(self):
        from lispshell.tools.registry import ToolError

        session = self.repl.session
        if session is None:
            raise ToolError("NO_LISP", "No Lisp is running (the person can start one with ,restart).")
        return session

    def _announce(self, message: str, style: str = "bold yellow") -> None:
        text = Text("; " + message, style=style)
        printer = getattr(self.repl, "print_above", None)
        if printer is not None:
            printer(text)
        else:
            self.repl.console.print(text)

    # -- commands (the person's only: no tool can reach them)
    def _yolo(self, arg: str) -> None:
        arg = arg.strip().lower()
        if arg in ("on", "yes", "1", "true"):
            self.gate.set_mode("yolo")
            self._announce("YOLO on: the model's evals now run WITHOUT asking, until ,yolo off.")
        elif arg in ("off", "no", "0", "false"):
            self.gate.set_mode("ask")
            self._announce("YOLO off: each eval the model asks for needs your yes.", "yellow")
        else:
            self._announce(f"The gate is {self.gate.mode!r}. Use ,yolo on or ,yolo off.", "yellow")

    def _gate(self, arg: str) -> None:
        arg = arg.strip().lower()
        if arg not in ("ask", "yolo", "off"):
            self._announce(f"The gate is {self.gate.mode!r}. Use ,gate ask|yolo|off.", "yellow")
            return
        self.gate.set_mode(arg)
        if arg == "yolo":
            self._yolo("on")
        else:
            self._announce({"ask": "Gate: ask before each eval.",
                            "off": "Gate off: the model gets no eval tool at all."}[arg], "yellow")

    def _usage(self, arg: str) -> None:
        self._announce(self.agent.usage_report().replace("\n", "\n; "), "cyan")

    def _tools(self, arg: str) -> None:
        arg = arg.strip().lower()
        if arg in ("on", "off"):
            self.display.show_tools = arg == "on"
            self._announce(f"Tool details {arg}.", "yellow")
        else:   # like ,yolo: the state and the usage, never a toggle
            self._announce(f"Tool details are {'on' if self.display.show_tools else 'off'}. "
                           f"Use ,tools on or ,tools off.", "yellow")


def make_llm(repl):
    return LLM(repl)
