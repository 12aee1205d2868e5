"""Builtins that read or change the world (environment, files) are `io` steps (SPEC §14): the registry
holds wrappers that pass each call through the running agent's effects chain, whose real layer calls the
plain function."""
from __future__ import annotations

from typing import Any, Callable

from ..runtime.agents import current_context


def as_steps(functions: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    return {name: _step(name, fn) for name, fn in functions.items()}


def _step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def perform(*args: Any) -> Any:
        ctx = current_context()
        if ctx is None:   # called from Python outside any run (a unit test of the function): no chain exists
            return fn(*args)
        return ctx.runtime.effects.io(ctx, name, args)
    perform.__name__ = name
    return perform
