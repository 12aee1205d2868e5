"""How a syntax error is worded and where it is placed (SPEC §13.3): where a person looks for the mistake.

- a reserved word used as a name: `` `if` is a keyword and cannot be used as a name ``;
- a missing `;`: at the end of the token before it, with "add `;` here", not at the next line's first token;
- an unclosed `(`, `[` or `{`: at its opening (E006 when the file ends inside it);
- otherwise `unexpected <token>, expected <what>`, where a set of tokens that can start an expression, a
  statement, a type or an item is named as such ("expected an expression") instead of listed.
"""
from __future__ import annotations

from copy import copy
from typing import Iterator

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .parse_state import ParseContext, token_span
from .grammar import lark_parser, terminal_patterns

_TOKEN_NAMES = {"IDENT": "identifier", "INT": "integer", "FLOAT": "float", "STRING": "string",
                "$END": "end of file", "_MOCK": "`mock`",
                "_SCORE": "`score`", "_REPLAY": "`replay`", "_EVAL": "`eval`"}

_EXPRESSION_STARTS = frozenset({
    "IDENT", "INT", "FLOAT", "STRING", "(", "[", "{", "true", "false", "self", "-", "!", "try", "await", "fail",
    "catch", "|", "||", "divine", "infer", "summon", "send", "receive", "reply", "yield", "trace", "retry",
    "match", "Option", "Result"})
_STATEMENT_STARTS = frozenset({"let", "if", "for", "while", "loop", "break", "continue", "return", "span",
                               "checkpoint", "_MOCK", "_SCORE", "_REPLAY", ";"})
_TYPE_WORDS = frozenset({"Int", "Float", "Bool", "String", "Unit", "Error", "List", "Option", "Oracle", "Map",
                         "Result", "Agent", "Fn"})
_TYPE_STARTS = _TYPE_WORDS | {"(", "IDENT"}
_ITEM_STARTS = frozenset({"pub", "mod", "use", "record", "enum", "const", "tool", "protocol", "handler", "agent",
                          "supervisor", "fn", "extern", "test", "run", "@", "#[", "_EVAL"})
# What may follow a complete expression: when an operator is expected, these are left out of the message.
_CONTINUATIONS = frozenset({"||", "&&", "==", "!=", "<", ">", "<=", ">=", "++", "+", "-", "*", "/", "%", ".",
                            "(", "catch", "timeout"})
_OPENERS = {"(": ")", "[": "]", "{": "}", "#[": "]"}
_CLOSERS = frozenset({")", "]", "}"})
_TERMINAL_OF = {";": "SEMICOLON", ")": "RPAR", "]": "RSQB", "}": "RBRACE"}


def describe_unexpected(exc: UnexpectedInput) -> str:
    """`unexpected <token>, expected <what>` (E005/E006/E007)."""
    if isinstance(exc, UnexpectedToken):
        return f"unexpected {_describe_token(exc.token)}, expected {describe_expected(_acceptable(exc))}"
    if isinstance(exc, UnexpectedCharacters):
        return f"unexpected character {exc.char!r}"
    if isinstance(exc, UnexpectedEOF):
        return "unexpected end of file"
    return str(exc)


def _acceptable(exc: UnexpectedToken) -> set[str]:
    """The terminals the parser could really shift here. `exc.expected` is the LALR state's lookahead set,
    which merged states widen to nearly everything that may follow an expression anywhere."""
    parser = getattr(exc, "interactive_parser", None)
    if parser is None:
        return set(exc.expected)
    return set(parser.accepts()) or set(exc.expected)


def describe_expected(names: set[str]) -> str:
    texts = {_text(n) for n in names}
    phrases = []
    if "let" in texts:
        phrases.append("a statement")
        texts -= _STATEMENT_STARTS | _EXPRESSION_STARTS
    elif "INT" in texts:
        phrases.append("an expression")
        texts -= _EXPRESSION_STARTS
    elif "Int" in texts:
        phrases.append("a type")
        texts -= _TYPE_STARTS
    elif "fn" in texts and "agent" in texts:
        phrases.append("an item")
        texts -= _ITEM_STARTS
    if texts & {"||", "&&", "+", "."}:
        texts -= _CONTINUATIONS
    parts = phrases + sorted(_display(t) for t in texts)
    if not parts:   # Lark lists nothing after a whole expression inside `{…}`
        return "an operator or the end of the expression"
    if len(parts) == 1:
        return parts[0]
    if len(parts) <= 4:
        return ", ".join(parts[:-1]) + " or " + parts[-1]
    return "one of: " + ", ".join(parts[:8]) + (", …" if len(parts) > 8 else "")


def _text(name: str) -> str:
    """A terminal's own text (`LPAR` -> `(`), or its name for the terminals that are not fixed strings."""
    if name in _TOKEN_NAMES:
        return name
    return terminal_patterns().get(name, name)


def _display(text: str) -> str:
    return _TOKEN_NAMES.get(text, f"`{text}`")


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type in ("IDENT", "INT", "FLOAT", "STRING"):
        return f"{_TOKEN_NAMES[tok.type]} `{tok.value}`"
    return f"`{tok.value}`"


def report_syntax_error(ctx: ParseContext, exc: UnexpectedInput, text: str) -> None:
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        _report_end_of_file(ctx, exc, text)
        return
    if isinstance(exc, UnexpectedToken):
        _report_unexpected_token(ctx, exc, text)
        return
    line = getattr(exc, "line", 1) or 1
    col = getattr(exc, "column", 1) or 1
    if any(d.span and d.span[0] == line and d.span[1] == col for d in ctx.errors):
        return
    ctx.error("E005", describe_unexpected(exc), (line, col, line, col + 1))


