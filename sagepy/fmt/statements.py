"""Blocks and statements (SPEC §2.2): one statement per line, every non-empty block broken over lines."""
from __future__ import annotations

from ..syntax import ast as A
from .doc import Doc
from .exprs import NS, STMT, TAIL, ExprPrinter
from .layout import Element, end_line_of, printer_of, start_of


class StatementPrinter(ExprPrinter):
    def block(self, block: A.Block) -> Doc:
        elements = [Element(start_of(s.span), end_line_of(s.span), (lambda s=s: self.stmt(s)))
                    for s in block.stmts]
        if block.value is not None:
            value = block.value
            elements.append(Element(start_of(value.span), end_line_of(value.span),
                                    lambda: self.expr(value, 0, TAIL)))
        return self.braced(block.span, elements)

    def stmt(self, node: A.Node) -> Doc:
        return printer_of(self, "s_", node)(node)

    def target(self, t: A.Node) -> str:
        if isinstance(t, A.TargetTuple):
            return "(" + ", ".join(self.target(x) for x in t.items) + ")"
        return t.name

    def s_LetStmt(self, node: A.LetStmt) -> Doc:
        typed = ": " + self.type(node.type) if node.type is not None else ""
        return ["let ", self.target(node.target), typed, " = ", self.expr(node.value), ";"]

    def s_AssignStmt(self, node: A.AssignStmt) -> Doc:
        return [node.name, " = ", self.expr(node.value), ";"]

    def s_IfStmt(self, node: A.IfStmt) -> Doc:
        out = ["if ", self.expr(node.cond, 0, NS), " ", self.block(node.then)]
        if node.orelse is not None:
            orelse = self.stmt(node.orelse) if isinstance(node.orelse, A.IfStmt) else self.block(node.orelse)
            out += [" else ", orelse]
        return out

    def s_ForStmt(self, node: A.ForStmt) -> Doc:
        return ["for ", self.target(node.target), " in ", self.expr(node.iter, 0, NS), " ", self.block(node.body)]

    def s_WhileStmt(self, node: A.WhileStmt) -> Doc:
        return ["while ", self.expr(node.cond, 0, NS), " ", self.block(node.body)]

    def s_LoopStmt(self, node: A.LoopStmt) -> Doc:
        return ["loop ", self.block(node.body)]

    def s_SpanStmt(self, node: A.SpanStmt) -> Doc:
        return ["span ", self.expr(node.name, 0, NS), " ", self.block(node.body)]

    def s_BreakStmt(self, node: A.Node) -> Doc:
        return "break;"

    def s_ContinueStmt(self, node: A.Node) -> Doc:
        return "continue;"

    def s_CheckpointStmt(self, node: A.Node) -> Doc:
        return "checkpoint();"

    def s_ReturnStmt(self, node: A.ReturnStmt) -> Doc:
        if node.value is None:
            return "return;"
        return ["return ", self.expr(node.value), ";"]

    def s_ScoreStmt(self, node: A.ScoreStmt) -> Doc:
        return [f'score "{node.name}" = ', self.expr(node.value), ";"]

    def s_ReplayStmt(self, node: A.ReplayStmt) -> Doc:
        return f'replay "{node.path}";'

    def s_MockStmt(self, node: A.MockStmt) -> Doc:
        head = f"mock tool {node.tool}.{node.fn}" if node.kind == "tool" else f"mock {node.kind}"
        value = node.value
        if isinstance(value, A.MockCalls):
            calls: list = []
            for k, call in enumerate(value.calls):
                calls += [", " if k else "", "call ", self.expr(call, 10)]
            return [head, " -> ", calls, ";"]
        return [head, " -> ", self.expr(value), ";"]

    def s_ExprStmt(self, node: A.ExprStmt) -> Doc:
        return [self.expr(node.expr, 0, STMT), ";"]

    def s_MatchStmt(self, node: A.MatchStmt) -> Doc:
        return self.e_MatchExpr(node.match, None)
