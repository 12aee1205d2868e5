"""Checker-side type helpers on top of `sagepy.core.types`: the open type, inference holes, `Persisted<T>`,
compatibility, merging and unification.

`ANY` is the open type: the element type of `[]` and `{}`, the payload of a bare `None`, and the type of an
expression whose error has already been reported (so one mistake gives one diagnostic, not a cascade). It fits
every type in both directions, like `Never`.

Inference of generic calls is local (SPEC §3.2): the callee's type parameters become fresh `Hole`s, the
arguments bind them (`unify`), the expected type fills what is left, and `resolve` substitutes the bindings.
Holes never escape an inference: what a call returns has its unbound holes replaced by `ANY`.
"""
from __future__ import annotations

from ..core.types import (NEVER, AgentT, EnumT, FnT, ListT, MapT, OptionT, Prim, RecordT, ResultT, TupleT, Type,
                     TypeVar, type_name)

ANY = Prim("_")
ORDERABLE = ("Int", "Float", "String")
MAP_KEYS = ("String", "Int", "Bool")

__all__ = ["ANY", "NEVER", "MAP_KEYS", "ORDERABLE", "Hole", "PersistedT", "fits", "merge", "unify", "resolve",
           "instantiate", "show", "is_open", "prim_named", "contains_hole", "erase_vars"]


