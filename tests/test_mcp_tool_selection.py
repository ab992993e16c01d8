"""`lispshell mcp --tools SPEC` and `[mcp] tools`: the tools served, through the SDK's client."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import LISPSHELL
from lispshell.tools.registry import ToolSpecError, all_tools, select_tools
from mcp_harness import answer, connect, run


def names(spec):
    return [t.name for t in select_tools(spec)]


def test_groups_names_and_drops():
    live = [t.name for t in all_tools(["live"])]
    syntax = [t.name for t in all_tools(["syntax"])]
    assert names("live,syntax") == [n for n in names(None) if n in live + syntax]
    assert names("live,-eval") == [n for n in live if n != "eval"]
    assert set(names(["syntax", "read_form"])) == set(syntax) | {"read_form"}
    assert names("-structure") == [t.name for t in all_tools() if t.group != "structure"]
    assert names("all,-delimiters") == [t.name for t in all_tools() if t.group != "delimiters"]
    assert names("") == names(None) == [t.name for t in all_tools()]


@pytest.mark.parametrize("spec, close", [("lve", "live"), ("evl", "eval"), ("-sexp_wrp", "sexp_wrap")])
def test_unknown_names_say_what_is_close(spec, close):
    with pytest.raises(ToolSpecError) as err:
        select_tools(spec)
    assert f"did you mean {close}" in str(err.value)
    assert "groups: debug, delimiters, live, observe, project, structure, syntax" in str(err.value)


def test_only_the_selected_tools_are_listed_and_others_are_refused(tmp_path):
    async def scenario():
        async with connect(tmp_path, "--lisp", "sbcl", "--tools", "live,syntax,-eval") as client:
            listed = sorted(t.name for t in (await client.list_tools()).tools)
            expected = sorted(n for n in names("live,syntax") if n != "eval")
            assert listed == expected
            refused = answer(await client.call_tool("read_form", {"code": "(a)", "form_type": "a",
                                                                  "form_name": "b"}))
            assert refused["error"]["code"] == "NOT_SERVED"
            dropped = answer(await client.call_tool("eval", {"code": "(+ 1 2)"}))
            assert dropped["error"]["code"] == "NOT_SERVED"
            ok = answer(await client.call_tool("validate_syntax", {"code": "(+ 1 2)"}))
            assert ok["ok"] is True
    run(scenario)


def test_config_key_selects_and_the_flag_wins(tmp_path):
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('[mcp]\ntools = "syntax"\n')

    async def scenario(flags, expected):
        from mcp import Client

        from mcp_harness import server_params
        params = server_params(tmp_path, "--lisp", "none", *flags)
        params.env["LISPSHELL_CONFIG_DIR"] = str(config_dir)
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            listed = sorted(t.name for t in (await client.list_tools()).tools)
            assert listed == sorted(expected)
    run(scenario, [], names("syntax"))
    run(scenario, ["--tools", "delimiters"], names("delimiters"))


def test_an_unknown_name_is_a_clear_start_up_error(tmp_path):
    r = subprocess.run([LISPSHELL, "mcp", "--root", str(tmp_path), "--tools", "live,synatx"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2
    assert r.stderr.strip() == ("lispshell mcp: --tools: unknown tool or group 'synatx'; did you "
                                "mean syntax? (groups: debug, delimiters, live, observe, project, structure, syntax; `all` "
                                "is every tool)")


def test_drops_only_as_the_docs_write_them(tmp_path):
    # `--tools -structure` as its own argument: argparse would take it for an option.
    async def scenario():
        async with connect(tmp_path, "--lisp", "none", "--tools", "-structure,-delimiters") as client:
            listed = sorted(t.name for t in (await client.list_tools()).tools)
            assert listed == sorted(n for n in names("-structure,-delimiters")
                                    if n not in names("live") + names("project")
                                    + names("debug") + names("observe"))
            assert "validate_syntax" in listed and "sexp_wrap" not in listed
    run(scenario)


@pytest.mark.parametrize("flags, config, said", [
    (["--tools", "live,-live"], "", "lispshell mcp: --tools 'live,-live' leaves no tool to serve"),
    (["--tools", "live,project"], "", "lispshell mcp: --tools 'live,project' names only tools "
                                      "that need a Lisp, and --lisp none starts none"),
    ([], 'tools = "live,synatx"', "lispshell mcp: [mcp] tools: unknown tool or group 'synatx'"),
    ([], "tools = 5", 'lispshell mcp: [mcp] tools = 5: expected a string such as "live,syntax", '
                      "or a list of names"),
    ([], 'tools = ["live", 3]', "lispshell mcp: [mcp] tools = ['live', 3]: expected a string"),
])
def test_a_selection_that_cannot_be_served_stops_the_server(tmp_path, flags, config, said):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(f"[mcp]\n{config}\n")
    r = subprocess.run([LISPSHELL, "mcp", "--root", str(tmp_path), "--lisp", "none", *flags],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                       env={**os.environ, "LISPSHELL_CONFIG_DIR": str(tmp_path / "config")})
    assert r.returncode == 2 and r.stderr.startswith(said), r.stderr
