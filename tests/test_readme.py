"""The docs stay true: every tool, command, flag and config key a person can use is documented
(README.md is the front door, docs/ holds the rest), and the README stays short."""
import re
import tomllib
from pathlib import Path

from lispshell.config import DEFAULT_CONFIG
from lispshell.repl.commands import BUILTIN
from lispshell.repl.main import build_parser
from lispshell.tools import all_tools

ROOT = Path(__file__).resolve().parent.parent
FRONT = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").glob("*.md"))
README = "\n".join([FRONT] + [p.read_text() for p in DOCS])   # everything a person can read


def test_quick_start_is_two_commands_that_exist():
    quick = FRONT.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in quick.strip().splitlines()]
    assert commands == ["./dev shell", "./dev test"]
    assert (ROOT / "dev").stat().st_mode & 0o111
    assert "./dev test" in (ROOT / ".ci" / "run").read_text()


def test_every_tool_is_documented():
    missing = [t.name for t in all_tools() if f"`{t.name}`" not in README]
    assert missing == []


def test_every_repl_command_is_documented():
    names = [c.name for c in BUILTIN] + ["yolo", "gate", "usage", "tools"]
    assert [n for n in names if f"`,{n}" not in README] == []


def test_every_flag_is_documented():
    flags = [s for action in build_parser()._actions for s in action.option_strings
             if s.startswith("--") and s != "--help"]
    assert [f for f in flags if f not in README] == []
    for flag in ["--fix", "--diff", "--dialect", "--root", "--allow-eval", "--http", "--tools",
                 "--list"]:
        assert flag in README
    for command in ["lispshell check", "lispshell mcp", "lispshell hook", "lispshell undo"]:
        assert command in README


def test_every_config_key_is_documented():
    defaults = tomllib.loads(DEFAULT_CONFIG.read_text())
    keys = [k for table, values in defaults.items() if isinstance(values, dict) and table != "lisp"
            for k in values]
    assert [k for k in keys if not re.search(rf"\b{re.escape(k)}\b", README)] == []


def test_readme_is_a_front_door():
    assert len(FRONT.encode()) <= 15_000
    for line in ("./dev shell", "./dev test", "lispshell mcp"):
        assert line in FRONT


def test_every_local_link_resolves():
    for page in [ROOT / "README.md"] + DOCS:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).is_file(), f"{page.name} links to missing {target}"
