"""Checker intrinsics (SPEC §6): builtins that no single signature describes, typed by rules.

`print`, `print_err` and `str` take any value; `len` a list or map; `sort` a list of Int, Float or String;
`map_set`/`map_delete` rebind a plain variable holding a map (E047 otherwise); the assertions (test files only,
E050) compare two values of one type, check containment, emptiness or length, and `assert_fails` covers the
fallible operations in its argument like a `try` does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import types as T
from ..syntax import ast as A
from . import names
from .body import Body, Locals
from .typeops import ANY, ORDERABLE, fits, is_open, merge, prim_named, show

if TYPE_CHECKING:
    from .context import Checking

_ARITY = {"print": 1, "print_err": 1, "str": 1, "len": 1, "sort": 1, "map_set": 3, "map_delete": 2,
          "assert": 1, "assert_true": 1, "assert_false": 1, "assert_empty": 1, "assert_not_empty": 1,
          "assert_empty_list": 1, "assert_not_empty_list": 1, "assert_fails": 1}


def intrinsic(c: Checking, name: str, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
    names.check_turbofish_absent(c, node.fn, f"`{name}`", cx)
    if name.startswith("assert") and not cx.scope.is_test:
        c.error("E050", f"`{name}` is only allowed in test files (`*_test.sg`)", node.fn.span, cx.file)
    arity = _ARITY.get(name, 2)
    if len(node.args) != arity:
        c.error("E020", f"`{name}` takes {arity} argument(s), {len(node.args)} given", node.span, cx.file)
        c.skip_args(node, cx, lc)
        return T.UNIT if name not in ("str", "len", "sort") else {"str": T.STRING, "len": T.INT}.get(name, ANY)
    args = node.args
    if name in ("print", "print_err"):
        c.expr(args[0], cx, lc)
        return T.UNIT
    if name == "str":
        c.expr(args[0], cx, lc)
        return T.STRING
    if name == "len":
        t = c.expr(args[0], cx, lc)
        if not (is_open(t) or isinstance(t, (T.ListT, T.MapT))):
            hint = "use `str_len` for strings" if prim_named(t, "String") else None
            c.error("E018", f"type mismatch: expected a List or a Map, found {show(t)}", args[0].span, cx.file,
                    hint=hint)
        return T.INT
    if name == "sort":
        t = c.expr(args[0], cx, lc, expected)
        if isinstance(t, T.ListT) and (is_open(t.elem) or prim_named(t.elem, *ORDERABLE)):
            return t
        if not is_open(t):
            c.error("E018", f"type mismatch: expected a List of Int, Float or String, found {show(t)}",
                    args[0].span, cx.file, hint="use `sort_by` with a comparison function")
        return ANY if not isinstance(t, T.ListT) else t
    if name in ("map_set", "map_delete"):
        return map_update(c, name, node, cx, lc)
    return assertion(c, name, node, cx, lc)


def map_update(c: Checking, name: str, node: Any, cx: Body, lc: Locals) -> T.Type:
    target = node.args[0]
    var = lc.find(target.name) if isinstance(target, A.Name) else None
    if var is None:
        c.error("E047", f"the first argument of `{name}` must be a variable holding a map", target.span,
                cx.file)
        c.skip_args(node, cx, lc)
        return T.UNIT
    if var.owner is not cx:
        c.error("E047", f"a closure cannot update captured variable `{target.name}`", target.span, cx.file)
    target.slot = var.slot
    c.note(cx.file, target.span, target.name, var)
    m = var.type
    if not (is_open(m) or isinstance(m, T.MapT)):
        c.error("E018", f"type mismatch: expected a Map, found {show(m)}", target.span, cx.file)
        c.skip_args(node, cx, lc)
        return T.UNIT
    key_t = m.key if isinstance(m, T.MapT) else ANY
    value_t = m.value if isinstance(m, T.MapT) else ANY
    key = c.expect(node.args[1], key_t, cx, lc)
    if name == "map_set":
        value = c.expect(node.args[2], value_t, cx, lc)
        if fits(key_t, key) and fits(value_t, value):
            var.type = merge(m, T.MapT(key, value))
    return T.UNIT


def assertion(c: Checking, name: str, node: Any, cx: Body, lc: Locals) -> T.Type:
    args = node.args
    if name == "assert_fails":
        saved = cx.covered
        cx.covered = True
        try:
            c.expr(args[0], cx, lc)
        finally:
            cx.covered = saved
        return T.UNIT
    if name in ("assert", "assert_true", "assert_false"):
        c.expect(args[0], T.BOOL, cx, lc)
        return T.UNIT
    first = c.expr(args[0], cx, lc)
    if name in ("assert_empty", "assert_not_empty"):
        if not (is_open(first) or prim_named(first, "String") or isinstance(first, (T.ListT, T.MapT))):
            c.error("E018", f"type mismatch: expected a String, List or Map, found {show(first)}", args[0].span,
                    cx.file)
        return T.UNIT
    if name in ("assert_empty_list", "assert_not_empty_list"):
        if not (is_open(first) or isinstance(first, T.ListT)):
            c.mismatch(T.ListT(ANY), first, args[0].span, cx)
        return T.UNIT
    if name == "assert_len":
        if not (is_open(first) or prim_named(first, "String") or isinstance(first, (T.ListT, T.MapT))):
            c.error("E018", f"type mismatch: expected a List, found {show(first)}", args[0].span, cx.file)
        c.expect(args[1], T.INT, cx, lc)
        return T.UNIT
    if name in ("assert_starts_with", "assert_ends_with"):
        if not (is_open(first) or prim_named(first, "String")):
            c.mismatch(T.STRING, first, args[0].span, cx)
        c.expect(args[1], T.STRING, cx, lc)
        return T.UNIT
    if name in ("assert_contains", "assert_not_contains"):
        if isinstance(first, T.ListT):
            c.expect(args[1], first.elem, cx, lc)
        elif is_open(first) or prim_named(first, "String"):
            c.expect(args[1], T.STRING if not is_open(first) else ANY, cx, lc)
        else:
            c.error("E018", f"type mismatch: expected a String or a List, found {show(first)}", args[0].span,
                    cx.file)
            c.expr(args[1], cx, lc)
        return T.UNIT
    second = c.expect(args[1], first, cx, lc)
    if name in ("assert_gt", "assert_lt", "assert_gte", "assert_lte"):
        t = second if is_open(first) else first
        if not (is_open(t) or prim_named(t, *ORDERABLE)):
            c.error("E019", f"`{name}` needs Int, Float or String values, found {show(t)}", node.span, cx.file)
    return T.UNIT
