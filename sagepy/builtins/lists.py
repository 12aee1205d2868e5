"""List builtins (SPEC §6.4).

Lists are never mutated once built, so every builtin returns a fresh list and leaves its argument alone.
Higher-order builtins receive Sage functions as Python callables and call them in list order, so side
effects and errors inside the callback happen in the order the program expects.
"""
from __future__ import annotations

from functools import cmp_to_key
from itertools import accumulate, dropwhile, takewhile
from typing import Any, Callable

from ..core.errors import invalid_argument, overflow
from ..core.values import NONE, UNIT, ErrorValue, Record, Variant, some, values_equal
from ..core.types import INT_MAX, INT_MIN
from .sizes import building, check_size


def _clamp_index(i: int, length: int) -> int:
    return 0 if i < 0 else (length if i > length else i)


def _hashable_scalar(x: Any) -> bool:
    """Values whose Python hash and == agree with Sage equality (NaN is never equal to itself)."""
    t = type(x)
    return t is int or t is str or t is bool or (t is float and x == x)


class _NoKey(Exception):
    """The value holds a function or an agent handle, which compare by identity only (SPEC §3.3)."""


class _NeverEqual(Exception):
    """The value holds a NaN, so it equals nothing, itself included."""


def _equality_key(x: Any) -> Any:
    """A hashable key that two values share exactly when Sage calls them equal (SPEC §3.3: structural,
    maps order-insensitive, errors by kind and message). Scalars carry their type, because Python's
    `1 == 1.0 == True` is not Sage's equality."""
    t = type(x)
    if t is str or t is int or t is bool:
        return (t, x)
    if t is float:
        if x != x:
            raise _NeverEqual()
        return (t, x)
    if t is list or t is tuple:
        return (t, tuple(_equality_key(y) for y in x))
    if t is dict:
        return (t, frozenset((_equality_key(k), _equality_key(v)) for k, v in x.items()))
    if t is Record:
        return (t, x.name, _equality_key(x.fields))
    if t is Variant:
        return (t, x.enum, x.name, None if x.payload is None else _equality_key(x.payload))
    if t is ErrorValue:
        return (t, x.kind, x.message)
    if x is UNIT:
        return (t,)
    raise _NoKey()


def push(l: list, x: Any) -> list:
    return l + [x]


def concat(a: list, b: list) -> list:
    return a + b


def reverse(l: list) -> list:
    return l[::-1]


def unique(l: list) -> list:
    """Linear time through equality keys; only values holding functions or agent handles, which have no
    key, are compared pairwise, among themselves (equal values have the same shape, so no keyed value can
    equal them)."""
    seen: set = set()
    unkeyed: list = []
    kept = []
    for x in l:
        try:
            key = _equality_key(x)
        except _NeverEqual:
            kept.append(x)
            continue
        except _NoKey:
            if any(values_equal(x, y) for y in unkeyed):
                continue
            unkeyed.append(x)
            kept.append(x)
            continue
        if key not in seen:
            seen.add(key)
            kept.append(x)
    return kept


def first(l: list) -> Any:
    return some(l[0]) if l else NONE


def last(l: list) -> Any:
    return some(l[-1]) if l else NONE


def get(l: list, i: int) -> Any:
    return some(l[i]) if 0 <= i < len(l) else NONE


def list_contains(l: list, x: Any) -> bool:
    if _hashable_scalar(x):
        return x in l
    return any(values_equal(y, x) for y in l)


def sort(l: list) -> list:
    # NaN has no place in Python's ordering; a NaN-free list sorts directly, otherwise NaNs go last.
    if l and type(l[0]) is float and any(x != x for x in l):
        return sorted(l, key=lambda x: (x != x, x))
    return sorted(l)


def sort_by(l: list, cmp: Callable[[Any, Any], int]) -> list:
    return sorted(l, key=cmp_to_key(cmp))


