"""Recognise the project in a directory and start its Lisp with it.

A project is found from its marker files, in the directory given (`--project DIR`) or, without
one, in the current directory and its parents up to the nearest `.git` (or the home directory;
see `search_chain`). Finding runs nothing; the project's code runs only once the person trusts
it (lispshell.workspace.trust), and until then the Lisp starts bare:

  *.asd          Common Lisp (SBCL): the directory holding the .asd files goes on ASDF's
                 central registry, and Quicklisp's setup is loaded when the person has it
                 (~/quicklisp/setup.lisp). Systems are not loaded at start: `,load-system NAME`
                 and the `load_system` tool do that, through the eval gate.
  deps.edn       Clojure: the classpath from the official `clojure -Spath` when that CLI is
                 installed, else the `:paths` of deps.edn (default `src`) in front of the
                 configured Clojure's own classpath (after it: see the Clojure section).
  project.clj    Clojure: the classpath from `lein classpath` when Leiningen is installed
                 (cached in the state directory until project.clj changes), else `src`.
  *.scm          Guile: each module root, found from the files' `define-module` names
                 (`(app util)` in `src/app/util.scm` gives `src`), appended to the load path.

The project only changes the command that starts the Lisp (`[lisp.NAME] command`, extended);
everything else about the session is as without a project. The commands used to ask Leiningen
and the Clojure CLI for a classpath are `[project] lein_classpath` / `clojure_classpath`.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

from lispshell.config import ProjectSettings, default_lisp, settings

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
    classpath: str = ""             # Clojure: put after the configured -cp (see `prepare`)
    deciding: tuple[Path, ...] = () # the files that decide what runs at start (lispshell.workspace.trust)
    found: str = ""                 # what was found, said before it is trusted

    def command(self, base: list[str]) -> list[str]:
        """`base` (the configured command for this Lisp) extended to start the project."""
        command = list(base)
        if self.classpath:
            for flag in ("-cp", "-classpath", "--class-path"):
                if flag in command[:-1]:
                    i = command.index(flag)
                    command[i + 1] = command[i + 1] + os.pathsep + self.classpath
                    break
            else:
                raise ProjectError(
                    f"cannot add the project's classpath: the Clojure command {shlex.join(base)!r} "
                    "has no -cp argument")
        return command + list(self.extra_args)


def find(start: Path, *, search_parents: bool = True) -> Project | None:
    """The project at `start`, or with `search_parents` the nearest one above it within
    `search_chain(start)`. Nothing of the project runs here: marker files are listed and read
    as text (`prepare` is what asks a build tool, once the person trusts the project)."""
    start = Path(start).expanduser().resolve()
    if not start.is_dir():
        raise ProjectError(f"{start} is not a directory")
    chain = search_chain(start) if search_parents else [start] if _owned(start) else []
    for directory in chain:
        project = _at(directory, scan=directory == start)
        if project is not None:
            return project
    return None


def clojure_project(start: Path, root: Path | None = None) -> Project | None:
    """The Clojure project that a file in `start` belongs to (the nearest deps.edn or
    project.clj in `search_chain`, or up to `root` when `start` is inside it: the tree the
    person opened), found without scanning any directory."""
    start = Path(start)
    chain = search_chain(start)
    if root is not None and (start == root or root in start.parents):
        chain = [start, *[p for p in start.parents if p == root or root in p.parents]]
    for directory in chain:
        if (directory / "deps.edn").is_file():
            return _deps_edn(directory)
        if (directory / "project.clj").is_file():
            return _lein(directory)
    return None


def search_chain(start: Path) -> list[Path]:
    """`start` and the parents that may speak for it: up to the repository root (the directory
    holding `.git`) or the home directory, whichever comes first. Without either above `start`
    (a shared /tmp, a downloads folder) only `start` counts. A directory the person does not
    own, or that anyone may write to, ends the chain: its files are not theirs. Also where
    `.nrepl-port` is looked for (`find_port_file`)."""
    start = Path(start).expanduser().resolve()
    home = Path.home().resolve()
    chain: list[Path] = []
    directory = start
    while True:
        if not _owned(directory):
            break
        chain.append(directory)
        if (directory / ".git").exists() or directory == home:
            return chain
        if directory.parent == directory:
            break
        directory = directory.parent
    return chain[:1] if chain and chain[0] == start else []


def _owned(directory: Path) -> bool:
    try:
        st = directory.stat()
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o002


def _at(root: Path, *, scan: bool) -> Project | None:
    if (root / "deps.edn").is_file():
        return _deps_edn(root)
    if (root / "project.clj").is_file():
        return _lein(root)
    # Only the directory's own .asd files: one in a subdirectory is that directory's project
    # (or vendored code), not this one's.
    asds = [f for f in _listdir(root) if f.suffix == ".asd"]
    if asds:
        return _asdf(root, asds)
    if not scan:
        return None
    scms = [f for f in _scan(root) if f.suffix in (".scm", ".sld")]
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
    systems = tuple(f.stem for f in asds)
    args = ["--eval", "(require :asdf)", "--eval", _asdf_search(root)]
    quicklisp = Path.home() / "quicklisp" / "setup.lisp"
    how = "ASDF's registry"
    if quicklisp.is_file():
        args = ["--load", str(quicklisp)] + args
        how += " and Quicklisp"
    names = ", ".join(systems)
    return Project(
        kind="asdf", lisp="sbcl", root=root, systems=systems, paths=(root,), deciding=tuple(asds),
        extra_args=tuple(args), found=f"ASDF project {root.name}",
        summary=f"ASDF project {root.name}: system{'s' if len(systems) > 1 else ''} {names} on "
                f"{how}; `,load-system {systems[0]}` loads it")


def _asdf_search(root: Path) -> str:
    """The project's systems for ASDF, found by name in `root`, never one of SBCL's own modules.

    Not `asdf:*central-registry*`: a directory there answers for every name, so a project's
    own sb-posix.asd would be what `(require :sb-posix)` (ASDF's module provider comes first)
    and `:depends-on (:sb-posix)` load. SBCL's modules are the fasls in its contrib directory.
    Namestrings, not #p: no reader macro on the command line."""
    return ("(push (let ((root (sb-ext:parse-native-namestring "
            + _cl_string(str(root) + "/") + "))) "
            "(lambda (name) (let ((name (asdf:primary-system-name name))) "
            "(unless (probe-file (merge-pathnames (make-pathname :directory '(:relative "
            "\"contrib\") :name name :type \"fasl\") (sb-int:sbcl-homedir-pathname))) "
            "(probe-file (merge-pathnames (make-pathname :name name :type \"asd\") root))))))"
            " asdf:*system-definition-search-functions*)")


def _cl_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- Clojure ----------------------------------------------------------------------------------
# The classpath goes *after* the configured one: a project's clojure/core.clj (or any class of
# the Lisp's own) never shadows the installed Clojure that lispshell's loop relies on.

_START_NAMES = ("user.clj", "user.cljc", "data_readers.clj", "data_readers.cljc")
# Every key under which Leiningen (profiles included) or deps.edn (aliases included) names a
# classpath directory: what is on the classpath at some start is what can run at it.
_PATH_KEYS = frozenset({":paths", ":extra-paths", ":source-paths", ":test-paths",
                        ":resource-paths"})
# Leiningen's defaults (src, test, resources, and dev-resources in the default dev profile).
_LEIN_DEFAULTS = ("src", "test", "resources", "dev-resources")
MAX_REQUIRED = 500        # a user.clj's requires followed this far, no further


def _clojure_deciding(root: Path, marker: str, paths) -> tuple[Path, ...]:
    """The marker, and what Clojure runs or reads by itself when the JVM starts with the
    project's classpath: user.clj (loaded by clojure.main) and data_readers.clj(c) in every
    directory any profile or alias puts on it, each jar of the project's own (its bytes stand
    for the user.clj it may hold), and the project's files that the user.clj files require,
    followed through their own requires."""
    named = [root / p for p in _edn_path_strings(root / marker)]
    defaults = _LEIN_DEFAULTS if marker == "project.clj" else ("src",)
    entries = dict.fromkeys([*paths, *named, *(root / d for d in (*defaults, "dev"))])
    found: list[Path] = [root / marker]
    dirs: list[Path] = []
    for entry in entries:
        if entry.suffix == ".jar":
            found.append(entry)
            continue
        dirs.append(entry)
        found += [entry / name for name in _START_NAMES]
    starts = [f for f in found if f.name.startswith("user.") and f.is_file()]
    found += _required(dirs, starts)
    return tuple(dict.fromkeys(found))


def startup_files(project: "Project | None") -> frozenset[Path]:
    """The project's files that run at start without being loaded (for lispshell.workspace.writes)."""
    if project is None:
        return frozenset()
    return frozenset(Path(os.path.realpath(f)) for f in project.deciding)


def _edn_path_strings(path: Path) -> list[str]:
    """Every directory or jar named under a `_PATH_KEYS` key anywhere in a project.clj or
    deps.edn (profiles and aliases included), read with lispshell's reader (never evaluated);
    only those inside the project."""
    from lispshell.syntax import cst

    try:
        text = path.read_text(errors="replace")
        tree = cst.parse(text, "clojure")
    except Exception:  # noqa: BLE001 - an unreadable file names no paths we can use
        return []
    out: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        items = [c for c in node.children if c.kind in cst.CODE_KINDS]
        for key, value in zip(items, items[1:]):
            if key.kind == "atom" and text[key.start:key.end] in _PATH_KEYS \
                    and value.kind == "list":
                out += [text[c.start + 1:c.end - 1] for c in value.children if c.kind == "string"]
        stack += [c for c in items if c.kind in ("list", "prefixed")]
    return [p for p in dict.fromkeys(out) if _inside(path.parent, p)]


def _required(dirs: list[Path], starts: list[Path]) -> list[Path]:
    """The files under `dirs` that `starts` require or load, followed transitively."""
    seen: dict[Path, None] = {}
    todo = list(starts)
    while todo and len(seen) < MAX_REQUIRED:
        current = todo.pop()
        for name in _namespaces(current):
            for directory in dirs:
                for suffix in (".clj", ".cljc"):
                    candidate = directory / (name + suffix)
                    if candidate not in seen and candidate.is_file():
                        seen[candidate] = None
                        todo.append(candidate)
    return list(seen)


def _namespaces(path: Path) -> list[str]:
    """The relative file names (`app/dev` for app.dev) a Clojure file requires, uses or loads,
    in `ns` or in calls of require, use and load: read, never evaluated."""
    from lispshell.syntax import cst

    try:
        text = path.read_text(errors="replace")
        tree = cst.parse(text, "clojure")
    except Exception:  # noqa: BLE001 - an unreadable file requires nothing we can see
        return []

    def word(node) -> str:
        while node.kind == "prefixed" and node.children:
            node = [c for c in node.children if c.kind in cst.CODE_KINDS][-1]
        return text[node.start:node.end] if node.kind == "atom" else ""

    def spec(node) -> list[str]:            # app.dev, [app.dev :as d], [app x y], 'app.dev
        while node.kind == "prefixed" and node.code_children:
            node = node.code_children[-1]
        if node.kind == "atom":
            return [word(node)]
        if node.kind == "string":
            return ["\0" + text[node.start + 1:node.end - 1]]
        if node.kind != "list" or not node.code_children:
            return []
        head, *rest = node.code_children
        if head.kind == "list" or head.kind == "prefixed":   # (require '[a] '[b])
            return [n for child in node.code_children for n in spec(child)]
        first = word(head)
        inner = [word(c) for c in rest if c.kind == "atom" and not word(c).startswith(":")]
        if rest and all(c.kind in ("atom", "list") for c in rest) and inner \
                and not any(word(c).startswith(":") for c in rest if c.kind == "atom"):
            return [f"{first}.{w}" for w in inner]            # a prefix list
        return [first]

    names: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        kids = node.code_children if node.kind in ("list", "root", "prefixed") else []
        stack += kids
        if node.kind != "list" or not kids:
            continue
        head = word(kids[0])
        if head == "ns":
            for clause in kids[1:]:
                parts = clause.code_children if clause.kind == "list" else []
                if parts and word(parts[0]) in (":require", ":use", ":load"):
                    for item in parts[1:]:
                        names += spec(item)
        elif head in ("require", "use", "load", "clojure.core/require", "clojure.core/load"):
            for item in kids[1:]:
                names += spec(item)
    out = []
    for n in names:
        if n.startswith("\0"):                      # (load "app/x"): a path, not a name
            out.append(n[1:].lstrip("/"))
        elif n and not n.startswith(":"):
            out.append(n.replace("-", "_").replace(".", "/"))
    return [n for n in out if n and ".." not in n.split("/")]


def _deps_edn(root: Path) -> Project:
    paths = tuple(root / p for p in (_edn_paths(root / "deps.edn") or ["src"]))
    return Project(kind="deps.edn", lisp="clojure", root=root, paths=paths,
                   deciding=_clojure_deciding(root, "deps.edn", paths),
                   found=f"Clojure project {root.name} (deps.edn)",
                   summary=f"Clojure project {root.name} (deps.edn)")


def _prepare_deps_edn(project: Project, config: dict) -> Project:
    root = project.root
    command = _project_cfg(config, "clojure_classpath")
    classpath = _official_cli_classpath(root, command, config)
    if classpath:
        return dataclasses.replace(project, classpath=classpath,
                                   summary=f"Clojure project {root.name} (deps.edn): classpath "
                                           f"from `{shlex.join(command)}`")
    shown = ", ".join(str(p.relative_to(root)) for p in project.paths)
    return dataclasses.replace(
        project, classpath=os.pathsep.join(str(p) for p in project.paths),
        summary=f"Clojure project {root.name} (deps.edn, no Clojure CLI found): {shown} on the "
                "classpath; dependencies are not resolved")


def _official_cli_classpath(root: Path, command: list[str], config: dict) -> str:
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
                              stdin=subprocess.DEVNULL, env=_child_env(config))
    except (OSError, subprocess.TimeoutExpired):
        return ""
    out = done.stdout.strip()
    return out if done.returncode == 0 and out and "\n" not in out else ""


