"""Source text -> AST (SPEC §1–2).

The Lark LALR parser (contextual lexer) is built once per process from grammar/sage.lark and cached on disk
by Lark; `sagepy.syntax.cache` avoids importing this module at all when a file's AST is already cached.
The tree is turned into AST nodes by `ASTBuilder`, run inline by the parser. String literals are decoded
here, and template interpolations are parsed by a nested call with the `expr` start symbol.

Errors are collected, not raised one at a time: the lexer reports every invalid character (E001),
unterminated string or comment (E002), bad escape (E003), out-of-range number (E004) and bad interpolation
(E007); the parser reports the first syntax error (E005/E006) of the file.
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from .. import resources
from ..diagnostics import Diagnostic
from . import ast as A

INT_MAX = (1 << 63) - 1


class _Context:
    """Per-parse state: the file, its diagnostics, and number literals waiting for a unary minus."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[Diagnostic] = []
        self.big_ints: dict[int, A.Node] = {}

    def error(self, code: str, message: str, span: tuple, hint: str | None = None) -> None:
        self.errors.append(Diagnostic(code, message, self.path, span, hint=hint))


_contexts: list[_Context] = []
_parser: Lark | None = None


def _ctx() -> _Context:
    return _contexts[-1]


def _tok_span(tok: Token) -> tuple:
    return (tok.line, tok.column, tok.end_line, tok.end_column)


def _meta_span(meta: Any) -> tuple | None:
    if getattr(meta, "empty", True):
        return None
    return (meta.line, meta.column, meta.end_line, meta.end_column)


# ---------------------------------------------------------------- lexer callbacks

def _on_bad_char(tok: Token) -> Token:
    ch = tok.value
    if ch == "#":
        msg = "invalid character `#` (only `#[` starts an attribute)"
    elif ch == "&":
        msg = "invalid character `&` (did you mean `&&`?)"
    else:
        msg = f"invalid character {ch!r}"
    _ctx().error("E001", msg, _tok_span(tok))
    return tok


def _on_block_comment(tok: Token) -> Token:
    if not tok.value.endswith("*/") or len(tok.value) < 4:
        _ctx().error("E002", "unterminated block comment", (tok.line, tok.column, tok.line, tok.column + 2))
    return tok


def get_parser() -> Lark:
    global _parser
    if _parser is None:
        grammar_path = resources.grammar_file()
        text = grammar_path.read_text(encoding="utf-8")
        cache_dir = _cache_dir()
        cache_file: Any = False
        if cache_dir is not None:
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            cache_file = os.path.join(cache_dir, f"grammar-{digest}.lark-cache")
        _parser = Lark(text, parser="lalr", lexer="contextual", start=["program", "expr"],
                       propagate_positions=True, maybe_placeholders=True, cache=cache_file,
                       lexer_callbacks={"BAD_CHAR": _on_bad_char, "BLOCK_COMMENT": _on_block_comment})
    return _parser


def _cache_dir() -> str | None:
    """Where Lark's serialised parser lives: beside the package like bytecode (`__pycache__`), so that an empty
    AST cache does not also mean rebuilding the parser; else the user cache directory."""
    from .cache import cache_root
    candidates = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__"), cache_root()]
    for directory in candidates:
        if directory is None:
            continue
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError:
            continue
        if os.access(directory, os.W_OK):
            return directory
    return None


# ---------------------------------------------------------------- strings

_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "{": "{", "}": "}", "0": "\0"}


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


def _read_escape(sc: _Scanner, ctx: _Context) -> str:
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
        if len(digits) == 2 and all(c in "0123456789abcdefABCDEF" for c in digits):
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
            while sc.peek() and sc.peek() in "0123456789abcdefABCDEF" and len(digits) < 7:
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


def _decode_string(tok: Token) -> A.Node:
    ctx = _ctx()
    raw = tok.value
    quote = raw[0]
    span = _tok_span(tok)
    terminated = len(raw) >= 2 and raw[-1] == quote and not _ends_with_escape(raw[1:-1])
    if not terminated:
        ctx.error("E002", "unterminated string", (tok.line, tok.column, tok.line, tok.column + 1))
        return A.Literal("", span=span)
    sc = _Scanner(raw[:-1], tok.line, tok.column)
    sc.advance()  # opening quote
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
            expr = _read_interpolation(sc, ctx)
            if expr is not None:
                parts.append(expr)
        else:
            buf.append(sc.advance())
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


