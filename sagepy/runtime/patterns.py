"""Match patterns compiled to `test(value, frame) -> bool` functions that bind slots as they match.

The checker resolved every variant pattern (`PatVariant.ref`) and made sure the alternatives of `p | q` bind the
same names."""
from __future__ import annotations

from typing import Any, Callable

from ..syntax import ast as A
from .values import Variant, values_equal

Test = Callable[[Any, list], bool]


def compile_pattern(pat: Any, scope: Any, reuse: dict[str, int] | None = None) -> Test:
    """`reuse`: the slots chosen by the first alternative of an or-pattern, where a later one binds too."""
    if isinstance(pat, A.PatWild):
        return lambda v, frame: True
    if isinstance(pat, A.PatBind):
        if reuse is not None and pat.name in reuse:
            slot = scope.names[pat.name] = reuse[pat.name]
        else:
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
        items = [compile_pattern(p, scope, reuse) for p in pat.items]
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
        return _alternatives(pat, scope, reuse)
    if isinstance(pat, A.PatVariant):
        return _variant(pat, scope, reuse)
    raise TypeError(f"unknown pattern {pat!r}")


def _alternatives(pat: Any, scope: Any, reuse: dict[str, int] | None) -> Test:
    """`p | q`: both sides bind the same names; the later sides reuse the first side's slots."""
    first_scope = scope.child()
    tests = [compile_pattern(pat.alts[0], first_scope, reuse)]
    slots = {**(reuse or {}), **first_scope.names}
    for alt in pat.alts[1:]:
        tests.append(compile_pattern(alt, scope.child(), slots))
    scope.names.update(first_scope.names)

    def any_of(v: Any, frame: list) -> bool:
        for test in tests:
            if test(v, frame):
                return True
        return False
    return any_of


def _variant(pat: Any, scope: Any, reuse: dict[str, int] | None) -> Test:
    name = pat.name
    enum_name = pat.ref.enum
    payload = compile_pattern(pat.payload, scope, reuse) if pat.payload is not None else None

    if payload is None:
        def unit(v: Any, frame: list) -> bool:
            return type(v) is Variant and v.name == name and v.enum == enum_name
        return unit

    def with_payload(v: Any, frame: list) -> bool:
        return type(v) is Variant and v.name == name and v.enum == enum_name and payload(v.payload, frame)
    return with_payload
