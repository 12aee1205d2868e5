"""Blocks and statements: `let`, assignment, `if`, loops, `return`, `span`, `checkpoint()`."""
from __future__ import annotations

import time
from typing import Any, Callable

from ...syntax import ast as A
from ...core.errors import raise_at
from ..operators import BOOLEAN_OPS, COMPARISONS, type_error
from ...core.values import UNIT, display
from .frames import BREAK, CONTINUE, Code, ControlFlow, Return, discard, sequence
from .inplace import grow, growing_call


class Statements:
    """Mixin of the compiler."""

    def block_stmts(self, block: Any) -> Code:
        """A block run as statements: returns a signal (None, BREAK, CONTINUE, Return)."""
        stmts = [self.stmt(s) for s in block.stmts]
        if block.value is not None:
            stmts.append(discard(self.expr(block.value)))
        return sequence(stmts)

    def function_body(self, block: Any) -> Code:
        """A function body. It returns a signal from its statements (a `Return`), or else the raw value of its
        tail: the trailing expression, a final match statement, or a final `return e;` (the common case,
        which so needs no `Return` object)."""
        stmts_ast = list(block.stmts)
        value_ast = block.value
        if value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.MatchStmt):
            value_ast = stmts_ast.pop().match
        elif value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.ReturnStmt) \
                and stmts_ast[-1].value is not None:
            value_ast = stmts_ast.pop().value
        stmts = [self.stmt(s) for s in stmts_ast]
        if value_ast is None:
            return sequence(stmts)
        tail = self.expr(value_ast)
        if not stmts:
            return tail
        if len(stmts) == 1:
            first = stmts[0]

            def one_then_tail(frame: list) -> Any:
                sig = first(frame)
                if sig is not None:
                    return sig
                return tail(frame)
            return one_then_tail

        def then_tail(frame: list) -> Any:
            for st in stmts:
                sig = st(frame)
                if sig is not None:
                    return sig
            return tail(frame)
        return then_tail

    def block_value(self, block: Any) -> Code:
        """A block used for its value (catch fallbacks, closures, arms)."""
        stmts_ast = list(block.stmts)
        value_ast = block.value
        if value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.MatchStmt):
            value_ast = stmts_ast.pop().match
        stmts = [self.stmt(s) for s in stmts_ast]
        value = self.expr(value_ast) if value_ast is not None else (lambda f: UNIT)
        if not stmts:
            return value

        def run(frame: list) -> Any:
            for s in stmts:
                sig = s(frame)
                if sig is not None:
                    raise ControlFlow(sig)
            return value(frame)
        return run

    def stmt(self, node: Any) -> Code:
        return getattr(self, "s_" + type(node).__name__)(node)

    def s_ExprStmt(self, node: Any) -> Code:
        return discard(self.expr(node.expr))

    def s_MatchStmt(self, node: Any) -> Code:
        return discard(self.match(node.match))

    def s_LetStmt(self, node: Any) -> Code:
        value = self.expr(node.value)
        assign = self.bind_target(node.target)

        def run(frame: list) -> None:
            assign(frame, value(frame))
        return run

    def bind_target(self, target: Any) -> Callable[[list, Any], None]:
        if isinstance(target, A.TargetName):
            if target.name == "_":
                return lambda frame, v: None
            slot = target.slot

            def set_slot(frame: list, v: Any) -> None:
                frame[slot] = v
            return set_slot
        parts = [self.bind_target(t) for t in target.items]
        n = len(parts)
        file, span = self.file, target.span

        def unpack(frame: list, v: Any) -> None:
            if type(v) is not tuple or len(v) != n:
                raise raise_at("Runtime", f"cannot destructure {display(v)} into {n} elements", None, file, span)
            for p, x in zip(parts, v):
                p(frame, x)
        return unpack

    def s_AssignStmt(self, node: Any) -> Code:
        slot = node.slot
        growing = growing_call(node)
        if growing is not None:
            return grow(slot, growing[0], self.expr(growing[1]))
        value = self.expr(node.value)

        def run(frame: list) -> None:
            frame[slot] = value(frame)
        return run

    def s_IfStmt(self, node: Any) -> Code:
        then = self.block_stmts(node.then)
        test = node.cond
        if node.orelse is None and is_slot_comparison(test):
            return self.if_slot_compare(test, then)
        cond = self.condition(node.cond)
        if node.orelse is None:
            def run_if(frame: list) -> Any:
                if cond(frame):
                    return then(frame)
                return None
            return run_if
        if isinstance(node.orelse, A.IfStmt):
            other = self.s_IfStmt(node.orelse)
        else:
            other = self.block_stmts(node.orelse)

        def run_if_else(frame: list) -> Any:
            if cond(frame):
                return then(frame)
            return other(frame)
        return run_if_else

    def if_slot_compare(self, test: Any, then: Code) -> Code:
        """`if n < 2 { … }` without `else`: the guard of most recursive functions, its comparison done in
        place rather than through a condition closure."""
        slot, const, compare = test.left.slot, test.right.value, COMPARISONS[test.op]
        op, file, span = test.op, self.file, test.span

        def run_if(frame: list) -> Any:
            a = frame[slot]
            if type(a) is not int:
                raise type_error(op, a, const, file, span)
            if compare(a, const):
                return then(frame)
            return None
        return run_if

    def condition(self, node: Any) -> Callable[[list], bool]:
        code = self.expr(node)
        if (isinstance(node, A.Binary) and node.op in BOOLEAN_OPS) or (isinstance(node, A.Unary) and node.op == "!"):
            return code   # these always produce a Bool or raise
        file, span = self.file, node.span

        def cond(frame: list) -> bool:
            v = code(frame)
            if v is True:
                return True
            if v is False:
                return False
            raise raise_at("Runtime", f"condition is not a Bool: {display(v)}", None, file, span)
        return cond

    def s_WhileStmt(self, node: Any) -> Code:
        cond = self.condition(node.cond)
        body = self.block_stmts(node.body)

        def run(frame: list) -> Any:
            ctx = frame[0]
            while cond(frame):
                if ctx.cancelled:
                    ctx.check()
                try:
                    sig = body(frame)
                except ControlFlow as cf:
                    sig = cf.signal
                if sig is not None:
                    if sig is BREAK:
                        break
                    if sig is CONTINUE:
                        continue
                    return sig
            return None
        return run

    def s_LoopStmt(self, node: Any) -> Code:
        body = self.block_stmts(node.body)

        def run(frame: list) -> Any:
            ctx = frame[0]
            while True:
                if ctx.cancelled:
                    ctx.check()
                try:
                    sig = body(frame)
                except ControlFlow as cf:
                    sig = cf.signal
                if sig is not None:
                    if sig is BREAK:
                        return None
                    if sig is CONTINUE:
                        continue
                    return sig
        return run

    def s_ForStmt(self, node: Any) -> Code:
        iterable = self.expr(node.iter)
        assign = self.bind_target(node.target)
        body = self.block_stmts(node.body)
        file, span = self.file, node.iter.span

        def run(frame: list) -> Any:
            ctx = frame[0]
            seq = iterable(frame)
            t = type(seq)
            if t is dict:
                seq = list(seq.items())
            elif t is not list:
                raise raise_at("Runtime", f"cannot iterate over {display(seq)}", None, file, span)
            for item in seq:
                if ctx.cancelled:
                    ctx.check()
                assign(frame, item)
                try:
                    sig = body(frame)
                except ControlFlow as cf:
                    sig = cf.signal
                if sig is not None:
                    if sig is BREAK:
                        break
                    if sig is CONTINUE:
                        continue
                    return sig
            return None
        return run

    def s_BreakStmt(self, node: Any) -> Code:
        return lambda frame: BREAK

    def s_ContinueStmt(self, node: Any) -> Code:
        return lambda frame: CONTINUE

    def s_ReturnStmt(self, node: Any) -> Code:
        if self.closure_depth == 0:
            # in a function's own frame the value itself is the signal: every statement passes any signal
            # but None, BREAK and CONTINUE up to `make_function`, which returns it (no `Return` to allocate)
            if node.value is None:
                return lambda frame: UNIT
            return self.expr(node.value)
        if node.value is None:
            ret = Return(UNIT)
            return lambda frame: ret
        value = self.expr(node.value)
        return lambda frame: Return(value(frame))

    def s_SpanStmt(self, node: Any) -> Code:
        name = self.expr(node.name)
        body = self.block_stmts(node.body)
        trace = self.trace

        def run(frame: list) -> Any:
            label = display(name(frame))
            ctx = frame[0]
            trace(ctx, "span.start", {"name": label})
            started = time.monotonic()
            try:
                return body(frame)
            finally:
                trace(ctx, "span.end", {"name": label, "duration_ms": int((time.monotonic() - started) * 1000)})
        return run

    def s_CheckpointStmt(self, node: Any) -> Code:
        def checkpoint(frame: list) -> None:
            ctx = frame[0]
            ctx.runtime.effects.checkpoint(ctx)
        return checkpoint


def is_slot_comparison(test: Any) -> bool:
    """`n < 2`, `i == 0`: a local variable compared with an Int literal."""
    return type(test) is A.Binary and test.op in COMPARISONS and type(test.left) is A.Name \
        and test.left.ref is None and type(test.right) is A.Literal and type(test.right.value) is int
