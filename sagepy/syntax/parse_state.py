"""The state of one parse: its file, the diagnostics found so far, and number literals waiting for a unary minus.

Each parse (and each template interpolation, parsed on its own) gets a fresh `ParseContext`, handed to every
step that reports; nothing about a parse outlives it or is shared between parses.
"""
from __future__ import annotations

from typing import Any

from lark import Token

from ..diagnostics import Diagnostic
from ..core.types import INT_MAX


# Longer digit strings are out of Int's range whatever their value; Python's int() refuses those over 4,300
# digits, so they are not converted
_INT_DIGITS_MAX = len(str(INT_MAX + 1))
OUT_OF_RANGE = 1 << 64


def int_literal(text: str) -> int:
    """The value of an INT token; OUT_OF_RANGE (E004 follows) for one too long to be an Int."""
    digits = text.lstrip("0")   # leading zeros do not count, and int() would count them against its limit
    return int(digits or "0") if len(digits) <= _INT_DIGITS_MAX else OUT_OF_RANGE


class ParseContext:
    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[Diagnostic] = []
        # Int literals above INT_MAX, by id: `-9223372036854775808` is valid, so the error waits for `neg`
        self.big_ints: dict[int, Any] = {}

    def error(self, code: str, message: str, span: tuple, hint: str | None = None,
              notes: list[str] | None = None) -> None:
        self.errors.append(Diagnostic(code, message, self.path, span, hint=hint, notes=notes))

    def report_big_ints(self) -> None:
        """The Int literals no unary minus claimed are out of range (E004)."""
        for node in self.big_ints.values():
            self.error("E004", "integer literal out of the 64-bit range", node.span,
                       hint="Int values lie between -9223372036854775808 and 9223372036854775807")
        self.big_ints.clear()


def token_span(tok: Token) -> tuple:
    return (tok.line, tok.column, tok.end_line, tok.end_column)


def meta_span(meta: Any) -> tuple | None:
    """The span of a rule's match, or None for a rule that matched nothing."""
    if getattr(meta, "empty", True):
        return None
    return (meta.line, meta.column, meta.end_line, meta.end_column)
