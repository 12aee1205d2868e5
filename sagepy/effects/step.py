"""One nondeterministic operation of a program: the value every layer of the effects chain sees.

A step is a small typed value, one class per kind of SPEC §14's table, holding what that kind needs: the
common part (`Step`) and a few fields of its own. Its number is given to it, never taken by building it: the
code that decides that an operation is a step of its agent passes `number=agent.next_step()` (SPEC §14: the
numbers are the same on every execution of the program), and a call that needs approval is built without one
and numbered once its decision says it is made (`CallStep.take_number`): a denied call, never made, is no
step of its own (SPEC §17.1).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, ClassVar

from ..core import types as T

# The kinds of SPEC §14's table.
LLM = "llm"          # a model turn of divine/infer, or a server's sampling request
TOOL = "tool"        # a built-in or typed MCP tool call
MCP = "mcp"          # the dynamic mcp_* builtins
IO = "io"            # clock, stdin, environment, file builtins, sleep_ms
RECEIVE = "receive"  # a message taken from the mailbox (`on message`, `receive()`)
STATE = "state"      # `@persistent` get/set/checkpoint
AWAIT = "await"      # `await h timeout(ms)`
APPROVAL = "approval"   # a person's decision on a call that needs approval (SPEC §17.1)
KINDS = (LLM, TOOL, MCP, IO, RECEIVE, STATE, AWAIT, APPROVAL)

UNREAD = object()   # `Step.read` until a layer reads the step's outcome

_current = threading.local()


def set_current_context(ctx: Any) -> None:
    """Record the agent (or test) context this thread runs, whose steps it performs: the runtime sets it when
    it starts an agent's thread, for the layers and clients that are not handed the context."""
    _current.ctx = ctx


def current_context() -> Any:
    return getattr(_current, "ctx", None)


class Step:
    """What every step has: its target (SPEC §14's naming), its arguments in wire form (JSON data), its
    declared return type (None when its outcome needs no conversion), the performing agent (or test) context,
    and its number there. `agent` is None for a step of no agent in particular (a server's sampling request,
    the journal's reconnection), which has no number either. `safety_class`: the step's safety class, None
    while it is unknown (a remote tool's, whose annotations cost a round trip: `safety` looks it up on first
    read). Neither the agent nor the fields of a kind are part of the step's identity (kind, target,
    arguments, path, number). (Plain classes with slots, not dataclasses: a plain run does not import
    `dataclasses`, tests/test_startup_imports.py.)

    The steps whose outcome the boundary converts (model turns and calls) also have `read`: the outcome in
    the form its consumer takes (the Sage value; the fitted JSON for a call a model asked for), when the layer
    that answered made it while checking its answer (the real layer for a typed MCP result or a typed
    `divine` answer, the mocks layer for every mock): the boundary takes it instead of converting the wire
    data again; `UNREAD` otherwise. It is no part of the step's identity either."""

    kind: ClassVar[str] = ""
    __slots__ = ("target", "arguments", "agent", "ret", "number", "safety_class")

    def __init__(self, *, target: str, arguments: Any, agent: Any, ret: T.Type | None = None,
                 number: int | None = None, safety_class: str | None = "read_only") -> None:
        self.target = target
        self.arguments = arguments
        self.agent = agent
        self.ret = ret
        self.number = number
        self.safety_class = safety_class

    @property
    def path(self) -> str | None:
        """The performing agent's path (SPEC §14), None for a step of no agent."""
        return self.agent.path if self.agent is not None else None

    @property
    def safety(self) -> str:
        if self.safety_class is None:
            self.safety_class = self.look_up_safety()
        return self.safety_class

    def look_up_safety(self) -> str:
        return "destructive"

    def __repr__(self) -> str:
        return f"<step {self.path}:{self.number} {self.kind} {self.target}>"


