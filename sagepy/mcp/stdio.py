"""The stdio transport: an MCP server as a child process speaking newline-delimited JSON-RPC (SPEC §8.3).

sagepy runs its own transport instead of the SDK's `stdio_client` because it needs what that one keeps to
itself: the child's pid and process group (so `close_all` can still kill the server from a signal path
when the event loop is stuck) and its exit status (for the `note: MCP server 'X' exited (status N)` line).

The child starts in its own session, hence its own process group, so a Ctrl-C typed in the terminal does
not reach it. Shutdown follows §8.3: close its stdin, wait 2 s, SIGTERM to the group, wait 2 s, SIGKILL;
afterwards any process left in the group (a grandchild the server started) is killed as well, so that no
server process outlives sagepy. The child is reaped by asyncio's child watcher, which sets `returncode`.
"""
from __future__ import annotations

import logging
import os
import signal
from contextlib import asynccontextmanager, suppress
from typing import Any, AsyncIterator, Callable

import anyio
import anyio.abc
import mcp_types
from mcp.shared.message import SessionMessage

logger = logging.getLogger("mcp.sagepy.stdio")

STDIN_GRACE_S = 2.0
TERM_GRACE_S = 2.0
KILL_REAP_S = 2.0
_POLL_S = 0.01

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


async def _wait_exit(process: anyio.abc.Process, timeout: float) -> bool:
    # Not process.wait(): on 3.11 it also waits for pipe EOF, which a grandchild holding the pipe delays.
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(_POLL_S)
    return process.returncode is not None


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, wait, SIGTERM the group, wait, SIGKILL; then clear out the group."""
    with suppress(Exception):
        await process.stdin.aclose()  # type: ignore[union-attr]
    if not await _wait_exit(process, STDIN_GRACE_S):
        kill_group(process.pid, signal.SIGTERM)
        if not await _wait_exit(process, TERM_GRACE_S):
            kill_group(process.pid, signal.SIGKILL)
            if not await _wait_exit(process, KILL_REAP_S):
                logger.warning("MCP server process %d survived SIGKILL", process.pid)
    # Grandchildren left in the group would outlive sagepy; the group id stays reserved while they live.
    kill_group(process.pid, signal.SIGKILL)
    for stream in (process.stdout, process.stdin):
        with suppress(Exception):
            await stream.aclose()  # type: ignore[union-attr]
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    if transport is not None:
        with suppress(Exception):
            transport.close()


def _parse_line(line: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        logger.exception("Failed to parse a JSON-RPC message from the server")
        return exc


@asynccontextmanager
async def stdio_transport(command: str, args: list[str], env: dict[str, str], cwd: str | None, errlog: Any,
                          child: ChildProcess) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the (read, write) streams the SDK's `Client` takes as a transport.

    Raises OSError when the command cannot be started.
    """
    process = await anyio.open_process([command, *args], env=env, cwd=cwd, stderr=errlog,
                                       start_new_session=True)
    child.pid = process.pid
    read_writer, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_reader = anyio.create_memory_object_stream[Any](0)
    closing = False

    async def read_stdout() -> None:
        buffer = b""
        try:
            async with read_writer:
                async for chunk in process.stdout:  # type: ignore[union-attr]
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for raw in lines:
                        text = raw.decode("utf-8", errors="replace").strip()
                        if text:
                            await read_writer.send(_parse_line(text))
                # EOF: the server closed stdout, so it has ended or is about to.
                if not closing:
                    await _wait_exit(process, 0.5)
                    child.returncode = process.returncode
                    child.ended_by_itself = True
                    child.on_exit(child)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass

    async def write_stdin() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))  # type: ignore[union-attr]
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # A broken pipe means the server is gone: end the session's reads too, so no request hangs.
            await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdout)
        tg.start_soon(write_stdin)
        try:
            yield read_stream, write_stream
        finally:
            closing = True
            with anyio.CancelScope(shield=True):
                write_stream.close()
                await _stop(process)
                child.returncode = process.returncode
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
            tg.cancel_scope.cancel()
