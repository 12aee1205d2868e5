"""The MCP server of `sage serve` (SPEC §21), on the SDK's low-level `Server`: `tools/list` answers the
catalogue, and each `tools/call` checks its arguments, waits for one of `[serve] max_concurrent_calls` slots
(held until the call's run ends) and runs the agent in a run of its own on a thread (the engine is
synchronous), while the run's output becomes log and progress notifications of that request. A
`notifications/cancelled` (or the client going away) cancels the request's handler, which sets the run's
cancel event and waits for the run to stop before its next step.

On the 2026-07-28 era a call whose run asks the client something is answered with an input-required result
(sagepy.serve.live); the client's retry carries the request state, sealed by the SDK's request-state boundary
(bound to the tool, its arguments and this process), and continues that same run.

Every refusal is answered to the client that caused it and written as one line to the server's log (stderr);
nothing a client sends stops the server.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from ..deepstack import DeepThreads
from .arguments import BadArguments, check_arguments
from .live import ANSWER_WAIT_S, CallPorts, LiveCall, Runner, error_result

if TYPE_CHECKING:
    from ..grove import ServeSettings
    from .catalog import Catalogue

# Logging, sampling and push elicitation are deprecated by the 2026-07-28 revision but are how the handshake
# era (and this server's clients there) work: the warnings say nothing to a user of `sage serve`.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

GONE = ("the run this answer is for is no longer waiting (it ended or was stopped, or the server restarted); "
        "call the tool again")


class ServeApp:
    """The served program: its catalogue, the `[serve]` settings, the function that runs one call (`runner`,
    on a thread of the call's own) and the log (one line each)."""

    def __init__(self, catalogue: Catalogue, settings: ServeSettings, name: str, version: str, runner: Runner,
                 log: Callable[[str], None]) -> None:
        self.catalogue = catalogue
        self.settings = settings
        self.runner = runner
        self.log = log
        self.tools = catalogue.tools()
        self._slots: anyio.Semaphore | None = None
        self.running: set[LiveCall] = set()
        self.waiting: dict[str, tuple[LiveCall, float]] = {}   # by request state: calls that asked the client
        self.server = Server(name, version=version, on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                             on_set_logging_level=self.set_logging_level)
        # The SDK's own middleware only makes OpenTelemetry spans of the requests, which cost every call and go
        # nowhere (the runs of `sage serve` are traced by sagepy); what remains seals the request state.
        self.server.middleware = [RequestStateBoundary(RequestStateSecurity.ephemeral(ttl=ANSWER_WAIT_S),
                                                       default_audience=name)]
        self._threads = DeepThreads()   # the threads the calls' runs run on

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def set_logging_level(self, ctx: Any, params: Any) -> types.EmptyResult:
        return types.EmptyResult()

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        name = params.name
        served = self.catalogue.served.get(name)
        if served is None:
            self.log(f"refused a call of unknown tool {name!r}")
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
        if params.request_state is not None:
            return await self._retried(ctx, params)
        try:
            values = check_arguments(served, params.arguments, self.settings.max_argument_bytes)
        except BadArguments as exc:
            self.log(f"refused a call of {name}: {exc}")
            return error_result(str(exc))
        if self._slots is None:
            self._slots = anyio.Semaphore(self.settings.max_concurrent_calls)
        await self._slots.acquire()
        call = LiveCall(served, CallPorts(ctx, served.name, self.log), self._ended)
        self.running.add(call)
        call.start(self.runner, values, self._threads)
        return await self._round(call, ctx)

    async def _retried(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        """A client's retry with its answers: the run that asked goes on."""
        entry = self.waiting.get(params.request_state or "")
        if entry is None:
            self.log(f"refused a retried call of {params.name}: its run is no longer waiting")
            return error_result(GONE)
        call = entry[0]
        call.answer(params.input_responses or {})
        return await self._round(call, ctx)

    async def _round(self, call: LiveCall, ctx: Any) -> Any:
        result = await call.round(ctx)
        if isinstance(result, types.InputRequiredResult):
            now = time.monotonic()
            self._forget(now)
            self.waiting[call.token] = (call, now)
        else:
            self.waiting.pop(call.token, None)
        return result

    def _forget(self, now: float) -> None:
        """Drop the waiting calls no retry will come for any more (their request state has expired)."""
        for token, (call, since) in list(self.waiting.items()):
            if now - since > ANSWER_WAIT_S + 60:
                del self.waiting[token]

    def _ended(self, call: LiveCall) -> None:
        self.running.discard(call)
        if self._slots is not None:
            self._slots.release()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """While the transport serves; at the end each call's run is stopped and waited for."""
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                for call in list(self.running):
                    await call.stop("stopped with the server")