def _edn_paths(path: Path) -> list[str]:
    """`:paths [...]` of a deps.edn, read with lispshell's own reader (never evaluated)."""
    from lispshell.syntax import cst

    try:
        text = path.read_text(errors="replace")
        tree = cst.parse(text, "clojure")
    except Exception:  # noqa: BLE001 - an unreadable deps.edn just has no paths we can use
        return []
    for top in tree.children:
        if top.kind != "list" or text[top.start] != "{":
            continue
        items = [c for c in top.children if c.kind in cst.CODE_KINDS]
        for key, value in zip(items[::2], items[1::2]):
            if text[key.start:key.end] == ":paths" and value.kind == "list":
                return [p for p in (text[s.start + 1:s.end - 1] for s in value.children
                                    if s.kind == "string") if _inside(path.parent, p)]
    return []


def _inside(root: Path, relative: str) -> bool:
    """A source path the project names must be its own: `../elsewhere` or `/etc` would put
    someone else's code on the classpath under the project's trust."""
    try:
        (root / relative).resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return bool(relative)


def _lein(root: Path) -> Project:
    src = root / "src"
    return Project(kind="lein", lisp="clojure", root=root, paths=(src,),
                   deciding=_clojure_deciding(root, "project.clj", (src,)),
                   found=f"Clojure project {root.name} (project.clj)",
                   summary=f"Clojure project {root.name} (project.clj)")


