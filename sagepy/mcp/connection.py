"""One live connection to one MCP server, run on the shared event loop (SPEC §8.3, §8.7-§8.9).

The SDK's `Client` must be entered and exited in the same task, so each connection has one *owner task*
that enters the transport and the client, publishes the client, and waits for the close signal; requests
run as tasks of their own next to it. A connect-phase deadline lives on the owner's outermost cancel scope
(`connect_timeout_ms` bounds spawning, negotiation and the first tool listing), and is lifted once connected.

Every request is bounded by sagepy's own timer (`timeout_ms`), which stops while an elicitation form of
this connection is open; on expiry the request's task is cancelled, so the SDK tells the server
(`notifications/cancelled`). The SDK's own read timeout is never used: it cannot pause.

Everything here raises `McpFailure`; nothing here knows about Sage values.
"""
from __future__ import annotations

import asyncio
import json
import math
from contextlib import AsyncExitStack, contextmanager
from typing import Any, Awaitable, Callable, Iterator

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..diagnostics import display_path
from ..net import failure_reason, url_for_display
from ..grove.servers import ServerConfig
from .elicitation import DECLINE, ElicitationAnswer, ElicitationRefused, ElicitationRequest, answer_from
from .failures import McpFailure
from .notices import CallProgress, log_tail, log_writer, sampling_text
from .stdio import ChildProcess, StartedServer
from .transports import HttpStatus, file_size, open_http, open_inprocess, open_stdio

MAX_PAGES = 1000
NOTE_LINES = 20
_DISCOVER_S = 5.0  # how long a pinned-era connection waits to learn the server's name


