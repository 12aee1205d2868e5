"""The lifecycle of an agent (SPEC §4.5, §4.6): on waking, on start, on error, the message loop, on stop.

Each summoned agent runs it in its own thread; the entry agent in the thread `sage run` starts for it.
Messages are taken through the effects chain (`receive` steps), like every other nondeterministic input.
"""
from __future__ import annotations

from typing import Any

from ..deepstack import start_thread
from ..effects.step import set_current_context
from .agents import AgentInstance, MailboxClosed, Runtime, YieldSignal
from ..core.errors import AgentCancelled, SageRaise, TestAbort
from ..core.values import ErrorValue, Record, Variant


def spawn(agent: Any, fields: dict, parent: AgentInstance | None, runtime: Runtime,
          path: str | None = None, llm_overrides: dict | None = None) -> AgentInstance:
    """Start `agent` (a compiled agent) at once in its own thread; `path` defaults to the next child path
    of `parent` (SPEC §14); `llm_overrides`: a supervisor child's `handler Infer: H`, set before it starts."""
    number = runtime.next_number(agent.name)
    if path is None:
        # without a parent (summoned while a constant is first evaluated outside any agent) the number is
        # the only name it has
        path = parent.child_path(agent.name) if parent is not None else f"{agent.name}#{number}"
    inst = AgentInstance(runtime, agent, number, parent, path)
    inst.fields = fields
    inst.llm_overrides = llm_overrides
    runtime.register(inst)
    runtime.effects.trace(inst, "agent.spawn", {"parent": parent.display_name if parent is not None else None})
    inst.thread = start_thread(lambda: run_lifecycle(inst, entry=False), inst.display_name)
    return inst


def run_lifecycle(inst: AgentInstance, entry: bool) -> None:
    """SPEC §4.5: on waking, on start, on error, the message loop, on stop."""
    set_current_context(inst)
    agent = inst.agent
    handlers = agent.handlers
    effects = inst.runtime.effects
    try:
        try:
            for name, t in agent.persistent_types.items():
                inst.runtime.store.load(agent.name, name, t, inst.fields.get(name))
            if "waking" in handlers and agent.persistent:
                handlers["waking"].run(inst)
            if "start" in handlers:
                handlers["start"].run(inst)
        except YieldSignal as y:
            inst.result = y.value
        except SageRaise as exc:
            if exc.error.by_shutdown:   # no `on error`, no warning: the program is ending (SPEC §4.6)
                inst.error = exc.error
                inst.quiet_failure = True
            else:
                _handle_error(inst, exc.error)
        except AgentCancelled:
            inst.error = ErrorValue("Agent", "agent stopped", "E204")
            inst.quiet_failure = True
        except TestAbort as abort:
            inst.abort = abort
            if inst.runtime.test_failure is None:
                inst.runtime.test_failure = abort
            inst.error = ErrorValue("Agent", "test aborted")
            inst.quiet_failure = True
        except RecursionError:
            inst.error = ErrorValue("Runtime", "call depth exceeded", "E205")
        except Exception as exc:  # a bug in sagepy: reported as an internal error, never a traceback
            inst.error = ErrorValue("Runtime", f"internal error: {type(exc).__name__}: {exc}")
        effects.trace(inst, "agent.result", {"ok": inst.error is None, **(
            {"error": inst.error.display()} if inst.error is not None else {})})
        if agent.message_handlers and not entry:
            inst.result_ready.set()
            _message_loop(inst)
        _run_stop(inst)
    finally:
        inst.result_ready.set()
        inst.done.set()
        effects.trace(inst, "agent.stop", {})


def _handle_error(inst: AgentInstance, error: ErrorValue) -> None:
    handler = inst.agent.handlers.get("error")
    if error.agent is None:
        error.agent = inst.display_name
    if handler is None:
        inst.error = error
        return
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


def _message_loop(inst: AgentInstance) -> None:
    effects = inst.runtime.effects
    while True:
        try:
            message, sender = effects.receive(inst)
        except (MailboxClosed, AgentCancelled):
            return
        handler = None
        for test, body in inst.agent.message_handlers:
            if test(message):
                handler = body
                break
        if handler is None:
            effects.trace(inst, "message.dropped", {"type": _runtime_type_name(message)})
            continue
        inst.current_sender = sender
        inst.in_message = True
        try:
            handler.run(inst, message)
        except YieldSignal:
            pass
        except SageRaise as exc:
            if exc.error.by_shutdown:   # the agent ends quietly rather than fail once per queued message
                return
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


def _run_stop(inst: AgentInstance) -> None:
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


def _runtime_type_name(v: Any) -> str:
    t = type(v)
    if t is Record:
        return v.name
    if t is Variant:
        return v.enum
    return {int: "Int", float: "Float", bool: "Bool", str: "String", list: "List", dict: "Map",
            tuple: "Tuple"}.get(t, "Unit")
