"""The stdio transport: an MCP server as a child process speaking newline-delimited JSON-RPC (SPEC §8.3).

sagepy runs its own transport instead of the SDK's `stdio_client` because it needs what that one keeps to
itself: the child's pid and process group (so `close_all` can still kill the server from a signal path
when the event loop is stuck) and its exit status (for the `note: MCP server 'X' exited (status N)` line).
It is also cheaper: the child's pipes are an asyncio protocol (`_ServerPipes`), so a response is parsed in
the pipe's read callback and a request is written by the task that sends it, with no reader or writer task
and no memory stream in between (about four loop iterations fewer per call than the SDK's transport).

The child starts in its own session, hence its own process group, so a Ctrl-C typed in the terminal does
not reach it. Shutdown follows §8.3: close its stdin, wait 2 s, SIGTERM to the group, wait 2 s, SIGKILL;
afterwards any process left in the group (a grandchild the server started) is killed as well, so that no
server process outlives sagepy. The child is reaped by asyncio's child watcher, which sets `returncode`.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
from collections import deque
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

import anyio

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

logger = logging.getLogger("mcp.sagepy.stdio")

STDIN_GRACE_S = 2.0
TERM_GRACE_S = 2.0
KILL_REAP_S = 2.0
_READ_AHEAD = 64   # parsed messages queued before sagepy stops reading the server's stdout


class ChildProcess:
    """What the connection learns about its server process: pid, and exit status once it has ended."""

    def __init__(self, on_exit: Callable[["ChildProcess"], None]) -> None:
        self.pid: int | None = None
        self.returncode: int | None = None
        self.ended_by_itself = False  # its output ended while sagepy was not stopping it
        self.on_exit = on_exit

    def status(self) -> str:
        """`3`, `SIGKILL`, or `unknown` (§8.3 note)."""
        code = self.returncode
        if code is None:
            return "unknown"
        if code < 0:
            try:
                return signal.Signals(-code).name
            except ValueError:
                return f"signal {-code}"
        return str(code)


def kill_group(pid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a server's process group; False when no process is left in it."""
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


# The SDK's message adapter and SessionMessage, imported when the first message arrives: this module starts
# server processes before the SDK is imported (`StartedServer`), so it must not import the SDK itself.
_sdk: tuple[Any, Any] | None = None


def _parse_line(line: bytes) -> SessionMessage | Exception:
    global _sdk
    if _sdk is None:
        import mcp_types
        from mcp.shared.message import SessionMessage as session_message
        _sdk = (mcp_types.jsonrpc_message_adapter, session_message)
    adapter, session_message = _sdk
    try:
        message = adapter.validate_json(line, by_name=False)
    except ValueError:
        # A line that is not valid UTF-8 is read the way a text stream would read it; one with a lone surrogate
        # escape (`"\ud83d"`), which pydantic's parser refuses, as Python's JSON reads it: the string keeps the
        # surrogate (sagepy.core.text), and the answer reaches its request at once.
        import json
        try:
            message = adapter.validate_python(json.loads(line.decode("utf-8", errors="replace")), by_name=False)
        except (ValueError, RecursionError) as exc:
            logger.exception("Failed to parse a JSON-RPC message from the server")
            return exc if isinstance(exc, ValueError) else ValueError("nesting too deep")
    return session_message(message)


