"""One served call from its first request to its result (SPEC §21), and what its run reaches of the caller.

A call's run lives on a thread of its own, apart from the requests of the call. Whatever it needs from the
client — an elicitation (an approval, `ask`, a question of an MCP server the run calls) or a sampling request
(`[serve] model = "client"`) — goes through `CallPorts.input`: on a handshake-era connection as a request the
server sends on the call's stream; on the 2026-07-28 era (SEP-2322) the call is answered with an input-required
result carrying the questions and a request state that names this `LiveCall`, and the run waits until the
client retries the call with its answers, which then continues the same run (`ServeApp.call_tool` finds it by
that state). Output printed while no request of the call is open is held and sent with the next one.

A question no retry answers within `ANSWER_WAIT_S` stops the run before its next step, as a cancelled call
does (a durable run stays resumable).
"""
from __future__ import annotations

import asyncio
import itertools
import secrets
import threading
from typing import TYPE_CHECKING, Any, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..core.errors import AgentCancelled
from ..core.json_text import compact_json
from ..deepstack import DeepThreads
from ..wake import WakingEvent

if TYPE_CHECKING:
    from ..check.served import ServedAgent

ANSWER_WAIT_S = 3600.0
"""How long a run waits for the client's retry with its answers (and how long the request state is valid)."""


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
    event, the client's capabilities, and `input` (a question to the client). Called from the run's threads;
    every method blocks its thread until the event loop has done the work."""

    def __init__(self, ctx: Any, tool: str, log: Callable[[str], None]) -> None:
        session = ctx.session
        self.ctx: Any = ctx        # the open request of the call, None between rounds
        self.tool = tool
        self.log = log
        self.loop = anyio.lowlevel.current_token()   # the agents' threads are not the loop's workers
        self.cancel = WakingEvent()
        self.stopped = anyio.Event()   # set on the loop when the call is stopped: a pending question ends
        self.modern = session.protocol_version in MODERN_PROTOCOL_VERSIONS
        self.capabilities: types.ClientCapabilities | None = session.client_capabilities
        info = getattr(session.client_params, "client_info", None)
        self.client = f"mcp client {info.name}" if info is not None else "mcp client"
        self.live: LiveCall | None = None
        self.printed = 0
        self.held: list[tuple[str, str, int | None]] = []
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
        if self.ctx is None:
            self.held.append((level, line, progress))
            return
        session = self.ctx.session
        await session.send_log_message(level, line, logger=self.tool, related_request_id=self.ctx.request_id)
        if progress is not None:
            await session.report_progress(float(progress), None, line)

    async def attach(self, ctx: Any) -> None:
        """A request of the call is open (its first, or a retry): output goes to it, held lines first."""
        self.ctx = ctx
        held, self.held = self.held, []
        for level, line, progress in held:
            await self._print(level, line, progress)

    def call_async(self, fn: Callable, *args: Any) -> Any:
        """Run coroutine function `fn(*args)` on the server's loop and return its result."""
        return anyio.from_thread.run(fn, *args, token=self.loop)

    def input(self, request: types.ElicitRequest | types.CreateMessageRequest) -> Any:
        """The client's answer to `request` (an ElicitResult, or a CreateMessageResult[WithTools]); raises
        AgentCancelled when the call is stopped first, and what the client's refusal raises (MCPError)."""
        return self.call_async(self._input, request)

    async def _input(self, request: Any) -> Any:
        answers: list = []
        async with anyio.create_task_group() as tg:
            async def get() -> None:
                if self.modern:
                    assert self.live is not None
                    answers.append(await self.live.question(request))
                else:
                    answers.append(await self._pushed(request))
                tg.cancel_scope.cancel()

            async def watch() -> None:
                await self.stopped.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(get)
            tg.start_soon(watch)
        if not answers:
            raise AgentCancelled()
        return answers[0]

    async def _pushed(self, request: Any) -> Any:
        """A handshake-era request to the client on the call's own stream."""
        from mcp.shared.message import ServerMessageMetadata
        ctx = self.ctx
        if isinstance(request, types.CreateMessageRequest):
            p = request.params
            return await ctx.session.create_message(p.messages, max_tokens=p.max_tokens, system_prompt=p.system_prompt,
                                                    temperature=p.temperature, tools=p.tools,
                                                    tool_choice=p.tool_choice, related_request_id=ctx.request_id)
        return await ctx.session.send_request(request, types.ElicitResult,
                                              metadata=ServerMessageMetadata(related_request_id=ctx.request_id))


