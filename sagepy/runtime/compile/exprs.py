"""Expressions: literals, names, fields, operators, `try`/`fail`/`catch`, collections, records, closures,
`match` and `retry`. Calls are in `calls.py`; agents, messages and LLM calls in `messaging.py`.

What a name denotes was decided by the checker (`Name.ref`, `VariantPath.ref`, `RecordLit.ref`): None means a
local variable, an `Entity` a module item, `BUILTIN` a prelude builtin or constant, a `VariantRef` a variant.
"""
from __future__ import annotations

from typing import Any

from ...check.names import BUILTIN, VariantRef
from ...syntax import ast as A
from ...core.types import INT_MIN
from ..agents import CALL_DEPTH_LIMIT
from ...core.errors import SageRaise, raise_at
from ..operators import BINARY, CONST_RIGHT_OPS, SLOT_CONST_OPS, type_error
from ..patterns import compile_pattern
from ...core.values import UNIT, ErrorValue, Function, Record, Variant, display
from .frames import BREAK, CONTINUE, Code, ControlFlow, Return, raiser, return_raiser


class Expressions:
    """Mixin of the compiler."""

    def expr(self, node: Any) -> Code:
        return getattr(self, "e_" + type(node).__name__)(node)

    def e_Literal(self, node: Any) -> Code:
        value = UNIT if node.value is A.UNIT else node.value   # the AST's marker for `()`, the runtime's value
        return lambda frame: value

    def e_Template(self, node: Any) -> Code:
        parts = [p if isinstance(p, str) else self.expr(p) for p in node.parts]
        if len(parts) == 2 and isinstance(parts[0], str) and not isinstance(parts[1], str):
            prefix, code = parts

            def two(frame: list) -> str:
                v = code(frame)
                return prefix + (v if type(v) is str else display(v))
            return two
        compiled = [(p if isinstance(p, str) else None, None if isinstance(p, str) else p) for p in parts]

        def run(frame: list) -> str:
            out = []
            for text, code in compiled:
                if code is None:
                    out.append(text)
                else:
                    v = code(frame)
                    out.append(v if type(v) is str else display(v))
            return "".join(out)
        return run

    def e_SelfExpr(self, node: Any) -> Code:
        return lambda frame: frame[0]

    # ---------------------------------------------------------------- names
    def e_Name(self, node: A.Name) -> Code:
        ref = node.ref
        if ref is None:
            slot = node.slot
            return lambda frame: frame[slot]
        if ref is BUILTIN:
            value = self.builtin_value(node.name)
            return lambda frame: value
        if type(ref) is VariantRef:
            return self.unit_variant(ref)
        item = self.runtime_item(ref)
        if ref.kind == "fn":
            return lambda frame: item.value
        return lambda frame: item[2]()   # a constant: [value, evaluated, evaluate]

    def e_VariantPath(self, node: Any) -> Code:
        return self.unit_variant(node.ref)

    @staticmethod
    def unit_variant(ref: VariantRef) -> Code:
        v = Variant(ref.enum, ref.name)
        return lambda frame: v

    # ---------------------------------------------------------------- fields
    def e_FieldAccess(self, node: Any) -> Code:
        name = node.name
        if isinstance(node.obj, A.SelfExpr):
            if name in self.agent.field_names:
                return lambda frame: frame[0].fields[name]

            def persistent(frame: list) -> Any:
                raise SageRaise(ErrorValue("Runtime", f"persistent field `{name}` is read with `.get()`"))
            return persistent
        obj = self.expr(node.obj)
        file, span = self.file, node.span

        def field(frame: list) -> Any:
            v = obj(frame)
            t = type(v)
            if t is Record:
                try:
                    return v.fields[name]
                except KeyError:
                    pass
            elif t is ErrorValue:
                if name == "message":
                    return v.message
                if name == "kind":
                    return v.kind
            raise raise_at("Runtime", f"{display(v)} has no field `{name}`", None, file, span)
        return field

    def e_TupleIndex(self, node: Any) -> Code:
        obj = self.expr(node.obj)
        index = node.index
        file, span = self.file, node.span

        def get(frame: list) -> Any:
            v = obj(frame)
            if type(v) is tuple and index < len(v):
                return v[index]
            raise raise_at("Runtime", f"no element .{index} in {display(v)}", None, file, span)
        return get

    # ---------------------------------------------------------------- operators
    def e_Binary(self, node: Any) -> Code:
        op, left, right = node.op, node.left, node.right
        if type(right) is A.Literal and type(right.value) is int:
            # `n - 1`, `i < 10`, `x % 2`: an Int literal on the right, the most common shape in loops and
            # recursion, is not read through a closure call; nor is a local variable on the left
            const = right.value
            if op in SLOT_CONST_OPS and type(left) is A.Name and left.ref is None:
                return SLOT_CONST_OPS[op](left.slot, const, self.file, node.span)
            if op in CONST_RIGHT_OPS and (op != "%" or const > 0):
                return CONST_RIGHT_OPS[op](self.expr(left), const, self.file, node.span)
        return BINARY[op](self.expr(left), self.expr(right), self.file, node.span)

    def e_Unary(self, node: Any) -> Code:
        operand = self.expr(node.operand)
        file, span = self.file, node.span
        if node.op == "!":
            def not_(frame: list) -> bool:
                v = operand(frame)
                if v is True:
                    return False
                if v is False:
                    return True
                raise type_error("!", v, None, file, span)
            return not_

        def neg(frame: list) -> Any:
            v = operand(frame)
            t = type(v)
            if t is int:
                if v == INT_MIN:
                    raise raise_at("Runtime", "integer overflow", "E200", file, span)
                return -v
            if t is float:
                return -v
            raise type_error("-", v, None, file, span)
        return neg

    # ---------------------------------------------------------------- errors
    def e_TryExpr(self, node: Any) -> Code:
        return self.expr(node.expr)

    def e_FailExpr(self, node: Any) -> Code:
        value = self.expr(node.expr)
        file, span = self.file, node.span

        def fail(frame: list) -> Any:
            v = value(frame)
            if type(v) is ErrorValue:
                raise SageRaise(v)
            err = ErrorValue("User", v if type(v) is str else display(v))
            err.span = (file, span)
            err.agent = getattr(frame[0], "display_name", None)
            raise SageRaise(err)
        return fail

    def e_CatchExpr(self, node: Any) -> Code:
        body = self.expr(node.expr)
        slot = node.slot if node.binder else None
        fallback = self.block_value(node.fallback)

        def catch(frame: list) -> Any:
            try:
                return body(frame)
            except SageRaise as exc:
                if slot is not None:
                    frame[slot] = exc.error
                return fallback(frame)
            except RecursionError:
                if slot is not None:
                    frame[slot] = ErrorValue("Runtime", "call depth exceeded", "E205")
                return fallback(frame)
            except MemoryError:
                if slot is not None:
                    frame[slot] = ErrorValue("Runtime", "out of memory")
                return fallback(frame)
        return catch

    # ---------------------------------------------------------------- collections and records
    def e_ListLit(self, node: Any) -> Code:
        items = [self.expr(i) for i in node.items]
        return lambda frame: [i(frame) for i in items]

    def e_TupleLit(self, node: Any) -> Code:
        items = [self.expr(i) for i in node.items]
        return lambda frame: tuple(i(frame) for i in items)

    def e_MapLit(self, node: Any) -> Code:
        entries = [(self.expr(k), self.expr(v)) for k, v in node.entries]

        def build(frame: list) -> dict:
            out = {}
            for k, v in entries:
                key = k(frame)
                out[key] = v(frame)
            return out
        return build

    def e_RecordLit(self, node: Any) -> Code:
        info = node.ref
        order = {name: i for i, (name, _) in enumerate(info.fields)}
        # fields are evaluated in source order and stored in declaration order
        given = [(fname, self.expr(value)) for fname, value, _ in node.fields]
        declared = sorted((n for n, _ in given), key=order.__getitem__)
        rname = info.name

        def build(frame: list) -> Record:
            values = {n: code(frame) for n, code in given}
            return Record(rname, {n: values[n] for n in declared})
        return build

    def e_Closure(self, node: Any) -> Code:
        self.closure_depth += 1
        if isinstance(node.body, A.Block):
            body_code = self.block_value(node.body)
        else:
            body_code = self.expr(node.body)
        self.closure_depth -= 1
        nparams = len(node.params)
        captures = node.captures
        pad = [None] * (node.nslots - 1 - nparams)
        file, span = self.file, node.span

        def make(frame: list) -> Function:
            captured = [(inner, frame[outer]) for outer, inner in captures]
            ctx = frame[0]

            def run(*args: Any) -> Any:
                if len(args) != nparams:
                    raise raise_at("Runtime", f"closure takes {nparams} argument(s), {len(args)} given",
                                   "E020", file, span)
                inner_frame = [ctx, *args]
                inner_frame += pad
                if captured:
                    for slot, value in captured:
                        inner_frame[slot] = value
                ctx.depth += 1
                try:
                    if ctx.depth > CALL_DEPTH_LIMIT:
                        raise raise_at("Runtime", "call depth exceeded", "E205", file, span)
                    return body_code(inner_frame)
                except ControlFlow as cf:
                    sig = cf.signal
                    if isinstance(sig, Return):
                        return sig.value
                    raise
                finally:
                    ctx.depth -= 1
            return Function(None, run)
        return make

    # ---------------------------------------------------------------- match and retry
    def e_MatchExpr(self, node: Any) -> Code:
        return self.match(node)

    def match(self, node: Any) -> Code:
        scrutinee = self.expr(node.scrutinee)
        arms = []
        for arm in node.arms:
            test = compile_pattern(arm.pattern)
            body = arm.body
            if isinstance(body, A.Block):
                code = self.block_value(body)
            elif isinstance(body, A.ArmBreak):
                code = raiser(BREAK)
            elif isinstance(body, A.ArmContinue):
                code = raiser(CONTINUE)
            elif isinstance(body, A.ArmReturn):
                value = self.expr(body.value) if body.value is not None else (lambda f: UNIT)
                code = return_raiser(value)
            else:
                code = self.expr(body)
            arms.append((test, code))
        file, span = self.file, node.span

        def run(frame: list) -> Any:
            v = scrutinee(frame)
            for test, code in arms:
                if test(v, frame):
                    return code(frame)
            raise raise_at("Runtime", f"no match arm for {display(v)}", "E212", file, span)
        return run

    def e_RetryExpr(self, node: Any) -> Code:
        count = self.expr(node.count)
        delay = self.expr(node.delay) if node.delay is not None else (lambda f: 0)
        body = self.block_value(node.body)
        file, span = self.file, node.span
        kind_set = set(node.kinds) if node.kinds else None

        def run(frame: list) -> Any:
            n = count(frame)
            if n < 1:
                raise raise_at("Runtime", "invalid argument: retry: attempts must be at least 1", "E206", file, span)
            wait_ms = delay(frame)
            ctx = frame[0]
            attempt = 0
            while True:
                attempt += 1
                try:
                    return body(frame)
                except SageRaise as exc:
                    if kind_set is not None and exc.error.kind not in kind_set:
                        raise
                    if attempt >= n:
                        raise
                if wait_ms > 0:
                    ctx.sleep(wait_ms / 1000)
                else:
                    ctx.check()
        return run