class _Deadline:
    """A request's time limit that stands still while an elicitation form is open (SPEC §8.2).

    One timer handle per request: cheaper than waiting on the request and a gate-change future at once,
    which every call used to pay for."""

    __slots__ = ("loop", "remaining", "on_expire", "handle", "started")

    def __init__(self, loop: asyncio.AbstractEventLoop, budget: float, on_expire: Callable[[], None]) -> None:
        self.loop = loop
        self.remaining = max(budget, 0.0)
        self.on_expire = on_expire
        self.handle: asyncio.TimerHandle | None = None
        self.started = 0.0

    def run(self) -> None:
        if self.handle is None:
            self.started = self.loop.time()
            self.handle = self.loop.call_later(self.remaining, self.on_expire)

    def pause(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
            self.remaining -= self.loop.time() - self.started

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


class _PauseGate:
    """Counts the elicitation forms open on a connection; request deadlines stand still while any is open."""

    def __init__(self) -> None:
        self.open_forms = 0
        self.deadlines: set[_Deadline] = set()

    def enter(self) -> None:
        self.open_forms += 1
        for deadline in self.deadlines:
            deadline.pause()

    def leave(self) -> None:
        self.open_forms -= 1
        if self.open_forms == 0:
            for deadline in self.deadlines:
                deadline.run()

    def add(self, deadline: _Deadline) -> None:
        self.deadlines.add(deadline)
        if not self.open_forms:
            deadline.run()

    def discard(self, deadline: _Deadline) -> None:
        deadline.cancel()
        self.deadlines.discard(deadline)


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside the nested ExceptionGroups that leave the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


class Connection:
    """A connection to one server. Create it, `await open()`, use it, `await close()`; all on the loop."""

    def __init__(self, label: str, config: ServerConfig, root: str, log_path: str, hooks: Any,
                 started: StartedServer | None = None) -> None:
        """`hooks` is the manager's `Hooks`: settings, resolvers, tracing and the stderr note writer.
        A stdio server comes `started` (`transports.start_stdio`); the connection takes over its process."""
        self.label = label
        self.config = config
        self.root = root
        self.log_path = log_path
        self.hooks = hooks
        self.child = ChildProcess(self._child_exited)
        self._started = started
        if started is not None:
            self.child.pid = started.pid
        self.http_status = HttpStatus(config.url or "")
        self.client: Any = None
        self.alive = False
        self.protocol = ""
        self.server_name = ""
        self.server_version = ""
        self.capabilities: dict = {}  # the server's capabilities in MCP wire spelling (`sage tools inspect`)
        self.instructions = ""
        self._gate = _PauseGate()
        self._closing = asyncio.Event()
        self._ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._owner: asyncio.Task | None = None
        self._tools: list[Any] | None = None
        self._generation = 0
        self._list_lock = asyncio.Lock()
        self._log_mark = 0
        self._connect_scope: anyio.CancelScope | None = None
        self._abandoned = False   # closed before the handshake finished
        self._retired = False     # replaced by a new connection: closes when its last request ends
        self._closer: asyncio.Task | None = None
        self._login_s = 0.0  # time spent in OAuth logins, which connect_timeout_ms does not count

    # ------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Start, negotiate and list the tools, within `connect_timeout_ms`. Raises McpFailure."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        self._log_mark = self._started.log_mark if self._started is not None else file_size(self.log_path)
        self._owner = asyncio.create_task(self._own(), name=f"mcp-owner-{self.label}")
        await asyncio.shield(self._ready)
        self.alive = True
        remaining = self.config.connect_timeout_ms / 1000 - (loop.time() - started - self._login_s)
        try:
            await self._list_within(max(remaining, 0.001))
        except McpFailure as failure:
            await self.close()
            if failure.sub_kind == "timeout":
                raise McpFailure("connection failed", f"'{self.label}' did not list its tools within "
                                                      f"{self.config.connect_timeout_ms} ms") from None
            raise
        transport = self.config.transport
        self.hooks.trace("mcp.connect", {"server": self.label, "transport": transport, "protocol": self.protocol,
                                         "duration_ms": int((loop.time() - started) * 1000)})

    async def close(self) -> None:
        """Orderly shutdown: the owner leaves the client and the transport (stdio: §8.3 sequence)."""
        self.alive = False
        self._closing.set()
        if not self._ready.done() and self._connect_scope is not None:
            self._abandoned = True
            self._connect_scope.cancel()   # still connecting: stop now rather than at the connect deadline
        if self._owner is not None:
            await asyncio.wait({self._owner})

    def retire(self) -> None:
        """This connection is replaced by a new one: close it once the requests in flight on it have ended.
        One request's broken POST does not fail the others, which may well still succeed."""
        self._retired = True
        self.alive = False
        self._close_if_idle()

    def _close_if_idle(self) -> None:
        if self._retired and not self._gate.deadlines and self._closer is None:
            self._closer = asyncio.ensure_future(self.close())

    async def _own(self) -> None:
        connect_s = self.config.connect_timeout_ms / 1000
        failure: McpFailure | None = None
        self.http_status.begin()   # what the handshake's HTTP answers say
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + connect_s) as scope:
                self._connect_scope = scope
                async with AsyncExitStack() as stack:
                    await self._enter(stack)
                    scope.deadline = math.inf
                    self._ready.set_result(None)
                    await self._closing.wait()
            if self._abandoned and not self._ready.done():
                failure = McpFailure("connection failed", f"connection to '{self.label}' closed while connecting")
            elif scope.cancelled_caught and not self._ready.done():
                failure = self._exit_failure(" during start-up") or McpFailure(
                    "connection failed", f"'{self.label}' did not complete the handshake within "
                                         f"{self.config.connect_timeout_ms} ms")
        except Exception as exc:  # noqa: BLE001 - every failure of the owner becomes the connect failure
            failure = self._connect_failure(_leaf(exc))
        finally:
            self.alive = False
            self.client = None
            if not self._ready.done():
                self._ready.set_exception(failure or McpFailure("connection failed", f"'{self.label}' closed"))

    async def _enter(self, stack: AsyncExitStack) -> None:
        config = self.config
        if config.transport == "stdio":
            assert self._started is not None, "the manager starts a stdio server before connecting to it"
            target = open_stdio(stack, self._started, self.child)
        elif config.transport == "http":
            target = open_http(config, self.root, self.log_path, self.http_status, self._waiting_on_login,
                               self.hooks.settings)
        else:
            target = open_inprocess(config, self.root)
        settings = self.hooks.settings
        client = Client(
            target,
            client_info=types.Implementation(name=settings.client_name, version=settings.client_version),
            mode=config.protocol,
            elicitation_callback=self._on_elicit,
            # Without `sampling = true` the capability is not advertised and the SDK refuses the request.
            sampling_callback=self._on_sampling if config.sampling and self.hooks.sampling else None,
            message_handler=self._on_message,
            logging_callback=log_writer(self.log_path),
            log_level="info",   # the 2026-07-28 era sends log messages only to requests that ask for them
            cache=None,  # tool lists are cached here, per connection, until list_changed (§8.8)
        )
        await stack.enter_async_context(client)
        self.client = client
        if config.protocol in MODERN_PROTOCOL_VERSIONS:
            await self._learn_server_info(client)
        self.protocol = client.protocol_version
        info = client.server_info
        self.server_name = info.name if info is not None else ""
        self.server_version = info.version if info is not None else ""
        self.instructions = client.instructions or ""
        caps = client.server_capabilities
        self.capabilities = caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps is not None else {}
        if self.protocol in MODERN_PROTOCOL_VERSIONS and caps.tools is not None and caps.tools.list_changed:
            subscription = await stack.enter_async_context(client.listen(tools_list_changed=True))
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._watch, subscription)

    async def _learn_server_info(self, client: Any) -> None:
        """A pinned modern version sends nothing at connect; ask the server who it is (§8.9)."""
        with anyio.move_on_after(_DISCOVER_S):
            try:
                raw = await client.session.send_discover(self.config.protocol)
                client.session.adopt(types.DiscoverResult.model_validate(raw))
            except Exception:  # noqa: BLE001 - the identity is optional; the name then shows as unknown
                pass

    async def _watch(self, subscription: Any) -> None:
        try:
            async for _event in subscription:
                self._tools_changed()
        except Exception:  # noqa: BLE001 - a lost subscription ends with the connection
            pass

    @contextmanager
    def _waiting_on_login(self) -> Iterator[None]:
        """While a person logs in (OAuth), neither the connect deadline nor request timers run."""
        scope = self._connect_scope
        left = None
        if scope is not None and scope.deadline != math.inf:
            left = scope.deadline - anyio.current_time()
            scope.deadline = math.inf
        started = anyio.current_time()
        self._gate.enter()
        try:
            yield
        finally:
            self._gate.leave()
            self._login_s += anyio.current_time() - started
            if left is not None and scope is not None:
                scope.deadline = anyio.current_time() + left

    # ------------------------------------------------------------ server-initiated traffic

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed()

    def _tools_changed(self) -> None:
        self._tools = None
        self._generation += 1
        self.hooks.trace("mcp.tools_changed", {"server": self.label})

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        mode = getattr(params, "mode", None) or "form"
        setting = self.config.elicitation or self.hooks.settings.elicitation
        request = ElicitationRequest(self.label, mode, params.message, getattr(params, "requested_schema", None),
                                     getattr(params, "url", None), setting)
        resolver = self.hooks.elicitation
        action = "decline"
        try:
            if resolver is None:
                answer: ElicitationAnswer = DECLINE
            else:
                self._gate.enter()
                try:
                    answer = answer_from(await asyncio.to_thread(resolver, self.label, request))
                finally:
                    self._gate.leave()
            action = answer.action
            return types.ElicitResult(action=answer.action, content=answer.content)
        except ElicitationRefused as exc:
            action = "error"
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        except Exception as exc:  # noqa: BLE001 - a failing resolver answers the server, never the loop
            action = "error"
            error = getattr(exc, "error", None)
            return types.ErrorData(code=types.INTERNAL_ERROR,
                                   message=error.display() if error is not None else str(exc))
        finally:
            self.hooks.trace("mcp.elicit", {"server": self.label, "mode": mode, "action": action, "policy": setting})

    async def _on_sampling(self, context: Any, params: Any) -> Any:
        messages = [{"role": m.role, "content": sampling_text(m.content)} for m in params.messages]
        try:
            text = await asyncio.to_thread(self.hooks.sampling, self.label, messages, params.system_prompt,
                                           params.max_tokens)
        except Exception as exc:  # noqa: BLE001 - the server gets the failure as a JSON-RPC error
            error = getattr(exc, "error", None)
            message = error.display() if error is not None else str(exc)
            return types.ErrorData(code=types.INTERNAL_ERROR, message=message)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=text),
                                         model=self.hooks.settings.client_name, stop_reason="endTurn")

    def _child_exited(self, child: ChildProcess) -> None:
        """The server's stdout ended while sagepy was not closing it: report it and reap it."""
        self.alive = False
        self.hooks.note(self.exit_note())
        self._closing.set()

    def exit_note(self) -> str:
        lines = log_tail(self.log_path, self._log_mark, NOTE_LINES)
        head = f"note: MCP server '{self.label}' exited (status {self.child.status()}); " \
               f"last lines of {display_path(self.log_path)}:"
        return "\n".join([head, *lines])

    # ------------------------------------------------------------ requests

    async def tools(self) -> list[Any]:
        """Every tool of the server (all pages), cached until a list-changed notification."""
        return await self._list_within(self.config.timeout_ms / 1000)

    async def _list_within(self, timeout_s: float) -> list[Any]:
        while True:
            cached = self._tools
            if cached is not None:
                return cached
            async with self._list_lock:
                if self._tools is not None:
                    continue
                generation = self._generation
                tools = await self._bounded(self._list_all, "tools/list", timeout_s=timeout_s)
                if generation == self._generation:
                    self._tools = tools
                return tools

    async def _list_all(self) -> list[Any]:
        return await self._pages(self.client.list_tools, "tools", "tools/list")

    async def _pages(self, request: Callable[..., Awaitable[Any]], field: str, method: str) -> list[Any]:
        """Every page of a list request (the SDK returns one page per request)."""
        items: list[Any] = []
        seen: set[str] = set()
        cursor = None
        for _ in range(MAX_PAGES):
            page = await request(cursor=cursor)
            items.extend(getattr(page, field))
            cursor = page.next_cursor
            if cursor is None:
                return items
            if cursor in seen:
                break
            seen.add(cursor)
        raise McpFailure("protocol error", f"{method} pagination did not terminate")

    async def catalogue(self) -> dict[str, list[dict]]:
        """The server's prompts, resources and resource templates (every page, wire spelling), each kind
        asked only when its capability is declared; a kind the server then fails to list is left out, since
        `sage tools inspect` shows them for information only."""
        kinds = (("prompts", "prompts", self.client.list_prompts, "prompts", "prompts/list"),
                 ("resources", "resources", self.client.list_resources, "resources", "resources/list"),
                 ("resources", "resourceTemplates", self.client.list_resource_templates, "resource_templates",
                  "resources/templates/list"))
        found: dict[str, list[dict]] = {}
        for capability, key, request, field, method in kinds:
            if capability not in self.capabilities:
                continue
            try:
                items = await self._bounded(lambda r=request, f=field, m=method: self._pages(r, f, m), method)
            except McpFailure:
                continue
            found[key] = [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in items]
        return found

    async def call(self, remote: str, arguments: dict, label: str | None = None) -> dict:
        """Call a tool; the result in MCP wire form, checked against `max_result_bytes`. `label` names the
        call in its progress (`Tool.fn` of a typed call; the remote name by default)."""
        if self._tools is None:   # the SDK checks results against the listed output schemas: list first
            await self.tools()
        progress = CallProgress(self.label, label or remote, self.hooks.trace)
        try:
            result = await self._bounded(lambda: self.client.call_tool(remote, arguments, progress_callback=progress),
                                         "tools/call", remote=remote)
        finally:
            progress.close()
        data = _small_text_result(result, self.config.max_result_bytes)
        if data is not None:
            return data
        text = result.model_dump_json(by_alias=True, exclude_none=True)   # compact, non-ASCII kept
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        if size > self.config.max_result_bytes:
            raise McpFailure("result too large",
                             f"tool '{remote}' returned {size} bytes (limit {self.config.max_result_bytes})")
        return json.loads(text)

    async def _bounded(self, request: Callable[[], Awaitable[Any]], method: str, remote: str | None = None,
                       timeout_s: float | None = None) -> Any:
        """Run one request under sagepy's pausable timer; map every failure to McpFailure.

        The request runs in the caller's task (a task of its own would cost extra loop iterations on every
        call); on expiry that task is cancelled, so the SDK tells the server, and the cancellation is taken
        back once it has unwound."""
        if self.client is None or not self.alive:
            raise self._gone()
        budget = self.config.timeout_ms / 1000 if timeout_s is None else timeout_s
        self.http_status.begin()
        task = asyncio.current_task()
        assert task is not None
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        deadline = _Deadline(asyncio.get_running_loop(), budget, expire)
        self._gate.add(deadline)
        try:
            result = await request()
        except McpFailure:
            raise
        except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - mapped to the sub-kinds of §8.10
            if expired and task.uncancel() == 0:
                ms = self.config.timeout_ms if timeout_s is None else int(timeout_s * 1000)
                raise McpFailure("timeout", f"request '{method}' to '{self.label}' timed out after {ms} ms") from None
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise self._request_failure(_leaf(exc), method, remote) from None
        finally:
            self._gate.discard(deadline)
            self._close_if_idle()
        if expired:   # the request finished as its time ran out: keep the result, take the cancellation back
            task.uncancel()
        return result

    # ------------------------------------------------------------ failure mapping

    def _gone(self) -> McpFailure:
        if self.child.ended_by_itself:
            return McpFailure("server exited", f"server '{self.label}' exited (status {self.child.status()})")
        return McpFailure("server exited", f"connection to '{self.label}' closed")

    def _exit_failure(self, when: str) -> McpFailure | None:
        if self.child.ended_by_itself:
            return McpFailure("connection failed",
                              f"server '{self.label}' exited (status {self.child.status()}){when}")
        return None

    def _connect_failure(self, exc: BaseException) -> McpFailure:
        if isinstance(exc, McpFailure):
            return exc
        exited = self._exit_failure(" during start-up")
        if exited is not None:
            return exited
        if self.http_status.broken is not None:
            return McpFailure("connection failed", self._at_url(self.http_status.broken))
        if self.config.transport == "http":
            not_mcp = self.http_status.not_mcp(isinstance(exc, MCPError) and exc.code == types.PARSE_ERROR)
            if not_mcp is not None:
                return not_mcp
        http = self.http_status.failure()
        if http is not None:
            return http
        if self.config.transport == "http" and (isinstance(exc, OSError) or _is_http_transport_error(exc)):
            return McpFailure("connection failed", self._at_url(exc))
        if isinstance(exc, FileNotFoundError) and self.config.transport == "stdio":
            return McpFailure("connection failed", f"cannot start '{self.config.command}': command not found")
        if isinstance(exc, OSError) and self.child.pid is None and self.config.transport == "stdio":
            return McpFailure("connection failed",
                              f"cannot start '{self.config.command}': {exc.strerror or _describe(exc)}")
        return McpFailure("connection failed", f"'{self.label}': {_describe(exc)}",
                          during_handshake=isinstance(exc, (MCPError, RuntimeError)))

    def _at_url(self, exc: BaseException) -> str:
        """`'<Name>' at <url>: <why>` for an HTTP server that could not be reached (refused, unknown host, TLS)."""
        return f"'{self.label}' at {url_for_display(self.config.url or '')}: {failure_reason(exc)}"

    def _needs_legacy(self) -> McpFailure:
        """A server that pushes its questions (`ctx.elicit`) cannot ask them on the 2026-07-28 era, which
        has no channel for server-initiated requests; the handshake era has one."""
        setting = (f'protocol = "legacy" in {self.config.table}' if self.config.table.startswith("[tools.")
                   else '"protocol": "legacy" in its mcp_connect configuration')
        return McpFailure("protocol error", f"server '{self.label}' can only ask questions over the legacy "
                                            f"protocol; set {setting}")

    def _request_failure(self, exc: BaseException, method: str, remote: str | None) -> McpFailure:
        broken = self.http_status.broken
        if broken is not None:   # this request's POST broke in the transport
            if _is_connect_error(broken):   # the server cannot be reached: the next call connects anew
                self.alive = False
                return McpFailure("connection failed", self._at_url(broken))
            return McpFailure("I/O error", self._at_url(broken))   # this one request is lost, not the others
        if isinstance(exc, MCPError):
            if exc.code == types.CONNECTION_CLOSED:
                self.alive = False
                return self.http_status.failure() or self._gone()
            http = self.http_status.failure()
            if http is not None:
                return http
            if exc.code == types.INVALID_REQUEST and "back-channel" in exc.error.message:
                return self._needs_legacy()
            return McpFailure("protocol error", f"server '{self.label}' answered '{method}' with error "
                                                f"{exc.code}: {exc.error.message}")
        if isinstance(exc, RuntimeError) and remote is not None and (
                "output schema" in str(exc) or "structured content" in str(exc)):
            return McpFailure("protocol error", f"server '{self.label}' returned a result for '{remote}' that "
                                                f"violates its own outputSchema: {_first_line(exc)}")
        if isinstance(exc, (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)):
            self.alive = False
            if self.child.returncode is not None:
                return self._gone()
            return McpFailure("I/O error", f"'{self.label}': {_describe(exc)}")
        if _is_http_transport_error(exc):
            self.alive = False
            return self.http_status.failure() or McpFailure("I/O error", self._at_url(exc))
        return McpFailure("protocol error", f"server '{self.label}' sent an invalid answer to '{method}': "
                                            f"{_describe(exc)}")


