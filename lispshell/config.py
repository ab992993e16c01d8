"""Configuration: config/default.toml < the user's config.toml < command-line flags.

One place for the layering, so the REPL, `lispshell mcp` and the tests all agree.
"""
from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

import platformdirs

from lispshell.credentials import SECRET_PREFIXES, seal_credentials  # noqa: F401 (its home)

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
    """The effective configuration: defaults, then the user's file, then `overrides` (from flags).
    A value of the wrong type in a known section is said now, naming its key (ConfigError)."""
    cfg = merge(merge(_read(DEFAULT_CONFIG), _read(user_config_path())), overrides or {})
    env_rules(((cfg.get("session") or {}).get("env")) or {})
    for kind in SECTIONS:
        settings(cfg, kind)
    return cfg


# Typed sections. Each default has one place, config/default.toml: a field's default is the
# file's value, so a configuration that lacks a key (a test's `{}`, a caller's partial dict)
# and a settings object made with no arguments both get the file's.
_DEFAULTS: dict | None = None


def default_value(section: str | None, key: str):
    """The default file's value of `key` in `section` (None: at the top level)."""
    global _DEFAULTS
    if _DEFAULTS is None:
        _DEFAULTS = _read(DEFAULT_CONFIG)
    return copy.deepcopy((_DEFAULTS.get(section) or {}) if section else _DEFAULTS)[key]


def default_lisp(config: dict | None) -> str:
    """The Lisp started when none is named (`default_lisp`)."""
    return (config or {}).get("default_lisp") or default_value(None, "default_lisp")


def _default(section: str, key: str, **meta):
    return field(default_factory=lambda: default_value(section, key), metadata=meta)


@dataclass(frozen=True)
class SessionSettings:
    """[session]: every Lisp session, child or connection."""
    SECTION = "session"
    eval_timeout: float = _default("session", "eval_timeout")    # seconds, programmatic evals
    output_cap: int = _default("session", "output_cap")          # characters kept for the model
    interrupt_grace: float = _default("session", "interrupt_grace")  # s before "not landed"
    boot_timeout: float = _default("session", "boot_timeout")    # s for a child to load the loop
    connect_timeout: float = _default("session", "connect_timeout")  # s to accept + answer
    init_files: bool = _default("session", "init_files")         # ~/.sbclrc, ~/.guile in a child


@dataclass(frozen=True)
class ReplSettings:
    """[repl]: the interactive shell."""
    SECTION = "repl"
    complete_while_typing: bool = _default("repl", "complete_while_typing")
    backtrace_lines: int = _default("repl", "backtrace_lines")
    style: str = _default("repl", "style")           # checked by repl/theme.py (it falls back)
    pager: str = _default("repl", "pager")


@dataclass(frozen=True)
class GateSettings:
    """[gate]: the model's evals."""
    SECTION = "gate"
    mode: str = _default("gate", "mode", choices=("ask", "yolo", "off"))
    grace_ms: int = _default("gate", "grace_ms")

    @property
    def grace(self) -> float:
        """Seconds after a question appears during which keys are type-ahead, not answers."""
        return self.grace_ms / 1000


@dataclass(frozen=True)
class McpSettings:
    """[mcp]: `lispshell mcp`."""
    SECTION = "mcp"
    confirm_timeout: float = _default("mcp", "confirm_timeout")   # 0: wait without end
    tools: str | list[str] = _default("mcp", "tools", expected='a string such as "live,syntax", '
                                      "or a list of names")   # names checked by mcp/main.py


@dataclass(frozen=True)
class ProjectSettings:
    """[project]: finding and starting the current directory's project."""
    SECTION = "project"
    detect: bool = _default("project", "detect")
    # an argv, or one string split as a shell would
    lein_classpath: list[str] | str = _default("project", "lein_classpath")
    clojure_classpath: list[str] | str = _default("project", "clojure_classpath")


@dataclass(frozen=True)
class LlmSettings:
    """[llm]: the model and the requests made to it."""
    SECTION = "llm"
    model: str = _default("llm", "model")
    max_tokens: int = _default("llm", "max_tokens")
    timeout: float = _default("llm", "timeout")
    connect_timeout: float = _default("llm", "connect_timeout")
    max_retries: int = _default("llm", "max_retries")
    max_tool_rounds: int = _default("llm", "max_tool_rounds")
    context_tokens: int = _default("llm", "context_tokens")
    tool_groups: list[str] = _default("llm", "tool_groups")
    base_url: str = _default("llm", "base_url")


SECTIONS = (SessionSettings, ReplSettings, GateSettings, McpSettings, ProjectSettings,
            LlmSettings)


def _typed(value, kind: str) -> bool:
    if " | " in kind:
        return any(_typed(value, k) for k in kind.split(" | "))
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("int", "float"):
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        return number and (kind == "float" or float(value).is_integer())
    if kind == "str":
        return isinstance(value, str)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    raise AssertionError(f"no check for a setting of type {kind}")


_EXPECTED = {"bool": "true or false", "int": "a whole number, 0 or more",
             "float": "a number, 0 or more", "str": "a string",
             "list[str]": "a list of strings"}


def settings(config: dict | None, kind):
    """The section `kind` (one of SECTIONS) of `config`, typed; each missing key (or one set
    to nothing) is the default file's. Raises ConfigError naming a key of the wrong type."""
    given = ((config or {}).get(kind.SECTION)) or {}
    if not isinstance(given, dict):
        raise ConfigError(f"[{kind.SECTION}] must be a table of settings, not {given!r}")
    values = {}
    for f in fields(kind):
        if given.get(f.name) is None:
            continue
        value = given[f.name]
        choices = f.metadata.get("choices")
        if not _typed(value, f.type) or (choices and value not in choices):
            expected = f.metadata.get("expected") or (
                " or ".join(repr(c) for c in choices) if choices
                else " or ".join(_EXPECTED[k] for k in f.type.split(" | ")))
            raise ConfigError(f"[{kind.SECTION}] {f.name} = {value!r}: expected {expected}")
        values[f.name] = float(value) if f.type == "float" else \
            int(value) if f.type == "int" else value
    return kind(**values)


def session_settings(config: dict | None) -> SessionSettings:
    """The [session] settings of `config` (`settings(config, SessionSettings)`)."""
    return settings(config, SessionSettings)
