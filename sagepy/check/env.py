"""Module namespaces: declaring items, merging a test file with its sibling, resolving `use`, and turning
type expressions into types (SPEC §3.1, §3.2, §3.8).

Every module gets a `ModuleScope` with its own items and its imports. Declaration runs in passes so that
order never matters: all items of all modules are declared first, then `use` declarations are resolved
(child modules before their parents, so a `pub use` re-export exists before anyone imports through it), then
record fields, enum payloads and every signature are resolved.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..core import types as T
from ..diagnostics import did_you_mean, display_path
from ..loader import reexports
from ..syntax import ast as A
from .symbols import AgentInfo, Entity, FieldInfo, FnSig, ToolInfo, remote_name
from .typeops import ANY, MAP_KEYS, prim_named

if TYPE_CHECKING:
    from ..diagnostics import Diagnostic
    from .prelude import Prelude
    from .symbols import ToolTables

ITEM_KINDS = {A.FnDecl: "fn", A.ConstDecl: "const", A.RecordDecl: "record", A.EnumDecl: "enum",
              A.AgentDecl: "agent", A.SupervisorDecl: "supervisor", A.ToolDecl: "tool",
              A.ProtocolDecl: "protocol", A.EffectHandlerDecl: "handler"}


class Reporting(Protocol):
    """Where the first pass reports (the `Checker`)."""

    diagnostics: list[Diagnostic]

    def error(self, code: str, message: str, span: tuple | None, file: str, hint: str | None = None) -> None:
        """Report an error."""
        ...

    def note(self, file: str, span: tuple | None, name: str, target: Any, where: Any = "h",
             define: bool = False) -> None:
        """Record that `name`, written at `where` inside `span`, denotes `target` (see index.py)."""
        ...


class ModuleScope:
    """One module's namespace. A test file and its sibling share `items` and `imports` (one module, §3.8)."""

    def __init__(self, module: Any, is_test: bool) -> None:
        self.module = module
        self.path = module.path
        self.items: dict[str, Entity] = {}
        self.imports: dict[str, Entity] = {}
        self.children: dict[str, ModuleScope] = {}
        self.is_test = is_test
        self._variants: dict[str, list[Entity]] | None = None

    def lookup(self, name: str) -> Entity | None:
        return self.items.get(name) or self.imports.get(name)

    def variant_owners(self, name: str) -> list[Entity]:
        """The enums in scope (declared or imported) that define a variant called `name`."""
        if self._variants is None:
            index: dict[str, list[Entity]] = {}
            seen: set[int] = set()
            for entity in list(self.items.values()) + list(self.imports.values()):
                if entity.kind == "enum" and id(entity) not in seen:
                    seen.add(id(entity))
                    for vname, _ in entity.info.variants:
                        index.setdefault(vname, []).append(entity)
            self._variants = index
        return self._variants.get(name, [])

    def candidates(self) -> set[str]:
        return set(self.items) | set(self.imports)


