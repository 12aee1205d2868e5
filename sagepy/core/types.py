"""Sage types as Python objects.

One representation serves the runtime (JSON conversion of mock values, `json_decode`, typed `divine`, MCP
results, externs) and the checker. Generic records and enums carry their type arguments; their field and
payload types are substituted on demand, so recursive types (`enum Tree { Leaf, Node((Tree, Tree)) }`) stay
finite.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

# the range of Int, a signed 64-bit integer (SPEC §3.3: outside it is overflow, E200)
INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1


class Type:
    __slots__ = ()

    def __repr__(self) -> str:
        return type_name(self)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def _key(self) -> tuple:
        return ()


class Prim(Type):
    """Int, Float, Bool, String, Unit, Error, and the checker-internal Never."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple:
        return (self.name,)


INT = Prim("Int")
FLOAT = Prim("Float")
BOOL = Prim("Bool")
STRING = Prim("String")
UNIT = Prim("Unit")
ERROR = Prim("Error")
NEVER = Prim("Never")
PRIMITIVES = {p.name: p for p in (INT, FLOAT, BOOL, STRING, UNIT, ERROR)}


class ListT(Type):
    __slots__ = ("elem",)

    def __init__(self, elem: Type) -> None:
        self.elem = elem

    def _key(self) -> tuple:
        return (self.elem,)


class MapT(Type):
    __slots__ = ("key", "value")

    def __init__(self, key: Type, value: Type) -> None:
        self.key = key
        self.value = value

    def _key(self) -> tuple:
        return (self.key, self.value)


class OptionT(Type):
    __slots__ = ("inner",)

    def __init__(self, inner: Type) -> None:
        self.inner = inner

    def _key(self) -> tuple:
        return (self.inner,)


class ResultT(Type):
    __slots__ = ("ok", "err")

    def __init__(self, ok: Type, err: Type) -> None:
        self.ok = ok
        self.err = err

    def _key(self) -> tuple:
        return (self.ok, self.err)


class TupleT(Type):
    __slots__ = ("items",)

    def __init__(self, items: Iterable[Type]) -> None:
        self.items = tuple(items)

    def _key(self) -> tuple:
        return self.items


class FnT(Type):
    __slots__ = ("params", "ret")

    def __init__(self, params: Iterable[Type], ret: Type) -> None:
        self.params = tuple(params)
        self.ret = ret

    def _key(self) -> tuple:
        return (self.params, self.ret)


class AgentT(Type):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple:
        return (self.name,)


class TypeVar(Type):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple:
        return (self.name,)


class RecordInfo:
    """The declaration side of a record: its name, type parameters and field types (unsubstituted)."""

    __slots__ = ("name", "params", "fields")

    def __init__(self, name: str, params: list[str], fields: list[tuple[str, Type]]) -> None:
        self.name = name
        self.params = params
        self.fields = fields


class EnumInfo:
    """The declaration side of an enum: variants in order, each with its payload type or None."""

    __slots__ = ("name", "params", "variants")

    def __init__(self, name: str, params: list[str], variants: list[tuple[str, Type | None]]) -> None:
        self.name = name
        self.params = params
        self.variants = variants


class RecordT(Type):
    __slots__ = ("info", "args")

    def __init__(self, info: RecordInfo, args: Iterable[Type] = ()) -> None:
        self.info = info
        self.args = tuple(args)

    @property
    def name(self) -> str:
        return self.info.name

    def fields(self) -> list[tuple[str, Type]]:
        if not self.args:
            return self.info.fields
        env = dict(zip(self.info.params, self.args))
        return [(n, substitute(t, env)) for n, t in self.info.fields]

    def _key(self) -> tuple:
        return (self.info.name, id(self.info), self.args)


class EnumT(Type):
    __slots__ = ("info", "args")

    def __init__(self, info: EnumInfo, args: Iterable[Type] = ()) -> None:
        self.info = info
        self.args = tuple(args)

    @property
    def name(self) -> str:
        return self.info.name

    def variants(self) -> list[tuple[str, Type | None]]:
        if not self.args:
            return self.info.variants
        env = dict(zip(self.info.params, self.args))
        return [(n, None if t is None else substitute(t, env)) for n, t in self.info.variants]

    def _key(self) -> tuple:
        return (self.info.name, id(self.info), self.args)


