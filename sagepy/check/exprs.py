"""Typing expressions (SPEC §3.2, §3.3): literals, names, fields, operators, collections, records, closures,
`try`/`catch`/`fail`. Calls live in `calls.py`, agents and LLM calls in `agentexprs.py`, `match` in
`patterns.py`.

`expr(node, cx, lc, expected)` returns the node's type. `expected` is a hint that flows inward (bidirectional
inference: it types `[]`, `None` and generic calls); the caller compares the result with what it needs.
"""
from __future__ import annotations

from typing import Any

from ..core import types as T
from ..syntax import ast as A
from .body import Body, Locals, Var
from .hints import field_hint
from .typeops import (ANY, MAP_KEYS, NEVER, ORDERABLE, PersistedT, fits, instantiate, is_open, merge, prim_named,
                    resolve, show, unify)

_ARITH = ("+", "-", "*", "/", "%")
_ORDER = ("<", ">", "<=", ">=")


class Expressions:
    """Mixin of the checker."""

    def expr(self, node: Any, cx: Body, lc: Locals, expected: T.Type | None = None) -> T.Type:
        return getattr(self, "e_" + type(node).__name__)(node, cx, lc, expected)

    def mismatch(self, expected: T.Type, actual: T.Type, span: tuple, cx: Body, code: str = "E018",
                 hint: str | None = None) -> None:
        self.error(code, f"type mismatch: expected {show(expected)}, found {show(actual)}", span, cx.file, hint=hint)

    def expect(self, node: Any, expected: T.Type, cx: Body, lc: Locals) -> T.Type:
        """Type `node` with `expected` as hint and report E018 when it does not fit."""
        actual = self.expr(node, cx, lc, expected)
        if not fits(expected, actual):
            self.mismatch(expected, actual, node.span, cx)
        return actual

    # ---------------------------------------------------------------- literals and names
    def e_Literal(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        kind = type(node.value)
        if kind is bool:
            return T.BOOL
        if kind is int:
            return T.INT
        if kind is float:
            return T.FLOAT
        if kind is str:
            return T.STRING
        return T.UNIT if node.value is A.UNIT else ANY

    def e_Template(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        for part in node.parts:
            if not isinstance(part, str):
                self.expr(part, cx, lc)
        return T.STRING

    def e_Name(self, node: A.Name, cx: Body, lc: Locals, expected: Any) -> T.Type:
        var = lc.find(node.name)
        if var is not None:
            node.ref = None
            node.slot = cx.slot_of(var)
            self.check_turbofish_absent(node, f"variable `{node.name}`", cx)
            self.note(cx.file, node.span, node.name, var)
            return var.type
        t = self.name_value(node, cx, lc, expected)
        self.note(cx.file, node.span, node.name, node.ref)
        return t

    def e_VariantPath(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        ref = node.ref = self.path_variant(node.enum_name, node.variant, node.span, cx)
        self.note_variant(node.enum_name, node.variant, node.span, ref, cx, "t")
        if ref is None:
            return ANY
        return self.unit_variant_value(ref, node, cx, expected)

    def e_SelfExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        if cx.agent is None:
            self.error("E026", "`self` outside an agent handler", node.span, cx.file)
            return ANY
        return T.AgentT(cx.agent.name)

    # ---------------------------------------------------------------- fields
    def e_FieldAccess(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        if isinstance(node.obj, A.SelfExpr):
            return self.self_field(node, cx)
        owner = self.expr(node.obj, cx, lc)
        self.note(cx.file, node.span, node.name, ("member", owner), "t")
        return self.field_of(owner, node.name, node.span, cx)

    def self_field(self, node: Any, cx: Body) -> T.Type:
        agent = cx.agent
        if agent is None:
            self.error("E026", "`self` outside an agent handler", node.obj.span, cx.file)
            return ANY
        self.note(cx.file, node.span, node.name, ("self", agent), "t")
        field = agent.fields.get(node.name)
        if field is None:
            self.error("E026", f"agent `{agent.name}` has no field `{node.name}`", node.span, cx.file,
                       hint=field_hint(node.name, agent.fields, f"agent `{agent.name}`"))
            return ANY
        agent.reads.add(node.name)
        return PersistedT(field.type) if field.persistent else field.type

    def field_of(self, t: T.Type, name: str, span: tuple, cx: Body) -> T.Type:
        if is_open(t):
            return ANY
        if isinstance(t, T.RecordT):
            for fname, ftype in t.fields():
                if fname == name:
                    return ftype
            self.error("E027", f"record `{t.name}` has no field `{name}`", span, cx.file,
                       hint=field_hint(name, [f for f, _ in t.fields()], f"record `{t.name}`"))
            return ANY
        if prim_named(t, "Error"):
            if name in ("message", "kind"):
                return T.STRING
            self.error("E027", f"`Error` has no field `{name}` (it has `message` and `kind`)", span, cx.file)
            return ANY
        hint = None
        if isinstance(t, T.AgentT):
            hint = "an agent's fields are read only by its own handlers, as `self.<field>`; await its result " \
                   "or send it a message"
        self.error("E027", f"field access `.{name}` on a value of type {show(t)}, which is not a record", span,
                   cx.file, hint=hint)
        return ANY

    def e_TupleIndex(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        t = self.expr(node.obj, cx, lc)
        if is_open(t):
            return ANY
        if isinstance(t, T.TupleT):
            if node.index < len(t.items):
                return t.items[node.index]
            self.error("E034", f"tuple index .{node.index} out of range for {show(t)}", node.span, cx.file)
            return ANY
        self.error("E049", f"tuple index .{node.index} on a value of type {show(t)}, which is not a tuple",
                   node.span, cx.file)
        return ANY

    # ---------------------------------------------------------------- operators
    def e_Binary(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        op = node.op
        if op in ("&&", "||"):
            self.operand(node.left, T.BOOL, op, cx, lc)
            self.operand(node.right, T.BOOL, op, cx, lc)
            return T.BOOL
        left = self.expr(node.left, cx, lc, expected if op in _ARITH or op == "++" else None)
        right = self.expr(node.right, cx, lc, None if is_open(left) else left)
        if op == "++":
            if not (self.is_a(left, "String") and self.is_a(right, "String")):
                self.bad_operands(node, left, right, cx)
            return T.STRING
        if op in _ARITH:
            if self.same_numeric(left, right, ("Int", "Float")):
                return right if is_open(left) else left
            self.bad_operands(node, left, right, cx)
            return ANY
        if op in _ORDER:
            if not self.same_numeric(left, right, ORDERABLE):
                self.bad_operands(node, left, right, cx)
            return T.BOOL
        if not (fits(left, right) and fits(right, left)):
            self.bad_operands(node, left, right, cx)
        return T.BOOL

    def operand(self, node: Any, want: T.Type, op: str, cx: Body, lc: Locals) -> None:
        t = self.expr(node, cx, lc, want)
        if not fits(want, t):
            self.error("E019", f"operator `{op}` is not defined for {show(t)} (it needs {show(want)})", node.span,
                       cx.file)

    @staticmethod
    def is_a(t: T.Type, name: str) -> bool:
        return is_open(t) or prim_named(t, name)

    @staticmethod
    def same_numeric(left: T.Type, right: T.Type, names: tuple) -> bool:
        if is_open(left):
            return is_open(right) or prim_named(right, *names)
        if is_open(right):
            return prim_named(left, *names)
        return prim_named(left, *names) and prim_named(right, left.name)  # type: ignore[attr-defined]

    def bad_operands(self, node: Any, left: T.Type, right: T.Type, cx: Body) -> None:
        hint = None
        if node.op == "+" and (prim_named(left, "String") or prim_named(right, "String")):
            hint = "concatenate strings with `++`"
        elif node.op in _ARITH and {getattr(left, "name", ""), getattr(right, "name", "")} == {"Int", "Float"}:
            hint = "Int and Float never mix: convert with `int_to_float` or `float_to_int`"
        self.error("E019", f"operator `{node.op}` is not defined for {show(left)} and {show(right)}", node.span,
                   cx.file, hint=hint)

    def e_Unary(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        if node.op == "!":
            self.operand(node.operand, T.BOOL, "!", cx, lc)
            return T.BOOL
        t = self.expr(node.operand, cx, lc, expected)
        if is_open(t):
            return ANY
        if not prim_named(t, "Int", "Float"):
            self.error("E019", f"operator `-` is not defined for {show(t)}", node.span, cx.file)
            return ANY
        return t

    # ---------------------------------------------------------------- errors
    def check_try_allowed(self, word: str, span: tuple, cx: Body) -> None:
        if cx.in_catch:
            return
        if cx.stop:
            self.error("E016", f"`{word}` inside `on stop`/`on resting` (the result is already fixed; use `catch`)",
                       span, cx.file)
        elif not cx.fallible:
            self.error("E014", f"`{word}` outside a fallible context", span, cx.file,
                       hint="use `catch { … }`, or mark the function `fails`")

    def e_TryExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        self.check_try_allowed("try", node.span, cx)
        saved = cx.covered
        cx.covered = True
        try:
            return self.expr(node.expr, cx, lc, expected)
        finally:
            cx.covered = saved

    def e_FailExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        self.check_try_allowed("fail", node.span, cx)
        t = self.expr(node.expr, cx, lc, T.STRING)
        if not (is_open(t) or prim_named(t, "String", "Error")):
            self.mismatch(T.STRING, t, node.expr.span, cx, hint="`fail` takes a String message or an Error")
        return NEVER

    def e_CatchExpr(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        saved = cx.covered
        cx.covered = True
        cx.in_catch += 1
        try:
            left = self.expr(node.expr, cx, lc, expected)
        finally:
            cx.covered = saved
            cx.in_catch -= 1
        inner = lc.child()
        if node.binder:
            var = inner.vars[node.binder] = Var(T.ERROR, cx)
            node.slot = var.slot
            self.note(cx.file, node.span, node.binder, var, node.expr.span[2:], True)
        fallback = self.block_type(node.fallback, cx, inner, expected if is_open(left) else left)
        if not fits(left, fallback):
            self.error("E015", f"`catch` fallback has type {show(fallback)}, but the expression has type "
                       f"{show(left)}", node.fallback.span, cx.file)
            return ANY
        return merge(left, fallback)

    # ---------------------------------------------------------------- collections and records
    def e_ListLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        elem: T.Type | None = expected.elem if isinstance(expected, T.ListT) else None
        found: T.Type | None = None
        for item in node.items:
            t = self.expr(item, cx, lc, found if found is not None and not is_open(found) else elem)
            if found is None:
                found = t
            elif not fits(found, t):
                self.mismatch(found, t, item.span, cx)
            else:
                found = merge(found, t)
        return T.ListT(found if found is not None else (elem if elem is not None else ANY))

    def e_TupleLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        hints = list(expected.items) if isinstance(expected, T.TupleT) and len(expected.items) == len(node.items) \
            else [None] * len(node.items)
        return T.TupleT(self.expr(item, cx, lc, hint) for item, hint in zip(node.items, hints))

    def e_MapLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        key: T.Type | None = expected.key if isinstance(expected, T.MapT) else None
        value: T.Type | None = expected.value if isinstance(expected, T.MapT) else None
        found_k: T.Type | None = None
        found_v: T.Type | None = None
        for k, v in node.entries:
            kt = self.expr(k, cx, lc, found_k or key)
            vt = self.expr(v, cx, lc, found_v or value)
            if not (is_open(kt) or prim_named(kt, *MAP_KEYS)):
                self.error("E018", f"type mismatch: expected a map key type (String, Int or Bool), found {show(kt)}",
                           k.span, cx.file)
            found_k = self.join(found_k, kt, k.span, cx)
            found_v = self.join(found_v, vt, v.span, cx)
        return T.MapT(found_k or key or ANY, found_v or value or ANY)

    def join(self, found: T.Type | None, t: T.Type, span: tuple, cx: Body) -> T.Type:
        """Fold one more element type into the type found so far (E018 when it disagrees)."""
        if found is None:
            return t
        if not fits(found, t):
            self.mismatch(found, t, span, cx)
            return found
        return merge(found, t)

    def e_RecordLit(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        entity = cx.scope.lookup(node.name)
        info = None
        if entity is not None and entity.kind == "record":
            info = entity.info
        elif entity is None and node.name in self.prelude.records:
            info = self.prelude.records[node.name]
        if info is None and entity is not None and entity.kind == "error":
            self.skip_fields(node.fields, cx, lc)
            return ANY
        if info is None:
            what = f"`{node.name}` is a {entity.kind}, not a record" if entity else f"unknown record `{node.name}`"
            self.error("E011", what, node.span, cx.file)
            self.skip_fields(node.fields, cx, lc)
            return ANY
        node.ref = info
        self.note(cx.file, node.span, node.name, info)
        _, holes = instantiate(info.params)
        bindings: dict = {}
        if node.targs:
            if not info.params:
                self.error("E100", f"record `{info.name}` is not generic: remove the type arguments", node.span,
                           cx.file)
            elif len(node.targs) != len(info.params):
                self.error("E046", f"`{info.name}` takes {len(info.params)} type argument(s), {len(node.targs)} "
                           "given", node.span, cx.file)
            else:
                for hole, texpr in zip(holes, node.targs):
                    bindings[hole] = self.resolve_type(texpr, cx.scope, cx.tparams)
        record = T.RecordT(info, holes)
        if expected is not None and not node.targs:
            unify(record, expected, bindings)
        declared = dict(record.fields())
        given: set[str] = set()
        for fname, value, fspan in node.fields:
            self.note(cx.file, fspan, fname, ("member", record))
            if fname not in declared:
                self.error("E027", f"record `{info.name}` has no field `{fname}`", fspan, cx.file,
                           hint=field_hint(fname, declared, f"record `{info.name}`"))
                self.expr(value, cx, lc)
                continue
            if fname in given:
                self.error("E027", f"field `{fname}` given twice", fspan, cx.file)
            given.add(fname)
            ftype = declared[fname]
            actual = self.expr(value, cx, lc, resolve(ftype, bindings))
            unify(ftype, actual, bindings)
            if not fits(resolve(ftype, bindings), actual):
                self.mismatch(resolve(ftype, bindings), actual, value.span, cx)
        missing = [f for f in declared if f not in given]
        if missing:
            self.error("E027", f"missing field(s) {', '.join('`' + m + '`' for m in missing)} in `{info.name}`",
                       node.span, cx.file)
        return resolve(record, bindings)

    def skip_fields(self, fields: list, cx: Body, lc: Locals) -> None:
        for _, value, _ in fields:
            self.expr(value, cx, lc)

    # ---------------------------------------------------------------- closures
    def e_Closure(self, node: Any, cx: Body, lc: Locals, expected: Any) -> T.Type:
        want = expected if isinstance(expected, T.FnT) and len(expected.params) == len(node.params) else None
        ret = want.ret if want is not None and not is_open(want.ret) else None
        body_cx = cx.closure(ret)
        if node is self.update_closure:
            body_cx.update_fn = True
        inner = lc.child()
        params = []
        for i, p in enumerate(node.params):
            if p.type is None:
                self.error("E040", f"closure parameter `{p.name}` needs a type", p.span, cx.file,
                           hint=f"write `{p.name}: <Type>`")
                t = want.params[i] if want is not None else ANY
            else:
                t = self.resolve_type(p.type, cx.scope, cx.tparams)
            if p.name in inner.vars:
                self.error("E012", f"duplicate parameter `{p.name}`", p.span, cx.file)
            if p.name != "_":
                var = inner.vars[p.name] = Var(t, body_cx)
                self.note(cx.file, p.span, p.name, var, "h", True)
            else:
                body_cx.new_slot()   # every parameter has its slot in the frame, in order
            params.append(t)
        if isinstance(node.body, A.Block):
            body_t = self.block_type(node.body, body_cx, inner, ret)
        else:
            body_t = self.expr(node.body, body_cx, inner, ret)
        node.nslots = body_cx.nslots
        node.captures = body_cx.captures
        if ret is not None:
            if not fits(ret, body_t):
                self.mismatch(ret, body_t, node.body.span, cx)
            return T.FnT(params, ret)
        result = body_t
        for t, span in body_cx.returns or ():
            result = self.join(result, t, span, cx)
        return T.FnT(params, result)
