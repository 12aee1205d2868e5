"""AST -> Python closures (the tree-walking interpreter, compiled once per node).

Every expression becomes `fn(frame) -> value`; every statement `fn(frame) -> signal`, where the signal is
None (go on), BREAK, CONTINUE or a `Return`. Statements return signals rather than raising because a
`return` in a hot recursive function would otherwise cost an exception per call; only control flow that
starts inside an expression (a match arm `=> return x`, a `return` inside a catch fallback block) travels
as an exception (`ControlFlow`) and is turned back into a signal by the enclosing function or loop.

Names are bound while compiling, before anything runs: unknown names are reported as diagnostics (E010,
E011, ...) and the program never starts.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from .. import types as T
from ..diagnostics import Diagnostic
from ..loader import reexports
from ..syntax import ast as A
from .agents import CALL_DEPTH_LIMIT, YieldSignal
from .errors import SageRaise, raise_at as _raise_at
from .operators import _BINARY, _BOOLEAN_OPS, _SLOT_CONST_OPS, _builtin_misuse, _type_error
from .scopes import BlockScope, Entity, FrameLayout, ModuleEnv
from .values import UNIT, ErrorValue, Function, Record, Variant, display

INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1


class Return:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


BREAK = object()
CONTINUE = object()


class ControlFlow(Exception):
    """A break/continue/return that started inside an expression."""

    def __init__(self, signal: Any) -> None:
        super().__init__()
        self.signal = signal


class CompileError(Exception):
    pass


def located(exc: SageRaise, file: str, span: tuple, ctx: Any) -> SageRaise:
    """Attach the raising site to an error that does not have one yet."""
    err = exc.error
    if err.span is None:
        err.span = (file, span)
        if ctx is not None and err.agent is None:
            err.agent = getattr(ctx, "display_name", None)
    return exc




# ---------------------------------------------------------------- compiled declarations

class FnRecord:
    """A compiled function; `impl(ctx, *args)` runs it. Filled in after compilation so recursion works."""

    __slots__ = ("name", "decl", "impl", "value", "env", "fails")

    def __init__(self, name: str, decl: Any, env: ModuleEnv) -> None:
        self.name = name
        self.decl = decl
        self.env = env
        self.impl: Callable[..., Any] | None = None
        self.value: Function | None = None
        self.fails = bool(getattr(decl, "fails", False))


class CompiledAgent:
    __slots__ = ("name", "decl", "env", "handlers", "message_handlers", "field_names", "persistent",
                 "persistent_types", "receives")

    def __init__(self, name: str, decl: Any, env: ModuleEnv) -> None:
        self.name = name
        self.decl = decl
        self.env = env
        self.handlers: dict[str, Any] = {}
        self.message_handlers: list[tuple[Callable[[Any], bool], Any]] = []
        self.field_names = [f.name for f in decl.fields if f.annotation != "persistent"]
        self.persistent = [f for f in decl.fields if f.annotation == "persistent"]
        self.persistent_types: dict[str, Any] = {}
        self.receives = decl.receives


class CompiledBody:
    """A handler, test or other body: call `run(ctx, *args)`."""

    __slots__ = ("run", "span")

    def __init__(self, run: Callable[..., Any], span: tuple) -> None:
        self.run = run
        self.span = span


class Compiler:
    """Compiles a loaded program. `host` supplies what the runtime provides (builtins, agents, effects)."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.diagnostics: list[Diagnostic] = []
        self.envs: dict[int, ModuleEnv] = {}
        self.root_env: ModuleEnv | None = None
        self.file = ""
        self.env: ModuleEnv | None = None
        self.fn_context: str = "plain"   # plain | fails | handler | stop | test | const
        self.agent: CompiledAgent | None = None
        self.handler_kind: str | None = None
        self.pending: list[Callable[[], None]] = []

    # ---------------------------------------------------------------- diagnostics
    def error(self, code: str, message: str, span: tuple | None, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, self.file, span, hint=hint))

    # ---------------------------------------------------------------- program
    def compile_program(self, program: Any) -> None:
        for module in program.modules:
            parent = self.envs.get(id(module.parent)) if module.parent is not None else None
            env = ModuleEnv(module, parent)
            self.envs[id(module)] = env
            if parent is not None:
                parent.children[module.name] = env
        self.root_env = self.envs[id(program.root)]
        for module in program.modules:
            self._declare_items(self.envs[id(module)])
        root = program.root
        if getattr(root, "sibling", None) is not None:
            sibling_env = self.envs[id(root.sibling)]
            self.root_env.children.update(sibling_env.children)
            for name, entity in sibling_env.items.items():
                if name in self.root_env.items:
                    self.file = self.root_env.path
                    self.error("E012", f"duplicate definition of `{name}` (also in {root.sibling.path})",
                               self.root_env.items[name].decl.span)
                else:
                    self.root_env.imports[name] = entity
        # children before parents, so that a `pub use` re-export exists before anyone imports through it
        for module in reversed(program.modules):
            self._resolve_uses(self.envs[id(module)])
        for module in program.modules:
            self._compile_items(self.envs[id(module)])
        for job in self.pending:
            job()

    def _declare_items(self, env: ModuleEnv) -> None:
        self.file = env.path
        kinds = {A.FnDecl: "fn", A.ConstDecl: "const", A.RecordDecl: "record", A.EnumDecl: "enum",
                 A.AgentDecl: "agent", A.SupervisorDecl: "supervisor", A.ToolDecl: "tool",
                 A.ProtocolDecl: "protocol", A.EffectHandlerDecl: "handler"}
        for item in env.module.items:
            kind = kinds.get(type(item))
            if kind is None:
                if isinstance(item, A.ModDecl) and item.module is not None:
                    child = self.envs[id(item.module)]
                    self._bind(env, Entity("module", item.name, item, child, env, item.pub), item.span)
                continue
            data: Any = None
            if kind == "fn":
                data = FnRecord(item.name, item, env)
            elif kind == "record":
                data = T.RecordInfo(item.name, list(item.tparams), [])
            elif kind == "enum":
                data = T.EnumInfo(item.name, list(item.tparams), [])
            elif kind == "agent":
                data = CompiledAgent(item.name, item, env)
            elif kind == "const":
                data = [None, False]   # value, evaluated
            elif kind == "supervisor":
                from .supervisors import SupervisorPlan
                data = SupervisorPlan(item.name, item.strategy)
            self._bind(env, Entity(kind, item.name, item, data, env, bool(getattr(item, "pub", False))), item.span)
        for entity in list(env.items.values()):
            if entity.kind == "record":
                self._fill_record(entity)
            elif entity.kind == "enum":
                self._fill_enum(entity)

    def _bind(self, env: ModuleEnv, entity: Entity, span: tuple) -> None:
        if entity.name in env.items:
            self.error("E012", f"duplicate definition of `{entity.name}`", span)
            return
        env.items[entity.name] = entity

    def _fill_record(self, entity: Entity) -> None:
        decl, info = entity.decl, entity.data
        seen = set()
        for f in decl.fields:
            if f.name in seen:
                self.error("E012", f"duplicate field `{f.name}` in record `{decl.name}`", f.span)
            seen.add(f.name)
            info.fields.append((f.name, self.resolve_type(f.type, entity.module, decl.tparams)))

    def _fill_enum(self, entity: Entity) -> None:
        decl, info = entity.decl, entity.data
        seen = set()
        for v in decl.variants:
            if v.name in seen:
                self.error("E012", f"duplicate variant `{v.name}` in enum `{decl.name}`", v.span)
            seen.add(v.name)
            payload = None if v.type is None else self.resolve_type(v.type, entity.module, decl.tparams)
            info.variants.append((v.name, payload))

    # ---------------------------------------------------------------- use
    def _resolve_uses(self, env: ModuleEnv) -> None:
        self.file = env.path
        for item in env.module.items:
            if not isinstance(item, A.UseDecl):
                continue
            path = item.path
            if item.kind == "leaf":
                target = self._resolve_path(env, path, item.span)
                if target is not None:
                    self._import(env, item.alias or path[-1], target, item)
            elif item.kind == "group":
                module = self._resolve_module(env, path, item.span)
                if module is None:
                    continue
                for name, alias in item.names:
                    target = self._member(module, name, item.span)
                    if target is not None:
                        self._import(env, alias or name, target, item)
            else:
                module = self._resolve_module(env, path, item.span)
                if module is None:
                    continue
                for name, entity in module.items.items():
                    if entity.pub and name not in env.items:
                        env.imports[name] = entity

    def _import(self, env: ModuleEnv, name: str, target: Entity, item: Any) -> None:
        if name in env.items or name in env.imports and env.imports[name] is not target:
            self.error("E012", f"duplicate definition of `{name}` (imported)", item.span)
            return
        env.imports[name] = target

    def _start_module(self, env: ModuleEnv, first: str) -> ModuleEnv | None:
        if first in env.children:
            return env.children[first]
        root = self.root_env
        if root is not None and first in root.children:
            return root.children[first]
        return None

    def _resolve_module(self, env: ModuleEnv, path: list[str], span: tuple) -> ModuleEnv | None:
        module = self._start_module(env, path[0])
        if module is None:
            self.error("E042", f"unknown module `{path[0]}`", span, hint=f"declare it with `mod {path[0]};`")
            return None
        for seg in path[1:]:
            nxt = module.children.get(seg)
            if nxt is None:
                self.error("E042", f"module `{seg}` not found in `{'::'.join(path)}`", span)
                return None
            module = nxt
        return module

    def _resolve_path(self, env: ModuleEnv, path: list[str], span: tuple) -> Entity | None:
        if len(path) == 1:
            module = self._start_module(env, path[0])
            if module is None:
                self.error("E042", f"unknown module `{path[0]}`", span)
                return None
            return Entity("module", path[0], None, module, env, True)
        module = self._resolve_module(env, path[:-1], span)
        if module is None:
            return None
        return self._member(module, path[-1], span)

    def _member(self, module: ModuleEnv, name: str, span: tuple) -> Entity | None:
        entity = module.items.get(name)
        if entity is None:
            entity = module.imports.get(name)
            if entity is not None and not reexports(module.module, name):
                entity = None
        if entity is None:
            if name in module.children:
                return Entity("module", name, None, module.children[name], module, True)
            self.error("E044", f"`{name}` not found in module `{module.module.name}`", span)
            return None
        if not entity.pub and module.items.get(name) is entity:
            self.error("E043", f"`{name}` is private to module `{module.module.name}`", span,
                       hint=f"mark it `pub` in {module.path}")
            return None
        return entity

    # ---------------------------------------------------------------- types
    def resolve_type(self, texpr: Any, env: ModuleEnv, tparams: Any = ()) -> T.Type:
        if texpr is None:
            return T.UNIT
        return T.from_type_expr(texpr, lambda t: self.resolve_type(t, env, tparams),
                                lambda t, args: self._named_type(t, args, env, tparams))

    def _named_type(self, texpr: Any, args: list, env: ModuleEnv, tparams: Any) -> T.Type:
        if texpr.kind == "agent":
            return T.AgentT(texpr.name)
        name = texpr.name
        if name in (tparams or ()):
            return T.TypeVar(name)
        entity = self._type_entity(env, name)
        if entity is None:
            self.error("E011", f"unknown type `{name}`", texpr.span)
            return T.UNIT
        if entity.kind == "record":
            return T.RecordT(entity.data, args)
        if entity.kind == "enum":
            return T.EnumT(entity.data, args)
        self.error("E011", f"`{name}` is not a type", texpr.span)
        return T.UNIT

    def _type_entity(self, env: ModuleEnv, name: str) -> Entity | None:
        if "::" in name:
            parts = name.split("::")
            module = self._start_module(env, parts[0])
            for seg in parts[1:-1]:
                module = module.children.get(seg) if module else None
            return module.lookup(parts[-1]) if module else None
        entity = env.lookup(name)
        if entity is None:
            entity = self.host.prelude_type(name)
        return entity

    # ---------------------------------------------------------------- items
    def _compile_items(self, env: ModuleEnv) -> None:
        self.env = env
        self.file = env.path
        for entity in list(env.items.values()):
            if entity.kind == "fn":
                self._compile_fn(entity.data)
            elif entity.kind == "const":
                self._compile_const(entity)
            elif entity.kind == "agent":
                self._compile_agent(entity.data)
            elif entity.kind == "supervisor":
                from .supervisors import compile_supervisor
                compile_supervisor(self, entity)
        for item in env.module.items:
            if isinstance(item, A.TestDecl):
                self.host.add_test(item, self._compile_body(item.body, [], "test", None, item.span), env)

    def _compile_const(self, entity: Entity) -> None:
        decl = entity.decl
        layout = FrameLayout(None)
        scope = BlockScope(layout, None)
        saved = self.fn_context
        self.fn_context = "const"
        code = self.expr(decl.value, scope, self.resolve_type(decl.type, self.env))
        self.fn_context = saved
        cell = entity.data
        nslots = layout.nslots
        file = self.file

        def evaluate() -> Any:
            if not cell[1]:
                frame = [None] * nslots
                try:
                    cell[0] = code(frame)
                except SageRaise as exc:
                    raise located(exc, file, decl.span, None)
                cell[1] = True
            return cell[0]
        entity.data = cell
        cell.append(evaluate)

    def _compile_fn(self, rec: FnRecord) -> None:
        decl = rec.decl
        if decl.extern:
            impl = self.host.extern_impl(decl, self.resolve_type(decl.ret, self.env, decl.tparams))
            if impl is None:
                problems = self.host.extern_problems()
                self.error("E093", f"no implementation for `extern fn {decl.name}`", decl.span,
                           hint="; ".join(problems) if problems else
                           "define it in a Python module listed in grove.toml `[extern] modules`")
                rec.impl = lambda ctx, *args: UNIT
                return
            rec.impl = lambda ctx, *args: impl(*args)
            rec.value = Function(decl.name, impl)
            return
        layout = FrameLayout(None)
        scope = BlockScope(layout, None)
        slots = []
        seen = set()
        for p in decl.params:
            if p.name in seen:
                self.error("E012", f"duplicate parameter `{p.name}`", p.span)
            seen.add(p.name)
            slots.append(scope.declare(p.name))
        saved = (self.fn_context, self.handler_kind, self.agent)
        self.fn_context = "fails" if decl.fails else "plain"
        self.handler_kind = None
        body = self.function_body(decl.body, scope)
        self.fn_context, self.handler_kind, self.agent = saved
        rec.impl = _make_function(body, layout, len(slots), decl.name, self.file, decl.span)
        impl = rec.impl
        host = self.host
        rec.value = Function(decl.name, lambda *args: impl(host.current_context(), *args))

    def _compile_body(self, block: Any, params: list, context: str, agent: CompiledAgent | None,
                      span: tuple) -> CompiledBody:
        layout = FrameLayout(None)
        scope = BlockScope(layout, None)
        for name in params:
            scope.declare(name)
        saved = (self.fn_context, self.agent, self.handler_kind)
        self.fn_context = context
        self.agent = agent
        body = self.block_stmts(block, scope)
        self.fn_context, self.agent, self.handler_kind = saved
        run = _make_function(body, layout, len(params), None, self.file, span)
        return CompiledBody(run, span)

    def _compile_agent(self, agent: CompiledAgent) -> None:
        decl = agent.decl
        seen_fields = set()
        for f in decl.fields:
            if f.name in seen_fields:
                self.error("E012", f"duplicate field `{f.name}` in agent `{decl.name}`", f.span)
            seen_fields.add(f.name)
            t = self.resolve_type(f.type, self.env)
            if f.annotation == "persistent":
                agent.persistent_types[f.name] = t
        for tool_name, span in decl.uses:
            if not self.host.tool_exists(self.env, tool_name):
                self.error("E037", f"unknown tool `{tool_name}`", span)
        for h in decl.handlers:
            kind = h.kind
            self.handler_kind = kind
            context = "stop" if kind in ("stop", "resting") else "handler"
            key = "stop" if kind == "resting" else kind
            if kind == "message":
                mtype = self.resolve_type(h.param_type, self.env)
                body = self._compile_body(h.body, [h.param], context, agent, h.span)
                agent.message_handlers.append((type_predicate(mtype), body))
                continue
            if key in agent.handlers:
                self.error("E012", f"duplicate handler `on {kind}` in agent `{decl.name}`", h.span)
            params = [h.param] if kind == "error" else []
            agent.handlers[key] = self._compile_body(h.body, params, context, agent, h.span)
        self.handler_kind = None

    # ---------------------------------------------------------------- blocks and statements
    def block_stmts(self, block: Any, scope: BlockScope) -> Callable[[list], Any]:
        """A block run as statements: returns a signal (None, BREAK, CONTINUE, Return)."""
        inner = scope.child()
        stmts = [self.stmt(s, inner) for s in block.stmts]
        if block.value is not None:
            value = self.expr(block.value, inner)
            last = _discard(value)
            stmts.append(last)
        stmts = [s for s in stmts if s is not None]
        return _sequence(stmts)

    def function_body(self, block: Any, scope: BlockScope) -> Callable[[list], Any]:
        """A function body. It returns a signal from its statements (a `Return`), or else the raw value of its
        tail: the trailing expression, a final match statement, or a final `return e;` (the common case,
        which so needs no `Return` object)."""
        inner = scope.child()
        stmts_ast = list(block.stmts)
        value_ast = block.value
        if value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.MatchStmt):
            value_ast = stmts_ast.pop().match
        elif value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.ReturnStmt) \
                and stmts_ast[-1].value is not None and scope.layout.parent_scope is None:
            value_ast = stmts_ast.pop().value
        stmts = [self.stmt(s, inner) for s in stmts_ast]
        stmts = [s for s in stmts if s is not None]
        if value_ast is None:
            return _sequence(stmts)
        tail = self.expr(value_ast, inner)
        if not stmts:
            return tail
        if len(stmts) == 1:
            first = stmts[0]

            def one_then_tail(frame: list) -> Any:
                sig = first(frame)
                if sig is not None:
                    return sig
                return tail(frame)
            return one_then_tail

        def then_tail(frame: list) -> Any:
            for st in stmts:
                sig = st(frame)
                if sig is not None:
                    return sig
            return tail(frame)
        return then_tail

    def block_value(self, block: Any, scope: BlockScope, expected: Any = None) -> Callable[[list], Any]:
        """A block used for its value (catch fallbacks, closures, arms)."""
        inner = scope.child()
        stmts_ast = list(block.stmts)
        value_ast = block.value
        if value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.MatchStmt):
            value_ast = stmts_ast.pop().match
        stmts = [self.stmt(s, inner) for s in stmts_ast]
        stmts = [s for s in stmts if s is not None]
        value = self.expr(value_ast, inner, expected) if value_ast is not None else (lambda f: UNIT)
        if not stmts:
            return value

        def run(frame: list) -> Any:
            for s in stmts:
                sig = s(frame)
                if sig is not None:
                    raise ControlFlow(sig)
            return value(frame)
        return run

    def stmt(self, node: Any, scope: BlockScope) -> Callable[[list], Any] | None:
        method = getattr(self, "s_" + type(node).__name__)
        return method(node, scope)

    def s_ExprStmt(self, node: Any, scope: BlockScope):
        return _discard(self.expr(node.expr, scope))

    def s_MatchStmt(self, node: Any, scope: BlockScope):
        return _discard(self.match(node.match, scope, statement=True))

    def s_LetStmt(self, node: Any, scope: BlockScope):
        expected = self.resolve_type(node.type, self.env) if node.type is not None else None
        value = self.expr(node.value, scope, expected)
        assign = self.bind_target(node.target, scope)

        def run(frame: list) -> None:
            assign(frame, value(frame))
        return run

    def bind_target(self, target: Any, scope: BlockScope) -> Callable[[list, Any], None]:
        if isinstance(target, A.TargetName):
            if target.name == "_":
                return lambda frame, v: None
            slot = scope.declare(target.name)

            def set_slot(frame: list, v: Any) -> None:
                frame[slot] = v
            return set_slot
        parts = [self.bind_target(t, scope) for t in target.items]
        n = len(parts)
        file, span = self.file, target.span

        def unpack(frame: list, v: Any) -> None:
            if type(v) is not tuple or len(v) != n:
                raise _raise_at("Runtime", f"cannot destructure {display(v)} into {n} elements", None, file, span)
            for p, x in zip(parts, v):
                p(frame, x)
        return unpack

    def s_AssignStmt(self, node: Any, scope: BlockScope):
        if scope.is_captured(node.name):
            self.error("E047", f"a closure cannot assign to captured variable `{node.name}`", node.span)
            return None
        slot = scope.find_local(node.name)
        if slot is None:
            self.error("E047", f"cannot assign to `{node.name}`: no variable of that name", node.span,
                       hint=f"declare it first with `let {node.name} = …;`")
            return None
        value = self.expr(node.value, scope)

        def run(frame: list) -> None:
            frame[slot] = value(frame)
        return run

    def s_IfStmt(self, node: Any, scope: BlockScope):
        cond = self.condition(node.cond, scope)
        then = self.block_stmts(node.then, scope)
        if node.orelse is None:
            def run_if(frame: list) -> Any:
                if cond(frame):
                    return then(frame)
                return None
            return run_if
        if isinstance(node.orelse, A.IfStmt):
            other = self.s_IfStmt(node.orelse, scope)
        else:
            other = self.block_stmts(node.orelse, scope)

        def run_if_else(frame: list) -> Any:
            if cond(frame):
                return then(frame)
            return other(frame)
        return run_if_else

    def condition(self, node: Any, scope: BlockScope) -> Callable[[list], bool]:
        code = self.expr(node, scope)
        if (isinstance(node, A.Binary) and node.op in _BOOLEAN_OPS) or (isinstance(node, A.Unary) and node.op == "!"):
            return code   # these always produce a Bool or raise
        file, span = self.file, node.span

        def cond(frame: list) -> bool:
            v = code(frame)
            if v is True:
                return True
            if v is False:
                return False
            raise _raise_at("Runtime", f"condition is not a Bool: {display(v)}", None, file, span)
        return cond

    def s_WhileStmt(self, node: Any, scope: BlockScope):
        cond = self.condition(node.cond, scope)
        body = self.block_stmts(node.body, scope.child(in_loop=True))

        def run(frame: list) -> Any:
            ctx = frame[0]
            while cond(frame):
                if ctx.cancelled:
                    ctx.check()
                try:
                    sig = body(frame)
                except ControlFlow as cf:
                    sig = cf.signal
                if sig is not None:
                    if sig is BREAK:
                        break
                    if sig is CONTINUE:
                        continue
                    return sig
            return None
        return run

    def s_LoopStmt(self, node: Any, scope: BlockScope):
        body = self.block_stmts(node.body, scope.child(in_loop=True))

        def run(frame: list) -> Any:
            ctx = frame[0]
            while True:
                if ctx.cancelled:
                    ctx.check()
                try:
                    sig = body(frame)
                except ControlFlow as cf:
                    sig = cf.signal
                if sig is not None:
                    if sig is BREAK:
                        return None
                    if sig is CONTINUE:
                        continue
                    return sig
        return run

    def s_ForStmt(self, node: Any, scope: BlockScope):
        iterable = self.expr(node.iter, scope)
        loop_scope = scope.child(in_loop=True)
        assign = self.bind_target(node.target, loop_scope)
        body = self.block_stmts(node.body, loop_scope)
        file, span = self.file, node.iter.span

        def run(frame: list) -> Any:
            ctx = frame[0]
            seq = iterable(frame)
            t = type(seq)
            if t is dict:
                seq = list(seq.items())
            elif t is not list:
                raise _raise_at("Runtime", f"cannot iterate over {display(seq)}", None, file, span)
            for item in seq:
                if ctx.cancelled:
                    ctx.check()
                assign(frame, item)
                try:
                    sig = body(frame)
                except ControlFlow as cf:
                    sig = cf.signal
                if sig is not None:
                    if sig is BREAK:
                        break
                    if sig is CONTINUE:
                        continue
                    return sig
            return None
        return run

    def s_BreakStmt(self, node: Any, scope: BlockScope):
        if not scope.in_loop:
            self.error("E024", "`break` outside a loop", node.span)
        return lambda frame: BREAK

    def s_ContinueStmt(self, node: Any, scope: BlockScope):
        if not scope.in_loop:
            self.error("E024", "`continue` outside a loop", node.span)
        return lambda frame: CONTINUE

    def s_ReturnStmt(self, node: Any, scope: BlockScope):
        if self.fn_context not in ("plain", "fails") and scope.layout.parent_scope is None:
            self.error("E024", "`return` outside a function or closure", node.span)
        if node.value is None:
            ret = Return(UNIT)
            return lambda frame: ret
        value = self.expr(node.value, scope)
        return lambda frame: Return(value(frame))

    def s_SpanStmt(self, node: Any, scope: BlockScope):
        name = self.expr(node.name, scope)
        body = self.block_stmts(node.body, scope.child())
        host = self.host

        def run(frame: list) -> Any:
            label = display(name(frame))
            ctx = frame[0]
            host.trace(ctx, "span.start", {"name": label})
            started = time.monotonic()
            try:
                return body(frame)
            finally:
                host.trace(ctx, "span.end", {"name": label,
                                             "duration_ms": int((time.monotonic() - started) * 1000)})
        return run

    def s_CheckpointStmt(self, node: Any, scope: BlockScope):
        if self.agent is None:
            self.error("E053", "`checkpoint()` outside an agent handler", node.span)
        host = self.host
        return lambda frame: host.checkpoint(frame[0])

    def s_MockStmt(self, node: Any, scope: BlockScope):
        return self.host.compile_mock(self, node, scope)

    # ---------------------------------------------------------------- expressions
    def expr(self, node: Any, scope: BlockScope, expected: Any = None) -> Callable[[list], Any]:
        method = getattr(self, "e_" + type(node).__name__)
        return method(node, scope, expected)

    def e_Literal(self, node: Any, scope: BlockScope, expected: Any):
        value = UNIT if node.value is A.UNIT else node.value
        return lambda frame: value

    def e_Template(self, node: Any, scope: BlockScope, expected: Any):
        parts: list[Any] = []
        for p in node.parts:
            if isinstance(p, str):
                parts.append(p)
            else:
                parts.append(self.expr(p, scope))
        if len(parts) == 2 and isinstance(parts[0], str) and not isinstance(parts[1], str):
            prefix, code = parts

            def two(frame: list) -> str:
                v = code(frame)
                return prefix + (v if type(v) is str else display(v))
            return two
        compiled = [(p if isinstance(p, str) else None, None if isinstance(p, str) else p) for p in parts]

        def run(frame: list) -> str:
            out = []
            for text, code in compiled:
                if code is None:
                    out.append(text)
                else:
                    v = code(frame)
                    out.append(v if type(v) is str else display(v))
            return "".join(out)
        return run

    def e_SelfExpr(self, node: Any, scope: BlockScope, expected: Any):
        if self.agent is None:
            self.error("E026", "`self` outside an agent handler", node.span)
        return lambda frame: frame[0]

    def e_Name(self, node: Any, scope: BlockScope, expected: Any):
        name = node.name
        slot = scope.find_local(name)
        if slot is not None:
            return lambda frame: frame[slot]
        entity = self.lookup(name)
        if entity is not None:
            return self.entity_value(entity, node)
        value = self.host.builtin_value(name)
        if value is not None:
            return lambda frame: value
        variant = self.bare_variant(name, node.span)
        if variant is not None:
            enum_name, vname, has_payload = variant
            if has_payload:
                self.error("E018", f"variant constructor `{vname}` is not a value; wrap it in a closure", node.span)
                return lambda frame: UNIT
            v = Variant(enum_name, vname)
            return lambda frame: v
        self.unknown_name(name, node.span, scope)
        return lambda frame: UNIT

    def unknown_name(self, name: str, span: tuple, scope: BlockScope) -> None:
        candidates = set(self.env.items) | set(self.env.imports) | set(self.host.builtin_names())
        s: BlockScope | None = scope
        while s is not None:
            candidates |= set(s.names)
            s = s.parent if s.parent is not None else (s.layout.parent_scope if s.layout.parent_scope else None)
        hint = did_you_mean(name, candidates)
        self.error("E010", f"undefined name `{name}`", span, hint=hint)

    def lookup(self, name: str) -> Entity | None:
        entity = self.env.lookup(name)
        if entity is None:
            entity = self.host.prelude_entity(name)
        return entity

    def entity_value(self, entity: Entity, node: Any) -> Callable[[list], Any]:
        kind = entity.kind
        if kind == "fn":
            rec = entity.data
            if rec.fails:
                self.error("E018", f"`fails` function `{rec.name}` cannot be used as a value", node.span)

            def fn_value(frame: list) -> Any:
                return rec.value
            return fn_value
        if kind == "const":
            cell = entity.data   # [value, evaluated, evaluate]; `evaluate` is added when its module compiles
            return lambda frame: cell[2]()
        if kind == "builtin":
            value = entity.data
            return lambda frame: value
        self.error("E010", f"`{entity.name}` is a {kind}, not a value", node.span)
        return lambda frame: UNIT

    def bare_variant(self, name: str, span: tuple) -> tuple | None:
        if name in ("None",):
            return ("Option", "None", False)
        if name == "Some":
            return ("Option", "Some", True)
        if name in ("Ok", "Err"):
            return ("Result", name, True)
        found = []
        for entity in self.env.enums_in_scope():
            for vname, payload in entity.data.variants:
                if vname == name:
                    found.append((entity.name, vname, payload is not None))
        if len(found) > 1:
            self.error("E030", f"ambiguous variant `{name}` (defined by {', '.join(f[0] for f in found)})", span,
                       hint=f"qualify it: `{found[0][0]}::{name}`")
            return found[0]
        return found[0] if found else None

    def e_VariantPath(self, node: Any, scope: BlockScope, expected: Any):
        enum_name, vname = node.enum_name, node.variant
        info = self.enum_info(enum_name, node.span)
        if info is None:
            return lambda frame: UNIT
        payload = self.variant_payload(info, vname, node.span)
        if payload is _MISSING:
            return lambda frame: UNIT
        if payload:
            self.error("E018", f"variant constructor `{enum_name}::{vname}` is not a value; call it", node.span)
            return lambda frame: UNIT
        v = Variant(info.name if not isinstance(info, str) else info, vname)
        return lambda frame: v

    def enum_info(self, enum_name: str, span: tuple) -> Any:
        if enum_name in ("Option", "Result"):
            return enum_name
        entity = self.lookup(enum_name)
        if entity is None:
            if self._start_module(self.env, enum_name) is not None:
                self.error("E100", f"module paths are not allowed in expressions: `{enum_name}::…`", span,
                           hint="bring the item into scope with `use`")
            else:
                self.error("E011", f"unknown enum `{enum_name}`", span)
            return None
        if entity.kind != "enum":
            self.error("E100", f"`{enum_name}` is not an enum", span)
            return None
        return entity.data

    def variant_payload(self, info: Any, vname: str, span: tuple) -> Any:
        if info == "Option":
            if vname in ("Some", "None"):
                return vname == "Some"
        elif info == "Result":
            if vname in ("Ok", "Err"):
                return True
        else:
            for name, payload in info.variants:
                if name == vname:
                    return payload is not None
        self.error("E030", f"unknown variant `{vname}`", span)
        return _MISSING

    def e_FieldAccess(self, node: Any, scope: BlockScope, expected: Any):
        if isinstance(node.obj, A.SelfExpr):
            return self.self_field(node)
        obj = self.expr(node.obj, scope)
        name = node.name
        file, span = self.file, node.span

        def field(frame: list) -> Any:
            v = obj(frame)
            t = type(v)
            if t is Record:
                try:
                    return v.fields[name]
                except KeyError:
                    pass
            elif t is ErrorValue:
                if name == "message":
                    return v.message
                if name == "kind":
                    return v.kind
            raise _raise_at("Runtime", f"{display(v)} has no field `{name}`", None, file, span)
        return field

    def self_field(self, node: Any) -> Callable[[list], Any]:
        agent = self.agent
        if agent is None:
            self.error("E026", "`self` outside an agent handler", node.span)
            return lambda frame: UNIT
        name = node.name
        fields = {f.name: f for f in agent.decl.fields}
        if name not in fields:
            self.error("E026", f"agent `{agent.name}` has no field `{name}`", node.span,
                       hint=did_you_mean(name, fields))
            return lambda frame: UNIT
        if fields[name].annotation == "persistent":
            return self.host.persistent_field(agent, name)
        return lambda frame: frame[0].fields[name]

    def e_TupleIndex(self, node: Any, scope: BlockScope, expected: Any):
        obj = self.expr(node.obj, scope)
        index = node.index
        file, span = self.file, node.span

        def get(frame: list) -> Any:
            v = obj(frame)
            if type(v) is tuple and index < len(v):
                return v[index]
            raise _raise_at("Runtime", f"no element .{index} in {display(v)}", None, file, span)
        return get

    # ---- calls
    def e_Call(self, node: Any, scope: BlockScope, expected: Any):
        fn = node.fn
        if isinstance(fn, A.Name) and scope.find_local(fn.name) is None:
            special = self.named_call(node, fn, scope, expected)
            if special is not None:
                return special
        if isinstance(fn, A.VariantPath):
            info = self.enum_info(fn.enum_name, fn.span)
            if info is None:
                return lambda frame: UNIT
            payload = self.variant_payload(info, fn.variant, fn.span)
            if payload is _MISSING:
                return lambda frame: UNIT
            enum_name = info if isinstance(info, str) else info.name
            return self.construct(enum_name, fn.variant, payload, node, scope)
        if isinstance(fn, A.FieldAccess):
            method = self.method_call(node, fn, scope, expected)
            if method is not None:
                return method
        callee = self.expr(fn, scope)
        args = [self.expr(a, scope) for a in node.args]
        return self.dynamic_call(callee, args, node)

    def dynamic_call(self, callee: Callable, args: list, node: Any) -> Callable[[list], Any]:
        file, span = self.file, node.span

        def call(frame: list) -> Any:
            f = callee(frame)
            values = [a(frame) for a in args]
            if type(f) is not Function:
                raise _raise_at("Runtime", f"{display(f)} is not callable", None, file, span)
            try:
                return f.fn(*values)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
            except RecursionError:
                raise _raise_at("Runtime", "call depth exceeded", "E205", file, span)
        return call

    def construct(self, enum_name: str, vname: str, has_payload: bool, node: Any, scope: BlockScope):
        if not has_payload:
            self.error("E020", f"variant `{vname}` takes no payload", node.span)
            return lambda frame: UNIT
        if len(node.args) != 1:
            self.error("E020", f"variant `{vname}` takes exactly one payload (use a tuple for several)", node.span)
            return lambda frame: UNIT
        arg = self.expr(node.args[0], scope)
        return lambda frame: Variant(enum_name, vname, arg(frame))

    def named_call(self, node: Any, fn: Any, scope: BlockScope, expected: Any):
        name = fn.name
        entity = self.lookup(name)
        if entity is not None:
            if entity.kind == "fn":
                return self.direct_call(entity.data, node, scope)
            if entity.kind in ("const", "builtin"):
                return None
            self.error("E021", f"`{name}` is a {entity.kind}, not a function", node.span)
            return lambda frame: UNIT
        intrinsic = self.host.compile_intrinsic(self, name, node, scope, expected)
        if intrinsic is not None:
            return intrinsic
        builtin = self.host.builtin_impl(name)
        if builtin is not None:
            return self.builtin_call(builtin, name, node, scope, expected)
        variant = self.bare_variant(name, fn.span)
        if variant is not None:
            return self.construct(variant[0], variant[1], variant[2], node, scope)
        self.unknown_name(name, fn.span, scope)
        return lambda frame: UNIT

    def builtin_call(self, impl: Callable, name: str, node: Any, scope: BlockScope, expected: Any):
        args = [self.expr(a, scope) for a in node.args]
        file, span = self.file, node.span
        if name == "json_decode":
            target = self.type_argument(node.fn, expected, node.span)
            args.append(lambda frame: target)
        n = len(args)
        if n == 1:
            a0 = args[0]

            def call1(frame: list) -> Any:
                try:
                    return impl(a0(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
                except TypeError as exc:
                    raise _builtin_misuse(name, exc, file, span)
            return call1
        if n == 2:
            a0, a1 = args

            def call2(frame: list) -> Any:
                try:
                    return impl(a0(frame), a1(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
                except TypeError as exc:
                    raise _builtin_misuse(name, exc, file, span)
            return call2

        def call(frame: list) -> Any:
            try:
                return impl(*[a(frame) for a in args])
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
            except TypeError as exc:
                raise _builtin_misuse(name, exc, file, span)
        return call

    def type_argument(self, fn: Any, expected: Any, span: tuple) -> Any:
        if fn.targs:
            return self.resolve_type(fn.targs[0], self.env)
        if expected is not None:
            return expected
        self.error("E046", "cannot infer the type argument; write it with a turbofish, e.g. `json_decode::<Int>(s)`",
                   span)
        return T.STRING

    def direct_call(self, rec: FnRecord, node: Any, scope: BlockScope):
        decl = rec.decl
        if len(node.args) != len(decl.params):
            self.error("E020", f"`{rec.name}` takes {len(decl.params)} argument(s), {len(node.args)} given", node.span)
            return lambda frame: UNIT
        args = [self.expr(a, scope) for a in node.args]
        file, span = self.file, node.span
        n = len(args)
        if n == 1:
            a0 = args[0]

            def call1(frame: list) -> Any:
                try:
                    return rec.impl(frame[0], a0(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
            return call1
        if n == 2:
            a0, a1 = args

            def call2(frame: list) -> Any:
                try:
                    return rec.impl(frame[0], a0(frame), a1(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
            return call2

        def call(frame: list) -> Any:
            try:
                return rec.impl(frame[0], *[a(frame) for a in args])
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return call

    def method_call(self, node: Any, fn: Any, scope: BlockScope, expected: Any):
        obj = fn.obj
        if isinstance(obj, A.Name) and scope.find_local(obj.name) is None:
            if self.host.tool_exists(self.env, obj.name):
                return self.host.compile_tool_call(self, obj.name, fn.name, node, scope, expected)
            entity = self.lookup(obj.name)
            if entity is None and self.host.builtin_value(obj.name) is None and obj.name[:1].isupper():
                self.error("E037", f"unknown tool `{obj.name}`", obj.span)
                return lambda frame: UNIT
        if isinstance(obj, A.FieldAccess) and isinstance(obj.obj, A.SelfExpr) and self.agent is not None:
            fields = {f.name: f for f in self.agent.decl.fields}
            f = fields.get(obj.name)
            if f is not None and f.annotation == "persistent":
                return self.host.persistent_method(self, self.agent, obj.name, fn.name, node, scope)
        return None

    # ---- operators
    def e_Binary(self, node: Any, scope: BlockScope, expected: Any):
        op = node.op
        fast = self.slot_const_binary(node, scope)
        if fast is not None:
            return fast
        left = self.expr(node.left, scope)
        right = self.expr(node.right, scope)
        file, span = self.file, node.span
        maker = _BINARY.get(op)
        return maker(left, right, file, span)

    def slot_const_binary(self, node: Any, scope: BlockScope):
        """`n - 1`, `i < 10`: a local variable and an Int literal, the most common operands in loops and
        recursion, read without two closure calls."""
        left, right = node.left, node.right
        if node.op not in _SLOT_CONST_OPS or not isinstance(left, A.Name) or not isinstance(right, A.Literal):
            return None
        const = right.value
        if type(const) is not int:
            return None
        slot = scope.find_local(left.name)
        if slot is None:
            return None
        return _SLOT_CONST_OPS[node.op](slot, const, self.file, node.span)

    def e_Unary(self, node: Any, scope: BlockScope, expected: Any):
        operand = self.expr(node.operand, scope)
        file, span = self.file, node.span
        if node.op == "!":
            def not_(frame: list) -> bool:
                v = operand(frame)
                if v is True:
                    return False
                if v is False:
                    return True
                raise _type_error("!", v, None, file, span)
            return not_

        def neg(frame: list) -> Any:
            v = operand(frame)
            t = type(v)
            if t is int:
                if v == INT_MIN:
                    raise _raise_at("Runtime", "integer overflow", "E200", file, span)
                return -v
            if t is float:
                return -v
            raise _type_error("-", v, None, file, span)
        return neg

    def e_TryExpr(self, node: Any, scope: BlockScope, expected: Any):
        if self.fn_context in ("plain", "const") and not self.in_catch:
            self.error("E014", "`try` outside a fallible context", node.span,
                       hint="use `catch { … }`, or mark the function `fails`")
        elif self.fn_context == "stop":
            self.error("E016", "`try` inside `on stop`/`on resting` (use `catch`)", node.span)
        return self.expr(node.expr, scope, expected)

    in_catch = 0

    def e_FailExpr(self, node: Any, scope: BlockScope, expected: Any):
        if self.fn_context in ("plain", "const") and not self.in_catch:
            self.error("E014", "`fail` outside a fallible context", node.span)
        elif self.fn_context == "stop":
            self.error("E016", "`fail` inside `on stop`/`on resting`", node.span)
        value = self.expr(node.expr, scope)
        file, span = self.file, node.span

        def fail(frame: list) -> Any:
            v = value(frame)
            if type(v) is ErrorValue:
                raise SageRaise(v)
            err = ErrorValue("User", v if type(v) is str else display(v))
            err.span = (file, span)
            err.agent = getattr(frame[0], "display_name", None)
            raise SageRaise(err)
        return fail

    def e_CatchExpr(self, node: Any, scope: BlockScope, expected: Any):
        self.in_catch += 1
        try:
            body = self.expr(node.expr, scope, expected)
        finally:
            self.in_catch -= 1
        fallback_scope = scope.child()
        slot = fallback_scope.declare(node.binder) if node.binder else None
        fallback = self.block_value(node.fallback, fallback_scope, expected)

        def catch(frame: list) -> Any:
            try:
                return body(frame)
            except SageRaise as exc:
                if slot is not None:
                    frame[slot] = exc.error
                return fallback(frame)
            except RecursionError:
                if slot is not None:
                    frame[slot] = ErrorValue("Runtime", "call depth exceeded", "E205")
                return fallback(frame)
        return catch

    # ---- literals
    def e_ListLit(self, node: Any, scope: BlockScope, expected: Any):
        elem = expected.elem if isinstance(expected, T.ListT) else None
        items = [self.expr(i, scope, elem) for i in node.items]
        return lambda frame: [i(frame) for i in items]

    def e_TupleLit(self, node: Any, scope: BlockScope, expected: Any):
        items = [self.expr(i, scope) for i in node.items]
        return lambda frame: tuple(i(frame) for i in items)

    def e_MapLit(self, node: Any, scope: BlockScope, expected: Any):
        entries = [(self.expr(k, scope), self.expr(v, scope)) for k, v in node.entries]

        def build(frame: list) -> dict:
            out = {}
            for k, v in entries:
                key = k(frame)
                out[key] = v(frame)
            return out
        return build

    def e_RecordLit(self, node: Any, scope: BlockScope, expected: Any):
        entity = self.lookup(node.name)
        if entity is None or entity.kind != "record":
            self.error("E011", f"unknown record `{node.name}`", node.span)
            return lambda frame: UNIT
        info = entity.data
        declared = [n for n, _ in info.fields]
        given = []
        for fname, value, fspan in node.fields:
            if fname not in declared:
                self.error("E027", f"record `{node.name}` has no field `{fname}`", fspan,
                           hint=did_you_mean(fname, declared))
            elif fname in [g for g, _ in given]:
                self.error("E027", f"field `{fname}` given twice", fspan)
            given.append((fname, self.expr(value, scope)))
        missing = [d for d in declared if d not in [g for g, _ in given]]
        if missing:
            self.error("E027", f"missing field(s) {', '.join('`' + m + '`' for m in missing)} in `{node.name}`",
                       node.span)
        order = {n: i for i, n in enumerate(declared)}
        given.sort(key=lambda g: order.get(g[0], 0))
        rname = info.name
        evaluation = [(n, code) for n, code in given]
        source_order = [(n, code) for n, code in evaluation]

        def build(frame: list) -> Record:
            values = {}
            for n, code in source_order:
                values[n] = code(frame)
            return Record(rname, {n: values[n] for n in declared if n in values})
        return build

    def e_Closure(self, node: Any, scope: BlockScope, expected: Any):
        layout = FrameLayout(scope)
        inner = BlockScope(layout, None)
        for p in node.params:
            if p.type is None:
                self.error("E040", f"closure parameter `{p.name}` needs a type", p.span)
            p.slot = inner.declare(p.name)
        if isinstance(node.body, A.Block):
            body_code = self.block_value(node.body, inner)
        else:
            body_code = self.expr(node.body, inner)
        nparams = len(node.params)
        captures = layout.captures
        file, span = self.file, node.span

        def make(frame: list) -> Function:
            captured = [(inner, frame[outer]) for outer, inner in captures]
            ctx = frame[0]
            nslots = layout.nslots

            def run(*args: Any) -> Any:
                if len(args) != nparams:
                    raise _raise_at("Runtime", f"closure takes {nparams} argument(s), {len(args)} given",
                                    "E020", file, span)
                inner_frame = [None] * nslots
                inner_frame[0] = ctx
                inner_frame[1:1 + nparams] = args
                for slot, value in captured:
                    inner_frame[slot] = value
                ctx.depth += 1
                try:
                    if ctx.depth > CALL_DEPTH_LIMIT:
                        raise _raise_at("Runtime", "call depth exceeded", "E205", file, span)
                    return body_code(inner_frame)
                except ControlFlow as cf:
                    sig = cf.signal
                    if isinstance(sig, Return):
                        return sig.value
                    raise
                finally:
                    ctx.depth -= 1
            return Function(None, run)
        return make

    # ---- match
    def e_MatchExpr(self, node: Any, scope: BlockScope, expected: Any):
        return self.match(node, scope, statement=False, expected=expected)

    def match(self, node: Any, scope: BlockScope, statement: bool, expected: Any = None):
        from .patterns import compile_pattern
        scrutinee = self.expr(node.scrutinee, scope)
        arms = []
        for arm in node.arms:
            arm_scope = scope.child()
            test = compile_pattern(self, arm.pattern, arm_scope)
            body = arm.body
            if isinstance(body, A.Block):
                code = self.block_value(body, arm_scope, expected)
            elif isinstance(body, A.ArmBreak):
                if not scope.in_loop:
                    self.error("E024", "`break` outside a loop", body.span)
                code = _raiser(BREAK)
            elif isinstance(body, A.ArmContinue):
                if not scope.in_loop:
                    self.error("E024", "`continue` outside a loop", body.span)
                code = _raiser(CONTINUE)
            elif isinstance(body, A.ArmReturn):
                value = self.expr(body.value, arm_scope) if body.value is not None else (lambda f: UNIT)
                code = _return_raiser(value)
            else:
                code = self.expr(body, arm_scope, expected)
            arms.append((test, code))
        file, span = self.file, node.span

        def run(frame: list) -> Any:
            v = scrutinee(frame)
            for test, code in arms:
                if test(v, frame):
                    return code(frame)
            raise _raise_at("Runtime", f"no match arm for {display(v)}", "E212", file, span)
        return run

    # ---- retry
    def e_RetryExpr(self, node: Any, scope: BlockScope, expected: Any):
        count = self.expr(node.count, scope)
        delay = self.expr(node.delay, scope) if node.delay is not None else (lambda f: 0)
        kinds = node.kinds
        valid = {"Llm", "Agent", "Runtime", "Tool", "Mcp", "User", "Protocol", "Timeout"}
        if kinds:
            for k in kinds:
                if k not in valid:
                    self.error("E010", f"unknown error kind `{k}`", node.span,
                               hint=did_you_mean(k, valid))
        saved = self.fn_context
        if self.fn_context in ("plain", "const"):
            self.fn_context = "fails"
        body = self.block_value(node.body, scope.child(), expected)
        self.fn_context = saved
        file, span = self.file, node.span
        kind_set = set(kinds) if kinds else None

        def run(frame: list) -> Any:
            n = count(frame)
            if n < 1:
                raise _raise_at("Runtime", "invalid argument: retry: attempts must be at least 1", "E206", file, span)
            wait_ms = delay(frame)
            ctx = frame[0]
            attempt = 0
            while True:
                attempt += 1
                try:
                    return body(frame)
                except SageRaise as exc:
                    if kind_set is not None and exc.error.kind not in kind_set:
                        raise
                    if attempt >= n:
                        raise
                if wait_ms > 0:
                    ctx.sleep(wait_ms / 1000)
                else:
                    ctx.check()
        return run

    # ---- agents, messaging and LLM: supplied by the host
    def e_SummonExpr(self, node: Any, scope: BlockScope, expected: Any):
        return self.host.compile_summon(self, node, scope)

    def e_AwaitExpr(self, node: Any, scope: BlockScope, expected: Any):
        return self.host.compile_await(self, node, scope)

    def e_SendExpr(self, node: Any, scope: BlockScope, expected: Any):
        return self.host.compile_send(self, node, scope)

    def e_ReceiveExpr(self, node: Any, scope: BlockScope, expected: Any):
        return self.host.compile_receive(self, node, scope)

    def e_ReplyExpr(self, node: Any, scope: BlockScope, expected: Any):
        if self.handler_kind != "message":
            self.error("E073", "`reply` outside `on message`", node.span)
        return self.host.compile_reply(self, node, scope)

    def e_YieldExpr(self, node: Any, scope: BlockScope, expected: Any):
        if self.agent is None or scope.layout.parent_scope is not None and self.fn_context != "handler":
            if self.agent is None:
                self.error("E024", "`yield` outside an agent handler", node.span)
        if self.fn_context == "stop":
            self.error("E017", "`yield` inside `on stop`/`on resting`", node.span)
        value = self.expr(node.value, scope)

        def run(frame: list) -> Any:
            raise YieldSignal(value(frame))
        return run

    def e_TraceExpr(self, node: Any, scope: BlockScope, expected: Any):
        value = self.expr(node.value, scope)
        host = self.host

        def run(frame: list) -> Any:
            host.trace(frame[0], "user", {"message": display(value(frame))})
            return UNIT
        return run

    def e_DivineExpr(self, node: Any, scope: BlockScope, expected: Any):
        return self.host.compile_divine(self, node, scope)



_MISSING = object()


def _make_function(body: Callable, layout: FrameLayout, nparams: int, name: str | None, file: str,
                   span: tuple) -> Callable[..., Any]:
    """Wrap a statement body as `impl(ctx, *args)`: new frame, depth accounting, return value."""
    def impl(ctx: Any, *args: Any) -> Any:
        frame = [None] * layout.nslots
        frame[0] = ctx
        frame[1:1 + nparams] = args
        ctx.depth += 1
        try:
            if ctx.depth > CALL_DEPTH_LIMIT:
                raise _raise_at("Runtime", "call depth exceeded", "E205", file, span)
            sig = body(frame)
        except ControlFlow as cf:
            sig = cf.signal
        finally:
            ctx.depth -= 1
        if type(sig) is Return:
            return sig.value
        if sig is None or sig is BREAK or sig is CONTINUE:
            return UNIT
        return sig   # the raw tail value of a function body
    return impl


def _sequence(stmts: list) -> Callable[[list], Any]:
    n = len(stmts)
    if n == 0:
        return lambda frame: None
    if n == 1:
        return stmts[0]
    if n == 2:
        s0, s1 = stmts

        def two(frame: list) -> Any:
            sig = s0(frame)
            if sig is not None:
                return sig
            return s1(frame)
        return two

    def run(frame: list) -> Any:
        for s in stmts:
            sig = s(frame)
            if sig is not None:
                return sig
        return None
    return run


def _discard(code: Callable[[list], Any]) -> Callable[[list], None]:
    def run(frame: list) -> None:
        code(frame)
    return run


def _raiser(signal: Any) -> Callable[[list], Any]:
    def run(frame: list) -> Any:
        raise ControlFlow(signal)
    return run


def _return_raiser(value: Callable[[list], Any]) -> Callable[[list], Any]:
    def run(frame: list) -> Any:
        raise ControlFlow(Return(value(frame)))
    return run


# ---------------------------------------------------------------- runtime type tests (message dispatch)

def type_predicate(t: T.Type) -> Callable[[Any], bool]:
    if isinstance(t, T.Prim):
        py = {"Int": int, "Float": float, "Bool": bool, "String": str, "Error": ErrorValue}.get(t.name)
        if t.name == "Unit":
            return lambda v: v is UNIT
        return lambda v: type(v) is py
    if isinstance(t, T.RecordT):
        name = t.info.name
        return lambda v: type(v) is Record and v.name == name
    if isinstance(t, T.EnumT):
        name = t.info.name
        return lambda v: type(v) is Variant and v.enum == name
    if isinstance(t, T.ListT):
        return lambda v: type(v) is list
    if isinstance(t, T.MapT):
        return lambda v: type(v) is dict
    if isinstance(t, T.TupleT):
        return lambda v: type(v) is tuple
    if isinstance(t, T.OptionT):
        return lambda v: type(v) is Variant and v.enum == "Option"
    if isinstance(t, T.ResultT):
        return lambda v: type(v) is Variant and v.enum == "Result"
    return lambda v: True


def did_you_mean(name: str, candidates: Any) -> str | None:
    import difflib
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.75)
    return f"did you mean `{close[0]}`?" if close else None