def from_type_expr(texpr: Any, resolve: Callable[[Any], Type], named: Callable[[Any, list], Type]) -> Type:
    """The Type of a parsed type (`sagepy.syntax.ast.TypeExpr`). Structural kinds are built here; `resolve`
    converts nested type expressions and `named(texpr, args)` answers for `Agent<A>` and named types (records,
    enums, type parameters), whose meaning depends on the caller's scope."""
    kind = texpr.kind
    if kind == "prim":
        return PRIMITIVES[texpr.name]
    if kind == "fn":
        return FnT([resolve(p) for p in texpr.args[0]], resolve(texpr.args[1]))
    if kind == "agent":
        return named(texpr, [])
    args = [resolve(a) for a in texpr.args]
    if kind == "list":
        return ListT(args[0])
    if kind == "option":
        return OptionT(args[0])
    if kind == "oracle":
        return args[0]
    if kind == "map":
        return MapT(args[0], args[1])
    if kind == "result":
        return ResultT(args[0], args[1])
    if kind == "tuple":
        return TupleT(args)
    return named(texpr, args)


def substitute(t: Type, env: dict[str, Type]) -> Type:
    """Replace type variables by their bindings in env."""
    if not env:
        return t
    cls = type(t)
    if cls is TypeVar:
        return env.get(t.name, t)  # type: ignore[attr-defined]
    if cls is ListT:
        return ListT(substitute(t.elem, env))  # type: ignore[attr-defined]
    if cls is MapT:
        return MapT(substitute(t.key, env), substitute(t.value, env))  # type: ignore[attr-defined]
    if cls is OptionT:
        return OptionT(substitute(t.inner, env))  # type: ignore[attr-defined]
    if cls is ResultT:
        return ResultT(substitute(t.ok, env), substitute(t.err, env))  # type: ignore[attr-defined]
    if cls is TupleT:
        return TupleT(substitute(x, env) for x in t.items)  # type: ignore[attr-defined]
    if cls is FnT:
        return FnT((substitute(x, env) for x in t.params), substitute(t.ret, env))  # type: ignore[attr-defined]
    if cls is RecordT:
        return RecordT(t.info, (substitute(x, env) for x in t.args))  # type: ignore[attr-defined]
    if cls is EnumT:
        return EnumT(t.info, (substitute(x, env) for x in t.args))  # type: ignore[attr-defined]
    return t


def type_name(t: Type) -> str:
    """Source syntax of a type: `Int`, `List<String>`, `(Int, Bool)`, `Fn(Int) -> Bool`."""
    cls = type(t)
    if cls is Prim:
        return t.name  # type: ignore[attr-defined]
    if cls is ListT:
        return f"List<{type_name(t.elem)}>"  # type: ignore[attr-defined]
    if cls is MapT:
        return f"Map<{type_name(t.key)}, {type_name(t.value)}>"  # type: ignore[attr-defined]
    if cls is OptionT:
        return f"Option<{type_name(t.inner)}>"  # type: ignore[attr-defined]
    if cls is ResultT:
        return f"Result<{type_name(t.ok)}, {type_name(t.err)}>"  # type: ignore[attr-defined]
    if cls is TupleT:
        return "(" + ", ".join(type_name(x) for x in t.items) + ")"  # type: ignore[attr-defined]
    if cls is FnT:
        return "Fn(" + ", ".join(type_name(x) for x in t.params) + ") -> " + type_name(t.ret)  # type: ignore[attr-defined]
    if cls is AgentT:
        return f"Agent<{t.name}>"  # type: ignore[attr-defined]
    if cls is TypeVar:
        return t.name  # type: ignore[attr-defined]
    if cls is RecordT or cls is EnumT:
        args = t.args  # type: ignore[attr-defined]
        name = t.info.name  # type: ignore[attr-defined]
        return f"{name}<{', '.join(type_name(a) for a in args)}>" if args else name
    return "?"
