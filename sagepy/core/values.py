"""Runtime representation of Sage values.

Sage values map onto Python objects so that the interpreter and the builtins stay fast:

    Int -> int          Float -> float        Bool -> bool        String -> str
    Unit -> UNIT        List -> list          tuple -> tuple      Map -> dict (insertion order)
    record -> Record    enum variant (Option and Result included) -> Variant
    Error -> ErrorValue function / closure -> Function   agent handle -> any object with `display_name`

Lists and dicts are never mutated after they are built (values are immutable from the program's point of
view), so they can be shared freely; `map_set` rebinds the variable to a fresh dict.
Because `bool` is a subclass of `int` in Python, code that inspects values must test `bool` first.
"""
from __future__ import annotations

import functools
from typing import Any, Callable


class UnitType:
    __slots__ = ()

    def __repr__(self) -> str:
        return "()"

    def __reduce__(self):
        return (_unit, ())


def _unit() -> "UnitType":
    return UNIT


UNIT = UnitType.__new__(UnitType)


class Variant:
    """An enum value. `payload` is `NO_PAYLOAD` (Python None) for unit variants."""

    __slots__ = ("enum", "name", "payload")

    def __init__(self, enum: str, name: str, payload: Any = None) -> None:
        self.enum = enum
        self.name = name
        self.payload = payload

    @property
    def has_payload(self) -> bool:
        return self.payload is not None

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Variant):
            return NotImplemented
        return self.name == other.name and self.enum == other.enum and values_equal(self.payload, other.payload)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((self.enum, self.name))

    def __repr__(self) -> str:
        return display(self)


# Sage values are never Python `None`, so `None` marks a variant without payload.
NO_PAYLOAD = None


def unit_variant(enum: str, name: str) -> Variant:
    return Variant(enum, name, NO_PAYLOAD)


NONE = unit_variant("Option", "None")


def some(value: Any) -> Variant:
    return Variant("Option", "Some", value)


def ok(value: Any) -> Variant:
    return Variant("Result", "Ok", value)


def err(value: Any) -> Variant:
    return Variant("Result", "Err", value)


def option(value: Any) -> Variant:
    """Python `None` -> Sage `None`, anything else -> `Some(value)`."""
    return NONE if value is None else Variant("Option", "Some", value)


class Record:
    __slots__ = ("name", "fields")

    def __init__(self, name: str, fields: dict) -> None:
        self.name = name
        self.fields = fields

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Record):
            return NotImplemented
        return self.name == other.name and values_equal(self.fields, other.fields)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return display(self)


ERROR_PREFIX = {
    "Llm": "LLM error: ",
    "Agent": "Agent error: ",
    "Runtime": "Runtime error: ",
    "Tool": "Tool error: ",
    "Mcp": "",
    "User": "",
    "Protocol": "Protocol error: ",
    "Timeout": "Timeout: ",
}


class ErrorValue:
    """A Sage `Error`: kind, message, optional runtime code and the place where it was raised.

    `display` overrides the kind prefix where SPEC gives a different display (MCP sub-kinds).
    """

    __slots__ = ("kind", "message", "code", "span", "agent", "display_text", "by_shutdown")

    def __init__(self, kind: str, message: str, code: str | None = None, span: Any = None,
                 display_text: str | None = None) -> None:
        self.kind = kind
        self.message = message
        self.code = code
        self.span = span
        self.agent = None
        self.display_text = display_text
        self.by_shutdown = False   # an E204 caused by program or test shutdown: ends its agent quietly (§4.6)

    def display(self) -> str:
        if self.display_text is not None:
            return self.display_text
        return ERROR_PREFIX.get(self.kind, "") + self.message

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ErrorValue):
            return NotImplemented
        return self.kind == other.kind and self.message == other.message

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((self.kind, self.message))

    def __repr__(self) -> str:
        return f"ErrorValue({self.kind!r}, {self.message!r})"


class Function(functools.partial):
    """A callable Sage value: a named function, a builtin or a closure (name None).

    Calling it runs the Sage code: `f(*args)`. Builtins receive these and call them directly; being a
    `functools.partial`, a call reaches `fn` without a Python-level `__call__` in between (closures passed to
    `map`, `filter` or `reduce` are called once per element). Functions compare by identity.
    """

    __slots__ = ("name",)

    def __new__(cls, name: str | None, fn: Callable[..., Any]) -> "Function":
        self = super().__new__(cls, fn)
        self.name = name
        return self

    def __repr__(self) -> str:
        return display(self)


def values_equal(a: Any, b: Any) -> bool:
    """Structural equality with Sage's rules (Python's == already agrees for the typed cases, except NaN
    inside containers, where Python's identity shortcut would call NaN equal to itself)."""
    if a is b:
        return not (isinstance(a, float) and a != a)
    ta = type(a)
    if ta is list or ta is tuple:
        if type(b) is not ta or len(a) != len(b):
            return False
        return all(values_equal(x, y) for x, y in zip(a, b))
    if ta is dict:
        if type(b) is not dict or len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not values_equal(v, b[k]):
                return False
        return True
    return a == b


# ---------------------------------------------------------------- display

def _float_display(f: float) -> str:
    if f != f:
        return "NaN"
    if f == float("inf"):
        return "inf"
    if f == float("-inf"):
        return "-inf"
    return repr(f)


_QUOTE_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote_string(s: str) -> str:
    out = ['"']
    for ch in s:
        esc = _QUOTE_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u{%x}" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def display(v: Any) -> str:
    """Display form (§4.1): strings bare at top level, quoted inside composites."""
    if type(v) is str:
        return v
    return _display_inner(v)


def quoted_display(v: Any) -> str:
    """Display with top-level strings quoted too (assertion failures)."""
    return _display_inner(v)


def _display_inner(v: Any) -> str:
    t = type(v)
    if t is str:
        return quote_string(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return _float_display(v)
    if t is list:
        return "[" + ", ".join(_display_inner(x) for x in v) + "]"
    if t is tuple:
        return "(" + ", ".join(_display_inner(x) for x in v) + ")"
    if t is dict:
        return "{" + ", ".join(f"{_display_inner(k)}: {_display_inner(x)}" for k, x in v.items()) + "}"
    if t is Variant:
        if v.payload is None:
            return v.name
        return f"{v.name}({_display_inner(v.payload)})"
    if t is Record:
        if not v.fields:
            return f"{v.name} {{}}"
        inner = ", ".join(f"{k}: {_display_inner(x)}" for k, x in v.fields.items())
        return f"{v.name} {{ {inner} }}"
    if v is UNIT:
        return "()"
    if t is ErrorValue:
        return v.display()
    if t is Function:
        return "<closure>" if v.name is None else f"<fn {v.name}>"
    name = getattr(v, "display_name", None)
    if name is not None:
        return f"<agent {name}>"
    return repr(v)
