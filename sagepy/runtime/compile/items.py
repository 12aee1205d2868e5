"""Items: the runtime object of every function, constant, agent and supervisor, and the compilation of their
bodies, of test blocks and of handler bodies.

Items are found through the checker's module namespaces (`Module.namespace`) and its entities; each entity's
runtime object (`FnRecord`, constant cell, `CompiledAgent`, `SupervisorPlan`) is kept by declaration, created for
every item before any body is compiled, so that calls and summons may refer to items declared later.
"""
from __future__ import annotations

from typing import Any, Callable

from ...core import types as T
from ...syntax import ast as A
from ...core.errors import SageRaise
from ..externs import bind_extern
from ...core.values import UNIT, ErrorValue, Function, Record, Variant
from .frames import located, make_function


class FnRecord:
    """A compiled function; `impl(ctx, *args)` runs it. Filled in after compilation so recursion works."""

    __slots__ = ("name", "decl", "impl", "value", "body", "pad", "file")

    def __init__(self, name: str, decl: Any) -> None:
        self.name = name
        self.decl = decl
        self.impl: Callable[..., Any] | None = None
        self.value: Function | None = None
        # what a direct call of a one-parameter function runs itself (see `frames.direct_call1`)
        self.body: Callable[[list], Any] | None = None
        self.pad: list = []
        self.file = ""


class CompiledAgent:
    __slots__ = ("name", "decl", "handlers", "message_handlers", "field_names", "persistent",
                 "persistent_types", "receives")

    def __init__(self, name: str, decl: Any) -> None:
        self.name = name
        self.decl = decl
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


class Items:
    """Mixin of the compiler."""

    def compile_program(self, program: Any) -> None:
        """Compile every item of `program`; like the checker, on a large-stack thread (deep ASTs recurse)."""
        from ...deepstack import call_on_deep_stack
        call_on_deep_stack(lambda: self.compile_items(program), "compile")

    def compile_items(self, program: Any) -> None:
        self.root_scope = program.root.namespace
        for module in program.modules:
            for item in module.items:
                self.declare_item(item)
        for module in program.modules:
            self.scope = module.namespace
            self.file = module.path
            for item in module.items:
                self.compile_item(item)

    def declare_item(self, item: Any) -> None:
        kind = type(item)
        if kind is A.FnDecl:
            self.compiled[id(item)] = FnRecord(item.name, item)
        elif kind is A.ConstDecl:
            self.compiled[id(item)] = [None, False]   # value, evaluated (+ evaluate, once compiled)
        elif kind is A.AgentDecl:
            self.compiled[id(item)] = CompiledAgent(item.name, item)
        elif kind is A.SupervisorDecl:
            from ..supervisors import SupervisorPlan
            self.compiled[id(item)] = SupervisorPlan(item.name, item.strategy)

    def compile_item(self, item: Any) -> None:
        kind = type(item)
        if kind is A.FnDecl:
            self.compile_fn(self.compiled[id(item)])
        elif kind is A.ConstDecl:
            self.compile_const(item)
        elif kind is A.AgentDecl:
            self.compile_agent(self.compiled[id(item)])
        elif kind is A.SupervisorDecl:
            from ..supervisors import compile_supervisor
            compile_supervisor(self, item, self.compiled[id(item)])
        elif kind is A.TestDecl:
            self.tests.append((item, self.compile_body(item, 0, None), self.scope))
        elif kind is A.EvalDecl:
            self.evals.append((item, self.compile_body(item, 1, None), self.scope))

    def runtime_item(self, entity: Any) -> Any:
        """The runtime object of a checker entity (fn, const, agent, supervisor)."""
        return self.compiled[id(entity.decl)]

    def entry_target(self, name: str) -> Any:
        """The `CompiledAgent` or `SupervisorPlan` that `run <name>` starts (the checker made sure it is one)."""
        return self.runtime_item(self.root_scope.lookup(name))

    def compile_const(self, decl: Any) -> None:
        code = self.expr(decl.value)
        cell = self.compiled[id(decl)]
        nslots = decl.nslots
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
        cell.append(evaluate)

    def compile_fn(self, rec: FnRecord) -> None:
        decl = rec.decl
        if decl.extern:
            impl = bind_extern(decl.name, self.externs[decl.name], decl.info.ret)
            rec.impl = lambda ctx, *args: impl(*args)
            rec.value = Function(decl.name, impl)
            return
        saved = self.agent
        self.agent = None
        body = self.function_body(decl.body)
        self.agent = saved
        rec.impl = impl = make_function(body, decl.nslots, len(decl.params), self.file, decl.span)
        rec.body, rec.pad, rec.file = body, [None] * (decl.nslots - 1 - len(decl.params)), self.file
        current_context = self.current_context
        rec.value = Function(decl.name, lambda *args: impl(current_context(), *args))

    def compile_body(self, decl: Any, nparams: int, agent: CompiledAgent | None) -> CompiledBody:
        """A handler or test body, run in a frame of `decl.nslots` slots, its parameter (if any) in slot 1."""
        saved = self.agent
        self.agent = agent
        body = self.block_stmts(decl.body)
        self.agent = saved
        return CompiledBody(make_function(body, decl.nslots, nparams, self.file, decl.span), decl.span)

    def compile_agent(self, agent: CompiledAgent) -> None:
        decl = agent.decl
        info = decl.info
        for f in agent.persistent:
            agent.persistent_types[f.name] = info.fields[f.name].type
        message_types = iter(info.message_types)
        for h in decl.handlers:
            kind = h.kind
            if kind == "message":
                predicate = type_predicate(next(message_types))
                agent.message_handlers.append((predicate, self.compile_body(h, 1, agent)))
                continue
            agent.handlers["stop" if kind == "resting" else kind] = self.compile_body(h, int(kind == "error"), agent)


def type_predicate(t: T.Type) -> Callable[[Any], bool]:
    """A runtime test of whether a value has type `t` (message dispatch)."""
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