class _Question:
    __slots__ = ("request", "answered", "response")

    def __init__(self, request: Any) -> None:
        self.request = request
        self.answered = anyio.Event()
        self.response: Any = None


Runner = Callable[["ServedAgent", dict, CallPorts], Outcome]


class LiveCall:
    """One call's run, from its first request to its result, across the rounds of the 2026-07-28 era.
    Lives on the server's loop; `token` is the request state that names it to the client."""

    def __init__(self, served: ServedAgent, ports: CallPorts, ended: Callable[[LiveCall], None]) -> None:
        self.served = served
        self.ports = ports
        self.token = ""   # made when the call first asks the client
        self.pending: dict[str, _Question] = {}
        self.outcome: Outcome | None = None
        self.finished = anyio.Event()
        self._changed = anyio.Event()
        self._keys = itertools.count(1)
        self._ended = ended
        ports.live = self

    def start(self, runner: Runner, values: dict, threads: DeepThreads) -> None:
        """Run the call on one of the server's large-stack `threads`, on which the engine runs the agent itself;
        the run outlives the call's requests, and only the run's cancel event stops it. However it ends, its
        outcome reaches the loop (`_finish`)."""
        # The thread tells the loop without waiting for it to listen (anyio.from_thread would make the thread
        # wait for the loop's turn, two more hand-overs of the interpreter lock per call); the server runs
        # on asyncio.
        loop = asyncio.get_running_loop()
        outcomes: list[Outcome] = []

        def work() -> None:
            try:
                outcomes.append(runner(self.served, values, self.ports))
            except BaseException as exc:   # noqa: BLE001 - a broken run is the call's error, never the server's
                outcomes.append(Outcome("failed", error=f"internal error: {type(exc).__name__}: {exc}"))

        def tell() -> None:
            try:
                loop.call_soon_threadsafe(self._finish, outcomes[0])
            except RuntimeError:   # the loop is closed: nothing waits for this call any more
                pass

        threads.submit(work, f"call of {self.served.name}", tell)

    def _finish(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.ports.stopped.set()   # a question another agent of the run still asks ends with the run
        self.finished.set()
        self._changed.set()
        self._ended(self)

    def answer(self, responses: dict) -> None:
        """The client's answers of a retried request, by the keys of the questions asked."""
        for key, response in responses.items():
            question = self.pending.pop(key, None)
            if question is not None:
                question.response = response
                question.answered.set()

    async def question(self, request: Any) -> Any:
        """Ask the client in the next input-required result and wait for the retry that answers."""
        key = f"sage-{next(self._keys)}"
        question = self.pending[key] = _Question(request)
        self._changed.set()
        try:
            with anyio.move_on_after(ANSWER_WAIT_S):
                await question.answered.wait()
                return question.response
        finally:
            self.pending.pop(key, None)
        self.ports.log(f"call of {self.served.name}: no answer from the client in {int(ANSWER_WAIT_S)} s; "
                       "its run stops before its next step")
        self.ports.cancel.set()
        raise AgentCancelled()

    async def round(self, ctx: Any) -> types.CallToolResult | types.InputRequiredResult:
        """Answer one request of the call: its result when the run has ended, else the questions pending."""
        ports = self.ports
        try:
            await ports.attach(ctx)
            while True:
                if self.outcome is not None:
                    return call_result(self.served, self.outcome)
                if self.pending:
                    ports.ctx = None
                    self.token = self.token or secrets.token_urlsafe(24)
                    return types.InputRequiredResult(
                        input_requests={key: q.request for key, q in self.pending.items()}, request_state=self.token)
                self._changed = anyio.Event()
                await self._changed.wait()
        except anyio.get_cancelled_exc_class():
            ports.ctx = None
            with anyio.CancelScope(shield=True):
                await self.stop("cancelled by the client")
            raise

    async def stop(self, why: str) -> None:
        """Stop the run before its next step and wait until it has."""
        ports = self.ports
        ports.gone = True
        if self.outcome is None:
            ports.cancel.set()
            ports.stopped.set()
            ports.log(f"call of {self.served.name} {why}; its run stops before its next step")
            await self.finished.wait()
            ports.log(f"call of {self.served.name}: its run stopped")


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
