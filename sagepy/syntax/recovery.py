"""Syntax errors (SPEC §13.3): how an unexpected token is described, and what is still reported after one.

Lark stops at the first syntax error, so the AST is never built for that file. Three things follow here: the
error itself (E005, or E006 at the end of the file); the lexical errors of every string and number literal,
which the AST builder would otherwise have found (`scan_literals`); and further syntax errors, found by parsing
again from the next line that starts an item (`report_later_syntax_errors`).
"""
from __future__ import annotations

import re
from typing import Callable

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..diagnostics import Diagnostic
from .context import INT_MAX, ParseContext, token_span
from .grammar import lark_parser, terminal_patterns

_TOKEN_NAMES = {"IDENT": "identifier", "INT": "integer", "FLOAT": "float", "STRING": "string", "$END": "end of file"}

_ITEM_START = re.compile(r"^(?:pub\s+)?(?:fn|agent|record|enum|const|tool|supervisor|test|run|mod|use|extern|"
                         r"protocol|handler|@|#\[)\b|^(?:@|#\[)", re.M)
_MAX_RESYNCS = 20


def describe_unexpected(exc: UnexpectedInput) -> str:
    """`unexpected <token>, expected one of: <tokens>` (E005/E006/E007)."""
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            got = "end of file"
        elif tok.type in ("IDENT", "INT", "FLOAT", "STRING"):
            got = f"{_TOKEN_NAMES[tok.type]} `{tok.value}`"
        else:
            got = f"`{tok.value}`"
        expected = sorted({_token_display(e) for e in exc.expected})
        shown = ", ".join(expected[:12]) + (", …" if len(expected) > 12 else "")
        return f"unexpected {got}, expected one of: {shown}"
    if isinstance(exc, UnexpectedCharacters):
        return f"unexpected character {exc.char!r}"
    if isinstance(exc, UnexpectedEOF):
        return "unexpected end of file"
    return str(exc)


def _token_display(name: str) -> str:
    if name in _TOKEN_NAMES:
        return _TOKEN_NAMES[name]
    text = terminal_patterns().get(name)
    if text is not None:
        return f"`{text}`"
    return name


def report_syntax_error(ctx: ParseContext, exc: UnexpectedInput, text: str) -> None:
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        lines = text.split("\n")
        line = len(lines)
        col = len(lines[-1]) + 1
        if not lines[-1] and line > 1:
            line -= 1
            col = len(lines[line - 1]) + 1
        ctx.error("E006", describe_unexpected(exc), (line, col, line, col + 1))
        return
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        span = (tok.line, tok.column, tok.end_line or tok.line, tok.end_column or tok.column + 1)
        hint = None
        if tok.type in ("EQ", "NE", "LT", "GT", "LE", "GE"):
            hint = "comparisons do not chain: combine them with `&&`"
        ctx.error("E005", describe_unexpected(exc), span, hint=hint)
        return
    line = getattr(exc, "line", 1) or 1
    col = getattr(exc, "column", 1) or 1
    if any(d.span and d.span[0] == line and d.span[1] == col for d in ctx.errors):
        return
    ctx.error("E005", describe_unexpected(exc), (line, col, line, col + 1))


def report_later_syntax_errors(ctx: ParseContext, text: str, exc: UnexpectedInput) -> None:
    """Recovery for more than the first syntax error: parse again from the next line that starts an item at
    column 1, with everything before it blanked (newlines kept, so positions stay true), until the rest of the
    file parses or a bound is reached."""
    line = getattr(exc, "line", None) or 1
    for _ in range(_MAX_RESYNCS):
        offset = _offset_of_line(text, line + 1)
        match = _ITEM_START.search(text, offset) if offset is not None else None
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
            elif tok.type == "INT" and int(tok.value) > INT_MAX:
                if not (int(tok.value) == INT_MAX + 1 and previous is not None and previous.type == "MINUS"):
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
