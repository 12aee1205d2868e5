"""The host of a compiled program: builtins, intrinsics, agents and their lifecycle, entry and exit.

`Compiler` asks the host for everything that is not plain expression evaluation; this keeps the compiler free
of threads and I/O. The host reaches the outside world (clock, stdin, LLM) only through `Effects`.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from .. import types as T
from ..syntax import ast as A
from .agents import (AgentInstance, MailboxClosed, Runtime, YieldSignal, current_context, set_current_context,
                     start_thread)
from .compile import CompiledAgent, Compiler, located
from .effects import Effects, ToolCallInfo
from .errors import AgentCancelled, SageRaise, TestAbort, raise_at as _raise_at
from .scopes import BlockScope, Entity, ModuleEnv
from .values import UNIT, ErrorValue, Function, Variant, display, quoted_display, values_equal

# Builtins that need the interpreter: they are compiled specially, not looked up in the registry.
MCP_BUILTINS = {"mcp_connect": 1, "mcp_list_tools": 1, "mcp_tools": 1, "mcp_server_info": 1, "mcp_connection": 1,
                "mcp_call": 3, "mcp_disconnect": 1}
INTRINSICS = {"print", "print_err", "map_set", "map_delete", "sleep_ms", "now_ms", "now_s", "read_line",
              "read_all", "args", *MCP_BUILTINS}


class Host:
    def __init__(self, runtime: Runtime, effects: Effects) -> None:
        from ..builtins import load_builtins, load_constants
        self.runtime = runtime
        self.effects = effects
        self.builtins = load_builtins()
        self.constants = load_constants()
        self.builtin_values: dict[str, Function] = {}
        self.tests: list = []
        self.test_file = False
        self.externs: Any = None

    # ---------------------------------------------------------------- names
    def current_context(self) -> Any:
        return current_context()

    def builtin_names(self) -> list[str]:
        return list(self.builtins) + list(self.constants) + list(INTRINSICS)

    def builtin_impl(self, name: str) -> Callable | None:
        return self.builtins.get(name)

    def builtin_value(self, name: str) -> Any:
        if name in self.constants:
            return self.constants[name]
        impl = self.builtins.get(name)
        if impl is None:
            return None
        value = self.builtin_values.get(name)
        if value is None:
            value = self.builtin_values[name] = Function(name, impl)
        return value

    def prelude_entity(self, name: str) -> Entity | None:
        return prelude_env(self).items.get(name)

    def prelude_type(self, name: str) -> Entity | None:
        entity = prelude_env(self).items.get(name)
        return entity if entity is not None and entity.kind == "record" else None

    def tool_exists(self, env: ModuleEnv, name: str) -> bool:
        return self.tool_decl(env, name) is not None

    def extern_impl(self, decl: Any, ret: T.Type) -> Callable | None:
        from .externs import ExternModules, bind_extern
        if self.externs is None:
            self.externs = ExternModules(self.effects.settings)
        fn = self.externs.find(decl.name)
        return None if fn is None else bind_extern(decl.name, fn, ret)

    def extern_problems(self) -> list[str]:
        return self.externs.errors if self.externs is not None else []

    def add_test(self, decl: Any, body: Any, env: ModuleEnv) -> None:
        self.tests.append((decl, body, env))

    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        effects = ctx.runtime.effects if ctx is not None and ctx.runtime.effects is not None else self.effects
        effects.trace(ctx, kind, data)

    # ---------------------------------------------------------------- intrinsics
    def compile_intrinsic(self, c: Compiler, name: str, node: Any, scope: BlockScope, expected: Any):
        if name.startswith("assert") and name in ASSERTIONS:
            return self.compile_assertion(c, name, node, scope)
        if name not in INTRINSICS:
            return None
        args = [c.expr(a, scope) for a in node.args]
        arity = {"print": 1, "print_err": 1, "map_set": 3, "map_delete": 2, "sleep_ms": 1, "now_ms": 0,
                 "now_s": 0, "read_line": 0, "read_all": 0, "args": 0, **MCP_BUILTINS}[name]
        if len(args) != arity:
            c.error("E020", f"`{name}` takes {arity} argument(s), {len(args)} given", node.span)
            return lambda frame: UNIT
        file, span = c.file, node.span
        if name.startswith("mcp_"):
            return self.compile_mcp_builtin(name, args, file, span)
        if name in ("print", "print_err"):
            (arg,) = args
            stream = "out" if name == "print" else "err"

            def emit(frame: list) -> Any:
                v = arg(frame)
                text = v if type(v) is str else display(v)
                if stream == "out":
                    frame[0].runtime.write_out(text)
                else:
                    frame[0].runtime.write_err(text)
                return UNIT
            return emit
        if name in ("map_set", "map_delete"):
            target = node.args[0]
            if not isinstance(target, A.Name) or scope.find_local(target.name) is None:
                c.error("E047", f"the first argument of `{name}` must be a variable holding a map", target.span)
                return lambda frame: UNIT
            if scope.is_captured(target.name):
                c.error("E047", f"a closure cannot update captured variable `{target.name}`", target.span)
                return lambda frame: UNIT
            slot = scope.find_local(target.name)
            if name == "map_set":
                _, key, value = args

                def map_set(frame: list) -> Any:
                    m = frame[slot]
                    k = key(frame)
                    v = value(frame)
                    updated = dict(m)
                    updated[k] = v
                    frame[slot] = updated
                    return UNIT
                return map_set
            _, key = args

            def map_delete(frame: list) -> Any:
                m = frame[slot]
                k = key(frame)
                if k in m:
                    updated = dict(m)
                    del updated[k]
                    frame[slot] = updated
                return UNIT
            return map_delete
        if name == "sleep_ms":
            (ms,) = args

            def sleep(frame: list) -> Any:
                frame[0].sleep(max(0, ms(frame)) / 1000)
                return UNIT
            return sleep
        if name == "args":  # the program arguments of the run, set by the session (SPEC §6.1)
            return lambda frame: list(frame[0].runtime.program_args)
        if name in ("now_ms", "now_s"):
            scale = 1 if name == "now_ms" else 1000
            return lambda frame: frame[0].runtime.effects.now_ms(frame[0]) // scale
        method = name

        def read(frame: list) -> Any:
            try:
                return getattr(frame[0].runtime.effects, method)(frame[0])
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return read

    def compile_mcp_builtin(self, name: str, args: list, file: str, span: tuple):
        def call(frame: list) -> Any:
            values = [a(frame) for a in args]
            try:
                return frame[0].runtime.effects.mcp_builtin(frame[0], name, values)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return call

    def compile_mock(self, c: Compiler, node: Any, scope: BlockScope):
        if not self.test_file:
            c.error("E050", "`mock` is only allowed in test files (`*_test.sg`)", node.span)
            return None
        if c.fn_context != "test":
            code = "E057" if node.kind == "tool" else "E056"
            c.error(code, "`mock` statements are only allowed inside a test block", node.span)
            return None
        key = self.mock_key(c, node)
        failure = isinstance(node.value, A.FailExpr)
        value_node = node.value.expr if failure else node.value
        if node.kind == "elicit" and isinstance(value_node, A.Name) and value_node.name in ("decline", "cancel"):
            action = value_node.name
            value = lambda frame: action
        else:
            value = c.expr(value_node, scope)

        def run(frame: list) -> Any:
            from ..testing.mocks import Failure
            v = value(frame)
            mocks = frame[0].runtime.effects.mocks
            mocks.push(key, Failure(v if type(v) is str else display(v)) if failure else v)
            return None
        return run

    def mock_key(self, c: Compiler, node: Any) -> str:
        if node.kind in ("divine", "infer"):
            return "llm"
        if node.kind == "elicit":
            return "elicit"
        if node.tool == "mcp":
            if node.fn not in ("connect", "list_tools", "call", "disconnect", "server_info"):
                c.error("E036", f"unknown mock key `mcp.{node.fn}` (expected mcp.connect, mcp.list_tools, "
                        "mcp.call, mcp.disconnect or mcp.server_info)", node.span)
            return f"mcp.{node.fn}"
        decl = self.tool_decl(c.env, node.tool)
        if decl is None:
            c.error("E037", f"unknown tool `{node.tool}`", node.span)
        elif not any(f.name == node.fn for f in decl[0].fns):
            c.error("E036", f"tool `{node.tool}` has no function `{node.fn}`", node.span)
        return f"{node.tool}.{node.fn}"

    def compile_assertion(self, c: Compiler, name: str, node: Any, scope: BlockScope):
        if not self.test_file:
            c.error("E050", f"`{name}` is only allowed in test files (`*_test.sg`)", node.span)
            return lambda frame: UNIT
        arity = ASSERTIONS[name]
        if len(node.args) != arity:
            c.error("E020", f"`{name}` takes {arity} argument(s), {len(node.args)} given", node.span)
            return lambda frame: UNIT
        args = [c.expr(a, scope) for a in node.args]
        check = _ASSERTION_CHECKS[name]
        file, span = c.file, node.span
        if name == "assert_fails":
            (arg,) = args

            def fails(frame: list) -> Any:
                try:
                    v = arg(frame)
                except SageRaise:
                    return UNIT
                if type(v) is Variant and v.enum == "Result" and v.name == "Err":
                    return UNIT
                raise TestAbort(_assertion_detail(name, file, span, [("value", v)]))
            return fails

        def run(frame: list) -> Any:
            values = [a(frame) for a in args]
            if not check(*values):
                labels = ["actual", "expected"] if arity == 2 else ["value"]
                raise TestAbort(_assertion_detail(name, file, span, list(zip(labels, values))))
            return UNIT
        return run

    def persistent_field(self, agent: CompiledAgent, name: str):
        def value(frame: list) -> Any:
            raise SageRaise(ErrorValue("Runtime", f"persistent field `{name}` is read with `.get()`"))
        return value

    def persistent_method(self, c: Compiler, agent: CompiledAgent, field: str, method: str, node: Any,
                          scope: BlockScope):
        args = [c.expr(a, scope) for a in node.args]
        expected = {"get": 0, "set": 1, "checkpoint": 0}.get(method)
        if expected is None:
            c.error("E021", f"persistent field `{field}` has no method `{method}` (get, set, checkpoint)", node.span)
            return lambda frame: UNIT
        if len(args) != expected:
            c.error("E020", f"`{method}` takes {expected} argument(s), {len(args)} given", node.span)
            return lambda frame: UNIT
        name = agent.name
        if method == "get":
            return lambda frame: frame[0].runtime.store.get(name, field)
        if method == "set":
            (arg,) = args

            def set_(frame: list) -> Any:
                frame[0].runtime.store.save(name, field, arg(frame))
                return UNIT
            return set_

        def checkpoint(frame: list) -> Any:
            store = frame[0].runtime.store
            store.save(name, field, store.get(name, field))
            return UNIT
        return checkpoint

    def checkpoint(self, ctx: Any) -> None:
        agent = ctx.agent
        if agent is None:
            return None
        store = ctx.runtime.store
        for f in agent.persistent:
            store.save(agent.name, f.name, store.get(agent.name, f.name))
        return None

    def tool_decl(self, env: ModuleEnv, name: str) -> tuple | None:
        """(ToolDecl, its module env, built-in?) for a tool visible in env."""
        entity = env.lookup(name)
        if entity is not None:
            return (entity.decl, entity.module, False) if entity.kind == "tool" else None
        entity = self.prelude_entity(name)
        if entity is not None and entity.kind == "tool":
            return (entity.decl, entity.module, True)
        return None

    def compile_tool_call(self, c: Compiler, tool: str, fn: str, node: Any, scope: BlockScope, expected: Any):
        found = self.tool_decl(c.env, tool)
        args = [c.expr(a, scope) for a in node.args]
        if found is None:
            c.error("E037", f"unknown tool `{tool}`", node.span)
            return lambda frame: UNIT
        decl, env, builtin = found
        tool_fn = next((f for f in decl.fns if f.name == fn), None)
        if tool_fn is None:
            from .compile import did_you_mean
            c.error("E036", f"tool `{tool}` has no function `{fn}`", node.span,
                    hint=did_you_mean(fn, [f.name for f in decl.fns]))
            return lambda frame: UNIT
        if len(args) != len(tool_fn.params):
            c.error("E039", f"`{tool}.{fn}` takes {len(tool_fn.params)} argument(s), {len(args)} given", node.span)
            return lambda frame: UNIT
        remote = next((a.value for a in tool_fn.attrs if a.name == "mcp_name"), fn)
        info = ToolCallInfo(tool, fn, remote, [p.name for p in tool_fn.params], c.resolve_type(tool_fn.ret, env),
                            builtin)
        file, span = c.file, node.span

        def call(frame: list) -> Any:
            values = [a(frame) for a in args]
            try:
                return frame[0].runtime.effects.tool_call(frame[0], info, values)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return call

    def compile_divine(self, c: Compiler, node: Any, scope: BlockScope):
        prompt = c.expr(node.prompt, scope)
        target = c.resolve_type(node.type, c.env) if node.type is not None else T.STRING
        infer = node.infer
        file, span = c.file, node.span

        def divine(frame: list) -> Any:
            p = prompt(frame)
            try:
                ctx = frame[0]
                return ctx.runtime.effects.divine(ctx, p, target, infer, ctx.llm_overrides)
            except SageRaise as exc:
                raise located(exc, file, span, frame[0])
        return divine

    # ---------------------------------------------------------------- agents
    def compile_summon(self, c: Compiler, node: Any, scope: BlockScope):
        entity = c.lookup(node.agent)
        if entity is None or entity.kind != "agent":
            c.error("E011", f"unknown agent `{node.agent}`", node.span)
            return lambda frame: UNIT
        agent: CompiledAgent = entity.data
        required = agent.field_names
        persistent = {f.name for f in agent.persistent}
        given = []
        for fname, value, fspan in node.fields:
            if fname in persistent:
                c.error("E032", f"persistent field `{fname}` of `{agent.name}` cannot be initialised", fspan)
            elif fname not in required:
                c.error("E032", f"agent `{agent.name}` has no field `{fname}`", fspan)
            elif fname in [g for g, _ in given]:
                c.error("E032", f"field `{fname}` given twice", fspan)
            given.append((fname, c.expr(value, scope)))
        missing = [f for f in required if f not in [g for g, _ in given]]
        if missing:
            c.error("E032", f"summon `{agent.name}` is missing field(s) " + ", ".join(f"`{m}`" for m in missing),
                    node.span)
        host = self

        def summon(frame: list) -> AgentInstance:
            fields = {n: code(frame) for n, code in given}
            parent = frame[0]
            ctx_runtime = parent.runtime if parent is not None else host.runtime
            return host.spawn(agent, fields, parent, ctx_runtime)
        return summon

    def spawn(self, agent: CompiledAgent, fields: dict, parent: Any, runtime: Runtime,
              number: int | None = None) -> AgentInstance:
        if number is None:
            number = runtime.next_number(agent.name)
        inst = AgentInstance(runtime, agent, number, parent)
        inst.fields = fields
        runtime.register(inst)
        self.trace(inst, "agent.spawn", {"parent": parent.display_name if parent is not None else None})
        inst.thread = start_thread(lambda: self.run_lifecycle(inst, entry=False), inst.display_name)
        return inst

    def run_lifecycle(self, inst: AgentInstance, entry: bool) -> None:
        """SPEC §4.5: on waking, on start, on error, the message loop, on stop."""
        set_current_context(inst)
        agent = inst.agent
        handlers = agent.handlers
        try:
            fixed = False
            try:
                for name, t in agent.persistent_types.items():
                    inst.runtime.store.load(agent.name, name, t)
                if "waking" in handlers and agent.persistent:
                    handlers["waking"].run(inst)
                if "start" in handlers:
                    handlers["start"].run(inst)
            except YieldSignal as y:
                inst.result = y.value
                fixed = True
            except SageRaise as exc:
                fixed = self._handle_error(inst, exc.error)
                fixed = True
            except AgentCancelled:
                inst.error = ErrorValue("Agent", "agent stopped", "E204")
                inst.quiet_failure = True
                fixed = True
            except TestAbort as abort:
                inst.abort = abort
                if inst.runtime.test_failure is None:
                    inst.runtime.test_failure = abort
                inst.error = ErrorValue("Agent", "test aborted")
                inst.quiet_failure = True
                fixed = True
            except RecursionError:
                inst.error = ErrorValue("Runtime", "call depth exceeded", "E205")
                fixed = True
            except Exception as exc:  # a bug in sagepy: reported as an internal error, never a traceback
                inst.error = ErrorValue("Runtime", f"internal error: {type(exc).__name__}: {exc}")
                fixed = True
            self.trace(inst, "agent.result", {"ok": inst.error is None, **(
                {"error": inst.error.display()} if inst.error is not None else {})})
            del fixed
            has_messages = bool(agent.message_handlers) and not entry
            if has_messages:
                inst.result_ready.set()
                self._message_loop(inst)
            self._run_stop(inst)
        finally:
            inst.result_ready.set()
            inst.done.set()
            self.trace(inst, "agent.stop", {})

    def _handle_error(self, inst: AgentInstance, error: ErrorValue) -> bool:
        handler = inst.agent.handlers.get("error")
        if error.agent is None:
            error.agent = inst.display_name
        if handler is None:
            inst.error = error
            return True
        try:
            handler.run(inst, error)
            inst.error = error
        except YieldSignal as y:
            inst.result = y.value
        except SageRaise as exc:
            inst.error = exc.error
            if exc.error.agent is None:
                exc.error.agent = inst.display_name
        except AgentCancelled:
            inst.error = ErrorValue("Agent", "agent stopped", "E204")
            inst.quiet_failure = True
        return True

    def _message_loop(self, inst: AgentInstance) -> None:
        while True:
            try:
                message, sender = inst.mailbox.get(inst)
            except (MailboxClosed, AgentCancelled):
                return
            handler = None
            for test, body in inst.agent.message_handlers:
                if test(message):
                    handler = body
                    break
            if handler is None:
                self.trace(inst, "message.dropped", {"type": _runtime_type_name(message)})
                continue
            inst.current_sender = sender
            inst.in_message = True
            try:
                handler.run(inst, message)
            except YieldSignal:
                pass
            except SageRaise as exc:
                error_handler = inst.agent.handlers.get("error")
                if error_handler is not None:
                    try:
                        error_handler.run(inst, exc.error)
                    except (YieldSignal, SageRaise):
                        pass
                else:
                    inst.runtime.write_err(f"warning: agent {inst.display_name} failed handling a message: "
                                           f"{exc.error.display()}")
            except AgentCancelled:
                return
            finally:
                inst.in_message = False
                inst.current_sender = None

    def _run_stop(self, inst: AgentInstance) -> None:
        handler = inst.agent.handlers.get("stop")
        if handler is None:
            return
        was_cancelled = inst.cancelled
        inst.cancelled = False
        try:
            handler.run(inst)
        except YieldSignal:
            pass
        except SageRaise as exc:
            inst.runtime.write_err(f"warning: on stop of agent {inst.display_name} failed: {exc.error.display()}")
        except AgentCancelled:
            pass
        finally:
            inst.cancelled = was_cancelled or inst.cancelled

    def compile_await(self, c: Compiler, node: Any, scope: BlockScope):
        target = c.expr(node.expr, scope)
        timeout = c.expr(node.timeout, scope) if node.timeout is not None else None
        file, span = c.file, node.span

        def await_(frame: list) -> Any:
            h = target(frame)
            if type(h) is not AgentInstance:
                raise _raise_at("Runtime", f"cannot await {display(h)}: not an agent handle", None, file, span)
            ms = timeout(frame) if timeout is not None else None
            waiter = frame[0]
            if not h.wait_result(waiter, None if ms is None else max(0, ms) / 1000):
                raise _raise_at("Timeout", f"await timed out after {ms} ms", "E203", file, span)
            if not h.agent.message_handlers:
                h.done.wait()
            h.awaited = True
            if h.abort is not None:
                raise h.abort
            if h.error is not None:
                raise SageRaise(h.error)
            return h.result
        return await_

    def compile_send(self, c: Compiler, node: Any, scope: BlockScope):
        target = c.expr(node.target, scope)
        message = c.expr(node.message, scope)
        file, span = c.file, node.span

        def send(frame: list) -> Any:
            h = target(frame)
            m = message(frame)
            if type(h) is not AgentInstance:
                raise _raise_at("Runtime", f"cannot send to {display(h)}: not an agent handle", None, file, span)
            sender = frame[0]
            if h.done.is_set():
                raise _raise_at("Agent", f"send to finished agent {h.display_name}", "E204", file, span)
            try:
                h.mailbox.put((m, sender if isinstance(sender, AgentInstance) and sender.agent else None), sender)
            except MailboxClosed:
                raise _raise_at("Agent", "mailbox closed", "E204", file, span)
            return UNIT
        return send

    def compile_receive(self, c: Compiler, node: Any, scope: BlockScope):
        if c.agent is None or c.agent.receives is None:
            c.error("E035", "`receive()` is only allowed in agents declared with `receives T`", node.span)
        file, span = c.file, node.span

        def receive(frame: list) -> Any:
            inst = frame[0]
            try:
                message, sender = inst.mailbox.get(inst)
            except MailboxClosed:
                inst.quiet_failure = inst.runtime.shutting_down
                raise _raise_at("Agent", "mailbox closed", "E204", file, span)
            inst.current_sender = sender
            return message
        return receive

    def compile_reply(self, c: Compiler, node: Any, scope: BlockScope):
        value = c.expr(node.value, scope)
        file, span = c.file, node.span

        def reply(frame: list) -> Any:
            inst = frame[0]
            v = value(frame)
            target = inst.current_sender
            if target is None or target.done.is_set():
                raise _raise_at("Protocol", "reply target unavailable", None, file, span)
            try:
                target.mailbox.put((v, inst), inst)
            except MailboxClosed:
                raise _raise_at("Protocol", "reply target unavailable", None, file, span)
            return UNIT
        return reply


_PRELUDE: ModuleEnv | None = None
_PRELUDE_LOCK = threading.Lock()


def prelude_env(host: Any) -> ModuleEnv:
    """The prelude (stdlib/prelude.sg): records such as HttpResponse and McpTool, and the built-in tools."""
    global _PRELUDE
    with _PRELUDE_LOCK:
        if _PRELUDE is None:
            import os

            from .. import resources
            from ..loader import read_source
            from ..syntax.cache import parse_file_cached
            path = os.path.join(str(resources.stdlib_dir()), "prelude.sg")
            text = read_source(path)
            items, _ = parse_file_cached(path, text)
            module = A.Module(path, items, text)
            module.name = "prelude"
            module.children = {}
            env = ModuleEnv(module, None)
            Compiler(host)._declare_items(env)
            _PRELUDE = env
        return _PRELUDE


def prelude_record_type(name: str) -> T.Type:
    entity = _PRELUDE.items[name] if _PRELUDE is not None else None
    if entity is None:
        raise KeyError(name)
    return T.RecordT(entity.data)


def _contains(s: Any, x: Any) -> bool:
    if type(s) is str:
        return type(x) is str and x in s
    return any(values_equal(e, x) for e in s)


_ASSERTION_CHECKS: dict[str, Callable[..., bool]] = {
    "assert": lambda b: b is True, "assert_true": lambda b: b is True, "assert_false": lambda b: b is False,
    "assert_eq": values_equal, "assert_neq": lambda a, e: not values_equal(a, e),
    "assert_gt": lambda a, e: a > e, "assert_lt": lambda a, e: a < e,
    "assert_gte": lambda a, e: a >= e, "assert_lte": lambda a, e: a <= e,
    "assert_contains": _contains, "assert_not_contains": lambda s, x: not _contains(s, x),
    "assert_starts_with": lambda s, p: s.startswith(p), "assert_ends_with": lambda s, p: s.endswith(p),
    "assert_empty": lambda x: len(x) == 0, "assert_not_empty": lambda x: len(x) != 0,
    "assert_len": lambda l, n: len(l) == n, "assert_empty_list": lambda l: len(l) == 0,
    "assert_not_empty_list": lambda l: len(l) != 0, "assert_fails": lambda v: True,
}
ASSERTIONS = {name: (1 if name in ("assert", "assert_true", "assert_false", "assert_empty", "assert_not_empty",
                                   "assert_empty_list", "assert_not_empty_list", "assert_fails") else 2)
              for name in _ASSERTION_CHECKS}


def _assertion_detail(name: str, file: str, span: tuple, values: list) -> str:
    from ..diagnostics import display_path, source_line
    lines = [f"{name} failed at {display_path(file)}:{span[0]}:{span[1]}"]
    for label, v in values:
        lines.append(f"      {label + ':':<10}{quoted_display(v)}")
    text = source_line(file, span[0])
    if text is not None:
        lines.append(f"      {span[0]} | {text}")
    return "\n".join(lines)


def _runtime_type_name(v: Any) -> str:
    from ..runtime.values import Record, Variant
    t = type(v)
    if t is Record:
        return v.name
    if t is Variant:
        return v.enum
    return {int: "Int", float: "Float", bool: "Bool", str: "String", list: "List", dict: "Map",
            tuple: "Tuple"}.get(t, "Unit")
