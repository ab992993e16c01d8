"""The person's own navigation, as SLIME's M-. and C-c C-w c give it: the model's look-up tools,
run for the person (none of them evaluates what is typed), on every transport.

  ,edit NAME          open $VISUAL/$EDITOR at the definition (file:line), or print path:line:col
  ,who-calls NAME     the callers, with file:line
  ,who-refs NAME      what references a global variable
  ,macroexpand FORM   one step of expansion, then the form expanded until it is no macro call
  ,apropos TEXT       the symbols whose names contain TEXT
  ,describe NAME      what the image knows of NAME

A name may carry its package (`pkg:name`, `ns/name`); Tab completes it from the image.
"""
from __future__ import annotations

import os
import shlex
import subprocess

from rich.text import Text

from lispshell.repl.command import Command

MACROEXPAND_STEPS = 20      # a macro that expands into itself stops here


async def _look(repl, tool: str, args: dict, gate=None) -> dict | None:
    """Call a look-up tool for the person; None (said) when it failed. `gate`: for a tool
    that changes the image or runs code, the person typed it (lispshell/repl/observe.py)."""
    from lispshell.tools.registry import ToolContext, call_tool

    session = await repl.ready_session()
    if session is None:
        return None
    ctx = ToolContext(session=lambda: session, gate=gate, root=None, dialect=repl.dialect,
                      eval_timeout=60.0, output_cap=1 << 20)
    result = await repl.run_in_session(session, call_tool, tool, args, ctx)
    if not result.get("ok"):
        err = result.get("error") or {}
        repl.renderer.notice(f"{err.get('message') or err.get('code') or 'no answer'}")
        return None
    return result


def _usage(repl, arg: str, usage: str) -> bool:
    if arg.strip():
        return False
    repl.renderer.notice(f"Usage: {usage}")
    return True


async def _describe(repl, arg: str):
    if _usage(repl, arg, ",describe NAME"):
        return
    result = await _look(repl, "describe", {"symbol": arg.strip()})
    if result is not None:
        repl.renderer.print(Text(result.get("description", "").rstrip()))


async def _apropos(repl, arg: str):
    if _usage(repl, arg, ",apropos TEXT"):
        return
    result = await _look(repl, "apropos", {"pattern": arg.strip()})
    if result is None:
        return
    symbols = result.get("symbols") or []
    lines = [Text(s) for s in symbols] or [Text(f"Nothing matches {arg.strip()!r}.", style="dim")]
    if not repl.renderer.page_if_tall(lines, "\n".join(t.plain for t in lines)):
        repl.renderer.print(*lines, sep="\n")


async def _macroexpand(repl, arg: str):
    if _usage(repl, arg, ",macroexpand FORM"):
        return
    form = arg.strip()
    first = await _look(repl, "macroexpand", {"form": form})
    if first is None:
        return
    if first.get("note"):
        repl.renderer.notice(first["note"])
        return
    repl.renderer.print(Text("One step:", style="dim"))
    repl.renderer.print(Text(first["expansion"]))
    expansion, steps = first["expansion"], 1
    while steps < MACROEXPAND_STEPS:
        more = await _look(repl, "macroexpand", {"form": expansion})
        if more is None or more.get("note") or more["expansion"] == expansion:
            break
        expansion, steps = more["expansion"], steps + 1
    if steps > 1:
        repl.renderer.print(Text(f"All ({steps} steps, until it is no macro call):", style="dim"))
        repl.renderer.print(Text(expansion))


def _places(result: dict, key: str) -> list:
    return [p for p in result.get(key) or [] if isinstance(p, dict)]


async def _who(repl, arg: str, tool: str, key: str, usage: str):
    if _usage(repl, arg, usage):
        return
    result = await _look(repl, tool, {"symbol": arg.strip()})
    if result is None:
        return
    places = _places(result, key)
    if not places:
        repl.renderer.notice(result.get("note") or f"Nothing found for {arg.strip()}.")
        return
    lines = []
    for p in places:
        where = p.get("at") or ":".join(str(p[k]) for k in ("file", "line") if p.get(k)) \
            or "no location (typed at the prompt, or compiled without a file)"
        lines.append(Text(f"{where}: ", style="dim") + Text(str(p.get("name") or p.get("caller")
                                                              or p.get("text") or "")))
    if result.get("note"):
        lines.append(Text(result["note"], style="dim"))
    repl.renderer.print(*lines, sep="\n")


async def _who_calls(repl, arg: str):
    await _who(repl, arg, "who_calls", "calls", ",who-calls NAME")


async def _who_refs(repl, arg: str):
    await _who(repl, arg, "who_references", "references", ",who-refs NAME")


async def _edit(repl, arg: str):
    if _usage(repl, arg, ",edit NAME"):
        return
    result = await _look(repl, "find_definition", {"symbol": arg.strip()})
    if result is None:
        return
    places = [p for p in _places(result, "definitions") if p.get("file")]
    if not places:
        repl.renderer.notice(f"{arg.strip()} has no source file the image knows (defined at "
                             "the prompt, or compiled without source locations).")
        return
    place = places[0]
    at = place.get("at") or f"{place['file']}:{place.get('line', 1)}:{place.get('column', 1)}"
    if not os.path.isfile(place["file"]):
        # The image remembers where it was compiled from; the file is not here (SBCL's own
        # sources are a package of their own): an editor would open an empty new file.
        repl.renderer.notice(f"{arg.strip()} is defined in {place['file']}, which is not on "
                             "this machine" + _source_package(place["file"]) + ".")
        return
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if len(places) > 1:
        repl.renderer.notice(f"{len(places)} definitions: " + ", ".join(
            p.get("at") or p["file"] for p in places) + "; opening the first.")
    if not editor:
        repl.renderer.print(Text(at))         # an editor's jump target, as a compiler prints
        return
    command = shlex.split(editor) + [f"+{place.get('line', 1)}", place["file"]]
    from prompt_toolkit.application import run_in_terminal

    def run() -> None:
        subprocess.run(command)
    try:
        await run_in_terminal(run, in_executor=True)
    except (OSError, RuntimeError) as exc:
        repl.renderer.notice(f"Could not run {editor!r}: {exc}. The definition is at {at}.")


# Where a Lisp's own sources live when installed, and the Debian package that installs them.
SOURCE_PACKAGES = (("/usr/share/sbcl-source/", "sbcl-source"),)


def _source_package(path: str) -> str:
    for prefix, package in SOURCE_PACKAGES:
        if path.startswith(prefix):
            return (f": the source is not installed (Debian's {package} package has it: "
                    f"apt install {package})")
    return " (moved or deleted since it was compiled)"


COMMANDS = [
    Command("edit", "open $VISUAL/$EDITOR at NAME's definition (or print path:line:col)",
            _edit, "NAME"),
    Command("who-calls", "the callers of NAME, with file:line", _who_calls, "NAME"),
    Command("who-refs", "what references the global variable NAME", _who_refs, "NAME"),
    Command("macroexpand", "expand FORM one step, then fully (never evaluates it)",
            _macroexpand, "FORM"),
    Command("apropos", "the symbols whose names contain TEXT", _apropos, "TEXT"),
    Command("describe", "what the image knows of NAME", _describe, "NAME"),
]
