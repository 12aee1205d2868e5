"""Expressions, patterns and types (SPEC §2.3–2.7, §19.1).

The AST keeps no parentheses, so they are put back where precedence (§2.4) or a position's restrictions (§2.7)
need them: the context `ctx` says what may not appear where an expression is printed. `NS` is the head of an
`if`/`while`/`for`/`match`/`span` (no record literal, no `fail` or expression closure on its spine); `STMT`,
`TAIL` and `ARM` are the expression-statement, block-value and arm/closure-body positions, whose leftmost
primary may not be a `match` or a map literal (`TAIL` allows a whole map, `ARM` a whole `match`); `LEFT` is the
leftmost operand inside one of those. Literals, templates and strings are the source text, exactly.
"""
from __future__ import annotations

import re

from ..syntax import ast as A
from .doc import LINE, Doc, group, has_hard, indent
from .layout import Element, Layout, end_line_of, printer_of, start_of

NS, STMT, TAIL, ARM, LEFT = "ns", "stmt", "tail", "arm", "left"
_LEFTMOST = (STMT, TAIL, ARM, LEFT)

_BINARY_LEVEL = {"||": 2, "&&": 3, "==": 4, "!=": 4, "<": 5, ">": 5, "<=": 5, ">=": 5, "++": 6,
                 "+": 7, "-": 7, "*": 8, "/": 8, "%": 8}
_NON_ASSOCIATIVE = frozenset({"==", "!=", "<", ">", "<=", ">="})
_POSTFIX = 10
_UNARY = 9
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?)?")
_COMMENT = re.compile(r"/\*[\s\S]*?\*/|//[^\n]*")
_TYPE_NAMES = {"list": "List", "option": "Option", "oracle": "Oracle", "map": "Map", "result": "Result"}


def _is_number(node: A.Node) -> bool:
    return (type(node) is A.Literal and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool))


def level(node: A.Node) -> int:
    """The precedence level of §2.4 the expression's printed form has (11 for a primary)."""
    kind = type(node)
    if kind is A.Binary:
        return _BINARY_LEVEL[node.op]
    if kind is A.FailExpr:
        return 0
    if kind is A.Closure:
        return 11 if isinstance(node.body, A.Block) else 0
    if kind is A.CatchExpr:
        return 1
    if kind in (A.Unary, A.TryExpr, A.AwaitExpr):
        return _UNARY
    if kind in (A.FieldAccess, A.TupleIndex, A.Call):
        return _POSTFIX
    if _is_number(node) and node.value < 0:
        return _UNARY   # `-9223372036854775808`, folded by the parser into one literal
    return 11


def _spine(ctx: str | None) -> str | None:
    """The context of an operand that is not leftmost."""
    return NS if ctx == NS else None


def _leftmost(ctx: str | None) -> str | None:
    if ctx == NS:
        return NS
    return LEFT if ctx in _LEFTMOST else None


