"""THE boundary between the interpreter and the world (DESIGN.md "The effects boundary").

The interpreter calls one `Effects` object per run (per test under `sage test`). Each method turns one
nondeterministic operation into a `Step` and passes it through the run's chain of layers (mocks under
`sage test`, trace, journal, real; see `factory.build_effects`). Sage values become wire data (JSON, §5)
here, when the step is built, and the step's outcome, wire data too, becomes the Sage value here when it
comes back (by the step's declared type: `step.ret`, or the builtin's for `io` and `mcp` steps), and nowhere
else: the layers, the journal and the MCP package see JSON only. `state`, `receive` and `await` steps are the
exception: their values (a field's value, a message, a Bool) never leave the process.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import types as T
from ..core.errors import SageRaise
from ..core.values import NONE, UNIT, Variant, some
from ..effect_builtins import EFFECT_BUILTINS
from .chain import Perform
from .step import AWAIT, IO, LLM, MCP, RECEIVE, STATE, TOOL, Step
from .trace import Tracer
from .world import World

if TYPE_CHECKING:
    from ..check.symbols import ToolRef
    from ..settings import Settings



class Effects:
    def __init__(self, runtime: Any, settings: Settings, tracer: Tracer, mocks: Any = None,
                 real_llm: bool = False) -> None:
        self.runtime = runtime
        self.settings = settings
        self.tracer = tracer
        self.mocks = mocks              # sagepy.effects.mocks.MockQueues under `sage test`, else None
        self.real_llm = real_llm        # `sage test --real-llm`
        self.ended = False              # the test this Effects belongs to has ended
        self.world = World(settings, tracer, self.elicit, self.sample, runtime)
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
        data = self.perform(Step(LLM, "infer" if infer else "divine", [prompt], target, "read_only", ctx,
                                 overrides=overrides))
        return sage_value(data, target)

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
        return self.perform(Step(LLM, "sampling", arguments, T.STRING, "read_only", None))

    # ---------------------------------------------------------------- tools
    def tool_call(self, ctx: Any, ref: ToolRef, args: list) -> Any:
        return self.value(self.tool_step(ctx, ref, args))

    def value(self, step: Step) -> Any:
        """Perform a `tool` step or a dynamic `mcp_call` step (the program's, or one a model asked for) and
        return its outcome as a Sage value."""
        data = self.perform(step)
        if step.kind == MCP:   # mcp_call: a String
            return data
        ref = step.tool
        if ref.builtin:
            return sage_value(data, ref.ret)
        wire = _wire()
        with wire.mcp_errors():
            return wire.typed_value(data, ref.ret, ref.label, ref.remote)

    def tool_step(self, ctx: Any, ref: ToolRef, args: list, source: str | None = None) -> Step:
        """The step of a call of `ref` with Sage values `args` (performed by `tool_call`, or by the model's
        tool loop with `source` "model"), with the approval step it needs, numbered before it (SPEC §17.1)."""
        if ref.builtin:   # every parameter of a built-in tool is a String: already wire data
            approval = self._tool_gate(ctx, ref, args, source) if self.gated else None
            step = Step(TOOL, ref.label, args, ref.ret, self.world.tool_safety(ref), ctx, tool=ref, source=source,
                        numbered=approval is None)
        else:
            arguments = _wire().tool_arguments(ref, args)
            approval = self._tool_gate(ctx, ref, arguments, source) if self.gated else None
            # the class is the step's from the start once the server's listing gave it (World.known_safety);
            # before, it is looked up when first read, so that a mocked or replayed call connects to nothing
            known = self.world.known_safety(ref.label)
            step = Step(TOOL, ref.label, arguments, ref.ret, known, ctx, tool=ref, source=source,
                        resolve=None if known is not None else self._tool_safety, numbered=approval is None)
        step.approval = approval
        return step

    def decide(self, step: Step) -> None:
        """Take the decision on a call's approval now (the calls a model asks for in one answer, in the
        model's order, before any of them is made): the approvals layer takes a decision performed on its own
        and answers with it. An approved call takes its number at once, after its approval's."""
        if step.approval is not None and step.decision is None:
            from ..decisions import takes_number
            step.decision = self.perform(step.approval)
            if takes_number(step.decision):
                step.take_number()

    def _tool_gate(self, ctx: Any, ref: ToolRef, arguments: Any, source: str | None) -> Step | None:
        names = (ref.tool,) if ref.builtin else (ref.tool, ref.server)

        def shown() -> Any:   # a built-in tool's arguments are positional: shown by parameter name
            return dict(zip(ref.params, arguments)) if ref.builtin else arguments
        return self.people.gate(ctx, names, ref.tool, ref.fn, ref.label, source or "program", shown,
                                lambda: self._approval_safety(ref))

    def _approval_safety(self, ref: ToolRef) -> str:
        """The class that decides a `"destructive"` approval rule: under `sage test` an MCP tool's
        `[tools.X.safety]` override, else destructive, with no listing made (SPEC §17.1)."""
        if self.mocks is None or ref.builtin:
            return self.world.tool_safety(ref)
        server = self.settings.tools.servers.get(ref.server)
        return server.safety.get(ref.remote, "destructive") if server is not None else "destructive"

    def _tool_safety(self, step: Step) -> str:
        if self._replaying():
            return "destructive"
        return self.world.tool_safety(step.tool)

    def _replaying(self) -> bool:
        """A run answered from a cassette connects to no server, not even for a remote tool's safety class:
        such a call counts as destructive (the model's calls of one answer then run one after another)."""
        return self.cassette is not None and self.cassette.mode == "replay"

    def mcp_builtin(self, ctx: Any, name: str, args: list, ret: T.Type | None = None) -> Any:
        """The dynamic MCP builtins of SPEC §8.5 and §8.11 (sagepy.effect_builtins; their arguments are Strings:
        wire data already); `ret`, the declared type the checker recorded for those that carry it, becomes the
        step's."""
        builtin = EFFECT_BUILTINS[name]
        if not builtin.step:   # mcp_connection: a lookup of this run's handles
            return self._connection(args[0])
        if name == "mcp_call":   # a tool's call: its class is the tool's, and it may need approval
            return self.perform(self.mcp_call_step(ctx, args))
        data = self.perform(Step(MCP, name, args, ret, builtin.safety, ctx))
        if builtin.unit:
            return UNIT
        return _wire().builtin_value(name, data)

    def mcp_call_step(self, ctx: Any, args: list, caller: ToolRef | None = None) -> Step:
        """The step of `mcp_call(handle, tool, args_json)`; `caller` describes a call the model asked for."""
        approval = self._dynamic_gate(ctx, args, caller) if self.gated else None
        step = Step(MCP, "mcp_call", args, T.STRING, None, ctx, tool=caller,
                    source=None if caller is None else "model", resolve=self._dynamic_safety,
                    numbered=approval is None)
        step.approval = approval
        return step

    def _dynamic_gate(self, ctx: Any, args: list, caller: ToolRef | None) -> Step | None:
        """The approval of a call of a dynamic connection's tool, known by the connection's name."""
        handle, tool, args_json = args
        server = caller.tool if caller is not None else self._server_name(handle)

        def shown() -> Any:
            from ..core.json_text import parse_json
            try:
                return parse_json(args_json)
            except ValueError:
                return args_json

        def safety() -> str:
            if self.mocks is not None:
                return "destructive"
            return self.world.dynamic_safety(self.live_handle(handle), tool)
        return self.people.gate(ctx, (server,), server, tool, f"{server}.{tool}",
                                "program" if caller is None else "model", shown, safety)

    def _server_name(self, handle: str) -> str:
        """A dynamic connection's configured `name`, else `mcp<n>` (SPEC §4.12)."""
        manager = self.world.mcp_started
        if manager is not None and (self.mocks is None or handle not in self.mocks.issued_handles):
            from ..mcp.failures import McpFailure
            try:
                label = manager.handle_label(self.live_handle(handle))
            except (McpFailure, SageRaise):   # no such connection: the call itself will say so
                label = handle
            if not label.startswith("mcp:"):
                return label
        return "mcp" + handle.rpartition(":")[2]

    def _dynamic_safety(self, step: Step) -> str:
        if self._replaying():
            return "destructive"
        return self.world.dynamic_safety(self.live_handle(step.arguments[0]), step.arguments[1])

    def live_handle(self, handle: str) -> str:
        """The MCP handle to use with the manager for a handle the program holds: itself, except in a resumed
        durable run, whose replayed `mcp_connect`s gave the recorded handles (the journal connects again on
        first use)."""
        if self.journal is None:
            return handle
        return self.journal.live_handle(handle, self._connect_again)

    def _connect_again(self, step: Step) -> str:
        wire = _wire()
        with wire.mcp_errors():
            return self.world.mcp().connect(*step.arguments)

    def _connection(self, handle: str) -> Variant:
        connection_record = _wire().connection_record
        if self.mocks is not None and handle in self.mocks.issued_handles:
            suffix = handle.split(":", 1)[-1]
            return connection_record(int(suffix) if suffix.isdigit() else 0)
        manager = self.world.mcp_started

        def open_id(live: str) -> int | None:
            return None if manager is None else manager.connection(live)
        if self.journal is not None:   # a resumed run's handles are the recorded ones
            return connection_record(self.journal.connection(handle, open_id))
        return connection_record(open_id(handle))

    # ---------------------------------------------------------------- clock, stdin, environment, files, sleep
    def io(self, ctx: Any, name: str, args: tuple | list) -> Any:
        """An `io` builtin's call (sagepy.effect_builtins), as a step of ctx's agent."""
        if name == "ask":
            return self.ask(ctx, args[0])
        builtin = EFFECT_BUILTINS[name]
        data = self.perform(Step(IO, name, list(args), None, builtin.safety, ctx))
        if data is None:   # Unit, or an Option's None
            return NONE if builtin.optional else UNIT
        return some(data) if builtin.optional else data   # the others' values are their own JSON

    # ---------------------------------------------------------------- people (SPEC §17)
    @property
    def people(self) -> Any:
        """The approvals and questions of this run (sagepy.effects.approvals.People), made on first use."""
        if self._people is None:
            from .approvals import People
            self._people = People(self.settings.approvals, self.mocks, self.tracer, answerer=self.answerer)
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
        return self.perform(Step(RECEIVE, "receive", [], None, "read_only", ctx))[:2]

    def await_result(self, ctx: Any, handle: Any, ms: int) -> bool:
        """`await h timeout(ms)`: whether h's result was fixed in time."""
        return self.perform(Step(AWAIT, "await", [ms], None, "read_only", ctx, awaited=handle))

    def persistent(self, ctx: Any, agent: str, field: str, method: str, value: Any = None) -> Any:
        """`self.f.get()`, `self.f.set(v)`, `self.f.update(fn)` (value: the Sage function), `self.f.checkpoint()`
        of agent's persistent field f."""
        if method == "update":
            return self.perform(Step(STATE, f"{field}.update", [], None, "idempotent", ctx,
                                     field=(agent, field, value)))
        if method == "set":
            from ..core.convert import to_json
            return self.perform(Step(STATE, f"{field}.set", [to_json(value)], None, "idempotent", ctx,
                                     field=(agent, field, value)))
        safety = "read_only" if method == "get" else "idempotent"
        return self.perform(Step(STATE, f"{field}.{method}", [], None, safety, ctx, field=(agent, field, None)))

    def checkpoint(self, ctx: Any) -> None:
        """The statement `checkpoint();`: save every persistent field of the running agent."""
        if ctx.agent is not None and ctx.agent.persistent:
            self.perform(Step(STATE, "checkpoint", [], None, "idempotent", ctx, field=(ctx.agent.name, None, None)))

    # ---------------------------------------------------------------- MCP callbacks and lifetime
    def elicit(self, server: str, request: Any) -> Any:
        """Answer a server's elicitation (SPEC §8.7; not a step: answers are never replayed): under
        `sage test` the `mock elicit` queue (empty: decline; `fail("m")`: an error answer), then the run's
        answerer when it takes servers' questions (`sage serve`'s calling client), otherwise the terminal form
        or decline, as configured."""
        if self.mocks is not None:
            from .mocks import EMPTY, Failure
            mock = self.mocks.take("elicit")
            if mock is EMPTY:
                return "decline"
            if isinstance(mock, Failure):
                from ..mcp.elicitation import ElicitationRefused
                raise ElicitationRefused(mock.message)
            return mock
        forward = getattr(self.answerer, "elicit", None)
        if forward is not None:
            return forward(server, request)
        from ..mcp.elicitation import TerminalElicitation
        return TerminalElicitation()(server, request)

    def prestart(self, tools: set[str]) -> None:
        if self.cassette is None or self.cassette.mode != "replay":   # a replayed run starts no server
            self.world.prestart(tools)

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


def sage_value(data: Any, t: T.Type) -> Any:
    """The Sage value of type `t` of a step's outcome (wire data, §5)."""
    kind = type(data)
    if (kind is str and t == T.STRING) or (kind is bool and t == T.BOOL):   # the common cases, at no cost
        return data
    if t is T.UNIT or t == T.UNIT:
        return UNIT
    from ..core.convert import from_json
    return from_json(data, t)


def _unassembled(step: Step) -> Any:
    raise RuntimeError("Effects used before build_effects assembled its chain")
