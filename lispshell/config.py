"""Configuration: config/default.toml < the user's config.toml < command-line flags.

One place for the layering, so the REPL, `lispshell mcp` and the tests all agree.
"""
from __future__ import annotations

import copy
import os
import sys
import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

import platformdirs

APP = "lispshell"
# The top-level config/ and prompts/ are the source; lispshell/data/ links to them and the wheel
# carries them, so these read the same from a checkout and from an installed package.
DATA = resources.files("lispshell.data")
DEFAULT_CONFIG = DATA / "config" / "default.toml"
PROMPTS_DIR = DATA / "prompts"


class ConfigError(Exception):
    """A config file that cannot be read; the message names the file."""


def config_dir() -> Path:
    return Path(os.environ.get("LISPSHELL_CONFIG_DIR") or platformdirs.user_config_dir(APP))


def state_dir() -> Path:
    """History and saved conversations live here (LISPSHELL_STATE_DIR overrides, for tests)."""
    path = Path(os.environ.get("LISPSHELL_STATE_DIR") or platformdirs.user_state_dir(APP))
    path.mkdir(parents=True, exist_ok=True)
    return path


# The credentials lispshell itself uses never reach a Lisp nor anything else it starts (a
# project's build tool): code that runs there, the model's evals included, must not read them.
SECRET_PREFIXES = ("ANTHROPIC_", "LISPSHELL_MCP_TOKEN")


def child_environment(config: dict | None = None) -> dict[str, str]:
    """What every child process (a Lisp, a build tool) starts with: lispshell's environment
    without its credentials, then the person's `[session.env]` rules: `strip`, names or glob
    patterns (`AWS_*`) of more variables to keep from the child, and `set`, variables to give
    it. lispshell's own credentials are never given, whatever the rules say."""
    from fnmatch import fnmatchcase

    env = {k: v for k, v in os.environ.items() if not k.startswith(SECRET_PREFIXES)}
    rules = ((config or {}).get("session") or {}).get("env") or {}
    strip, given = env_rules(rules)
    for name in [k for k in env if any(fnmatchcase(k, p) for p in strip)]:
        del env[name]
    env.update((k, v) for k, v in given.items() if not k.startswith(SECRET_PREFIXES))
    return env


def env_rules(rules) -> tuple[list[str], dict[str, str]]:
    """(strip, set) of a `[session.env]` table; ConfigError naming the key when malformed."""
    if not isinstance(rules, dict) or set(rules) - {"strip", "set"}:
        raise ConfigError("[session.env] takes `strip` (a list of names or patterns) and `set` "
                          "(a table of NAME = \"value\")")
    strip, given = rules.get("strip", []), rules.get("set", {})
    if not (isinstance(strip, list) and all(isinstance(p, str) and p for p in strip)):
        raise ConfigError(f"[session.env] strip = {strip!r}: give a list of variable names or "
                          'patterns, e.g. ["AWS_*", "GITHUB_TOKEN"]')
    if not (isinstance(given, dict) and all(isinstance(v, str) and k and "=" not in k
                                            for k, v in given.items())):
        raise ConfigError(f"[session.env] set = {given!r}: give a table of NAME = \"value\"")
    return strip, given


def seal_credentials() -> None:
    """Keep lispshell's credentials out of reach of the code its children run.

    A child never inherits them (`child_environment`), but the same user can read its parent's
    original environment in /proc/PID/environ, and its memory through /proc/PID/mem. So, before
    the first child starts: the credentials' values are overwritten in the original environment
    block (Python already holds its own copy in `os.environ`, which the SDK reads), and the
    process is made non-dumpable, as ssh-agent does, which puts its /proc entries and memory
    out of reach of the person's other processes. Root (or CAP_SYS_PTRACE) can still read any
    process's memory: docs/security.md. Linux only; elsewhere this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        fields = open("/proc/self/stat", "rb").read().rpartition(b")")[2].split()
        start, end = int(fields[47]), int(fields[48])     # env_start, env_end (fields 50, 51)
        block = ctypes.string_at(start, end - start)
    except (OSError, ValueError, IndexError):
        block, start = b"", 0
    offset = 0
    for entry in block.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and name.decode("latin-1").startswith(SECRET_PREFIXES) and value:
            ctypes.memset(start + offset + len(name) + 1, ord("x"), len(value))
        offset += len(entry) + 1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)                           # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def user_config_path() -> Path:
    return config_dir() / "config.toml"


def merge(base: dict, override: dict) -> dict:
    """Deep-merge `override` into a copy of `base`; tables merge, everything else replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _read(path) -> dict:
    """A TOML file (a Path, or a package resource); {} when it does not exist."""
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def load(overrides: dict | None = None) -> dict[str, Any]:
    """The effective configuration: defaults, then the user's file, then `overrides` (from flags)."""
    cfg = merge(merge(_read(DEFAULT_CONFIG), _read(user_config_path())), overrides or {})
    env_rules(((cfg.get("session") or {}).get("env")) or {})     # a bad table is said at start
    session_settings(cfg)                                         # and so is a bad [session]
    return cfg


@dataclass(frozen=True)
class SessionSettings:
    """[session], typed. Its defaults have one place, config/default.toml: a configuration
    that lacks a key (a test's `{}`, a caller's partial dict) gets the default file's."""

    eval_timeout: float      # seconds, for programmatic evals (the model's, MCP's)
    output_cap: int          # characters of output (and of each value) kept for the model
    interrupt_grace: float   # seconds before an interrupt that has not landed is said
    boot_timeout: float      # seconds a child gets to start and load lispshell's loop
    connect_timeout: float   # seconds a connection gets to be accepted and first answer
    init_files: bool         # load the person's ~/.sbclrc, ~/.guile in a child


_DEFAULT_SESSION: dict | None = None


def session_settings(config: dict | None) -> SessionSettings:
    """The [session] settings of `config`, each missing key taken from the default file.
    Raises ConfigError naming a key whose value is not of its type."""
    global _DEFAULT_SESSION
    if _DEFAULT_SESSION is None:
        _DEFAULT_SESSION = _read(DEFAULT_CONFIG).get("session") or {}
    given = dict(_DEFAULT_SESSION, **(((config or {}).get("session")) or {}))
    values = {}
    for f in fields(SessionSettings):
        value, kind = given.get(f.name), {"float": float, "int": int, "bool": bool}[f.type]
        ok = isinstance(value, bool) if kind is bool else (
            isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0)
        if not ok:
            raise ConfigError(f"[session] {f.name} = {value!r}: expected "
                              + ("true or false" if kind is bool else "a number, 0 or more"))
        values[f.name] = kind(value)
    return SessionSettings(**values)