def _prepare_lein(project: Project, config: dict) -> Project:
    root = project.root
    command = _project_cfg(config, "lein_classpath")
    if not shutil.which(command[0]):
        return dataclasses.replace(
            project, classpath=str(root / "src"),
            summary=f"Clojure project {root.name} (project.clj, Leiningen not installed): src "
                    "on the classpath; dependencies are not resolved")
    return dataclasses.replace(project, classpath=_cached_classpath(root, command, config),
                               summary=f"Clojure project {root.name} (project.clj): classpath "
                                       f"from `{shlex.join(command)}`")


def _cached_classpath(root: Path, command: list[str], config: dict) -> str:
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
                              stdin=subprocess.DEVNULL, env=_child_env(config))
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


def _child_env(config: dict) -> dict[str, str]:
    from lispshell.config import child_environment
    return child_environment(config)


# --- Guile ------------------------------------------------------------------------------------
# `-L DIR` puts DIR in *front* of Guile's load path, where a project's
# language/scheme/compile-tree-il.scm replaces Guile's own module of that name. The project's
# roots are appended instead, by a small file loaded with `-l`: Guile's own modules always win.

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
    shown = ", ".join(str(d.relative_to(root)) if d != root else "." for d in dirs)
    return Project(kind="guile", lisp="guile", root=root, paths=dirs,
                   found=f"Guile project {root.name}",
                   summary=f"Guile project {root.name}: modules from {shown}, after Guile's own")