class Namespaces:
    """The checker's first pass: it builds the module scopes of a program and resolves names and types in them.
    It reports through `report` (the `Checker`, seen through its `Reporting` interface) and owns what it builds:
    `scopes` (by id of module), `root_scope`, and the agents by name and by declaration."""

    def __init__(self, report: Reporting, configured_tools: ToolTables, test_file: bool, prelude: Prelude) -> None:
        self.error = report.error
        self.note = report.note
        self.diagnostics = report.diagnostics
        self.configured_tools = configured_tools
        self.test_file = test_file
        self.prelude = prelude
        self.scopes: dict[int, ModuleScope] = {}
        self.root_scope: ModuleScope | None = None
        self.agents: dict[str, AgentInfo] = {}        # by name: `Agent<A>` names its agent
        self.agent_decls: dict[int, AgentInfo] = {}   # by declaration, duplicates included

    # ---------------------------------------------------------------- building
    def build_scopes(self, program: Any) -> None:
        for module in program.modules:
            is_test = module.path.endswith(("_test.sg", "_eval.sg")) or (module is program.root and self.test_file)
            self.scopes[id(module)] = module.namespace = ModuleScope(module, is_test)
        for module in program.modules:
            scope = self.scopes[id(module)]
            scope.children = {name: self.scopes[id(child)] for name, child in module.children.items()
                              if id(child) in self.scopes}
        self.root_scope = self.scopes[id(program.root)]
        root = program.root
        sibling = getattr(root, "sibling", None)
        for module in program.modules:
            if module is root and sibling is not None:
                continue
            self.declare_items(self.scopes[id(module)])
        if sibling is not None:
            shared = self.scopes[id(sibling)]
            self.root_scope.items = shared.items
            self.root_scope.imports = shared.imports
            self.declare_items(self.root_scope, also_in=sibling.path)
        for module in reversed(program.modules):
            self.resolve_uses(self.scopes[id(module)])
        for scope in self.scopes.values():
            self.fill_types(scope)
        for scope in self.scopes.values():
            self.fill_signatures(scope)
        for agent in self.agent_decls.values():
            self.fill_agent(agent, agent.scope)

    def declare_items(self, scope: ModuleScope, also_in: str | None = None) -> None:
        for item in scope.module.items:
            if isinstance(item, A.ModDecl):
                child = getattr(item, "module", None)
                if child is not None and id(child) in self.scopes:
                    self.note(scope.path, item.span, item.name, self.scopes[id(child)], "f")
                    self.bind(scope, Entity("module", item.name, item, scope, item.pub, self.scopes[id(child)]),
                              item.span, also_in)
                continue
            kind = ITEM_KINDS.get(type(item))
            if kind is None:
                continue
            info: Any = None
            if kind == "record":
                info = T.RecordInfo(item.name, list(item.tparams), [])
            elif kind == "enum":
                info = T.EnumInfo(item.name, list(item.tparams), [])
            elif kind == "agent":
                info = item.info = AgentInfo(item.name, item, scope)
                self.agents.setdefault(item.name, info)
                self.agent_decls[id(item)] = info
            entity = Entity(kind, item.name, item, scope, bool(getattr(item, "pub", False)), info)
            self.bind(scope, entity, item.span, also_in)

    def bind(self, scope: ModuleScope, entity: Entity, span: tuple, also_in: str | None) -> None:
        existing = scope.items.get(entity.name)
        if existing is not None:
            where = f" (also in {display_path(also_in)})" if also_in and existing.scope is not scope else ""
            self.error("E012", f"duplicate definition of `{entity.name}`{where}", span, scope.path)
            return
        scope.items[entity.name] = entity

    # ---------------------------------------------------------------- use
    def resolve_uses(self, scope: ModuleScope) -> None:
        for item in scope.module.items:
            if not isinstance(item, A.UseDecl):
                continue
            path, file = item.path, scope.path
            if item.kind == "leaf":
                if len(path) == 1:
                    module = self.start_module(scope, path[0])
                    if module is None:
                        self.error("E042", f"unknown module `{path[0]}`", item.span, file,
                                   hint=f"declare it with `mod {path[0]};`")
                        continue
                    self.note(file, item.span, path[0], module, "f")
                    target: Entity | None = Entity("module", path[0], None, scope, True, module)
                else:
                    owner = self.resolve_module(scope, path[:-1], item.span)
                    target = self.member(owner, path[-1], item.span, file) if owner else None
                    self.note(file, item.span, path[-1], target, "l")
                if item.alias:
                    self.note(file, item.span, item.alias, target, "l")
                self.add_import(scope, item.alias or path[-1], target, item.span)
            elif item.kind == "group":
                owner = self.resolve_module(scope, path, item.span)
                for name, alias in item.names:
                    target = self.member(owner, name, item.span, file) if owner else None
                    self.note(file, item.span, name, target, "{")
                    if alias:
                        self.note(file, item.span, alias, target, "{")
                    self.add_import(scope, alias or name, target, item.span)
            else:
                owner = self.resolve_module(scope, path, item.span)
                if owner is None:
                    continue
                for name, entity in owner.items.items():
                    if entity.pub and name not in scope.items:
                        scope.imports[name] = entity

    def add_import(self, scope: ModuleScope, name: str, target: Entity | None, span: tuple) -> None:
        """Bind an imported name. A failed import (already reported) binds a placeholder of kind "error", so
        that uses of the name do not report it again as undefined."""
        if target is None:
            if name not in scope.items and name not in scope.imports:
                scope.imports[name] = Entity("error", name, None, scope, False)
            return
        if name in scope.items or (name in scope.imports and scope.imports[name] is not target):
            self.error("E012", f"duplicate definition of `{name}` (imported)", span, scope.path)
            return
        scope.imports[name] = target

    def start_module(self, scope: ModuleScope, first: str) -> ModuleScope | None:
        return scope.children.get(first) or self.root_scope.children.get(first)

    def resolve_module(self, scope: ModuleScope, path: list[str], span: tuple) -> ModuleScope | None:
        module = self.start_module(scope, path[0])
        if module is None:
            self.error("E042", f"unknown module `{path[0]}`", span, scope.path,
                       hint=f"declare it with `mod {path[0]};`")
            return None
        self.note(scope.path, span, path[0], module, "f")
        for seg in path[1:]:
            nxt = module.children.get(seg)
            if nxt is None:
                self.error("E042", f"module `{seg}` not found in `{'::'.join(path)}`", span, scope.path)
                return None
            self.note(scope.path, span, seg, nxt, "f")
            module = nxt
        return module

    def member(self, module: ModuleScope, name: str, span: tuple, file: str) -> Entity | None:
        entity = module.items.get(name)
        if entity is None:
            imported = module.imports.get(name)
            if imported is not None and reexports(module.module, name):
                return imported
            if name in module.children:
                return Entity("module", name, None, module, True, module.children[name])
            hint = did_you_mean(name, [n for n, e in module.items.items() if e.pub])
            self.error("E044", f"`{name}` not found in module `{module.module.name}`", span, file, hint=hint)
            return None
        if not entity.pub:
            self.error("E043", f"`{name}` is private to module `{module.module.name}`", span, file,
                       hint=f"mark it `pub` in {display_path(module.path)}")
            return None
        return entity

    # ---------------------------------------------------------------- declarations' types
    def fill_types(self, scope: ModuleScope) -> None:
        for entity in list(scope.items.values()):
            if entity.scope is not scope:
                continue
            decl = entity.decl
            if entity.kind == "record":
                seen: set[str] = set()
                for f in decl.fields:
                    if f.name in seen:
                        self.error("E012", f"duplicate field `{f.name}` in record `{decl.name}`", f.span, scope.path)
                    seen.add(f.name)
                    entity.info.fields.append((f.name, self.resolve_type(f.type, scope, decl.tparams)))
            elif entity.kind == "enum":
                seen = set()
                for v in decl.variants:
                    if v.name in seen:
                        self.error("E012", f"duplicate variant `{v.name}` in enum `{decl.name}`", v.span, scope.path)
                    seen.add(v.name)
                    payload = None if v.type is None else self.resolve_type(v.type, scope, decl.tparams)
                    entity.info.variants.append((v.name, payload))

    def fill_signatures(self, scope: ModuleScope) -> None:
        for entity in list(scope.items.values()):
            if entity.scope is not scope:
                continue
            decl, kind = entity.decl, entity.kind
            if kind == "fn":
                entity.info = decl.info = self.fn_signature(decl, scope)
            elif kind == "const":
                entity.info = self.resolve_type(decl.type, scope)
            elif kind == "tool":
                entity.info = self.tool_info(decl, scope)
            elif kind == "protocol":
                roles = set()
                for src, dst, texpr in decl.steps:
                    roles.update((src, dst))
                    self.resolve_type(texpr, scope)
                entity.info = roles

    def fn_signature(self, decl: Any, scope: ModuleScope) -> FnSig:
        params = []
        seen: set[str] = set()
        for p in decl.params:
            if p.name in seen:
                self.error("E012", f"duplicate parameter `{p.name}`", p.span, scope.path)
            seen.add(p.name)
            params.append((p.name, self.resolve_type(p.type, scope, decl.tparams)))
        ret = self.resolve_type(decl.ret, scope, decl.tparams)
        return FnSig(decl.name, list(decl.tparams), params, ret, bool(decl.fails), decl.span)

    def tool_info(self, decl: Any, scope: ModuleScope) -> ToolInfo:
        fns: dict[str, FnSig] = {}
        for fn in decl.fns:
            if fn.name in fns:
                self.error("E012", f"duplicate tool function `{fn.name}` in tool `{decl.name}`", fn.span, scope.path)
                continue
            params = []
            seen: set[str] = set()
            for p in fn.params:
                if p.name in seen:
                    self.error("E012", f"duplicate parameter `{p.name}`", p.span, scope.path)
                seen.add(p.name)
                params.append((p.name, self.resolve_type(p.type, scope)))
            fns[fn.name] = FnSig(fn.name, [], params, self.resolve_type(fn.ret, scope), True, fn.span)
        server, ambiguous = self.configured_tools.binding(decl.name)   # bound once, here (SPEC §8.1)
        if ambiguous is not None:
            self.diagnostics.append(ambiguous)
        return ToolInfo(decl.name, fns, False, {fn.name: remote_name(fn) for fn in decl.fns},
                        {fn.name: fn.doc for fn in decl.fns if fn.doc}, server or decl.name)

    def fill_agent(self, agent: AgentInfo, scope: ModuleScope) -> None:
        decl = agent.decl
        for f in decl.fields:
            if f.name in agent.fields:
                self.error("E012", f"duplicate field `{f.name}` in agent `{decl.name}`", f.span, scope.path)
                continue
            agent.fields[f.name] = FieldInfo(f.name, self.resolve_type(f.type, scope), f.annotation == "persistent", f)
        if decl.receives is not None:
            agent.receives = self.resolve_type(decl.receives, scope)
        for h in decl.handlers:
            if h.kind == "message":
                agent.message_types.append(self.resolve_type(h.param_type, scope))

    # ---------------------------------------------------------------- types
    def resolve_type(self, texpr: Any, scope: ModuleScope, tparams: Any = ()) -> T.Type:
        if texpr is None:
            return T.UNIT
        t = T.from_type_expr(texpr, lambda sub: self.resolve_type(sub, scope, tparams),
                             lambda sub, args: self.named_type(sub, args, scope, tparams))
        if texpr.kind == "map":
            key = t.key
            if not (prim_named(key, *MAP_KEYS, "_") or isinstance(key, T.TypeVar)):
                self.error("E018", f"type mismatch: expected a map key type (String, Int or Bool), found "
                           f"{T.type_name(key)}", texpr.args[0].span, scope.path)
        return t

    def named_type(self, texpr: Any, args: list, scope: ModuleScope, tparams: Any) -> T.Type:
        if texpr.kind == "agent":
            entity = scope.lookup(texpr.name)
            self.note(scope.path, texpr.span, texpr.name, entity, "f")
            if entity is None or entity.kind != "agent":
                self.error("E011", f"unknown agent `{texpr.name}`", texpr.span, scope.path,
                           hint=did_you_mean(texpr.name, [n for n, e in self.agents.items()]))
                return ANY
            return T.AgentT(texpr.name)
        name = texpr.name
        if name in tparams:
            if args:
                self.error("E046", f"type parameter `{name}` takes no type arguments", texpr.span, scope.path)
            return T.TypeVar(name)
        entity = self.type_entity(scope, name, texpr.span)
        self.note(scope.path, texpr.span, name.rpartition("::")[2], entity, "l" if "::" in name else "h")
        if entity is None or entity.kind == "error":
            return ANY
        if entity.kind in ("record", "enum"):
            info = entity.info
            if len(args) != len(info.params):
                self.error("E046", f"`{name}` takes {len(info.params)} type argument(s), {len(args)} given",
                           texpr.span, scope.path)
                args = [ANY] * len(info.params)
            return (T.RecordT if entity.kind == "record" else T.EnumT)(info, args)
        hint = f"write `Agent<{name}>` for a handle of agent `{name}`" if entity.kind == "agent" else None
        self.error("E011", f"`{name}` is a {entity.kind}, not a type", texpr.span, scope.path, hint=hint)
        return ANY

    def type_entity(self, scope: ModuleScope, name: str, span: tuple) -> Entity | None:
        if "::" in name:
            parts = name.split("::")
            module = self.resolve_module(scope, parts[:-1], span)
            return self.member(module, parts[-1], span, scope.path) if module is not None else None
        entity = scope.lookup(name)
        if entity is None and name in self.prelude.records:
            entity = Entity("record", name, None, None, True, self.prelude.records[name])
        if entity is None:
            names = [n for n, e in list(scope.items.items()) + list(scope.imports.items())
                     if e.kind in ("record", "enum")] + list(self.prelude.records)
            self.error("E011", f"unknown type `{name}`", span, scope.path, hint=did_you_mean(name, names))
        return entity

    # ---------------------------------------------------------------- lookups
    def lookup_tool(self, scope: ModuleScope, name: str) -> ToolInfo | None:
        entity = scope.lookup(name)
        if entity is not None:
            return entity.info if entity.kind == "tool" else None
        return self.builtin_tool(name)

    def builtin_tool(self, name: str) -> ToolInfo | None:
        """A built-in tool, unless grove.toml binds an MCP server to that exact name (SPEC §8.1)."""
        if name in self.configured_tools:
            return None
        return self.prelude.tools.get(name)
