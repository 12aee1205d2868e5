"""AST builder rules for items and types (SPEC §2.1, §2.6): one method per grammar rule or alternative, each
given the rule's `meta` (for its span) and its already-built children."""
from __future__ import annotations

from lark import Token, v_args

from . import ast as A
from .builder_base import BuilderBase
from .parse_state import INT_MAX, int_literal, meta_span, token_span


def _lifecycle_handler(kind: str):
    def build(self, meta, c):
        return A.Handler(kind, None, None, c[0], span=meta_span(meta))
    return build


def _type_prim(name: str):
    def build(self, meta, children):
        return A.TypeExpr("prim", name, [], span=meta_span(meta))
    return build


def _type_constructor(kind: str):
    def build(self, meta, c):
        return A.TypeExpr(kind, kind, [x for x in c if x is not None], span=meta_span(meta))
    return build


@v_args(meta=True)
class ItemRules(BuilderBase):
    # ---- program and items
    def program(self, meta, children):
        items = [c for c in children if c is not None]
        ctx = self.ctx
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
        attr, item = c[0], c[-1]
        if attr.name != "mcp_tool":
            self.ctx.error("E009", f"attribute `#[{attr.name}]` is only allowed on a tool function", attr.span)
        elif isinstance(item, A.AgentDecl):
            item.attrs = [attr] + (item.attrs or [])
        else:
            self.misplaced_mcp_tool(attr)
        return item

    def misplaced_mcp_tool(self, attr) -> None:
        self.ctx.error("E095", "attribute `#[mcp_tool]` is only allowed on an agent", attr.span)

    def mod_decl(self, meta, c):
        return A.ModDecl(c[0].value, False, span=meta_span(meta))

    def use_decl(self, meta, c):
        path, kind, alias, names = c[0]
        if kind in ("group", "glob") and not path:
            self.ctx.error("E005", "a `use` group or glob needs a module path", meta_span(meta))
        return A.UseDecl(path, kind, alias, names, False, span=meta_span(meta))

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
        return A.RecordDecl(c[0].value, c[1] or [], fields, False, span=meta_span(meta))

    def field_decl(self, meta, c):
        return A.FieldDecl(c[0], c[1], span=meta_span(meta))

    def enum_decl(self, meta, c):
        variants = [v for v in c[2:] if isinstance(v, A.VariantDecl)]
        return A.EnumDecl(c[0].value, c[1] or [], variants, False, span=meta_span(meta))

    def variant_decl(self, meta, c):
        return A.VariantDecl(c[0].value, c[1], span=meta_span(meta))

    def const_decl(self, meta, c):
        return A.ConstDecl(c[0].value, c[1], c[2], False, span=meta_span(meta))

    def fn_decl(self, meta, c):
        name, tparams, params, ret, fails, body = c
        return A.FnDecl(name.value, tparams or [], params or [], ret, fails is not None, body, False, False,
                        span=meta_span(meta))

    def extern_fn(self, meta, c):
        name, tparams, params, ret, fails = c[:5]
        return A.FnDecl(name.value, tparams or [], params or [], ret, fails is not None, None, True, False,
                        span=meta_span(meta))

    def params(self, meta, c):
        return [p for p in c if p is not None]

    def param(self, meta, c):
        return A.Param(c[0].value, c[1], span=meta_span(meta))

    def tool_decl(self, meta, c):
        return A.ToolDecl(c[0].value, [f for f in c[1:] if f is not None], False, span=meta_span(meta))

    def tool_fn(self, meta, c):
        attrs = [a for a in c if isinstance(a, A.Attribute)]
        for attr in attrs:
            if attr.name == "mcp_tool":
                self.misplaced_mcp_tool(attr)
        attrs = [a for a in attrs if a.name != "mcp_tool"]
        rest = [x for x in c if not isinstance(x, A.Attribute)]
        name = rest[0]
        params = [p for p in rest[1:] if isinstance(p, A.Param)]
        ret = [x for x in rest[1:] if isinstance(x, A.TypeExpr)][-1]
        return A.ToolFn(name, params, ret, attrs, span=meta_span(meta))

    def tool_param(self, meta, c):
        return A.Param(c[0], c[1], span=meta_span(meta))

    def attribute(self, meta, c):
        name = c[0].value
        value = self.decode_string(c[1])
        span = meta_span(meta)
        if name not in ("mcp_name", "mcp_tool"):
            self.ctx.error("E009", f"unknown attribute `{name}` (only `mcp_name` and `mcp_tool` are defined)", span)
        if isinstance(value, A.Template):
            self.ctx.error("E009", "attribute value must be a plain string", span)
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
        return A.AgentDecl(name, receives, follows or [], uses, fields, handlers, False, span=meta_span(meta))

    def receives(self, meta, c):
        return c[0]

    def follows(self, meta, c):
        return [x for x in c if x is not None]

    def follow_role(self, meta, c):
        return (c[0].value, c[1].value, meta_span(meta))

    def agent_use(self, meta, c):
        return [(t.value, token_span(t)) for t in c if isinstance(t, Token)]

    def agent_field(self, meta, c):
        annotation, name, type_ = c[0], c[1], c[2]
        span = meta_span(meta)
        if annotation is not None and annotation[0] != "persistent":
            self.ctx.error("E009", f"unknown annotation `@{annotation[0]}` on a field (only `@persistent`)",
                         annotation[1])
        return A.AgentField(name.value, type_, annotation[0] if annotation else None, span=span)

    def annotation(self, meta, c):
        return (c[0].value, meta_span(meta))

    on_start = _lifecycle_handler("start")
    on_waking = _lifecycle_handler("waking")
    on_pause = _lifecycle_handler("pause")
    on_resume = _lifecycle_handler("resume")
    on_stop = _lifecycle_handler("stop")
    on_resting = _lifecycle_handler("resting")

    def on_message(self, meta, c):
        return A.Handler("message", c[0].value, c[1], c[2], span=meta_span(meta))

    def on_error(self, meta, c):
        return A.Handler("error", c[0].value, c[1], c[2], span=meta_span(meta))

    def supervisor_decl(self, meta, c):
        name, strategy = c[0], c[1]
        span = meta_span(meta)
        if strategy.value not in ("OneForOne", "OneForAll", "RestForOne"):
            self.ctx.error("E005", f"unknown strategy `{strategy.value}`, expected OneForOne, OneForAll or RestForOne",
                         token_span(strategy))
        children = [x for x in c[2:] if isinstance(x, A.ChildSpec)]
        return A.SupervisorDecl(name.value, strategy.value, children, False, span=span)

    def child_spec(self, meta, c):
        name = c[0].value
        restart = c[1]
        handlers = [x for x in c[2:] if isinstance(x, tuple) and x[0] == "handler"]
        fields = [x[1:] for x in c[2:] if isinstance(x, tuple) and x[0] == "field"]
        return A.ChildSpec(name, restart or "Permanent", [(h[1], h[2]) for h in handlers], fields,
                           span=meta_span(meta))

    def restart_spec(self, meta, c):
        if c[0].value not in ("Permanent", "Transient", "Temporary"):
            self.ctx.error("E005", f"unknown restart policy `{c[0].value}`, expected Permanent, Transient or Temporary",
                         token_span(c[0]))
        return c[0].value

    def child_handler(self, meta, c):
        return ("handler", c[0].value, c[1].value)

    def child_field(self, meta, c):
        return ("field", c[0].value, c[1], meta_span(meta))

    def protocol_decl(self, meta, c):
        return A.ProtocolDecl(c[0].value, [x for x in c[1:] if x is not None], False, span=meta_span(meta))

    def protocol_step(self, meta, c):
        return (c[0].value, c[1].value, c[2])

    def effect_handler(self, meta, c):
        entries = [x for x in c[2:] if x is not None]
        return A.EffectHandlerDecl(c[0].value, c[1].value, entries, False, span=meta_span(meta))

    def handler_entry(self, meta, c):
        return (c[0].value, c[1], meta_span(meta))

    def literal(self, meta, c):
        toks = [t for t in c if isinstance(t, Token)]
        if isinstance(c[0], A.Literal):
            return c[0]
        if len(toks) == 2:
            tok = toks[1]
            if tok.type == "FLOAT":
                return A.Literal(-float(tok.value), span=meta_span(meta))
            value = int_literal(tok.value)
            if value > INT_MAX + 1:
                self.ctx.error("E004", "integer literal out of the 64-bit range", meta_span(meta))
            return A.Literal(-value, span=meta_span(meta))
        tok = toks[0]
        if tok.type == "INT":
            return self._int(tok, meta_span(meta))
        if tok.type == "FLOAT":
            return A.Literal(float(tok.value), span=meta_span(meta))
        return self.decode_string(tok)

    def test_decl(self, meta, c):
        annotation, name, body = c
        span = meta_span(meta)
        if annotation is not None and annotation[0] != "serial":
            self.ctx.error("E009", f"unknown annotation `@{annotation[0]}` on a test (only `@serial`)", annotation[1])
        return A.TestDecl(name.value[1:-1], annotation[0] if annotation else None, body, span=span)

    def eval_decl(self, meta, c):
        name, dataset, row, row_type, body = c
        row_param = A.Param(row.value, row_type, span=token_span(row))
        return A.EvalDecl(name.value[1:-1], dataset.value[1:-1], row_param, body, span=meta_span(meta))

    def run_decl(self, meta, c):
        return A.RunDecl(c[0].value, span=meta_span(meta))

    # ---- types
    t_int = _type_prim("Int")
    t_float = _type_prim("Float")
    t_bool = _type_prim("Bool")
    t_string = _type_prim("String")
    t_unit = _type_prim("Unit")
    t_error = _type_prim("Error")

    t_list = _type_constructor("list")
    t_option = _type_constructor("option")
    t_oracle = _type_constructor("oracle")
    t_map = _type_constructor("map")
    t_result = _type_constructor("result")
    t_tuple = _type_constructor("tuple")

    def t_agent(self, meta, c):
        return A.TypeExpr("agent", c[0].value, [], span=meta_span(meta))

    def t_fn(self, meta, c):
        params, ret = c
        return A.TypeExpr("fn", "Fn", [params or [], ret], span=meta_span(meta))

    def t_named(self, meta, c):
        names = [t.value for t in c if isinstance(t, Token)]
        args = next((x for x in c if isinstance(x, list)), [])
        return A.TypeExpr("named", "::".join(names), args, span=meta_span(meta))

    def type_list(self, meta, c):
        return [x for x in c if x is not None]
