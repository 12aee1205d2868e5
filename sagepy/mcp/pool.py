"""The synchronous face of MCP for the runtime: typed calls, dynamic builtins, safety and shutdown.
Arguments and results are wire data (JSON); sagepy/effects/wire.py turns them into Sage values.

Agent threads call these methods; each one runs its work as a task on the shared event loop and waits for
it (`loop.run`: the waiting thread usually runs the loop itself). All connection state (which server is
connected, which connect is in flight) is touched only by code running on the loop, one thread at a time,
so there are no locks on this side (but for the one-time start, `_start`), and `close_all` can run from a
signal path.

One connection per configured server, opened on first use (or eagerly by `prestart`) and shared by every
agent; one unshared connection per `mcp_connect` handle. A connection whose server exited is replaced by a
new one on the next call (§8.3). Errors come out as Sage errors: `MCP <sub-kind>: …` for typed calls, the
messages of §8.5's table for the dynamic builtins.
"""
from __future__ import annotations

import asyncio
import atexit
import itertools
import json
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable

from ..secrecy import private_directory
from .. import aio as loop
from ..progress import waiting
from ..grove.servers import McpSettings, ServerConfig
from .catalogue import Catalogue
from .dynamic import handle_id, listing_object, log_name, parse_arguments, parse_connect_config
from .failures import DynamicFailure, McpFailure
from .results import dynamic_text, error_text
from .safety import safety_of
from .sdk_logs import route_sdk_logs

if TYPE_CHECKING:
    from .connection import Connection
    from .stdio import StartedServer

_CLOSE_WAIT_S = 10.0
_POLL_S = 0.1

# Dynamic handles count from 1 per process (§8.5), across managers.
_handle_numbers = itertools.count(1)
_handle_lock = threading.Lock()


class Hooks:
    """What connections call back into: the resolvers the runtime supplies, tracing and stderr."""

    def __init__(self, settings: McpSettings, elicitation: Callable | None, sampling: Callable | None,
                 trace: Callable | None) -> None:
        self.settings = settings
        self.elicitation = elicitation
        self.sampling = sampling
        self.trace_fn = trace

    def trace(self, kind: str, data: dict) -> None:
        if self.trace_fn is not None:
            self.trace_fn(kind, data)

    def note(self, text: str) -> None:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()


class _Slot:
    """A server the manager can connect to: its configuration and its current connection."""

    def __init__(self, label: str, config: ServerConfig, log_file: str) -> None:
        self.label = label
        self.config = config
        self.log_file = log_file
        self.conn: Connection | None = None
        self.opening: asyncio.Future | None = None
        self.connecting: Connection | None = None  # the connection `opening` is opening
        self.pending: McpFailure | None = None  # a failed eager connect, reported at first use
        self.warned = False


