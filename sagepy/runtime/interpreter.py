"""The host of a compiled program: it keeps the test blocks and routes trace events.

The compiler (`compile/`) turns the checked AST into closures; a `summon` starts the agent through
runtime/lifecycle.py. The host reaches the outside world only through `sagepy.effects` (each nondeterministic
operation is one step of the run's effects chain).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .agents import Runtime

if TYPE_CHECKING:
    from ..effects import Effects


class Host:
    def __init__(self, runtime: Runtime, effects: Effects) -> None:
        self.runtime = runtime
        self.effects = effects
        self.tests: list = []

    def add_test(self, decl: Any, body: Any, namespace: Any) -> None:
        """A compiled test block; `namespace.path` is the file it was written in."""
        self.tests.append((decl, body, namespace))

    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        effects = ctx.runtime.effects if ctx is not None and ctx.runtime.effects is not None else self.effects
        effects.trace(ctx, kind, data)