class Hole(Type):
    """An inference variable for one type parameter of one generic call or construction."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _key(self) -> tuple:
        return (id(self),)


class PersistedT(Type):
    """`self.f` for `@persistent f: T`: a cell with `get()`, `set(v)`, `update(fn)` and `checkpoint()` (§4.8)."""

    __slots__ = ("inner",)

    def __init__(self, inner: Type) -> None:
        self.inner = inner

    def _key(self) -> tuple:
        return (self.inner,)


def show(t: Type) -> str:
    """Source syntax of a type for messages."""
    if type(t) is PersistedT:
        return f"Persisted<{show(t.inner)}>"  # type: ignore[attr-defined]
    return type_name(resolve(t, {}))


def is_open(t: Type) -> bool:
    """True for the types that fit anything: the open type, `Never`, and an unbound hole."""
    cls = type(t)
    return (cls is Prim and t.name in ("_", "Never")) or cls is Hole  # type: ignore[attr-defined]


def prim_named(t: Type, *names: str) -> bool:
    return type(t) is Prim and t.name in names  # type: ignore[attr-defined]


def fits(expected: Type, actual: Type) -> bool:
    """Structural identity where the open types fit anything (SPEC §3.2 compatibility)."""
    if expected is actual or is_open(expected) or is_open(actual):
        return True
    cls = type(expected)
    if cls is not type(actual):
        return False
    if cls is Prim or cls is TypeVar or cls is AgentT:
        return expected.name == actual.name  # type: ignore[attr-defined]
    if cls is ListT:
        return fits(expected.elem, actual.elem)  # type: ignore[attr-defined]
    if cls is OptionT:
        return fits(expected.inner, actual.inner)  # type: ignore[attr-defined]
    if cls is MapT:
        return fits(expected.key, actual.key) and fits(expected.value, actual.value)  # type: ignore[attr-defined]
    if cls is ResultT:
        return fits(expected.ok, actual.ok) and fits(expected.err, actual.err)  # type: ignore[attr-defined]
    if cls is TupleT:
        return len(expected.items) == len(actual.items) and all(  # type: ignore[attr-defined]
            fits(a, b) for a, b in zip(expected.items, actual.items))  # type: ignore[attr-defined]
    if cls is FnT:
        return len(expected.params) == len(actual.params) and fits(expected.ret, actual.ret) and all(  # type: ignore
            fits(a, b) for a, b in zip(expected.params, actual.params))  # type: ignore[attr-defined]
    if cls is RecordT or cls is EnumT:
        return expected.info is actual.info and _args_fit(expected.args, actual.args)  # type: ignore[attr-defined]
    if cls is PersistedT:
        return fits(expected.inner, actual.inner)  # type: ignore[attr-defined]
    return False


def _args_fit(a: tuple, b: tuple) -> bool:
    if not a or not b:
        return True
    return len(a) == len(b) and all(fits(x, y) for x, y in zip(a, b))


def merge(a: Type, b: Type) -> Type:
    """Of two fitting types, the more specific one: `merge(Option<_>, Option<Int>)` is `Option<Int>`."""
    if is_open(a):
        return a if prim_named(b, "Never") else b
    if is_open(b):
        return a
    cls = type(a)
    if cls is not type(b):
        return a
    if cls is ListT:
        return ListT(merge(a.elem, b.elem))  # type: ignore[attr-defined]
    if cls is OptionT:
        return OptionT(merge(a.inner, b.inner))  # type: ignore[attr-defined]
    if cls is MapT:
        return MapT(merge(a.key, b.key), merge(a.value, b.value))  # type: ignore[attr-defined]
    if cls is ResultT:
        return ResultT(merge(a.ok, b.ok), merge(a.err, b.err))  # type: ignore[attr-defined]
    if cls is TupleT and len(a.items) == len(b.items):  # type: ignore[attr-defined]
        return TupleT(merge(x, y) for x, y in zip(a.items, b.items))  # type: ignore[attr-defined]
    if cls is FnT and len(a.params) == len(b.params):  # type: ignore[attr-defined]
        return FnT((merge(x, y) for x, y in zip(a.params, b.params)), merge(a.ret, b.ret))  # type: ignore
    if (cls is RecordT or cls is EnumT) and a.info is b.info:  # type: ignore[attr-defined]
        if not a.args:  # type: ignore[attr-defined]
            return b
        if b.args and len(a.args) == len(b.args):  # type: ignore[attr-defined]
            return cls(a.info, (merge(x, y) for x, y in zip(a.args, b.args)))  # type: ignore[attr-defined]
    return a


def unify(param: Type, actual: Type, bindings: dict) -> None:
    """Bind the holes of `param` from the matching parts of `actual`. Mismatches are left to `fits`."""
    cls = type(param)
    if cls is Hole:
        current = bindings.get(param)
        if current is None:
            bindings[param] = actual
        elif fits(current, actual):
            bindings[param] = merge(current, actual)
        return
    if cls is not type(actual):
        return
    if cls is ListT:
        unify(param.elem, actual.elem, bindings)  # type: ignore[attr-defined]
    elif cls is OptionT:
        unify(param.inner, actual.inner, bindings)  # type: ignore[attr-defined]
    elif cls is MapT:
        unify(param.key, actual.key, bindings)  # type: ignore[attr-defined]
        unify(param.value, actual.value, bindings)  # type: ignore[attr-defined]
    elif cls is ResultT:
        unify(param.ok, actual.ok, bindings)  # type: ignore[attr-defined]
        unify(param.err, actual.err, bindings)  # type: ignore[attr-defined]
    elif cls is TupleT:
        for p, a in zip(param.items, actual.items):  # type: ignore[attr-defined]
            unify(p, a, bindings)
    elif cls is FnT:
        for p, a in zip(param.params, actual.params):  # type: ignore[attr-defined]
            unify(p, a, bindings)
        unify(param.ret, actual.ret, bindings)  # type: ignore[attr-defined]
    elif (cls is RecordT or cls is EnumT) and param.info is actual.info:  # type: ignore[attr-defined]
        for p, a in zip(param.args, actual.args):  # type: ignore[attr-defined]
            unify(p, a, bindings)


def resolve(t: Type, bindings: dict, default: Type | None = ANY) -> Type:
    """Substitute bound holes; unbound ones become `default` (or stay holes when default is None)."""
    cls = type(t)
    if cls is Hole:
        bound = bindings.get(t)
        if bound is not None:
            return bound
        return t if default is None else default
    if cls is Prim or cls is TypeVar or cls is AgentT:
        return t
    if cls is ListT:
        return ListT(resolve(t.elem, bindings, default))  # type: ignore[attr-defined]
    if cls is OptionT:
        return OptionT(resolve(t.inner, bindings, default))  # type: ignore[attr-defined]
    if cls is MapT:
        return MapT(resolve(t.key, bindings, default), resolve(t.value, bindings, default))  # type: ignore
    if cls is ResultT:
        return ResultT(resolve(t.ok, bindings, default), resolve(t.err, bindings, default))  # type: ignore
    if cls is TupleT:
        return TupleT(resolve(x, bindings, default) for x in t.items)  # type: ignore[attr-defined]
    if cls is FnT:
        return FnT((resolve(x, bindings, default) for x in t.params),  # type: ignore[attr-defined]
                   resolve(t.ret, bindings, default))  # type: ignore[attr-defined]
    if cls is RecordT or cls is EnumT:
        if not t.args:  # type: ignore[attr-defined]
            return t
        return cls(t.info, (resolve(x, bindings, default) for x in t.args))  # type: ignore[attr-defined]
    if cls is PersistedT:
        return PersistedT(resolve(t.inner, bindings, default))  # type: ignore[attr-defined]
    return t


def contains_hole(t: Type, bindings: dict) -> bool:
    """True when `t` still mentions a hole that `bindings` does not bind."""
    cls = type(t)
    if cls is Hole:
        return t not in bindings
    if cls is ListT:
        return contains_hole(t.elem, bindings)  # type: ignore[attr-defined]
    if cls is OptionT:
        return contains_hole(t.inner, bindings)  # type: ignore[attr-defined]
    if cls is MapT:
        return contains_hole(t.key, bindings) or contains_hole(t.value, bindings)  # type: ignore[attr-defined]
    if cls is ResultT:
        return contains_hole(t.ok, bindings) or contains_hole(t.err, bindings)  # type: ignore[attr-defined]
    if cls is TupleT:
        return any(contains_hole(x, bindings) for x in t.items)  # type: ignore[attr-defined]
    if cls is FnT:
        return contains_hole(t.ret, bindings) or any(  # type: ignore[attr-defined]
            contains_hole(x, bindings) for x in t.params)  # type: ignore[attr-defined]
    if cls is RecordT or cls is EnumT:
        return any(contains_hole(x, bindings) for x in t.args)  # type: ignore[attr-defined]
    return False


def instantiate(params: list[str]) -> tuple[dict, list[Hole]]:
    """Fresh holes for a generic item's type parameters: (TypeVar name -> hole, holes in order)."""
    holes = [Hole(p) for p in params]
    return dict(zip(params, holes)), holes


def erase_vars(t: Type) -> Type:
    """A generic declaration's type with every type variable open: generic functions used as values."""
    cls = type(t)
    if cls is TypeVar:
        return ANY
    if cls is ListT:
        return ListT(erase_vars(t.elem))  # type: ignore[attr-defined]
    if cls is OptionT:
        return OptionT(erase_vars(t.inner))  # type: ignore[attr-defined]
    if cls is MapT:
        return MapT(erase_vars(t.key), erase_vars(t.value))  # type: ignore[attr-defined]
    if cls is ResultT:
        return ResultT(erase_vars(t.ok), erase_vars(t.err))  # type: ignore[attr-defined]
    if cls is TupleT:
        return TupleT(erase_vars(x) for x in t.items)  # type: ignore[attr-defined]
    if cls is FnT:
        return FnT((erase_vars(x) for x in t.params), erase_vars(t.ret))  # type: ignore[attr-defined]
    if cls is RecordT or cls is EnumT:
        return cls(t.info, (erase_vars(x) for x in t.args)) if t.args else t  # type: ignore[attr-defined]
    return t
