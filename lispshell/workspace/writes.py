"""Which files the model may write, and which of those only with the person's yes.

The model's file tools (the form and paredit tools, over MCP, in the REPL) and the Claude Code
hook write Lisp source and nothing else. TOML, JSON, git's INI format and a shell's rc file all
*read* as Lisp (a line of words is a list of symbols), so whether a file parses says nothing;
its name does. Three answers, decided here and nowhere else (`check`):

- `PROTECTED_PATH`, whatever the file is called or reads as: anything under a version-control
  directory (`.git/config`'s `fsmonitor` runs a command at the next `git status`), an agent's or
  editor's settings (`.claude/`, `.vscode/`, `.mcp.json`: a server started from it with
  `--allow-eval` evaluates without asking), and lispshell's own config, state, data and cache
  directories (`[gate] mode`, `[llm] base_url`, trust records, Guile load-path files).
- `NOT_LISP_SOURCE`: a name that does not say a dialect lispshell reads (`.lisp .cl .asd .lsp
  .scm .ss .sld .sls .clj .cljs .cljc .edn .bb`, the Lisp init files by name, or an extension
  the person's `[files] extensions` maps to a dialect). A `dialect` argument that contradicts
  the name is the tools' own `DIALECT_MISMATCH` (tools/structure.py `_dialect_for`), for reads
  and writes alike.
- A file that runs without the person loading it (`Verdict.startup` says why): the Lisp init
  files (`~/.sbclrc`, `~/.guile`, ...), any Lisp file in a dot-directory (a program's config
  under `~/.config`), `.asd` files (ASDF evaluates them while it looks for systems), Clojure's
  `user.clj`, `data_readers.clj(c)`, `project.clj`, `deps.edn` and the project files that
  `user.clj` requires (`project.startup_files`). Such an edit passes the gate as an edit: the
  diff is shown and the person says yes or no (`EvalGate.decide_edit`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lispshell.syntax.dialects import CL, EXTENSIONS, SCHEME

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", "CVS",
                      ".fslckout", ".fossil-settings"})
# Agents' and editors' settings: each can start a program (an MCP server, a task, a hook).
SETTINGS_DIRS = frozenset({".claude", ".cursor", ".vscode", ".codex", ".gemini", ".zed",
                           ".idea", ".continue", ".windsurf"})
SETTINGS_FILES = frozenset({".mcp.json", ".envrc", ".dir-locals.el"})

# Files each Lisp loads by itself at start, by name (no extension says Lisp for most).
INIT_FILES = {
    ".sbclrc": CL, ".eclrc": CL, ".clisprc": CL, ".clisprc.lisp": CL, ".ccl-init.lisp": CL,
    "ccl-init.lisp": CL, ".abclrc": CL, ".cmucl-init": CL, ".cmucl-init.lisp": CL,
    ".lispworks": CL, ".clinit.cl": CL, "sbclrc": CL, ".guile": SCHEME, ".guile-geiser": SCHEME,
}
# Files a build tool or a Lisp reads or runs by itself, wherever they are.
STARTUP_NAMES = {
    "user.clj": "Clojure loads user.clj from the classpath when it starts",
    "user.cljc": "Clojure loads user.cljc from the classpath when it starts",
    "data_readers.clj": "Clojure reads data_readers.clj at start (#= in it evaluates)",
    "data_readers.cljc": "Clojure reads data_readers.cljc at start (#= in it evaluates)",
    "project.clj": "Leiningen evaluates project.clj whenever it runs",
    "profiles.clj": "Leiningen evaluates profiles.clj whenever it runs",
    "deps.edn": "deps.edn decides what the Clojure CLI puts on the classpath",
    "bb.edn": "deps.edn-like: decides what babashka loads",
    "shadow-cljs.edn": "decides what shadow-cljs builds and runs",
    "build.clj": "tools.build runs build.clj",
}
ASD_REASON = "ASDF evaluates .asd files when it looks for systems"


class WriteRefused(Exception):
    """A write the model may not make: `code` is PROTECTED_PATH or NOT_LISP_SOURCE."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Verdict:
    dialect: str                 # the dialect the file's name says
    startup: str = ""            # why it runs without being loaded; "" for ordinary source


def _own_dirs() -> list[Path]:
    from lispshell.config import config_dir, state_dir

    import platformdirs
    dirs = [config_dir(), state_dir(), Path(platformdirs.user_data_dir("lispshell")),
            Path(platformdirs.user_cache_dir("lispshell")),
            Path(platformdirs.user_config_dir("lispshell")),
            Path(platformdirs.user_state_dir("lispshell"))]
    out = []
    for d in dirs:
        try:
            out.append(Path(os.path.realpath(d)))
        except OSError:
            pass
    return out


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def name_dialect(path: Path, extensions: dict | None = None) -> str | None:
    """The dialect a file's name says, or None when it names no Lisp."""
    name = path.name
    if name in INIT_FILES:
        return INIT_FILES[name]
    suffix = path.suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    if suffix and isinstance(extensions, dict) and isinstance(extensions.get(suffix), str):
        from lispshell.syntax.dialects import resolve_dialect
        try:
            return resolve_dialect(extensions[suffix])
        except ValueError:
            return None         # a config naming no dialect adds nothing
    return None


