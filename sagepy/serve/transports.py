"""The transports of `sage serve` (SPEC §21): stdio (the SDK's stdio transport, which keeps stray writes off
stdout) and streamable HTTP at `/mcp` (the SDK's Starlette app under uvicorn), with an optional bearer token.

Either stops cleanly on end of input (stdio), SIGTERM or SIGINT: calls in flight are cancelled (their runs stop
before their next step) and every process a run started is gone before the server exits.
"""
from __future__ import annotations

import hmac
import os
import signal
import socket
import threading
from typing import TYPE_CHECKING, Any, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel

if TYPE_CHECKING:
    from .server import ServeApp

# The HTTP body limit: arguments above `max_argument_bytes` get a tool error, so a request must be allowed
# to carry them; beyond this, the transport answers HTTP 413 on its own.
_MIN_BODY_BYTES = 32 * 1024 * 1024


async def serve_stdio(app: ServeApp) -> int:
    """Serve until stdin ends (0) or SIGTERM / SIGINT (143 / 130), with every call's run stopped."""
    from mcp.server.stdio import stdio_server
    server = app.server
    stopped: list[int] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signals, tg.cancel_scope, stopped)
        async with stdio_server(stdin=_stdin_lines(anyio.lowlevel.current_token())) as (read, write):
            app.log(f"serving {len(app.tools)} tool(s) over stdio")
            async with app.serving():
                await server.run(ScreenedInput(read, write, app.log), write, server.create_initialization_options())
        tg.cancel_scope.cancel()
    return stopped[0] if stopped else 0


def _stdin_lines(loop: Any) -> Any:
    """The protocol's input lines, read by a daemon thread (a stop never waits for a blocked read) from a
    duplicate of fd 0, which then points at the null device: a process a run starts reads nothing of the
    protocol, as with the SDK's own stdin claim."""
    fd = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    lines = open(fd, encoding="utf-8", errors="replace", newline="\n")
    send, receive = anyio.create_memory_object_stream(16)

    def read() -> None:
        try:
            for line in lines:
                anyio.from_thread.run(send.send, line, token=loop)
        except Exception:   # the loop is gone (the server stopped) or the input broke: nothing more to read
            pass
        finally:
            try:
                anyio.from_thread.run_sync(send.close, token=loop)
            except Exception:
                pass

    threading.Thread(target=read, name="sage-serve-stdin", daemon=True).start()
    return receive


async def _stop_on_signals(scope: anyio.CancelScope, stopped: list[int]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            stopped.append(143 if signum == signal.SIGTERM else 130)
            scope.cancel()
            return


class ScreenedInput:
    """The client's messages as the server reads them (the SDK's `ReadStream`): a line that is no JSON-RPC
    message gets the JSON-RPC parse error (id null) and a log line, and the session goes on. Screened as the
    server reads, with no task of its own between the transport and the server, and with each message's
    sender context (`last_context`) passed on."""

    def __init__(self, read: Any, write: Any, log: Callable[[str], None]) -> None:
        self._read = read
        self._write = write
        self._log = log

    @property
    def last_context(self) -> Any:
        return getattr(self._read, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item
            await self._refuse(item)

    async def _refuse(self, item: Exception) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage
        self._log(f"refused a message that is not JSON-RPC: {str(item).splitlines()[0][:200]}")
        error = types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
            code=types.PARSE_ERROR, message="Parse error: the message is not a JSON-RPC 2.0 message"))
        await self._write.send(SessionMessage(error))

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> ScreenedInput:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> ScreenedInput:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (port 0: any free one). Raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def serve_http(app: ServeApp, sock: socket.socket, token: str | None) -> None:
    import uvicorn
    host, port = sock.getsockname()[:2]
    body = max(_MIN_BODY_BYTES, 2 * app.settings.max_argument_bytes)
    asgi: Any = app.server.streamable_http_app(host=host, max_request_body_size=body)
    if token is not None:
        asgi = BearerGate(asgi, token, app.log)
    config = uvicorn.Config(asgi, log_level="warning", access_log=False, timeout_graceful_shutdown=10,
                            lifespan="on")
    shown = f"[{host}]" if ":" in host else host
    app.log(f"serving {len(app.tools)} tool(s) at http://{shown}:{port}/mcp")
    async with app.serving():
        await uvicorn.Server(config).serve(sockets=[sock])


class BearerGate:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`, else HTTP 401. The
    token is compared in constant time and never written anywhere."""

    def __init__(self, app: Any, token: str, log: Callable[[str], None]) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.log = log

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        self.log(f"refused an HTTP request from {client[0]}: {'wrong' if given else 'no'} bearer token")
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body",
                    "body": b'{"error": "unauthorized: this server needs an Authorization: Bearer token"}'})