class ExprPrinter(Layout):
    def block(self, block: A.Block) -> Doc:
        raise NotImplementedError   # statements.py

    # ---- expressions

    def expr(self, node: A.Node, min_level: int = 0, ctx: str | None = None) -> Doc:
        kind = type(node)
        if ctx == NS:
            min_level = max(min_level, 1)
        paren = level(node) < min_level
        if not paren and ctx in _LEFTMOST:
            paren = (kind is A.MatchExpr and ctx != ARM) or (kind is A.MapLit and ctx != TAIL)
        if not paren and ctx == NS:
            paren = kind is A.RecordLit
        if paren:
            return ["(", self.expr(node, 0, None), ")"]
        return printer_of(self, "e_", node)(node, ctx)

    def elements(self, nodes: list, build=None) -> list[Element]:
        build = build or (lambda n: self.expr(n))
        return [Element(start_of(n.span), end_line_of(n.span), (lambda n=n: build(n))) for n in nodes]

    def closing(self, span: tuple | None) -> tuple | None:
        """The position of the last character of a node (its closing bracket)."""
        return (span[2], span[3] - 1) if span else None

    def e_Literal(self, node: A.Literal, ctx: str | None) -> Doc:
        value = node.value
        if value is A.UNIT:
            return "()"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return self.source(node.span)
        return ("-" if value < 0 else "") + self._digits(node.span)

    def e_Template(self, node: A.Template, ctx: str | None) -> Doc:
        return self.source(node.span)

    def e_Name(self, node: A.Name, ctx: str | None) -> Doc:
        return node.name + self.turbofish(node.targs)

    def e_VariantPath(self, node: A.VariantPath, ctx: str | None) -> Doc:
        return f"{node.enum_name}{self.turbofish(node.targs)}::{node.variant}"

    def e_SelfExpr(self, node: A.Node, ctx: str | None) -> Doc:
        return "self"

    def e_Binary(self, node: A.Binary, ctx: str | None) -> Doc:
        """A chain of one level's operators (`a ++ b ++ c`) on one line, else broken before each operator."""
        op_level = _BINARY_LEVEL[node.op]
        chain = [node]
        while (node.op not in _NON_ASSOCIATIVE and type(chain[-1].left) is A.Binary
               and _BINARY_LEVEL[chain[-1].left.op] == op_level):
            chain.append(chain[-1].left)
        first = chain[-1]
        left_min = op_level + 1 if first.op in _NON_ASSOCIATIVE else op_level
        head = self.expr(first.left, left_min, _leftmost(ctx))
        operands = [(link.op, self.expr(link.right, op_level + 1, _spine(ctx))) for link in reversed(chain)]
        if has_hard(head) or any(has_hard(d) for _, d in operands):   # a block inside: operators stay put
            return [head, [[" ", op, " ", d] for op, d in operands]]
        return group([head, indent([[LINE, op, " ", d] for op, d in operands])])

    def e_Unary(self, node: A.Unary, ctx: str | None) -> Doc:
        return [node.op, self.expr(node.operand, _UNARY, _spine(ctx))]

    def e_TryExpr(self, node: A.TryExpr, ctx: str | None) -> Doc:
        return ["try ", self.expr(node.expr, _UNARY, _spine(ctx))]

    def e_AwaitExpr(self, node: A.AwaitExpr, ctx: str | None) -> Doc:
        if node.timeout is None:
            return ["await ", self.expr(node.expr, _UNARY, _spine(ctx))]
        awaited = self.expr(node.expr, _POSTFIX, _spine(ctx))
        return ["await ", awaited, " timeout", self.delimited("(", self.elements([node.timeout]), ")",
                                                             self.closing(node.span), comma=False)]

    def e_FailExpr(self, node: A.FailExpr, ctx: str | None) -> Doc:
        return ["fail ", self.expr(node.expr)]

    def _object(self, node: A.Node, ctx: str | None) -> Doc:
        if _is_number(node):
            return ["(", self.expr(node), ")"]   # `1.0` would be a Float, `(1).0` a tuple index
        return self.expr(node, _POSTFIX, _leftmost(ctx))

    def e_FieldAccess(self, node: A.FieldAccess, ctx: str | None) -> Doc:
        return [self._object(node.obj, ctx), ".", node.name]

    def e_TupleIndex(self, node: A.TupleIndex, ctx: str | None) -> Doc:
        return [self._object(node.obj, ctx), ".", str(node.index)]

    def e_Call(self, node: A.Call, ctx: str | None) -> Doc:
        callee = self._object(node.fn, ctx)
        return [callee, self.delimited("(", self.elements(node.args), ")", self.closing(node.span))]

    def e_CatchExpr(self, node: A.CatchExpr, ctx: str | None) -> Doc:
        if node.binder is None and self._prefix_catch(node):   # `catch e { … }`, kept as the author wrote it
            return ["catch ", self.expr(node.expr, 2, NS), " ", self.block(node.fallback)]
        left = self.expr(node.expr, 1, _leftmost(ctx))
        binder = f"catch({node.binder}) " if node.binder is not None else "catch "
        return [left, " ", binder, self.block(node.fallback)]

    def _prefix_catch(self, node: A.CatchExpr) -> bool:
        span, inner = node.span, node.expr.span
        return (span is not None and inner is not None and (span[0], span[1]) != (inner[0], inner[1])
                and self.source(span).startswith("catch"))

    def e_Closure(self, node: A.Closure, ctx: str | None) -> Doc:
        params = ", ".join(p.name + (": " + self.type(p.type) if p.type is not None else "")
                           for p in node.params)
        head = f"|{params}|" if params else "||"
        if isinstance(node.body, A.Block):
            return [head, " ", self.block(node.body)]
        return [head, " ", self.expr(node.body, 0, ARM)]

    def e_ListLit(self, node: A.ListLit, ctx: str | None) -> Doc:
        return self.delimited("[", self.elements(node.items), "]", self.closing(node.span))

    def e_TupleLit(self, node: A.TupleLit, ctx: str | None) -> Doc:
        return self.delimited("(", self.elements(node.items), ")", self.closing(node.span))

    def e_MapLit(self, node: A.MapLit, ctx: str | None) -> Doc:
        entries = [Element(start_of(k.span), end_line_of(v.span),
                           (lambda k=k, v=v: [self.expr(k), ": ", self.expr(v)])) for k, v in node.entries]
        return self.delimited("{", entries, "}", self.closing(node.span), pad=True)

    def field_inits(self, fields: list, span: tuple | None) -> Doc:
        """`{ name: value, … }` of a record literal or `summon`; fields are (name, expr, span)."""
        elements = [Element(start_of(s), end_line_of(s), (lambda n=n, e=e: [n, ": ", self.expr(e)]))
                    for n, e, s in fields]
        return self.delimited("{", elements, "}", self.closing(span), pad=True)

    def e_RecordLit(self, node: A.RecordLit, ctx: str | None) -> Doc:
        return [node.name, self.turbofish(node.targs), " ", self.field_inits(node.fields, node.span)]

    def e_SummonExpr(self, node: A.SummonExpr, ctx: str | None) -> Doc:
        return ["summon ", node.agent, " ", self.field_inits(node.fields, node.span)]

    def e_MatchExpr(self, node: A.MatchExpr, ctx: str | None) -> Doc:
        scrutinee = self.expr(node.scrutinee, 0, NS)
        arms = [Element(start_of(arm.span), end_line_of(arm.span), (lambda arm=arm: self.arm(arm)))
                for arm in node.arms]
        return ["match ", scrutinee, " ", self.braced(node.span, arms)]

    def arm(self, arm: A.Arm) -> Doc:
        pattern = self.pattern(arm.pattern)
        body = arm.body
        kind = type(body)
        if kind is A.Block:
            return [pattern, " => ", self.block(body)]
        if kind is A.ArmBreak:
            return [pattern, " => break,"]
        if kind is A.ArmContinue:
            return [pattern, " => continue,"]
        if kind is A.ArmReturn:
            value = [" ", self.expr(body.value)] if body.value is not None else []
            return [pattern, " => return", value, ","]
        return [pattern, " => ", self.expr(body, 0, ARM), ","]

    def e_RetryExpr(self, node: A.RetryExpr, ctx: str | None) -> Doc:
        args = self.elements([node.count])
        if node.delay is not None:
            args.append(Element(start_of(node.delay.span), end_line_of(node.delay.span),
                                lambda: ["delay: ", self.expr(node.delay)]))
        if node.kinds is not None:
            args.append(Element(None, None, lambda: ["on: [", ", ".join(node.kinds), "]"]))
        body_start = start_of(node.body.span)
        return ["retry", self.delimited("(", args, ")", body_start, comma=False), " ", self.block(node.body)]

    def e_DivineExpr(self, node: A.DivineExpr, ctx: str | None) -> Doc:
        prompt = node.prompt
        end = node.type.span if node.type is not None and node.type.span else prompt.span

        def build_prompt() -> Doc:
            typed = [" -> ", self.type(node.type)] if node.type is not None else []
            return [self.expr(prompt), typed]
        args = [Element(start_of(prompt.span), end_line_of(end), build_prompt)]
        args.extend(Element(start_of(o.span), end_line_of(o.span), (lambda o=o: [o.name, ": ", self.expr(o.value)]))
                    for o in node.options)
        keyword = "infer" if node.infer else "divine"
        return [keyword, self.delimited("(", args, ")", self.closing(node.span))]

    def _call_like(self, keyword: str, args: list, span: tuple | None) -> Doc:
        return [keyword, self.delimited("(", self.elements(args), ")", self.closing(span), comma=False)]

    def e_SendExpr(self, node: A.SendExpr, ctx: str | None) -> Doc:
        return self._call_like("send", [node.target, node.message], node.span)

    def e_ReceiveExpr(self, node: A.Node, ctx: str | None) -> Doc:
        return "receive()"

    def e_ReplyExpr(self, node: A.ReplyExpr, ctx: str | None) -> Doc:
        return self._call_like("reply", [node.value], node.span)

    def e_YieldExpr(self, node: A.YieldExpr, ctx: str | None) -> Doc:
        return self._call_like("yield", [node.value], node.span)

    def e_TraceExpr(self, node: A.TraceExpr, ctx: str | None) -> Doc:
        return self._call_like("trace", [node.value], node.span)

    def _digits(self, span: tuple) -> str:
        """A number literal's digits as written (a `-` before it may be apart, with comments between)."""
        return _NUMBER.search(_COMMENT.sub(" ", self.source(span))).group()

    # ---- types and patterns (short: always on one line)

    def turbofish(self, targs: list | None) -> str:
        return "::<" + ", ".join(self.type(t) for t in targs) + ">" if targs else ""

    def type(self, t: A.TypeExpr) -> str:
        kind = t.kind
        if kind == "prim":
            if t.name == "Unit" and t.span and self.source(t.span).startswith("("):
                return "()"
            return t.name
        if kind in _TYPE_NAMES:
            return f"{_TYPE_NAMES[kind]}<{', '.join(self.type(a) for a in t.args)}>"
        if kind == "agent":
            return f"Agent<{t.name}>"
        if kind == "fn":
            params, ret = t.args
            return f"Fn({', '.join(self.type(p) for p in params)}) -> {self.type(ret)}"
        if kind == "tuple":
            return "(" + ", ".join(self.type(a) for a in t.args) + ")"
        return t.name + ("<" + ", ".join(self.type(a) for a in t.args) + ">" if t.args else "")

    def pattern(self, p: A.Node) -> str:
        kind = type(p)
        if kind is A.PatWild:
            return "_"
        if kind is A.PatBind:
            return p.name
        if kind is A.PatLiteral:
            if isinstance(p.value, bool):
                return "true" if p.value else "false"
            if isinstance(p.value, str):
                return self.source(p.span)
            return ("-" if p.value < 0 or self.source(p.span).startswith("-") else "") + self._digits(p.span)
        if kind is A.PatTuple:
            return "(" + ", ".join(self.pattern(x) for x in p.items) + ")"
        if kind is A.PatOr:
            return " | ".join(self.pattern(x) for x in p.alts)
        payload = f"({self.pattern(p.payload)})" if p.payload is not None else ""
        if p.enum_name is None:
            return p.name + payload
        return f"{p.enum_name}{self.turbofish(p.targs)}::{p.name}{payload}"
