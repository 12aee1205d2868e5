"""The local slots of function frames.

Every function, closure, handler and test body runs in a frame (see `compile/frames.py`). Each `let` gets a fresh
slot, so shadowing never overwrites a value a closure may still need. Closures capture by value at creation: a
captured variable gets a slot in the closure's own frame, copied in when the closure value is built (SPEC §4.3).

The checker has already resolved every name, so a name that is not found here is never a local variable.
"""
from __future__ import annotations

from typing import Any


class FrameLayout:
    """Slot allocation for one frame (function, closure, handler or test body)."""

    __slots__ = ("nslots", "parent_scope", "captures", "captured_names")

    def __init__(self, parent: "BlockScope | None") -> None:
        self.nslots = 1            # slot 0: the activation context
        self.parent_scope = parent  # the scope the closure was written in (None for top-level bodies)
        self.captures: list[tuple[Any, int]] = []   # (outer slot, inner slot)
        self.captured_names: dict[str, int] = {}

    def new_slot(self) -> int:
        slot = self.nslots
        self.nslots += 1
        return slot


class BlockScope:
    """Lexical scope inside one frame."""

    __slots__ = ("layout", "parent", "names")

    def __init__(self, layout: FrameLayout, parent: "BlockScope | None") -> None:
        self.layout = layout
        self.parent = parent
        self.names: dict[str, int] = {}

    def child(self) -> "BlockScope":
        return BlockScope(self.layout, self)

    def declare(self, name: str) -> int:
        slot = self.layout.new_slot()
        self.names[name] = slot
        return slot

    def find_local(self, name: str) -> int | None:
        """A slot of this frame holding `name`, capturing it from enclosing frames when needed."""
        scope: BlockScope | None = self
        while scope is not None:
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


def top_scope() -> BlockScope:
    """The outermost scope of a new top-level frame (function, handler, test, constant, supervisor child)."""
    return BlockScope(FrameLayout(None), None)
