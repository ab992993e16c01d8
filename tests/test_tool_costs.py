"""Tool definitions travel with every LLM request: they stay lean (issue 5).

Sizes are the compact JSON the anthropic SDK sends (bench/tool_tokens.py prints the details)."""
import json

from lispshell.tools.registry import all_tools

# The addressing arguments the structural tools share: explained once, bare elsewhere.
SHARED = ["file_path", "code", "dialect", "form_type", "form_name", "line", "target", "path",
          "dry_run", "expected_hash"]
# Budgets with a little room over the lean definitions (structure 14.4 kB with paredit's
# convolute and splice-killing, live 2.1 kB; each closed schema's `additionalProperties: false`
# costs 28 characters, issue 45).
BUDGET = {"structure": 14_500, "live": 2_200}


def size(tool) -> int:
    return len(json.dumps(tool.definition(), ensure_ascii=False, separators=(",", ":")))


def test_shared_addressing_arguments_are_explained_once():
    tools = all_tools(["structure"])
    for name in SHARED:
        explained = [t.name for t in tools
                     if "description" in t.input_schema["properties"].get(name, {})
                     and t.name != "find_references"]   # its file_path may be a folder
        assert len(explained) <= 1, (name, explained)
        users = [t for t in tools if name in t.input_schema["properties"]]
        assert len(users) >= 2, name
        said = explained or [t.name for t in tools if name in t.description]
        assert said, f"{name} is explained nowhere"


def test_the_paths_rules_are_stated_where_paths_are_printed():
    show = {t.name: t for t in all_tools(["structure"])}["sexp_show_structure"]
    path = show.input_schema["properties"]["path"]["description"]
    assert "[0] is its name" in path and "index 0 is the head" in path
    assert "sexp_* tool" in show.description


def test_groups_stay_within_their_budget():
    for group, budget in BUDGET.items():
        total = sum(size(t) for t in all_tools([group]))
        assert total <= budget, (group, total)


def test_the_token_table_in_docs_mcp_is_current():
    """docs/mcp.md's table of `--tools` sets is `bench/tool_tokens.py --sets`: the same sets, the
    same tool counts, and characters within 5% (a reworded description needs no new table, a
    tool more or a rewrite does: re-run the command named above the table)."""
    import re
    import sys
    from pathlib import Path

    from lispshell.tools.registry import select_tools

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "bench"))
    from tool_tokens import READY_MADE

    text = (root / "docs" / "mcp.md").read_text()
    assert "bench/tool_tokens.py --sets" in text
    rows = re.findall(r"^\| `([^`]+)`(?: \(default\))? \| (\d+) \| ([\d,]+) \| ([\d,]+) \|", text, re.M)
    assert [r[0] for r in rows] == [spec for spec, _ in READY_MADE]
    for spec, count, chars, _ in rows:
        tools = select_tools(spec)
        measured = sum(size(t) for t in tools)
        assert int(count) == len(tools), (spec, count, len(tools))
        assert abs(int(chars.replace(",", "")) - measured) <= 0.05 * measured, (spec, chars, measured)
