"""sagepy's stdio transport (sagepy/mcp/stdio.py) against real child processes: messages arrive whole and in
order however the pipe splits them, a flood is read with flow control, lines that are not JSON-RPC reach the
session as errors, and the end of the server is seen with its exit status."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import mcp_types
from mcp.shared.message import SessionMessage

from sagepy.mcp.stdio import ChildProcess, StartedServer, stdio_transport


def _script(body: str) -> list[str]:
    return ["-c", textwrap.dedent(body)]


def _notification(i: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": f"line {i}"}})


async def _start(args: list[str], errlog) -> StartedServer:
    started = StartedServer(0)
    started.log = errlog
    await started.spawn(sys.executable, args, {}, None)
    return started


async def _read_all(args: list[str], errlog, *, pause_s: float = 0.0) -> tuple[list, ChildProcess]:
    exits: list[ChildProcess] = []
    child = ChildProcess(exits.append)
    items: list = []
    async with stdio_transport(await _start(args, errlog), child) as (read, _write):
        with anyio.fail_after(30):
            async for item in read:
                items.append(item)
                if pause_s:
                    await asyncio.sleep(pause_s)
    return items, child


def test_a_flood_of_messages_arrives_complete_and_in_order(tmp_path):
    count = 3000   # far beyond the read-ahead, so reading is paused and resumed many times
    args = _script(f"""
        import json, sys
        for i in range({count}):
            sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "method": "notifications/message",
                                         "params": {{"level": "info", "data": f"line {{i}}"}}}}) + "\\n")
        sys.stdout.flush()
    """)
    with open(tmp_path / "err.log", "w") as errlog:
        items, child = asyncio.run(_read_all(args, errlog, pause_s=0.0001))
    assert [item.message.params["data"] for item in items] == [f"line {i}" for i in range(count)]
    assert child.ended_by_itself and child.returncode == 0


def test_messages_split_across_writes_are_joined(tmp_path):
    first, second = _notification(1), _notification(2)
    args = _script(f"""
        import sys, time
        data = {(first + chr(10) + second + chr(10))!r}
        for piece in (data[:7], data[7:40], data[40:]):
            sys.stdout.write(piece)
            sys.stdout.flush()
            time.sleep(0.05)
    """)
    with open(tmp_path / "err.log", "w") as errlog:
        items, _ = asyncio.run(_read_all(args, errlog))
    assert [item.message.params["data"] for item in items] == ["line 1", "line 2"]


def test_bad_lines_reach_the_session_as_errors_and_invalid_utf8_is_replaced(tmp_path):
    good = _notification(7).replace("line 7", "caf\\u00e9 \xff")
    args = _script(f"""
        import sys
        sys.stdout.buffer.write(b"this is not json\\n")
        sys.stdout.buffer.write({good.encode("latin-1")!r} + b"\\n")
        sys.stdout.buffer.write(b"\\n   \\n")
        sys.stdout.flush()
    """)
    with open(tmp_path / "err.log", "w") as errlog:
        items, _ = asyncio.run(_read_all(args, errlog))
    assert len(items) == 2
    assert isinstance(items[0], Exception)
    assert isinstance(items[1], SessionMessage)
    assert items[1].message.params["data"] == "caf\u00e9 \ufffd"


def test_the_exit_status_is_known_before_the_session_sees_the_end(tmp_path):
    args = _script(f"""
        import sys
        sys.stdout.write({_notification(0)!r} + "\\n")
        sys.stdout.flush()
        sys.stderr.write("going away\\n")
        sys.exit(7)
    """)

    async def scenario() -> tuple[int | None, bool, int]:
        exits: list[ChildProcess] = []
        child = ChildProcess(exits.append)
        with open(tmp_path / "err.log", "w") as errlog:
            async with stdio_transport(await _start(args, errlog), child) as (read, _write):
                received = [item async for item in read]
                # At the end of the stream the exit has been recorded and reported.
                return child.returncode, bool(exits), len(received)

    returncode, reported, received = asyncio.run(scenario())
    assert (returncode, reported, received) == (7, True, 1)
    assert "going away" in (tmp_path / "err.log").read_text()


def test_written_messages_reach_the_server_and_a_gone_server_breaks_the_write(tmp_path):
    # The child echoes one line back, then exits; a later write finds its stdin gone.
    args = _script("""
        import sys
        line = sys.stdin.readline()
        sys.stdout.write(line)
        sys.stdout.flush()
    """)
    request = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")

    async def scenario() -> tuple[object, type]:
        child = ChildProcess(lambda c: None)
        with open(tmp_path / "err.log", "w") as errlog:
            async with stdio_transport(await _start(args, errlog), child) as (read, write):
                await write.send(SessionMessage(request))
                echoed = await read.receive()
                with anyio.fail_after(10):
                    while child.returncode is None:
                        await asyncio.sleep(0.01)
                    failure: type = type(None)
                    while failure is type(None):
                        try:
                            await write.send(SessionMessage(request))
                            await asyncio.sleep(0.01)
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                            failure = type(exc)
                return echoed, failure

    echoed, failure = asyncio.run(scenario())
    assert echoed.message.id == 1 and echoed.message.method == "ping"
    assert failure is anyio.BrokenResourceError


def test_a_long_line_written_in_many_pieces_arrives_whole(tmp_path):
    args = _script("""
        import json, sys
        line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "y" * 2_000_000}}) + "\\n"
        for start in range(0, len(line), 1000):
            sys.stdout.write(line[start:start + 1000])
            sys.stdout.flush()
    """)
    with open(tmp_path / "err.log", "w") as errlog:
        items, _ = asyncio.run(_read_all(args, errlog))
    assert len(items) == 1
    assert items[0].message.params["data"] == "y" * 2_000_000


STARTS_BEFORE_THE_SDK = """\
import importlib.abc, os, sys, time
from sagepy.grove.servers import McpSettings, parse_tools_config
from sagepy.mcp.pool import ConnectionPool

