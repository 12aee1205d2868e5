"""Source text -> AST (SPEC §1–2).

`parse_source` runs the Lark parser (`grammar.py`) over a file, then `ASTBuilder` turns the parse tree into AST
nodes; `sagepy.syntax.cache` avoids importing this module at all when a file's AST is already cached.

Errors are collected, not raised one at a time: every invalid character (E001), unterminated string or comment
(E002), bad escape (E003), out-of-range number (E004) and bad interpolation (E007) is reported (`lexical.py`),
and after a syntax error (E005/E006) parsing resumes at the next item to find more (`recovery.py`). All state
of a parse lives in its `ParseContext`.
"""
from __future__ import annotations

import gc

from lark.exceptions import UnexpectedInput, VisitError

from ..diagnostics import Diagnostic
from .parse_state import ParseContext
from .expression_rules import ExpressionRules
from .grammar import lark_parser
from .item_rules import ItemRules
from .lexical import lexical_errors
from .nesting import NESTING_MESSAGE, first_token_too_deep
from .describe import report_syntax_error
from .doc_comments import attach_doc_comments
from .recovery import dedupe, report_later_syntax_errors, scan_literals


class ASTBuilder(ItemRules, ExpressionRules):
    """Parse tree -> AST for one parse (the rules keep that parse's `ParseContext`)."""


def parse_source(text: str, path: str) -> tuple[list, list[Diagnostic]]:
    """Parse a whole file. Returns (items, diagnostics); items is [] when the file has syntax errors.

    The cyclic garbage collector is paused meanwhile: a parse allocates millions of small objects that all stay
    alive (the parse tree, then the AST), so every collection during it would scan a heap that only grows and
    free nothing; they cost about half of a long file's parse time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _parse(text, path)
    finally:
        if collecting:
            gc.enable()


def _parse(text: str, path: str) -> tuple[list, list[Diagnostic]]:
    ctx = ParseContext(path)
    builder = ASTBuilder(ctx)
    lexical_errors(text, ctx)
    items: list = []
    try:
        tree = lark_parser().parse(text, start="program")
        too_deep = first_token_too_deep(tree)
        if too_deep is None:
            items = builder.transform(tree)
            attach_doc_comments(items, text)
        else:
            ctx.error("E005", NESTING_MESSAGE, too_deep)
            scan_literals(ctx, text, builder.decode_string)
    except UnexpectedInput as exc:
        scan_literals(ctx, text, builder.decode_string)
        if not any(d.code == "E002" for d in ctx.errors):
            report_syntax_error(ctx, exc, text)
            report_later_syntax_errors(ctx, text, exc)
        items = []
    except VisitError as exc:
        raise exc.orig_exc from None
    ctx.report_big_ints()
    return items, dedupe(ctx.errors)
