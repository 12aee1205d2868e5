"""AST equality with positions ignored: the formatter's safety net (SPEC §19.1).

Two trees are the same when their nodes have the same classes, parser-set fields, doc comments and agents'
attributes; spans are
ignored, also inside the tuples some nodes hold (a record literal's fields are `(name, expr, span)`). The walk
is iterative (programs nest 1,000 levels deep) and stops at the first difference.
"""
from __future__ import annotations

from ..syntax import ast as A

_SEQUENCES = (list, tuple)


def _is_span(value: object) -> bool:
    return type(value) is tuple and len(value) == 4 and all(type(x) is int for x in value)


def _same_leaf(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return repr(a) == repr(b)   # -0.0 is not 0.0; a literal's value is never NaN
    return a == b


def same_ast(a: object, b: object) -> bool:
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        kind = type(x)
        if kind is not type(y):
            return False
        if isinstance(x, A.Node):
            for field in x._fields:
                pending.append((getattr(x, field, None), getattr(y, field, None)))
            if kind is A.AgentDecl:
                pending.append((x.attrs or [], y.attrs or []))
            if getattr(x, "doc", None) != getattr(y, "doc", None):
                return False
        elif kind in _SEQUENCES:
            xs = [v for v in x if not _is_span(v)] if kind is tuple else x
            ys = [v for v in y if not _is_span(v)] if kind is tuple else y
            if len(xs) != len(ys):
                return False
            pending.extend(zip(xs, ys))
        elif not _same_leaf(x, y):
            return False
    return True