def _read_interpolation(sc: _Scanner, ctx: _Context) -> A.Node | None:
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
    padded = "\n" * (inner_line - 1) + " " * (inner_col - 1) + text
    sub = _Context(ctx.path)
    _contexts.append(sub)
    try:
        node = _BUILDER.transform(get_parser().parse(padded, start="expr"))
    except UnexpectedInput as exc:
        line = getattr(exc, "line", inner_line) or inner_line
        col = getattr(exc, "column", inner_col) or inner_col
        if line < 1 or col < 1:
            line, col = inner_line, inner_col
        ctx.error("E007", f"invalid interpolation: {_describe_unexpected(exc)}", (line, col, line, col + 1))
        return None
    except VisitError as exc:
        raise exc.orig_exc from None
    finally:
        _contexts.pop()
    for d in sub.errors:
        if d.code in ("E005", "E006"):
            d.code = "E007"
            d.message = "invalid interpolation: " + d.message
        ctx.errors.append(d)
    _flush_big_ints(sub)
    ctx.errors.extend(e for e in sub.errors if e not in ctx.errors)
    return node


# ---------------------------------------------------------------- tree -> AST

def _tokens(children: list, *types: str) -> list:
    return [c for c in children if isinstance(c, Token) and c.type in types]


def _nodes(children: list) -> list:
    return [c for c in children if c is not None and not isinstance(c, Token)]


def _int_value(tok: Token) -> int:
    return int(tok.value)


def _type_prim(name: str):
    def build(self, meta, children):
        return A.TypeExpr("prim", name, [], span=_meta_span(meta))
    return build


def _binop(self, meta, children):
    left, op, right = children
    return A.Binary(op.value, left, right, span=_meta_span(meta))