class _ServerPipes(asyncio.SubprocessProtocol):
    """The child's stdin and stdout as the event loop sees them.

    Lines arriving on stdout are parsed in the loop's read callback and queued for the session; messages
    from the session are written to stdin in the sending task. Neither direction has a task of its own:
    a request and its response each cost no more than the loop iteration that carries them (the SDK's own
    stdio transport moves every message through a reader or writer task and a memory stream).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.SubprocessTransport | None = None
        self.messages: deque[SessionMessage | Exception] = deque()
        self.reader: asyncio.Future[None] | None = None   # the session, waiting for a message
        self.ended = False          # stdout reached its end, or stdin broke: no more messages will come
        self.stdin_lost = False
        self.reading_paused = False
        self.writing_paused = False
        self.drained: asyncio.Future[None] | None = None
        self.exited: asyncio.Future[None] = loop.create_future()
        self.stdout_closed: asyncio.Future[None] = loop.create_future()
        self._partial: list[bytes] = []   # the start of a line whose end has not arrived yet

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            return
        lines = data.split(b"\n")
        if len(lines) == 1:   # the middle of a long line: joined once, when its end arrives
            self._partial.append(data)
            return
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial.clear()
        tail = lines.pop()
        if tail:
            self._partial.append(tail)
        for raw in lines:
            line = raw.strip()
            if line:
                self.messages.append(_parse_line(line))
        if self.messages:
            self._wake_reader()
            if len(self.messages) >= _READ_AHEAD and not self.reading_paused:
                self._stdout().pause_reading()
                self.reading_paused = True

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.stdout_closed.done():   # the session sees the end once the exit status
            self.stdout_closed.set_result(None)                # is known (`stdio_transport`)
        elif fd == 0:
            self.stdin_lost = True
            self._wake_writer()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._wake_writer()

    def end(self) -> None:
        """No message will follow the queued ones (the server is gone, or sagepy is closing)."""
        self.ended = True
        self._wake_reader()

    def returncode(self) -> int | None:
        return self.transport.get_returncode() if self.transport is not None else None

    def message_taken(self) -> None:
        drained = len(self.messages) <= _READ_AHEAD // 2
        if self.reading_paused and drained and not self.stdout_closed.done():
            self.reading_paused = False
            self._stdout().resume_reading()

    def _stdout(self) -> Any:
        return self.transport.get_pipe_transport(1)  # type: ignore[union-attr]

    def _wake_reader(self) -> None:
        if self.reader is not None and not self.reader.done():
            self.reader.set_result(None)

    def _wake_writer(self) -> None:
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)


class _Inbox:
    """The session's read stream: messages the server wrote, in order, then the end."""

    def __init__(self, pipes: _ServerPipes) -> None:
        self._pipes = pipes
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        pipes = self._pipes
        while not pipes.messages:
            if self._closed:
                raise anyio.ClosedResourceError
            if pipes.ended:
                raise anyio.EndOfStream
            pipes.reader = pipes.loop.create_future()
            try:
                await pipes.reader
            finally:
                pipes.reader = None
        message = pipes.messages.popleft()
        pipes.message_taken()
        return message

    def __aiter__(self) -> "_Inbox":
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True
        self._pipes.end()

    async def __aenter__(self) -> "_Inbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class _Outbox:
    """The session's write stream: each message is serialised and written to the server's stdin at once."""

    def __init__(self, pipes: _ServerPipes) -> None:
        self._pipes = pipes
        self._closed = False

    async def send(self, message: SessionMessage) -> None:
        pipes = self._pipes
        if self._closed:
            raise anyio.ClosedResourceError
        stdin = pipes.transport.get_pipe_transport(0) if pipes.transport is not None else None
        if pipes.stdin_lost or stdin is None or stdin.is_closing():
            # The server is gone (or being stopped): end the session's reads too, so that no request waits
            # for an answer. (asyncio would drop the write, and warn on the terminal after a few.)
            pipes.end()
            raise anyio.BrokenResourceError
        try:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        except ValueError:   # a string holding a lone surrogate, which pydantic cannot write: its escape
            from ..core.json_text import compact_json
            data = compact_json(message.message.model_dump(mode="json", by_alias=True, exclude_unset=True))
        stdin.write(data.encode("utf-8") + b"\n")  # type: ignore[attr-defined]
        while pipes.writing_paused and not pipes.stdin_lost:
            pipes.drained = pipes.loop.create_future()
            try:
                await pipes.drained
            finally:
                pipes.drained = None

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> "_Outbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


