"""What is still reported after a syntax error (SPEC §13.3).

Lark stops at the first syntax error, so the AST is never built for that file. Two things follow here: the
lexical errors of every string and number literal, which the AST builder would otherwise have found
(`scan_literals`), and further syntax errors, found by parsing again from the next line that starts an item
(`report_later_syntax_errors`). How each syntax error is worded and placed is `describe.py`'s job.
"""
from __future__ import annotations

import re
from typing import Callable

from lark import Token
from lark.exceptions import UnexpectedInput, UnexpectedToken

from ..diagnostics import Diagnostic
from .parse_state import INT_MAX, ParseContext, int_literal, token_span
from .describe import report_syntax_error
from .grammar import lark_parser

# `test` and `handler` are names too (SPEC §1.2): they start an item only in the shape of one
ITEM_START = re.compile(r"^(?:pub\s+)?(?:fn|agent|record|enum|const|tool|supervisor|run|mod|use|extern|"
                         r"protocol)\b|^(?:@|#\[)|^test\s*\"|^eval\s*[\"'r]|"
                         r"^(?:pub\s+)?handler\s+\w+\s+handles\b", re.M)
_MAX_RESYNCS = 20


def report_later_syntax_errors(ctx: ParseContext, text: str, exc: UnexpectedInput) -> None:
    """Recovery for more than the first syntax error: parse again from the next line that starts an item at
    column 1, with everything before it blanked (newlines kept, so positions stay true), until the rest of the
    file parses or a bound is reached."""
    line = getattr(exc, "line", None) or 1
    for _ in range(_MAX_RESYNCS):
        offset = _offset_of_line(text, line + 1)
        match = ITEM_START.search(text, offset) if offset is not None else None
        if match is None:
            return
        start = match.start()
        blanked = "".join(ch if ch == "\n" else " " for ch in text[:start]) + text[start:]
        try:
            lark_parser().parse(blanked, start="program")
            return
        except UnexpectedInput as later:
            if isinstance(later, UnexpectedToken) and later.token.type == "$END" and \
                    any(d.code == "E006" for d in ctx.errors):
                return
            report_syntax_error(ctx, later, blanked)
            line = getattr(later, "line", None) or line + 1


def _offset_of_line(text: str, line: int) -> int | None:
    offset = 0
    for _ in range(line - 1):
        offset = text.find("\n", offset)
        if offset < 0:
            return None
        offset += 1
    return offset


def scan_literals(ctx: ParseContext, text: str, decode_string: Callable[[Token], object]) -> None:
    """After a syntax error, check every string and number token: their errors (E002/E003/E004/E007) must all
    be reported even though the parser stopped early."""
    previous = None
    try:
        for tok in lark_parser().lex(text):
            if tok.type == "STRING":
                decode_string(tok)
            elif tok.type == "INT" and int_literal(tok.value) > INT_MAX:
                if not (int_literal(tok.value) == INT_MAX + 1 and previous is not None and previous.type == "MINUS"):
                    ctx.error("E004", "integer literal out of the 64-bit range", token_span(tok))
            previous = tok
    except UnexpectedInput:
        return


def dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per code and span: recovery may find the same error twice."""
    seen: set = set()
    out = []
    for d in diags:
        key = (d.code, d.span)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out
