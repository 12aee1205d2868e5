"""What every rule of the AST builder shares: the parse's context, string literals (whose template
interpolations are parsed here, each as an expression of its own) and Int literals."""
from __future__ import annotations

from lark import Token
from lark.visitors import Transformer_NonRecursive
from lark.exceptions import UnexpectedInput, VisitError

from . import ast as A
from .context import INT_MAX, ParseContext, int_literal
from .describe import describe_unexpected
from .grammar import lark_parser
from .lexical import decode_string, lexical_errors
from .nesting import NESTING_MESSAGE, first_token_too_deep


class BuilderBase(Transformer_NonRecursive):
    """Non-recursive: Lark's tree of an input at the nesting limit is deeper than Python's recursion limit."""

    def __init__(self, ctx: ParseContext) -> None:
        super().__init__()
        self.ctx = ctx

    def decode_string(self, tok: Token) -> A.Node:
        return decode_string(tok, self.ctx, self._interpolation)

    def _int(self, tok: Token, span: tuple) -> A.Node:
        value = int_literal(tok.value)
        node = A.Literal(value, span=span)
        if value > INT_MAX:
            self.ctx.big_ints[id(node)] = node
        return node

    def _interpolation(self, text: str, line: int, col: int) -> A.Node | None:
        """Parse the text of `{…}` that starts at line:col with the `expr` start symbol. It is padded with blank
        lines and spaces so that Lark's positions are the file's own; a syntax error inside is E007."""
        ctx = self.ctx
        padded = "\n" * (line - 1) + " " * (col - 1) + text
        sub = ParseContext(ctx.path)
        lexical_errors(padded, sub, start=len(padded) - len(text))
        try:
            # a builder of this same class, so that nothing here names the subclass that holds the rules
            tree = lark_parser().parse(padded, start="expr")
            too_deep = first_token_too_deep(tree)
            if too_deep is not None:
                ctx.error("E005", NESTING_MESSAGE, too_deep)
                return None
            node = type(self)(sub).transform(tree)
        except UnexpectedInput as exc:
            err_line = getattr(exc, "line", line) or line
            err_col = getattr(exc, "column", col) or col
            if err_line < 1 or err_col < 1:
                err_line, err_col = line, col
            ctx.error("E007", f"invalid interpolation: {describe_unexpected(exc)}",
                      (err_line, err_col, err_line, err_col + 1))
            return None
        except VisitError as exc:
            raise exc.orig_exc from None
        for d in sub.errors:
            if d.code in ("E005", "E006"):
                d.code = "E007"
                d.message = "invalid interpolation: " + d.message
            ctx.errors.append(d)
        sub.report_big_ints()
        ctx.errors.extend(e for e in sub.errors if e not in ctx.errors)
        return node
