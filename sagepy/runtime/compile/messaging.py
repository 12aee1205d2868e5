"""Agents and the LLM in expressions: `summon`, `await`, `send`, `receive`, `reply`, `yield`, `trace`, `divine`,
and the methods of an agent's `@persistent` fields.

Starting an agent's thread is the lifecycle's job (runtime/lifecycle.py `spawn`); everything else happens on the
calling agent's thread, through its mailbox or its effects.
"""
from __future__ import annotations

from typing import Any

from ...check.symbols import ToolRef
from ...effects.step import current_context
from ..agents import AgentInstance, MailboxClosed, YieldSignal
from ...core.errors import SageRaise, raise_at
from ..lifecycle import spawn
from ...core.values import UNIT, display
from .context import Compiling
from .frames import Code, located


def closed(runtime: Any, message: str, file: str, span: tuple) -> SageRaise:
    """Agent error E204 of a `send` or `receive` that found a mailbox closed or its agent ended; while the
    program or test shuts down that is the shutdown's doing, and it ends the agent quietly (SPEC §4.6)."""
    exc = raise_at("Agent", message, "E204", file, span)
    exc.error.by_shutdown = runtime.shutting_down
    return exc


def summon(c: Compiling, node: Any) -> Code:
    agent = c.compiled[id(node.ref.decl)]
    given = [(fname, c.expr(value)) for fname, value, _ in node.fields]
    runtime = c.runtime

    def summon(frame: list) -> AgentInstance:
        fields = {n: code(frame) for n, code in given}
        parent = frame[0]
        if parent is not None:
            return spawn(agent, fields, parent, parent.runtime)
        # a constant's first evaluation: the run of the agent evaluating it, or the test file's runtime
        ctx = current_context()
        return spawn(agent, fields, None, ctx.runtime if ctx is not None else runtime)
    return summon


def await_(c: Compiling, node: Any) -> Code:
    target = c.expr(node.expr)
    timeout = c.expr(node.timeout) if node.timeout is not None else None
    file, span = c.file, node.span

    def await_(frame: list) -> Any:
        h = target(frame)
        if type(h) is not AgentInstance:
            raise raise_at("Runtime", f"cannot await {display(h)}: not an agent handle", None, file, span)
        ms = timeout(frame) if timeout is not None else None
        waiter = frame[0]
        in_time = h.wait_result(waiter, None) if ms is None else h.runtime.effects.await_result(waiter, h, ms)
        if not in_time:
            raise raise_at("Timeout", f"await timed out after {ms} ms", "E203", file, span)
        if not h.agent.message_handlers:
            h.done.wait()
        h.awaited = True
        if h.abort is not None:
            raise h.abort
        if h.error is not None:
            raise SageRaise(h.error)
        return h.result
    return await_


def send(c: Compiling, node: Any) -> Code:
    target = c.expr(node.target)
    message = c.expr(node.message)
    file, span = c.file, node.span

    def send(frame: list) -> Any:
        h = target(frame)
        m = message(frame)
        if type(h) is not AgentInstance:
            raise raise_at("Runtime", f"cannot send to {display(h)}: not an agent handle", None, file, span)
        sender = frame[0]
        if h.done.is_set():
            raise closed(h.runtime, f"send to finished agent {h.display_name}", file, span)
        try:
            h.mailbox.put((m, sender if isinstance(sender, AgentInstance) and sender.agent else None), sender)
        except MailboxClosed:
            raise closed(h.runtime, "mailbox closed", file, span)
        return UNIT
    return send


def receive(c: Compiling, node: Any) -> Code:
    file, span = c.file, node.span

    def receive(frame: list) -> Any:
        inst = frame[0]
        try:
            message, sender = inst.runtime.effects.receive(inst)
        except MailboxClosed:
            raise closed(inst.runtime, "mailbox closed", file, span)
        inst.current_sender = sender
        return message
    return receive


