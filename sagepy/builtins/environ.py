"""Environment builtins (SPEC §6.1): read the process environment (`io` steps, SPEC §14)."""
from __future__ import annotations

import os
from typing import Any, Callable

from ..core.values import option
from .io_steps import as_steps


def _lookup(name: str) -> str | None:
    try:
        return os.environ.get(name)
    except UnicodeEncodeError:  # a name with a lone surrogate (from JSON) cannot be in the environment
        return None


def env(name: str) -> Any:
    return option(_lookup(name))


def env_or(name: str, default: str) -> str:
    value = _lookup(name)
    return default if value is None else value


# The plain functions, called by the effects chain's real layer.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "env": env,
    "env_or": env_or,
}

BUILTINS = as_steps(FUNCTIONS)