@v_args(meta=True)
class ASTBuilder(Transformer):
    # ---- program and items
    def program(self, meta, children):
        items = [c for c in children if c is not None]
        ctx = _ctx()
        runs = [i for i in items if isinstance(i, A.RunDecl)]
        for r in runs:
            if r is not items[-1] or r is not runs[0]:
                ctx.error("E008", "misplaced `run`: it must be the last item of the file, and appear once", r.span)
        return items

    def item(self, meta, children):
        if len(children) == 1:
            return children[0]
        pub, body = children
        if pub is not None and hasattr(body, "pub"):
            body.pub = True
        return body

    def misplaced_attribute(self, meta, c):
        for attr in c[:-1]:
            _ctx().error("E009", f"attribute `#[{attr.name}]` is only allowed on a tool function", attr.span)
        return c[-1]

    def mod_decl(self, meta, c):
        return A.ModDecl(c[0].value, False, span=_meta_span(meta))

    def use_decl(self, meta, c):
        path, kind, alias, names = c[0]
        if kind in ("group", "glob") and not path:
            _ctx().error("E005", "a `use` group or glob needs a module path", _meta_span(meta))
        return A.UseDecl(path, kind, alias, names, False, span=_meta_span(meta))

    def use_segment(self, meta, c):
        path, kind, alias, names = c[1]
        return ([c[0].value] + path, kind, alias, names)

    def use_leaf(self, meta, c):
        return ([c[0].value], "leaf", c[1].value if c[1] is not None else None, [])

    def use_group(self, meta, c):
        return ([], "group", None, [n for n in c if n is not None])

    def use_glob(self, meta, c):
        return ([], "glob", None, [])

    def use_name(self, meta, c):
        return (c[0].value, c[1].value if c[1] is not None else None)

    def type_params(self, meta, c):
        return [t.value for t in c if t is not None]

    def record_decl(self, meta, c):
        fields = [f for f in c[2:] if isinstance(f, A.FieldDecl)]
        return A.RecordDecl(c[0].value, c[1] or [], fields, False, span=_meta_span(meta))

    def field_decl(self, meta, c):
        return A.FieldDecl(c[0], c[1], span=_meta_span(meta))

    def enum_decl(self, meta, c):
        variants = [v for v in c[2:] if isinstance(v, A.VariantDecl)]
        return A.EnumDecl(c[0].value, c[1] or [], variants, False, span=_meta_span(meta))

    def variant_decl(self, meta, c):
        return A.VariantDecl(c[0].value, c[1], span=_meta_span(meta))

    def const_decl(self, meta, c):
        return A.ConstDecl(c[0].value, c[1], c[2], False, span=_meta_span(meta))

    def fn_decl(self, meta, c):
        name, tparams, params, ret, fails, body = c
        return A.FnDecl(name.value, tparams or [], params or [], ret, fails is not None, body, False, False,
                        span=_meta_span(meta))

    def extern_fn(self, meta, c):
        name, tparams, params, ret, fails = c[:5]
        return A.FnDecl(name.value, tparams or [], params or [], ret, fails is not None, None, True, False,
                        span=_meta_span(meta))

    def params(self, meta, c):
        return [p for p in c if p is not None]

    def param(self, meta, c):
        return A.Param(c[0].value, c[1], span=_meta_span(meta))

    def tool_decl(self, meta, c):
        return A.ToolDecl(c[0].value, [f for f in c[1:] if f is not None], False, span=_meta_span(meta))

    def tool_fn(self, meta, c):
        attrs = [a for a in c if isinstance(a, A.Attribute)]
        rest = [x for x in c if not isinstance(x, A.Attribute)]
        name = rest[0]
        params = [p for p in rest[1:] if isinstance(p, A.Param)]
        ret = [x for x in rest[1:] if isinstance(x, A.TypeExpr)][-1]
        return A.ToolFn(name, params, ret, attrs, span=_meta_span(meta))

    def tool_param(self, meta, c):
        return A.Param(c[0], c[1], span=_meta_span(meta))

    def attribute(self, meta, c):
        name = c[0].value
        value = _decode_string(c[1])
        span = _meta_span(meta)
        if name != "mcp_name":
            _ctx().error("E009", f"unknown attribute `{name}` (only `mcp_name` is defined)", span)
        if isinstance(value, A.Template):
            _ctx().error("E009", "attribute value must be a plain string", span)
            value = A.Literal("", span=span)
        return A.Attribute(name, value.value, span=span)

    def agent_decl(self, meta, c):
        name = c[0].value
        receives, follows = c[1], c[2]
        uses, fields, handlers = [], [], []
        for it in c[3:]:
            if isinstance(it, list):
                uses.extend(it)
            elif isinstance(it, A.AgentField):
                fields.append(it)
            elif isinstance(it, A.Handler):
                handlers.append(it)
        return A.AgentDecl(name, receives, follows or [], uses, fields, handlers, False, span=_meta_span(meta))

    def receives(self, meta, c):
        return c[0]

    def follows(self, meta, c):
        return [x for x in c if x is not None]

    def follow_role(self, meta, c):
        return (c[0].value, c[1].value, _meta_span(meta))

    def agent_use(self, meta, c):
        return [(t.value, _tok_span(t)) for t in c if isinstance(t, Token)]

    def agent_field(self, meta, c):
        annotation, name, type_ = c[0], c[1], c[2]
        span = _meta_span(meta)
        if annotation is not None and annotation[0] != "persistent":
            _ctx().error("E009", f"unknown annotation `@{annotation[0]}` on a field (only `@persistent`)",
                         annotation[1])
        return A.AgentField(name.value, type_, annotation[0] if annotation else None, span=span)

    def annotation(self, meta, c):
        return (c[0].value, _meta_span(meta))

    def _handler(kind):
        def build(self, meta, c):
            return A.Handler(kind, None, None, c[0], span=_meta_span(meta))
        return build

    on_start = _handler("start")
    on_waking = _handler("waking")
    on_pause = _handler("pause")
    on_resume = _handler("resume")
    on_stop = _handler("stop")
    on_resting = _handler("resting")

    def on_message(self, meta, c):
        return A.Handler("message", c[0].value, c[1], c[2], span=_meta_span(meta))

    def on_error(self, meta, c):
        return A.Handler("error", c[0].value, c[1], c[2], span=_meta_span(meta))

    def supervisor_decl(self, meta, c):
        name, strategy = c[0], c[1]
        span = _meta_span(meta)
        if strategy.value not in ("OneForOne", "OneForAll", "RestForOne"):
            _ctx().error("E005", f"unknown strategy `{strategy.value}`, expected OneForOne, OneForAll or RestForOne",
                         _tok_span(strategy))
        children = [x for x in c[2:] if isinstance(x, A.ChildSpec)]
        return A.SupervisorDecl(name.value, strategy.value, children, False, span=span)

    def child_spec(self, meta, c):
        name = c[0].value
        restart = c[1]
        handlers = [x for x in c[2:] if isinstance(x, tuple) and x[0] == "handler"]
        fields = [x[1:] for x in c[2:] if isinstance(x, tuple) and x[0] == "field"]
        return A.ChildSpec(name, restart or "Permanent", [(h[1], h[2]) for h in handlers], fields,
                           span=_meta_span(meta))

    def restart_spec(self, meta, c):
        if c[0].value not in ("Permanent", "Transient", "Temporary"):
            _ctx().error("E005", f"unknown restart policy `{c[0].value}`, expected Permanent, Transient or Temporary",
                         _tok_span(c[0]))
        return c[0].value

    def child_handler(self, meta, c):
        return ("handler", c[0].value, c[1].value)

    def child_field(self, meta, c):
        return ("field", c[0].value, c[1], _meta_span(meta))

    def protocol_decl(self, meta, c):
        return A.ProtocolDecl(c[0].value, [x for x in c[1:] if x is not None], False, span=_meta_span(meta))

    def protocol_step(self, meta, c):
        return (c[0].value, c[1].value, c[2])

    def effect_handler(self, meta, c):
        entries = [x for x in c[2:] if x is not None]
        return A.EffectHandlerDecl(c[0].value, c[1].value, entries, False, span=_meta_span(meta))

    def handler_entry(self, meta, c):
        return (c[0].value, c[1], _meta_span(meta))

    def literal(self, meta, c):
        toks = [t for t in c if isinstance(t, Token)]
        if isinstance(c[0], A.Literal):
            return c[0]
        if len(toks) == 2:
            tok = toks[1]
            value = -int(tok.value) if tok.type == "INT" else -float(tok.value)
            return A.Literal(value, span=_meta_span(meta))
        tok = toks[0]
        if tok.type == "INT":
            return self._int(tok, _meta_span(meta))
        if tok.type == "FLOAT":
            return A.Literal(float(tok.value), span=_meta_span(meta))
        return _decode_string(tok)

    def test_decl(self, meta, c):
        annotation, name, body = c
        span = _meta_span(meta)
        if annotation is not None and annotation[0] != "serial":
            _ctx().error("E009", f"unknown annotation `@{annotation[0]}` on a test (only `@serial`)", annotation[1])
        return A.TestDecl(name.value[1:-1], annotation[0] if annotation else None, body, span=span)

    def run_decl(self, meta, c):
        return A.RunDecl(c[0].value, span=_meta_span(meta))

    # ---- types
    t_int = _type_prim("Int")
    t_float = _type_prim("Float")
    t_bool = _type_prim("Bool")
    t_string = _type_prim("String")
    t_unit = _type_prim("Unit")
    t_error = _type_prim("Error")

    def _tcons(kind):
        def build(self, meta, c):
            return A.TypeExpr(kind, kind, [x for x in c if x is not None], span=_meta_span(meta))
        return build

    t_list = _tcons("list")
    t_option = _tcons("option")
    t_oracle = _tcons("oracle")
    t_map = _tcons("map")
    t_result = _tcons("result")
    t_tuple = _tcons("tuple")

    def t_agent(self, meta, c):
        return A.TypeExpr("agent", c[0].value, [], span=_meta_span(meta))

    def t_fn(self, meta, c):
        params, ret = c
        return A.TypeExpr("fn", "Fn", [params or [], ret], span=_meta_span(meta))

    def t_named(self, meta, c):
        names = [t.value for t in c if isinstance(t, Token)]
        args = next((x for x in c if isinstance(x, list)), [])
        return A.TypeExpr("named", "::".join(names), args, span=_meta_span(meta))

    def type_list(self, meta, c):
        return [x for x in c if x is not None]

    # ---- statements
    def block(self, meta, c):
        stmts = [s for s in c[:-1] if s is not None]
        return A.Block(stmts, c[-1], span=_meta_span(meta))

    def let_stmt(self, meta, c):
        return A.LetStmt(c[0], c[1], c[2], span=_meta_span(meta))

    def assign_stmt(self, meta, c):
        return A.AssignStmt(c[0].value, c[1], span=_meta_span(meta))

    def if_stmt(self, meta, c):
        return A.IfStmt(c[0], c[1], c[2], span=_meta_span(meta))

    def for_stmt(self, meta, c):
        return A.ForStmt(c[0], c[1], c[2], span=_meta_span(meta))

    def while_stmt(self, meta, c):
        return A.WhileStmt(c[0], c[1], span=_meta_span(meta))

    def loop_stmt(self, meta, c):
        return A.LoopStmt(c[0], span=_meta_span(meta))

    def break_stmt(self, meta, c):
        return A.BreakStmt(span=_meta_span(meta))

    def continue_stmt(self, meta, c):
        return A.ContinueStmt(span=_meta_span(meta))

    def return_stmt(self, meta, c):
        return A.ReturnStmt(c[0], span=_meta_span(meta))

    def span_stmt(self, meta, c):
        return A.SpanStmt(c[0], c[1], span=_meta_span(meta))

    def checkpoint_stmt(self, meta, c):
        return A.CheckpointStmt(span=_meta_span(meta))

    def match_stmt(self, meta, c):
        return A.MatchStmt(c[0], span=_meta_span(meta))

    def expr_stmt(self, meta, c):
        return A.ExprStmt(c[0], span=_meta_span(meta))

    def empty_stmt(self, meta, c):
        return None

    def target_name(self, meta, c):
        return A.TargetName(c[0].value, span=_meta_span(meta))

    def target_tuple(self, meta, c):
        return A.TargetTuple([x for x in c if x is not None], span=_meta_span(meta))

    def mock_divine(self, meta, c):
        return A.MockStmt("divine", None, None, c[0], span=_meta_span(meta))

    def mock_infer(self, meta, c):
        return A.MockStmt("infer", None, None, c[0], span=_meta_span(meta))

    def mock_tool(self, meta, c):
        return A.MockStmt("tool", c[0].value, c[1], c[2], span=_meta_span(meta))

    def mock_other(self, meta, c):
        name = c[0].value
        if name != "elicit":
            _ctx().error("E005", f"unknown mock target `{name}`, expected divine, infer, tool or elicit",
                         _tok_span(c[0]))
        return A.MockStmt(name, None, None, c[1], span=_meta_span(meta))

    # ---- expressions
    def fail_expr(self, meta, c):
        return A.FailExpr(c[0], span=_meta_span(meta))

    def closure_expr(self, meta, c):
        params = c[0] if len(c) == 2 and not isinstance(c[0], Token) else []
        body = c[-1]
        return A.Closure(params or [], body, span=_meta_span(meta))

    closure_block = closure_expr

    def cparams(self, meta, c):
        return [x for x in c if x is not None]

    def cparam(self, meta, c):
        return A.ClosureParam(c[0].value, c[1], span=_meta_span(meta))

    def catch_plain(self, meta, c):
        return A.CatchExpr(c[0], None, c[1], span=_meta_span(meta))

    def catch_bind(self, meta, c):
        return A.CatchExpr(c[0], c[1].value, c[2], span=_meta_span(meta))

    def catch_prefix(self, meta, c):
        return A.CatchExpr(c[0], None, c[1], span=_meta_span(meta))

    binop = _binop

    def neg(self, meta, c):
        operand = c[1]
        span = _meta_span(meta)
        if isinstance(operand, A.Literal) and id(operand) in _ctx().big_ints:
            del _ctx().big_ints[id(operand)]
            return A.Literal(-operand.value, span=span)
        return A.Unary("-", operand, span=span)

    def not_(self, meta, c):
        return A.Unary("!", c[1], span=_meta_span(meta))

    def try_expr(self, meta, c):
        return A.TryExpr(c[0], span=_meta_span(meta))

    def await_expr(self, meta, c):
        return A.AwaitExpr(c[0], None, span=_meta_span(meta))

    def await_timeout(self, meta, c):
        return A.AwaitExpr(c[0], c[1], span=_meta_span(meta))

    def field(self, meta, c):
        return A.FieldAccess(c[0], c[1], span=_meta_span(meta))

    def tuple_index(self, meta, c):
        return A.TupleIndex(c[0], int(c[1].value), span=_meta_span(meta))

    def call(self, meta, c):
        return A.Call(c[0], c[1] or [], span=_meta_span(meta))

    def args(self, meta, c):
        return [x for x in c if x is not None]

    def _int(self, tok: Token, span: tuple) -> A.Node:
        value = int(tok.value)
        node = A.Literal(value, span=span)
        if value > INT_MAX:
            _ctx().big_ints[id(node)] = node
        return node

    def int_lit(self, meta, c):
        return self._int(c[0], _meta_span(meta))

    def float_lit(self, meta, c):
        return A.Literal(float(c[0].value), span=_meta_span(meta))

    def string_lit(self, meta, c):
        return _decode_string(c[0])

    def true_lit(self, meta, c):
        return A.Literal(True, span=_meta_span(meta))

    def false_lit(self, meta, c):
        return A.Literal(False, span=_meta_span(meta))

    def self_expr(self, meta, c):
        return A.SelfExpr(span=_meta_span(meta))

    def unit_lit(self, meta, c):
        return A.Literal(A.UNIT, span=_meta_span(meta))

    def paren(self, meta, c):
        return c[0]

    def tuple_lit(self, meta, c):
        return A.TupleLit([x for x in c if x is not None], span=_meta_span(meta))

    def name(self, meta, c):
        return A.Name(c[0].value, c[1], span=_meta_span(meta))

    def variant_path(self, meta, c):
        return A.VariantPath(c[0].value, c[1], c[2].value, span=_meta_span(meta))

    def list_lit(self, meta, c):
        return A.ListLit(c[0] or [], span=_meta_span(meta))

    def retry_expr(self, meta, c):
        count, delay, kinds, body = c
        return A.RetryExpr(count, delay, kinds, body, span=_meta_span(meta))

    def retry_delay(self, meta, c):
        return c[0]

    def retry_on(self, meta, c):
        return [x for x in c if x is not None]

    def divine_expr(self, meta, c):
        return A.DivineExpr(c[0], c[1], False, span=_meta_span(meta))

    def infer_expr(self, meta, c):
        return A.DivineExpr(c[0], c[1], True, span=_meta_span(meta))

    def summon_expr(self, meta, c):
        return A.SummonExpr(c[0].value, c[1] or [], span=_meta_span(meta))

    def send_expr(self, meta, c):
        return A.SendExpr(c[0], c[1], span=_meta_span(meta))

    def receive_expr(self, meta, c):
        return A.ReceiveExpr(span=_meta_span(meta))

    def reply_expr(self, meta, c):
        return A.ReplyExpr(c[0], span=_meta_span(meta))

    def yield_expr(self, meta, c):
        return A.YieldExpr(c[0], span=_meta_span(meta))

    def trace_expr(self, meta, c):
        return A.TraceExpr(c[0], span=_meta_span(meta))

    def record_lit(self, meta, c):
        return A.RecordLit(c[0].value, c[1], c[2] or [], span=_meta_span(meta))

    def map_lit(self, meta, c):
        return A.MapLit([x for x in c if x is not None], span=_meta_span(meta))

    def map_entry(self, meta, c):
        return (c[0], c[1])

    def field_inits(self, meta, c):
        return [x for x in c if x is not None]

    def field_init(self, meta, c):
        return (c[0], c[1], _meta_span(meta))

    def turbofish(self, meta, c):
        return c[0]

    def match_expr(self, meta, c):
        return A.MatchExpr(c[0], c[1] or [], span=_meta_span(meta))

    def arms_last(self, meta, c):
        return [c[0]]

    def arms_more(self, meta, c):
        rest = c[-1] if isinstance(c[-1], list) else []
        return [c[0]] + rest

    def arm_expr(self, meta, c):
        return A.Arm(c[0], c[1], span=_meta_span(meta))

    arm_block = arm_expr

    def arm_break(self, meta, c):
        return A.ArmBreak(span=_meta_span(meta))

    def arm_continue(self, meta, c):
        return A.ArmContinue(span=_meta_span(meta))

    def arm_return(self, meta, c):
        return A.ArmReturn(c[0], span=_meta_span(meta))

    # ---- patterns
    def pattern(self, meta, c):
        alts = [x for x in c if not isinstance(x, Token)]
        if len(alts) == 1:
            return alts[0]
        return A.PatOr(alts, span=_meta_span(meta))

    def pat_name(self, meta, c):
        name = c[0].value
        span = _meta_span(meta)
        if name == "_":
            return A.PatWild(span=span)
        if name[0].isupper():
            return A.PatVariant(None, None, name, None, span=span)
        return A.PatBind(name, span=span)

    def pat_int(self, meta, c):
        minus, tok = c
        value = int(tok.value)
        if minus is not None:
            value = -value
        if not (-(1 << 63) <= value <= INT_MAX):
            _ctx().error("E004", "integer literal out of the 64-bit range", _meta_span(meta))
        return A.PatLiteral(value, span=_meta_span(meta))

    def pat_float(self, meta, c):
        minus, tok = c
        value = float(tok.value)
        return A.PatLiteral(-value if minus is not None else value, span=_meta_span(meta))

    def pat_string(self, meta, c):
        node = _decode_string(c[0])
        if isinstance(node, A.Template):
            _ctx().error("E031", "invalid pattern: a string pattern cannot interpolate", _meta_span(meta))
            return A.PatLiteral("", span=_meta_span(meta))
        return A.PatLiteral(node.value, span=_meta_span(meta))

    def pat_true(self, meta, c):
        return A.PatLiteral(True, span=_meta_span(meta))

    def pat_false(self, meta, c):
        return A.PatLiteral(False, span=_meta_span(meta))

    def pat_tuple(self, meta, c):
        return A.PatTuple([x for x in c if x is not None], span=_meta_span(meta))

    def pat_path(self, meta, c):
        head, targs, name, payload = c
        return A.PatVariant(head.value, targs, name.value, payload, span=_meta_span(meta))

    def pat_variant(self, meta, c):
        return A.PatVariant(None, None, c[0].value, c[1], span=_meta_span(meta))

    def member(self, meta, c):
        return c[0].value


