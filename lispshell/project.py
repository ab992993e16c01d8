"""Recognise the project in a directory and start its Lisp with it.

A project is found from its marker files, in the directory given (`--project DIR`) or, without
one, in the current directory and its parents up to the nearest `.git` (or the home directory):

  *.asd          Common Lisp (SBCL): every directory holding an .asd file goes on ASDF's
                 central registry, and Quicklisp's setup is loaded when the person has it
                 (~/quicklisp/setup.lisp). Systems are not loaded at start: `,load-system NAME`
                 and the `load_system` tool do that, through the eval gate.
  deps.edn       Clojure: the classpath from the official `clojure -Spath` when that CLI is
                 installed, else the `:paths` of deps.edn (default `src`) in front of the
                 configured Clojure's own classpath.
  project.clj    Clojure: the classpath from `lein classpath` when Leiningen is installed
                 (cached in the state directory until project.clj changes), else `src`.
  *.scm          Guile: `-L DIR` for each module root, found from the files' `define-module`
                 names (`(app util)` in `src/app/util.scm` gives `-L src`).

The project only changes the command that starts the Lisp (`[lisp.NAME] command`, extended);
everything else about the session is as without a project. The commands used to ask Leiningen
and the Clojure CLI for a classpath are `[project] lein_classpath` / `clojure_classpath`.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "target", ".cpcache", "build",
                       "_build", ".venv", "__pycache__"})
MAX_DIRS = 2000           # a scan of the start directory stops here: a home directory is no project
MAX_DEPTH = 6


class ProjectError(Exception):
    """A project that was found but cannot be started as found (the message says why)."""


@dataclass(frozen=True)
class Project:
    kind: str                       # "asdf", "deps.edn", "lein", "guile"
    lisp: str                       # the Lisp it runs on: sbcl, clojure or guile
    root: Path
    summary: str                    # one line for the person: what was found and how it starts
    systems: tuple[str, ...] = ()   # ASDF system names (asdf)
    paths: tuple[Path, ...] = ()    # registry dirs (asdf), classpath entries, -L dirs (guile)
    extra_args: tuple[str, ...] = field(default=(), repr=False)   # appended to the command
    classpath: str = ""             # Clojure: put in front of the configured -cp

    def command(self, base: list[str]) -> list[str]:
        """`base` (the configured command for this Lisp) extended to start the project."""
        command = list(base)
        if self.classpath:
            for flag in ("-cp", "-classpath", "--class-path"):
                if flag in command[:-1]:
                    i = command.index(flag)
                    command[i + 1] = self.classpath + os.pathsep + command[i + 1]
                    break
            else:
                raise ProjectError(
                    f"cannot add the project's classpath: the Clojure command {shlex.join(base)!r} "
                    "has no -cp argument")
        return command + list(self.extra_args)


def find(start: Path, config: dict | None = None, *, search_parents: bool = True) -> Project | None:
    """The project at `start`, or with `search_parents` the nearest one above it (up to the
    directory holding `.git`, or the home directory). Only `start` is searched below itself
    (bounded: MAX_DIRS directories, MAX_DEPTH deep); a parent counts only by its own marker files,
    so starting in a big tree costs a directory listing per level."""
    start = Path(start).expanduser().resolve()
    if not start.is_dir():
        raise ProjectError(f"{start} is not a directory")
    project = _at(start, config or {}, scan=True)
    home = Path.home().resolve()
    directory = start
    while project is None and search_parents:
        if (directory / ".git").exists() or directory == home or directory.parent == directory:
            break
        directory = directory.parent
        project = _at(directory, config or {}, scan=False)
    return project


def _at(root: Path, config: dict, *, scan: bool) -> Project | None:
    if (root / "deps.edn").is_file():
        return _deps_edn(root, config)
    if (root / "project.clj").is_file():
        return _lein(root, config)
    files = _scan(root) if scan else [f for f in _listdir(root) if f.suffix == ".asd"]
    # An .asd at the top or one level down is this project's; deeper ones are vendored.
    asds = [f for f in files if f.suffix == ".asd" and len(f.relative_to(root).parts) <= 2]
    if asds:
        return _asdf(root, asds)
    scms = [f for f in files if f.suffix in (".scm", ".sld")]
    return _guile(root, scms) if scms else None


def _listdir(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.is_file())
    except OSError:
        return []


def _scan(root: Path) -> list[Path]:
    found: list[Path] = []
    dirs = 0
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        dirs += 1
        if depth >= MAX_DEPTH or dirs >= MAX_DIRS:
            dirnames[:] = []
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        found += [Path(dirpath) / n for n in sorted(filenames) if n.endswith((".asd", ".scm", ".sld"))]
    return found


# --- Common Lisp: ASDF ------------------------------------------------------------------------

def _asdf(root: Path, asds: list[Path]) -> Project:
    dirs = tuple(dict.fromkeys(f.parent for f in asds))
    systems = tuple(f.stem for f in asds)
    pushes = " ".join(f"(push {_cl_string(str(d) + '/')} asdf:*central-registry*)" for d in dirs)
    # ASDF takes namestrings in *central-registry*: no #p reader macro on the command line.
    args = ["--eval", "(require :asdf)", "--eval", f"(progn {pushes})"]
    quicklisp = Path.home() / "quicklisp" / "setup.lisp"
    how = "ASDF's registry"
    if quicklisp.is_file():
        args = ["--load", str(quicklisp)] + args
        how += " and Quicklisp"
    names = ", ".join(systems)
    return Project(
        kind="asdf", lisp="sbcl", root=root, systems=systems, paths=dirs, extra_args=tuple(args),
        summary=f"ASDF project {root.name}: system{'s' if len(systems) > 1 else ''} {names} on "
                f"{how}; `,load-system {systems[0]}` loads it")


def _cl_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- Clojure ----------------------------------------------------------------------------------

def _deps_edn(root: Path, config: dict) -> Project:
    command = _project_cfg(config, "clojure_classpath", ["clojure", "-Spath"])
    classpath = _official_cli_classpath(root, command)
    if classpath:
        return Project(kind="deps.edn", lisp="clojure", root=root, classpath=classpath,
                       summary=f"Clojure project {root.name} (deps.edn): classpath from "
                               f"`{shlex.join(command)}`")
    paths = _edn_paths(root / "deps.edn") or ["src"]
    entries = tuple(root / p for p in paths)
    return Project(kind="deps.edn", lisp="clojure", root=root, paths=entries,
                   classpath=os.pathsep.join(str(p) for p in entries),
                   summary=f"Clojure project {root.name} (deps.edn, no Clojure CLI found): "
                           f"{', '.join(paths)} on the classpath; dependencies are not resolved")


def _official_cli_classpath(root: Path, command: list[str]) -> str:
    """The classpath the official Clojure CLI computes, or "" when it is not the official CLI.

    Debian's `clojure` is a wrapper around clojure.main that knows no `-Spath`; it is told apart
    by reading the script (running it would start a JVM just to fail), and the deps.edn's paths
    are used instead.
    """
    program = shutil.which(command[0])
    if not program:
        return ""
    try:
        with open(program, "rb") as f:
            head = f.read(65536)
    except OSError:
        return ""
    if command[0] == "clojure" and head.startswith(b"#!") and b"Spath" not in head:
        return ""
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, env=_child_env())
    except (OSError, subprocess.TimeoutExpired):
        return ""
    out = done.stdout.strip()
    return out if done.returncode == 0 and out and "\n" not in out else ""


def _edn_paths(path: Path) -> list[str]:
    """`:paths [...]` of a deps.edn, read with lispshell's own reader (never evaluated)."""
    from lispshell.syntax import cst

    text = path.read_text(errors="replace")
    try:
        tree = cst.parse(text, "clojure")
    except Exception:  # noqa: BLE001 - an unreadable deps.edn just has no paths we can use
        return []
    for top in tree.children:
        if top.kind != "list" or text[top.start] != "{":
            continue
        items = [c for c in top.children if c.kind in cst.CODE_KINDS]
        for key, value in zip(items[::2], items[1::2]):
            if text[key.start:key.end] == ":paths" and value.kind == "list":
                return [text[s.start + 1:s.end - 1] for s in value.children if s.kind == "string"]
    return []


