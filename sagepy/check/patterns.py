"""`match`: arm agreement, patterns and exhaustiveness (SPEC §2.5, §3.6).

Patterns must fit the scrutinee's type (E031); tuple patterns need the right arity (E028); the alternatives of
`p | q` bind the same names with the same types (E031). Exhaustiveness follows §3.6 literally: an irrefutable
arm covers everything; a tuple pattern with a refutable element covers nothing; enums, `Option` and `Result`
need every variant (a payload arm counts only with an irrefutable payload pattern); `Bool` needs both literals;
every other type needs a catch-all (E029).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import types as T
from ..diagnostics import did_you_mean
from ..syntax import ast as A
from . import names
from .body import Body, Locals, Var
from .typeops import ANY, NEVER, fits, is_open, merge, resolve, show, unify

if TYPE_CHECKING:
    from .context import Checking

_LITERAL_TYPES = {bool: T.BOOL, int: T.INT, float: T.FLOAT, str: T.STRING}


def e_MatchExpr(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    return match(c, node, cx, lc, expected, False)


def match(c: Checking, node: Any, cx: Body, lc: Locals, expected: Any, discard: bool) -> T.Type:
    scrutinee = c.expr(node.scrutinee, cx, lc)
    result: T.Type | None = None
    all_diverge = True
    for arm in node.arms:
        inner = lc.child()
        for name, t in pattern(c, arm.pattern, scrutinee, cx).items():
            inner.vars[name] = Var(t, cx)
        bind_slots(arm.pattern, inner.vars)
        for bind in pattern_binds(arm.pattern):
            c.note(cx.file, bind.span, bind.name, inner.vars.get(bind.name), "h", True)
        hint = None if discard else (result if result is not None and not is_open(result) else expected)
        t = arm_body(c, arm.body, cx, inner, hint, discard)
        if t is NEVER:
            continue
        all_diverge = False
        if discard:
            continue
        if result is None:
            result = t
        elif not fits(result, t):
            c.mismatch(result, t, arm.body.span, cx, hint="every arm of a `match` must give the same type")
        else:
            result = merge(result, t)
    check_exhaustive(c, node, scrutinee, cx)
    if all_diverge:
        return NEVER
    if discard:
        return T.UNIT
    return result if result is not None else NEVER


def arm_body(c: Checking, body: Any, cx: Body, lc: Locals, expected: Any, discard: bool) -> T.Type:
    if isinstance(body, A.Block):
        return c.block_type(body, cx, lc, expected, discard)
    if isinstance(body, A.ArmBreak):
        c.loop_jump("break", body.span, cx)
        return NEVER
    if isinstance(body, A.ArmContinue):
        c.loop_jump("continue", body.span, cx)
        return NEVER
    if isinstance(body, A.ArmReturn):
        c.return_value(body.value, body.span, cx, lc)
        return NEVER
    if isinstance(body, A.MatchExpr):
        return match(c, body, cx, lc, expected, discard)
    return c.expr(body, cx, lc, expected)


# ---------------------------------------------------------------- patterns
def pattern(c: Checking, pat: Any, t: T.Type, cx: Body) -> dict[str, T.Type]:
    """Check `pat` against type `t`; returns the variables it binds."""
    cls = type(pat)
    if cls is A.PatWild:
        return {}
    if cls is A.PatBind:
        return {pat.name: t}
    if cls is A.PatLiteral:
        lt = _LITERAL_TYPES[type(pat.value)]
        if not fits(t, lt):
            c.error("E031", f"invalid pattern: a {show(lt)} literal cannot match a value of type {show(t)}",
                    pat.span, cx.file)
        return {}
    if cls is A.PatTuple:
        return tuple_pattern(c, pat, t, cx)
    if cls is A.PatOr:
        return or_pattern(c, pat, t, cx)
    return variant_pattern(c, pat, t, cx)


def tuple_pattern(c: Checking, pat: Any, t: T.Type, cx: Body) -> dict[str, T.Type]:
    n = len(pat.items)
    items: list[T.Type] = [ANY] * n
    if isinstance(t, T.TupleT):
        if len(t.items) != n:
            c.error("E028", f"tuple pattern has {n} elements, but the value is {show(t)}", pat.span, cx.file)
        else:
            items = list(t.items)
    elif not is_open(t):
        c.error("E031", f"invalid pattern: a tuple pattern cannot match a value of type {show(t)}", pat.span,
                cx.file)
    bound: dict[str, T.Type] = {}
    for sub, item in zip(pat.items, items):
        bound.update(pattern(c, sub, item, cx))
    return bound


def or_pattern(c: Checking, pat: Any, t: T.Type, cx: Body) -> dict[str, T.Type]:
    first = pattern(c, pat.alts[0], t, cx)
    for alt in pat.alts[1:]:
        other = pattern(c, alt, t, cx)
        if set(other) != set(first):
            c.error("E031", "invalid pattern: alternatives in a `|` pattern must bind the same names", alt.span,
                    cx.file)
            continue
        for name, ty in other.items():
            if not (fits(first[name], ty) and fits(ty, first[name])):
                c.error("E031", f"invalid pattern: `{name}` has type {show(first[name])} in one alternative "
                        f"and {show(ty)} in another", alt.span, cx.file)
                break
    return first


def variant_pattern(c: Checking, pat: Any, t: T.Type, cx: Body) -> dict[str, T.Type]:
    if pat.enum_name is not None:
        ref = names.path_variant(c, pat.enum_name, pat.name, pat.span, cx)
        names.note_variant(c, pat.enum_name, pat.name, pat.span, ref, cx, "::")
    else:
        ref = names.bare_variant(c, pat.name, pat.span, cx)
        if ref is None:
            c.error("E030", f"unknown variant `{pat.name}`", pat.span, cx.file,
                    hint=did_you_mean(pat.name, variant_names(t)))
        c.note(cx.file, pat.span, pat.name, ref)
    if ref is None:
        return pattern(c, pat.payload, ANY, cx) if pat.payload is not None else {}
    pat.ref = ref
    payload, result, bindings, _ = names.instantiate_variant(c, ref, pat.targs, pat.span, cx)
    unify(result, t, bindings)
    if not fits(resolve(result, bindings), t):
        c.error("E031", f"invalid pattern: variant `{ref.enum}::{ref.name}` cannot match a value of type "
                f"{show(t)}", pat.span, cx.file)
        payload_t: T.Type = ANY
    else:
        payload_t = resolve(payload, bindings) if payload is not None else ANY
    if pat.payload is None:
        return {}
    if payload is None:
        c.error("E031", f"invalid pattern: variant `{ref.name}` has no payload", pat.span, cx.file)
        return pattern(c, pat.payload, ANY, cx)
    return pattern(c, pat.payload, payload_t, cx)


def variant_names(t: T.Type) -> list[str]:
    if isinstance(t, T.EnumT):
        return [v for v, _ in t.info.variants]
    if isinstance(t, T.OptionT):
        return ["Some", "None"]
    if isinstance(t, T.ResultT):
        return ["Ok", "Err"]
    return []


# ---------------------------------------------------------------- exhaustiveness
def check_exhaustive(c: Checking, node: Any, t: T.Type, cx: Body) -> None:
    arms = [arm.pattern for arm in node.arms]
    if is_open(t) or any(irrefutable(p) for p in arms):
        return
    if prim_bool(t):
        needed = ["true", "false"]
        covered = set().union(*(literals(p) for p in arms)) if arms else set()
        missing = [n for n in needed if {"true": True, "false": False}[n] not in covered]
    elif isinstance(t, (T.EnumT, T.OptionT, T.ResultT)):
        needed = variant_names(t)
        covered = set().union(*(covered_variants(p) for p in arms)) if arms else set()
        missing = [n for n in needed if n not in covered]
    else:
        c.error("E029", f"non-exhaustive match on {show(t)}: add a catch-all arm `_ => …`", node.span, cx.file)
        return
    if missing:
        c.error("E029", f"non-exhaustive match: {', '.join('`' + m + '`' for m in missing)} not covered",
                node.span, cx.file, hint="add the missing arms, or a catch-all `_ => …`")


def bind_slots(pat: Any, variables: dict[str, Var]) -> None:
    """Record the frame slot of every name the pattern binds; the alternatives of `p | q` share them."""
    cls = type(pat)
    if cls is A.PatBind:
        var = variables.get(pat.name)   # missing only in an alternative already reported (E031)
        if var is not None:
            pat.slot = var.slot
    elif cls is A.PatTuple:
        for item in pat.items:
            bind_slots(item, variables)
    elif cls is A.PatOr:
        for alt in pat.alts:
            bind_slots(alt, variables)
    elif cls is A.PatVariant and pat.payload is not None:
        bind_slots(pat.payload, variables)


def pattern_binds(pat: Any) -> list:
    """The `PatBind` nodes of a pattern, alternatives included."""
    cls = type(pat)
    if cls is A.PatBind:
        return [pat]
    if cls is A.PatTuple:
        return [b for item in pat.items for b in pattern_binds(item)]
    if cls is A.PatOr:
        return [b for alt in pat.alts for b in pattern_binds(alt)]
    if cls is A.PatVariant and pat.payload is not None:
        return pattern_binds(pat.payload)
    return []


def prim_bool(t: T.Type) -> bool:
    return isinstance(t, T.Prim) and t.name == "Bool"


def irrefutable(pat: Any) -> bool:
    cls = type(pat)
    if cls is A.PatWild or cls is A.PatBind:
        return True
    if cls is A.PatTuple:
        return all(irrefutable(p) for p in pat.items)
    if cls is A.PatOr:
        return any(irrefutable(p) for p in pat.alts)
    return False


def literals(pat: Any) -> set:
    if type(pat) is A.PatLiteral and type(pat.value) is bool:
        return {pat.value}
    if type(pat) is A.PatOr:
        return set().union(*(literals(p) for p in pat.alts))
    return set()


def covered_variants(pat: Any) -> set[str]:
    if type(pat) is A.PatVariant and (pat.payload is None or irrefutable(pat.payload)):
        return {pat.name}
    if type(pat) is A.PatOr:
        return set().union(*(covered_variants(p) for p in pat.alts))
    return set()
