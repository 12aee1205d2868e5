"""The lexical checks Lark's lexer leaves to sagepy (SPEC §1): invalid characters and unterminated block
comments anywhere in a file, and the decoding of each string literal (escapes, and the interpolations of a
template, which the caller parses).

The grammar lets the lexer skip an invalid character (`BAD_CHAR`) and a block comment like whitespace, so that
one bad character does not end the parse; `lexical_errors` finds them again with the same terminal patterns.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable

from lark import Token

from . import ast as A
from .parse_state import ParseContext, token_span
from .grammar import lark_parser

# A template interpolation's text and the line and column it starts at -> its expression, or None after an error
InterpolationParser = Callable[[str, int, int], "A.Node | None"]

_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "{": "{", "}": "}", "0": "\0"}
_HEX = "0123456789abcdefABCDEF"


# ---------------------------------------------------------------- invalid characters and comments

@functools.lru_cache(maxsize=None)
def skipped_token_scanner() -> re.Pattern:
    """The terminals a skipped token cannot hide in, then the skipped ones: a `//` inside a string is not a
    comment, and `&&&&` is two `&&` tokens, not one with a stray `&`. No other terminal contains a character
    that BAD_CHAR matches, a quote or a `/` followed by `/` or `*`."""
    patterns = {t.name: t.pattern.to_regexp() for t in lark_parser().terminals}
    names = ("STRING", "ANDAND", "LINE_COMMENT", "BLOCK_COMMENT", "BAD_CHAR")
    return re.compile("|".join(f"(?P<{name}>{patterns[name]})" for name in names))


def lexical_errors(text: str, ctx: ParseContext, start: int = 0) -> None:
    """Report every invalid character (E001) and unterminated block comment (E002) of `text` from `start` on."""
    line, line_start = 1, 0
    for match in skipped_token_scanner().finditer(text, start):
        kind = match.lastgroup
        if kind not in ("BAD_CHAR", "BLOCK_COMMENT"):
            continue
        pos = match.start()
        line += text.count("\n", line_start, pos)
        line_start = text.rfind("\n", 0, pos) + 1
        col = pos - line_start + 1
        value = match.group()
        if kind == "BAD_CHAR":
            ctx.error("E001", _bad_char_message(value), (line, col, line, col + 1))
        elif not value.endswith("*/") or len(value) < 4:
            ctx.error("E002", "unterminated block comment", (line, col, line, col + 2))


def _bad_char_message(ch: str) -> str:
    if ch == "#":
        return "invalid character `#` (only `#[` starts an attribute)"
    if ch == "&":
        return "invalid character `&` (did you mean `&&`?)"
    return f"invalid character {ch!r}"


# ---------------------------------------------------------------- string literals

class _Scanner:
    """Walks the raw text of a string token, tracking line and column for error positions."""

    def __init__(self, text: str, line: int, col: int) -> None:
        self.text = text
        self.i = 0
        self.line = line
        self.col = col

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def advance(self) -> str:
        ch = self.text[self.i]
        self.i += 1
        if ch == "\n":
            self.line += 1
            self.col = 1
        else:
            self.col += 1
        return ch

    def pos(self) -> tuple[int, int]:
        return self.line, self.col

    def take_run(self, plain: re.Pattern) -> str:
        """The characters from here that `plain` matches (none of them a newline), consumed at once: a long
        literal costs one regex match per run rather than a method call per character."""
        match = plain.match(self.text, self.i)
        if match is None:
            return self.advance()
        run = match.group()
        self.i = match.end()
        self.col += len(run)
        return run


# Runs of characters that decode to themselves: no escape, no interpolation, no newline (which moves the line).
_PLAIN_DOUBLE = re.compile(r"[^\\{\n]+")
_PLAIN_SINGLE = re.compile(r"[^\\\n]+")


def decode_string(tok: Token, ctx: ParseContext, parse_interpolation: InterpolationParser) -> A.Node:
    """A STRING token as a `Literal` (str value) or, when it interpolates, a `Template`."""
    raw = tok.value
    quote = raw[0]
    span = token_span(tok)
    terminated = len(raw) >= 2 and raw[-1] == quote and not _ends_with_escape(raw[1:-1])
    if not terminated:
        ctx.error("E002", "unterminated string", (tok.line, tok.column, tok.line, tok.column + 1))
        return A.Literal("", span=span)
    sc = _Scanner(raw[:-1], tok.line, tok.column)
    sc.advance()  # opening quote
    plain = _PLAIN_DOUBLE if quote == '"' else _PLAIN_SINGLE
    parts: list[Any] = []
    buf: list[str] = []
    while sc.i < len(sc.text):
        ch = sc.peek()
        if ch == "\\":
            buf.append(_read_escape(sc, ctx))
        elif ch == "{" and quote == '"':
            if buf:
                parts.append("".join(buf))
                buf = []
            expr = _read_interpolation(sc, ctx, parse_interpolation)
            if expr is not None:
                parts.append(expr)
        else:
            buf.append(sc.take_run(plain))
    if buf or not parts:
        parts.append("".join(buf))
    if len(parts) == 1 and isinstance(parts[0], str):
        return A.Literal(parts[0], span=span)
    return A.Template(parts, span=span)


def _ends_with_escape(body: str) -> bool:
    """True when the closing quote is escaped (the token ran to the end of the file)."""
    n = 0
    for ch in reversed(body):
        if ch != "\\":
            break
        n += 1
    return n % 2 == 1


def _read_escape(sc: _Scanner, ctx: ParseContext) -> str:
    """Called with the scanner on the backslash; returns the decoded text ('' after an error)."""
    line, col = sc.pos()
    sc.advance()
    ch = sc.peek()
    if ch == "":
        return ""
    if ch in _SIMPLE_ESCAPES:
        sc.advance()
        return _SIMPLE_ESCAPES[ch]
    if ch == "x":
        sc.advance()
        digits = sc.peek() + sc.peek(1)
        if len(digits) == 2 and all(c in _HEX for c in digits):
            sc.advance()
            sc.advance()
            return chr(int(digits, 16))
        ctx.error("E003", "invalid escape sequence: `\\x` needs two hex digits", (line, col, line, sc.col))
        return ""
    if ch == "u":
        sc.advance()
        if sc.peek() == "{":
            sc.advance()
            digits = ""
            while sc.peek() and sc.peek() in _HEX and len(digits) < 7:
                digits += sc.advance()
            if sc.peek() == "}" and 1 <= len(digits) <= 6:
                sc.advance()
                value = int(digits, 16)
                if value <= 0x10FFFF and not (0xD800 <= value <= 0xDFFF):
                    return chr(value)
                ctx.error("E003", f"invalid escape sequence: U+{value:X} is not a Unicode scalar value",
                          (line, col, line, sc.col))
                return ""
        ctx.error("E003", "invalid escape sequence: `\\u` needs `{` 1–6 hex digits `}`", (line, col, line, sc.col))
        return ""
    sc.advance()
    ctx.error("E003", f"invalid escape sequence `\\{ch}`", (line, col, line, col + 2),
              hint="valid escapes: \\n \\t \\r \\\\ \\\" \\' \\{ \\} \\0 \\xNN \\u{…}")
    return ""


def _read_interpolation(sc: _Scanner, ctx: ParseContext, parse_interpolation: InterpolationParser) -> A.Node | None:
    """Called with the scanner on `{`: finds the matching `}` (a single-quoted string inside may hold braces)."""
    start_line, start_col = sc.pos()
    sc.advance()  # {
    inner_line, inner_col = sc.pos()
    depth = 1
    begin = sc.i
    while sc.i < len(sc.text):
        ch = sc.peek()
        if ch == "'":
            sc.advance()
            while sc.i < len(sc.text) and sc.peek() != "'":
                if sc.peek() == "\\":
                    sc.advance()
                    if sc.i >= len(sc.text):
                        break
                sc.advance()
            if sc.i < len(sc.text):
                sc.advance()
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        sc.advance()
    if depth != 0:
        ctx.error("E007", "invalid interpolation: unterminated `{`", (start_line, start_col, start_line, start_col + 1),
                  hint="write `\\{` for a literal brace")
        return None
    text = sc.text[begin:sc.i]
    sc.advance()  # }
    if not text.strip():
        ctx.error("E007", "invalid interpolation: empty `{}`", (start_line, start_col, start_line, start_col + 2),
                  hint="write `\\{\\}` for literal braces, or use a single-quoted string")
        return None
    return parse_interpolation(text, inner_line, inner_col)