def reply(c: Compiling, node: Any) -> Code:
    value = c.expr(node.value)
    file, span = c.file, node.span

    def reply(frame: list) -> Any:
        inst = frame[0]
        v = value(frame)
        target = inst.current_sender
        if target is None or target.done.is_set():
            raise raise_at("Protocol", "reply target unavailable", None, file, span)
        try:
            target.mailbox.put((v, inst), inst)
        except MailboxClosed:
            raise raise_at("Protocol", "reply target unavailable", None, file, span)
        return UNIT
    return reply


def yield_(c: Compiling, node: Any) -> Code:
    value = c.expr(node.value)

    def run(frame: list) -> Any:
        raise YieldSignal(value(frame))
    return run


def trace(c: Compiling, node: Any) -> Code:
    value = c.expr(node.value)
    trace = c.trace

    def run(frame: list) -> Any:
        trace(frame[0], "user", {"message": display(value(frame))})
        return UNIT
    return run


def divine(c: Compiling, node: Any) -> Code:
    prompt = c.expr(node.prompt)
    target = node.target
    infer = node.infer
    file, span = c.file, node.span
    if node.offered is not None:
        return divine_with_tools(c, node, prompt)
    model = c.expr(node.model) if node.model is not None else None

    def divine(frame: list) -> Any:
        p = prompt(frame)
        ctx = frame[0]
        overrides = ctx.llm_overrides if model is None else dict(ctx.llm_overrides or (), model=model(frame))
        try:
            return ctx.runtime.effects.divine(ctx, p, target, infer, overrides)
        except SageRaise as exc:
            raise located(exc, file, span, ctx)
    return divine


def divine_with_tools(c: Compiling, node: Any, prompt: Code) -> Code:
    """`divine(p, tools: [...], max_steps: n)` (SPEC §4.12): the offered functions are fixed here; a
    dynamic handle is evaluated with the call, like `max_steps` and `model`."""
    offered = [entry if isinstance(entry, ToolRef) else c.expr(entry) for entry in node.offered]
    steps = c.expr(node.max_steps) if node.max_steps is not None else None
    model = c.expr(node.model) if node.model is not None else None
    target, infer = node.target, node.infer
    file, span = c.file, node.span

    def divine(frame: list) -> Any:
        p = prompt(frame)
        entries = [entry if isinstance(entry, ToolRef) else entry(frame) for entry in offered]
        max_steps = steps(frame) if steps is not None else None
        ctx = frame[0]
        overrides = ctx.llm_overrides if model is None else dict(ctx.llm_overrides or (), model=model(frame))
        try:
            return ctx.runtime.effects.divine_with_tools(ctx, p, target, infer, overrides, entries, max_steps)
        except SageRaise as exc:
            raise located(exc, file, span, ctx)
    return divine


def persistent_method(c: Compiling, field: str, method: str, node: Any) -> Code:
    """`self.f.get()`, `self.f.set(v)`, `self.f.update(fn)`, `self.f.checkpoint()` on a `@persistent` field."""
    name = c.agent.name
    if method == "set":
        arg = c.expr(node.args[0])
        return lambda frame: frame[0].runtime.effects.persistent(frame[0], name, field, "set", arg(frame))
    if method == "update":
        return persistent_update(c, name, field, c.expr(node.args[0]), node.span)
    return lambda frame: frame[0].runtime.effects.persistent(frame[0], name, field, method)


def persistent_update(c: Compiling, name: str, field: str, fn: Code, span: tuple) -> Code:
    """`self.f.update(fn)`: the store applies `fn` to the stored value in one transaction (SPEC §4.8); an
    error raised by `fn` leaves the value unchanged and is reported here unless it knows its own site."""
    file = c.file

    def update(frame: list) -> Any:
        f = fn(frame)
        try:
            return frame[0].runtime.effects.persistent(frame[0], name, field, "update", f)
        except SageRaise as exc:
            raise located(exc, file, span, frame[0])
        except RecursionError:
            raise raise_at("Runtime", "call depth exceeded", "E205", file, span)
    return update