async def _wait_exit(pipes: _ServerPipes, timeout: float) -> bool:
    # Not the transport's wait: on 3.11 it also waits for pipe EOF, which a grandchild holding a pipe delays.
    with anyio.move_on_after(timeout):
        await asyncio.shield(pipes.exited)
    return pipes.returncode() is not None


async def _stop(pipes: _ServerPipes, pid: int) -> None:
    """Close stdin, wait, SIGTERM the group, wait, SIGKILL; then clear out the group."""
    transport = pipes.transport
    assert transport is not None
    stdin = transport.get_pipe_transport(0)
    if stdin is not None:
        stdin.close()
    if not await _wait_exit(pipes, STDIN_GRACE_S):
        kill_group(pid, signal.SIGTERM)
        if not await _wait_exit(pipes, TERM_GRACE_S):
            kill_group(pid, signal.SIGKILL)
            if not await _wait_exit(pipes, KILL_REAP_S):
                logger.warning("MCP server process %d survived SIGKILL", pid)
    # Grandchildren left in the group would outlive sagepy; the group id stays reserved while they live.
    kill_group(pid, signal.SIGKILL)
    transport.close()


class StartedServer:
    """A stdio server process started before its connection exists.

    The manager starts the process first and imports the MCP SDK (about 1.5 s) afterwards, so that the
    server's own start-up overlaps the import. What went wrong is kept, to be raised where the connection
    would have met it had it started the process itself: `setup_failure` (environment, working directory)
    when the transport is opened, `spawn_failure` (an OSError) when it is entered."""

    def __init__(self, log_mark: int) -> None:
        self.log_mark = log_mark   # the log's size before this start: the exit note shows what follows it
        self.log: Any = None
        self.transport: asyncio.SubprocessTransport | None = None
        self.pipes: _ServerPipes | None = None
        self.setup_failure: BaseException | None = None
        self.spawn_failure: OSError | None = None

    @property
    def pid(self) -> int | None:
        return self.transport.get_pid() if self.transport is not None else None

    async def spawn(self, command: str, args: list[str], env: dict[str, str], cwd: str | None) -> None:
        loop = asyncio.get_running_loop()
        try:
            self.transport, self.pipes = await loop.subprocess_exec(
                lambda: _ServerPipes(loop), command, *args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self.log, env=env, cwd=cwd, start_new_session=True)
        except OSError as exc:
            self.spawn_failure = exc

    def discard(self) -> None:
        """Kill the process and close what it holds: its connection will never be made."""
        if self.transport is not None:
            kill_group(self.transport.get_pid())
            self.transport.close()
        if self.log is not None:
            self.log.close()


@asynccontextmanager
async def stdio_transport(started: StartedServer, child: ChildProcess) -> AsyncIterator[tuple[Any, Any]]:
    """Yield the (read, write) streams of a started server, which the SDK's `Client` takes as a transport.

    Raises the OSError met when the command could not be started.
    """
    if started.spawn_failure is not None:
        raise started.spawn_failure
    transport, pipes = started.transport, started.pipes
    assert transport is not None and pipes is not None
    child.pid = pid = transport.get_pid()
    closing = False

    async def notice_exit() -> None:
        """When stdout ends while sagepy is not stopping the server, the server has ended (or is about to):
        its exit status is recorded before the session learns of the end, so that the requests the end
        fails can name it."""
        await asyncio.shield(pipes.stdout_closed)   # cancelling this task must leave the future as it is
        if not closing:
            await _wait_exit(pipes, 0.5)
            child.returncode = pipes.returncode()
            child.ended_by_itself = True
            child.on_exit(child)
        pipes.end()

    async with anyio.create_task_group() as tg:
        tg.start_soon(notice_exit)
        try:
            yield _Inbox(pipes), _Outbox(pipes)
        finally:
            closing = True
            with anyio.CancelScope(shield=True):
                pipes.end()
                await _stop(pipes, pid)
                child.returncode = pipes.returncode()
            tg.cancel_scope.cancel()
