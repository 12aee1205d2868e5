"""What the boundary asks of the world besides steps: the safety classes of calls, the names and records of
MCP connections, a connection's tools, a server's elicitation, which servers to start early, and whether the
calls a model asks for in one answer may run at once.

`LiveFacts` answers from the run's real resources. A test or a replayed run answers some of these
questions otherwise: its layer wraps the live facts (`sagepy.effects.mocks.MockedFacts`,
`sagepy.effects.cassette.ReplayedFacts`, assembled by `factory.build_effects`), so that the boundary asks its
facts and never which mode it runs in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..core.errors import SageRaise

if TYPE_CHECKING:
    from ..check.symbols import ToolRef
    from .world import World


class Facts:
    """The questions, each answered by `inner` (the facts this one wraps) unless a subclass answers it."""

    def __init__(self, inner: "Facts") -> None:
        self.inner = inner

    @property
    def concurrent_calls(self) -> bool:
        """Whether the read-only calls a model asks for in one answer run at once (SPEC §4.12)."""
        return self.inner.concurrent_calls

    def tool_safety(self, ref: ToolRef) -> str:
        """The class of a typed MCP tool's call, looked up when the step's class is first read."""
        return self.inner.tool_safety(ref)

    def approval_safety(self, ref: ToolRef) -> str:
        """The class that decides whether a `"destructive"` approval rule covers a call of `ref` (SPEC §17.1)."""
        return self.inner.approval_safety(ref)

    def dynamic_safety(self, handle: str, tool: str) -> str:
        """The class of an `mcp_call` of `tool` on the connection the program holds as `handle`."""
        return self.inner.dynamic_safety(handle, tool)

    def dynamic_approval_safety(self, handle: str, tool: str) -> str:
        """The class that decides a `"destructive"` approval rule for such a call."""
        return self.inner.dynamic_approval_safety(handle, tool)

    def server_name(self, handle: str) -> str:
        """A dynamic connection's configured `name`, else `mcp<n>` (SPEC §4.12)."""
        return self.inner.server_name(handle)

    def connection(self, handle: str) -> Any:
        """`mcp_connection(handle)`: the record of the connection (sagepy.effects.wire.connection_record)."""
        return self.inner.connection(handle)

    def listing(self, handle: str) -> list:
        """The tools of a dynamic connection offered to a model, every page (SPEC §8.5): OfferedFunctions."""
        return self.inner.listing(handle)

    def elicit(self, server: str, request: Any) -> Any:
        """The answer to a server's elicitation (SPEC §8.7)."""
        return self.inner.elicit(server, request)

    def prestart(self, tools: set[str]) -> None:
        """Start the servers of the tool blocks some agent `use`s, in the background (SPEC §8.3)."""
        self.inner.prestart(tools)

    def live_handle(self, handle: str) -> str:
        """The MCP handle to use with the pool for a handle the program holds."""
        return self.inner.live_handle(handle)


class LiveFacts(Facts):
    """The answers of the run's world; `journal`: that of a durable run, whose resumed `mcp_connect`s gave the
    recorded handles; `answerer`: who answers the run's people instead of the terminal now (a Host's
    `people`, Effects.answer_with), which may take servers' questions too."""

    def __init__(self, world: World, journal: Any = None, answerer: Callable[[], Any] | None = None) -> None:
        self.world = world
        self.journal = journal
        self.answerer = answerer

    @property
    def concurrent_calls(self) -> bool:
        return True

    def tool_safety(self, ref: ToolRef) -> str:
        return self.world.tool_safety(ref)

    def approval_safety(self, ref: ToolRef) -> str:
        return self.world.tool_safety(ref)

    def dynamic_safety(self, handle: str, tool: str) -> str:
        return self.world.dynamic_safety(self.live_handle(handle), tool)

    def dynamic_approval_safety(self, handle: str, tool: str) -> str:
        return self.world.dynamic_safety(self.live_handle(handle), tool)

    def server_name(self, handle: str) -> str:
        manager = self.world.mcp_started
        if manager is not None:
            from ..mcp.failures import McpFailure
            try:
                label = manager.handle_label(self.live_handle(handle))
            except (McpFailure, SageRaise):   # no such connection: the call itself will say so
                label = handle
            if not label.startswith("mcp:"):
                return label
        return "mcp" + handle.rpartition(":")[2]

    def connection(self, handle: str) -> Any:
        from .wire import connection_record
        manager = self.world.mcp_started

        def open_id(live: str) -> int | None:
            return None if manager is None else manager.connection(live)
        if self.journal is not None:   # a resumed run's handles are the recorded ones
            return connection_record(self.journal.connection(handle, open_id))
        return connection_record(open_id(handle))

    def listing(self, handle: str) -> list:
        from ..llm.offer import OfferedFunction
        from .wire import mcp_errors
        manager = self.world.mcp()
        live = self.live_handle(handle)   # in a resumed durable run, the connection behind a recorded handle
        with mcp_errors():
            items = manager.listing(live)
            label = manager.handle_label(live)
        if label == live:   # unnamed: named after the program's handle, so that a resumed run offers the same names
            label = handle
        server = "mcp" + label[len("mcp:"):] if label.startswith("mcp:") else label
        return [OfferedFunction.dynamic(handle, server, item) for item in items]

    def elicit(self, server: str, request: Any) -> Any:
        forward = getattr(self.answerer(), "elicit", None) if self.answerer is not None else None
        if forward is not None:   # `sage serve`'s calling client
            return forward(server, request)
        from ..mcp.elicitation import TerminalElicitation
        return TerminalElicitation()(server, request)

    def prestart(self, tools: set[str]) -> None:
        self.world.prestart(tools)

    def live_handle(self, handle: str) -> str:
        """Itself, except in a resumed durable run (the journal connects again on first use)."""
        if self.journal is None:
            return handle
        return self.journal.live_handle(handle, self._connect_again)

    def _connect_again(self, step: Any) -> str:
        from . import wire
        with wire.mcp_errors():
            return self.world.mcp().connect(*step.arguments)
