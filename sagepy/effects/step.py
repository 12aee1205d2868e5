"""One nondeterministic operation of a program: the value every layer of the effects chain sees."""
from __future__ import annotations

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


class ToolCallInfo:
    """What a compiled `T.f(…)` call site knows about its target. `source` is `"model"` for the calls a
    model asks for in `divine(p, tools: [...])` (SPEC §4.12), which are traced as such."""

    __slots__ = ("tool", "fn", "remote", "params", "ret", "builtin", "label", "source")

    def __init__(self, tool: str, fn: str, remote: str, params: list[str], ret: T.Type, builtin: bool,
                 source: str | None = None) -> None:
        self.tool = tool
        self.fn = fn
        self.remote = remote
        self.params = params
        self.ret = ret
        self.builtin = builtin
        self.label = f"{tool}.{fn}"
        self.source = source


class Step:
    """kind, target (SPEC §14's naming), arguments in wire form (JSON data), return type, safety class,
    the performing agent's path and its step number there.

    `agent` is the performing agent (or test) context and `detail` what the real layer needs beyond the wire
    arguments (a ToolCallInfo, a mailbox owner, a value to store); neither is part of the step's identity.
    A safety class that costs a round trip to find (a remote tool's annotations) is resolved on first read.
    `approval` is the step of the decision a call needs before it is made (SPEC §17.1), numbered just before it.
    """

    __slots__ = ("kind", "target", "arguments", "ret", "path", "number", "agent", "detail", "approval", "_safety",
                 "_resolve")

    def __init__(self, kind: str, target: str, arguments: Any, ret: T.Type | None, safety: str | None,
                 agent: Any, detail: Any = None, resolve: Callable[["Step"], str] | None = None) -> None:
        self.kind = kind
        self.target = target
        self.arguments = arguments
        self.ret = ret
        self.agent = agent
        self.detail = detail
        self.approval: Step | None = None
        self._safety = safety
        self._resolve = resolve
        if agent is not None:
            agent.steps += 1
            self.path = agent.path
            self.number = agent.steps
        else:   # a server's sampling request, answered on the event loop for no agent in particular
            self.path = None
            self.number = None

    @property
    def safety(self) -> str:
        if self._safety is None:
            self._safety = self._resolve(self) if self._resolve is not None else "destructive"
        return self._safety

    def __repr__(self) -> str:
        return f"<step {self.path}:{self.number} {self.kind} {self.target}>"