def _lein(root: Path, config: dict) -> Project:
    command = _project_cfg(config, "lein_classpath", ["lein", "classpath"])
    if not shutil.which(command[0]):
        src = root / "src"
        return Project(kind="lein", lisp="clojure", root=root, paths=(src,), classpath=str(src),
                       summary=f"Clojure project {root.name} (project.clj, Leiningen not "
                               "installed): src on the classpath; dependencies are not resolved")
    classpath = _cached_classpath(root, command)
    return Project(kind="lein", lisp="clojure", root=root, classpath=classpath,
                   summary=f"Clojure project {root.name} (project.clj): classpath from "
                           f"`{shlex.join(command)}`")


def _cached_classpath(root: Path, command: list[str]) -> str:
    """Leiningen's classpath, cached until project.clj (or the command) changes: lein takes
    seconds to start, the cache makes the next start as fast as a bare Clojure."""
    from lispshell.config import state_dir

    key = hashlib.sha256((str(root) + "\0" + "\0".join(command) + "\0").encode()
                         + (root / "project.clj").read_bytes()).hexdigest()[:32]
    cache = state_dir() / "classpaths" / key
    if cache.is_file():
        return cache.read_text().strip()
    import sys
    print(f"lispshell: asking `{shlex.join(command)}` for {root.name}'s classpath (cached "
          "afterwards until project.clj changes)...", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL, env=_child_env())
    except subprocess.TimeoutExpired:
        raise ProjectError(f"`{shlex.join(command)}` in {root} did not finish in 600 s") from None
    except OSError as exc:
        raise ProjectError(f"`{shlex.join(command)}` could not run: {exc.strerror}") from None
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ProjectError(f"`{shlex.join(command)}` in {root} failed: {detail}")
    classpath = lines[-1].strip()
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(classpath + "\n")
    os.replace(tmp, cache)
    return classpath


