"""Conversion builtins (SPEC §6.1): display, `len`, number/bool/string conversions and the `parse_*` family.

The parsers accept exactly the forms SPEC lists, so Python-only spellings that `int()`/`float()` would take
(`1_000`, `0x10`, `.5`, non-ASCII digits, `infinity`) are rejected; error messages quote the argument as
given, before trimming.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from ..core.values import display, err, ok
from ..core.types import INT_MAX, INT_MIN
from .strings import WHITESPACE

_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|inf|nan)", re.IGNORECASE)
# Longest digit run that can still fit 64 bits (after leading zeros are dropped); longer ones are out of
# range without converting, which also keeps clear of Python's limit on int() of very long strings.
_MAX_INT_DIGITS = 19


def str_(v: Any) -> str:
    return display(v)


def len_(v: Any) -> int:
    return len(v)


def int_to_str(n: int) -> str:
    return str(n)


def float_to_str(x: float) -> str:
    return display(x)


def bool_to_str(b: bool) -> str:
    return "true" if b else "false"


def int_to_float(n: int) -> float:
    return float(n)


def float_to_int(x: float) -> int:
    if x != x:
        return 0
    if x >= 9.223372036854775807e18:
        return INT_MAX
    if x <= -9.223372036854775808e18:
        return INT_MIN
    return int(x)


def parse_int(s: str) -> Any:
    text = s.strip(WHITESPACE)
    if not _INT_RE.fullmatch(text):
        return err(f"invalid integer: '{s}'")
    if len(text.lstrip("+-").lstrip("0")) > _MAX_INT_DIGITS:
        return err(f"integer out of range: '{s}'")
    n = int(text)
    if not INT_MIN <= n <= INT_MAX:
        return err(f"integer out of range: '{s}'")
    return ok(n)


def parse_float(s: str) -> Any:
    text = s.strip(WHITESPACE)
    if not _FLOAT_RE.fullmatch(text):
        return err(f"invalid float: '{s}'")
    return ok(float(text))


def parse_bool(s: str) -> Any:
    text = s.strip(WHITESPACE).lower()
    if text in ("true", "1"):
        return ok(True)
    if text in ("false", "0"):
        return ok(False)
    return err(f"invalid boolean: '{s}'")


BUILTINS: dict[str, Callable[..., Any]] = {
    "str": str_,
    "len": len_,
    "int_to_str": int_to_str,
    "float_to_str": float_to_str,
    "bool_to_str": bool_to_str,
    "int_to_float": int_to_float,
    "float_to_int": float_to_int,
    "parse_int": parse_int,
    "parse_float": parse_float,
    "parse_bool": parse_bool,
}
