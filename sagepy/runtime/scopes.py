"""Compile-time name binding: modules' namespaces and the local slots of function frames.

Every function, closure, handler and test body runs in a frame: a Python list whose slot 0 holds the
activation context (the running `AgentInstance`) and whose other slots hold parameters and `let` bindings.
Each `let` gets a fresh slot, so shadowing never overwrites a value a closure may still need. Closures capture
by value at creation: a captured variable gets a slot in the closure's own frame, copied in when the closure
value is built (SPEC §4.3).
"""
from __future__ import annotations

from typing import Any


class Entity:
    """A module-level item: kind is fn, const, record, enum, agent, supervisor, tool, module, protocol,
    handler, builtin."""

    __slots__ = ("kind", "name", "decl", "data", "module", "pub")

    def __init__(self, kind: str, name: str, decl: Any, data: Any, module: Any, pub: bool) -> None:
        self.kind = kind
        self.name = name
        self.decl = decl
        self.data = data
        self.module = module
        self.pub = pub


class ModuleEnv:
    """A module's namespace: its own items, its imports, and the enums whose variants may be written bare."""

    def __init__(self, module: Any, parent: "ModuleEnv | None") -> None:
        self.module = module
        self.parent = parent
        self.path = module.path
        self.items: dict[str, Entity] = {}
        self.imports: dict[str, Entity] = {}
        self.children: dict[str, ModuleEnv] = {}

    def lookup(self, name: str) -> Entity | None:
        return self.items.get(name) or self.imports.get(name)

    def enums_in_scope(self) -> list[Entity]:
        seen = []
        for e in list(self.items.values()) + list(self.imports.values()):
            if e.kind == "enum" and e not in seen:
                seen.append(e)
        return seen


class FrameLayout:
    """Slot allocation for one frame (function, closure, handler or test body)."""

    def __init__(self, parent: "BlockScope | None") -> None:
        self.nslots = 1            # slot 0: the activation context
        self.parent_scope = parent  # the scope the closure was written in (None for top-level bodies)
        self.captures: list[tuple[Any, int]] = []   # (outer reader, inner slot)
        self.captured_names: dict[str, int] = {}
        self.has_arm_return = False

    def new_slot(self) -> int:
        slot = self.nslots
        self.nslots += 1
        return slot


class BlockScope:
    """Lexical scope inside one frame. `loop_depth` tells whether break/continue are allowed."""

    def __init__(self, layout: FrameLayout, parent: "BlockScope | None", in_loop: bool = False) -> None:
        self.layout = layout
        self.parent = parent
        self.names: dict[str, int] = {}
        self.in_loop = in_loop or (parent.in_loop if parent is not None and parent.layout is layout else False)

    def child(self, in_loop: bool = False) -> "BlockScope":
        return BlockScope(self.layout, self, in_loop)

    def declare(self, name: str) -> int:
        slot = self.layout.new_slot()
        self.names[name] = slot
        return slot

    def find_local(self, name: str) -> int | None:
        """A slot of this frame holding `name`, capturing it from enclosing frames when needed."""
        scope: BlockScope | None = self
        while scope is not None and scope.layout is self.layout:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        layout = self.layout
        if name in layout.captured_names:
            return layout.captured_names[name]
        if layout.parent_scope is None:
            return None
        outer = layout.parent_scope.find_local(name)
        if outer is None:
            return None
        slot = layout.new_slot()
        layout.captured_names[name] = slot
        layout.captures.append((outer, slot))
        return slot

    def is_captured(self, name: str) -> bool:
        """True when `name` resolves to a variable of an enclosing frame (assignment to it is E047)."""
        scope: BlockScope | None = self
        while scope is not None and scope.layout is self.layout:
            if name in scope.names:
                return False
            scope = scope.parent
        return name in self.layout.captured_names or (
            self.layout.parent_scope is not None and self.layout.parent_scope.find_local(name) is not None)
