"""Environment builtins (SPEC §6.1): read the process environment."""
from __future__ import annotations

import os
from typing import Any, Callable

from ..runtime.values import option


def env(name: str) -> Any:
    return option(os.environ.get(name))


def env_or(name: str, default: str) -> str:
    return os.environ.get(name, default)


BUILTINS: dict[str, Callable[..., Any]] = {
    "env": env,
    "env_or": env_or,
}
