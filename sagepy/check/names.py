"""Names in expressions and patterns: variables, items, the prelude, and enum variants (SPEC §3.1).

Lookup order, innermost first: local variables and parameters, items of the module (with its imports), the
prelude, then bare variant constructors (`Some`, `None`, `Ok`, `Err`, then variants of the enums in scope).
A variant is described by a `VariantRef` that treats `Option` and `Result` like generic user enums, so that
construction and patterns have one code path.
"""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Final

from ..core import types as T
from ..diagnostics import did_you_mean
from .body import Body, Locals
from .symbols import Entity, ToolRef
from .typeops import ANY, erase_vars, instantiate, resolve, unify

if TYPE_CHECKING:
    from .context import Checking


class Builtin(Enum):
    """The `Name.ref` / `Call.ref` of a prelude builtin, constant, intrinsic or assertion: the runtime finds it by
    name. One member, `BUILTIN`, compared with `is` (an enum member, so that a type checker narrows on it)."""

    BUILTIN = "builtin"


BUILTIN: Final = Builtin.BUILTIN
INTRINSICS = ("print", "print_err", "str", "len", "sort", "map_set", "map_delete")
ASSERTIONS = ("assert", "assert_true", "assert_false", "assert_eq", "assert_neq", "assert_gt", "assert_lt",
              "assert_gte", "assert_lte", "assert_contains", "assert_not_contains", "assert_starts_with",
              "assert_ends_with", "assert_empty", "assert_not_empty", "assert_len", "assert_empty_list",
              "assert_not_empty_list", "assert_fails")
# intrinsics that are functions of one value, usable as `Fn` values
INTRINSIC_VALUES = {"str": T.FnT([ANY], T.STRING), "len": T.FnT([ANY], T.INT),
                    "sort": T.FnT([T.ListT(ANY)], T.ListT(ANY))}


class VariantRef:
    """One variant: the enum's type parameters, the payload type (None: no payload) and the enum type, both
    written with the type parameters as `TypeVar`s."""

    __slots__ = ("name", "enum", "params", "payload", "result")

    def __init__(self, name: str, enum: str, params: list[str], payload: T.Type | None, result: T.Type) -> None:
        self.name = name
        self.enum = enum
        self.params = params
        self.payload = payload
        self.result = result


# What the checker records on `Name.ref` (None: a local variable, whose `slot` is set instead) and on `Call.ref`
# (None: a call of a value, such as a closure in a variable); sagepy/syntax/ast.pyi types the slots with these.
NameRef = Entity | VariantRef | Builtin
CallRef = Entity | VariantRef | ToolRef | Builtin

_T, _E = T.TypeVar("T"), T.TypeVar("E")
BUILTIN_VARIANTS = {
    "Some": VariantRef("Some", "Option", ["T"], _T, T.OptionT(_T)),
    "None": VariantRef("None", "Option", ["T"], None, T.OptionT(_T)),
    "Ok": VariantRef("Ok", "Result", ["T", "E"], _T, T.ResultT(_T, _E)),
    "Err": VariantRef("Err", "Result", ["T", "E"], _E, T.ResultT(_T, _E)),
}


def user_variant(entity: Entity, name: str) -> VariantRef | None:
    info = entity.info
    for vname, payload in info.variants:
        if vname == name:
            result = T.EnumT(info, [T.TypeVar(p) for p in info.params])
            return VariantRef(name, info.name, list(info.params), payload, result)
    return None


def value_candidates(c: Checking, cx: Body, lc: Locals) -> set[str]:
    return (lc.names() | cx.scope.candidates() | set(c.prelude.fns) | set(c.prelude.consts)
            | set(INTRINSICS))


def unknown_name(c: Checking, name: str, span: tuple, cx: Body, lc: Locals) -> None:
    c.error("E010", f"undefined name `{name}`", span, cx.file,
            hint=did_you_mean(name, value_candidates(c, cx, lc)))


def note_variant(c: Checking, enum_name: str | None, vname: str, span: tuple, ref: VariantRef | None, cx: Body,
                 where: str) -> None:
    """Record both names of `E::V` (the enum's even when the variant is unknown: completion after `E::`)."""
    if enum_name is not None:
        entity = cx.scope.lookup(enum_name)
        c.note(cx.file, span, enum_name, entity if entity is not None else ("enum", enum_name))
    c.note(cx.file, span, vname, ref, where)


def check_turbofish_absent(c: Checking, node: Any, what: str, cx: Body) -> None:
    if getattr(node, "targs", None):
        c.error("E100", f"{what} is not generic: remove the type arguments", node.span, cx.file)


# ---------------------------------------------------------------- names as values
def name_value(c: Checking, node: Any, cx: Body, lc: Locals, expected: T.Type | None) -> T.Type:
    """The type of a name that is not a local variable."""
    name = node.name
    entity = cx.scope.lookup(name)
    if entity is not None:
        node.ref = entity
        if entity.kind == "error":
            return ANY
        if entity.kind == "fn":
            return fn_value(c, entity.info, node, cx)
        if entity.kind == "const":
            check_turbofish_absent(c, node, f"`{name}`", cx)
            return entity.info
        c.error("E010", f"`{name}` is a {entity.kind}, not a value", node.span, cx.file)
        return ANY
    node.ref = BUILTIN
    if name in c.prelude.consts:
        return c.prelude.consts[name]
    if name in c.prelude.fns:
        return fn_value(c, c.prelude.fns[name], node, cx)
    if name in INTRINSIC_VALUES:
        return INTRINSIC_VALUES[name]
    if name in INTRINSICS or name in ASSERTIONS:
        c.error("E010", f"built-in `{name}` cannot be used as a value; wrap it in a closure", node.span,
                cx.file)
        return ANY
    ref = node.ref = bare_variant(c, name, node.span, cx)
    if ref is not None:
        return unit_variant_value(c, ref, node, cx, expected)
    unknown_name(c, name, node.span, cx, lc)
    return ANY


