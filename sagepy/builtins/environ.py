"""Environment builtins (SPEC §6.1): read the process environment (`io` steps, SPEC §14)."""
from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from ..core.values import option


def _lookup(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    try:
        return (os.environ if environ is None else environ).get(name)
    except UnicodeEncodeError:  # a name with a lone surrogate (from JSON) cannot be in the environment
        return None


def env(name: str, environ: Mapping[str, str] | None = None) -> Any:
    return option(_lookup(name, environ))


def env_or(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    value = _lookup(name, environ)
    return default if value is None else value


# Each call is an `io` step (SPEC §14): the compiler passes it through the agent's effects chain, whose real
# layer calls these functions.
BUILTINS: dict[str, Callable[..., Any]] = {
    "env": env,
    "env_or": env_or,
}
