"""One nondeterministic operation of a program: the value every layer of the effects chain sees."""
from __future__ import annotations

import threading
from typing import Any, Callable

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
    """kind, target (SPEC §14's naming), arguments in wire form (JSON data), return type, safety class,
    the performing agent's path and its step number there.

    `agent` is the performing agent (or test) context; neither it nor what the real layer needs beyond the
    wire arguments is part of the step's identity: `tool`, the checker's `ToolRef` of a tool step (or of a
    dynamic tool a model asked for); `source`, `"model"` for the calls a model asks for in
    `divine(p, tools: [...])` (SPEC §4.12), traced as such; `turn`, the `ModelTurn` of such a `divine`'s model
    turns; `overrides`, the request fields of a plain `divine`; `field`, (agent, field, value) of a `state` step;
    `awaited`, the handle of an `await`; `call_id`, the model's id of a call it asked for; `approval`, the step
    of the decision a call needs before it is made (SPEC §17.1), numbered just before it: such a call is built
    `numbered=False` and takes its number (`take_number`) once approved, so that a denied call, never made,
    is no step of its own; `decision`, that approval's decision once taken; `person`, what an
    approval or `ask` step asks of a person (sagepy.effects.approvals); `read`, the outcome in the form its
    consumer takes (the Sage value; the fitted JSON for a call a model asked for), when the layer that answered
    made it while checking its answer (the real layer for a typed MCP result or a typed `divine` answer, the
    mocks layer for every mock): the boundary takes it instead of converting the wire data again, `UNREAD`
    otherwise. A safety class that costs a round trip to find (a remote tool's annotations) is resolved on
    first read.
    """

    __slots__ = ("kind", "target", "arguments", "ret", "path", "number", "agent", "tool", "source", "turn",
                 "overrides", "field", "awaited", "call_id", "approval", "decision", "person", "read",
                 "_safety", "_resolve")

    def __init__(self, kind: str, target: str, arguments: Any, ret: T.Type | None, safety: str | None,
                 agent: Any, *, tool: Any = None, source: str | None = None, turn: Any = None,
                 overrides: dict | None = None, field: tuple | None = None, awaited: Any = None,
                 person: Any = None, resolve: Callable[["Step"], str] | None = None, numbered: bool = True) -> None:
        self.kind = kind
        self.target = target
        self.arguments = arguments
        self.ret = ret
        self.agent = agent
        self.tool = tool
        self.source = source
        self.turn = turn
        self.overrides = overrides
        self.field = field
        self.awaited = awaited
        self.call_id: str | None = None   # the model's id of a call it asked for (SPEC §4.12)
        self.approval: Step | None = None
        self.decision: dict | None = None
        self.person = person
        self.read: Any = UNREAD
        self._safety = safety
        self._resolve = resolve
        self.path = agent.path if agent is not None else None   # None: a server's sampling request, answered
        self.number: int | None = None                           # on the event loop for no agent in particular
        if numbered:
            self.take_number()

    def take_number(self) -> None:
        """The agent's next step number, unless the step has one (or no agent)."""
        if self.number is None and self.agent is not None:
            self.agent.steps += 1
            self.number = self.agent.steps

    @property
    def safety(self) -> str:
        if self._safety is None:
            self._safety = self._resolve(self) if self._resolve is not None else "destructive"
        return self._safety

    def __repr__(self) -> str:
        return f"<step {self.path}:{self.number} {self.kind} {self.target}>"
