"""The MCP server of `sage serve` (SPEC §21), on the SDK's low-level `Server`: `tools/list` answers the
catalogue, and each `tools/call` checks its arguments, waits for one of `[serve] max_concurrent_calls` slots
and runs the agent in a run of its own on a worker thread (the engine is synchronous), while the run's output
becomes log and progress notifications of that request. A `notifications/cancelled` (or the client going
away) cancels the request's handler, which sets the run's cancel event and waits for the run to stop before
its next step.

Every refusal is answered to the client that caused it and written as one line to the server's log (stderr);
nothing a client sends stops the server.
"""
from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, Any, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from ..core.json_text import compact_json
from .arguments import BadArguments, check_arguments

if TYPE_CHECKING:
    from ..check.served import ServedAgent
    from ..grove import ServeSettings
    from .catalog import Catalogue

# Logging, sampling and push elicitation are deprecated by the 2026-07-28 revision but are how the handshake
# era (and this server's clients there) work: the warnings say nothing to a user of `sage serve`.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


class Outcome:
    """How one call's run ended, as the server needs it: `status` (`completed`, `failed`, `halted`,
    `paused`, `cancelled`), `value` (the yielded value as JSON), `error` (a display), `run_id`."""

    __slots__ = ("status", "value", "error", "run_id")

    def __init__(self, status: str, value: Any = None, error: str | None = None, run_id: str | None = None) -> None:
        self.status = status
        self.value = value
        self.error = error
        self.run_id = run_id


class CallPorts:
    """What a served run reaches of its caller: output lines (to the client as notifications), the cancel
    event, and the request context (for elicitation and sampling through the client). Called from the run's
    thread; every method blocks that thread until the event loop has done the work."""

    def __init__(self, ctx: Any, tool: str, log: Callable[[str], None]) -> None:
        self.ctx = ctx
        self.tool = tool
        self.log = log
        self.loop = anyio.lowlevel.current_token()   # the agents' threads are not the loop's workers
        self.cancel = threading.Event()
        self.stopped = anyio.Event()   # set on the loop when the call is cancelled: a pending question ends
        self.printed = 0
        self.gone = False   # the client is no longer there: output is dropped

    def out(self, line: str) -> None:
        self.printed += 1
        self._send(self._print, "info", line, self.printed)

    def err(self, line: str) -> None:
        self._send(self._print, "warning", line, None)

    def _send(self, fn: Callable, *args: Any) -> None:
        if self.gone:
            return
        try:
            anyio.from_thread.run(fn, *args, token=self.loop)
        except Exception as exc:   # the client went away mid-call, or the loop is closing: the run goes on
            self.gone = True
            self.log(f"call of {self.tool}: output not delivered ({type(exc).__name__}: {exc})")

    async def _print(self, level: str, line: str, progress: int | None) -> None:
        session = self.ctx.session
        await session.send_log_message(level, line, logger=self.tool, related_request_id=self.ctx.request_id)
        if progress is not None:
            await session.report_progress(float(progress), None, line)

    def call_async(self, fn: Callable, *args: Any) -> Any:
        """Run coroutine function `fn(*args)` on the server's loop and return its result (elicitation, sampling)."""
        return anyio.from_thread.run(fn, *args, token=self.loop)


Runner = Callable[["ServedAgent", dict, CallPorts], Outcome]


class ServeApp:
    """The served program: its catalogue, the `[serve]` settings, the function that runs one call (`runner`,
    on a worker thread) and the log (one line each)."""

    def __init__(self, catalogue: Catalogue, settings: ServeSettings, name: str, version: str, runner: Runner,
                 log: Callable[[str], None]) -> None:
        self.catalogue = catalogue
        self.settings = settings
        self.runner = runner
        self.log = log
        self.tools = catalogue.tools()
        self._slots: anyio.Semaphore | None = None
        self._threads: anyio.CapacityLimiter | None = None
        self.server = Server(name, version=version, on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                             on_set_logging_level=self.set_logging_level)

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def set_logging_level(self, ctx: Any, params: Any) -> types.EmptyResult:
        return types.EmptyResult()

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        served = self.catalogue.served.get(name)
        if served is None:
            self.log(f"refused a call of unknown tool {name!r}")
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
        try:
            values = check_arguments(served, params.arguments, self.settings.max_argument_bytes)
        except BadArguments as exc:
            self.log(f"refused a call of {name}: {exc}")
            return error_result(str(exc))
        if self._slots is None:
            self._slots = anyio.Semaphore(self.settings.max_concurrent_calls)
            self._threads = anyio.CapacityLimiter(self.settings.max_concurrent_calls)
        async with self._slots:
            return await self._run(ctx, served, values)

    async def _run(self, ctx: Any, served: ServedAgent, values: dict) -> types.CallToolResult:
        ports = CallPorts(ctx, served.name, self.log)
        finished = anyio.Event()

        def work() -> Outcome:
            try:
                return self.runner(served, values, ports)
            finally:
                try:
                    anyio.from_thread.run_sync(finished.set)
                except Exception:   # the loop is closing: nobody waits any more
                    pass

        try:
            outcome = await anyio.to_thread.run_sync(work, limiter=self._threads, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            ports.cancel.set()
            ports.stopped.set()
            ports.gone = True
            self.log(f"call of {served.name} cancelled by the client; its run stops before its next step")
            with anyio.CancelScope(shield=True):
                await finished.wait()
            self.log(f"call of {served.name}: its run stopped")
            raise
        return call_result(served, outcome)


def call_result(served: ServedAgent, outcome: Outcome) -> types.CallToolResult:
    """The tool result of a finished run (SPEC §21)."""
    meta = {"sage/run_id": outcome.run_id} if outcome.run_id else None
    if outcome.status == "completed":
        value = outcome.value
        if served.text_result and isinstance(value, str):
            return types.CallToolResult(content=[types.TextContent(type="text", text=value)], meta=meta)
        return types.CallToolResult(content=[types.TextContent(type="text", text=compact_json(value))],
                                    structured_content={"result": value}, meta=meta)
    text = outcome.error or f"the run ended with status {outcome.status}"
    return error_result(text, meta)


def error_result(text: str, meta: dict | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True, meta=meta)