_BUILDER = ASTBuilder()


# ---------------------------------------------------------------- errors

_TOKEN_NAMES = {"IDENT": "identifier", "INT": "integer", "FLOAT": "float", "STRING": "string", "$END": "end of file"}


def _token_display(name: str) -> str:
    if name in _TOKEN_NAMES:
        return _TOKEN_NAMES[name]
    parser = get_parser()
    term = _terminal_patterns(parser).get(name)
    if term is not None:
        return f"`{term}`"
    return name


_PATTERNS: dict[str, str] | None = None


def _terminal_patterns(parser: Lark) -> dict[str, str]:
    global _PATTERNS
    if _PATTERNS is None:
        _PATTERNS = {}
        for t in parser.terminals:
            if t.pattern.type == "str":
                _PATTERNS[t.name] = t.pattern.value
    return _PATTERNS


def _describe_unexpected(exc: UnexpectedInput) -> str:
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            got = "end of file"
        elif tok.type in ("IDENT", "INT", "FLOAT", "STRING"):
            got = f"{_TOKEN_NAMES[tok.type]} `{tok.value}`"
        else:
            got = f"`{tok.value}`"
        expected = sorted({_token_display(e) for e in exc.expected if not e.startswith("__")} |
                          {_token_display(e) for e in exc.expected if e.startswith("__")})
        shown = ", ".join(expected[:12]) + (", …" if len(expected) > 12 else "")
        return f"unexpected {got}, expected one of: {shown}"
    if isinstance(exc, UnexpectedCharacters):
        return f"unexpected character {exc.char!r}"
    if isinstance(exc, UnexpectedEOF):
        return "unexpected end of file"
    return str(exc)