class ModelStep(Step):
    """A model turn: of a plain `divine`/`infer` (`overrides`, its request fields), of a
    `divine(p, tools: [...])` (`turn`, its `ModelTurn`; the arguments are the conversation and the offered
    names), or a server's sampling request (target `sampling`, no agent)."""

    kind = LLM
    __slots__ = ("turn", "overrides", "read")

    def __init__(self, *, turn: Any = None, overrides: dict | None = None, **common: Any) -> None:
        Step.__init__(self, **common)
        self.turn = turn
        self.overrides = overrides
        self.read: Any = UNREAD


class CallStep(Step):
    """A call of a tool function, which may need a person's approval first (SPEC §17.1). `tool`: the
    checker's `ToolRef` of the function (for a dynamic call, of the function a model asked for, else None);
    `source`: `"model"` for the calls a model asks for in `divine(p, tools: [...])` (SPEC §4.12), traced as
    such; `call_id`: the model's id of such a call; `approval`: the step of the decision the call needs,
    numbered just before it; `decision`: that decision once taken; `resolve`: how the safety class is found
    when it was not known when the step was built."""

    __slots__ = ("tool", "source", "call_id", "approval", "decision", "resolve", "read")

    def __init__(self, *, tool: Any = None, source: str | None = None, approval: "ApprovalStep | None" = None,
                 resolve: Callable[["Step"], str] | None = None, **common: Any) -> None:
        Step.__init__(self, **common)
        self.tool = tool
        self.source = source
        self.call_id: str | None = None
        self.approval = approval
        self.decision: dict | None = None
        self.resolve = resolve
        self.read: Any = UNREAD

    def look_up_safety(self) -> str:
        return self.resolve(self) if self.resolve is not None else "destructive"

    def take_number(self) -> None:
        """The call is made once approved (or denied by an older sagepy, `decisions.takes_number`): it is a
        step of its agent, numbered after its approval."""
        if self.number is None and self.agent is not None:
            self.number = self.agent.next_step()


class ToolStep(CallStep):
    """A built-in or typed MCP tool function's call (`tool` is always set)."""

    kind = TOOL
    __slots__ = ()


class McpStep(CallStep):
    """One of the dynamic `mcp_*` builtins (SPEC §8.5, §8.11); only `mcp_call` may need approval."""

    kind = MCP
    __slots__ = ()


class IoStep(Step):
    """An `io` builtin's call; `person`, what an `ask` asks of a person (sagepy.effects.approvals.Question)."""

    kind = IO
    __slots__ = ("person",)

    def __init__(self, *, person: Any = None, **common: Any) -> None:
        Step.__init__(self, **common)
        self.person = person


class ReceiveStep(Step):
    """A message taken from the agent's mailbox."""

    kind = RECEIVE
    __slots__ = ()


class StateStep(Step):
    """A `@persistent` field's get, set, update or checkpoint: `field` is (agent, field, value) — the field
    None for a `checkpoint()` of every field, the value the Sage value set or the update's function."""

    kind = STATE
    __slots__ = ("field",)

    def __init__(self, *, field: tuple, **common: Any) -> None:
        Step.__init__(self, **common)
        self.field = field


class AwaitStep(Step):
    """`await h timeout(ms)`: `awaited`, the handle's agent instance."""

    kind = AWAIT
    __slots__ = ("awaited",)

    def __init__(self, *, awaited: Any, **common: Any) -> None:
        Step.__init__(self, **common)
        self.awaited = awaited


class ApprovalStep(Step):
    """A person's decision on a call (SPEC §17.1): `person`, what it asks
    (sagepy.effects.approvals.ApprovalRequest)."""

    kind = APPROVAL
    __slots__ = ("person",)

    def __init__(self, *, person: Any, **common: Any) -> None:
        Step.__init__(self, **common)
        self.person = person


def next_number(agent: Any) -> int | None:
    """The next step number of `agent`, None for no agent."""
    return agent.next_step() if agent is not None else None
