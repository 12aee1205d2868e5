"""What every rule of the AST builder shares: the parse's context, string literals (whose template
interpolations are parsed here, each as an expression of its own) and Int literals."""
from __future__ import annotations

import functools
import re

from lark import Token, Tree
from lark.visitors import Transformer_NonRecursive
from lark.exceptions import UnexpectedInput, VisitError

from . import ast as A
from .parse_state import INT_MAX, ParseContext, int_literal
from .describe import describe_unexpected
from .grammar import lark_parser, terminal_patterns
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
        """Parse the text of `{…}` that starts at line:col with the `expr` start symbol; the positions Lark
        gives are moved onto the file's own afterwards (padding the text to its place instead would make a
        line of n interpolations quadratic). A syntax error inside is E007."""
        span = (line, col, line, col + len(text))
        if _is_plain_name(text):   # `{name}` and `{42}`, by far the most common, without a parse
            return A.Name(text, None, span=span)
        if _DIGITS.fullmatch(text):
            return self._int(Token("INT", text), span)
        ctx = self.ctx
        sub = ParseContext(ctx.path)
        lexical_errors(text, sub)
        for d in sub.errors:
            d.span = _moved_span(d.span, line, col)
        try:
            # a builder of this same class, so that nothing here names the subclass that holds the rules
            tree = lark_parser().parse(text, start="expr")
            _move_positions(tree, line, col)
            too_deep = first_token_too_deep(tree)
            if too_deep is not None:
                ctx.error("E005", NESTING_MESSAGE, too_deep)
                return None
            node = type(self)(sub).transform(tree)
        except UnexpectedInput as exc:
            err_line, err_col = _moved(getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1, line, col)
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


_DIGITS = re.compile(r"[0-9]+")   # the grammar's INT


@functools.lru_cache(maxsize=None)
def _name_pattern() -> tuple[re.Pattern, frozenset]:
    """The grammar's IDENT (which refuses reserved words) and every fixed-string terminal (`start`, `mock`)."""
    ident = next(t for t in lark_parser().terminals if t.name == "IDENT")
    return re.compile(ident.pattern.value), frozenset(terminal_patterns().values())


def _is_plain_name(text: str) -> bool:
    pattern, fixed = _name_pattern()
    return pattern.fullmatch(text) is not None and text not in fixed


def _moved(l: int, c: int, line: int, col: int) -> tuple[int, int]:
    """Position l:c of an interpolation's text, which starts at line:col of the file, in the file."""
    return (l + line - 1, c + col - 1 if l == 1 else c)


def _moved_span(span: tuple, line: int, col: int) -> tuple:
    return (*_moved(span[0], span[1], line, col), *_moved(span[2], span[3], line, col))


def _move_positions(tree: Tree, line: int, col: int) -> None:
    """Move every token and rule position of `tree` (parsed from an interpolation's text alone) to the file's
    coordinates; each object once, whatever shares it, and without recursion."""
    seen: set[int] = set()
    stack: list = [tree]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Tree):
            meta = item.meta
            if not getattr(meta, "empty", True) and id(meta) not in seen:
                seen.add(id(meta))
                meta.line, meta.column = _moved(meta.line, meta.column, line, col)
                meta.end_line, meta.end_column = _moved(meta.end_line, meta.end_column, line, col)
            stack.extend(item.children)
        elif isinstance(item, Token) and item.line is not None:
            item.line, item.column = _moved(item.line, item.column, line, col)
            item.end_line, item.end_column = _moved(item.end_line, item.end_column, line, col)