def _flush_big_ints(ctx: _Context) -> None:
    for node in ctx.big_ints.values():
        ctx.error("E004", "integer literal out of the 64-bit range", node.span,
                  hint="Int values lie between -9223372036854775808 and 9223372036854775807")
    ctx.big_ints.clear()


def parse_source(text: str, path: str) -> tuple[list, list[Diagnostic]]:
    """Parse a whole file. Returns (items, diagnostics); items is [] when the file has syntax errors."""
    ctx = _Context(path)
    _contexts.append(ctx)
    items: list = []
    try:
        items = _BUILDER.transform(get_parser().parse(text, start="program"))
    except UnexpectedInput as exc:
        _lexical_scan(ctx, text)
        if not any(d.code == "E002" for d in ctx.errors):
            _report_syntax_error(ctx, exc, text)
            _report_later_syntax_errors(ctx, text, exc)
        items = []
    except VisitError as exc:
        raise exc.orig_exc from None
    finally:
        _contexts.pop()
    _flush_big_ints(ctx)
    return items, _dedupe(ctx.errors)


_ITEM_START = re.compile(r"^(?:pub\s+)?(?:fn|agent|record|enum|const|tool|supervisor|test|run|mod|use|extern|"
                         r"protocol|handler|@|#\[)\b|^(?:@|#\[)", re.M)
