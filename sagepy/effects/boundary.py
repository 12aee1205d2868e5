"""THE boundary between the interpreter and the world (DESIGN.md "The effects boundary").

The interpreter calls one `Effects` object per run (per test under `sage test`). Each method turns one
nondeterministic operation into a `Step` and passes it through the run's chain of layers (mocks under
`sage test`, trace, journal, real; see `factory.build_effects`). Sage values become wire data (JSON, §5)
here, when the step is built, and the step's outcome, wire data too, becomes the Sage value here when it
comes back (by the step's declared type: `step.ret`, or the builtin's for `io` and `mcp` steps): the layers,
the journal and the MCP package see JSON only. Each conversion is made once: when the layer that answered
had to convert its answer to check it (a mock, a typed `divine`'s answer, a typed MCP result with a
fallback), the step's `read` holds the value and is taken as it is. A call a model asked for stays JSON
(`wire_tool_step`, and its result read as fitted JSON for the model). `state`, `receive` and `await` steps
are the exception: their values (a field's value, a message, a Bool) never leave the process.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import types as T
from ..core.values import NONE, UNIT, some
from ..effect_builtins import EFFECT_BUILTINS
from .chain import Perform
from .facts import Facts, LiveFacts
from .step import (UNREAD, ApprovalStep, AwaitStep, CallStep, IoStep, McpStep, ModelStep, ReceiveStep, StateStep,
                   Step, ToolStep, next_number)
from .trace import Tracer
from .world import World

if TYPE_CHECKING:
    from ..check.symbols import ToolRef
    from ..settings import Settings


class Effects:
    def __init__(self, runtime: Any, settings: Settings, tracer: Tracer) -> None:
        self.runtime = runtime
        self.settings = settings
        self.tracer = tracer
        self.world = World(settings, tracer, self.elicit, self.sample, runtime)
        # what the boundary asks of the world besides steps; a test's or a replay's, wrapping these, is
        # set by build_effects
        self.facts: Facts = LiveFacts(self.world)
        self.journal: Any = None        # the journal of a durable run (effects.journal.Journal), else None
        self.otel: Any = None           # the spans of an exported run (telemetry.spans.SpanExport), else None
        self.cassette: Any = None       # the recorded run written or replayed (effects.cassette.Cassette), else None
        policy = settings.approvals
        self.gated = policy is not None and bool(policy.rules)   # some calls may need approval (SPEC §17)
        self._people: Any = None
        self.answerer: Any = None       # who answers approvals and `ask` instead of the terminal (a Host's people)
        self.perform: Perform = _unassembled   # the chain, set by build_effects

    # ---------------------------------------------------------------- model turns
    @property
    def usage(self) -> Any:
        """The run's model usage (SPEC §23), sagepy.llm.usage.RunUsage."""
        return self.world.usage

    def usage_summary(self) -> dict:
        """`RunOutcome.usage`: that of a run that made no model request without loading the LLM package."""
        if not self.world.usage_started:
            return {"turns": 0, "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0, "cost": None,
                    "unknown_turns": 0}
        return self.world.usage.summary()

    def divine(self, ctx: Any, prompt: str, target: T.Type, infer: bool, overrides: dict | None = None) -> Any:
        step = ModelStep(target="infer" if infer else "divine", arguments=[prompt], agent=ctx, ret=target,
                         overrides=overrides, number=next_number(ctx))
        data = self.perform(step)
        return step.read if step.read is not UNREAD else sage_value(data, target)

    def divine_with_tools(self, ctx: Any, prompt: str, target: T.Type, infer: bool, overrides: dict | None,
                          offered: list, max_steps: int | None) -> Any:
        """`divine(p, tools: [...])`: the model's turns and the calls it asks for, each one step (§4.12)."""
        from .model_tools import divine_with_tools
        return divine_with_tools(self, ctx, prompt, target, infer, overrides, offered, max_steps)

    def sample(self, server: str, messages: list, system: str | None, max_tokens: int | None) -> str:
        """An MCP server's sampling request (SPEC §8), answered like `divine`."""
        arguments = {"server": server, "messages": messages, "system": system, "max_tokens": max_tokens}
        # not a step of the agent whose call the server is answering: whether a server samples is not the
        # program's doing, and counting it would shift the agent's step numbers between runs (SPEC §14)
        return self.perform(ModelStep(target="sampling", arguments=arguments, agent=None, ret=T.STRING))

    # ---------------------------------------------------------------- tools
    def tool_call(self, ctx: Any, ref: ToolRef, args: list) -> Any:
        return self.value(self.tool_step(ctx, ref, args))

    def value(self, step: CallStep) -> Any:
        """Perform a `tool` step or a dynamic `mcp_call` step (the program's, or one a model asked for) and
        return its outcome: a Sage value, or for a call a model asked for, the JSON it reads back."""
        data = self.perform(step)
        if isinstance(step, McpStep):   # mcp_call: a String
            return data
        if step.read is not UNREAD:
            return step.read
        ref = step.tool
        model = step.source == "model"
        if ref.builtin:
            return sage_value(data, ref.ret, model)
        wire = _wire()
        with wire.mcp_errors():
            return wire.typed_value(data, ref.ret, ref.label, ref.remote, model)

    def tool_step(self, ctx: Any, ref: ToolRef, args: list) -> ToolStep:
        """The step of the program's call of `ref` with Sage values `args`, performed by `tool_call`."""
        # every parameter of a built-in tool is a String: already wire data
        return self.wire_tool_step(ctx, ref, args if ref.builtin else _wire().tool_arguments(ref, args))

    def wire_tool_step(self, ctx: Any, ref: ToolRef, arguments: Any, source: str | None = None) -> ToolStep:
        """The step of a call of `ref` with wire arguments (a built-in tool's positional Strings, a typed
        call's arguments object): one a model asked for (`source` "model"; its arguments come checked and
        fitted from the model's JSON, sagepy.llm.tool_loop), or the program's; with the approval step it
        needs, numbered before it (SPEC §17.1)."""
        if ref.builtin:
            known = self.world.tool_safety(ref)
        else:
            # the class is the step's from the start once the server's listing gave it (World.known_safety);
            # before, it is looked up when first read, so that a mocked or replayed call connects to nothing
            known = self.world.known_safety(ref.label)
        approval = self._tool_gate(ctx, ref, arguments, source) if self.gated else None
        facts = self.facts
        return ToolStep(target=ref.label, arguments=arguments, agent=ctx, ret=ref.ret, tool=ref, source=source,
                        safety_class=known, resolve=lambda step: facts.tool_safety(step.tool),
                        approval=approval, number=next_number(ctx) if approval is None else None)

    def decide(self, step: CallStep) -> None:
        """Take the decision on a call's approval now (the calls a model asks for in one answer, in the
        model's order, before any of them is made): the approvals layer takes a decision performed on its own
        and answers with it. An approved call takes its number at once, after its approval's."""
        if step.approval is not None and step.decision is None:
            from ..decisions import takes_number
            step.decision = self.perform(step.approval)
            if takes_number(step.decision):
                step.take_number()

    def _tool_gate(self, ctx: Any, ref: ToolRef, arguments: Any, source: str | None) -> ApprovalStep | None:
        names = (ref.tool,) if ref.builtin else (ref.tool, ref.server)

        def shown() -> Any:   # a built-in tool's arguments are positional: shown by parameter name
            return dict(zip(ref.params, arguments)) if ref.builtin else arguments
        return self.people.gate(ctx, names, ref.tool, ref.fn, ref.label, source or "program", shown,
                                lambda: self.facts.approval_safety(ref))

    def mcp_builtin(self, ctx: Any, name: str, args: list, ret: T.Type | None = None) -> Any:
        """The dynamic MCP builtins of SPEC §8.5 and §8.11 (sagepy.effect_builtins; their arguments are Strings:
        wire data already); `ret`, the declared type the checker recorded for those that carry it, becomes the
        step's."""
        builtin = EFFECT_BUILTINS[name]
        if not builtin.step:   # mcp_connection: a lookup of this run's handles
            return self.facts.connection(args[0])
        if name == "mcp_call":   # a tool's call: its class is the tool's, and it may need approval
            return self.perform(self.mcp_call_step(ctx, args))
        step = McpStep(target=name, arguments=args, agent=ctx, ret=ret, safety_class=builtin.safety,
                       number=next_number(ctx))
        data = self.perform(step)
        if builtin.unit:
            return UNIT
        if step.read is not UNREAD:   # a mock of a builtin that declares its type, converted to it
            return step.read
        return _wire().builtin_value(name, data)

    def mcp_call_step(self, ctx: Any, args: list, caller: ToolRef | None = None) -> McpStep:
        """The step of `mcp_call(handle, tool, args_json)`; `caller` describes a call the model asked for."""
        approval = self._dynamic_gate(ctx, args, caller) if self.gated else None
        facts = self.facts
        return McpStep(target="mcp_call", arguments=args, agent=ctx, ret=T.STRING, tool=caller,
                       source=None if caller is None else "model", safety_class=None,
                       resolve=lambda step: facts.dynamic_safety(step.arguments[0], step.arguments[1]),
                       approval=approval, number=next_number(ctx) if approval is None else None)

    def _dynamic_gate(self, ctx: Any, args: list, caller: ToolRef | None) -> ApprovalStep | None:
        """The approval of a call of a dynamic connection's tool, known by the connection's name."""
        handle, tool, args_json = args
        server = caller.tool if caller is not None else self.facts.server_name(handle)

        def shown() -> Any:
            from ..core.json_text import parse_json
            try:
                return parse_json(args_json)
            except ValueError:
                return args_json

        def safety() -> str:
            return self.facts.dynamic_approval_safety(handle, tool)
        return self.people.gate(ctx, (server,), server, tool, f"{server}.{tool}",
                                "program" if caller is None else "model", shown, safety)

    def live_handle(self, handle: str) -> str:
        """The MCP handle to use with the pool for a handle the program holds: itself, except in a resumed
        durable run, whose replayed `mcp_connect`s gave the recorded handles (the journal connects again on
        first use)."""
        return self.facts.live_handle(handle)

    # ---------------------------------------------------------------- clock, stdin, environment, files, sleep
    def io(self, ctx: Any, name: str, args: tuple | list) -> Any:
        """An `io` builtin's call (sagepy.effect_builtins), as a step of ctx's agent."""
        if name == "ask":
            return self.ask(ctx, args[0])
        builtin = EFFECT_BUILTINS[name]
        data = self.perform(IoStep(target=name, arguments=list(args), agent=ctx, safety_class=builtin.safety,
                                   number=next_number(ctx)))
        if data is None:   # Unit, or an Option's None
            return NONE if builtin.optional else UNIT
        return some(data) if builtin.optional else data   # the others' values are their own JSON

    # ---------------------------------------------------------------- people (SPEC §17)
    @property
    def people(self) -> Any:
        """The approvals and questions of this run (sagepy.effects.approvals.People), made on first use."""
        if self._people is None:
            from .approvals import People
            self._people = People(self.settings.approvals, self.tracer, answerer=self.answerer)
        return self._people

    def answer_with(self, answerer: Any) -> None:
        """Let `answerer` (a Host's `people`) answer approvals and `ask` instead of the terminal."""
        self.answerer = answerer
        if self._people is not None:
            self._people.answerers.terminal = answerer

    def ask(self, ctx: Any, question: str) -> str:
        """`ask(question)`: an `io` step, answered by a mock, the journal, the terminal, or no one."""
        return self.people.ask_question(ctx, question, self.perform)

    # ---------------------------------------------------------------- agents
    def receive(self, ctx: Any) -> tuple:
        """The next (message, sender) of ctx's mailbox; raises MailboxClosed or AgentCancelled. The step's
        value also holds the sender's send number, which the journal records."""
        return self.perform(ReceiveStep(target="receive", arguments=[], agent=ctx, number=next_number(ctx)))[:2]

    def await_result(self, ctx: Any, handle: Any, ms: int) -> bool:
        """`await h timeout(ms)`: whether h's result was fixed in time."""
        return self.perform(AwaitStep(target="await", arguments=[ms], agent=ctx, awaited=handle,
                                      number=next_number(ctx)))

    def persistent(self, ctx: Any, agent: str, field: str, method: str, value: Any = None) -> Any:
        """`self.f.get()`, `self.f.set(v)`, `self.f.update(fn)` (value: the Sage function), `self.f.checkpoint()`
        of agent's persistent field f."""
        if method == "update":
            return self.perform(StateStep(target=f"{field}.update", arguments=[], agent=ctx, safety_class="idempotent",
                                          field=(agent, field, value), number=next_number(ctx)))
        if method == "set":
            from ..core.convert import to_json
            return self.perform(StateStep(target=f"{field}.set", arguments=[to_json(value)], agent=ctx,
                                          safety_class="idempotent", field=(agent, field, value),
                                          number=next_number(ctx)))
        safety = "read_only" if method == "get" else "idempotent"
        return self.perform(StateStep(target=f"{field}.{method}", arguments=[], agent=ctx, safety_class=safety,
                                      field=(agent, field, None), number=next_number(ctx)))

    def checkpoint(self, ctx: Any) -> None:
        """The statement `checkpoint();`: save every persistent field of the running agent."""
        if ctx.agent is not None and ctx.agent.persistent:
            self.perform(StateStep(target="checkpoint", arguments=[], agent=ctx, safety_class="idempotent",
                                   field=(ctx.agent.name, None, None), number=next_number(ctx)))

    # ---------------------------------------------------------------- MCP callbacks and lifetime
    def elicit(self, server: str, request: Any) -> Any:
        """Answer a server's elicitation (SPEC §8.7; not a step: answers are never replayed): as the run's
        facts say (a test's from its `mock elicit` queue; else the run's answerer when it takes servers'
        questions, `sage serve`'s calling client; else the terminal form or decline, as configured)."""
        return self.facts.elicit(server, request)

    def prestart(self, tools: set[str]) -> None:
        """Start the servers of the tool blocks some agent `use`s (a test's or a replayed run's start none)."""
        self.facts.prestart(tools)

    def interrupt_form(self) -> bool:
        return self.world.interrupt_form()

    def trace(self, ctx: Any, kind: str, data: dict) -> None:
        self.tracer.emit(ctx, kind, data)
        if self.otel is not None:
            self.otel.event(ctx, kind, data)

    def close(self) -> None:
        if self.cassette is not None:
            self.cassette.close()
        self.world.close()
        self.tracer.close()
        if self.otel is not None:
            self.otel.close()


def _wire() -> Any:
    """sagepy.effects.wire, imported when a program first calls an MCP tool."""
    from . import wire
    return wire


def sage_value(data: Any, t: T.Type, model: bool = False) -> Any:
    """The Sage value of type `t` of a step's outcome (wire data, §5); `model`: its fitted JSON instead, for
    a call a model asked for."""
    kind = type(data)
    if (kind is str and t == T.STRING) or (kind is bool and t == T.BOOL):   # the common cases, at no cost
        return data
    if t is T.UNIT or t == T.UNIT:
        return None if model else UNIT
    from ..core.convert import fitted_json, from_json
    return fitted_json(data, t, finite=False) if model else from_json(data, t)


def _unassembled(step: Step) -> Any:
    raise RuntimeError("Effects used before build_effects assembled its chain")
