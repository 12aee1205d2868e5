"""The state of checking one body, and its local variables.

A `Body` describes the code being checked: which module it belongs to, what kind of body it is (function,
handler, test, constant, supervisor child), what it may do (`try`/`fail`, tool calls, `yield`, `return`), and
where it stands inside an expression (under a `try` or the left operand of a `catch`, §3.4). Closures get a
child `Body` that inherits the context they are written in but not the coverage of an outer `try`. The body of
the closure given to `self.f.update` runs inside a store transaction and may do nothing fallible (E066).

`Locals` is a chain of lexical scopes. Each variable remembers the body (closure level) that declared it, so
that assigning to a captured variable can be refused (E047).

Every body is also one runtime frame (SPEC §4.3), and the checker lays it out: slot 0 holds the running agent,
each parameter and each variable declaration (`let`, pattern, `for`, `catch` binder) gets the next slot, so
shadowing never overwrites a value a closure may still hold; a closure that reads a variable of an enclosing
body captures it by value into a slot of its own frame, through every closure in between.
"""
from __future__ import annotations

from typing import Any

from ..core.types import Type
from .env import ModuleScope
from .symbols import AgentInfo


class Var:
    __slots__ = ("type", "owner", "slot")

    def __init__(self, type_: Type, owner: "Body") -> None:
        self.type = type_
        self.owner = owner
        self.slot = owner.new_slot()


class Locals:
    __slots__ = ("parent", "vars")

    def __init__(self, parent: "Locals | None" = None) -> None:
        self.parent = parent
        self.vars: dict[str, Var] = {}

    def child(self) -> "Locals":
        return Locals(self)

    def find(self, name: str) -> Var | None:
        scope: Locals | None = self
        while scope is not None:
            var = scope.vars.get(name)
            if var is not None:
                return var
            scope = scope.parent
        return None

    def names(self) -> set[str]:
        out: set[str] = set()
        scope: Locals | None = self
        while scope is not None:
            out.update(scope.vars)
            scope = scope.parent
        return out


class Loop:
    __slots__ = ("has_break",)

    def __init__(self) -> None:
        self.has_break = False


class Body:
    """kind: fn, handler, test, eval, const, child (a supervisor child's field initialisers)."""

    __slots__ = ("scope", "kind", "fallible", "stop", "agent", "handler", "ret", "returns", "loops", "covered",
                 "in_catch", "tparams", "parent", "nslots", "captures", "captured", "update_fn")

    def __init__(self, scope: ModuleScope, kind: str, fallible: bool = False, agent: AgentInfo | None = None,
                 handler: str | None = None, ret: Type | None = None, tparams: tuple = (),
                 parent: "Body | None" = None) -> None:
        self.scope = scope
        self.kind = kind
        self.fallible = fallible
        self.stop = handler in ("stop", "resting")
        self.agent = agent
        self.handler = handler
        self.ret = ret                      # the declared return type where `return` is allowed
        self.returns: list | None = None   # (type, span) of each `return` in a closure without expected type
        self.loops: list[Loop] = []
        self.covered = False                # under a `try` operand, a `catch` left operand or `assert_fails`
        self.in_catch = 0                   # inside the left operand of a `catch`: `try` is allowed anywhere
        self.tparams = tparams              # type parameters in scope (a generic function's)
        self.parent = parent                # the body a closure is written in
        self.nslots = 1                     # the frame's size so far; slot 0 holds the running agent
        self.captures: list[tuple[int, int]] = []   # (slot in the parent's frame, slot in this one)
        self.captured: dict[Var, int] = {}
        self.update_fn = False              # inside the function given to `self.f.update` (E066), nested ones too

    def new_slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    def slot_of(self, var: Var) -> int:
        """The slot of this body's frame holding `var`, capturing it from the enclosing bodies if needed."""
        if var.owner is self:
            return var.slot
        slot = self.captured.get(var)
        if slot is None:
            outer = self.parent.slot_of(var)
            slot = self.captured[var] = self.new_slot()
            self.captures.append((outer, slot))
        return slot

    @property
    def file(self) -> str:
        return self.scope.path

    def closure(self, ret: Type | None) -> "Body":
        """The body of a closure written here: same context, own loops and returns, no outer coverage."""
        inner = Body(self.scope, self.kind, self.fallible, self.agent, self.handler, ret, self.tparams, self)
        inner.stop = self.stop
        inner.update_fn = self.update_fn
        if ret is None:
            inner.returns = []
        return inner

    def tool_context(self) -> Any:
        """`"any"` in test blocks, the agent's `use` list in handlers, else None (tool calls are E038)."""
        if self.kind == "test" or self.kind == "eval":
            return "any"
        if self.agent is not None and self.handler is not None:
            return {name for name, _ in self.agent.decl.uses}
        return None
