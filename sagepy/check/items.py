"""Item-level rules: functions, constants, agents and their handlers, supervisors, effect handlers, tool blocks,
tests and the entry declaration (SPEC §3.1, §3.4, §3.5, §3.7, §3.8).
"""
from __future__ import annotations

import re
from typing import Any

from ..binding import BUILTIN_TOOLS, AmbiguousBinding, bound_key
from ..core import types as T
from ..diagnostics import did_you_mean
from ..syntax import ast as A
from .body import Body, Locals, Var
from .env import ModuleScope
from .symbols import AgentInfo
from .typeops import NEVER, fits, is_open, prim_named, show

_REMOTE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_EFFECT_KEYS = {"model": T.STRING, "temperature": T.FLOAT, "max_tokens": T.INT}


class Items:
    """Mixin of the checker."""

    def check_module(self, scope: ModuleScope) -> None:
        tests: dict[str, Any] = {}
        for item in scope.module.items:
            kind = type(item)
            if kind is A.FnDecl:
                if not item.extern:
                    self.check_fn(item, scope)
            elif kind is A.ConstDecl:
                self.check_const(item, scope)
            elif kind is A.AgentDecl:
                agent = self.agent_decls.get(id(item))
                if agent is not None and agent.state == "new":
                    self.check_agent(agent)
            elif kind is A.SupervisorDecl:
                self.check_supervisor(item, scope)
            elif kind is A.EffectHandlerDecl:
                self.check_effect_handler(item, scope)
            elif kind is A.ToolDecl:
                self.check_tool_block(item, scope)
            elif kind is A.TestDecl:
                self.check_test(item, scope, tests)
            elif kind is A.RunDecl:
                self.check_run(item, scope)

    # ---------------------------------------------------------------- functions and constants
    def check_fn(self, decl: Any, scope: ModuleScope) -> None:
        entity = scope.items.get(decl.name)
        sig = entity.info if entity is not None and entity.decl is decl else self.fn_signature(decl, scope)
        cx = Body(scope, "fn", fallible=sig.fails, ret=sig.ret, tparams=tuple(decl.tparams))
        lc = Locals()
        for param, (name, t) in zip(decl.params, sig.params):
            var = lc.vars[name] = Var(t, cx)
            self.note(scope.path, param.span, name, var, "h", True)
        unit = prim_named(sig.ret, "Unit")
        t = self.block_type(decl.body, cx, lc, sig.ret, discard=unit)
        decl.nslots = cx.nslots
        if unit or t is NEVER:
            return
        if not self.has_tail(decl.body):
            self.error("E045", f"function `{decl.name}` may end without returning a value of type {show(sig.ret)}",
                       decl.span, scope.path, hint="end every path with `return …;`, `fail …` or a trailing value")
        elif not fits(sig.ret, t):
            tail = decl.body.value if decl.body.value is not None else decl.body.stmts[-1]
            self.mismatch(sig.ret, t, tail.span, cx)

    def check_const(self, decl: Any, scope: ModuleScope) -> None:
        entity = scope.items.get(decl.name)
        declared = entity.info if entity is not None and entity.decl is decl else self.resolve_type(decl.type, scope)
        cx = Body(scope, "const")
        self.expect(decl.value, declared, cx, Locals())
        decl.nslots = cx.nslots
        offending = self.non_constant(decl.value, scope)
        if offending is not None:
            self.error("E048", "`const` initialiser is not a constant expression", offending.span, scope.path,
                       hint="constants may use literals, other constants, operators and constructions of constants")

    def non_constant(self, node: Any, scope: ModuleScope) -> Any:
        """The first part of `node` that is not a constant expression, or None (§3.1)."""
        cls = type(node)
        if cls is A.Literal or cls is A.VariantPath:
            return None
        if cls is A.Template:
            parts = [p for p in node.parts if not isinstance(p, str)]
        elif cls is A.Name:
            entity = scope.lookup(node.name)
            if entity is not None:
                return None if entity.kind == "const" else node
            ok = node.name in self.prelude.consts or scope.variant_owners(node.name) or node.name == "None"
            return None if ok else node
        elif cls is A.Unary:
            parts = [node.operand]
        elif cls is A.Binary:
            parts = [node.left, node.right]
        elif cls is A.ListLit or cls is A.TupleLit:
            parts = list(node.items)
        elif cls is A.MapLit:
            parts = [x for pair in node.entries for x in pair]
        elif cls is A.RecordLit:
            parts = [value for _, value, _ in node.fields]
        elif cls is A.Call and self.is_variant_callee(node.fn, scope):
            parts = list(node.args)
        else:
            return node
        for part in parts:
            found = self.non_constant(part, scope)
            if found is not None:
                return found
        return None

    @staticmethod
    def is_variant_callee(fn: Any, scope: ModuleScope) -> bool:
        if isinstance(fn, A.VariantPath):
            return True
        return isinstance(fn, A.Name) and scope.lookup(fn.name) is None and (
            fn.name in ("Some", "Ok", "Err") or bool(scope.variant_owners(fn.name)))

    # ---------------------------------------------------------------- agents
    def check_agent(self, agent: AgentInfo) -> None:
        agent.state = "checking"
        decl, scope = agent.decl, agent.scope
        file = scope.path
        for name, span in decl.uses:
            tool = self.lookup_tool(scope, name)
            self.note(file, span, name, tool)
            if tool is None:
                tools = [n for n, e in list(scope.items.items()) + list(scope.imports.items()) if e.kind == "tool"]
                self.error("E037", f"unknown tool `{name}`", span, file,
                           hint=did_you_mean(name, tools + [t for t in BUILTIN_TOOLS if self.builtin_tool(t)]))
        for proto, role, span in decl.follows:
            entity = scope.lookup(proto)
            self.note(file, span, proto, entity, "f")
            if entity is None or entity.kind != "protocol":
                self.error("E070", f"unknown protocol `{proto}`", span, file)
            elif role not in entity.info:
                self.error("E071", f"`{role}` is not a role of protocol `{proto}`", span, file,
                           hint="its roles: " + ", ".join(sorted(entity.info)))
        persistent = [f for f in agent.fields.values() if f.persistent]
        for field in persistent:
            reason = self.not_persistable(field.type, set())
            if reason is not None:
                self.error("E052", f"`@persistent` field `{field.name}` has type {show(field.type)}, which cannot be "
                           f"persisted ({reason})", field.decl.span, file)
        seen: dict[str, Any] = {}
        start_diverges = True
        message_types = iter(agent.message_types)
        for h in decl.handlers:
            key = "stop" if h.kind == "resting" else h.kind
            message_type = next(message_types) if h.kind == "message" else None
            if message_type is not None:
                key = "message:" + show(message_type)
            if key in seen:
                self.error("E012", f"duplicate handler `on {h.kind}` in agent `{decl.name}`", h.span, file)
            seen[key] = h
            if h.kind == "waking" and not persistent:
                self.warn("W006", f"`on waking` in agent `{decl.name}`, which has no `@persistent` field", h.span, file)
            diverges = self.check_handler(agent, h, message_type)
            if h.kind == "start":
                start_diverges = diverges
        agent.state = "done"
        result = agent.result
        if "start" in seen and result is not None and not is_open(result) and not prim_named(result, "Unit") \
                and not start_diverges:
            self.error("E045", f"`on start` of agent `{decl.name}` may end without yielding a {show(result)}",
                       seen["start"].span, file, hint="end every path with `yield(…)` or `fail …`")
        for field in agent.fields.values():
            if field.name not in agent.reads:
                self.warn("W008", f"field `{field.name}` of agent `{decl.name}` is never read", field.decl.span, file)

    def check_handler(self, agent: AgentInfo, h: Any, message_type: T.Type | None) -> bool:
        """Check one handler's body; True when it never reaches its end (it yields or fails on every path)."""
        scope = agent.scope
        cx = Body(scope, "handler", fallible=h.kind not in ("stop", "resting"), agent=agent, handler=h.kind)
        lc = Locals()
        if message_type is not None:
            var = lc.vars[h.param] = Var(message_type, cx)
            self.note(scope.path, h.span, h.param, var, "(", True)
        elif h.kind == "error":
            if h.param_type is not None:
                t = self.resolve_type(h.param_type, scope)
                if not (is_open(t) or prim_named(t, "Error")):
                    self.mismatch(T.ERROR, t, h.param_type.span, cx)
            var = lc.vars[h.param] = Var(T.ERROR, cx)
            self.note(scope.path, h.span, h.param, var, "(", True)
        diverges = self.block_type(h.body, cx, lc, discard=True) is NEVER
        h.nslots = cx.nslots
        return diverges

    def not_persistable(self, t: T.Type, seen: set) -> str | None:
        """Why a `@persistent` field of type t cannot be stored with a default (§3.5, §4.8), or None."""
        if isinstance(t, T.Prim):
            return None if t.name in ("Int", "Float", "Bool", "String", "Unit", "_") else f"{t.name} is not persistable"
        if isinstance(t, T.ListT):
            return self.not_persistable(t.elem, seen)
        if isinstance(t, T.OptionT):
            return self.not_persistable(t.inner, seen)
        if isinstance(t, T.MapT):
            return self.not_persistable(t.key, seen) or self.not_persistable(t.value, seen)
        if isinstance(t, T.TupleT):
            return next((r for r in (self.not_persistable(x, seen) for x in t.items) if r), None)
        if isinstance(t, (T.RecordT, T.EnumT)):
            key = (id(t.info), t.args)
            if key in seen:
                return None
            seen.add(key)
            if isinstance(t, T.RecordT):
                parts = [ft for _, ft in t.fields()]
            else:
                variants = t.variants()
                if variants and variants[0][1] is not None:
                    return f"the first variant of enum `{t.name}` has a payload, so it has no default"
                parts = [p for _, p in variants if p is not None]
            return next((r for r in (self.not_persistable(x, seen) for x in parts) if r), None)
        if isinstance(t, T.TypeVar):
            return "type parameters are not persistable"
        return f"{show(t)} values are not persistable"

    # ---------------------------------------------------------------- supervisors and effect handlers
    def check_supervisor(self, decl: Any, scope: ModuleScope) -> None:
        file = scope.path
        if not decl.children:
            self.error("E060", f"supervisor `{decl.name}` has no children", decl.span, file)
        for child in decl.children:
            entity = scope.lookup(child.name)
            self.note(file, child.span, child.name, entity, "f")
            cx = Body(scope, "child")
            lc = Locals()
            for _effect, handler in child.handlers:
                target = scope.lookup(handler)
                self.note(file, child.span, handler, target, "f")
                if target is None or target.kind != "handler":
                    self.error("E072", f"unknown effect handler `{handler}`", child.span, file)
            if entity is None or entity.kind not in ("agent", "supervisor"):
                self.error("E061", f"`{child.name}` is not an agent or a supervisor", child.span, file,
                           hint=did_you_mean(child.name, [n for n, e in scope.items.items()
                                                               if e.kind in ("agent", "supervisor")]))
                for _, value, _ in child.fields:
                    self.expr(value, cx, lc)
            elif entity.kind == "supervisor":
                for fname, value, fspan in child.fields:
                    self.error("E062", f"supervisor `{child.name}` has no field `{fname}`", fspan, file)
                    self.expr(value, cx, lc)
            else:
                self.check_field_inits(entity.info, child.fields, child.span, cx, lc, "E062",
                                       f"child `{child.name}`")
            child.nslots = cx.nslots

    def check_effect_handler(self, decl: Any, scope: ModuleScope) -> None:
        file = scope.path
        if decl.effect != "Infer":
            self.error("E075", f"effect handler `{decl.name}` handles `{decl.effect}`; only `Infer` is supported",
                       decl.span, file)
        seen: set[str] = set()
        for key, value, span in decl.entries:
            want = _EFFECT_KEYS.get(key)
            if want is None:
                self.error("E075", f"unknown effect handler key `{key}`", span, file,
                           hint=did_you_mean(key, _EFFECT_KEYS))
                continue
            if key in seen:
                self.error("E075", f"effect handler key `{key}` given twice", span, file)
            seen.add(key)
            found = T.STRING if isinstance(value, A.Template) else self.e_Literal(value, None, None, None)
            if not fits(want, found):
                self.error("E075", f"effect handler key `{key}` needs a {show(want)}, found {show(found)}", span,
                           file)

    # ---------------------------------------------------------------- tool blocks
    def check_tool_block(self, decl: Any, scope: ModuleScope) -> None:
        file = scope.path
        remotes: dict[str, Any] = {}
        names: set[str] = set()
        for fn in decl.fns:
            if fn.name in names:
                continue
            names.add(fn.name)
            remote = fn.name
            for attr in fn.attrs:
                if attr.name != "mcp_name":
                    continue
                remote = attr.value
                if not _REMOTE_NAME.fullmatch(remote):
                    self.error("E085", f"invalid `#[mcp_name]` value {remote!r}: it must be 1–128 characters of "
                               "A–Z, a–z, 0–9, `_`, `.` and `-`", attr.span, file)
            if remote in remotes:
                self.error("E085", f"tool functions `{remotes[remote]}` and `{fn.name}` of `{decl.name}` map to the "
                           f"same remote name {remote!r}", fn.span, file)
            remotes.setdefault(remote, fn.name)
        name = decl.name
        if name in BUILTIN_TOOLS:
            if name not in self.configured_tools:
                self.error("E086", f"tool block {name} shadows the built-in tool; configure [tools.{name}] or "
                           "rename it", decl.span, file)
            return
        try:
            unbound = bound_key(name, self.configured_tools) is None
        except AmbiguousBinding:   # E090, reported when the block was bound
            unbound = False
        if unbound:
            self.warn("W084", f"tool block `{name}` is bound to no [tools.{name}] entry in grove.toml", decl.span,
                      file, hint=f"add a [tools.{name}] section to grove.toml; calls fail until then")

    # ---------------------------------------------------------------- tests and entry
    def check_test(self, decl: Any, scope: ModuleScope, names: dict[str, Any]) -> None:
        if not scope.is_test:
            self.error("E050", "`test` blocks are only allowed in test files (`*_test.sg`)", decl.span, scope.path)
        if decl.name in names:
            self.error("E055", f"duplicate test name \"{decl.name}\"", decl.span, scope.path)
        names[decl.name] = decl
        cx = Body(scope, "test", fallible=True)
        self.block_type(decl.body, cx, Locals(), discard=True)
        decl.nslots = cx.nslots

    def check_run(self, decl: Any, scope: ModuleScope) -> None:
        if scope.is_test:
            self.error("E051", "`run` is not allowed in a test file", decl.span, scope.path)
            return
        if scope is not self.root_scope:
            return
        entity = scope.lookup(decl.name)
        file = scope.path
        self.note(file, decl.span, decl.name, entity, "f")
        if entity is None or entity.kind not in ("agent", "supervisor"):
            what = f"`{decl.name}` is a {entity.kind}" if entity else f"unknown name `{decl.name}`"
            self.error("E041", f"`run {decl.name}`: {what}, not an agent or supervisor", decl.span, file)
            return
        if entity.kind != "agent":
            return
        agent = entity.info
        plain = [f.name for f in agent.fields.values() if not f.persistent]
        if plain:
            self.error("E041", f"entry agent `{agent.name}` cannot have fields ({', '.join(plain)}): nothing "
                       "initialises them", decl.span, file, hint="only `@persistent` fields are allowed here")
        handlers = agent.decl.handlers
        if not any(h.kind == "start" for h in handlers):
            self.error("E041", f"entry agent `{agent.name}` has no `on start` handler", decl.span, file)
        for h in handlers:
            if h.kind == "message":
                self.warn("W007", f"`on message` of entry agent `{agent.name}` never runs", h.span, agent.scope.path)