def _prepare_guile(project: Project, config: dict) -> Project:
    from lispshell.config import state_dir
    from lispshell.lisp.dialects import string_literal

    code = ("(set! %load-path (append %load-path (list "
            + " ".join(string_literal(str(d)) for d in project.paths) + ")))\n")
    folder = state_dir() / "guile-load-paths"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (hashlib.sha256(code.encode()).hexdigest()[:32] + ".scm")
    if not target.is_file():
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(code)
        os.replace(tmp, target)
    return dataclasses.replace(project, extra_args=("-l", str(target)))


# --- applying a project to the configuration ---------------------------------------------------

def _project_cfg(config: dict, key: str) -> list[str]:
    value = getattr(settings(config, ProjectSettings), key)
    return shlex.split(value) if isinstance(value, str) else list(value)


_PREPARE = {"deps.edn": _prepare_deps_edn, "lein": _prepare_lein, "guile": _prepare_guile}


def prepare(project: Project, config: dict) -> Project:
    """`project` with what its start needs that only a build tool knows (a classpath). This
    runs the project's tooling (`lein classpath` evaluates project.clj): only for a project the
    person trusts."""
    step = _PREPARE.get(project.kind)
    return step(project, config) if step else project


def apply(project: Project, config: dict, lisp: str) -> dict:
    """`config` with `lisp`'s command extended to start `project` (a copy; `config` is
    unchanged). Runs the project's build tooling (`prepare`): only for a trusted project."""
    if project.lisp != lisp:
        raise ProjectError(f"{project.root} is a {project.lisp} project ({project.kind}); "
                           f"start it with --lisp {project.lisp}, or give --no-project")
    project = prepare(project, config)
    return _extended(project, config, lisp)


