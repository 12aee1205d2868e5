"""The runtime objects of items: `FnRecord`, `CompiledAgent`, `CompiledBody`, and the runtime type test a message
handler is chosen by.

Items are found through the checker's module namespaces (`Module.namespace`) and its entities; each entity's
runtime object (`FnRecord`, constant cell, `CompiledAgent`, `SupervisorPlan`) is kept by declaration
(`Compiler.compiled`), created for every item before any body is compiled, so that calls and summons may refer
to items declared later.
"""
from __future__ import annotations

from typing import Any, Callable

from ...core import types as T
from ...core.values import UNIT, ErrorValue, Function, Record, Variant


class FnRecord:
    """A compiled function; `impl(ctx, *args)` runs it. Filled in after compilation so recursion works."""

    __slots__ = ("name", "decl", "impl", "value", "body", "pad", "file")

    def __init__(self, name: str, decl: Any) -> None:
        self.name = name
        self.decl = decl
        self.impl: Callable[..., Any] | None = None
        self.value: Function | None = None
        # what a direct call of a one-parameter function runs itself (see `frames.direct_call1`)
        self.body: Callable[[list], Any] | None = None
        self.pad: list = []
        self.file = ""


class CompiledAgent:
    __slots__ = ("name", "decl", "handlers", "message_handlers", "field_names", "persistent",
                 "persistent_types", "receives")

    def __init__(self, name: str, decl: Any) -> None:
        self.name = name
        self.decl = decl
        self.handlers: dict[str, Any] = {}
        self.message_handlers: list[tuple[Callable[[Any], bool], Any]] = []
        self.field_names = [f.name for f in decl.fields if f.annotation != "persistent"]
        self.persistent = [f for f in decl.fields if f.annotation == "persistent"]
        self.persistent_types: dict[str, Any] = {}
        self.receives = decl.receives


class CompiledBody:
    """A handler, test or other body: call `run(ctx, *args)`."""

    __slots__ = ("run", "span")

    def __init__(self, run: Callable[..., Any], span: tuple) -> None:
        self.run = run
        self.span = span


def type_predicate(t: T.Type) -> Callable[[Any], bool]:
    """A runtime test of whether a value has type `t` (message dispatch)."""
    if isinstance(t, T.Prim):
        py = {"Int": int, "Float": float, "Bool": bool, "String": str, "Error": ErrorValue}.get(t.name)
        if t.name == "Unit":
            return lambda v: v is UNIT
        return lambda v: type(v) is py
    if isinstance(t, T.RecordT):
        name = t.info.name
        return lambda v: type(v) is Record and v.name == name
    if isinstance(t, T.EnumT):
        name = t.info.name
        return lambda v: type(v) is Variant and v.enum == name
    if isinstance(t, T.ListT):
        return lambda v: type(v) is list
    if isinstance(t, T.MapT):
        return lambda v: type(v) is dict
    if isinstance(t, T.TupleT):
        return lambda v: type(v) is tuple
    if isinstance(t, T.OptionT):
        return lambda v: type(v) is Variant and v.enum == "Option"
    if isinstance(t, T.ResultT):
        return lambda v: type(v) is Variant and v.enum == "Result"
    return lambda v: True
