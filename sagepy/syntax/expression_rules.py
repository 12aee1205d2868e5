"""AST builder rules for statements, expressions and patterns (SPEC §2.2–2.5): one method per grammar rule
or alternative, each given the rule's `meta` (for its span) and its already-built children."""
from __future__ import annotations

from lark import Token, v_args

from . import ast as A
from .builder_base import BuilderBase
from .parse_state import INT_MAX, int_literal, meta_span, token_span


def _binop(self, meta, children):
    left, op, right = children
    return A.Binary(op.value, left, right, span=meta_span(meta))


@v_args(meta=True)
class ExpressionRules(BuilderBase):
    # ---- statements
    def block(self, meta, c):
        stmts = [s for s in c[:-1] if s is not None]
        return A.Block(stmts, c[-1], span=meta_span(meta))

    def let_stmt(self, meta, c):
        return A.LetStmt(c[0], c[1], c[2], span=meta_span(meta))

    def assign_stmt(self, meta, c):
        return A.AssignStmt(c[0].value, c[1], span=meta_span(meta))

    def if_stmt(self, meta, c):
        return A.IfStmt(c[0], c[1], c[2], span=meta_span(meta))

    def for_stmt(self, meta, c):
        return A.ForStmt(c[0], c[1], c[2], span=meta_span(meta))

    def while_stmt(self, meta, c):
        return A.WhileStmt(c[0], c[1], span=meta_span(meta))

    def loop_stmt(self, meta, c):
        return A.LoopStmt(c[0], span=meta_span(meta))

    def break_stmt(self, meta, c):
        return A.BreakStmt(span=meta_span(meta))

    def continue_stmt(self, meta, c):
        return A.ContinueStmt(span=meta_span(meta))

    def return_stmt(self, meta, c):
        return A.ReturnStmt(c[0], span=meta_span(meta))

    def span_stmt(self, meta, c):
        return A.SpanStmt(c[0], c[1], span=meta_span(meta))

    def checkpoint_stmt(self, meta, c):
        return A.CheckpointStmt(span=meta_span(meta))

    def match_stmt(self, meta, c):
        return A.MatchStmt(c[0], span=meta_span(meta))

    def expr_stmt(self, meta, c):
        return A.ExprStmt(c[0], span=meta_span(meta))

    def empty_stmt(self, meta, c):
        return None

    def target_name(self, meta, c):
        return A.TargetName(c[0].value, span=meta_span(meta))

    def target_tuple(self, meta, c):
        return A.TargetTuple([x for x in c if x is not None], span=meta_span(meta))

    def mock_divine(self, meta, c):
        return A.MockStmt("divine", None, None, c[0], span=meta_span(meta))

    def mock_infer(self, meta, c):
        return A.MockStmt("infer", None, None, c[0], span=meta_span(meta))

    def mock_divine_calls(self, meta, c):
        return A.MockStmt("divine", None, None, c[0], span=meta_span(meta))

    def mock_infer_calls(self, meta, c):
        return A.MockStmt("infer", None, None, c[0], span=meta_span(meta))

    def mock_calls(self, meta, c):
        calls = [x for x in c if x is not None]
        for call in calls:
            if not (isinstance(call, A.Call) and isinstance(call.fn, A.FieldAccess)
                    and isinstance(call.fn.obj, A.Name)):
                self.ctx.error("E005", "expected a tool call `T.f(…)` after `call`", call.span)
        return A.MockCalls(calls, span=meta_span(meta))

    def score_stmt(self, meta, c):
        return A.ScoreStmt(c[0].value[1:-1], c[1], span=meta_span(meta))

    def replay_stmt(self, meta, c):
        return A.ReplayStmt(c[0].value[1:-1], span=meta_span(meta))

    def mock_tool(self, meta, c):
        return A.MockStmt("tool", c[0].value, c[1], c[2], span=meta_span(meta))

    def mock_other(self, meta, c):
        name = c[0].value
        if name not in ("elicit", "approve", "ask"):
            self.ctx.error("E005", f"unknown mock target `{name}`, expected divine, infer, tool, elicit, approve or ask",
                         token_span(c[0]))
        return A.MockStmt(name, None, None, c[1], span=meta_span(meta))

    # ---- expressions
    def fail_expr(self, meta, c):
        return A.FailExpr(c[0], span=meta_span(meta))

    def closure_expr(self, meta, c):
        params = c[0] if len(c) == 2 and not isinstance(c[0], Token) else []
        body = c[-1]
        return A.Closure(params or [], body, span=meta_span(meta))

    closure_block = closure_expr

    def cparams(self, meta, c):
        return [x for x in c if x is not None]

    def cparam(self, meta, c):
        return A.ClosureParam(c[0].value, c[1], span=meta_span(meta))

    def catch_plain(self, meta, c):
        return A.CatchExpr(c[0], None, c[1], span=meta_span(meta))

    def catch_bind(self, meta, c):
        return A.CatchExpr(c[0], c[1].value, c[2], span=meta_span(meta))

    def catch_prefix(self, meta, c):
        return A.CatchExpr(c[0], None, c[1], span=meta_span(meta))

    binop = _binop

    def neg(self, meta, c):
        operand = c[1]
        span = meta_span(meta)
        if isinstance(operand, A.Literal) and id(operand) in self.ctx.big_ints and operand.value == INT_MAX + 1:
            del self.ctx.big_ints[id(operand)]
            return A.Literal(-operand.value, span=span)
        return A.Unary("-", operand, span=span)

    def not_(self, meta, c):
        return A.Unary("!", c[1], span=meta_span(meta))

    def try_expr(self, meta, c):
        return A.TryExpr(c[0], span=meta_span(meta))

    def await_expr(self, meta, c):
        return A.AwaitExpr(c[0], None, span=meta_span(meta))

    def await_timeout(self, meta, c):
        return A.AwaitExpr(c[0], c[1], span=meta_span(meta))

    def field(self, meta, c):
        return A.FieldAccess(c[0], c[1], span=meta_span(meta))

    def tuple_index(self, meta, c):
        index = int_literal(c[1].value)
        if index > INT_MAX:
            self.ctx.error("E004", "integer literal out of the 64-bit range", token_span(c[1]))
        return A.TupleIndex(c[0], index, span=meta_span(meta))

    def call(self, meta, c):
        return A.Call(c[0], c[1] or [], span=meta_span(meta))

    def args(self, meta, c):
        return [x for x in c if x is not None]

    def int_lit(self, meta, c):
        return self._int(c[0], meta_span(meta))

    def float_lit(self, meta, c):
        return A.Literal(float(c[0].value), span=meta_span(meta))

    def string_lit(self, meta, c):
        return self.decode_string(c[0])

    def true_lit(self, meta, c):
        return A.Literal(True, span=meta_span(meta))

    def false_lit(self, meta, c):
        return A.Literal(False, span=meta_span(meta))

    def self_expr(self, meta, c):
        return A.SelfExpr(span=meta_span(meta))

    def unit_lit(self, meta, c):
        return A.Literal(A.UNIT, span=meta_span(meta))

    def paren(self, meta, c):
        return c[0]

    def tuple_lit(self, meta, c):
        return A.TupleLit([x for x in c if x is not None], span=meta_span(meta))

    def name(self, meta, c):
        return A.Name(c[0].value, c[1], span=meta_span(meta))

    def variant_path(self, meta, c):
        return A.VariantPath(c[0].value, c[1], c[2].value, span=meta_span(meta))

    def list_lit(self, meta, c):
        return A.ListLit(c[0] or [], span=meta_span(meta))

    def retry_expr(self, meta, c):
        count, delay, kinds, body = c
        return A.RetryExpr(count, delay, kinds, body, span=meta_span(meta))

    def retry_delay(self, meta, c):
        return c[0]

    def retry_on(self, meta, c):
        return [x for x in c if x is not None]

    def divine_expr(self, meta, c):
        return A.DivineExpr(c[0], c[1], False, c[2], span=meta_span(meta))

    def infer_expr(self, meta, c):
        return A.DivineExpr(c[0], c[1], True, c[2], span=meta_span(meta))

    def divine_options(self, meta, c):
        return [x for x in c if x is not None]

    def divine_option(self, meta, c):
        return A.DivineOption(c[0].value, c[1], span=meta_span(meta))

    def summon_expr(self, meta, c):
        return A.SummonExpr(c[0].value, c[1] or [], span=meta_span(meta))

    def send_expr(self, meta, c):
        return A.SendExpr(c[0], c[1], span=meta_span(meta))

    def receive_expr(self, meta, c):
        return A.ReceiveExpr(span=meta_span(meta))

    def reply_expr(self, meta, c):
        return A.ReplyExpr(c[0], span=meta_span(meta))

    def yield_expr(self, meta, c):
        return A.YieldExpr(c[0], span=meta_span(meta))

    def trace_expr(self, meta, c):
        return A.TraceExpr(c[0], span=meta_span(meta))

    def record_lit(self, meta, c):
        return A.RecordLit(c[0].value, c[1], c[2] or [], span=meta_span(meta))

    def map_lit(self, meta, c):
        return A.MapLit([x for x in c if x is not None], span=meta_span(meta))

    def map_entry(self, meta, c):
        return (c[0], c[1])

    def field_inits(self, meta, c):
        return [x for x in c if x is not None]

    def field_init(self, meta, c):
        return (c[0], c[1], meta_span(meta))

    def turbofish(self, meta, c):
        return c[0]

    def match_expr(self, meta, c):
        return A.MatchExpr(c[0], (c[1] or [])[::-1], span=meta_span(meta))

    # The arms rule is right-recursive, so the arms arrive last first: they are gathered in reverse (appending
    # keeps a long match linear) and `match_expr` puts them in order.
    def arms_last(self, meta, c):
        return [c[0]]

    def arms_more(self, meta, c):
        rest = c[-1] if isinstance(c[-1], list) else []
        rest.append(c[0])
        return rest

    def arm_expr(self, meta, c):
        return A.Arm(c[0], c[1], span=meta_span(meta))

    arm_block = arm_expr

    def arm_break(self, meta, c):
        return A.ArmBreak(span=meta_span(meta))

    def arm_continue(self, meta, c):
        return A.ArmContinue(span=meta_span(meta))

    def arm_return(self, meta, c):
        return A.ArmReturn(c[0], span=meta_span(meta))

    # ---- patterns
    def pattern(self, meta, c):
        alts = [x for x in c if not isinstance(x, Token)]
        if len(alts) == 1:
            return alts[0]
        return A.PatOr(alts, span=meta_span(meta))

    def pat_name(self, meta, c):
        name = c[0].value
        span = meta_span(meta)
        if name == "_":
            return A.PatWild(span=span)
        if name[0].isupper():
            return A.PatVariant(None, None, name, None, span=span)
        return A.PatBind(name, span=span)

    def pat_int(self, meta, c):
        minus, tok = c
        value = int_literal(tok.value)
        if minus is not None:
            value = -value
        if not (-(1 << 63) <= value <= INT_MAX):
            self.ctx.error("E004", "integer literal out of the 64-bit range", meta_span(meta))
        return A.PatLiteral(value, span=meta_span(meta))

    def pat_float(self, meta, c):
        minus, tok = c
        value = float(tok.value)
        return A.PatLiteral(-value if minus is not None else value, span=meta_span(meta))

    def pat_string(self, meta, c):
        node = self.decode_string(c[0])
        if isinstance(node, A.Template):
            self.ctx.error("E031", "invalid pattern: a string pattern cannot interpolate", meta_span(meta))
            return A.PatLiteral("", span=meta_span(meta))
        return A.PatLiteral(node.value, span=meta_span(meta))

    def pat_true(self, meta, c):
        return A.PatLiteral(True, span=meta_span(meta))

    def pat_false(self, meta, c):
        return A.PatLiteral(False, span=meta_span(meta))

    def pat_tuple(self, meta, c):
        return A.PatTuple([x for x in c if x is not None], span=meta_span(meta))

    def pat_path(self, meta, c):
        head, targs, name, payload = c
        return A.PatVariant(head.value, targs, name.value, payload, span=meta_span(meta))

    def pat_variant(self, meta, c):
        return A.PatVariant(None, None, c[0].value, c[1], span=meta_span(meta))

    def member(self, meta, c):
        return c[0].value
