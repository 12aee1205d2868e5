"""Match patterns compiled to `test(value, frame) -> bool` functions that bind slots as they match.

The checker resolved every variant pattern (`PatVariant.ref`) and gave every bound name its frame slot
(`PatBind.slot`, the same in each alternative of `p | q`)."""
from __future__ import annotations

from typing import Any, Callable

from ..syntax import ast as A
from ..core.values import Variant, values_equal

Test = Callable[[Any, list], bool]


def compile_pattern(pat: Any) -> Test:
    if isinstance(pat, A.PatWild):
        return lambda v, frame: True
    if isinstance(pat, A.PatBind):
        slot = pat.slot

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
        items = [compile_pattern(p) for p in pat.items]
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
        tests = [compile_pattern(alt) for alt in pat.alts]

        def any_of(v: Any, frame: list) -> bool:
            for test in tests:
                if test(v, frame):
                    return True
            return False
        return any_of
    return _variant(pat)


def _variant(pat: Any) -> Test:
    name = pat.name
    enum_name = pat.ref.enum
    payload = compile_pattern(pat.payload) if pat.payload is not None else None

    if payload is None:
        def unit(v: Any, frame: list) -> bool:
            return type(v) is Variant and v.name == name and v.enum == enum_name
        return unit

    def with_payload(v: Any, frame: list) -> bool:
        return type(v) is Variant and v.name == name and v.enum == enum_name and payload(v.payload, frame)
    return with_payload
