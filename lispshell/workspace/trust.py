"""Which projects may run their code: the person's decision, made once per project, remembered.

A project found in a directory (lispshell.workspace.project) only *describes* how its Lisp would start.
Starting it runs the project's code (Clojure loads `user.clj` from the classpath, `lein
classpath` evaluates `project.clj`, ASDF finds the project's systems), so it is started only
when the person trusts it: `lispshell trust DIR` or `,trust` in the REPL. Until then lispshell
starts a bare Lisp and says how to trust the project, as direnv's `allow` and an editor's
workspace trust do.

The record names, by SHA-256, each file that decides what runs at start (`Project.deciding`:
the `.asd` files, `deps.edn`, `project.clj`, the `user.clj` and `data_readers.clj` files on
the source paths) and the load path the project asks for. When any of it changes, whoever
changed it (a `git pull`, the person, the model through lispshell's own file tools), the
project is untrusted again until the person trusts it anew.

Trust is refused, and a trusted project starts bare, while a start-up file or a directory above
it can be written by another user (`exposed`): a group member could swap `src/user.clj` between
the hash check and the JVM reading it, so no hash is worth anything there.

The record lives in the state directory, readable and writable by the person only, and is
rewritten atomically.
"""
from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "trusted-projects.json"


@dataclass(frozen=True)
class Verdict:
    trusted: bool
    known: bool = False                 # trusted once, and changed since
    changed: tuple[str, ...] = ()       # what differs from the record (files relative to the root)
    exposed: tuple[str, ...] = ()       # who else can write what decides the start (`exposed`)


class TrustError(Exception):
    """Trust refused: the message says why and what to do."""


def _writers(st: os.stat_result, directory: bool) -> str:
    """Who other than the person (and root) can write a file or directory with this status,
    or "" when no one."""
    import grp
    import pwd

    me = os.geteuid()
    if st.st_uid not in (me, 0):
        try:
            return f"its owner {pwd.getpwuid(st.st_uid).pw_name}"
        except KeyError:
            return f"its owner (uid {st.st_uid})"
    sticky = directory and st.st_mode & 0o1000
    if st.st_mode & 0o002 and not sticky:
        return "every user"
    if st.st_mode & 0o020 and not sticky:
        try:
            group = grp.getgrgid(st.st_gid)
        except KeyError:
            return f"group {st.st_gid}"
        users = pwd.getpwall()
        others = set(group.gr_mem) | {p.pw_name for p in users if p.pw_gid == st.st_gid}
        others -= {p.pw_name for p in users if p.pw_uid == me}
        if others:
            return f"group {group.gr_name} ({', '.join(sorted(others))})"
    return ""


def exposed(project) -> tuple[str, ...]:
    """Each start-up file of `project`, and each directory above one up to `/`, that another
    user can write, said with who: 'src/user.clj: every user'. Inside the project a sticky
    directory is no protection (a missing user.clj can still be created in it)."""
    from lispshell.show import visible

    root = Path(project.root)
    checked: dict[Path, None] = {}
    found: list[str] = []
    for f in project.deciding:
        f = Path(f)
        chain = [f] + list(f.parents)
        for item in chain:
            if item in checked:
                continue
            checked[item] = None
            try:
                st = os.lstat(item)
            except OSError:
                continue
            directory = item != f
            inside = item == root or root in item.parents
            who = _writers(st, directory and not inside)
            if who:
                found.append(f"{visible(_rel(item, root))}: writable by {who}")
    return tuple(found)


def _path() -> Path:
    from lispshell.config import state_dir
    return state_dir() / FILE_NAME


def _load() -> dict:
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}           # an unreadable record trusts nothing; `lispshell trust` rewrites it
    projects = data.get("projects") if isinstance(data, dict) else None
    return projects if isinstance(projects, dict) else {}


def _save(projects: dict) -> None:
    path = _path()
    tmp = path.with_name(f".{FILE_NAME}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"version": 1, "projects": projects}, out, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _sha256(path: Path) -> str | None:
    import hashlib
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def fingerprint(project) -> dict:
    """What the record keeps for `project`: its kind, load path and the hash of each deciding
    file (a file that is missing counts as missing, so one appearing asks again)."""
    root = project.root
    return {
        "kind": project.kind,
        "paths": [_rel(p, root) for p in project.paths],
        "files": {_rel(f, root): _sha256(f) for f in project.deciding},
    }


def _rel(path: Path, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root)) or "."
    except ValueError:
        return str(path)


def check(project) -> Verdict:
    record = _load().get(str(project.root))
    if not isinstance(record, dict):
        return Verdict(False)
    others = exposed(project)
    if others:
        return Verdict(False, known=True, exposed=others)
    now = fingerprint(project)
    was = {k: record.get(k) for k in now}
    if was == now:
        return Verdict(True, known=True)
    changed = sorted({name for name in set(now["files"]) | set(was.get("files") or {})
                      if (was.get("files") or {}).get(name) != now["files"].get(name)})
    if was.get("paths") != now["paths"] or was.get("kind") != now["kind"]:
        changed.insert(0, "the load path" if now["kind"] == "guile" else "the project's kind")
    return Verdict(False, known=True, changed=tuple(changed))


def changes(project) -> list[tuple[str, str]]:
    """(file, what to show) for each start-up file changed since the project was trusted: the
    diff from the version trusted, when lispshell's own tools made the change (the undo
    journal holds the bytes before), else a line saying the change was made elsewhere."""
    import difflib

    from lispshell.workspace import journal

    record = _load().get(str(project.root)) or {}
    was = record.get("files") or {}
    now = fingerprint(project)["files"]
    try:
        log = journal.entries()
    except OSError:
        log = []
    out = []
    for name in sorted(set(was) | set(now)):
        if was.get(name) == now.get(name):
            continue
        path = Path(project.root) / name
        real = os.path.realpath(path)
        trusted = (was.get(name) or "")[:16]
        first = next((e for e in log if e.get("path") == real and e.get("before") == trusted),
                     None)
        old = journal.before(first) if first is not None else None
        if old is None and trusted:
            out.append((name, "changed outside lispshell's tools: no copy of the trusted "
                              "version to compare with"))
            continue
        try:
            new = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            new = ""
        old_text = (old or b"").decode("utf-8", "replace")
        diff = "".join(difflib.unified_diff(old_text.splitlines(keepends=True),
                                            new.splitlines(keepends=True),
                                            f"{name} (trusted)", f"{name} (now)"))
        who = f" by {first.get('tool') or 'an edit'}" if first is not None else " (new)"
        out.append((name, f"changed{who}:\n{diff}"))
    return out


def grant(project) -> dict:
    """Trust `project` as it is now; the record written. TrustError while another user can
    write what decides its start."""
    others = exposed(project)
    if others:
        raise TrustError(exposed_message(others))
    projects = _load()
    record = dict(fingerprint(project), trusted_at=time.strftime("%Y-%m-%d %H:%M:%S"))
    projects[str(project.root)] = record
    _save(projects)
    return record


def exposed_message(others) -> str:
    return ("another user can change what this project runs at start, so trust cannot hold: "
            + "; ".join(others) + ". Make them writable by you alone (chmod go-w), then trust "
            "it.")


def revoke(root: Path) -> bool:
    """Forget the trust given to the project at `root`; whether there was any."""
    projects = _load()
    if projects.pop(str(root), None) is None:
        return False
    _save(projects)
    return True


def records() -> dict[str, dict]:
    return _load()