def _protected(path: Path) -> str:
    parts = path.parts
    for part in parts[:-1]:
        if part in VCS_DIRS:
            return f"it is inside a version-control directory ({part}/), whose files run commands"
        if part in SETTINGS_DIRS:
            return f"it is inside {part}/, an agent's or editor's settings, which can start programs"
    if path.name in SETTINGS_FILES or path.name in VCS_DIRS:
        return f"{path.name} is an agent's or tool's settings, which can start programs"
    for folder in _own_dirs():
        if _under(path, folder):
            return f"it is inside lispshell's own directory {folder}"
    return ""


def _dot_component(path: Path, root: Path | None) -> str:
    """The first name on the way to `path` (the file's own included) that starts with a dot:
    programs read their config from dot-files and dot-directories by themselves (`.nrepl.edn`
    names middleware that nREPL loads)."""
    base = root if root is not None and _under(path, root) else Path.home()
    try:
        parts = path.relative_to(base).parts
    except ValueError:
        parts = path.parts
    for part in parts:
        if part.startswith(".") and part not in (".", ".."):
            return part
    return ""


def _quicklisp(path: Path) -> bool:
    """Under ~/quicklisp: its setup.lisp, and what that loads, runs at every SBCL start of a
    project (lispshell.workspace.project loads it) and of the person's own init file."""
    try:
        return _under(path, Path(os.path.realpath(Path.home() / "quicklisp")))
    except OSError:
        return False


MAX_NAMES_SCAN = 50_000       # entries looked at to find a hard-linked file's other names


def _other_names(path: Path, st: os.stat_result, root: Path) -> list[Path]:
    """The other names of a hard-linked file under `root` (dot-directories included: `.git`
    is where they would matter), or None when the scan gave up before finding them all."""
    found: list[Path] = []
    seen = 0
    for folder, dirs, names in os.walk(root):
        for name in names:
            seen += 1
            other = Path(folder) / name
            if other == path:
                continue
            try:
                o = os.lstat(other)
            except OSError:
                continue
            if (o.st_ino, o.st_dev) == (st.st_ino, st.st_dev):
                found.append(other)
        if seen > MAX_NAMES_SCAN or len(found) == st.st_nlink - 1:
            break
    return found


def check(path: Path, *, root: Path | None = None,
          extensions: dict | None = None, project_startup: frozenset = frozenset()) -> Verdict:
    """May the model write `path` (absolute, resolved)? Raises WriteRefused;
    else the file's dialect and, for a file that runs at start, why. A file with several names
    (hard links, rewritten in place) is judged by every name: one of them may be `.git/config`."""
    verdict = _check_name(path, root, extensions, project_startup)
    try:
        st = os.stat(path)
    except OSError:
        return verdict
    if st.st_nlink < 2:
        return verdict
    from lispshell.show import visible

    others = _other_names(path, st, root or path.parent)
    if len(others) < st.st_nlink - 1:
        raise WriteRefused("PROTECTED_PATH", f"{visible(str(path))} has {st.st_nlink} names "
                           "(hard links), and not all of them are under the root, so what else "
                           "the write would change cannot be told. Nothing was changed.")
    for other in others:
        try:
            theirs = _check_name(other, root, extensions, project_startup)
        except WriteRefused as exc:
            raise WriteRefused(exc.code, f"{visible(str(path))} is also named "
                               f"{visible(str(other))} (a hard link): {exc.message}") from None
        if theirs.startup and not verdict.startup:
            verdict = Verdict(verdict.dialect, f"it is also {other.name} (a hard link): "
                                               f"{theirs.startup}")
    return verdict


def _check_name(path: Path, root: Path | None, extensions: dict | None,
                project_startup: frozenset) -> Verdict:
    from lispshell.show import visible

    shown = visible(str(path))
    why = _protected(path)
    if why:
        raise WriteRefused("PROTECTED_PATH", f"{shown} is not written by the model's file "
                           f"tools: {why}. Nothing was changed; the person can edit it "
                           "themselves.")
    said = name_dialect(path, extensions)
    if said is None:
        known = " ".join(sorted(EXTENSIONS))
        raise WriteRefused("NOT_LISP_SOURCE", f"{shown} is not Lisp source: the file tools "
                           f"write only files whose name says a Lisp ({known}, the Lisp init "
                           "files, or an extension in the person's [files] extensions). "
                           "Nothing was changed.")
    if path.name in INIT_FILES:
        return Verdict(said, f"{path.name} is a Lisp init file: it runs at every start")
    if path.name in STARTUP_NAMES:
        return Verdict(said, STARTUP_NAMES[path.name])
    if path.suffix.lower() == ".asd":
        return Verdict(said, ASD_REASON)
    dot = _dot_component(path, root)
    if dot:
        where = f"it is {dot}" if dot == path.name else f"it is inside {dot}/"
        return Verdict(said, f"{where}: programs read such dot-files by themselves (their "
                             "config and init files)")
    if _quicklisp(path):
        return Verdict(said, "Quicklisp's setup loads it at start")
    if path in project_startup:
        return Verdict(said, "the project loads it at start (user.clj requires it)")
    return Verdict(said)

