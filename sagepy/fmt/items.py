"""Items and their members (SPEC §2.1): one blank line between items (consecutive `mod`/`use` lines stay
together), declarations broken one member per line, a `///` doc comment then attributes each on its own line
above what they annotate."""
from __future__ import annotations

import re

from ..syntax import ast as A
from .doc import HARD, Doc
from .layout import Element, end_line_of, printer_of, start_of
from .statements import StatementPrinter

_EXPLICIT_RESTART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*\{\s*restart\b")


def _quote_of(text: str, name: str) -> str:
    """The quote a test's name was written with (the AST keeps the name only)."""
    return min((text.find(q + name + q), q) for q in ('"', "'") if text.find(q + name + q) >= 0)[1]


def _item_kind(item: A.Node) -> str:
    if isinstance(item, (A.ModDecl, A.UseDecl)):
        return "use"
    return "run" if isinstance(item, A.RunDecl) else "item"


def _first_span(item: A.Node) -> tuple | None:
    """Where an item starts in the source: at its first attribute, for a served agent."""
    attrs = getattr(item, "attrs", None)
    return attrs[0].span if attrs else item.span


def _blank_between_items(previous: str, kind: str) -> bool | None:
    """One blank line between items; between `mod`/`use` lines, the author's choice."""
    return None if previous == "use" and kind == "use" else True


class ItemPrinter(StatementPrinter):
    def program(self, items: list) -> list:
        elements = [Element(start_of(_first_span(i)), end_line_of(i.span), (lambda i=i: self.item(i)), _item_kind(i))
                    for i in items]
        return self.lines(elements, (len(self.blank) + 1, 0), _blank_between_items)

    def item(self, node: A.Node) -> Doc:
        pub = "pub " if getattr(node, "pub", False) else ""
        return [self.attributes(getattr(node, "attrs", None) or []), pub, printer_of(self, "i_", node)(node)]

    def attributes(self, attrs: list) -> Doc:
        out: list = []
        for attr in attrs:
            out += [f"#[{attr.name} = {self._attribute_string(attr)}]", HARD]
        return out

    def members(self, span: tuple | None, entries: list) -> Doc:
        """A braced body of members; entries are (span, build)."""
        return self.braced(span, [Element(start_of(s), end_line_of(s), b) for s, b in entries])

    def params(self, params: list, end: tuple | None) -> Doc:
        elements = [Element(start_of(p.span), end_line_of(p.span), (lambda p=p: f"{p.name}: {self.type(p.type)}"))
                    for p in params]
        return self.delimited("(", elements, ")", end)

    def tparams(self, names: list) -> str:
        return "<" + ", ".join(names) + ">" if names else ""

    # ---- items

    def i_ModDecl(self, node: A.ModDecl) -> Doc:
        return f"mod {node.name};"

    def i_UseDecl(self, node: A.UseDecl) -> Doc:
        path = "::".join(node.path)
        if node.kind == "glob":
            return f"use {path}::*;"
        if node.kind == "group":
            names = ", ".join(n + (f" as {a}" if a else "") for n, a in node.names)
            return f"use {path}::{{{names}}};"
        return f"use {path}" + (f" as {node.alias}" if node.alias else "") + ";"

    def i_RecordDecl(self, node: A.RecordDecl) -> Doc:
        fields = [(f.span, (lambda f=f: f"{f.name}: {self.type(f.type)},")) for f in node.fields]
        return [f"record {node.name}{self.tparams(node.tparams)} ", self.members(node.span, fields)]

    def i_EnumDecl(self, node: A.EnumDecl) -> Doc:
        variants = [(v.span, (lambda v=v: v.name + (f"({self.type(v.type)})" if v.type is not None else "") + ","))
                    for v in node.variants]
        return [f"enum {node.name}{self.tparams(node.tparams)} ", self.members(node.span, variants)]

    def i_ConstDecl(self, node: A.ConstDecl) -> Doc:
        return [f"const {node.name}: {self.type(node.type)} = ", self.expr(node.value), ";"]

    def i_FnDecl(self, node: A.FnDecl) -> Doc:
        head = ["extern fn " if node.extern else "fn ", node.name, self.tparams(node.tparams),
                self.params(node.params, start_of(node.ret.span)), " -> ", self.type(node.ret),
                " fails" if node.fails else ""]
        if node.extern:
            return [head, ";"]
        return [head, " ", self.block(node.body)]

    def i_ToolDecl(self, node: A.ToolDecl) -> Doc:
        return [f"tool {node.name} ", self.members(node.span, [(fn.span, (lambda fn=fn: self.tool_fn(fn)))
                                                              for fn in node.fns])]

    def tool_fn(self, fn: A.ToolFn) -> Doc:
        out: list = [self.attributes(fn.attrs)]
        out += ["fn ", fn.name, self.params(fn.params, start_of(fn.ret.span)), " -> ", self.type(fn.ret)]
        return out

    def _attribute_string(self, attr: A.Attribute) -> str:
        text = self.source(attr.span)
        first = min(i for i in (text.find('"'), text.find("'")) if i >= 0)
        return text[first:text.rindex(text[first]) + 1]

    def i_AgentDecl(self, node: A.AgentDecl) -> Doc:
        head = f"agent {node.name}"
        if node.receives is not None:
            head += f" receives {self.type(node.receives)}"
        if node.follows:
            head += " follows " + ", ".join(f"{role} as {name}" for role, name, _ in node.follows)
        groups: list = []   # [span, build, use names]: `use` names written on one source line stay one line
        for span, kind, member in sorted(self._agent_members(node), key=lambda m: m[0] or (0, 0)):
            if kind != "use":
                groups.append([span, member, None])
            elif groups and groups[-1][2] is not None and groups[-1][0][0] == span[0]:
                groups[-1][2].append(member)
            else:
                groups.append([span, None, [member]])
        entries = [(span, build if names is None else (lambda names=names: "use " + ", ".join(names)))
                   for span, build, names in groups]
        return [head, " ", self.members(node.span, entries)]

    def _agent_members(self, node: A.AgentDecl) -> list:
        found: list = [(span, "use", name) for name, span in node.uses]
        found += [(f.span, "field", (lambda f=f: self.agent_field(f))) for f in node.fields]
        found += [(h.span, "handler", (lambda h=h: self.handler(h))) for h in node.handlers]
        return found

    def agent_field(self, f: A.AgentField) -> Doc:
        annotation = [f"@{f.annotation}", HARD] if f.annotation else []
        return [annotation, f"{f.name}: {self.type(f.type)}"]

    def handler(self, h: A.Handler) -> Doc:
        if h.kind == "message":
            head = f"on message({h.param}: {self.type(h.param_type)})"
        elif h.kind == "error":
            typed = f": {self.type(h.param_type)}" if h.param_type is not None else ""
            head = f"on error({h.param}{typed})"
        else:
            head = f"on {h.kind}"
        return [head, " ", self.block(h.body)]

    def i_SupervisorDecl(self, node: A.SupervisorDecl) -> Doc:
        children = [(c.span, (lambda c=c: self.child(c))) for c in node.children]
        entries = [(None, lambda: f"strategy: {node.strategy},"),
                   (None, lambda: ["children ", self.members(None, children)])]
        return [f"supervisor {node.name} ", self.members(node.span, entries)]

    def child(self, child: A.ChildSpec) -> Doc:
        entries: list = []
        if child.restart != "Permanent" or (child.span and _EXPLICIT_RESTART.match(self.source(child.span))):
            entries.append((None, lambda: f"restart: {child.restart},"))
        entries += [(None, (lambda e=e, h=h: f"handler {e}: {h},")) for e, h in child.handlers]
        entries += [(s, (lambda n=n, e=e: [n, ": ", self.expr(e), ","])) for n, e, s in child.fields]
        return [child.name, " ", self.members(child.span, entries)]

    def i_ProtocolDecl(self, node: A.ProtocolDecl) -> Doc:
        steps = [(t.span, (lambda a=a, b=b, t=t: f"{a} -> {b}: {self.type(t)},")) for a, b, t in node.steps]
        return [f"protocol {node.name} ", self.members(node.span, steps)]

    def i_EffectHandlerDecl(self, node: A.EffectHandlerDecl) -> Doc:
        entries = [(s, (lambda n=n, v=v: [n, ": ", self.expr(v), ","])) for n, v, s in node.entries]
        return [f"handler {node.name} handles {node.effect} ", self.members(node.span, entries)]

    def i_TestDecl(self, node: A.TestDecl) -> Doc:
        quote = _quote_of(self.source(node.span), node.name)
        annotation = [f"@{node.annotation}", HARD] if node.annotation else []
        return [annotation, f"test {quote}{node.name}{quote} ", self.block(node.body)]

    def i_EvalDecl(self, node: A.EvalDecl) -> Doc:
        text = self.source(node.span)
        name = _quote_of(text, node.name)
        data = _quote_of(text, node.dataset)
        return [f"eval {name}{node.name}{name} over {data}{node.dataset}{data} as {node.row.name}: ",
                self.type(node.row.type), " ", self.block(node.body)]

    def i_RunDecl(self, node: A.RunDecl) -> Doc:
        return f"run {node.name};"