def _extended(project: Project, config: dict, lisp: str) -> dict:
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
                          systems=list(project.systems), trusted=True, summary=project.summary)
    return out


def untrusted_notice(project: Project, verdict) -> str:
    """What the person reads when a project was found but not started with its code."""
    from lispshell.show import visible

    if verdict.exposed:
        from lispshell.workspace.trust import exposed_message
        return (f"{project.found} in {visible(str(project.root))}: {exposed_message(verdict.exposed)}"
                f" Until then none of its code runs: a bare {_display(project.lisp)}.")
    why = (f"it was trusted, but {', '.join(map(visible, verdict.changed))} changed since"
           + _model_changes(project, verdict.changed)
           if verdict.known else "it is not trusted yet")
    return (f"{project.found} in {project.root}: {why}, so none of its code runs: a bare "
            f"{_display(project.lisp)}. To start with the project: `lispshell trust "
            f"{project.root}` (or `,trust` in the REPL).")


def _model_changes(project: Project, changed) -> str:
    """' (the model's edits: ...)' for the changed start-up files whose last change the
    undo journal records as lispshell's own writes, so the person knows who changed them."""
    from lispshell.workspace import journal
    from lispshell.show import visible

    try:
        entries = journal.entries()
    except OSError:
        return ""
    mine = []
    for name in changed:
        path = os.path.realpath(Path(project.root) / name)
        last = [e for e in entries if e.get("path") == path]
        if last and last[-1].get("after") == _short_digest(Path(path)):
            mine.append(f"{visible(name)} by {visible(str(last[-1].get('tool') or 'an edit'))}")
    if not mine:
        return ""
    return (f" (changed through lispshell: {', '.join(mine)}; `lispshell trust --diff` shows "
            "the changes, `lispshell undo FILE` puts one back)")


