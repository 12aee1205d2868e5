"""The compiler: AST -> Python closures (the tree-walking interpreter, compiled once per node), one visitor.

The checker has resolved every name and call and recorded what the runtime needs on the AST, so compiling
reports nothing: a program reaches the compiler only once it checked clean and its externs are linked.
`Compiler` is the one pass, read top to bottom: items (functions, constants, agents, tests; their runtime
objects are in `items.py`), statements, expressions, calls. Some families of nodes are compiled by helpers that
take the compiler through its declared interface (`context.Compiling`): agents, messages and the LLM
(`messaging.py`), the builtins that act through the running agent (`contextcalls.py`), and what only test and
eval files contain (`testing.py`). `frames.py` holds the control-flow
signals and the frame a body runs in, `inplace.py` the in-place updates of a variable's list or map.

What a name denotes was decided by the checker (`Name.ref`, `VariantPath.ref`, `RecordLit.ref`): None means a
local variable, an `Entity` a module item, `BUILTIN` a prelude builtin or constant, a `VariantRef` a variant.
What each call resolves to is in `Call.ref`: an `Entity` (a module function or constant), a `VariantRef`, a
`ToolRef`, `BUILTIN` (a prelude builtin or constant, an intrinsic or an assertion, found by name), or None (the
callee is a value: a local variable, a record field, a persistent field's method).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from ...check.names import ASSERTIONS, BUILTIN, VariantRef
from ...check.symbols import ToolRef
from ...core.errors import SageRaise, raise_at
from ...core.types import INT_MIN
from ...core.values import UNIT, ErrorValue, Function, Record, Variant, display
from ...effects.step import current_context
from ...syntax import ast as A
from ..agents import CALL_DEPTH_LIMIT
from ..externs import bind_extern
from ..operators import (BINARY, BOOLEAN_OPS, COMPARISONS, CONST_RIGHT_OPS, SLOT_CONST_OPS, builtin_misuse,
                         type_error)
from ..patterns import compile_pattern
from . import contextcalls, messaging, testing
from .frames import (BREAK, CONTINUE, Code, ControlFlow, Return, direct_call1, discard, located, make_function,
                     raiser, return_raiser, sequence)
from .inplace import grow, growing_call
from .items import CompiledAgent, CompiledBody, FnRecord, type_predicate

if TYPE_CHECKING:
    from ..agents import Runtime


class Compiler:
    """Compiles a checked program once, for any number of runs: its closures find their run through the agent
    running them (frame slot 0). `runtime`: where a summon outside any agent starts its agent (a test file's
    constants), else None. It keeps the program's test blocks in `tests`; `externs` maps each
    `extern fn` name to the Python function the link step found for it; `builtins` and `constants` are the
    native standard library (sagepy.builtins), of which the `io_builtins` read or change the world: each of
    their calls is an `io` step of the calling agent's effects chain (SPEC §14)."""

    def __init__(self, runtime: Runtime | None, externs: dict[str, Callable[..., Any]],
                 builtins: dict[str, Callable[..., Any]], constants: dict[str, Any],
                 io_builtins: dict[str, Callable[..., Any]]) -> None:
        self.runtime = runtime
        self.tests: list = []   # (declaration, compiled body, namespace) of each test block; namespace.path: its file
        self.evals: list = []   # the same of each eval block (SPEC §22.1), its body taking the row
        self.externs = externs
        self.builtins = {**builtins, **{name: _io_step(name, fn) for name, fn in io_builtins.items()}}
        self.constants = constants
        self.builtin_values: dict[str, Any] = {}
        self.compiled: dict[int, Any] = {}   # id(declaration) -> its runtime object
        self.root_scope: Any = None
        self.scope: Any = None                # the checker's namespace of the module being compiled
        self.file = ""
        self.agent: CompiledAgent | None = None
        self.closure_depth = 0                # > 0 while compiling a closure's body: its own frame
        self.current_context = current_context

    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        runtime = ctx.runtime if ctx is not None and ctx.runtime.effects is not None else self.runtime
        if runtime is not None:
            runtime.effects.trace(ctx, kind, data)

    # ================================================================ items
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


    # ================================================================ statements
    def block_stmts(self, block: Any) -> Code:
        """A block run as statements: returns a signal (None, BREAK, CONTINUE, Return)."""
        stmts = [self.stmt(s) for s in block.stmts]
        if block.value is not None:
            stmts.append(discard(self.expr(block.value)))
        return sequence(stmts)

    def function_body(self, block: Any) -> Code:
        """A function body. It returns a signal from its statements (a `Return`), or else the raw value of its
        tail: the trailing expression, a final match statement, or a final `return e;` (the common case,
        which so needs no `Return` object)."""
        stmts_ast = list(block.stmts)
        value_ast = block.value
        if value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.MatchStmt):
            value_ast = stmts_ast.pop().match
        elif value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.ReturnStmt) \
                and stmts_ast[-1].value is not None:
            value_ast = stmts_ast.pop().value
        stmts = [self.stmt(s) for s in stmts_ast]
        if value_ast is None:
            return sequence(stmts)
        tail = self.expr(value_ast)
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

    def block_value(self, block: Any) -> Code:
        """A block used for its value (catch fallbacks, closures, arms)."""
        stmts_ast = list(block.stmts)
        value_ast = block.value
        if value_ast is None and stmts_ast and isinstance(stmts_ast[-1], A.MatchStmt):
            value_ast = stmts_ast.pop().match
        stmts = [self.stmt(s) for s in stmts_ast]
        value = self.expr(value_ast) if value_ast is not None else (lambda f: UNIT)
        if not stmts:
            return value

        def run(frame: list) -> Any:
            for s in stmts:
                sig = s(frame)
                if sig is not None:
                    raise ControlFlow(sig)
            return value(frame)
        return run

    def stmt(self, node: Any) -> Code:
        name = type(node).__name__
        helper = _HELPER_STATEMENTS.get(name)
        if helper is not None:
            return helper(self, node)
        return getattr(self, "s_" + name)(node)

    def s_ExprStmt(self, node: Any) -> Code:
        return discard(self.expr(node.expr))

    def s_MatchStmt(self, node: Any) -> Code:
        return discard(self.match(node.match))

    def s_LetStmt(self, node: Any) -> Code:
        value = self.expr(node.value)
        assign = self.bind_target(node.target)

        def run(frame: list) -> None:
            assign(frame, value(frame))
        return run

    def bind_target(self, target: Any) -> Callable[[list, Any], None]:
        if isinstance(target, A.TargetName):
            if target.name == "_":
                return lambda frame, v: None
            slot = target.slot

            def set_slot(frame: list, v: Any) -> None:
                frame[slot] = v
            return set_slot
        parts = [self.bind_target(t) for t in target.items]
        n = len(parts)
        file, span = self.file, target.span

        def unpack(frame: list, v: Any) -> None:
            if type(v) is not tuple or len(v) != n:
                raise raise_at("Runtime", f"cannot destructure {display(v)} into {n} elements", None, file, span)
            for p, x in zip(parts, v):
                p(frame, x)
        return unpack

    def s_AssignStmt(self, node: Any) -> Code:
        slot = node.slot
        growing = growing_call(node)
        if growing is not None:
            return grow(slot, growing[0], self.expr(growing[1]))
        value = self.expr(node.value)

        def run(frame: list) -> None:
            frame[slot] = value(frame)
        return run

    def s_IfStmt(self, node: Any) -> Code:
        then = self.block_stmts(node.then)
        test = node.cond
        if node.orelse is None and is_slot_comparison(test):
            return self.if_slot_compare(test, then)
        cond = self.condition(node.cond)
        if node.orelse is None:
            def run_if(frame: list) -> Any:
                if cond(frame):
                    return then(frame)
                return None
            return run_if
        if isinstance(node.orelse, A.IfStmt):
            other = self.s_IfStmt(node.orelse)
        else:
            other = self.block_stmts(node.orelse)

        def run_if_else(frame: list) -> Any:
            if cond(frame):
                return then(frame)
            return other(frame)
        return run_if_else

    def if_slot_compare(self, test: Any, then: Code) -> Code:
        """`if n < 2 { … }` without `else`: the guard of most recursive functions, its comparison done in
        place rather than through a condition closure."""
        slot, const, compare = test.left.slot, test.right.value, COMPARISONS[test.op]
        op, file, span = test.op, self.file, test.span

        def run_if(frame: list) -> Any:
            a = frame[slot]
            if type(a) is not int:
                raise type_error(op, a, const, file, span)
            if compare(a, const):
                return then(frame)
            return None
        return run_if

    def condition(self, node: Any) -> Callable[[list], bool]:
        code = self.expr(node)
        if (isinstance(node, A.Binary) and node.op in BOOLEAN_OPS) or (isinstance(node, A.Unary) and node.op == "!"):
            return code   # these always produce a Bool or raise
        file, span = self.file, node.span

        def cond(frame: list) -> bool:
            v = code(frame)
            if v is True:
                return True
            if v is False:
                return False
            raise raise_at("Runtime", f"condition is not a Bool: {display(v)}", None, file, span)
        return cond

    def s_WhileStmt(self, node: Any) -> Code:
        cond = self.condition(node.cond)
        body = self.block_stmts(node.body)

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

    def s_LoopStmt(self, node: Any) -> Code:
        body = self.block_stmts(node.body)

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

    def s_ForStmt(self, node: Any) -> Code:
        iterable = self.expr(node.iter)
        assign = self.bind_target(node.target)
        body = self.block_stmts(node.body)
        file, span = self.file, node.iter.span

        def run(frame: list) -> Any:
            ctx = frame[0]
            seq = iterable(frame)
            t = type(seq)
            if t is dict:
                seq = list(seq.items())
            elif t is not list:
                raise raise_at("Runtime", f"cannot iterate over {display(seq)}", None, file, span)
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

    def s_BreakStmt(self, node: Any) -> Code:
        return lambda frame: BREAK

    def s_ContinueStmt(self, node: Any) -> Code:
        return lambda frame: CONTINUE

    def s_ReturnStmt(self, node: Any) -> Code:
        if self.closure_depth == 0:
            # in a function's own frame the value itself is the signal: every statement passes any signal
            # but None, BREAK and CONTINUE up to `make_function`, which returns it (no `Return` to allocate)
            if node.value is None:
                return lambda frame: UNIT
            return self.expr(node.value)
        if node.value is None:
            ret = Return(UNIT)
            return lambda frame: ret
        value = self.expr(node.value)
        return lambda frame: Return(value(frame))

    def s_SpanStmt(self, node: Any) -> Code:
        name = self.expr(node.name)
        body = self.block_stmts(node.body)
        trace = self.trace

        def run(frame: list) -> Any:
            label = display(name(frame))
            ctx = frame[0]
            trace(ctx, "span.start", {"name": label})
            started = time.monotonic()
            try:
                return body(frame)
            finally:
                trace(ctx, "span.end", {"name": label, "duration_ms": int((time.monotonic() - started) * 1000)})
        return run

    def s_CheckpointStmt(self, node: Any) -> Code:
        def checkpoint(frame: list) -> None:
            ctx = frame[0]
            ctx.runtime.effects.checkpoint(ctx)
        return checkpoint


    # ================================================================ expressions
    def expr(self, node: Any) -> Code:
        name = type(node).__name__
        helper = _HELPER_EXPRESSIONS.get(name)
        if helper is not None:
            return helper(self, node)
        return getattr(self, "e_" + name)(node)

    def e_Literal(self, node: Any) -> Code:
        value = UNIT if node.value is A.UNIT else node.value   # the AST's marker for `()`, the runtime's value
        return lambda frame: value

    def e_Template(self, node: Any) -> Code:
        parts = [p if isinstance(p, str) else self.expr(p) for p in node.parts]
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

    def e_SelfExpr(self, node: Any) -> Code:
        return lambda frame: frame[0]

    # ---------------------------------------------------------------- names
    def e_Name(self, node: A.Name) -> Code:
        ref = node.ref
        if ref is None:
            slot = node.slot
            return lambda frame: frame[slot]
        if ref is BUILTIN:
            value = self.builtin_value(node.name)
            return lambda frame: value
        if type(ref) is VariantRef:
            return self.unit_variant(ref)
        item = self.runtime_item(ref)
        if ref.kind == "fn":
            return lambda frame: item.value
        return lambda frame: item[2]()   # a constant: [value, evaluated, evaluate]

    def e_VariantPath(self, node: Any) -> Code:
        return self.unit_variant(node.ref)

    @staticmethod
    def unit_variant(ref: VariantRef) -> Code:
        v = Variant(ref.enum, ref.name)
        return lambda frame: v

    # ---------------------------------------------------------------- fields
    def e_FieldAccess(self, node: Any) -> Code:
        name = node.name
        if isinstance(node.obj, A.SelfExpr):
            if name in self.agent.field_names:
                return lambda frame: frame[0].fields[name]

            def persistent(frame: list) -> Any:
                raise SageRaise(ErrorValue("Runtime", f"persistent field `{name}` is read with `.get()`"))
            return persistent
        obj = self.expr(node.obj)
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
            raise raise_at("Runtime", f"{display(v)} has no field `{name}`", None, file, span)
        return field

    def e_TupleIndex(self, node: Any) -> Code:
        obj = self.expr(node.obj)
        index = node.index
        file, span = self.file, node.span

        def get(frame: list) -> Any:
            v = obj(frame)
            if type(v) is tuple and index < len(v):
                return v[index]
            raise raise_at("Runtime", f"no element .{index} in {display(v)}", None, file, span)
        return get

    # ---------------------------------------------------------------- operators
    def e_Binary(self, node: Any) -> Code:
        op, left, right = node.op, node.left, node.right
        if type(right) is A.Literal and type(right.value) is int:
            # `n - 1`, `i < 10`, `x % 2`: an Int literal on the right, the most common shape in loops and
            # recursion, is not read through a closure call; nor is a local variable on the left
            const = right.value
            if op in SLOT_CONST_OPS and type(left) is A.Name and left.ref is None:
                return SLOT_CONST_OPS[op](left.slot, const, self.file, node.span)
            if op in CONST_RIGHT_OPS and (op != "%" or const > 0):
                return CONST_RIGHT_OPS[op](self.expr(left), const, self.file, node.span)
        return BINARY[op](self.expr(left), self.expr(right), self.file, node.span)

    def e_Unary(self, node: Any) -> Code:
        operand = self.expr(node.operand)
        file, span = self.file, node.span
        if node.op == "!":
            def not_(frame: list) -> bool:
                v = operand(frame)
                if v is True:
                    return False
                if v is False:
                    return True
                raise type_error("!", v, None, file, span)
            return not_

        def neg(frame: list) -> Any:
            v = operand(frame)
            t = type(v)
            if t is int:
                if v == INT_MIN:
                    raise raise_at("Runtime", "integer overflow", "E200", file, span)
                return -v
            if t is float:
                return -v
            raise type_error("-", v, None, file, span)
        return neg

    # ---------------------------------------------------------------- errors
    def e_TryExpr(self, node: Any) -> Code:
        return self.expr(node.expr)

    def e_FailExpr(self, node: Any) -> Code:
        value = self.expr(node.expr)
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

    def e_CatchExpr(self, node: Any) -> Code:
        body = self.expr(node.expr)
        slot = node.slot if node.binder else None
        fallback = self.block_value(node.fallback)

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
            except MemoryError:
                if slot is not None:
                    frame[slot] = ErrorValue("Runtime", "out of memory")
                return fallback(frame)
        return catch

    # ---------------------------------------------------------------- collections and records
    def e_ListLit(self, node: Any) -> Code:
        items = [self.expr(i) for i in node.items]
        return lambda frame: [i(frame) for i in items]

    def e_TupleLit(self, node: Any) -> Code:
        items = [self.expr(i) for i in node.items]
        return lambda frame: tuple(i(frame) for i in items)

    def e_MapLit(self, node: Any) -> Code:
        entries = [(self.expr(k), self.expr(v)) for k, v in node.entries]

        def build(frame: list) -> dict:
            out = {}
            for k, v in entries:
                key = k(frame)
                out[key] = v(frame)
            return out
        return build

    def e_RecordLit(self, node: Any) -> Code:
        info = node.ref
        order = {name: i for i, (name, _) in enumerate(info.fields)}
        # fields are evaluated in source order and stored in declaration order
        given = [(fname, self.expr(value)) for fname, value, _ in node.fields]
        declared = sorted((n for n, _ in given), key=order.__getitem__)
        rname = info.name

        def build(frame: list) -> Record:
            values = {n: code(frame) for n, code in given}
            return Record(rname, {n: values[n] for n in declared})
        return build

    def e_Closure(self, node: Any) -> Code:
        self.closure_depth += 1
        if isinstance(node.body, A.Block):
            body_code = self.block_value(node.body)
        else:
            body_code = self.expr(node.body)
        self.closure_depth -= 1
        nparams = len(node.params)
        captures = node.captures
        pad = [None] * (node.nslots - 1 - nparams)
        file, span = self.file, node.span

        def make(frame: list) -> Function:
            captured = [(inner, frame[outer]) for outer, inner in captures]
            ctx = frame[0]

            def run(*args: Any) -> Any:
                if len(args) != nparams:
                    raise raise_at("Runtime", f"closure takes {nparams} argument(s), {len(args)} given",
                                   "E020", file, span)
                inner_frame = [ctx, *args]
                inner_frame += pad
                if captured:
                    for slot, value in captured:
                        inner_frame[slot] = value
                ctx.depth += 1
                try:
                    if ctx.depth > CALL_DEPTH_LIMIT:
                        raise raise_at("Runtime", "call depth exceeded", "E205", file, span)
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

    # ---------------------------------------------------------------- match and retry
    def e_MatchExpr(self, node: Any) -> Code:
        return self.match(node)

    def match(self, node: Any) -> Code:
        scrutinee = self.expr(node.scrutinee)
        arms = []
        for arm in node.arms:
            test = compile_pattern(arm.pattern)
            body = arm.body
            if isinstance(body, A.Block):
                code = self.block_value(body)
            elif isinstance(body, A.ArmBreak):
                code = raiser(BREAK)
            elif isinstance(body, A.ArmContinue):
                code = raiser(CONTINUE)
            elif isinstance(body, A.ArmReturn):
                value = self.expr(body.value) if body.value is not None else (lambda f: UNIT)
                code = return_raiser(value)
            else:
                code = self.expr(body)
            arms.append((test, code))
        file, span = self.file, node.span

        def run(frame: list) -> Any:
            v = scrutinee(frame)
            for test, code in arms:
                if test(v, frame):
                    return code(frame)
            raise raise_at("Runtime", f"no match arm for {display(v)}", "E212", file, span)
        return run

    def e_RetryExpr(self, node: Any) -> Code:
        count = self.expr(node.count)
        delay = self.expr(node.delay) if node.delay is not None else (lambda f: 0)
        body = self.block_value(node.body)
        file, span = self.file, node.span
        kind_set = set(node.kinds) if node.kinds else None

        def run(frame: list) -> Any:
            n = count(frame)
            if n < 1:
                raise raise_at("Runtime", "invalid argument: retry: attempts must be at least 1", "E206", file, span)
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


    # ================================================================ calls
    def e_Call(self, node: A.Call) -> Code:
        ref = node.ref
        if ref is BUILTIN:
            return self.builtin_call(node)
        if ref is None:
            fn = node.fn
            if type(fn) is A.FieldAccess and type(fn.obj) is A.FieldAccess and type(fn.obj.obj) is A.SelfExpr \
                    and fn.obj.name not in self.agent.field_names:
                return messaging.persistent_method(self, fn.obj.name, fn.name, node)
            return self.dynamic_call(self.expr(fn), node)
        kind = type(ref)
        if kind is ToolRef:
            return self.tool_call(ref, node)
        if kind is VariantRef:
            arg = self.expr(node.args[0])
            enum_name, vname = ref.enum, ref.name
            return lambda frame: Variant(enum_name, vname, arg(frame))
        if ref.kind == "fn":
            return self.direct_call(self.runtime_item(ref), node)
        cell = self.runtime_item(ref)   # a constant holding a function
        return self.dynamic_call(lambda frame: cell[2](), node)

    def dynamic_call(self, callee: Code, node: Any) -> Code:
        args = [self.expr(a) for a in node.args]
        file, span = self.file, node.span

        def call(frame: list) -> Any:
            f = callee(frame)
            values = [a(frame) for a in args]
            if type(f) is not Function:
                raise raise_at("Runtime", f"{display(f)} is not callable", None, file, span)
            try:
                return f(*values)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
            except RecursionError:
                raise raise_at("Runtime", "call depth exceeded", "E205", file, span)
        return call

    def direct_call(self, rec: Any, node: Any) -> Code:
        args = [self.expr(a) for a in node.args]
        file, span = self.file, node.span
        n = len(args)
        if n == 1 and not rec.decl.extern:
            return direct_call1(rec, args[0], file, span)
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

    # ---------------------------------------------------------------- builtins
    def builtin_call(self, node: Any) -> Code:
        name = node.fn.name
        if name in ASSERTIONS:
            return self.assertion(name, node)
        if name in contextcalls.CONTEXT_BUILTINS:
            return contextcalls.context_builtin(self, name, node)
        impl = self.builtins.get(name)
        if impl is None:   # a prelude constant holding a function
            value = self.constants[name]
            return self.dynamic_call(lambda frame: value, node)
        args = [self.expr(a) for a in node.args]
        if node.target is not None:   # a generic builtin (`json_decode`) receives the type it is to produce
            target = node.target
            args.append(lambda frame: target)
        file, span = self.file, node.span
        n = len(args)
        if n == 1:
            a0 = args[0]

            def call1(frame: list) -> Any:
                try:
                    return impl(a0(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
                except TypeError as exc:
                    raise builtin_misuse(name, exc, file, span)
            return call1
        if n == 2:
            a0, a1 = args

            def call2(frame: list) -> Any:
                try:
                    return impl(a0(frame), a1(frame))
                except SageRaise as exc:
                    raise located(exc, file, span, frame[0])
                except TypeError as exc:
                    raise builtin_misuse(name, exc, file, span)
            return call2

        def call(frame: list) -> Any:
            try:
                return impl(*[a(frame) for a in args])
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
            except TypeError as exc:
                raise builtin_misuse(name, exc, file, span)
        return call

    def builtin_value(self, name: str) -> Any:
        """A prelude constant, or a registry builtin as a `Function` value (one per name)."""
        if name in self.constants:
            return self.constants[name]
        value = self.builtin_values.get(name)
        if value is None:
            value = self.builtin_values[name] = Function(name, self.builtins[name])
        return value

    # ---------------------------------------------------------------- tools and persistent fields
    def tool_call(self, ref: ToolRef, node: Any) -> Code:
        args = [self.expr(a) for a in node.args]
        file, span = self.file, node.span

        def call(frame: list) -> Any:
            values = [a(frame) for a in args]
            try:
                return frame[0].runtime.effects.tool_call(frame[0], ref, values)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return call

    # ================================================================ assertions (testing.py)
    def assertion(self, name: str, node: Any) -> Code:
        return testing.assertion(self, name, node)


# The nodes compiled by a helper module rather than a method: agents, messages and the LLM (messaging.py), and
# the statements of test and eval files (testing.py).
_HELPER_EXPRESSIONS: dict[str, Callable[[Any, Any], Code]] = {
    "SummonExpr": messaging.summon, "AwaitExpr": messaging.await_, "SendExpr": messaging.send,
    "ReceiveExpr": messaging.receive, "ReplyExpr": messaging.reply, "YieldExpr": messaging.yield_,
    "TraceExpr": messaging.trace, "DivineExpr": messaging.divine}
_HELPER_STATEMENTS: dict[str, Callable[[Any, Any], Code]] = {
    "MockStmt": testing.mock, "ReplayStmt": testing.replay, "ScoreStmt": testing.score}


def is_slot_comparison(test: Any) -> bool:
    """`n < 2`, `i == 0`: a local variable compared with an Int literal."""
    return type(test) is A.Binary and test.op in COMPARISONS and type(test.left) is A.Name \
        and test.left.ref is None and type(test.right) is A.Literal and type(test.right.value) is int


def _io_step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The builtin `name` as the calling agent's `io` step, also when called as a value (`let f = read_file`)."""
    def perform(*args: Any) -> Any:
        ctx = current_context()
        if ctx is None:   # called from Python outside any agent (an extern's own thread): no chain to go through
            return fn(*args)
        return ctx.runtime.effects.io(ctx, name, args)
    perform.__name__ = name
    return perform
