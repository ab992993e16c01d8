"""The house's layers hold: no module imports one from a layer above it, and no import circles
(imports inside functions count: they are circles all the same, only deferred). The layers,
lowest first, as docs/development.md describes them:"""
from __future__ import annotations

import ast
from pathlib import Path

import lispshell

LAYERS = (
    ("syntax",),                        # reading, repairing and editing text: nothing of ours
    ("show", "config", "data", "credentials"),   # what the person is shown; settings, keys
    ("lisp",),                          # the session contract and its six transports
    ("workspace",),                     # the person's files: writes, journal, projects, trust
    ("tools",),                         # one registry of tools, the gate
    ("llm",),                           # the conversation with the model
    ("mcp", "repl"),                    # the two front ends
    ("cli", "__main__", "__init__"),    # entry points
)
ROOT = Path(lispshell.__file__).parent


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for f in root.rglob("*.py"):
        name = ".".join(("lispshell",) + f.relative_to(root).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = f
    return found


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    def resolve(name: str) -> str:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, f in found.items():
        out = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out |= {resolve(a.name) for a in node.names if a.name.startswith("lispshell.")}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.startswith("lispshell"):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    out.add(full if full in found else resolve(node.module))
        graph[name] = out - {name, "lispshell", ""}
    return graph


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module} belongs to no layer: add its package to LAYERS and to "
                         "docs/development.md")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {o}" for m, out in graph.items() for o in out if layer(o) > layer(m))


def test_no_module_imports_from_a_layer_above():
    assert upward(import_graph(modules())) == []


def test_no_import_circles():
    assert circles(import_graph(modules())) == []


def test_syntax_imports_nothing_of_lispshells_but_itself():
    graph = import_graph(modules())
    assert sorted(f"{m} -> {o}" for m, out in graph.items() if m.startswith("lispshell.syntax")
                  for o in out if not o.startswith("lispshell.syntax")) == []


def test_the_checks_catch_a_new_circle_and_a_new_upward_import(tmp_path):
    """The same checks on a copy of the house with one bad import added each way."""
    import shutil

    copy = tmp_path / "lispshell"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    journal = copy / "workspace" / "journal.py"
    journal.write_text(journal.read_text() + "\n\ndef _later():\n"
                       "    from lispshell.workspace import files  # noqa\n")
    syntax = copy / "syntax" / "reading.py"
    syntax.write_text(syntax.read_text() + "\n\nfrom lispshell.tools import registry  # noqa\n")
    graph = import_graph(modules(copy))
    assert ["lispshell.workspace.files", "lispshell.workspace.journal"] in circles(graph)
    assert "lispshell.syntax.reading -> lispshell.tools.registry" in upward(graph)


def private_reaches(root: Path = ROOT) -> list[str]:
    """`repl._name` anywhere but in the module that defines the Repl: a command that needs
    something of the REPL's uses its public face (ready_session, run_in_session, ...)."""
    found = []
    for name, f in modules(root).items():
        if name == "lispshell.repl.app":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Name) and node.value.id == "repl":
                found.append(f"{name}:{node.lineno}: repl.{node.attr}")
    return found


def test_commands_use_the_repls_public_face_only(tmp_path):
    assert private_reaches() == []
    import shutil

    copy = tmp_path / "lispshell"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    commands = copy / "repl" / "commands.py"
    commands.write_text(commands.read_text() + "\n\ndef _peek(repl):\n"
                        "    return repl._loop\n")
    assert [r.split(": ", 1)[1] for r in private_reaches(copy)] == ["repl._loop"]