def _short_digest(path: Path) -> str | None:
    from lispshell.workspace.files import digest
    try:
        return digest(path.read_bytes())
    except OSError:
        return None


def _display(lisp: str) -> str:
    from lispshell.lisp.dialects import get_dialect
    return get_dialect(lisp).display


def configure(config: dict, *, directory: str | Path | None = None, enabled: bool = True,
              explicit_lisp: str | None = None,
              start: Path | None = None) -> tuple[dict, str, str | None]:
    """(config, lisp, notice) for a start with `--project directory` (None: look in `start`,
    by default the current directory, and its parents, unless `enabled` is false or
    `[project] detect` is off).

    A trusted project extends the Lisp's command; an untrusted one leaves a bare Lisp (of the
    project's kind) and the notice says how to trust it; `config["project"]` says which
    (`trusted`, `root`, `summary`), for `,trust` and the MCP server's instructions. A project
    found on its own gives way to an explicit `--lisp` of another Lisp; `--project` with nothing
    there, or with the wrong `--lisp`, is an error (ProjectError). `--project` chooses the
    directory, not its trust: a checked-in `.mcp.json` could pass it.
    """
    from lispshell.workspace import trust

    lisp = explicit_lisp or default_lisp(config)
    detect = settings(config, ProjectSettings).detect
    if directory is None and not (enabled and detect):
        return config, lisp, None
    given = directory is not None
    project = find(Path(directory) if given else (start or Path.cwd()), search_parents=not given)
    if project is None:
        if given:
            raise ProjectError(f"no project in {directory}: looked for *.asd, deps.edn, "
                               "project.clj and Guile modules (define-module)")
        return config, lisp, None
    if explicit_lisp and explicit_lisp != project.lisp:
        if not given:
            return config, lisp, None
        raise ProjectError(f"{project.root} is a {project.lisp} project ({project.kind}); "
                           f"start it with --lisp {project.lisp}, or give --no-project")
    verdict = trust.check(project)
    if not verdict.trusted:
        out = copy.deepcopy(config)
        out["project"] = dict(out.get("project") or {}, root=str(project.root),
                              kind=project.kind, trusted=False, found=project.found,
                              notice=untrusted_notice(project, verdict))
        return out, project.lisp, out["project"]["notice"]
    project = prepare(project, config)
    return _extended(project, config, project.lisp), project.lisp, project.summary


# --- the port file a tool wrote next to the project ----------------------------------------------
# nREPL's is the one with a convention.
PORT_FILES = ((".nrepl-port", "nrepl"),)


def connect_target(text: str | None, start: Path | None = None):
    """Where `--connect` (or `,connect`) goes: its argument, or without one the port file in
    `start` (default: the current directory) or a parent. Raises ConnectError."""
    from lispshell.lisp import connection

    if (text or "").strip():
        return connection.parse_target(text)
    found = find_port_file(start)
    if found is None:
        raise connection.ConnectError(
            "no address given and no .nrepl-port file in "
            f"{Path(start or os.getcwd()).resolve()} or its parents up to the repository's "
            "root; give one, e.g. --connect nrepl://localhost:7888")
    return found


def find_port_file(start: Path | None = None):
    """The first port file in `start` (default: the current directory) or a parent, up to the
    repository root or home (`project.search_chain`: never a shared or foreign directory). A
    port file someone else owns is refused: it would send the person's code, and what they type,
    to that someone's listener."""
    from lispshell.lisp import connection

    here = Path(start or os.getcwd()).resolve()
    for folder in search_chain(here):
        for name, scheme in PORT_FILES:
            f = folder / name
            try:
                fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as port_file:
                st = os.fstat(port_file.fileno())
                if st.st_uid != os.geteuid() or not S_ISREG(st.st_mode):
                    raise connection.ConnectError(
                        f"{f} is not a file of yours (owner uid {st.st_uid}): not connecting "
                        "to the port it names; give the address")
                text = port_file.read(64).decode("utf-8", "replace").strip()
            if text.isdigit() and 0 < int(text) < 65536:
                return connection.Target(scheme, "127.0.0.1", int(text))
            raise connection.ConnectError(f"{f} does not hold a port number: {text[:40]!r}")
    return None
