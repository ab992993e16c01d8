"""`lispshell` itself: parse the flags, load the config, then run the REPL or evaluate and exit.

Three ways in:
  lispshell                  the interactive REPL (standard input is a terminal)
  lispshell -e FORM ...      evaluate the forms, print the results, exit (status 1 if one failed)
  lispshell < file.lisp      the same for every form read from standard input

The non-interactive path never imports prompt-toolkit, and nothing here imports the LLM side:
both are paid for only when used.
"""
from __future__ import annotations

import argparse
import sys

from lispshell import __version__
from lispshell.lisp.dialects import NAMES as LISPS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lispshell",
        description="A REPL in front of a live SBCL, Guile or Clojure, with an LLM at your side. "
                    "Lisp forms go to the Lisp, prose goes to the LLM, ,help lists the commands.",
        epilog="Subcommands: `lispshell check FILE...` (syntax check), `lispshell mcp` (MCP server), "
               "`lispshell hook` (Claude Code's PostToolUse hook), `lispshell undo [FILE]` (put "
               "back a change lispshell made), `lispshell trust [DIR]` (let a project's code run).")
    p.add_argument("--lisp", choices=LISPS, metavar="{" + ",".join(LISPS) + "}",
                   help="which Lisp to run (default: default_lisp in the config, sbcl)")
    p.add_argument("-e", "--eval", dest="forms", action="append", metavar="FORM", default=[],
                   help="evaluate FORM, print its result and exit (repeatable; evaluated in order)")
    p.add_argument("--connect", nargs="?", const="", metavar="URL",
                   help="use a running image instead of starting one: nrepl://HOST:PORT "
                        "(Clojure), swank://HOST:PORT (Common Lisp), guile://HOST:PORT or "
                        "guile:///SOCKET (Guile's REPL server); a bare port means nREPL on this "
                        "machine; no URL reads .nrepl-port here or in a parent directory. "
                        "The image is never restarted or killed by lispshell")
    p.add_argument("--project", metavar="DIR",
                   help="start the Lisp with the project in DIR (ASDF system, deps.edn, "
                        "project.clj, Guile modules); by default the current directory's project")
    p.add_argument("--no-project", dest="no_project", action="store_true",
                   help="do not look for a project: a bare Lisp")
    p.add_argument("--no-init", dest="no_init", action="store_true",
                   help="do not load the Lisp's init files (~/.sbclrc, ~/.guile), which are "
                        "loaded by default as the Lisp's own REPL loads them")
    p.add_argument("--print-config-path", "--config-path", dest="print_config_path",
                   action="store_true", help="print where the user config file lives and exit")
    # Read by the LLM side through `repl.options`.
    p.add_argument("--yolo", action="store_true",
                   help="let the LLM evaluate code without asking first (toggle later with ,yolo)")
    p.add_argument("--model", metavar="MODEL", help="the Claude model to talk to")
    p.add_argument("--continue", dest="continue_", action="store_true",
                   help="continue the last saved LLM conversation")
    p.add_argument("--no-llm", dest="no_llm", action="store_true",
                   help="never talk to the LLM; prose gets a message instead")
    p.add_argument("--version", action="version", version=f"lispshell {__version__}")
    return p


def config_overrides(options: argparse.Namespace) -> dict:
    """The config keys that flags set (flags win over both config files)."""
    overrides: dict = {}
    if options.lisp:
        overrides["default_lisp"] = options.lisp
    if options.model:
        overrides.setdefault("llm", {})["model"] = options.model
    if options.no_init:
        overrides.setdefault("session", {})["init_files"] = False
    return overrides


def main(argv: list[str] | None = None) -> int:
    options = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from lispshell import config as config_mod

    if options.print_config_path:
        print(config_mod.user_config_path())
        return 0
    try:
        config = config_mod.load(config_overrides(options))
    except config_mod.ConfigError as exc:
        print(f"lispshell: bad config: {exc}", file=sys.stderr)
        return 2
    target = None
    if options.connect is not None:
        # The image is theirs, with their project loaded: no project, no --lisp of ours.
        from lispshell.lisp.connection import ConnectError
        from lispshell.workspace.project import connect_target
        try:
            target = connect_target(options.connect)
        except ConnectError as exc:
            print(f"lispshell: {exc}", file=sys.stderr)
            return 2
        if options.lisp and options.lisp != target.lisp:
            print(f"lispshell: --lisp {options.lisp} does not match {target.url}, a "
                  f"{target.lisp} image", file=sys.stderr)
            return 2
        if options.project is not None:
            print(f"lispshell: --project starts a Lisp with the project; {target.url} is an "
                  "image already running, with what it has loaded: give one or the other",
                  file=sys.stderr)
            return 2
        options.connect = target.url
        return _run(options, config, target.lisp, target)
    from lispshell.workspace import project as project_mod
    try:
        config, lisp, notice = project_mod.configure(
            config, directory=options.project, enabled=not options.no_project,
            explicit_lisp=options.lisp)
    except project_mod.ProjectError as exc:
        print(f"lispshell: {exc}", file=sys.stderr)
        return 2
    untrusted = (config.get("project") or {}).get("trusted") is False
    if notice and (options.project or untrusted or not (options.forms or not sys.stdin.isatty())):
        print(f"lispshell: {notice}", file=sys.stderr)   # batch runs say it only when asked
    if lisp not in LISPS:
        print(f"lispshell: unknown Lisp {lisp!r} (known: {', '.join(sorted(LISPS))})",
              file=sys.stderr)
        return 2
    return _run(options, config, lisp, None)


def _run(options, config: dict, lisp: str, target) -> int:
    if options.forms:
        from lispshell.repl.batch import run_forms
        return run_forms(options.forms, lisp, config, target)
    if not sys.stdin.isatty():
        from lispshell.repl.batch import run_stream
        return run_stream(sys.stdin, lisp, config, target)
    from lispshell.repl.app import run_interactive
    return run_interactive(lisp, config, options)
