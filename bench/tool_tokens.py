"""What the tool definitions and the system prompt cost on every LLM request.

    .venv/bin/python bench/tool_tokens.py [--lisp sbcl|guile|clojure] [--tools live,syntax,...]
    .venv/bin/python bench/tool_tokens.py --sets     the ready-made `lispshell mcp --tools` sets

Sizes are the characters of each `tool.definition()` as JSON, compact and UTF-8 as the anthropic
SDK sends it (`--spaced`: `json.dumps` defaults, as first measured), and of the system prompt (prompts/system.md + prompts/<lisp>.md, as
`lispshell.repl.llm_hook.system_prompt` builds it). Tokens are ESTIMATED as characters / 4
(English prose and JSON keys run at 3.5 to 4 characters a token); the API's own count differs
by some percent, the ratios do not depend on it.

Measured in the same run, for comparison (so the figures are reproducible):
  floor     every tool with the same names, arguments, types, enums and required lists but no
            descriptions at all: the least the same tools can cost;
  bare      names and required arguments only, no descriptions: the bare minimum of a tool
            list that can still be called.
The ratios say how far the real definitions are above these.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lispshell.tools.registry import select_tools  # noqa: E402

# The selections docs/mcp.md recommends, with what each is for.
READY_MADE = [
    ("all", "agents without file tools of their own (the default)"),
    ("live,project,syntax", "Claude Code and other agents with their own file tools"),
    ("live,syntax", "the same without loading files or finding definitions"),
    ("live,project,syntax,structure", "agents that should edit Lisp structurally"),
    ("live", "only the live image"),
    ("syntax,delimiters", "only text tools, no Lisp"),
]

CHARS_PER_TOKEN = 4
SEPARATORS = (",", ":")  # the SDK's encoder: ensure_ascii=False, separators=(",", ":")


def size(obj) -> int:
    return len(obj) if isinstance(obj, str) else len(
        json.dumps(obj, ensure_ascii=False, separators=SEPARATORS))


def tokens(chars: int) -> int:
    return round(chars / CHARS_PER_TOKEN)


def strip_descriptions(schema):
    """The schema with every "description" removed, at any depth."""
    if isinstance(schema, dict):
        return {k: strip_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [strip_descriptions(v) for v in schema]
    return schema


def floor_definition(tool) -> dict:
    return {"name": tool.name, "description": "",
            "input_schema": strip_descriptions(tool.input_schema)}


def bare_definition(tool) -> dict:
    schema = tool.input_schema
    required = schema.get("required", [])
    props = {k: {"type": v.get("type", "string")} for k, v in schema.get("properties", {}).items()
             if k in required}
    bare = {"type": "object", "properties": props}
    if required:
        bare["required"] = list(required)
    return {"name": tool.name, "description": "", "input_schema": bare}


def system_prompt_size(lisp: str) -> int:
    try:
        from lispshell.repl.llm_hook import system_prompt
        return len(system_prompt(lisp))
    except ImportError:  # the seam moved: measure the same files directly
        from lispshell.config import PROMPTS_DIR
        parts = [(PROMPTS_DIR / "system.md").read_text(encoding="utf-8").strip()]
        extra = PROMPTS_DIR / f"{lisp}.md"
        if extra.exists():
            parts.append(extra.read_text(encoding="utf-8").strip())
        return len("\n\n".join(parts) + "\n")


def row(label: str, chars: int, floor: int, bare: int, indent: str = "") -> str:
    return (f"{indent}{label:<{30 - len(indent)}} {chars:>7,} {tokens(chars):>7,} "
            f"{floor:>7,} {bare:>7,} {chars / floor if floor else 0:>7.2f}")


def print_sets() -> int:
    every = sum(size(t.definition()) for t in select_tools("all"))
    print(f"{'--tools':<30} {'tools':>5} {'chars':>7} {'~tokens':>7} {'x all':>6}  for")
    for spec, purpose in READY_MADE:
        tools = select_tools(spec)
        chars = sum(size(t.definition()) for t in tools)
        if not tools or chars <= 0:
            print(f"{spec}: selected nothing", file=sys.stderr)
            return 1
        print(f"{spec:<30} {len(tools):>5} {chars:>7,} {tokens(chars):>7,} {chars / every:>6.2f}"
              f"  {purpose}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lisp", default="sbcl", choices=["sbcl", "guile", "clojure"])
    parser.add_argument("--tools", "--groups", dest="tools",
                        help="a tool selection as `lispshell mcp --tools` takes it (default: all)")
    parser.add_argument("--sets", action="store_true",
                        help="the cost of each ready-made `--tools` set, against all tools")
    parser.add_argument("--per-tool", action=argparse.BooleanOptionalAction, default=True,
                        help="list every tool under its group (default on)")
    parser.add_argument("--spaced", action="store_true",
                        help="measure json.dumps with its default separators (\", \" and \": \")")
    args = parser.parse_args(argv)
    global SEPARATORS
    if args.spaced:
        SEPARATORS = (", ", ": ")
    if args.sets:
        return print_sets()
    tools = select_tools(args.tools)

    how = "json.dumps defaults" if args.spaced else "compact JSON, as the SDK sends it"
    print(f"sizes in characters ({how}); tokens ESTIMATED as characters / {CHARS_PER_TOKEN}")
    print(f"{'':<30} {'chars':>7} {'~tokens':>7} {'floor':>7} {'bare':>7} {'x floor':>7}")
    by_group: dict[str, list] = {}
    for t in tools:
        by_group.setdefault(t.group, []).append(t)
    total = total_floor = total_bare = 0
    for group, members in by_group.items():
        sizes = [(t, size(t.definition()), size(floor_definition(t)), size(bare_definition(t)))
                 for t in members]
        g, gf, gb = (sum(s[i] for s in sizes) for i in (1, 2, 3))
        total, total_floor, total_bare = total + g, total_floor + gf, total_bare + gb
        print(row(f"{group} ({len(members)} tools)", g, gf, gb))
        if args.per_tool:
            for t, c, f, b in sizes:
                print(row(t.name, c, f, b, indent="  "))
    prompt = system_prompt_size(args.lisp)
    print(row("tools, all groups above", total, total_floor, total_bare))
    print(f"{'system prompt (' + args.lisp + ')':<30} {prompt:>7,} {tokens(prompt):>7,}")
    grand = total + prompt
    print(f"{'total per request':<30} {grand:>7,} {tokens(grand):>7,} "
          f"{total_floor + prompt:>7,} {total_bare + prompt:>7,}")
    print(f"ratio of the tools to their floor (no descriptions): {total / total_floor:.2f}x; "
          f"to the bare minimum (required fields only): {total / total_bare:.2f}x")
    print(f"ratio of the whole request prefix to bare tools + the same prompt: "
          f"{grand / (total_bare + prompt):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