_MAX_RESYNCS = 20


def _report_later_syntax_errors(ctx: _Context, text: str, exc: UnexpectedInput) -> None:
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
            get_parser().parse(blanked, start="program")
            return
        except UnexpectedInput as later:
            if isinstance(later, UnexpectedToken) and later.token.type == "$END" and \
                    any(d.code == "E006" for d in ctx.errors):
                return
            _report_syntax_error(ctx, later, blanked)
            line = getattr(later, "line", None) or line + 1


def _offset_of_line(text: str, line: int) -> int | None:
    offset = 0
    for _ in range(line - 1):
        offset = text.find("\n", offset)
        if offset < 0:
            return None
        offset += 1
    return offset


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen: set = set()
    out = []
    for d in diags:
        key = (d.code, d.span)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _lexical_scan(ctx: _Context, text: str) -> None:
    """After a syntax error the AST is never built, so check string and number tokens here: the lexer's
    errors (E002/E003/E004/E007) must all be reported even when the parser stops early."""
    previous = None
    try:
        for tok in get_parser().lex(text):
            if tok.type == "STRING":
                _decode_string(tok)
            elif tok.type == "INT" and int(tok.value) > INT_MAX:
                if not (int(tok.value) == INT_MAX + 1 and previous is not None and previous.type == "MINUS"):
                    ctx.error("E004", "integer literal out of the 64-bit range", _tok_span(tok))
            previous = tok
    except UnexpectedInput:
        return


def _report_syntax_error(ctx: _Context, exc: UnexpectedInput, text: str) -> None:
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        lines = text.split("\n")
        line = len(lines)
        col = len(lines[-1]) + 1
        if not lines[-1] and line > 1:
            line -= 1
            col = len(lines[line - 1]) + 1
        ctx.error("E006", _describe_unexpected(exc), (line, col, line, col + 1))
        return
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        span = (tok.line, tok.column, tok.end_line or tok.line, tok.end_column or tok.column + 1)
        hint = None
        if tok.type in ("EQ", "NE", "LT", "GT", "LE", "GE"):
            hint = "comparisons do not chain: combine them with `&&`"
        ctx.error("E005", _describe_unexpected(exc), span, hint=hint)
        return
    line = getattr(exc, "line", 1) or 1
    col = getattr(exc, "column", 1) or 1
    if any(d.span and d.span[0] == line and d.span[1] == col for d in ctx.errors):
        return
    ctx.error("E005", _describe_unexpected(exc), (line, col, line, col + 1))
