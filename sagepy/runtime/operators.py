"""Operator closures: each binary operator compiled to `fn(frame) -> value` with Sage's rules (SPEC §3.3, §4.2).

Int results are checked against the signed 64-bit range (E200); integer `/` and `%` by zero raise E201;
`/` truncates toward zero and `%` takes the sign of the dividend. The common `local op Int-literal` shapes
have their own closures because they dominate loops and recursion.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ..core.types import INT_MAX, INT_MIN
from ..core.errors import SageRaise, raise_at
from ..core.values import display, values_equal


def type_error(op: str, a: Any, b: Any, file: str, span: tuple) -> SageRaise:
    operands = display(a) if b is None else f"{display(a)} and {display(b)}"
    return raise_at("Runtime", f"operator `{op}` is not defined for {operands}", None, file, span)


def builtin_misuse(name: str, exc: TypeError, file: str, span: tuple) -> SageRaise:
    return raise_at("Runtime", f"invalid argument: {name}: {exc}", "E206", file, span)


# ---------------------------------------------------------------- binary operators

def _arith(op: str, pyop: Callable[[Any, Any], Any]):
    def maker(left, right, file, span):
        def run(frame: list) -> Any:
            a = left(frame)
            b = right(frame)
            ta = type(a)
            if ta is int and type(b) is int:
                r = pyop(a, b)
                if INT_MIN <= r <= INT_MAX:
                    return r
                raise raise_at("Runtime", "integer overflow", "E200", file, span)
            if ta is float and type(b) is float:
                return pyop(a, b)
            raise type_error(op, a, b, file, span)
        return run
    return maker


def _add(left, right, file, span):
    def run(frame: list) -> Any:
        a = left(frame)
        b = right(frame)
        if type(a) is int and type(b) is int:
            r = a + b
            if INT_MIN <= r <= INT_MAX:
                return r
            raise raise_at("Runtime", "integer overflow", "E200", file, span)
        if type(a) is float and type(b) is float:
            return a + b
        raise type_error("+", a, b, file, span)
    return run


def _sub(left, right, file, span):
    def run(frame: list) -> Any:
        a = left(frame)
        b = right(frame)
        if type(a) is int and type(b) is int:
            r = a - b
            if INT_MIN <= r <= INT_MAX:
                return r
            raise raise_at("Runtime", "integer overflow", "E200", file, span)
        if type(a) is float and type(b) is float:
            return a - b
        raise type_error("-", a, b, file, span)
    return run


def _div(left, right, file, span):
    def run(frame: list) -> Any:
        a = left(frame)
        b = right(frame)
        if type(a) is int and type(b) is int:
            if b == 0:
                raise raise_at("Runtime", "division by zero", "E201", file, span)
            q = abs(a) // abs(b)
            r = q if (a >= 0) == (b >= 0) else -q
            if r > INT_MAX:
                raise raise_at("Runtime", "integer overflow", "E200", file, span)
            return r
        if type(a) is float and type(b) is float:
            try:
                return a / b
            except ZeroDivisionError:
                if a != a or a == 0:
                    return float("nan")
                return float("inf") if (a > 0) == (str(b)[0] != "-") else float("-inf")
        raise type_error("/", a, b, file, span)
    return run


_INFINITIES = (float("inf"), float("-inf"))


def _mod(left, right, file, span):
    import math

    def run(frame: list) -> Any:
        a = left(frame)
        b = right(frame)
        if type(a) is int and type(b) is int:
            if a >= 0 and b > 0:
                return a % b
            if b == 0:
                raise raise_at("Runtime", "division by zero", "E201", file, span)
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
        if type(a) is float and type(b) is float:
            if b == 0 or a in _INFINITIES:   # IEEE 754: NaN (math.fmod raises ValueError for an infinite a)
                return float("nan")
            return math.fmod(a, b)
        raise type_error("%", a, b, file, span)
    return run


def _concat(left, right, file, span):
    def run(frame: list) -> Any:
        a = left(frame)
        b = right(frame)
        if type(a) is str and type(b) is str:
            return a + b
        raise type_error("++", a, b, file, span)
    return run


def _eq(left, right, file, span):
    def run(frame: list) -> bool:
        a = left(frame)
        b = right(frame)
        if type(a) is int and type(b) is int:
            return a == b
        return values_equal(a, b)
    return run


def _ne(left, right, file, span):
    def run(frame: list) -> bool:
        return not values_equal(left(frame), right(frame))
    return run


def _compare(op: str, pyop: Callable[[Any, Any], bool]):
    def maker(left, right, file, span):
        def run(frame: list) -> bool:
            a = left(frame)
            b = right(frame)
            ta = type(a)
            if ta is type(b) and (ta is int or ta is float or ta is str):
                return pyop(a, b)
            raise type_error(op, a, b, file, span)
        return run
    return maker


def _and(left, right, file, span):
    def run(frame: list) -> bool:
        a = left(frame)
        if a is False:
            return False
        if a is not True:
            raise type_error("&&", a, None, file, span)
        b = right(frame)
        if b is True or b is False:
            return b
        raise type_error("&&", b, None, file, span)
    return run


def _or(left, right, file, span):
    def run(frame: list) -> bool:
        a = left(frame)
        if a is True:
            return True
        if a is not False:
            raise type_error("||", a, None, file, span)
        b = right(frame)
        if b is True or b is False:
            return b
        raise type_error("||", b, None, file, span)
    return run


def _slot_add(slot, const, file, span):
    def run(frame: list) -> Any:
        a = frame[slot]
        if type(a) is int:
            r = a + const
            if INT_MIN <= r <= INT_MAX:
                return r
            raise raise_at("Runtime", "integer overflow", "E200", file, span)
        raise type_error("+", a, const, file, span)
    return run


def _slot_sub(slot, const, file, span):
    def run(frame: list) -> Any:
        a = frame[slot]
        if type(a) is int:
            r = a - const
            if INT_MIN <= r <= INT_MAX:
                return r
            raise raise_at("Runtime", "integer overflow", "E200", file, span)
        raise type_error("-", a, const, file, span)
    return run


def _slot_compare(op: str, pyop: Callable[[Any, Any], bool]):
    def maker(slot, const, file, span):
        def run(frame: list) -> bool:
            a = frame[slot]
            if type(a) is int:
                return pyop(a, const)
            raise type_error(op, a, const, file, span)
        return run
    return maker


def _mod_by(left, const, file, span):
    """`e % k` for a positive Int literal k (`i % 2`, `x % 1000`): no zero test, no closure call for k."""
    def run(frame: list) -> Any:
        a = left(frame)
        if type(a) is int:
            r = abs(a) % const
            return r if a >= 0 else -r
        raise type_error("%", a, const, file, span)
    return run


def _compare_to(op: str, pyop: Callable[[Any, Any], bool]):
    """`e < k`, `e == k`, …: an expression compared with an Int literal."""
    def maker(left, const, file, span):
        def run(frame: list) -> bool:
            a = left(frame)
            if type(a) is int:
                return pyop(a, const)
            if op == "==" or op == "!=":
                return values_equal(a, const) == (op == "==")
            raise type_error(op, a, const, file, span)
        return run
    return maker


SLOT_CONST_OPS = {
    "+": _slot_add, "-": _slot_sub,
    "<": _slot_compare("<", operator.lt), ">": _slot_compare(">", operator.gt),
    "<=": _slot_compare("<=", operator.le), ">=": _slot_compare(">=", operator.ge),
    "==": _slot_compare("==", operator.eq), "!=": _slot_compare("!=", operator.ne),
}
COMPARISONS = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge, "==": operator.eq,
               "!=": operator.ne}
BOOLEAN_OPS = {"<", ">", "<=", ">=", "==", "!=", "&&", "||"}

BINARY = {
    "+": _add, "-": _sub, "*": _arith("*", operator.mul), "/": _div, "%": _mod, "++": _concat,
    "==": _eq, "!=": _ne,
    "<": _compare("<", operator.lt), ">": _compare(">", operator.gt),
    "<=": _compare("<=", operator.le), ">=": _compare(">=", operator.ge),
    "&&": _and, "||": _or,
}

# `e op k` for an Int literal k (positive for `%`)
CONST_RIGHT_OPS = {
    "%": _mod_by,
    "<": _compare_to("<", operator.lt), ">": _compare_to(">", operator.gt),
    "<=": _compare_to("<=", operator.le), ">=": _compare_to(">=", operator.ge),
    "==": _compare_to("==", operator.eq), "!=": _compare_to("!=", operator.ne),
}