def list_slice(l: list, begin: int, end: int) -> list:
    n = len(l)
    begin, end = _clamp_index(begin, n), _clamp_index(end, n)
    return l[begin:end] if begin < end else []


def take(l: list, n: int) -> list:
    return l[: _clamp_index(n, len(l))]


def drop(l: list, n: int) -> list:
    return l[_clamp_index(n, len(l)):]


def chunk(l: list, n: int) -> list:
    if n <= 0:
        raise invalid_argument("chunk", "size must be > 0")
    return [l[i:i + n] for i in range(0, len(l), n)]


def range_(a: int, b: int) -> list:
    return _int_range("range", a, b, 1)


def range_step(a: int, b: int, step: int) -> list:
    if step <= 0:
        raise invalid_argument("range_step", "step must be > 0")
    return _int_range("range_step", a, b, step)


def _int_range(builtin: str, a: int, b: int, step: int) -> list:
    check_size(builtin, max(0, (b - a + step - 1) // step), "elements")
    with building(builtin):
        return list(range(a, b, step))


def flatten(l: list) -> list:
    return [x for sub in l for x in sub]


def zip_(a: list, b: list) -> list:
    return list(zip(a, b))


def enumerate_(l: list) -> list:
    return list(enumerate(l))


def map_(l: list, f: Callable[[Any], Any]) -> list:
    return [f(x) for x in l]


def filter_(l: list, p: Callable[[Any], bool]) -> list:
    return [x for x in l if p(x)]


def flat_map(l: list, f: Callable[[Any], list]) -> list:
    return [y for x in l for y in f(x)]


def take_while(l: list, p: Callable[[Any], bool]) -> list:
    return list(takewhile(p, l))


def drop_while(l: list, p: Callable[[Any], bool]) -> list:
    return list(dropwhile(p, l))


def reduce_(l: list, init: Any, f: Callable[[Any, Any], Any]) -> Any:
    acc = init
    for x in l:
        acc = f(acc, x)
    return acc


def any_(l: list, p: Callable[[Any], bool]) -> bool:
    return any(p(x) for x in l)


def all_(l: list, p: Callable[[Any], bool]) -> bool:
    return all(p(x) for x in l)


def find(l: list, p: Callable[[Any], bool]) -> Any:
    for x in l:
        if p(x):
            return some(x)
    return NONE


def count_where(l: list, p: Callable[[Any], bool]) -> int:
    return sum(1 for x in l if p(x))


def sum_(l: list) -> int:
    # Sage's `sum` is a left fold of `+`, so an overflowing partial sum is an error even if later
    # elements would bring the total back into range.
    partials = list(accumulate(l))
    if not partials:
        return 0
    if max(partials) > INT_MAX or min(partials) < INT_MIN:
        raise overflow()
    return partials[-1]


def sum_floats(l: list) -> float:
    # A plain left-to-right fold: Python's own sum() compensates rounding errors from 3.12 on, which would
    # make results depend on the Python version.
    total = 0.0
    for x in l:
        total += x
    return total


BUILTINS: dict[str, Callable[..., Any]] = {
    "push": push,
    "concat": concat,
    "reverse": reverse,
    "unique": unique,
    "first": first,
    "last": last,
    "pop": last,
    "get": get,
    "list_contains": list_contains,
    "sort": sort,
    "sort_by": sort_by,
    "list_slice": list_slice,
    "take": take,
    "drop": drop,
    "chunk": chunk,
    "range": range_,
    "range_step": range_step,
    "flatten": flatten,
    "zip": zip_,
    "enumerate": enumerate_,
    "map": map_,
    "filter": filter_,
    "flat_map": flat_map,
    "take_while": take_while,
    "drop_while": drop_while,
    "reduce": reduce_,
    "any": any_,
    "all": all_,
    "find": find,
    "count_where": count_where,
    "sum": sum_,
    "sum_floats": sum_floats,
}
