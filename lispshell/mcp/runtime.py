"""What the served tools may use: the root, the dialect, the eval gate and the live Lisp image.

One `Runtime` per server process; it is shared by every MCP connection (one live image, as in
the REPL). Tool handlers are blocking, so `call` runs in a worker thread.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lispshell.config import McpSettings, session_settings, settings
from lispshell.lisp.dialects import NAMES as LISPS  # noqa: F401 (used by mcp.main)
from lispshell.tools.gate import EvalGate
from lispshell.tools.registry import Tool, ToolContext, ToolError, all_tools, call_tool, get_tool

LIVE_GROUPS = frozenset({"live", "project", "debug", "observe"})   # tools that need a live image

RESTARTED_NOTICE = ("The Lisp image had died and was restarted before this call: definitions "
                    "made earlier in it are gone.")


@dataclass(frozen=True)
class Options:
    """What the command line chose (see `main.parse_args`)."""

    lisp: str | None        # None: `--lisp none`, no live image
    root: Path
    allow_eval: bool = False
    http: tuple[str, int] | None = None
    tools: tuple[str, ...] | None = None   # the names `--tools` selected; None: every tool
    connect: str | None = None   # --connect: the URL of a running image to use instead of a child
    untrusted_project: str | None = None   # a project found but not trusted: what to tell


class LiveImage:
    """The child Lisp: started on first use, reused, restarted if it died. Or, with `connect`,
    a running image: connected on first use, and reconnected (never restarted) if the
    connection was lost."""

    def __init__(self, lisp: str, config: dict, connect: str | None = None):
        self.lisp = lisp
        self.connect = connect
        self._config = config
        self._session = None
        self._lock = threading.Lock()
        self.restarts = 0   # restarts of a dead image, counted so the next answer can say so

    def get(self):
        with self._lock:
            try:
                if self._session is None and self.connect is not None:
                    from lispshell.lisp.connection import connect_session
                    self._session = connect_session(self.connect, self._config)
                elif self._session is None:
                    from lispshell.lisp.session import make_session  # pexpect: on first use
                    session = make_session(self.lisp, self._config)
                    session.start()
                    self._session = session
                elif self._session.is_connection:
                    if not self._session.alive:
                        try:
                            self._session.reconnect()   # a new connection; the image untouched
                        except Exception as exc:
                            raise ToolError("NOT_CONNECTED", f"The connection to {self.connect} "
                                            f"was lost and reconnecting failed: {exc}. "
                                            "lispshell does not restart an image it did not "
                                            "start; once its server listens again, the next "
                                            "call connects.") from None
                elif not self._session.alive:
                    self._session.restart()
                    self.restarts += 1
            except ToolError:
                raise
            except Exception as exc:  # no such program, a bootstrap that failed, nothing listening
                if self.connect is not None:
                    raise ToolError("NOT_CONNECTED", f"{exc}. The image is not restarted by "
                                    "lispshell; once its server listens again, the next call "
                                    "connects.") from None
                message = f"could not start {self.lisp}: {type(exc).__name__}: {exc}"
                raise ToolError("LISP_START_FAILED", message) from None
            return self._session

    def peek(self):
        """The session if it is running now, else None (never starts or reconnects one)."""
        session = self._session
        return session if session is not None and session.alive else None

    def interrupt(self) -> None:
        """Stop the running eval (the MCP client cancelled the call); safe from any thread."""
        session = self._session
        if session is not None and session.alive and session.busy:
            session.interrupt()

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def end_now(self) -> None:
        """The server leaves at once (a signal): a child Lisp is killed, not waited for (the
        system reaps it once the server is gone); a connection's image is left as it is."""
        kill = getattr(self._session, "kill_now", None)
        if kill is not None:
            kill()


class Runtime:
    def __init__(self, options: Options, config: dict):
        self.options = options
        self.root = options.root
        limits = session_settings(config)
        self.eval_timeout = limits.eval_timeout
        self.output_cap = limits.output_cap
        self.confirm_timeout = settings(config, McpSettings).confirm_timeout or None  # 0: none
        self.image = LiveImage(options.lisp, config, options.connect) if options.lisp else None
        self.dialect = _syntax_dialect(options.lisp)
        # Lives as long as the server: the structural tools remember here the hash of each file
        # as the model last read it, so an edit of a file changed since then is refused.
        self.extra: dict = {"extensions": (config.get("files") or {}).get("extensions") or {}}

    # -- which tools -------------------------------------------------------------------------
    def serves(self, tool: Tool) -> bool:
        """Live-image tools are not listed without a Lisp: a model should not see tools that
        can only fail. Called anyway, they answer a clear NO_LISP error (see `call`)."""
        if self.options.tools is not None and tool.name not in self.options.tools:
            return False
        return self.image is not None or not (tool.group in LIVE_GROUPS or tool.evaluates)

    def tools(self) -> list[Tool]:
        return [tool for tool in all_tools() if self.serves(tool)]

    # -- one call ----------------------------------------------------------------------------
    def context(self, confirm=None, confirm_edit=None) -> ToolContext:
        # The mode is fixed here, from the person's flag; no tool can reach `set_mode`.
        gate = (EvalGate("yolo") if self.options.allow_eval
                else EvalGate("ask", confirm, confirm_edit))
        return ToolContext(
            session=self.image.get if self.image is not None else None,
            running=self.image.peek if self.image is not None else (lambda: None),
            gate=gate,
            root=self.root,
            dialect=self.dialect,
            eval_timeout=self.eval_timeout,
            output_cap=self.output_cap,
            extra=self.extra,
        )

    def call(self, name: str, arguments: Any, context: ToolContext) -> dict:
        """Run one tool (blocking). Never raises: the registry turns failures into results."""
        tool = get_tool(name) if isinstance(name, str) else None
        if tool is not None and self.options.tools is not None and name not in self.options.tools:
            return {"ok": False, "error": {
                "code": "NOT_SERVED",
                "message": f"{name} is not served by this server (its --tools selection leaves "
                           "it out)."}}
        if tool is not None and not self.serves(tool):
            return {"ok": False, "error": {
                "code": "NO_LISP",
                "message": f"{name} needs a live Lisp, and lispshell mcp was started with "
                           "--lisp none. Restart it with --lisp sbcl, guile or clojure."}}
        restarts = self.image.restarts if self.image is not None else 0
        result = call_tool(name, arguments if arguments is not None else {}, context)
        if self.image is not None and self.image.restarts != restarts:
            result.setdefault("notice", RESTARTED_NOTICE)
        if self.options.untrusted_project and tool is not None and (
                tool.group in LIVE_GROUPS or tool.evaluates):
            # Said in every answer that touches the image: a model that skimmed the instructions
            # must not go on to explain a missing system by anything else.
            result.setdefault("project", self.options.untrusted_project)
        return result

    def interrupt(self, name: str) -> None:
        tool = get_tool(name) if isinstance(name, str) else None
        if self.image is not None and tool is not None and tool.group in LIVE_GROUPS:
            self.image.interrupt()

    def close(self) -> None:
        if self.image is not None:
            self.image.close()

    def end_now(self) -> None:
        if self.image is not None:
            self.image.end_now()


def _syntax_dialect(lisp: str | None) -> str | None:
    """The text tools' default dialect: the live Lisp's. Without one, tools infer it from the
    file extension or their `dialect` argument."""
    if lisp is None:
        return None
    from lispshell.lisp.dialects import get_dialect
    return get_dialect(lisp).syntax
