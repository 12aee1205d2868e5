"""How a connection reaches its server: a child process (stdio), Streamable HTTP, or an SDK server object
loaded from a Python file (inprocess). Each opener enters its resources on the connection's exit stack and
returns what the SDK's `Client` takes as its `server` argument.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import time
from contextvars import ContextVar
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, AsyncIterator, Callable

from ..secrecy import mask_url, masked_command_line, open_private_log
from ..grove.servers import McpSettings, ServerConfig
from .references import resolve_args, resolve_env
from .failures import McpFailure
from .stdio import ChildProcess, StartedServer, stdio_transport

# The variables a stdio server gets when `inherit_env` is false (§8.2).
BASE_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


HTTP_IN_FLIGHT = 256
"""The most tool calls one connection has in flight at once; more wait for their turn, untimed."""


class Answer:
    """What the HTTP exchanges of one request said (each request has its own, so that concurrent requests
    never see or clear each other's): the status of a failed answer, an OAuth failure, the status and content
    type of the last answer to a POST, and a transport failure of the POST (a reset, a refused connection)."""

    __slots__ = ("code", "oauth", "answer", "broken")

    def __init__(self) -> None:
        self.code: int | None = None
        self.oauth: McpFailure | None = None
        self.answer: tuple[int, str] | None = None
        self.broken: BaseException | None = None


# The Answer of the request the current task makes. The SDK runs each POST in a task that copies the context of
# the task that sent the message, so the response hook and the transport below write to the sender's Answer.
_ANSWER: ContextVar[Answer] = ContextVar("sagepy_mcp_answer")


def _field(name: str) -> property:
    return property(lambda self: getattr(self.current(), name),
                    lambda self, value: setattr(self.current(), name, value))


class HttpStatus:
    """What the server's HTTP answers said to the current request, captured by a response hook: the SDK turns a
    401 into a generic JSON-RPC error, and §8.10 needs the number for `MCP auth error` / `MCP HTTP error`. An
    OAuth failure (oauth.py) is kept here too, and wins: it explains the status that follows from it. The
    status and content type of the last answer to a POST tell a web server that is not MCP at all from a
    failing one. Every field belongs to the request of the calling task (`begin`)."""

    code = _field("code")
    oauth = _field("oauth")
    answer = _field("answer")
    broken = _field("broken")

    def __init__(self, url: str = "") -> None:
        self.url = url
        self._outside = Answer()   # for code that runs outside any request
        # Calls in flight on the connection: at most HTTP_IN_FLIGHT, so that over HTTP none waits in the client's
        # connection pool; a call waiting for its turn has not been sent, and its timer has not started (a wait
        # for a connection is not a request timeout).
        self.turns = asyncio.Semaphore(HTTP_IN_FLIGHT)

    def begin(self) -> Answer:
        """A fresh Answer for the request the current task is about to make."""
        answer = Answer()
        _ANSWER.set(answer)
        return answer

    def current(self) -> Answer:
        return _ANSWER.get(self._outside)

    def failure(self) -> McpFailure | None:
        if self.oauth is not None:
            return self.oauth
        if self.code is None:
            return None
        if self.code in (401, 403):
            return McpFailure("auth error", f"server returned HTTP {self.code}")
        return McpFailure("HTTP error", f"server returned HTTP {self.code}")

    def not_mcp(self, unparsable: bool) -> McpFailure | None:
        """`<URL> answered HTTP <status> <content type>, not MCP` when the last answer cannot be MCP's: a
        content type MCP never uses, or JSON that is not JSON-RPC (`unparsable`, the SDK's parse error).
        A refused login (401, 403) is an auth error instead."""
        if self.answer is None or self.oauth is not None:
            return None
        status, content_type = self.answer
        if status in (401, 403) or (content_type in _MCP_CONTENT_TYPES and not unparsable):
            return None
        from ..net import url_for_display
        shown = content_type or "without a content type"
        return McpFailure("connection failed", f"{url_for_display(self.url)} answered HTTP {status} {shown}, not MCP")


_MCP_CONTENT_TYPES = ("application/json", "text/event-stream")


def child_env(config: ServerConfig) -> dict[str, str]:
    """The environment of a stdio server: the allow-list (or everything with inherit_env) plus `env`."""
    extra = resolve_env(config.env, config.table[:-1] + ".env]")
    if config.inherit_env:
        base = dict(os.environ)
    else:
        base = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
    base.update(extra)
    return base


def write_log_header(log: Any, what: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    log.write(f"=== {stamp} start: {what}\n")
    log.flush()


async def start_stdio(config: ServerConfig, root: str, log_path: str) -> StartedServer:
    """Start a stdio server's process, its stderr appended to its log. Nothing here imports the SDK, so the
    manager can start the server first and import the SDK while the server starts up. A failure is kept
    in the result, to be raised when the connection opens the transport."""
    started = StartedServer(file_size(log_path))
    try:
        env = child_env(config)
        args = resolve_args(config)
        cwd = os.path.join(root, config.cwd) if config.cwd else root
        command = config.command or ""
        if not os.path.isdir(cwd):
            raise McpFailure("connection failed",
                             f"cannot start '{command}': working directory {cwd} does not exist")
        started.log = open_private_log(log_path)
    except (McpFailure, OSError) as exc:
        started.setup_failure = exc
        return started
    write_log_header(started.log, masked_command_line(command, config.args))  # as written, `$` unexpanded
    await started.spawn(command, args, env, cwd)
    return started


def open_stdio(stack: AsyncExitStack, started: StartedServer, child: ChildProcess) -> Any:
    """The transport (not yet entered: the SDK's Client enters it) of a started stdio server; its log stays
    open on `stack` for as long as the connection lives."""
    if started.setup_failure is not None:
        raise started.setup_failure
    stack.enter_context(started.log)
    return stdio_transport(started, child)


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def http_headers(config: ServerConfig) -> dict[str, str]:
    headers = resolve_env(config.headers, config.table[:-1] + ".headers]")
    if config.auth == "bearer":
        token = os.environ.get(config.token_env or "")
        if token is None:
            raise McpFailure("auth error",
                             f"{config.table} token_env refers to unset environment variable '{config.token_env}'")
        headers["Authorization"] = f"Bearer {token}"
    return headers


@asynccontextmanager
async def _http(url: str, headers: dict[str, str], connect_s: float, status: HttpStatus,
                auth: Any) -> AsyncIterator[Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from ..tls import trust_store

    async def on_response(response: Any) -> None:
        # Only the POSTs carry requests; a GET refused for the optional event stream is no failure, and the
        # answer that stands for a POST's transport failure (below) is no server's.
        if response.request.method != "POST" or _FAILED_POST in response.headers:
            return
        if response.status_code not in (202, 204):   # a notification's acceptance has no body to judge
            status.answer = (response.status_code,
                             response.headers.get("content-type", "").split(";", 1)[0].strip().lower())
        if response.status_code >= 400:
            status.code = response.status_code

    # No read timeout: the server's event stream stays open; sagepy's own timer bounds every request. No pool
    # timeout either: the connection sends at most HTTP_IN_FLIGHT requests at once, and the pool has room for
    # them, the event stream and a few notifications, each kept alive for the next (up to _KEEPALIVE_S idle).
    # A connection that cannot be opened is tried again (nothing was sent on it).
    # Servers are verified against sagepy's one trust store, as the LLM client and the Http tool do.
    room = HTTP_IN_FLIGHT + 8
    limits = httpx2.Limits(max_connections=room, max_keepalive_connections=room, keepalive_expiry=_KEEPALIVE_S)
    inner = httpx2.AsyncHTTPTransport(verify=trust_store(), limits=limits, retries=_CONNECT_RETRIES)
    transport = _watched_transport(httpx2, inner, status)
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(connect_s, read=None, pool=None), auth=auth,
                                  transport=transport, event_hooks={"response": [on_response]}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


_CONNECT_RETRIES = 2

# How long a connection may stay idle in the pool and still carry the next request. A server closes a kept-alive
# connection after its own idle timeout (uvicorn, Node and Apache: 5 s; gunicorn: 2 s), and a request written as
# it does so meets a reset that the client cannot tell from a server that read the request and then failed, so
# it cannot be sent again. httpx's default (5 s) equals the commonest server timeout, and the server's clock
# starts when it has written its answer, before the client has read it: under load the client reused
# connections the server was closing, and now and then a call of bench/scale.py's 5,000 failed so. Well under
# the shortest common timeout, a connection is closed by the client first; one idle longer costs only a new
# connection.
_KEEPALIVE_S = 1.0
_FAILED_POST = "x-sagepy-transport-failure"


def _watched_transport(httpx2: Any, inner: Any, status: HttpStatus) -> Any:
    """`inner`, turning a transport failure of a POST (while it is sent, or while its answer is read) into an
    answer that fails that one request: the SDK would otherwise let the exception end its transport, and with
    it every other request in flight on the connection. The failure is kept in the request's Answer, for
    `MCP I/O error`. A JSON answer is read here whole, so that a failure while reading it is caught here too;
    an event stream is read by the SDK, which resolves its request when the stream breaks. A GET (the optional
    event stream) may fail and be retried without failing any request."""

    class WatchedBody(httpx2.AsyncByteStream):
        def __init__(self, body: Any, answer: Answer) -> None:
            self.body = body
            self.answer = answer

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self.body:
                    yield chunk
            except httpx2.TransportError as exc:
                self.answer.broken = exc
                raise

        async def aclose(self) -> None:
            await self.body.aclose()

    class WatchedTransport(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            if request.method != "POST":
                return await inner.handle_async_request(request)
            answer = status.current()
            try:
                # Never sent twice: httpcore2 does not raise a failure to write (it goes on to read an answer,
                # which a server may give before reading the whole request), so a broken connection surfaces as
                # a failure to read, which cannot show that the server did not act on the request.
                response = await inner.handle_async_request(request)
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    response.stream = WatchedBody(response.stream, answer)
                    return response
                try:
                    body = b"".join([chunk async for chunk in response.stream])
                finally:
                    await response.stream.aclose()
                response.stream = httpx2.ByteStream(body)
                return response
            except httpx2.TransportError as exc:
                answer.broken = exc
                error = {"jsonrpc": "2.0", "id": None,
                         "error": {"code": -32603, "message": f"transport failure: {type(exc).__name__}"}}
                return httpx2.Response(502, headers={"content-type": "application/json", _FAILED_POST: "1"},
                                       content=json.dumps(error).encode(), request=request)

        async def aclose(self) -> None:
            await inner.aclose()

    return WatchedTransport()


def open_http(config: ServerConfig, root: str, log_path: str, status: HttpStatus,
              pause: Callable[[], AbstractContextManager], settings: McpSettings) -> Any:
    """The (not yet entered) Streamable HTTP transport of a server. With `auth = "oauth"`, `pause` stops
    the connection's timers while a person logs in."""
    headers = http_headers(config)
    auth = None
    if config.auth == "oauth" and config.grant == "client_credentials":
        from .oauth_unattended import client_credentials_provider
        auth = client_credentials_provider(config, root, status)
    elif config.auth == "oauth":
        from .oauth import oauth_provider
        auth = oauth_provider(config, root, log_path, status, pause, settings.client_name, settings.oauth_open)
    with open_private_log(log_path) as log:
        write_log_header(log, mask_url(config.url or ""))
    return _http(config.url or "", headers, config.connect_timeout_ms / 1000, status, auth)


_INPROCESS_CACHE: dict[str, Any] = {}


def open_inprocess(config: ServerConfig, root: str) -> Any:
    """The SDK server object named by `module`/`object`; a file is loaded once per process."""
    path = os.path.abspath(os.path.join(root, config.module or ""))
    module = _INPROCESS_CACHE.get(path)
    if module is None:
        if not os.path.isfile(path):
            raise McpFailure("connection failed", f"module {config.module} not found")
        name = "sage_mcp_inprocess_" + str(len(_INPROCESS_CACHE))
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise McpFailure("connection failed", f"cannot load module {config.module}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise McpFailure("connection failed",
                             f"loading {config.module} raised {type(exc).__name__}: {exc}") from None
        _INPROCESS_CACHE[path] = module
    server = getattr(module, config.object, None)
    if server is None:
        raise McpFailure("connection failed", f"{config.module} has no object '{config.object}'")
    return server
