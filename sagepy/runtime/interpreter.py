"""The host of a compiled program: it starts agents and runs their lifecycle, and keeps the test blocks.

The compiler (`compile/`) turns the checked AST into closures; a `summon` calls `Host.spawn`. The host reaches
the outside world (clock, stdin, LLM) only through `Effects`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import types as T
from .agents import AgentInstance, MailboxClosed, Runtime, YieldSignal, set_current_context, start_thread
from .effects import Effects
from .errors import AgentCancelled, SageRaise, TestAbort
from .values import ErrorValue

if TYPE_CHECKING:
    from .compile import CompiledAgent


class Host:
    def __init__(self, runtime: Runtime, effects: Effects) -> None:
        self.runtime = runtime
        self.effects = effects
        self.tests: list = []

    def add_test(self, decl: Any, body: Any, namespace: Any) -> None:
        """A compiled test block; `namespace.path` is the file it was written in."""
        self.tests.append((decl, body, namespace))

    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        effects = ctx.runtime.effects if ctx is not None and ctx.runtime.effects is not None else self.effects
        effects.trace(ctx, kind, data)

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
                    inst.runtime.store.load(agent.name, name, t, inst.fields.get(name))
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

def prelude_record_type(name: str) -> T.Type:
    """The type of a record of the prelude (stdlib/prelude.sg), such as `McpServerInfo`."""
    from ..check.prelude import load_prelude
    return T.RecordT(load_prelude().records[name])


def _runtime_type_name(v: Any) -> str:
    from ..runtime.values import Record, Variant
    t = type(v)
    if t is Record:
        return v.name
    if t is Variant:
        return v.enum
    return {int: "Int", float: "Float", bool: "Bool", str: "String", list: "List", dict: "Map",
            tuple: "Tuple"}.get(t, "Unit")