def _small_text_result(result: Any, limit: int) -> dict | None:
    """The wire form of a result made of plain text items only, when its JSON is certainly within `limit`
    bytes (a text character takes at most 6 bytes escaped); None for anything else, whose JSON is then
    measured exactly. Most tool results take this path, which skips serialising them. `_meta` is left out
    of the wire form: nothing reads it."""
    if result.structured_content is not None:
        return None
    bound = 96
    if result.meta is not None:   # the 2026-07-28 era's server info: left out of the wire form, counted
        if type(result.meta) is not dict:
            return None
        bound += len(json.dumps(result.meta))   # escaped ASCII and blanks: never shorter than compact UTF-8
    items = []
    for item in result.content:
        if type(item) is not types.TextContent or item.annotations is not None or item.meta is not None:
            return None
        items.append({"type": "text", "text": item.text})
        bound += 32 + 6 * len(item.text)
    if bound > limit:
        return None
    return {"content": items, "isError": result.is_error}


def _is_connect_error(exc: BaseException) -> bool:
    return type(exc).__name__ in ("ConnectError", "ConnectTimeout")


def _is_http_transport_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("httpx2") or type(exc).__module__.startswith("httpcore2")


def _first_line(exc: BaseException) -> str:
    return str(exc).split("\n", 1)[0]


def _describe(exc: BaseException) -> str:
    text = _first_line(exc)
    if isinstance(exc, MCPError):
        first_line = exc.error.message.partition("\n")[0]   # pydantic's reports run to dozens of lines
        return f"error {exc.code}: {first_line}"
    return text if text else type(exc).__name__