root, suite, marker = sys.argv[1:4]


class WatchSdkImport(importlib.abc.MetaPathFinder):
    # When the SDK is first imported, wait (at most 20 s) for the server to show that it is running.
    seen = None

    def find_spec(self, name, path, target=None):
        if name == "mcp" and WatchSdkImport.seen is None:
            deadline = time.monotonic() + 20
            while not os.path.exists(marker) and time.monotonic() < deadline:
                time.sleep(0.01)
            WatchSdkImport.seen = os.path.exists(marker)
        return None


sys.meta_path.insert(0, WatchSdkImport())
assert "mcp" not in sys.modules
server = ("import runpy, sys; open(sys.argv[1], 'w').close(); sys.argv = sys.argv[2:]; "
          "runpy.run_path(sys.argv[0], run_name='__main__')")
config = {"tools": {"Suite": {"command": sys.executable, "args": ["-c", server, marker, suite]}}}
servers, _ = parse_tools_config(config, None)
manager = ConnectionPool(root, servers, McpSettings())
try:
    print(manager.call_typed("Suite", "Suite.echo", "echo", {"text": "hi"})["content"][0]["text"])
finally:
    manager.close_all()
print("server running when the SDK was imported:", WatchSdkImport.seen)
"""


def test_a_stdio_server_is_started_before_the_sdk_is_imported(tmp_path):
    # The SDK's import takes about 1.5 s; the server's own start-up runs meanwhile (time to first result).
    suite = Path(__file__).parent / "servers" / "suite.py"
    script = tmp_path / "starts_first.py"
    script.write_text(STARTS_BEFORE_THE_SDK)
    result = subprocess.run([sys.executable, str(script), str(tmp_path), str(suite), str(tmp_path / "marker")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["hi", "server running when the SDK was imported: True"]
