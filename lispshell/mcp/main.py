"""`lispshell mcp [--lisp sbcl|guile|clojure|none] [--root DIR] [--project DIR] [--tools SPEC] [--allow-eval] [--http [HOST:]PORT]`

Serves the tool registry over MCP: stdio by default (what Claude Code and Claude Desktop start),
streamable HTTP with `--http`. Nothing but MCP messages ever goes to stdout; messages for the
person go to stderr.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
from pathlib import Path

from lispshell import __version__, config as config_mod
from lispshell.mcp.runtime import LISPS, Options

DEFAULT_HOST = "127.0.0.1"


def parse_http(value: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[V6HOST]:PORT`; the host defaults to 127.0.0.1."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = DEFAULT_HOST, value
    host = host.strip("[]") or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not [HOST:]PORT") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} is out of range")
    return host, number


def make_parser(default_lisp: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lispshell mcp",
        description="Serve lispshell's tools (delimiters, syntax, structural edits, live image) "
                    "to MCP clients such as Claude Code and Claude Desktop.")
    parser.add_argument("--lisp", choices=[*LISPS, "none"], default=None,
                        help=f"the live Lisp for eval/describe/... (default: {default_lisp}); "
                             "'none' serves only the text and file tools")
    parser.add_argument("--connect", nargs="?", const="", metavar="URL",
                        help="serve a running image instead of starting one: nrepl://HOST:PORT, "
                             "swank://HOST:PORT, guile://HOST:PORT or guile:///SOCKET; a bare "
                             "port means nREPL on this machine, no URL reads .nrepl-port in the "
                             "root or a parent. A lost connection is reopened, never restarted")
    parser.add_argument("--root", type=Path, default=None,
                        help="file tools may only read and write inside this directory "
                             "(default: the current directory)")
    parser.add_argument("--project", metavar="DIR", type=Path, default=None,
                        help="start the Lisp with the project in DIR (default: the project found "
                             "in the root or above it, if any)")
    parser.add_argument("--no-project", dest="no_project", action="store_true",
                        help="do not look for a project: a bare Lisp")
    parser.add_argument("--no-init", dest="no_init", action="store_true",
                        help="do not load the Lisp's init files (~/.sbclrc, ~/.guile)")
    parser.add_argument("--tools", metavar="SPEC", default=None,
                        help="which tools to serve: groups (live, syntax, delimiters, structure) "
                             "and/or tool names, comma-separated, -NAME drops one "
                             "(default: [mcp] tools in the config, else all)")
    parser.add_argument("--allow-eval", action="store_true",
                        help="run eval without asking; otherwise each eval runs only when the MCP "
                             "client's confirmation (elicitation) accepts it")
    parser.add_argument("--http", metavar="[HOST:]PORT", type=parse_http, default=None,
                        help="serve streamable HTTP at http://HOST:PORT/mcp (host 127.0.0.1 by "
                             "default) behind a bearer token printed at start, instead of stdio")
    parser.add_argument("--version", action="version", version=f"lispshell {__version__}")
    return parser


def _tools_value_joined(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """`--tools -structure` as `--tools=-structure`: argparse takes a value that starts with
    `-` for an option, and a selection of drops only is documented that way."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--":
            return out + argv[i:]
        if (argv[i] == "--tools" and i + 1 < len(argv) and argv[i + 1].startswith("-")
                and argv[i + 1].split("=")[0] not in parser._option_string_actions):
            out.append(f"--tools={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def parse_args(argv: list[str], config: dict) -> tuple[Options, dict]:
    """The options, and the configuration with the project's command applied (if any)."""
    default_lisp = config_mod.default_lisp(config)
    if default_lisp not in LISPS:
        default_lisp = config_mod.default_value(None, "default_lisp")
    parser = make_parser(default_lisp)
    args = parser.parse_args(_tools_value_joined(argv, parser))
    root = (args.root or Path.cwd()).expanduser()
    if not root.is_dir():
        raise SystemExit(f"lispshell mcp: --root {str(root)!r} is not a directory")
    lisp = args.lisp or default_lisp
    if args.no_init:
        config = dict(config, session=dict(config.get("session") or {}, init_files=False))
    connect = None
    untrusted = None
    if args.connect is not None:
        from lispshell.lisp.connection import ConnectError
        from lispshell.workspace.project import connect_target
        try:
            target = connect_target(args.connect, start=root)
        except ConnectError as exc:
            raise SystemExit(f"lispshell mcp: {exc}") from None
        if args.lisp and args.lisp != target.lisp:
            raise SystemExit(f"lispshell mcp: --lisp {args.lisp} does not match {target.url}, "
                             f"a {target.lisp} image")
        if args.project is not None:
            raise SystemExit(f"lispshell mcp: --project starts a Lisp with the project; "
                             f"{target.url} is an image already running, with what it has "
                             "loaded: give one or the other")
        lisp, connect = target.lisp, target.url
    elif args.lisp != "none":
        from lispshell.workspace import project as project_mod
        try:
            config, lisp, notice = project_mod.configure(
                dict(config, default_lisp=default_lisp), directory=args.project,
                enabled=not args.no_project, explicit_lisp=args.lisp, start=root)
        except project_mod.ProjectError as exc:
            raise SystemExit(f"lispshell mcp: {exc}") from None
        if notice:
            # The REPL's commands mean nothing to an MCP client: it loads with the tool, and
            # only the person, in a terminal, can trust a project.
            notice = re.sub(r"`,load-system (\S+)`", r"`load_system` (name \1)", notice)
            notice = notice.replace(" (or `,trust` in the REPL)", "")
            print(f"lispshell mcp: {notice}", file=sys.stderr)
        if (config.get("project") or {}).get("trusted") is False:
            untrusted = notice
    where, spec = "--tools", args.tools
    if spec is None:
        where, spec = "[mcp] tools", config_mod.settings(config, config_mod.McpSettings).tools
    selected = None
    if spec:
        from lispshell.tools.registry import ToolSpecError, select_tools
        try:
            chosen = select_tools(spec)
        except ToolSpecError as exc:
            raise SystemExit(f"lispshell mcp: {where}: {exc}") from None
        if not chosen:
            raise SystemExit(f"lispshell mcp: {where} {spec!r} leaves no tool to serve")
        from lispshell.mcp.runtime import LIVE_GROUPS
        if args.lisp == "none" and all(t.group in LIVE_GROUPS or t.evaluates for t in chosen):
            raise SystemExit(f"lispshell mcp: {where} {spec!r} names only tools that need a "
                             "Lisp, and --lisp none starts none: nothing to serve")
        selected = tuple(t.name for t in chosen)
    return Options(lisp=None if args.lisp == "none" else lisp, root=root.resolve(),
                   allow_eval=args.allow_eval, http=args.http, tools=selected,
                   connect=connect, untrusted_project=untrusted), config


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        config = config_mod.load()
    except config_mod.ConfigError as exc:
        print(f"lispshell mcp: {exc}", file=sys.stderr)
        return _refuse(f"lispshell mcp: {exc}", argv)
    try:
        options, config = parse_args(argv, config)
    except SystemExit as exc:  # argparse's own exit (help, bad flag) or a bad --root
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return _refuse(exc.code, argv)
        return exc.code or 0

    # Only warnings, and only on stderr: stdout belongs to the protocol.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from lispshell.mcp.runtime import Runtime

    runtime = Runtime(options, config)
    _end_on_signals(runtime)
    try:
        if options.http is not None:
            from lispshell.mcp import http
            from lispshell.mcp.server import build_server  # the SDK: never paid for by the REPL
            try:
                http.serve(build_server(runtime), *options.http)
            except (OSError, http.TokenError) as exc:
                print(f"lispshell mcp: cannot serve HTTP on {options.http[0]}:{options.http[1]}: "
                      f"{exc}", file=sys.stderr)
                return 1
        else:
            _serve_stdio(runtime)
    except KeyboardInterrupt:
        pass
    finally:
        runtime.close()
    return 0


def _refuse(reason: str, argv: list[str]) -> int:
    """Exit 2 for a configuration the server cannot serve; over stdio to a client (not a
    terminal), only once the client has been told why (see handshake.serve_refusal)."""
    if "--http" not in argv and not sys.stdin.isatty():
        from lispshell.mcp.handshake import serve_refusal
        from lispshell.mcp.wire import claimed_stdio

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        with claimed_stdio() as (stdin, stdout):
            serve_refusal(reason, stdin.file, stdout.write_now)
    return 2


def _end_on_signals(runtime) -> None:
    """SIGINT and SIGTERM end the server at once, whatever it is doing.

    Claude Code stops a server with SIGINT, SIGTERM 100 ms later, SIGKILL 400 ms after that.
    An orderly unwinding cannot be that quick: a thread blocked reading the client's next line
    cannot be interrupted, and the event loop waits for it. So the handler does what must not
    be skipped and leaves: it waits for a file write in progress to reach its journal entry
    (and blocks any other), kills the child Lisp's process group without waiting for it (a
    close that reaps it and its pty took more than the 100 ms on a loaded machine), and exits.
    """
    def end(signum, frame):
        for sig in (signal.SIGINT, signal.SIGTERM):   # the second signal finds us leaving
            signal.signal(sig, signal.SIG_IGN)
        # Every write goes through workspace.files: not imported yet, none is in progress.
        # (Importing it here cost milliseconds the 100 ms do not have on a loaded machine.)
        files = sys.modules.get("lispshell.workspace.files")
        if files is not None:
            files.WRITING.acquire()
        try:
            runtime.end_now()
        finally:
            sys.stderr.flush()
            os._exit(0)

    signal.signal(signal.SIGINT, end)
    signal.signal(signal.SIGTERM, end)


def _serve_stdio(runtime) -> None:
    from lispshell.mcp.handshake import FastStart
    from lispshell.mcp.wire import claimed_stdio

    # Every line gets an answer: malformed ones are answered by lispshell.mcp.wire; the first
    # ones before the SDK is loaded, by lispshell.mcp.handshake.
    with claimed_stdio() as (stdin, stdout):
        fast = FastStart(runtime, stdin.file, stdout.write_now, _build_server)
        fast.run()
        if fast.ended:
            return
        server = fast.wait_for_sdk()
        stdin.replay[:0] = fast.replay
        if fast.initialized:
            stdout.swallow = fast.swallow_id

        import anyio
        from mcp.server.stdio import stdio_server

        async def serve() -> None:
            async with stdio_server(stdin, stdout) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)


def _build_server(runtime):
    """The SDK's server: importing it costs a second, so FastStart calls this in a thread."""
    from lispshell.mcp.server import build_server

    return build_server(runtime)
