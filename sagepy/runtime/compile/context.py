"""What the compiler's helpers may use of the compiler (`messaging.py`, `testing.py`, and the supervisors'
`compile_supervisor`): the one declared interface between the visitor and the code it delegates to.

A helper takes a `Compiling` as its first argument; it never reaches into the `Compiler` beyond it
(tests/test_architecture.py checks that every attribute a helper reads of it is declared here).
"""
from __future__ import annotations

from typing import Any, Protocol

from .frames import Code


class Compiling(Protocol):
    """The compiler as its helpers see it, while it compiles one module."""

    file: str                     # the path of the module being compiled
    scope: Any                    # the checker's namespace of that module (`check.env.ModuleScope`)
    runtime: Any                  # where a summon outside any agent starts its agent, else None
    compiled: dict[int, Any]      # id(declaration) -> its runtime object (items.py)
    agent: Any                    # the `CompiledAgent` whose handler is being compiled, else None

    def expr(self, node: Any) -> Code:
        """The code of an expression."""
        ...

    def runtime_item(self, entity: Any) -> Any:
        """The runtime object of a checker entity (fn, const, agent, supervisor)."""
        ...

    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        """Emit a trace event of the agent running `ctx` (or of the compiler's runtime outside any agent)."""
        ...
