"""AST equality with positions ignored: the formatter's safety net (SPEC §19.1)."""
from __future__ import annotations

from ..syntax import ast as A


def _is_span(value: object) -> bool:
    return (type(value) is tuple and len(value) == 4
            and all(type(x) is int for x in value))


def shape(node: object) -> object:
    """A comparable value of an AST: each node's class, parser-set fields and doc comment, without spans
    (spans also sit inside the tuples some nodes hold, such as a record literal's fields)."""
    kind = type(node)
    if isinstance(node, A.Node):
        fields = tuple(shape(getattr(node, f, None)) for f in node._fields)
        return (kind.__name__, fields, getattr(node, "doc", None))
    if kind in (list, tuple):
        return tuple(shape(x) for x in node if not _is_span(x))
    if kind is float:
        return ("float", repr(node))
    return node


def same_ast(a: list, b: list) -> bool:
    return shape(a) == shape(b)
