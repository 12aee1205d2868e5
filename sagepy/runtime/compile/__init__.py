"""AST -> Python closures (the tree-walking interpreter, compiled once per node).

The checker has resolved every name and call and recorded what the runtime needs on the AST, so compiling
reports nothing: a program reaches the compiler only once it checked clean and its externs are linked. The work
is split by job into mixins: `items.Items` (functions, constants, agents, tests), `stmts.Statements`,
`exprs.Expressions`, `calls.Calls`, `messaging.Messaging` (agents and the LLM) and `testing.TestCode` (mocks and
assertions); `frames.py` holds the control-flow signals and the frame a body runs in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...effects.step import current_context
from .calls import Calls
from .exprs import Expressions
from .frames import located
from .items import CompiledAgent, CompiledBody, FnRecord, Items
from .messaging import Messaging
from .stmts import Statements
from .testing import TestCode

if TYPE_CHECKING:
    from ..agents import Runtime


class Compiler(Items, Statements, Expressions, Calls, Messaging, TestCode):
    """Compiles a checked program once, for any number of runs: its closures find their run through the agent
    running them (frame slot 0). `runtime`: where a summon outside any agent starts its agent (a test file's
    constants), else None. It keeps the program's test blocks in `tests`; `externs` maps each
    `extern fn` name to the Python function the link step found for it; `builtins` and `constants` are the
    native standard library (sagepy.builtins), of which the `io_builtins` read or change the world: each of
    their calls is an `io` step of the calling agent's effects chain (SPEC §14)."""

    def __init__(self, runtime: Runtime | None, externs: dict[str, Callable[..., Any]],
                 builtins: dict[str, Callable[..., Any]], constants: dict[str, Any],
                 io_builtins: dict[str, Callable[..., Any]]) -> None:
        self.runtime = runtime
        self.tests: list = []   # (declaration, compiled body, namespace) of each test block; namespace.path: its file
        self.externs = externs
        self.builtins = {**builtins, **{name: _io_step(name, fn) for name, fn in io_builtins.items()}}
        self.constants = constants
        self.builtin_values: dict[str, Any] = {}
        self.compiled: dict[int, Any] = {}   # id(declaration) -> its runtime object
        self.root_scope: Any = None
        self.scope: Any = None                # the checker's namespace of the module being compiled
        self.file = ""
        self.agent: CompiledAgent | None = None
        self.closure_depth = 0                # > 0 while compiling a closure's body: its own frame
        self.current_context = current_context

    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        runtime = ctx.runtime if ctx is not None and ctx.runtime.effects is not None else self.runtime
        if runtime is not None:
            runtime.effects.trace(ctx, kind, data)


def _io_step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The builtin `name` as the calling agent's `io` step, also when called as a value (`let f = read_file`)."""
    def perform(*args: Any) -> Any:
        ctx = current_context()
        if ctx is None:   # called from Python outside any agent (an extern's own thread): no chain to go through
            return fn(*args)
        return ctx.runtime.effects.io(ctx, name, args)
    perform.__name__ = name
    return perform


__all__ = ["Compiler", "CompiledAgent", "CompiledBody", "FnRecord", "located"]
