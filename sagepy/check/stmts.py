"""Blocks and statements (SPEC §2.2, §3.1–3.5).

`stmt` returns True when the statement *diverges*: control never reaches what follows it (`return`, `break`,
`continue`, an expression of type `Never` such as `fail` or `yield`, an `if`/`else` whose branches both
diverge, a `loop` without `break`). A block that contains a diverging statement has type `Never`. This one
notion answers E045 (a function or `on start` that may end without a value or a `yield`) and the
`Never`-typed arms and fallbacks of §3.2.

Blocks whose value is discarded (`if` branches, loop bodies, `span`, handler and test bodies) are checked with
`discard=True`: their trailing values, and the arms of a final `match`, need not agree (§3.6).
"""
from __future__ import annotations

from typing import Any

from ..core import types as T
from ..diagnostics import did_you_mean
from ..effect_builtins import MCP_MOCK_KEYS
from ..syntax import ast as A
from .body import Body, Locals, Loop, Var
from .typeops import ANY, NEVER, fits, is_open, merge, prim_named, show



class Statements:
    """Mixin of the checker."""

    def block_type(self, block: Any, cx: Body, lc: Locals, expected: Any = None, discard: bool = False) -> T.Type:
        inner = lc.child()
        stmts = block.stmts
        final_match = stmts[-1] if block.value is None and stmts and isinstance(stmts[-1], A.MatchStmt) else None
        diverges = False
        for s in stmts:
            if s is final_match:
                break
            if self.stmt(s, cx, inner):
                diverges = True
        if final_match is not None:
            t = self.match(final_match.match, cx, inner, None if discard else expected, discard)
        elif block.value is not None:
            t = self.expr(block.value, cx, inner, None if discard else expected)
        else:
            t = T.UNIT
        if diverges or t is NEVER:
            return NEVER
        return T.UNIT if discard else t

    @staticmethod
    def has_tail(block: Any) -> bool:
        """True when the block ends in a value: a trailing expression or a final `match` statement."""
        return block.value is not None or bool(block.stmts and isinstance(block.stmts[-1], A.MatchStmt))

    def stmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return getattr(self, "s_" + type(node).__name__)(node, cx, lc)

    def s_ExprStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return self.expr(node.expr, cx, lc) is NEVER

    def s_MatchStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return self.match(node.match, cx, lc, None, True) is NEVER

    def s_LetStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        declared = self.resolve_type(node.type, cx.scope, cx.tparams) if node.type is not None else None
        t = self.expr(node.value, cx, lc, declared)
        if declared is not None:
            if not fits(declared, t):
                self.mismatch(declared, t, node.value.span, cx)
            self.bind_target(node.target, declared, cx, lc)
        else:
            self.bind_target(node.target, t, cx, lc)
        return t is NEVER

    def bind_target(self, target: Any, t: T.Type, cx: Body, lc: Locals) -> None:
        if isinstance(target, A.TargetName):
            if target.name != "_":
                var = lc.vars[target.name] = Var(t, cx)
                target.slot = var.slot
                self.note(cx.file, target.span, target.name, var, "h", True)
            return
        n = len(target.items)
        if isinstance(t, T.TupleT):
            if len(t.items) != n:
                self.error("E028", f"cannot destructure {show(t)} into {n} elements", target.span, cx.file)
                items = [ANY] * n
            else:
                items = list(t.items)
        else:
            if not is_open(t):
                self.error("E018", f"type mismatch: expected a tuple of {n} elements, found {show(t)}", target.span,
                           cx.file)
            items = [ANY] * n
        for sub, item in zip(target.items, items):
            self.bind_target(sub, item, cx, lc)

    def s_AssignStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        var = lc.find(node.name)
        if var is None:
            self.error("E047", f"cannot assign to `{node.name}`: no variable of that name", node.span, cx.file,
                       hint=f"declare it first with `let {node.name} = …;`")
            return self.expr(node.value, cx, lc) is NEVER
        if var.owner is not cx:
            self.error("E047", f"a closure cannot assign to captured variable `{node.name}`", node.span, cx.file)
        node.slot = var.slot
        self.note(cx.file, node.span, node.name, var)
        t = self.expr(node.value, cx, lc, var.type)
        if not fits(var.type, t):
            self.mismatch(var.type, t, node.value.span, cx)
        else:
            var.type = merge(var.type, t)
        return t is NEVER

    def condition(self, node: Any, cx: Body, lc: Locals) -> None:
        t = self.expr(node, cx, lc, T.BOOL)
        if not (is_open(t) or prim_named(t, "Bool")):
            self.error("E022", f"condition must be a Bool, found {show(t)}", node.span, cx.file,
                       hint="there is no truthiness: compare explicitly")

    def s_IfStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.condition(node.cond, cx, lc)
        then = self.block_type(node.then, cx, lc, discard=True) is NEVER
        if node.orelse is None:
            return False
        if isinstance(node.orelse, A.IfStmt):
            other = self.s_IfStmt(node.orelse, cx, lc)
        else:
            other = self.block_type(node.orelse, cx, lc, discard=True) is NEVER
        return then and other

    def loop_body(self, block: Any, cx: Body, lc: Locals) -> Loop:
        loop = Loop()
        cx.loops.append(loop)
        try:
            self.block_type(block, cx, lc, discard=True)
        finally:
            cx.loops.pop()
        return loop

    def s_WhileStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.condition(node.cond, cx, lc)
        self.loop_body(node.body, cx, lc)
        return False

    def s_LoopStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return not self.loop_body(node.body, cx, lc).has_break

    def s_ForStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        t = self.expr(node.iter, cx, lc)
        if isinstance(t, T.ListT):
            item = t.elem
        elif isinstance(t, T.MapT):
            item = T.TupleT([t.key, t.value])
        else:
            if not is_open(t):
                self.error("E023", f"`for` iterates a List or a Map, found {show(t)}", node.iter.span, cx.file)
            item = ANY
        inner = lc.child()
        self.bind_target(node.target, item, cx, inner)
        self.loop_body(node.body, cx, inner)
        return False

    def loop_jump(self, word: str, span: tuple, cx: Body) -> bool:
        if not cx.loops:
            self.error("E024", f"`{word}` outside a loop", span, cx.file)
        elif word == "break":
            cx.loops[-1].has_break = True
        return True

    def s_BreakStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return self.loop_jump("break", node.span, cx)

    def s_ContinueStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        return self.loop_jump("continue", node.span, cx)

    def s_ReturnStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.return_value(node.value, node.span, cx, lc)
        return True

    def return_value(self, value: Any, span: tuple, cx: Body, lc: Locals) -> None:
        if cx.ret is None and cx.returns is None:
            self.error("E024", "`return` outside a function or closure body", span, cx.file,
                       hint="handlers end with `yield(…)` or by reaching their end" if cx.agent else None)
            if value is not None:
                self.expr(value, cx, lc)
            return
        t = self.expr(value, cx, lc, cx.ret) if value is not None else T.UNIT
        if cx.ret is not None:
            if not fits(cx.ret, t):
                self.mismatch(cx.ret, t, value.span if value is not None else span, cx)
        else:
            cx.returns.append((t, span))

    def s_SpanStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        self.expr(node.name, cx, lc)
        return self.block_type(node.body, cx, lc, discard=True) is NEVER

    def s_CheckpointStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        if cx.agent is None:
            self.error("E053", "`checkpoint()` outside an agent handler", node.span, cx.file)
        return False

    def s_MockStmt(self, node: Any, cx: Body, lc: Locals) -> bool:
        if not cx.scope.is_test:
            self.error("E050", "`mock` is only allowed in test files (`*_test.sg`)", node.span, cx.file)
        elif cx.kind != "test":
            code = "E057" if node.kind == "tool" else "E056"
            self.error(code, f"`mock {node.kind}` is only allowed inside a test block", node.span, cx.file)
        if node.kind == "tool":
            self.mock_target(node, cx)
        value = node.value
        if isinstance(value, A.FailExpr):
            t = self.expr(value.expr, cx, lc, T.STRING)
            if not (is_open(t) or prim_named(t, "String")):
                self.error("E058", f"the message of a failure mock must be a String, found {show(t)}",
                           value.expr.span, cx.file)
        elif isinstance(value, A.MockCalls):
            if cx.kind == "test":   # elsewhere E050/E056 says it all; its calls would only add E038s
                self.mock_calls(value, cx, lc)
        elif node.kind == "approve":
            self.mock_approval(value, cx, lc)
        elif node.kind == "ask":
            self.expect_type(value, T.STRING, "String", cx, lc)
        elif not (node.kind == "elicit" and isinstance(value, A.Name) and value.name in ("decline", "cancel")):
            self.expr(value, cx, lc)
        return False

    def mock_approval(self, value: Any, cx: Body, lc: Locals) -> None:
        """`mock approve -> true;`, `-> false;` or `-> deny("reason");` (SPEC §9.3)."""
        if is_deny(value):
            if len(value.args) != 1:
                self.error("E039", f"`deny` takes 1 argument (the reason), found {len(value.args)}", value.span,
                           cx.file)
            for arg in value.args:
                self.expect_type(arg, T.STRING, "String", cx, lc)
            return
        self.expect_type(value, T.BOOL, "Bool", cx, lc)

    def expect_type(self, value: Any, expected: Any, name: str, cx: Body, lc: Locals) -> None:
        t = self.expr(value, cx, lc, expected)
        if not (is_open(t) or prim_named(t, name)):
            self.error("E018", f"type mismatch: expected {name}, found {show(t)}", value.span, cx.file)

    def mock_target(self, node: Any, cx: Body) -> None:
        if node.tool == "mcp" and cx.scope.lookup("mcp") is None:
            if node.fn not in MCP_MOCK_KEYS:
                self.error("E036", f"unknown MCP mock key `mcp.{node.fn}`", node.span, cx.file,
                           hint=did_you_mean(node.fn, MCP_MOCK_KEYS))
            return
        tool = self.lookup_tool(cx.scope, node.tool)
        self.note(cx.file, node.span, node.tool, tool, "f")
        if tool is not None:
            self.note(cx.file, node.span, node.fn, ("member", tool), ".")
        if tool is None:
            self.error("E037", f"unknown tool `{node.tool}`", node.span, cx.file)
        elif node.fn not in tool.fns:
            self.error("E036", f"tool `{node.tool}` has no function `{node.fn}`", node.span, cx.file,
                       hint=did_you_mean(node.fn, tool.fns))


def is_deny(value: Any) -> bool:
    """`deny("reason")` in `mock approve -> deny("reason");`: a word of that statement only."""
    return isinstance(value, A.Call) and isinstance(value.fn, A.Name) and value.fn.name == "deny"