def fn_value(c: Checking, sig: Any, node: Any, cx: Body) -> T.Type:
    if sig.fails:
        c.error("E018", f"type mismatch: `fails` function `{sig.name}` cannot be used as a value", node.span,
                cx.file, hint="wrap the call in a closure that handles the error")
    params = [t for _, t in sig.params]
    ft = T.FnT(params, sig.ret)
    targs = getattr(node, "targs", None)
    if targs:
        if not sig.tparams:
            check_turbofish_absent(c, node, f"`{sig.name}`", cx)
        elif len(targs) != len(sig.tparams):
            c.error("E046", f"`{sig.name}` takes {len(sig.tparams)} type argument(s), {len(targs)} given",
                    node.span, cx.file)
        else:
            env = {p: c.ns.resolve_type(a, cx.scope, cx.tparams) for p, a in zip(sig.tparams, targs)}
            return T.substitute(ft, env)
    return erase_vars(ft) if sig.tparams else ft


def unit_variant_value(c: Checking, ref: VariantRef, node: Any, cx: Body, expected: T.Type | None) -> T.Type:
    if ref.payload is not None:
        c.error("E018", f"type mismatch: variant constructor `{ref.name}` is not a value; call it or wrap it "
                "in a closure", node.span, cx.file)
        return ANY
    _, result, bindings, _ = instantiate_variant(c, ref, getattr(node, "targs", None), node.span, cx)
    if expected is not None:
        unify(result, expected, bindings)
    return resolve(result, bindings)


# ---------------------------------------------------------------- variants
def bare_variant(c: Checking, name: str, span: tuple, cx: Body) -> VariantRef | None:
    ref = BUILTIN_VARIANTS.get(name)
    if ref is not None:
        return ref
    owners = cx.scope.variant_owners(name)
    if not owners:
        return None
    if len(owners) > 1:
        enums = ", ".join(f"`{e.name}`" for e in owners)
        c.error("E030", f"ambiguous variant `{name}` (defined by {enums})", span, cx.file,
                hint=f"qualify it: `{owners[0].name}::{name}`")
    return user_variant(owners[0], name)


def path_variant(c: Checking, enum_name: str, vname: str, span: tuple, cx: Body) -> VariantRef | None:
    if enum_name in ("Option", "Result"):
        ref = BUILTIN_VARIANTS.get(vname)
        if ref is None or ref.enum != enum_name:
            choices = ["Some", "None"] if enum_name == "Option" else ["Ok", "Err"]
            c.error("E030", f"unknown variant `{enum_name}::{vname}`", span, cx.file,
                    hint=did_you_mean(vname, choices))
            return None
        return ref
    entity = cx.scope.lookup(enum_name)
    if entity is None:
        if c.ns.start_module(cx.scope, enum_name) is not None:
            c.error("E100", f"module paths are not allowed in expressions and patterns: `{enum_name}::{vname}`",
                    span, cx.file, hint=f"bring the item into scope with `use {enum_name}::{vname};`")
        else:
            enums = [n for n, e in list(cx.scope.items.items()) + list(cx.scope.imports.items())
                     if e.kind == "enum"]
            c.error("E011", f"unknown enum `{enum_name}`", span, cx.file,
                    hint=did_you_mean(enum_name, enums))
        return None
    if entity.kind == "error":
        return None
    if entity.kind != "enum":
        c.error("E100", f"`{enum_name}` is a {entity.kind}, not an enum", span, cx.file)
        return None
    ref = user_variant(entity, vname)
    if ref is None:
        c.error("E030", f"enum `{enum_name}` has no variant `{vname}`", span, cx.file,
                hint=did_you_mean(vname, [v for v, _ in entity.info.variants]))
    return ref


def instantiate_variant(c: Checking, ref: VariantRef, targs: Any, span: tuple,
                        cx: Body) -> tuple[T.Type | None, T.Type, dict, list]:
    """(payload type, enum type, bindings, holes) with the enum's type parameters as fresh holes,
    bound at once from a turbofish."""
    env, holes = instantiate(ref.params)
    bindings: dict = {}
    if targs:
        if not ref.params:
            c.error("E100", f"`{ref.enum}` is not generic: remove the type arguments", span, cx.file)
        elif len(targs) != len(ref.params):
            c.error("E046", f"`{ref.enum}` takes {len(ref.params)} type argument(s), {len(targs)} given",
                    span, cx.file)
            bindings = {hole: ANY for hole in holes}
        else:
            for hole, texpr in zip(holes, targs):
                bindings[hole] = c.ns.resolve_type(texpr, cx.scope, cx.tparams)
    payload = None if ref.payload is None else T.substitute(ref.payload, env)
    return payload, T.substitute(ref.result, env), bindings, holes