class ConnectionPool(Catalogue):
    """All MCP connections of one program run (or one test); resources and prompts in the Catalogue mixin."""

    def __init__(self, project_root: str, servers: dict[str, ServerConfig], settings: McpSettings | None, *,
                 elicitation: Callable | None = None, sampling: Callable | None = None,
                 trace: Callable | None = None, checkpoint: Callable[[], None] | None = None,
                 log_dir: str | None = None) -> None:
        """`checkpoint`, when given, is called about every 100 ms while an agent waits for MCP; whatever it
        raises (the agent's cancellation) cancels the request, so the server is told, and propagates.
        Logs go to `log_dir`, by default the project's `.sage/logs`."""
        self.root = os.path.abspath(project_root)
        self.log_dir = log_dir or os.path.join(self.root, ".sage", "logs")
        self.hooks = Hooks(settings or McpSettings(), elicitation, sampling, trace)
        self.checkpoint = checkpoint
        self._servers = {name: _Slot(name, config, f"{name}.log") for name, config in servers.items()}
        self._dynamic: dict[int, _Slot] = {}
        self._connections: list[Connection] = []  # every connection ever opened, for the last-resort kill
        self._starting: list[StartedServer] = []  # stdio servers started whose connection is not made yet
        self._closed = False
        self._started = False
        self._start_lock = threading.Lock()

    # ------------------------------------------------------------ running on the loop

    def _run(self, coro: Any) -> Any:
        if loop.in_loop_thread():
            coro.close()
            raise RuntimeError("ConnectionPool methods cannot be called from the event-loop thread")
        if not self._started and not self._closed:
            self._start()
        return loop.run(coro, self.checkpoint, _POLL_S)

    def _start(self) -> None:
        """Once, before the first request: the log directory (a connection opens its log there), SDK log
        routing and the last-resort kill. Under a lock: the first requests may come from several threads
        at once (the background prestart and an agent), and none may go on before the directory exists."""
        with self._start_lock:
            if self._started:
                return
            private_directory(self.log_dir)
            route_sdk_logs(self.log_dir)
            atexit.register(self.close_all)
            self._started = True

    def _live(self, slot: _Slot) -> Connection | None:
        """The slot's connection when it can be used as it is (the common case, without a coroutine)."""
        conn = slot.conn
        if conn is None or not conn.alive or slot.pending is not None or self._closed:
            return None
        return conn

    async def _connection(self, slot: _Slot) -> Connection:
        conn = self._live(slot)
        if conn is not None:
            return conn
        if self._closed:
            raise McpFailure("connection failed", "sagepy is shutting down")
        if slot.pending is not None:
            failure, slot.pending = slot.pending, None
            raise failure
        if slot.opening is None:
            slot.opening = asyncio.ensure_future(self._open(slot))
        task = slot.opening
        try:
            return await asyncio.shield(task)
        finally:
            if task.done() and slot.opening is task:
                slot.opening = None

    async def _open(self, slot: _Slot) -> Connection:
        """Connect, between the trace events `mcp.connecting` and `mcp.connect` (emitted by the connection
        once its tools are listed) or `mcp.connect_failed`: the span covers the server's start, the SDK's
        import and the handshake."""
        transport = slot.config.transport
        self.hooks.trace("mcp.connecting", {"server": slot.label, "transport": transport})
        started = asyncio.get_running_loop().time()
        try:
            with waiting(f"connecting to {slot.label}"):   # on a terminal, once it lasts (sagepy.progress)
                return await self._open_now(slot)
        except BaseException:
            elapsed = int((asyncio.get_running_loop().time() - started) * 1000)
            self.hooks.trace("mcp.connect_failed", {"server": slot.label, "transport": transport,
                                                    "duration_ms": elapsed})
            raise

    async def _open_now(self, slot: _Slot) -> Connection:
        old = slot.conn
        if old is not None:
            slot.conn = None
            old.retire()
        log_path = os.path.join(self.log_dir, slot.log_file)
        started = None
        if slot.config.transport == "stdio":
            # The server's process first, then the SDK's import (about 1.5 s the first time): its start-up
            # runs meanwhile. Until its connection exists, the last-resort kill finds it in `_starting`.
            from .transports import start_stdio
            started = await start_stdio(slot.config, self.root, log_path)
            self._starting.append(started)
        try:
            from .connection import Connection  # imports the SDK: only once a server is really needed
            conn = Connection(slot.label, slot.config, self.root, log_path, self.hooks, started)
            self._connections.append(conn)
        except BaseException:
            if started is not None:
                started.discard()
            raise
        finally:
            if started is not None:
                self._starting.remove(started)
        slot.connecting = conn
        try:
            await conn.open()
        finally:
            slot.connecting = None
        if self._closed:
            await conn.close()
            raise McpFailure("connection failed", "sagepy is shutting down")
        slot.conn = conn
        if not slot.warned and slot.config.safety:
            slot.warned = True
            offered = {tool.name for tool in await conn.tools()}
            for name in slot.config.safety:
                if name not in offered:
                    self.hooks.note(f"warning: {slot.config.table[:-1]}.safety] names tool '{name}', "
                                    f"which server '{slot.label}' does not offer")
        return conn

    # ------------------------------------------------------------ typed tools

    @property
    def server_names(self) -> list[str]:
        """The configured servers this pool connects to."""
        return list(self._servers)

    def prestart(self, names: list[str]) -> None:
        """Connect to these configured servers in the background; a failure waits for the first use."""
        slots = [self._servers[name] for name in names if name in self._servers]
        if slots and not self._closed:
            self._run(self._prestart(slots))

    async def _prestart(self, slots: list[_Slot]) -> None:
        for slot in slots:
            if slot.conn is None and slot.opening is None:
                task = asyncio.ensure_future(self._open(slot))
                slot.opening = task
                task.add_done_callback(lambda t, s=slot: self._eager_done(s, t))

    def _eager_done(self, slot: _Slot, task: asyncio.Future) -> None:
        if slot.opening is task:
            slot.opening = None
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            slot.pending = exc if isinstance(exc, McpFailure) else McpFailure("connection failed", str(exc))

    def call_typed(self, server: str, sage_label: str, remote: str, arguments: dict) -> dict:
        """Call a typed tool function with its arguments object; the successful result in wire form.
        Raises McpFailure (a result with `isError` included)."""
        result = self._run(self._call_typed(server, sage_label, remote, arguments))
        if result.get("isError"):
            raise McpFailure("tool error", error_text(result))
        return result

    async def _call_typed(self, server: str, label: str, remote: str, arguments: dict) -> dict:
        slot = self._servers.get(server)
        if slot is None:
            block = label.split(".", 1)[0]
            raise McpFailure("tool not found", f"no [tools.{block}] entry in grove.toml")
        return await self._in_turn(slot, lambda conn: conn.call(remote, arguments, label))

    async def _in_turn(self, slot: _Slot, call: Callable[[Connection], Any]) -> Any:
        """Make a call on the slot's connection once it has a turn; a connection that broke while the call
        waited for its turn is replaced first (the call was never sent)."""
        while True:
            conn = self._live(slot) or await self._connection(slot)
            async with conn.http_status.turns:
                if conn.alive:
                    return await call(conn)

    def safety(self, server: str, remote: str) -> str:
        """The safety class of a configured server's tool; `destructive` when it cannot be listed (the
        connect failure is then kept for the call that follows)."""
        slot = self._servers.get(server)
        if slot is None:
            return "destructive"
        override = slot.config.safety.get(remote)
        if override is not None:
            return override
        try:
            return self._run(self._safety(slot, remote))
        except McpFailure as failure:
            slot.pending = failure
            return "destructive"

    def listed(self, server: str) -> bool:
        """Whether `safety` of this server's tools is final: it is connected (or not configured at all)."""
        slot = self._servers.get(server)
        return slot is None or (slot.pending is None and self._live(slot) is not None)

    async def _safety(self, slot: _Slot, remote: str) -> str:
        conn = await self._connection(slot)
        for tool in await conn.tools():
            if tool.name == remote:
                return listing_object(tool, slot.config)["safety"]
        return safety_of(None, slot.config.trust_annotations, None)

    # ------------------------------------------------------------ server tooling

    def describe(self, server: str, catalogue: bool = False) -> dict:
        """What `sage tools inspect|generate|verify` show of a configured server: `name`, `version`,
        `protocol`, `transport`, `capabilities` (wire spelling), `tools` (every page, as listing objects),
        `instructions` (`""` if none) and, with `catalogue`, the `prompts`, `resources` and
        `resourceTemplates` the server has (wire spelling).
        Raises McpFailure when the server cannot be reached or listed."""
        return self._run(self._describe(self._servers[server], catalogue))

    async def _describe(self, slot: _Slot, catalogue: bool) -> dict:
        conn = await self._connection(slot)
        tools = [listing_object(tool, slot.config) for tool in await conn.tools()]
        return {"name": conn.server_name, "version": conn.server_version, "protocol": conn.protocol,
                "transport": slot.config.transport, "capabilities": conn.capabilities, "tools": tools,
                "instructions": conn.instructions, **(await conn.catalogue() if catalogue else {})}

    def call_tool(self, server: str, remote: str, arguments: dict) -> dict:
        """One call to a configured server's tool for `sage tools call`: the result in MCP wire form.
        Raises McpFailure when the call fails (a result with `isError` is returned)."""
        return self._run(self._call_typed(server, remote, remote, arguments))

    # ------------------------------------------------------------ dynamic builtins

    def connect(self, config_json: str) -> str:
        with _handle_lock:
            n = next(_handle_numbers)
        try:
            config = parse_connect_config(config_json, n)
        except McpFailure as failure:
            raise DynamicFailure(f"invalid MCP config: {failure.message}") from None
        handle = f"mcp:{n}"
        slot = _Slot(config.name, config, log_name(config.name, n))
        try:
            self._run(self._connect(slot, n))
        except McpFailure as failure:
            raise DynamicFailure(_connect_message(failure)) from None
        return handle

    async def _connect(self, slot: _Slot, n: int) -> None:
        await self._connection(slot)
        self._dynamic[n] = slot

    def _slot(self, handle: str) -> _Slot:
        n = handle_id(handle)
        slot = self._dynamic.get(n) if n is not None else None
        if slot is None:
            raise DynamicFailure(f"unknown MCP handle: {handle}")
        return slot

    def list_tools(self, handle: str) -> str:
        return json.dumps(self.listing(handle), ensure_ascii=False, separators=(",", ":"))

    def listing(self, handle: str) -> list[dict]:
        """The listing objects of every tool of the connection (all pages), each with its safety class."""
        slot = self._slot(handle)
        try:
            return self._run(self._list(slot))
        except McpFailure as failure:
            raise DynamicFailure(f"mcp_list_tools failed: {failure.display()}") from None

    async def _list(self, slot: _Slot) -> list[dict]:
        conn = await self._connection(slot)
        return [listing_object(tool, slot.config) for tool in await conn.tools()]

    def dynamic_safety(self, handle: str, tool: str) -> str:
        """The class of a tool of a dynamic connection as listed (all pages); `destructive` when the tool is
        not listed or the listing fails."""
        try:
            listing = self.listing(handle)
        except McpFailure:
            return "destructive"
        return next((item["safety"] for item in listing if item.get("name") == tool), "destructive")

    def server_info(self, handle: str) -> dict:
        """The server's `name` and `version` from its handshake."""
        slot = self._slot(handle)
        try:
            conn = self._run(self._connection(slot))
        except McpFailure as failure:
            raise DynamicFailure(f"mcp_list_tools failed: {failure.display()}") from None
        return {"name": conn.server_name, "version": conn.server_version}

    def handle_label(self, handle: str) -> str:
        """The name of a dynamic connection: its config's `name`, else `mcp:<n>`."""
        return self._slot(handle).label

    def wire_facts(self, server: str | None = None, handle: str | None = None) -> tuple[str, str]:
        """(the protocol version the connection negotiated, `""` before it is open; the transport) of a
        configured server or of a dynamic connection's handle, for the spans of its calls."""
        slot = self._servers.get(server) if server is not None else self._dynamic.get(handle_id(handle or ""))
        if slot is None:
            return "", ""
        conn = slot.conn
        return (conn.protocol if conn is not None else ""), slot.config.transport

    def connection(self, handle: str) -> int | None:
        """n of an open connection `mcp:<n>`, else None."""
        n = handle_id(handle)
        return n if n is not None and n in self._dynamic else None

    def call(self, handle: str, tool: str, args_json: str) -> str:
        slot = self._slot(handle)
        try:
            arguments = parse_arguments(args_json)
        except ValueError as exc:
            raise DynamicFailure(f"invalid arguments JSON: {exc}") from None
        try:
            result = self._run(self._call(slot, tool, arguments))
        except McpFailure as failure:
            raise DynamicFailure(f"mcp_call '{tool}' failed: {failure.display()}") from None
        if result.get("isError"):
            raise DynamicFailure(f"mcp_call '{tool}' failed: MCP tool error: {error_text(result)}")
        return dynamic_text(result)

    async def _call(self, slot: _Slot, tool: str, arguments: dict) -> dict:
        return await self._in_turn(slot, lambda conn: conn.call(tool, arguments))

    def disconnect(self, handle: str) -> None:
        slot = self._slot(handle)
        try:
            self._run(self._disconnect(handle_id(handle), slot))
        except McpFailure as failure:
            raise DynamicFailure(f"MCP shutdown failed: {failure.message}") from None

    async def _disconnect(self, n: int | None, slot: _Slot) -> None:
        self._dynamic.pop(n, None)  # type: ignore[arg-type]
        await self._close_slot(slot)

    async def _close_slot(self, slot: _Slot) -> None:
        opening = slot.opening
        if opening is not None:
            if slot.connecting is not None:   # a handshake in progress is abandoned, not waited out
                await slot.connecting.close()
            await asyncio.wait({opening})
            if not opening.cancelled():
                opening.exception()   # a failed connect is moot once closing: retrieved, so asyncio stays quiet
        conn, slot.conn = slot.conn, None
        if conn is not None:
            await conn.close()
            self.hooks.trace("mcp.disconnect", {"server": slot.label})

    # ------------------------------------------------------------ shutdown

    def close_all(self) -> None:
        """Close every connection and reap every server process. Idempotent; usable from a signal path:
        when the loop cannot finish in time, the remaining server process groups are killed directly."""
        if self._closed:
            return
        self._closed = True
        try:
            atexit.unregister(self.close_all)
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn atexit down already
            pass
        event_loop = loop.running_loop()
        if event_loop is None or not self._started:
            return
        slots = list(self._servers.values()) + list(self._dynamic.values())
        if not loop.in_loop_thread():
            try:
                loop.run(self._close_all(slots), timeout_s=_CLOSE_WAIT_S)
            except BaseException:  # noqa: BLE001 - fall through to the direct kill below
                pass
        pids = [conn.child.pid for conn in self._connections if conn.child.returncode is None]
        pids += [started.pid for started in list(self._starting)]
        for pid in pids:
            if pid is not None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass

    async def _close_all(self, slots: list[_Slot]) -> None:
        await asyncio.gather(*(self._close_slot(slot) for slot in slots), return_exceptions=True)
        # and the connections replaced while requests were still in flight on them
        await asyncio.gather(*(conn.close() for conn in self._connections), return_exceptions=True)


def _connect_message(failure: McpFailure) -> str:
    if failure.sub_kind == "config error":
        return f"invalid MCP config: {failure.message}"
    if failure.sub_kind == "connection failed":
        if failure.during_handshake:
            return f"MCP initialization failed: {failure.message}"
        return f"MCP connection failed: {failure.message}"
    return f"MCP connection failed: {failure.display()}"
