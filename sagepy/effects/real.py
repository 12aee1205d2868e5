"""The real layer: performs each step against the world (LLM client, built-in tools, MCP connection pool, clock,
stdin, environment, files, sleep, mailbox, `@persistent` store). It is the last layer of every chain.

Its outcomes are wire data (the JSON of the value, §5; the boundary turns it into the Sage value), except
those of the steps whose values never leave the process: `receive` (the message), `state` (the field's
value, which runtime.persistence converts with the field's type) and `await` (a Bool)."""
from __future__ import annotations

from typing import Any, Callable

from ..core.values import UNIT, Variant
from ..effect_builtins import EFFECT_BUILTINS
from .chain import Perform
from .step import APPROVAL, AWAIT, IO, LLM, MCP, RECEIVE, STATE, TOOL, Step
from .world import World


class RealLayer:
    """`io_builtins`: the native functions of the `io` steps (sagepy.builtins.load_io_builtins), by name, with
    the run's own clock, stdin or environment functions when its host supplies them."""

    def __init__(self, world: World, io_builtins: dict[str, Callable[..., Any]]) -> None:
        self.world = world
        # `io` steps by target: the plain functions (their arguments are the step's arguments)
        self.io_functions: dict[str, Callable[..., Any]] = io_builtins
        self._kinds: dict[str, Callable[[Step], Any]] = {
            LLM: self._llm, TOOL: self._tool, MCP: self._mcp, IO: self._io, RECEIVE: self._receive,
            STATE: self._state, AWAIT: self._await, APPROVAL: self._approval}
        self._wire: Any = None   # sagepy.effects.wire, loaded on the first MCP call

    def perform(self, step: Step, next: Perform) -> Any:
        return self._kinds[step.kind](step)

    def _load_wire(self) -> Any:
        from . import wire
        self._wire = wire
        return wire

    def _llm(self, step: Step) -> Any:
        client = self.world.llm()
        if step.target == "sampling":
            a = step.arguments
            return client.chat(a["messages"], system=a["system"], max_tokens=a["max_tokens"], server=a["server"])
        turn = step.turn
        if turn is not None:   # a turn of `divine(p, tools: [...])`
            return client.turn(step.arguments["messages"], turn.offer.definitions, turn.target, step=turn.turn,
                               **(turn.overrides or {}))
        return client.divine(step.arguments[0], step.ret, infer=step.target == "infer", **(step.overrides or {}))

    def _tool(self, step: Step) -> Any:
        info = step.tool
        if info.builtin:
            from ..tools import call_builtin_tool
            cancel = getattr(step.agent, "cancel_event", None)
            return call_builtin_tool(info.tool, info.fn, step.arguments, cancel=cancel,
                                     overrides=self.world.settings.overrides, resources=self.world.tool_resources())
        step.safety   # settled before the call leaves: a cached lookup after the server's first listing
        world = self.world
        wire = self._wire or self._load_wire()
        with wire.mcp_errors():
            result = world.mcp().call_typed(info.server, info.label, info.remote, step.arguments)
            return wire.typed_json(result, info.ret, info.label, info.remote)

    def _mcp(self, step: Step) -> Any:
        wire = self._wire or self._load_wire()
        with wire.mcp_errors():
            return self._mcp_builtin(wire, self.world.mcp(), step.target, step.arguments)

    def _mcp_builtin(self, wire: Any, pool: Any, name: str, arguments: list) -> Any:
        """The pool's operation of the builtin (sagepy.effect_builtins), its result shaped into the JSON of the
        builtin's value."""
        builtin = EFFECT_BUILTINS[name]
        result = getattr(pool, builtin.perform)(*arguments)
        if builtin.unit:
            return None
        return getattr(wire, builtin.shape)(result) if builtin.shape is not None else result

    def _io(self, step: Step) -> Any:
        if step.target == "ask":   # a person at the terminal (sagepy.effects.approvals)
            return step.person.answerers.ask(step)
        if step.target == "sleep_ms":
            step.agent.sleep(max(0, step.arguments[0]) / 1000)
            return None
        value = self.io_functions[step.target](*step.arguments)
        # the file and env builtins are Sage functions: Unit is JSON null, and `env`'s Option its payload
        if value is UNIT:
            return None
        if type(value) is Variant:
            return value.payload
        return value

    def _approval(self, step: Step) -> dict:
        """A call's approval (SPEC §17.3): for the rest of the run already, else a person at the terminal."""
        return step.person.answerers.approve(step)

    def _receive(self, step: Step) -> tuple:
        agent = step.agent
        return agent.mailbox.get(agent)

    def _state(self, step: Step) -> Any:
        store = step.agent.runtime.store
        agent_name, field, value = step.field
        if step.target.endswith(".get"):
            return store.get(agent_name, field)
        if step.target.endswith(".set"):
            store.save(agent_name, field, value, step.arguments[0])
            return UNIT
        if step.target.endswith(".update"):   # value: the Sage function, applied to the old value in the store
            return store.update(agent_name, field, step.agent.agent.persistent_types[field], value)
        for name in ([field] if field is not None else [f.name for f in step.agent.agent.persistent]):
            store.save(agent_name, name, store.get(agent_name, name))   # checkpoint: save what is there
        return UNIT

    def _await(self, step: Step) -> bool:
        """Whether the awaited agent's result was fixed within the timeout."""
        return step.awaited.wait_result(step.agent, max(0, step.arguments[0]) / 1000)
