"""Updates in place of a list or map that nobody else can see (SPEC §6.4, §6.5: lists and maps are values).

`xs = push(xs, e)`, `xs = concat(xs, ys)`, `map_set(m, k, v)` and `map_delete(m, k)` each give the variable
a new value; copying the old one every time makes a loop of n of them O(n²). When the variable holds the only
reference to its list or map, no other variable, closure, record, list, message, mock or store can observe the
old value, so changing it in place is the same as copying it, in O(1). CPython's reference count tells that
exactly: the variable's slot is emptied, and if the local that holds the value is then its only owner, it is
the sole one; anything else that holds it (the `for` loop iterating it included) keeps the copy.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

from ...check.names import BUILTIN
from ...syntax import ast as A
from ...core.values import UNIT
from .frames import Code

_references: Callable[[Any], int] = sys.getrefcount


def _sole_count() -> int:
    """The count `_references` gives for a value held by one local variable of its caller only."""
    value: list = []
    return _references(value)


SOLE = _sole_count()

# builtins of the form `x = f(x, e)` that can append to x instead of copying it
_GROWING = ("push", "concat")


def growing_call(node: Any) -> tuple[str, Any] | None:
    """(builtin, its second argument) when the assignment `node` is `x = push(x, e)` or `x = concat(x, e)` of
    a local variable x, else None."""
    call = node.value
    if type(call) is not A.Call or call.ref is not BUILTIN or type(call.fn) is not A.Name:
        return None
    if call.fn.name not in _GROWING or len(call.args) != 2:
        return None
    first = call.args[0]
    if type(first) is not A.Name or first.ref is not None or first.slot != node.slot:
        return None
    return call.fn.name, call.args[1]


def grow(slot: int, name: str, operand: Code) -> Code:
    """`x = push(x, e)` / `x = concat(x, e)`: x is read first, as the builtin call would. One local holds the
    list while its count is taken: a second one would make every list look shared."""
    if name == "push":
        def push(frame: list) -> None:
            items = frame[slot]
            item = operand(frame)
            frame[slot] = None
            try:
                if type(items) is list and _references(items) <= SOLE:
                    items.append(item)
                else:
                    items = [*items, item]
            finally:
                frame[slot] = items
        return push

    def concat(frame: list) -> None:
        items = frame[slot]
        tail = operand(frame)
        frame[slot] = None
        try:
            if type(items) is list and _references(items) <= SOLE:
                items.extend(tail)
            else:
                items = items + tail
        finally:
            frame[slot] = items
    return concat


def map_set(slot: int, key: Code, value: Code) -> Code:
    def run(frame: list) -> Any:
        entries = frame[slot]
        k = key(frame)
        v = value(frame)
        frame[slot] = None
        try:
            if _references(entries) > SOLE:
                entries = dict(entries)
            entries[k] = v
        finally:
            frame[slot] = entries
        return UNIT
    return run


def map_delete(slot: int, key: Code) -> Code:
    def run(frame: list) -> Any:
        entries = frame[slot]
        k = key(frame)
        if k in entries:
            frame[slot] = None
            try:
                if _references(entries) > SOLE:
                    entries = dict(entries)
                del entries[k]
            finally:
                frame[slot] = entries
        return UNIT
    return run