def _report_end_of_file(ctx: ParseContext, exc: UnexpectedToken, text: str) -> None:
    scan = _BracketScan(text, len(text))
    opener = scan.unclosed()
    if opener is not None:
        ctx.error("E006", f"unclosed `{opener.value}`: the file ends before its `{_OPENERS[opener.value]}`",
                  token_span(opener), hint=f"add the matching `{_OPENERS[opener.value]}`")
        return
    if "SEMICOLON" in _acceptable(exc) and scan.previous is not None:
        ctx.error("E006", "missing `;` at the end of the file", _just_after(scan.previous), hint="add `;` here")
        return
    lines = text.split("\n")
    line = len(lines)
    col = len(lines[-1]) + 1
    if not lines[-1] and line > 1:
        line -= 1
        col = len(lines[line - 1]) + 1
    ctx.error("E006", describe_unexpected(exc), (line, col, line, col + 1))


def _report_unexpected_token(ctx: ParseContext, exc: UnexpectedToken, text: str) -> None:
    tok = exc.token
    expected = {_text(n) for n in _acceptable(exc)}
    scan = _BracketScan(text, tok.start_pos)
    previous = scan.previous
    on_a_later_line = previous is not None and tok.line > previous.end_line
    opener = scan.unclosed()
    if opener is not None and on_a_later_line and \
            (_fits_after(exc, _OPENERS[opener.value]) or _fits_after(exc, _OPENERS[opener.value], ";")):
        closer = _OPENERS[opener.value]
        ctx.error("E005", f"unclosed `{opener.value}`", token_span(opener), hint=f"add the matching `{closer}`",
                  notes=[f"expected `{closer}` before {_describe_token(tok)} at {tok.line}:{tok.column}"])
        return
    if on_a_later_line and _fits_after(exc, ";"):
        ctx.error("E005", f"missing `;` before {_describe_token(tok)}", _just_after(previous),
                  hint="add `;` here")
        return
    # where a name could stand (not at a statement's start, where a misplaced `else` is likelier than a name)
    if _is_word(tok) and "IDENT" in expected and "let" not in expected:
        ctx.error("E005", f"`{tok.value}` is a keyword and cannot be used as a name", token_span(tok),
                  hint=f"rename it, e.g. `{tok.value}_`")
        return
    hint = None
    if tok.type in ("EQ", "NE", "LT", "GT", "LE", "GE"):
        hint = "comparisons do not chain: combine them with `&&`"
    ctx.error("E005", describe_unexpected(exc), token_span(tok), hint=hint)


def _fits_after(exc: UnexpectedToken, *inserted: str) -> bool:
    """Whether the unexpected token would be accepted had the `inserted` tokens (`;`, closing brackets) stood
    before it: then they are what is missing."""
    attempt = getattr(exc, "interactive_parser", None)
    if attempt is None:
        return False
    # The values are not copied (Lark's default deep copy recurses once per level of a deeply nested input,
    # past Python's recursion limit), so no callback may build on them: the copy runs without callbacks.
    attempt = attempt.copy(deepcopy_values=False)
    conf = copy(attempt.parser_state.parse_conf)
    conf.callbacks = {}
    attempt.parser_state.parse_conf = conf
    for text in inserted:
        name = _TERMINAL_OF[text]
        if name not in attempt.accepts():
            return False
        attempt.feed_token(Token(name, text))
    return exc.token.type in attempt.accepts()


def _is_word(tok: Token) -> bool:
    return tok.type != "IDENT" and isinstance(tok.value, str) and tok.value[:1].isalpha() and \
        tok.value.replace("_", "a").isalnum()


def _just_after(tok: Token) -> tuple:
    return (tok.end_line, tok.end_column, tok.end_line, tok.end_column + 1)


class _BracketScan:
    """The tokens before an offset: the last of them, and the brackets still open there.

    Which `{` lost its `}`: the first one, after the innermost `{` still open, whose `}` stands first on its line
    with another indentation than the `{`'s line (that `}` belonged to an enclosing block); else the innermost."""

    def __init__(self, text: str, end: int) -> None:
        self.previous: Token | None = None
        self.open: list[Token] = []
        self.misindented: list[Token] = []
        lines = text.split("\n")
        for tok in _tokens(text):
            if tok.start_pos >= end:
                break
            self.previous = tok
            if tok.value in _OPENERS:
                self.open.append(tok)
            elif tok.value in _CLOSERS and self.open:
                opener = self.open.pop()
                if opener.value == "{" and _first_on_line(tok, lines) and \
                        _indent(lines[tok.line - 1]) != _indent(lines[opener.line - 1]):
                    self.misindented.append(opener)

    def unclosed(self) -> Token | None:
        if not self.open:
            return None
        innermost = self.open[-1]
        if innermost.value == "{":
            for opener in self.misindented:
                if opener.start_pos > innermost.start_pos:
                    return opener
        return innermost


def _tokens(text: str) -> Iterator[Token]:
    try:
        yield from lark_parser().lex(text)
    except UnexpectedInput:
        return


def _first_on_line(tok: Token, lines: list[str]) -> bool:
    return not lines[tok.line - 1][:tok.column - 1].strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))
