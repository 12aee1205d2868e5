"""Math builtins and constants (SPEC §6.3, §4.2).

Int results behave as signed 64-bit values: anything that leaves the range raises E200. Float functions
follow IEEE 754 and never fail, so Python's `math` exceptions (domain and range errors) are turned back into
the IEEE results (NaN, ±inf).
"""
from __future__ import annotations

import math
from typing import Any, Callable

from ..core.errors import check_int, invalid_argument, overflow
from ..core.values import display

_INF = float("inf")
_NAN = float("nan")


def abs_int(x: int) -> int:
    return check_int(abs(x))


def min_int(a: int, b: int) -> int:
    return a if a <= b else b


def max_int(a: int, b: int) -> int:
    return a if a >= b else b


def clamp(x: int, lo: int, hi: int) -> int:
    if lo > hi:
        raise invalid_argument("clamp", f"lo ({lo}) > hi ({hi})")
    return lo if x < lo else (hi if x > hi else x)


def abs_float(x: float) -> float:
    return abs(x)


# min_float/max_float follow IEEE 754 minNum/maxNum: a NaN operand is ignored in favour of the other one.
def min_float(a: float, b: float) -> float:
    if a != a:
        return b
    return a if a <= b or b != b else b


def max_float(a: float, b: float) -> float:
    if a != a:
        return b
    return a if a >= b or b != b else b


def clamp_float(x: float, lo: float, hi: float) -> float:
    if lo != lo or hi != hi:
        raise invalid_argument("clamp_float", "NaN bound")
    if lo > hi:
        raise invalid_argument("clamp_float", f"lo ({display(lo)}) > hi ({display(hi)})")
    return lo if x < lo else (hi if x > hi else x)


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise overflow()
    return x


def floor(x: float) -> int:
    return check_int(math.floor(_finite(x)))


def ceil(x: float) -> int:
    return check_int(math.ceil(_finite(x)))


def round_half_away(x: float) -> int:
    a = abs(_finite(x))
    whole = math.floor(a)
    # a - whole is exact in binary floating point, so the half-way test has no rounding error.
    rounded = whole + 1 if a - whole >= 0.5 else whole
    return check_int(-rounded if x < 0 else rounded)


def floor_float(x: float) -> float:
    if not math.isfinite(x):
        return x
    whole = math.floor(x)
    return math.copysign(0.0, x) if whole == 0 else float(whole)


def ceil_float(x: float) -> float:
    if not math.isfinite(x):
        return x
    whole = math.ceil(x)
    # ceil(-0.5) is -0.0 in IEEE arithmetic, which Python's integer-valued math.ceil loses.
    return math.copysign(0.0, x) if whole == 0 else float(whole)


def sqrt(x: float) -> float:
    if x < 0:
        return _NAN
    return math.sqrt(x)


def _is_odd_integer(x: float) -> bool:
    return math.isfinite(x) and x == math.floor(x) and int(x) % 2 == 1


def pow_float(base: float, exp: float) -> float:
    try:
        return math.pow(base, exp)
    except OverflowError:
        return -_INF if base < 0 and _is_odd_integer(exp) else _INF
    except ValueError:
        if base == 0.0:
            # Zero to a negative power: a pole, signed like the zero for odd integer exponents.
            negative = math.copysign(1.0, base) < 0 and _is_odd_integer(exp)
            return -_INF if negative else _INF
        return _NAN


def pow_int(base: int, exp: int) -> int:
    if exp < 0:
        raise invalid_argument("pow", "negative exponent")
    if base in (0, 1, -1):
        return base ** exp
    # |base| >= 2 overflows 64 bits from exponent 64 on; stopping here avoids building a huge integer.
    if exp >= 64:
        raise overflow()
    return check_int(base ** exp)


BUILTINS: dict[str, Callable[..., Any]] = {
    "abs": abs_int,
    "min": min_int,
    "max": max_int,
    "clamp": clamp,
    "abs_float": abs_float,
    "min_float": min_float,
    "max_float": max_float,
    "clamp_float": clamp_float,
    "floor": floor,
    "ceil": ceil,
    "round": round_half_away,
    "floor_float": floor_float,
    "ceil_float": ceil_float,
    "sqrt": sqrt,
    "pow_float": pow_float,
    "pow": pow_int,
}

CONSTANTS: dict[str, Any] = {
    "PI": math.pi,
    "E": math.e,
}
