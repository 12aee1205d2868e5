"""Item-level rules: functions, constants, agents and their handlers, supervisors, effect handlers, tool blocks,
tests and the entry declaration (SPEC §3.1, §3.4, §3.5, §3.7, §3.8).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..binding import BUILTIN_TOOLS, AmbiguousBinding, bound_key
from ..core import types as T
from ..diagnostics import did_you_mean
from ..syntax import ast as A
from . import agentexprs
from .body import Body, Locals, Var
from .env import ModuleScope
from .symbols import AgentInfo
from .typeops import NEVER, fits, is_open, prim_named, show

if TYPE_CHECKING:
    from .context import Checking

_REMOTE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_SERVED_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_EFFECT_KEYS = {"model": T.STRING, "temperature": T.FLOAT, "max_tokens": T.INT}


def check_module(c: Checking, scope: ModuleScope) -> None:
    tests: dict[str, Any] = {}
    evals: dict[str, Any] = {}
    for item in scope.module.items:
        kind = type(item)
        if kind is A.FnDecl:
            if not item.extern:
                check_fn(c, item, scope)
        elif kind is A.ConstDecl:
            check_const(c, item, scope)
        elif kind is A.AgentDecl:
            agent = c.ns.agent_decls.get(id(item))
            if agent is not None and agent.state == "new":
                check_agent(c, agent)
        elif kind is A.SupervisorDecl:
            check_supervisor(c, item, scope)
        elif kind is A.EffectHandlerDecl:
            check_effect_handler(c, item, scope)
        elif kind is A.ToolDecl:
            check_tool_block(c, item, scope)
        elif kind is A.TestDecl:
            check_test(c, item, scope, tests)
        elif kind is A.RunDecl:
            check_run(c, item, scope)
        elif kind is A.EvalDecl:
            check_eval(c, item, scope, evals)


# ---------------------------------------------------------------- functions and constants
def check_fn(c: Checking, decl: Any, scope: ModuleScope) -> None:
    entity = scope.items.get(decl.name)
    sig = entity.info if entity is not None and entity.decl is decl else c.ns.fn_signature(decl, scope)
    cx = Body(scope, "fn", fallible=sig.fails, ret=sig.ret, tparams=tuple(decl.tparams))
    lc = Locals()
    for param, (name, t) in zip(decl.params, sig.params):
        var = lc.vars[name] = Var(t, cx)
        c.note(scope.path, param.span, name, var, "h", True)
    unit = prim_named(sig.ret, "Unit")
    t = c.block_type(decl.body, cx, lc, sig.ret, discard=unit)
    decl.nslots = cx.nslots
    if unit or t is NEVER:
        return
    if not c.has_tail(decl.body):
        c.error("E045", f"function `{decl.name}` may end without returning a value of type {show(sig.ret)}",
                decl.span, scope.path, hint="end every path with `return …;`, `fail …` or a trailing value")
    elif not fits(sig.ret, t):
        tail = decl.body.value if decl.body.value is not None else decl.body.stmts[-1]
        c.mismatch(sig.ret, t, tail.span, cx)


def check_const(c: Checking, decl: Any, scope: ModuleScope) -> None:
    entity = scope.items.get(decl.name)
    declared = entity.info if entity is not None and entity.decl is decl else c.ns.resolve_type(decl.type, scope)
    cx = Body(scope, "const")
    c.expect(decl.value, declared, cx, Locals())
    decl.nslots = cx.nslots
    offending = non_constant(c, decl.value, scope)
    if offending is not None:
        c.error("E048", "`const` initialiser is not a constant expression", offending.span, scope.path,
                hint="constants may use literals, other constants, operators and constructions of constants")


def non_constant(c: Checking, node: Any, scope: ModuleScope) -> Any:
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
        ok = node.name in c.prelude.consts or scope.variant_owners(node.name) or node.name == "None"
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
    elif cls is A.Call and is_variant_callee(node.fn, scope):
        parts = list(node.args)
    else:
        return node
    for part in parts:
        found = non_constant(c, part, scope)
        if found is not None:
            return found
    return None


def is_variant_callee(fn: Any, scope: ModuleScope) -> bool:
    if isinstance(fn, A.VariantPath):
        return True
    return isinstance(fn, A.Name) and scope.lookup(fn.name) is None and (
        fn.name in ("Some", "Ok", "Err") or bool(scope.variant_owners(fn.name)))


# ---------------------------------------------------------------- agents
def check_agent(c: Checking, agent: AgentInfo) -> None:
    agent.state = "checking"
    decl, scope = agent.decl, agent.scope
    file = scope.path
    for attr in decl.attrs or ():
        check_mcp_tool(c, agent, attr)
    for name, span in decl.uses:
        tool = c.ns.lookup_tool(scope, name)
        c.note(file, span, name, tool)
        if tool is None:
            tools = [n for n, e in list(scope.items.items()) + list(scope.imports.items()) if e.kind == "tool"]
            c.error("E037", f"unknown tool `{name}`", span, file,
                    hint=did_you_mean(name, tools + [t for t in BUILTIN_TOOLS if c.ns.builtin_tool(t)]))
    for proto, role, span in decl.follows:
        entity = scope.lookup(proto)
        c.note(file, span, proto, entity, "f")
        if entity is None or entity.kind != "protocol":
            c.error("E070", f"unknown protocol `{proto}`", span, file)
        elif role not in entity.info:
            c.error("E071", f"`{role}` is not a role of protocol `{proto}`", span, file,
                    hint="its roles: " + ", ".join(sorted(entity.info)))
    persistent = [f for f in agent.fields.values() if f.persistent]
    for field in persistent:
        reason = not_persistable(c, field.type, set())
        if reason is not None:
            c.error("E052", f"`@persistent` field `{field.name}` has type {show(field.type)}, which cannot be "
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
            c.error("E012", f"duplicate handler `on {h.kind}` in agent `{decl.name}`", h.span, file)
        seen[key] = h
        if h.kind == "waking" and not persistent:
            c.warn("W006", f"`on waking` in agent `{decl.name}`, which has no `@persistent` field", h.span, file)
        diverges = check_handler(c, agent, h, message_type)
        if h.kind == "start":
            start_diverges = diverges
    agent.state = "done"
    result = agent.result
    if "start" in seen and result is not None and not is_open(result) and not prim_named(result, "Unit") \
            and not start_diverges:
        c.error("E045", f"`on start` of agent `{decl.name}` may end without yielding a {show(result)}",
                seen["start"].span, file, hint="end every path with `yield(…)` or `fail …`")
    for field in agent.fields.values():
        if field.name not in agent.reads:
            c.warn("W008", f"field `{field.name}` of agent `{decl.name}` is never read", field.decl.span, file)


def check_mcp_tool(c: Checking, agent: AgentInfo, attr: Any) -> None:
    """`#[mcp_tool = "name"]` (SPEC §21): a valid name, given once in the program, on an agent whose
    non-persistent fields all have a JSON form (they are the tool's parameters)."""
    file = agent.scope.path
    name = attr.value
    if not _SERVED_NAME.fullmatch(name):
        c.error("E095", f"invalid `#[mcp_tool]` name {name!r}: it must be 1–64 characters of A–Z, a–z, "
                "0–9, `_`, `.` and `-`", attr.span, file)
        return
    other = c.mcp_tools.setdefault(name, agent)
    if other is not agent:
        c.error("E095", f"agents `{other.name}` and `{agent.name}` are both served as the tool {name!r}",
                attr.span, file, hint="give each `#[mcp_tool]` a name of its own")
    for field in agent.fields.values():
        if not field.persistent and not has_json_form(field.type):
            c.error("E095", f"agent `{agent.name}` cannot be served as a tool: its field `{field.name}` has "
                    f"type {show(field.type)}, which has no JSON form", field.decl.span, file)


def has_json_form(t: T.Type) -> bool:
    from ..core.convert import ConversionError, json_schema
    try:
        json_schema(t)
    except ConversionError:
        return False
    return True


def check_handler(c: Checking, agent: AgentInfo, h: Any, message_type: T.Type | None) -> bool:
    """Check one handler's body; True when it never reaches its end (it yields or fails on every path)."""
    scope = agent.scope
    cx = Body(scope, "handler", fallible=h.kind not in ("stop", "resting"), agent=agent, handler=h.kind)
    lc = Locals()
    if message_type is not None:
        var = lc.vars[h.param] = Var(message_type, cx)
        c.note(scope.path, h.span, h.param, var, "(", True)
    elif h.kind == "error":
        if h.param_type is not None:
            t = c.ns.resolve_type(h.param_type, scope)
            if not (is_open(t) or prim_named(t, "Error")):
                c.mismatch(T.ERROR, t, h.param_type.span, cx)
        var = lc.vars[h.param] = Var(T.ERROR, cx)
        c.note(scope.path, h.span, h.param, var, "(", True)
    diverges = c.block_type(h.body, cx, lc, discard=True) is NEVER
    h.nslots = cx.nslots
    return diverges


def not_persistable(c: Checking, t: T.Type, seen: set) -> str | None:
    """Why a `@persistent` field of type t cannot be stored with a default (§3.5, §4.8), or None."""
    if isinstance(t, T.Prim):
        return None if t.name in ("Int", "Float", "Bool", "String", "Unit", "_") else f"{t.name} is not persistable"
    if isinstance(t, T.ListT):
        return not_persistable(c, t.elem, seen)
    if isinstance(t, T.OptionT):
        return not_persistable(c, t.inner, seen)
    if isinstance(t, T.MapT):
        return not_persistable(c, t.key, seen) or not_persistable(c, t.value, seen)
    if isinstance(t, T.TupleT):
        return next((r for r in (not_persistable(c, x, seen) for x in t.items) if r), None)
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
        return next((r for r in (not_persistable(c, x, seen) for x in parts) if r), None)
    if isinstance(t, T.TypeVar):
        return "type parameters are not persistable"
    return f"{show(t)} values are not persistable"


# ---------------------------------------------------------------- supervisors and effect handlers
def check_supervisor(c: Checking, decl: Any, scope: ModuleScope) -> None:
    file = scope.path
    if not decl.children:
        c.error("E060", f"supervisor `{decl.name}` has no children", decl.span, file)
    for child in decl.children:
        entity = scope.lookup(child.name)
        c.note(file, child.span, child.name, entity, "f")
        cx = Body(scope, "child")
        lc = Locals()
        for _effect, handler in child.handlers:
            target = scope.lookup(handler)
            c.note(file, child.span, handler, target, "f")
            if target is None or target.kind != "handler":
                c.error("E072", f"unknown effect handler `{handler}`", child.span, file)
        if entity is None or entity.kind not in ("agent", "supervisor"):
            c.error("E061", f"`{child.name}` is not an agent or a supervisor", child.span, file,
                    hint=did_you_mean(child.name, [n for n, e in scope.items.items()
                                                           if e.kind in ("agent", "supervisor")]))
            for _, value, _ in child.fields:
                c.expr(value, cx, lc)
        elif entity.kind == "supervisor":
            for fname, value, fspan in child.fields:
                c.error("E062", f"supervisor `{child.name}` has no field `{fname}`", fspan, file)
                c.expr(value, cx, lc)
        else:
            agentexprs.check_field_inits(c, entity.info, child.fields, child.span, cx, lc, "E062",
                                         f"child `{child.name}`")
        child.nslots = cx.nslots


def check_effect_handler(c: Checking, decl: Any, scope: ModuleScope) -> None:
    file = scope.path
    if decl.effect != "Infer":
        c.error("E075", f"effect handler `{decl.name}` handles `{decl.effect}`; only `Infer` is supported",
                decl.span, file)
    seen: set[str] = set()
    for key, value, span in decl.entries:
        want = _EFFECT_KEYS.get(key)
        if want is None:
            c.error("E075", f"unknown effect handler key `{key}`", span, file,
                    hint=did_you_mean(key, _EFFECT_KEYS))
            continue
        if key in seen:
            c.error("E075", f"effect handler key `{key}` given twice", span, file)
        seen.add(key)
        found = T.STRING if isinstance(value, A.Template) else c.e_Literal(value, None, None, None)
        if not fits(want, found):
            c.error("E075", f"effect handler key `{key}` needs a {show(want)}, found {show(found)}", span,
                    file)


# ---------------------------------------------------------------- tool blocks
def check_tool_block(c: Checking, decl: Any, scope: ModuleScope) -> None:
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
                c.error("E085", f"invalid `#[mcp_name]` value {remote!r}: it must be 1–128 characters of "
                        "A–Z, a–z, 0–9, `_`, `.` and `-`", attr.span, file)
        if remote in remotes:
            c.error("E085", f"tool functions `{remotes[remote]}` and `{fn.name}` of `{decl.name}` map to the "
                    f"same remote name {remote!r}", fn.span, file)
        remotes.setdefault(remote, fn.name)
    name = decl.name
    if name in BUILTIN_TOOLS:
        if name not in c.configured_tools:
            c.error("E086", f"tool block {name} shadows the built-in tool; configure [tools.{name}] or "
                    "rename it", decl.span, file)
        return
    try:
        unbound = bound_key(name, c.configured_tools) is None
    except AmbiguousBinding:   # E090, reported when the block was bound
        unbound = False
    if unbound:
        c.warn("W084", f"tool block `{name}` is bound to no [tools.{name}] entry in grove.toml", decl.span,
               file, hint=f"add a [tools.{name}] section to grove.toml; calls fail until then")


# ---------------------------------------------------------------- tests and entry
def check_test(c: Checking, decl: Any, scope: ModuleScope, names: dict[str, Any]) -> None:
    if not scope.is_test:
        c.error("E050", "`test` blocks are only allowed in test files (`*_test.sg`)", decl.span, scope.path)
    if decl.name in names:
        c.error("E055", f"duplicate test name \"{decl.name}\"", decl.span, scope.path)
    names[decl.name] = decl
    if decl.body.stmts and type(decl.body.stmts[0]) is A.ReplayStmt:
        c.first_replays.add(id(decl.body.stmts[0]))
    cx = Body(scope, "test", fallible=True)
    c.block_type(decl.body, cx, Locals(), discard=True)
    decl.nslots = cx.nslots


def check_eval(c: Checking, decl: Any, scope: ModuleScope, names: dict[str, Any]) -> None:
    """An eval block (SPEC §22.1): the row is a variable of the declared type; `score` statements stand
    directly in its body."""
    if not scope.module.path.endswith("_eval.sg"):
        c.error("E096", "`eval` blocks are only allowed at the top level of an `_eval.sg` file", decl.span,
                scope.path, hint="move it to a file whose name ends in `_eval.sg`")
    if decl.name in names:
        c.error("E055", f"duplicate eval name \"{decl.name}\"", decl.span, scope.path)
    names[decl.name] = decl
    cx = Body(scope, "eval", fallible=True)
    lc = Locals()
    decl.row_t = c.ns.resolve_type(decl.row.type, scope)
    row = lc.vars[decl.row.name] = Var(decl.row_t, cx)
    c.note(scope.path, decl.row.span, decl.row.name, row, "h", True)
    decl.row_slot = row.slot
    c.direct_scores.update(id(s) for s in decl.body.stmts if type(s) is A.ScoreStmt)
    c.block_type(decl.body, cx, lc, discard=True)
    decl.nslots = cx.nslots


def check_run(c: Checking, decl: Any, scope: ModuleScope) -> None:
    if scope.is_test:
        c.error("E051", "`run` is not allowed in a test file", decl.span, scope.path)
        return
    if scope is not c.ns.root_scope:
        return
    entity = scope.lookup(decl.name)
    file = scope.path
    c.note(file, decl.span, decl.name, entity, "f")
    if entity is None or entity.kind not in ("agent", "supervisor"):
        what = f"`{decl.name}` is a {entity.kind}" if entity else f"unknown name `{decl.name}`"
        c.error("E041", f"`run {decl.name}`: {what}, not an agent or supervisor", decl.span, file)
        return
    if entity.kind != "agent":
        return
    agent = entity.info
    plain = [f.name for f in agent.fields.values() if not f.persistent]
    if plain:
        c.error("E041", f"entry agent `{agent.name}` cannot have fields ({', '.join(plain)}): nothing "
                "initialises them", decl.span, file, hint="only `@persistent` fields are allowed here")
    handlers = agent.decl.handlers
    if not any(h.kind == "start" for h in handlers):
        c.error("E041", f"entry agent `{agent.name}` has no `on start` handler", decl.span, file)
    for h in handlers:
        if h.kind == "message":
            c.warn("W007", f"`on message` of entry agent `{agent.name}` never runs", h.span, agent.scope.path)
