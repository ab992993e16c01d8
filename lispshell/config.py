"""Configuration: config/default.toml < the user's config.toml < command-line flags.

One place for the layering, so the REPL, `lispshell mcp` and the tests all agree.
"""
from __future__ import annotations

import copy
import os
import tomllib
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


def child_environment() -> dict[str, str]:
    """lispshell's environment without its credentials: what every child process starts with."""
    return {k: v for k, v in os.environ.items() if not k.startswith(SECRET_PREFIXES)}


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
    cfg = merge(_read(DEFAULT_CONFIG), _read(user_config_path()))
    return merge(cfg, overrides or {})
