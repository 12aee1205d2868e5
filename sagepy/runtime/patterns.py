"""Match patterns compiled to `test(value, frame) -> bool` functions that bind slots as they match."""
from __future__ import annotations

from typing import Any, Callable

from ..syntax import ast as A
from .values import Variant, values_equal

Test = Callable[[Any, list], bool]


def compile_pattern(c: Any, pat: Any, scope: Any) -> Test:
    if isinstance(pat, A.PatWild):
        return lambda v, frame: True
    if isinstance(pat, A.PatBind):
        slot = scope.declare(pat.name)

        def bind(v: Any, frame: list) -> bool:
            frame[slot] = v
            return True
        return bind
    if isinstance(pat, A.PatLiteral):
        expected = pat.value
        kind = type(expected)

        def literal(v: Any, frame: list) -> bool:
            return type(v) is kind and values_equal(v, expected)
        return literal
    if isinstance(pat, A.PatTuple):
        items = [compile_pattern(c, p, scope) for p in pat.items]
        n = len(items)

        def tuple_(v: Any, frame: list) -> bool:
            if type(v) is not tuple or len(v) != n:
                return False
            for test, x in zip(items, v):
                if not test(x, frame):
                    return False
            return True
        return tuple_
    if isinstance(pat, A.PatOr):
        return _alternatives(c, pat, scope)
    if isinstance(pat, A.PatVariant):
        return _variant(c, pat, scope)
    raise TypeError(f"unknown pattern {pat!r}")


def _alternatives(c: Any, pat: Any, scope: Any) -> Test:
    """`p | q`: both sides bind the same names; the second side reuses the first side's slots."""
    first_names: dict[str, int] = {}
    tests = []
    for i, alt in enumerate(pat.alts):
        alt_scope = scope.child()
        if i > 0:
            alt_scope.names.update(first_names)
            test = _rebind(c, alt, alt_scope, first_names)
        else:
            test = compile_pattern(c, alt, alt_scope)
            first_names = dict(alt_scope.names)
        names = set(_bound_names(alt))
        if i > 0 and names != set(first_names):
            c.error("E031", "alternatives in a `|` pattern must bind the same names", alt.span)
        tests.append(test)
    scope.names.update(first_names)

    def any_of(v: Any, frame: list) -> bool:
        for test in tests:
            if test(v, frame):
                return True
        return False
    return any_of


def _rebind(c: Any, pat: Any, scope: Any, slots: dict[str, int]) -> Test:
    """Compile an alternative so that its bindings land in the slots the first alternative chose."""
    original = scope.declare

    def declare(name: str) -> int:
        if name in slots:
            scope.names[name] = slots[name]
            return slots[name]
        return original(name)
    scope.declare = declare
    try:
        return compile_pattern(c, pat, scope)
    finally:
        del scope.declare


def _bound_names(pat: Any) -> list[str]:
    if isinstance(pat, A.PatBind):
        return [pat.name]
    if isinstance(pat, A.PatTuple):
        return [n for p in pat.items for n in _bound_names(p)]
    if isinstance(pat, A.PatOr):
        return _bound_names(pat.alts[0])
    if isinstance(pat, A.PatVariant) and pat.payload is not None:
        return _bound_names(pat.payload)
    return []


def _variant(c: Any, pat: Any, scope: Any) -> Test:
    name = pat.name
    if pat.enum_name is not None:
        info = c.enum_info(pat.enum_name, pat.span)
        if info is None:
            return lambda v, frame: False
        enum_name = info if isinstance(info, str) else info.name
        has_payload = c.variant_payload(info, name, pat.span)
    else:
        found = c.bare_variant(name, pat.span)
        if found is None:
            c.error("E030", f"unknown variant `{name}`", pat.span)
            return lambda v, frame: False
        enum_name, _, has_payload = found
    if pat.payload is not None and not has_payload:
        c.error("E031", f"variant `{name}` has no payload", pat.span)
    payload = compile_pattern(c, pat.payload, scope) if pat.payload is not None else None

    if payload is None:
        def unit(v: Any, frame: list) -> bool:
            return type(v) is Variant and v.name == name and v.enum == enum_name
        return unit

    def with_payload(v: Any, frame: list) -> bool:
        return type(v) is Variant and v.name == name and v.enum == enum_name and payload(v.payload, frame)
    return with_payload