def _child_env() -> dict[str, str]:
    from lispshell.config import child_environment
    return child_environment()


# --- Guile ------------------------------------------------------------------------------------

_DEFINE_MODULE = re.compile(r"^\s*\(define-(?:module|library)\s+\(([^()]*)\)", re.MULTILINE)


def _guile(root: Path, files: list[Path]) -> Project | None:
    roots: dict[Path, None] = {}
    for f in files:
        try:
            head = f.read_text(errors="replace")[:4096]
        except OSError:
            continue
        match = _DEFINE_MODULE.search(head)
        if not match:
            continue
        parts = match.group(1).split()
        rel = f.with_suffix("").parts[-len(parts):] if parts else ()
        if list(rel) == parts:   # the module's name is its path: the rest is a module root
            module_root = Path(*f.with_suffix("").parts[:-len(parts)])
            # The root or a direct child (src/, modules/): deeper trees are tests' fixtures or
            # vendored code, not where this project's modules live.
            if len(module_root.relative_to(root).parts) <= 1:
                roots[module_root] = None
    if not roots:
        return None
    dirs = tuple(roots)
    args = tuple(a for d in dirs for a in ("-L", str(d)))
    shown = ", ".join(str(d.relative_to(root)) if d != root else "." for d in dirs)
    return Project(kind="guile", lisp="guile", root=root, paths=dirs, extra_args=args,
                   summary=f"Guile project {root.name}: modules from {shown} (-L)")


# --- applying a project to the configuration ---------------------------------------------------

def _project_cfg(config: dict, key: str, default: list[str]) -> list[str]:
    value = (config.get("project") or {}).get(key) or default
    return shlex.split(value) if isinstance(value, str) else list(value)


def apply(project: Project, config: dict, lisp: str) -> dict:
    """`config` with `lisp`'s command extended to start `project` (a copy; `config` is unchanged)."""
    import copy

    if project.lisp != lisp:
        raise ProjectError(f"{project.root} is a {project.lisp} project ({project.kind}); "
                           f"start it with --lisp {project.lisp}, or give --no-project")
    out = copy.deepcopy(config)
    lisp_cfg = out.setdefault("lisp", {}).setdefault(lisp, {})
    base = lisp_cfg.get("command")
    if not base:
        from lispshell.lisp.dialects import get_dialect
        base = list(get_dialect(lisp).command)
    if isinstance(base, str):
        base = shlex.split(base)
    lisp_cfg["command"] = project.command(list(base))
    out["project"] = dict(out.get("project") or {}, root=str(project.root), kind=project.kind,
                          systems=list(project.systems))
    return out


def configure(config: dict, *, directory: str | Path | None = None, enabled: bool = True,
              explicit_lisp: str | None = None,
              start: Path | None = None) -> tuple[dict, str, str | None]:
    """(config, lisp, summary) for a start with `--project directory` (None: look in `start`,
    by default the current directory, and its parents, unless `enabled` is false or
    `[project] detect` is off).

    A project found on its own gives way to an explicit `--lisp` of another Lisp; `--project`
    with nothing there, or with the wrong `--lisp`, is an error (ProjectError).
    """
    lisp = explicit_lisp or config.get("default_lisp") or "sbcl"
    detect = (config.get("project") or {}).get("detect", True)
    if directory is None and not (enabled and detect):
        return config, lisp, None
    given = directory is not None
    project = find(Path(directory) if given else (start or Path.cwd()), config,
                   search_parents=not given)
    if project is None:
        if given:
            raise ProjectError(f"no project in {directory}: looked for *.asd, deps.edn, "
                               "project.clj and Guile modules (define-module)")
        return config, lisp, None
    if explicit_lisp and explicit_lisp != project.lisp and not given:
        return config, lisp, None
    return apply(project, config, explicit_lisp or project.lisp), project.lisp, project.summary
