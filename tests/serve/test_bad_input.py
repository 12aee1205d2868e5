"""A hostile or broken client never stops `sage serve` (SPEC §21): a line that is no JSON-RPC, arguments far
above `[serve] max_argument_bytes`, a client that goes away mid-call, 1,000 calls at once beyond
`max_concurrent_calls`. Each gets a clear error to that client and a line in the server's log, and the server
keeps serving."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from .helpers import MAIN, HttpServer, environment, serve_command, write_project

COUNTER = MAIN + textwrap.dedent("""\

    /// Note its start and end in a file.
    #[mcp_tool = "counted"]
    agent Counted {
        path: String,
        n: Int,
        on start {
            try append_file(self.path, "+\\n");
            sleep_ms(5);
            try append_file(self.path, "-\\n");
            yield(self.n);
        }
    }
    """)


@pytest.fixture
def anyio_backend():
    return "asyncio"


def params(project, tmp_path) -> StdioServerParameters:
    command = serve_command(project)
    return StdioServerParameters(command=command[0], args=command[1:], env=environment(tmp_path))


def test_a_line_that_is_not_json_rpc_gets_a_parse_error(tmp_path):
    project = write_project(tmp_path / "p")
    proc = subprocess.Popen(serve_command(project), env=environment(tmp_path), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo",
                                                                            "arguments": {"text": "ok"}}}
        proc.stdin.write("{this is not json\n" + json.dumps(init) + "\n")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(3)]
        assert answers[0] == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "Parse error: the message is not a JSON-RPC 2.0 message"}}
        assert answers[1]["id"] == 1 and answers[1]["result"]["serverInfo"]["name"] == "helpdesk"
        assert answers[2]["id"] == 2 and answers[2]["result"]["content"][0]["text"] == "ok"
    finally:
        proc.stdin.close()
        assert proc.wait(60) == 0
    assert "sage serve: refused a message that is not JSON-RPC" in proc.stderr.read()


@pytest.mark.anyio
async def test_arguments_above_the_limit_and_a_thousand_calls_beyond_the_slots(tmp_path):
    project = write_project(tmp_path / "p", COUNTER, "\n[serve]\nmax_concurrent_calls = 4\n")
    marks = tmp_path / "marks.txt"
    errlog = open(tmp_path / "server.log", "w")
    async with Client(stdio_client(params(project, tmp_path), errlog=errlog), mode="legacy",
                      read_timeout_seconds=600) as client:
        huge = "x" * (10 * 1024 * 1024)
        result = await client.call_tool("echo", {"text": huge})
        assert result.is_error
        assert result.content[0].text == (f"the arguments are {len(huge) + 11} bytes, more than "
                                          "[serve] max_argument_bytes (1048576)")
        answers: dict[int, list] = {}

        async def one(i: int) -> None:
            result = await client.call_tool("counted", {"path": str(marks), "n": i})
            answers.setdefault(i, []).append(result.structured_content)

        async with anyio.create_task_group() as tg:
            for i in range(1000):
                tg.start_soon(one, i)
        assert answers == {i: [{"result": i}] for i in range(1000)}
        assert (await client.call_tool("echo", {"text": "alive"})).content[0].text == "alive"
    errlog.close()
    running = peak = 0
    for mark in marks.read_text().split():
        running += 1 if mark == "+" else -1
        peak = max(peak, running)
    assert running == 0 and peak == 4
    assert "refused a call of echo: the arguments are 10485771 bytes" in (tmp_path / "server.log").read_text()


CLIENT = textwrap.dedent("""\
    import sys, anyio
    from mcp import Client
    async def main():
        async with Client(sys.argv[1], read_timeout_seconds=600) as client:
            await client.call_tool("ticker", {"path": sys.argv[2]})
    anyio.run(main)
    """)


@pytest.mark.anyio
async def test_a_client_that_goes_away_mid_call(tmp_path):
    project = write_project(tmp_path / "p")
    server = HttpServer(project, tmp_path)
    ticks = tmp_path / "ticks.txt"
    try:
        client = subprocess.Popen([sys.executable, "-c", CLIENT, server.url, str(ticks)], env=environment(tmp_path))
        while not (ticks.exists() and ticks.read_text().count("tick") >= 3):
            await anyio.sleep(0.05)
        client.kill()
        client.wait(60)
        server.wait_for(r"call of ticker: its run stopped")
        count = ticks.read_text().count("tick")
        async with Client(server.url, read_timeout_seconds=120) as again:
            assert (await again.call_tool("echo", {"text": "still serving"})).content[0].text == "still serving"
        assert ticks.read_text().count("tick") == count
    finally:
        server.stop()
