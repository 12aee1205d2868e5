"""sagepy: a Python implementation of the Sage agent language.

The engine's API (`compile`, `Program`, `Host`, `RunOutcome`, `CheckFailed`: docs/embedding.md) is imported on
first use, so that `import sagepy` stays as cheap as the `sage` command needs it to be.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.errors import SageFail
from .version import __version__

if TYPE_CHECKING:
    from .engine import CheckFailed, Host, Program, RunOutcome, compile

__all__ = ["CheckFailed", "Host", "Program", "RunOutcome", "SageFail", "__version__", "compile"]
_ENGINE = ("CheckFailed", "Host", "Program", "RunOutcome", "compile")


def __getattr__(name: str) -> Any:
    if name in _ENGINE:
        from . import engine
        return getattr(engine, name)
    raise AttributeError(f"module 'sagepy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_ENGINE])
